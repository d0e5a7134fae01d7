// SPDX-License-Identifier: Apache-2.0
// `goals:` parsing: a valid list, and a positioned message for each mistake.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tether/scenario/scenario.hpp"

using namespace tether::runtime;

namespace {

std::string scenario_with(const std::string& goals, const std::string& world = "{water: {density_kg_m3: 1025}}") {
  return R"(name: g
world: )" +
         world + R"(
vehicles:
  - name: auv
    bodies: [{name: hull, shape: {type: sphere, radius_m: 0.2}, mass_kg: 34}]
  - name: rov
    bodies: [{name: hull, shape: {type: sphere, radius_m: 0.2}, mass_kg: 34}]
loop: {period_ms: 10, steps: 1}
endpoints: []
)" + goals;
}

std::vector<std::string> errors_of(const std::string& text) {
  try {
    parse_scenario(text, "g.yaml");
  } catch (const ConfigError& e) {
    return e.errors();
  }
  return {};
}

bool has(const std::vector<std::string>& errors, const std::string& part) {
  for (const auto& e : errors)
    if (e.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("goals: each vehicle's depth and heading targets are read") {
  const Scenario sc = parse_scenario(
      scenario_with(
          "goals:\n  - {vehicle: auv, depth_m: 2.5, heading_deg: 90}\n  - {vehicle: rov, heading_deg: 180}\n"),
      "g.yaml");
  REQUIRE(sc.goals.size() == 2);
  CHECK(sc.goals[0].vehicle == "auv");
  CHECK(sc.goals[0].vehicle_index == 0);
  CHECK(*sc.goals[0].depth_m == 2.5);
  CHECK(*sc.goals[0].heading_deg == 90);
  CHECK(sc.goals[1].vehicle_index == 1);
  CHECK_FALSE(sc.goals[1].depth_m.has_value());
  CHECK(*sc.goals[1].heading_deg == 180);
}

TEST_CASE("goals: none is fine") { CHECK(parse_scenario(scenario_with(""), "g.yaml").goals.empty()); }

TEST_CASE("goals: mistakes give positioned errors") {
  const auto errors = errors_of(scenario_with(R"(goals:
  - {vehicle: sub, depth_m: 2}
  - {vehicle: auv}
  - {vehicle: auv, depth_m: 1, colour: red}
  - {vehicle: rov, heading_deg: 400}
  - {vehicle: rov, depth_m: deep}
  - 3
)"));
  CHECK(has(errors, "g.yaml:11:15: goals[0].vehicle: no vehicle named \"sub\" in this scenario"));
  CHECK(has(errors, "goals[1]: a goal needs depth_m, heading_deg or both"));
  CHECK(has(errors, "goals[2].colour: unknown key"));
  CHECK(has(errors, "goals[3].heading_deg: expected a number from 0 to 360, got \"400\""));
  CHECK(has(errors, "goals[4].vehicle: a second goal for \"rov\""));
  CHECK(has(errors, "goals[4].depth_m: expected a number"));
  CHECK(has(errors, "goals[5]: expected a goal map {vehicle, depth_m, heading_deg}"));
}

TEST_CASE("goals: a depth goal needs water") {
  const auto errors =
      errors_of(scenario_with("goals: [{vehicle: auv, depth_m: 2}]\n", "{gravity_m_s2: [0, 0, -9.81]}"));
  CHECK(has(errors, "goals[0].depth_m: a depth goal needs water (world.water)"));
}
