// SPDX-License-Identifier: Apache-2.0
// Fuzz target for the scenario parser (runtime/scenario): the input is the text of a scenario
// file, given to parse_scenario(text, "fuzz.yaml"). Every input must either parse or throw
// ConfigError with at least one message, each naming the file; any other exception, a crash, a
// sanitizer report or a hang is a bug. What parses must hang together: bodies, states, vehicles,
// devices, endpoints and goals refer to each other by valid indices, the numbers the file gave
// are finite, orientations are unit quaternions, deadlines are not negative.
//
// Inputs over 64 KiB are skipped, and so are inputs that mention "pgm": a terrain's `pgm:` key
// names an image file that the parser reads, and a fuzzer must not read files (/dev/zero never
// ends). Built with the suite's driver (tests/fuzz/fuzz_driver.cpp) or libFuzzer
// (docs/reliability.md, "What is fuzzed").

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "tether/scenario/scenario.hpp"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "scenario_parser_fuzz: broken invariant: %s\n", what);
    std::abort();
  }
}

bool finite(const tether::runtime::Vec3& v) { return v.allFinite(); }

bool unit(const tether::runtime::Quat& q) { return q.coeffs().allFinite() && std::abs(q.norm() - 1.0) < 1e-6; }

void check_scenario(const tether::runtime::Scenario& sc) {
  using namespace tether::runtime;
  const WorldModel& m = sc.model;
  const int vehicles = static_cast<int>(m.vehicles.size());
  const int bodies = static_cast<int>(m.bodies.size());
  check(sc.initial.bodies.size() == m.bodies.size(), "one initial state per body");
  check(finite(m.gravity_m_s2) && std::isfinite(m.max_substep_s) && m.max_substep_s > 0, "world numbers finite");
  std::size_t listed = 0;
  for (int v = 0; v < vehicles; ++v) {
    const VehicleModel& vm = m.vehicles[static_cast<std::size_t>(v)];
    check(!vm.name.empty() && vm.name.find('.') == std::string::npos, "a vehicle name is non-empty, without '.'");
    check(m.find_vehicle(vm.name) == v, "vehicle names are unique");
    for (int b : vm.bodies) {
      check(b >= 0 && b < bodies, "a vehicle's body index is in range");
      check(m.bodies[static_cast<std::size_t>(b)].vehicle == v, "a vehicle's body belongs to it");
    }
    listed += vm.bodies.size();
  }
  check(listed == m.bodies.size(), "every body is listed by exactly one vehicle");
  for (int b = 0; b < bodies; ++b) {
    const BodyModel& bm = m.bodies[static_cast<std::size_t>(b)];
    const BodyState& bs = sc.initial.bodies[static_cast<std::size_t>(b)];
    check(bm.vehicle >= 0 && bm.vehicle < vehicles, "a body's vehicle index is in range");
    check(m.find_body(bm.name) == b, "body names are unique");
    check(std::isfinite(bm.mass_kg) && bm.mass_kg > 0, "a body's mass is finite and > 0");
    check(bm.restitution >= 0 && bm.restitution <= 1 && std::isfinite(bm.friction) && bm.friction >= 0,
          "restitution in [0, 1], friction finite and >= 0");
    check(finite(bm.centre_of_buoyancy_m) && finite(bs.position_m) && unit(bs.orientation),
          "initial pose finite, orientation a unit quaternion");
  }
  for (const StaticBody& s : m.statics) {
    check(finite(s.position_m) && unit(s.orientation), "a static body's pose is finite");
    if (s.shape.kind == ShapeKind::heightfield)
      check(s.shape.heightfield >= 0 && static_cast<std::size_t>(s.shape.heightfield) < m.heightfields.size(),
            "a terrain's height field index is in range");
  }
  for (const tether::hal::DeviceSpec& d : sc.devices) {
    check(d.body >= 0 && d.body < bodies, "a device's body index is in range");
    check(d.kind != TETHER_KIND_NONE, "a device has a kind");
    check(finite(d.mount.position_m) && unit(d.mount.orientation), "a device mount is finite");
    check(std::isfinite(d.rate_hz) && d.rate_hz >= 0, "a device rate is finite and >= 0");
  }
  for (const EndpointConfig& e : sc.endpoints) {
    check(!e.name.empty() && !e.type.empty(), "an endpoint has a name and a type");
    if (e.vehicle.empty())
      check(e.vehicle_index == -1, "an endpoint without a vehicle has no vehicle index");
    else
      check(e.vehicle_index == m.find_vehicle(e.vehicle) && e.vehicle_index >= 0, "an endpoint's vehicle exists");
    check(e.deadline_ns >= 0, "an endpoint's deadline is not negative");
  }
  for (const FeedbackConfig& f : sc.feedback)
    check(f.vehicle >= 0 && f.vehicle < vehicles && !f.type.empty(), "a feedback entry names its vehicle and type");
  for (const GoalConfig& g : sc.goals) {
    check(g.vehicle_index >= 0 && g.vehicle_index < vehicles, "a goal's vehicle exists");
    check(g.depth_m.has_value() || g.heading_deg.has_value(), "a goal has a target");
  }
  check(sc.loop.period_ns > 0 && sc.loop.history_steps >= 1, "the loop period is > 0");
  check(std::isfinite(sc.loop.real_time_factor) && sc.loop.real_time_factor >= 0, "the real-time factor is >= 0");
  check(sc.recording.keyframe_every_steps >= 1 && sc.recording.queue_slots >= 16 &&
            std::isfinite(sc.recording.flush_interval_s) && sc.recording.flush_interval_s > 0,
        "recording settings in range");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 64 * 1024) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (text.find("pgm") != std::string::npos) return 0;
  try {
    const tether::runtime::Scenario sc = tether::runtime::parse_scenario(text, "fuzz.yaml");
    check_scenario(sc);
  } catch (const tether::runtime::ConfigError& e) {
    check(!e.errors().empty(), "a ConfigError has at least one message");
    for (const std::string& message : e.errors())
      check(message.rfind("fuzz.yaml", 0) == 0, "every ConfigError message starts with the file name");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scenario_parser_fuzz: parse_scenario threw something other than ConfigError: %s\n", e.what());
    std::abort();
  }
  return 0;
}
