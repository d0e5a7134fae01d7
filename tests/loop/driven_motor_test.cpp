// SPDX-License-Identifier: Apache-2.0
// A dc_motor whose shaft turns another body (`params.drives`): commanded by a controller, it
// spins a hinged wheel up along the motor law, and its body feels the equal and opposite torque.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "tether/firmware_shim/payloads.h"
#include "tether/hal/device_bank.hpp"
#include "tether/loop/in_process.hpp"
#include "tether/loop/session.hpp"
#include "tether/physics/joints.hpp"

using namespace tether::runtime;
namespace hal = tether::hal;

namespace {

// commands `volts` to the device rig.stator.motor every step
class Volts final : public Controller {
 public:
  void configure(const ConfigNode& params, const WorldModel&, int) override { volts_ = params.number_or("volts", 0); }
  void bind_devices(const hal::DeviceBank& devices) override { motor_ = devices.find("rig.stator.motor"); }
  void compute(const StepContext&, const WorldModel&, const WorldState&, const hal::DeviceBank*, Reply& out) override {
    out.clear();
    DeviceCommand c;
    c.device = static_cast<std::uint16_t>(motor_);
    c.size = TETHER_DC_MOTOR_SIZE;
    tether_put_f32le(c.bytes.data() + TETHER_DC_MOTOR_OFFSET_VOLTAGE_V, static_cast<float>(volts_));
    out.commands.push_back(c);
  }

 private:
  double volts_ = 0;
  int motor_ = -1;
};

// a stator (locked or free) and a wheel on a hinge about x, in empty space
std::string rig(const std::string& stator_locks) {
  return R"(name: motor
world: {gravity_m_s2: [0, 0, 0]}
vehicles:
  - name: rig
    bodies:
      - name: stator
        shape: {type: box, size_m: [0.2, 0.4, 0.4]}
        mass_kg: 4
        )" +
         stator_locks + R"(
        devices:
          - name: motor
            kind: dc_motor
            params: {kt_nm_per_a: 0.05, ke_v_s_per_rad: 0.05, resistance_ohm: 1, drives: rig.wheel}
          - {name: shaft_encoder, kind: encoder, params: {joint: shaft}}
      - name: wheel
        shape: {type: cylinder, radius_m: 0.1, length_m: 0.04}
        mass_kg: 1
        initial: {position_m: [0.15, 0, 0]}
joints:
  - {name: shaft, type: hinge, body: rig.stator, to: rig.wheel, anchor_m: [0.15, 0, 0], axis: [1, 0, 0]}
loop: {period_ms: 10, real_time_factor: 0, steps: 400}
endpoints:
  - {name: c, type: in_process, vehicle: rig, controller: test_volts, params: {volts: 6}, deadline_ms: 5, timeout_policy: hold}
)";
}

void run(Scenario& sc, std::unique_ptr<Session>& session) {
  static const bool registered = [] {
    controllers().add(
        "test_volts", [] { return std::make_unique<Volts>(); }, "tests: constant volts to a motor");
    return true;
  }();
  (void)registered;
  std::vector<std::unique_ptr<Endpoint>> eps;
  eps.push_back(std::make_unique<InProcessEndpoint>(sc.endpoints[0], sc.model));
  SessionOptions o;
  o.steps = 400;
  o.real_time_factor = 0;
  session = std::make_unique<Session>(sc, std::move(eps), o);
  std::atomic<bool> stop{false};
  REQUIRE(session->run(stop) == Outcome::completed);
}

}  // namespace

TEST_CASE("a dc_motor that drives a hinged wheel spins it up along its law, and its body takes the reaction") {
  SUBCASE("stator held: w(t) = V/K_E (1 - exp(-t K_T K_E / (R I)))") {
    Scenario sc = parse_scenario(rig("locks: [x, y, z, roll, pitch, yaw]"), "m.yaml");
    REQUIRE(std::get<hal::DcMotorParams>(sc.devices[0].params).driven_body == 1);
    std::unique_ptr<Session> s;
    run(sc, s);
    const double inertia = 0.5 * 1.0 * 0.1 * 0.1;  // the wheel about its axis
    const double tau = inertia * 1.0 / (0.05 * 0.05), t = 4.0;
    const double expected = 6.0 / 0.05 * (1 - std::exp(-t / tau));
    const double w = angular_velocity(sc.model, s->state(), 1).x();
    CAPTURE(w);
    CAPTURE(expected);
    CHECK(w == doctest::Approx(expected).epsilon(0.01));
    CHECK(angular_velocity(sc.model, s->state(), 0).norm() < 1e-6);
    // the encoder on the stator read the shaft's rate and angle in the last step's projection
    // (the same commands: what the step then became, to rounding of the held inputs)
    const int enc = s->devices().find("rig.stator.shaft_encoder");
    REQUIRE(enc >= 0);
    const hal::Sample& e = s->devices().sample(static_cast<std::size_t>(enc));
    REQUIRE(e.valid);
    const JointModel& shaft = sc.model.joints[static_cast<std::size_t>(sc.model.find_joint("shaft"))];
    CHECK(e.ch[1] == doctest::Approx(w).epsilon(1e-4));
    CHECK(std::abs(e.ch[0] - joint_position(shaft, s->state())) < 1e-4);
  }
  SUBCASE("stator free: the pair's angular momentum stays zero, the stator turns the other way") {
    Scenario sc = parse_scenario(rig(""), "m.yaml");
    std::unique_ptr<Session> s;
    run(sc, s);
    const WorldState& st = s->state();
    Vec3 total = Vec3::Zero();
    const Vec3 c = (4.0 * st.bodies[0].position_m + 1.0 * st.bodies[1].position_m) / 5.0;
    for (std::size_t i = 0; i < 2; ++i)
      total += st.bodies[i].angular_momentum + (st.bodies[i].position_m - c).cross(st.bodies[i].linear_momentum);
    const double wheel = st.bodies[1].angular_momentum.x();
    CAPTURE(total.transpose());
    CHECK(std::abs(wheel) > 0.1);
    CHECK(total.norm() < 1e-6 * std::abs(wheel) + 1e-9);
    CHECK(angular_velocity(sc.model, st, 0).x() < 0);
  }
}

TEST_CASE("dc_motor drives: positioned errors") {
  auto first_error = [](const std::string& text) {
    try {
      parse_scenario(text, "m.yaml");
    } catch (const ConfigError& e) {
      return e.errors().front();
    }
    return std::string();
  };
  const std::string base = rig("");
  std::string unknown = base, own = base;
  unknown.replace(unknown.find("drives: rig.wheel"), 17, "drives: rig.wheal");
  own.replace(own.find("drives: rig.wheel"), 17, "drives: rig.stator");
  CHECK(first_error(unknown) ==
        "m.yaml:13:90: vehicles[0].bodies[0].devices[0].params.drives: expected a body "
        "(\"vehicle.part\") the shaft turns, got \"rig.wheal\"");
  CHECK(first_error(own) ==
        "m.yaml:13:90: vehicles[0].bodies[0].devices[0].params.drives: a motor cannot drive its own body");
}
