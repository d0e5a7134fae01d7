// SPDX-License-Identifier: Apache-2.0
// The hot path keeps its promise: after a warm-up, a step allocates nothing on the heap.
// Global operator new is replaced (tests/alloc_count.hpp) and counts the loop thread's
// allocations across 10,000 steps; a failure names the phase and the first call stack.
#include "../alloc_count.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "tether/loop/in_process.hpp"
#include "tether/loop/session.hpp"
#include "tether/recording/recorder.hpp"
#include "tether/loop/recorder_inputs.hpp"
#include "tether/recording/replay.hpp"

using namespace tether::runtime;
namespace test = tether::test;

namespace {

constexpr std::uint64_t warm_up_steps = 300;
constexpr std::uint64_t counted_steps = 10'000;

// an AUV with a depth PID in-process and a full set of sensors sampled every step
std::string scenario_text(bool record) {
  return std::string(R"(name: hot_path
world:
  gravity_m_s2: [0, 0, -9.81]
  water: {density_kg_m3: 1025, surface_z_m: 0}
  tank: {size_m: [60, 10, 8], floor_z_m: -8}
vehicles:
  - name: auv
    bodies:
      - name: hull
        shape: {type: cylinder, radius_m: 0.1, length_m: 1.2}
        mass_kg: 38.64
        damping: {linear: [10, 30, 30], quadratic: [20, 80, 80]}
        initial: {position_m: [0, 0, -0.5]}
        devices:
          - {name: depth, kind: depth, noise: {stddev: 0.01}}
          - {name: imu, kind: imu}
          - {name: compass, kind: compass, rate_hz: 20}
          - {name: dvl, kind: dvl}
          - {name: sonar, kind: sonar}
          - {name: bump, kind: contact}
          - {name: thruster, kind: thruster}
loop: {period_ms: 10, real_time_factor: 0, steps: )") +
         std::to_string(warm_up_steps + counted_steps + 5) + R"(, history_steps: 256}
recording: {enabled: )" +
         (record ? "true" : "false") + R"(, keyframe_every_steps: 100}
endpoints:
  - name: pid
    type: in_process
    vehicle: auv
    controller: depth_pid
    params: {target_depth_m: 2}
)";
}

const char* session_phase(const void* session) {
  const char* p = static_cast<const Session*>(session)->phase();
  return p ? p : "between steps";
}

// counts allocations from the end of the warm-up to the end of the counted steps
SessionOptions counting(test::AllocCount& count, const Session* const& session, std::uint64_t first_step) {
  SessionOptions o;
  o.after_step = [&count, &session, first_step](const WorldState& s) {
    if (s.step == first_step + warm_up_steps) {
      count.phase_of = &session_phase;
      count.context = session;
      test::arm(count);
    } else if (s.step == first_step + warm_up_steps + counted_steps) {
      test::disarm();
    }
    return true;
  };
  return o;
}

}  // namespace

TEST_CASE("an in-process session allocates nothing per step after a 300-step warm-up") {
  const Scenario sc = parse_scenario(scenario_text(false), "hot_path.yaml");
  test::AllocCount count;
  const Session* session_ptr = nullptr;
  std::vector<std::unique_ptr<Endpoint>> eps;
  eps.push_back(std::make_unique<InProcessEndpoint>(sc.endpoints[0], sc.model));
  Session session(sc, std::move(eps), counting(count, session_ptr, sc.initial.step));
  session_ptr = &session;
  std::atomic<bool> stop{false};
  REQUIRE(session.run(stop) == Outcome::completed);
  test::disarm();
  INFO(count.describe());
  CHECK(count.total == 0);
  CHECK(session.devices().counters().samples > counted_steps);  // the sensors did run
}

TEST_CASE("a recorded session allocates nothing per step after a 300-step warm-up, keyframes included") {
  const Scenario sc = parse_scenario(scenario_text(true), "hot_path.yaml");
  const std::string path = (std::filesystem::temp_directory_path() / "tether_hot_path_test.mcap").string();
  test::AllocCount count;
  const Session* session_ptr = nullptr;
  std::vector<std::unique_ptr<Endpoint>> eps;
  eps.push_back(std::make_unique<InProcessEndpoint>(sc.endpoints[0], sc.model));
  Session session(sc, std::move(eps), counting(count, session_ptr, sc.initial.step));
  session_ptr = &session;
  Recorder recorder(sc, recorder_inputs(session));
  std::string error;
  REQUIRE(recorder.open(path, &error));
  session.set_recorder(&recorder);
  std::atomic<bool> stop{false};
  REQUIRE(session.run(stop) == Outcome::completed);
  test::disarm();
  REQUIRE(recorder.close(session.summary(), &error));
  INFO(count.describe());
  CHECK(count.total == 0);
  // the steps and keyframes went to the file
  Recording rec;
  REQUIRE(load_recording(path, rec, &error));
  CHECK(rec.steps.size() == warm_up_steps + counted_steps + 5);
  CHECK(rec.keyframes.size() >= counted_steps / 100);
  std::filesystem::remove(path);
}
