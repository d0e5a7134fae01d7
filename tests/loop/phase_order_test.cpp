// SPDX-License-Identifier: Apache-2.0
// The Phase enum is the step list: docs/architecture.md's "One step" names every phase in
// the enum's order, and a running session enters them in that order (each step goes only
// forward through the list, then back to `loop`).
#include <doctest/doctest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_paths.hpp"
#include "tether/loop/in_process.hpp"
#include "tether/loop/phase_profile.hpp"
#include "tether/loop/session.hpp"
#include "tether/recording/recorder.hpp"
#include "example_controllers.hpp"

using namespace tether::runtime;

namespace {

constexpr auto phase_count = static_cast<std::size_t>(Phase::count);

std::vector<std::string> phase_names() {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < phase_count; ++i) names.emplace_back(to_string(static_cast<Phase>(i)));
  return names;
}

// the bold names of the numbered items under "## One step", up to the next heading
std::vector<std::string> documented_steps() {
  std::ifstream in(TETHER_SOURCE_DIR + "/docs/architecture.md");
  REQUIRE(in);
  std::vector<std::string> names;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("#", 0) == 0) {
      if (inside) break;
      inside = line == "## One step";
      continue;
    }
    // "12. **name** — ...": digits, ". **", the name, "**"
    const std::size_t digits = line.find_first_not_of("0123456789");
    if (!inside || digits == 0 || digits == std::string::npos || line.compare(digits, 4, ". **") != 0) continue;
    const std::size_t end = line.find("**", digits + 4);
    if (end != std::string::npos) names.push_back(line.substr(digits + 4, end - digits - 4));
  }
  return names;
}

// every phase has work here: devices, a recorder, faults, an identification plan,
// expectations, a status callback
const char* scenario_text = R"(name: phase_order
world:
  gravity_m_s2: [0, 0, -9.81]
  water: {density_kg_m3: 1025, surface_z_m: 0}
vehicles:
  - name: auv
    bodies:
      - name: hull
        shape: {type: cylinder, radius_m: 0.1, length_m: 1.2}
        mass_kg: 38.6
        initial: {position_m: [0, 0, -1]}
        devices:
          - {name: depth, kind: depth}
          - {name: compass, kind: compass}
          - {name: thruster_left, kind: thruster, mount: {position_m: [-0.55, 0.14, 0]}}
          - {name: thruster_right, kind: thruster, mount: {position_m: [-0.55, -0.14, 0]}}
          - {name: thruster_vfront, kind: thruster, mount: {position_m: [0.35, 0, 0], orientation_rpy_deg: [0, 90, 0]}}
          - {name: thruster_vrear, kind: thruster, mount: {position_m: [-0.35, 0, 0], orientation_rpy_deg: [0, 90, 0]}}
loop: {period_ms: 10, real_time_factor: 0, steps: 40, profile_phases: true}
recording: {enabled: true, keyframe_every_steps: 10}
endpoints:
  - {name: ctl, type: in_process, vehicle: auv, controller: depth_heading_hold}
identify:
  endpoint: ctl
  start_s: 0
  manoeuvres:
    - {hold_s: 0.1, depth_m: 1.5}
    - {hold_s: 0.1, heading_deg: 90}
faults:
  - {device: auv.hull.depth, kind: bias, value: 0.1, at_s: 0.1, duration_s: 0.1}
expect:
  - {value: auv.x_m, that: "within 10 of 0"}
)";

}  // namespace

TEST_CASE("phases: docs/architecture.md's step list names every phase, in the order of the Phase enum") {
  CHECK(documented_steps() == phase_names());
}

TEST_CASE("phases: a session enters its phases in the order of the step list") {
  tether::examples::register_example_controllers();
  const Scenario sc = parse_scenario(scenario_text, "phase_order.yaml");
  std::vector<std::unique_ptr<Endpoint>> eps;
  eps.push_back(std::make_unique<InProcessEndpoint>(sc.endpoints[0], sc.model));
  SessionOptions options;
  int statuses = 0;
  options.on_status = [&](const LiveStatus&) { ++statuses; };
  Session session(sc, std::move(eps), options);
  const std::string path = (std::filesystem::temp_directory_path() / "tether_phase_order_test.mcap").string();
  Recorder recorder(sc, {"ctl"}, {});
  std::string error;
  REQUIRE(recorder.open(path, &error));
  session.set_recorder(&recorder);
  std::atomic<bool> stop{false};
  REQUIRE(session.run(stop) == Outcome::completed);
  REQUIRE(recorder.close(session.summary(), &error));
  std::filesystem::remove(path);
  CHECK(statuses > 0);
  CHECK(session.phase() == nullptr);  // outside run()

  const PhaseProfile& profile = session.phase_profile();
  // every phase ran here, each in turn right after the one before it in the list
  for (std::size_t i = 0; i + 1 < phase_count; ++i) {
    CAPTURE(to_string(static_cast<Phase>(i)));
    CHECK(profile.followed(static_cast<Phase>(i), static_cast<Phase>(i + 1)));
  }
  // and nothing went backwards, except to `loop`, where the next iteration begins
  for (std::size_t from = 0; from < phase_count; ++from)
    for (std::size_t to = 0; to <= from; ++to) {
      if (to == static_cast<std::size_t>(Phase::loop)) continue;
      CAPTURE(to_string(static_cast<Phase>(from)));
      CAPTURE(to_string(static_cast<Phase>(to)));
      CHECK_FALSE(profile.followed(static_cast<Phase>(from), static_cast<Phase>(to)));
    }
  const std::vector<std::string> ran = session.summary()["phase_profile"]["order"];
  CHECK(ran == phase_names());
}
