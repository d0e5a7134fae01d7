// SPDX-License-Identifier: Apache-2.0
// Fuzz target for the MQTT endpoint's payload decoders (adapters/mqtt/src/mqtt_messages.cpp): the
// input is one MQTT payload, given to parse_feedback (as vehicle "auv", as vehicle "other" and
// with no vehicle filter), parse_projected and parse_status against a small world (two
// vehicles, three bodies) built once. The decoders never throw (their header says so); a
// rejection always comes with a reason; what a decoder accepts must be finite and about bodies
// of the vehicle asked for, with unit orientations; accepted feedback and status messages are
// written again with encode_feedback / encode_status and must read back the same. Built with the
// suite's driver (tests/fuzz/fuzz_driver.cpp) or libFuzzer (docs/reliability.md).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tether/mqtt/mqtt_messages.hpp"
#include "tether/scenario/scenario.hpp"

namespace mq = tether::adapters::mqtt;
using tether::runtime::Measurement;
using tether::runtime::WorldModel;

namespace {

const char* const world_text = R"(name: mqtt_fuzz
world: {gravity_m_s2: [0, 0, -9.81], water: {density_kg_m3: 1000, surface_z_m: 0}}
vehicles:
  - name: auv
    bodies:
      - name: hull
        shape: {type: sphere, radius_m: 0.2}
        mass_kg: 30
        devices:
          - {name: thruster, kind: thruster, params: {max_thrust_n: 10}}
          - {name: depth, kind: depth}
      - name: arm
        shape: {type: box, size_m: [0.1, 0.1, 0.4]}
        mass_kg: 2
  - name: other
    bodies: [{name: hull, shape: {type: sphere, radius_m: 0.2}, mass_kg: 30}]
)";

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "mqtt_messages_fuzz: broken invariant: %s\n", what);
    std::abort();
  }
}

const WorldModel& world() {
  static const WorldModel model = tether::runtime::parse_scenario(world_text, "mqtt_fuzz.yaml").model;
  return model;
}

void check_measurement(const Measurement& m, const WorldModel& model, int vehicle) {
  check(m.body < model.bodies.size(), "a measurement's body index is in range");
  if (vehicle >= 0) check(model.bodies[m.body].vehicle == vehicle, "a measurement is about the vehicle's own body");
  check(m.has_pose || m.has_velocity, "a measurement has a pose or a velocity");
  if (m.has_pose)
    check(m.position_m.allFinite() && m.orientation.coeffs().allFinite() && std::abs(m.orientation.norm() - 1) < 1e-9,
          "a pose is finite with a unit orientation");
  if (m.has_velocity)
    check(m.velocity_m_s.allFinite() && m.angular_velocity_rad_s.allFinite(), "velocities are finite");
  if (m.has_covariance) check(m.pose_covariance.allFinite(), "a covariance is finite");
}

// written again and read back, the feedback is the same (orientations normalised once more)
void round_trip(const mq::Feedback& f, const std::string& vehicle_id, const WorldModel& model, int vehicle) {
  std::string out, reason;
  mq::encode_feedback(out, vehicle_id, f.step, model, f.measurements);
  mq::Feedback g;
  check(mq::parse_feedback(out, vehicle_id, model, vehicle, g, reason, out.size()) == mq::Reject::none,
        "encoded feedback reads back");
  check(g.step == f.step && g.measurements.size() == f.measurements.size(), "round trip: step and count");
  for (std::size_t i = 0; i < f.measurements.size(); ++i) {
    const Measurement& a = f.measurements[i];
    const Measurement& b = g.measurements[i];
    check(a.body == b.body && a.measured_time_ns == b.measured_time_ns && a.has_pose == b.has_pose &&
              a.has_velocity == b.has_velocity && a.has_covariance == b.has_covariance,
          "round trip: body, time and flags");
    if (a.has_pose)
      check(a.position_m == b.position_m && (a.orientation.coeffs() - b.orientation.coeffs()).norm() < 1e-12,
            "round trip: pose");
    if (a.has_velocity)
      check(a.velocity_m_s == b.velocity_m_s && a.angular_velocity_rad_s == b.angular_velocity_rad_s,
            "round trip: velocities");
    if (a.has_covariance) check(a.pose_covariance == b.pose_covariance, "round trip: covariance");
  }
}

void feedback(std::string_view text, const char* vehicle_id, int vehicle) {
  const WorldModel& model = world();
  mq::Feedback f;
  std::string reason;
  const mq::Reject r = mq::parse_feedback(text, vehicle_id, model, vehicle, f, reason);
  if (r != mq::Reject::none) {
    check(!reason.empty(), "a rejected feedback message has a reason");
    return;
  }
  check(!f.measurements.empty(), "accepted feedback has measurements");
  for (const Measurement& m : f.measurements) check_measurement(m, model, vehicle);
  round_trip(f, vehicle_id, model, vehicle);
}

void projected(std::string_view text) {
  mq::Projected p;
  std::string reason;
  const mq::Reject r = mq::parse_projected(text, "auv", p, reason);
  if (r != mq::Reject::none) {
    check(!reason.empty(), "a rejected projected message has a reason");
    return;
  }
  check(p.period_ns > 0, "a projected message's period is > 0");
  for (const mq::NamedCommand& c : p.commands) {
    check(c.values.size() <= 4, "a command has at most 4 values");
    for (double v : c.values) check(std::isfinite(v), "command values are finite");
  }
}

void status(std::string_view text) {
  std::string run = "unset";
  const std::string state = mq::parse_status(text, &run);
  check(mq::parse_status(text) == state, "parse_status with and without the run agree");
  if (state.empty()) return;
  const std::string again = mq::encode_status(state, "fuzz", run);
  if (again.size() > 4096) return;  // past parse_status's own limit
  std::string run2;
  check(mq::parse_status(again, &run2) == state && run2 == run, "a status message reads back");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 2 * mq::default_max_payload_bytes) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  feedback(text, "auv", 0);
  feedback(text, "other", 1);
  feedback(text, "auv", -1);
  projected(text);
  status(text);
  if (size > 16) {
    mq::Feedback f;
    std::string reason;
    check(mq::parse_feedback(text, "auv", world(), 0, f, reason, 16) == mq::Reject::oversize && !reason.empty(),
          "a payload over max_bytes is rejected as oversize");
  }
  return 0;
}
