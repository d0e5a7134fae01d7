// SPDX-License-Identifier: Apache-2.0
// Load cells (the `tension` sensor) on a cable's two ends: a weight hanging on a vertical
// cable in water reads its apparent weight at its end, and the anchor's load cell that plus
// the cable's own, pointing along the cable.
#include <doctest/doctest.h>

#include <memory>

#include "tether/firmware_shim/payloads.h"
#include "tether/hal/device_bank.hpp"
#include "tether/loop/in_process.hpp"
#include "tether/loop/session.hpp"

using namespace tether::runtime;
namespace hal = tether::hal;

namespace {

// a steel ball on a 5 m cable from a fixed point, hanging straight down (at rest from the start)
const char* hanging = R"(name: hanging
world:
  water: {density_kg_m3: 1025, surface_z_m: 0}
  tank: {size_m: [10, 10, 10], floor_z_m: -10}
vehicles:
  - name: ball
    bodies:
      - name: body
        shape: {type: sphere, radius_m: 0.1}
        mass_kg: 10
        initial: {position_m: [0, 0, -5.6]}
        devices:
          - {name: load, kind: tension, params: {cable: line}}
cables:
  - name: line
    from: world
    from_anchor_m: [0, 0, -0.5]
    to: ball.body
    to_anchor_m: [0, 0, -5.5]
    length_m: 5
    segments: 10
    mass_per_m_kg: 0.5
    devices:
      - {name: winch, kind: tension, mount: {position_m: [-0.25, 0, 0]}, params: {cable: line}}
loop: {period_ms: 10, real_time_factor: 0, steps: 200}
endpoints:
  - {name: c, type: in_process, vehicle: ball, controller: idle, deadline_ms: 5, timeout_policy: hold}
)";

// weight minus buoyancy of the bodies of a vehicle, N
double apparent_weight(const WorldModel& m, const std::string& vehicle) {
  double w = 0;
  for (int b : m.vehicles[static_cast<std::size_t>(m.find_vehicle(vehicle))].bodies) {
    const BodyModel& body = m.bodies[static_cast<std::size_t>(b)];
    w += (body.mass_kg - m.water.density_kg_m3 * body.volume_m3) * 9.81;
  }
  return w;
}

}  // namespace

TEST_CASE("tension sensors at both ends of a hanging cable read the weights they hold") {
  Scenario sc = parse_scenario(hanging, "hanging.yaml");
  std::vector<std::unique_ptr<Endpoint>> eps;
  eps.push_back(std::make_unique<InProcessEndpoint>(sc.endpoints[0], sc.model));
  SessionOptions o;
  o.steps = 200;
  o.real_time_factor = 0;
  Session session(sc, std::move(eps), o);
  std::atomic<bool> stop{false};
  REQUIRE(session.run(stop) == Outcome::completed);

  const hal::DeviceBank& bank = session.devices();
  const int load = bank.find("ball.body.load"), winch = bank.find("line.s0.winch");
  REQUIRE(load >= 0);
  REQUIRE(winch >= 0);
  const hal::Sample& at_ball = bank.sample(static_cast<std::size_t>(load));
  const hal::Sample& at_winch = bank.sample(static_cast<std::size_t>(winch));
  REQUIRE(at_ball.valid);
  REQUIRE(at_winch.valid);
  const double ball = apparent_weight(sc.model, "ball"), cable = apparent_weight(sc.model, "line");
  CAPTURE(ball);
  CAPTURE(cable);
  // the ball end holds the ball: up, which is -z on the wire (z down) of a level ball
  CHECK(at_ball.ch[0] == doctest::Approx(ball).epsilon(0.005));
  CHECK(at_ball.ch[3] == doctest::Approx(-ball).epsilon(0.005));
  CHECK(std::abs(at_ball.ch[1]) < 1e-3 * ball);
  // the anchor holds ball and cable; the first segment's x runs down the cable, so the pull
  // toward the anchor is -x in its frame
  CHECK(at_winch.ch[0] == doctest::Approx(ball + cable).epsilon(0.005));
  CHECK(at_winch.ch[1] == doctest::Approx(-(ball + cable)).epsilon(0.005));
}
