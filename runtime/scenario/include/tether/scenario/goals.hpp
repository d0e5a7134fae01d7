// SPDX-License-Identifier: Apache-2.0
// `goals:` — what a vehicle is meant to reach or hold (a depth, a compass heading). The
// runtime cannot read a firmware's targets, so the scenario states them; the session
// summary reports each vehicle's final value and its error against the goal
// (loop/goal_summary.hpp). Expectations that pass or fail a run are `expect:`
// (scenario/expectations.hpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tether/physics/world_model.hpp"
#include "tether/scenario/config.hpp"

namespace tether::runtime {

/// One entry of `goals:`: `{vehicle, depth_m, heading_deg}`, at least one of the two targets.
struct GoalConfig {
  std::string vehicle;
  int vehicle_index = -1;
  std::optional<double> depth_m;      // metres below the water surface
  std::optional<double> heading_deg;  // compass: clockwise from north (world +y), [0, 360)
};

/// Parses the scenario's `goals:` list against the model's vehicles; records positioned
/// config errors on `node` (unknown vehicle, duplicate vehicle, no target, depth without water).
std::vector<GoalConfig> parse_goals(const ConfigNode& node, const WorldModel& model);

}  // namespace tether::runtime
