// SPDX-License-Identifier: Apache-2.0
// The soak: eight endpoints (four firmware on ptys, four MQTT vehicles through mosquitto) in
// lock-step at 1 kHz for a minute (TETHER_SOAK_S seconds; ten minutes by hand, see
// docs/reliability.md). Checked: every step is accounted for at every endpoint (a reply, or
// a miss its policy handled), nothing is missing from the recording, the runtime's memory
// stays flat. No time is asserted: on a loaded machine the loop falls behind real time and
// endpoints miss deadlines, which the accounting covers.
#include <doctest/doctest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "../adapters/mosquitto_util.hpp"
#include "../adapters/serial_test_util.hpp"
#include "test_paths.hpp"
#include "tether/endpoints/endpoint_factory.hpp"
#include "tether/loop/session.hpp"
#include "tether/recording/recorder.hpp"
#include "tether/loop/recorder_inputs.hpp"
#include "tether/recording/replay.hpp"

using namespace tether;
using namespace tether::runtime;

namespace {

// resident set size of this process, kB
long rss_kb() {
  std::ifstream f("/proc/self/status");
  std::string key;
  while (f >> key) {
    if (key == "VmRSS:") {
      long kb = 0;
      f >> kb;
      return kb;
    }
    f.ignore(4096, '\n');
  }
  return -1;
}

std::string vehicle(const std::string& name, double y) {
  return "  - name: " + name + R"(
    bodies:
      - name: hull
        shape: {type: cylinder, radius_m: 0.1, length_m: 1.2}
        mass_kg: 38.0
        centre_of_buoyancy_m: [0, 0, 0.02]
        damping: {linear: [10, 30, 30], quadratic: [20, 80, 80], angular_linear: [2, 6, 6], angular_quadratic: [1, 4, 4]}
        initial: {position_m: [-35, )" +
         std::to_string(y) + R"(, -0.2]}
        devices:
          - {name: depth, kind: depth, noise: {stddev: 0.002}}
          - {name: compass, kind: compass, rate_hz: 20}
          - {name: thruster_left, kind: thruster, mount: {position_m: [-0.55, 0.14, 0]}, params: {max_thrust_n: 20}}
          - {name: thruster_right, kind: thruster, mount: {position_m: [-0.55, -0.14, 0]}, params: {max_thrust_n: 20}}
          - {name: thruster_vfront, kind: thruster, mount: {position_m: [0.35, 0, 0], orientation_rpy_deg: [0, 90, 0]}, params: {max_thrust_n: 15}}
          - {name: thruster_vrear, kind: thruster, mount: {position_m: [-0.35, 0, 0], orientation_rpy_deg: [0, 90, 0]}, params: {max_thrust_n: 15}}
)";
}

std::string mqtt_endpoint(const std::string& v, const std::string& broker) {
  return "  - name: tank_" + v + "\n    type: mqtt\n    vehicle: " + v + "\n    broker: " + broker +
         "\n    session: soak\n    deadline_ms: 5\n    timeout_policy: hold\n    launch:\n      command: [\"" +
         TETHER_BINARY_DIR + "/tether-vehicle\", \"--scenario\", \"{scenario}\", \"--broker\", " +
         "\"{broker}\", \"--session\", \"soak\", \"--vehicle\", \"" + v + "\", \"--quiet\"]\n";
}

}  // namespace

TEST_CASE("soak: 8 endpoints, serial and MQTT, at 1 kHz: every step accounted for, the recording whole, memory flat") {
  const char* env = std::getenv("TETHER_SOAK_S");
  const double seconds = env ? std::atof(env) : 60.0;
  test::Mosquitto broker;
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("tether_soak_" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);

  std::string text =
      "name: soak\nworld:\n  gravity_m_s2: [0, 0, -9.81]\n  water: {density_kg_m3: 1025, surface_z_m: 0}\n"
      "  tank: {size_m: [80, 40, 8], floor_z_m: -8}\nvehicles:\n";
  const char* names[] = {"auv", "rov1", "rov2", "rov3"};
  for (int i = 0; i < 4; ++i) text += vehicle(names[i], -12.0 + 8.0 * i);
  text += "loop: {period_ms: 1, real_time_factor: 1, steps: 100000000, seed: 7}\n";
  text += "recording: {keyframe_every_steps: 1000}\nendpoints:\n";
  // the example firmware (it names its devices auv.hull.*) and three scripted ones
  text += "  - name: fw_auv\n    type: serial\n    vehicle: auv\n    launch: {command: [\"" +
          TETHER_BINARY_DIR +
          "/firmware/host/depth_heading_hold\"]}\n    deadline_ms: 5\n    timeout_policy: hold\n";
  for (int i = 1; i < 4; ++i)
    text += adapters::test::fake_endpoint("", "hold", 5, "", std::string("fw_") + names[i], names[i]);
  for (const char* v : names) text += mqtt_endpoint(v, broker.uri());
  const std::string file = dir + "/soak.yaml";
  std::ofstream(file) << text;
  const Scenario sc = load_scenario(file);

  long rss_early = -1, rss_late = -1;
  const auto t0 = std::chrono::steady_clock::now();
  SessionOptions options;
  options.after_step = [&](const WorldState&) {
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rss_early < 0 && t >= seconds * 0.25) rss_early = rss_kb();
    if (t >= seconds) {
      rss_late = rss_kb();
      return false;
    }
    return true;
  };
  Session session(sc, adapters::make_endpoints(sc), options);
  Recorder recorder(sc, recorder_inputs(session));
  std::string error;
  REQUIRE_MESSAGE(recorder.open(dir + "/recording.mcap", &error), error);
  session.set_recorder(&recorder);
  std::atomic<bool> stop{false};
  const Outcome outcome = session.run(stop);
  CHECK(outcome == Outcome::stopped);  // by the time limit, with every endpoint alive
  nlohmann::json s = session.summary();
  REQUIRE_MESSAGE(recorder.close(s, &error), error);
  s["recording"]["dropped_items"] = recorder.dropped();
  const std::uint64_t done = session.steps_done();
  MESSAGE("soak: " << done << " steps in " << seconds << " s; RSS " << rss_early << " kB at 25 %, " << rss_late
                   << " kB at the end");
  REQUIRE(s["endpoints"].size() == 8);
  for (const auto& e : s["endpoints"]) {
    MESSAGE(e["name"].get<std::string>() << ": replies " << e["replies"] << ", misses " << e["misses"] << ", stale "
                                         << e["stale"] << ", round trip p99 " << e["round_trip_ns"]["p99"] << " ns");
    INFO(e.dump());
    CHECK(e["faults"] == 0);
    CHECK(e["corrupt"] == 0);
    CHECK(e["implausible"] == 0);
    // each step: a reply on time, or a miss that policy hold handled
    CHECK(e["replies"].get<std::uint64_t>() + e["late"].get<std::uint64_t>() + e["misses"].get<std::uint64_t>() ==
          done);
  }
  CHECK(s["recording"]["dropped_items"] == 0);
  // the recording holds every step and the summary
  Recording rec;
  REQUIRE_MESSAGE(load_recording(dir + "/recording.mcap", rec, &error), error);
  CHECK_FALSE(rec.truncated);
  CHECK(rec.steps.size() == done);
  CHECK(rec.summary.has_value());
  // memory: flat after the start (a bound far above noise, far below a per-step leak: a
  // leak of 100 bytes a step would add 4.5 MB over the last three quarters of a minute)
  REQUIRE(rss_early > 0);
  REQUIRE(rss_late > 0);
  CHECK(rss_late - rss_early < 4 * 1024 + rss_early / 20);
  std::filesystem::remove_all(dir);
}
