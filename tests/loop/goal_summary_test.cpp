// SPDX-License-Identifier: Apache-2.0
// The goals in the session summary: final depth and compass heading against the scenario's.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <numbers>

#include <nlohmann/json.hpp>

#include "tether/loop/goal_summary.hpp"
#include "tether/loop/in_process.hpp"
#include "tether/loop/session.hpp"

using namespace tether::runtime;

namespace {

const char* text = R"(name: goals
world: {gravity_m_s2: [0, 0, 0], water: {density_kg_m3: 1025, surface_z_m: 1}}
vehicles:
  - name: auv
    bodies: [{name: hull, shape: {type: sphere, radius_m: 0.2}, mass_kg: 34,
              initial: {position_m: [0, 0, -1.5], orientation_rpy_deg: [0, 0, 100]}}]
  - name: rov
    bodies: [{name: hull, shape: {type: sphere, radius_m: 0.2}, mass_kg: 34}]
loop: {period_ms: 10, real_time_factor: 0, steps: 3}
goals:
  - {vehicle: auv, depth_m: 2, heading_deg: 350}
  - {vehicle: rov, depth_m: 0.5}
endpoints: [{name: c, type: in_process, controller: idle}]
)";

}  // namespace

TEST_CASE("goals: compass heading is clockwise from north") {
  auto yaw = [](double deg) { return Quat(Eigen::AngleAxisd(deg * std::numbers::pi / 180, Vec3::UnitZ())); };
  CHECK(compass_heading_deg(yaw(0)) == doctest::Approx(90));     // facing east (+x)
  CHECK(compass_heading_deg(yaw(90)) == doctest::Approx(0));     // facing north (+y)
  CHECK(compass_heading_deg(yaw(180)) == doctest::Approx(270));  // facing west
  CHECK(compass_heading_deg(yaw(-90)) == doctest::Approx(180));  // facing south
}

TEST_CASE("goals: the session summary reports each vehicle's final depth and heading against its goal") {
  const Scenario sc = parse_scenario(text, "goals.yaml");
  std::vector<std::unique_ptr<Endpoint>> eps;
  eps.push_back(std::make_unique<InProcessEndpoint>(sc.endpoints[0], sc.model));
  Session s(sc, std::move(eps));
  std::atomic<bool> stop{false};
  REQUIRE(s.run(stop) == Outcome::completed);
  const auto summary = s.summary();
  REQUIRE(summary["goals"].size() == 2);
  const auto& auv = summary["goals"][0];
  CHECK(auv["vehicle"] == "auv");
  // no gravity, no buoyancy, at rest: it stays at 2.5 m below the surface at z = 1
  CHECK(auv["target_depth_m"].get<double>() == 2);
  CHECK(auv["final_depth_m"].get<double>() == doctest::Approx(2.5));
  CHECK(auv["depth_error_m"].get<double>() == doctest::Approx(0.5));
  // yaw 100° (ccw from east) is compass 350°; the error wraps across north
  CHECK(auv["target_heading_deg"].get<double>() == 350);
  CHECK(auv["final_heading_deg"].get<double>() == doctest::Approx(350));
  CHECK(std::abs(auv["heading_error_deg"].get<double>()) < 1e-6);
  const auto& rov = summary["goals"][1];
  CHECK(rov["depth_error_m"].get<double>() == doctest::Approx(1 - 0.5));
  CHECK_FALSE(rov.contains("heading_error_deg"));
}

TEST_CASE("goals: a heading error wraps to the short way round") {
  const Scenario sc = parse_scenario(text, "goals.yaml");
  WorldState state = sc.initial;
  std::vector<GoalConfig> goals = {{"auv", 0, std::nullopt, 10.0}};
  // compass 350° against a goal of 10°: 20° to the left, not 340° to the right
  CHECK(summarize_goals(goals, sc.model, state)[0]["heading_error_deg"].get<double>() == doctest::Approx(-20));
  goals[0].heading_deg = 340.0;
  CHECK(summarize_goals(goals, sc.model, state)[0]["heading_error_deg"].get<double>() == doctest::Approx(10));
}
