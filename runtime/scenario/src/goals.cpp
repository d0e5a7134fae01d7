// SPDX-License-Identifier: Apache-2.0
#include "tether/scenario/goals.hpp"

#include <set>

namespace tether::runtime {

std::vector<GoalConfig> parse_goals(const ConfigNode& node, const WorldModel& model) {
  std::vector<GoalConfig> out;
  if (!node.yaml().IsDefined() || !node.expect_sequence()) return out;
  std::set<int> seen;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const ConfigNode g = node.at(i);
    if (!g.is_map()) {
      g.error("expected a goal map {vehicle, depth_m, heading_deg}, got " + describe_value(g.yaml()));
      continue;
    }
    if (!g.expect_map({"vehicle", "depth_m", "heading_deg"})) continue;
    GoalConfig goal;
    goal.vehicle = g.string("vehicle");
    if (!goal.vehicle.empty()) {
      goal.vehicle_index = model.find_vehicle(goal.vehicle);
      if (goal.vehicle_index < 0)
        g["vehicle"].error("no vehicle named \"" + goal.vehicle + "\" in this scenario");
      else if (!seen.insert(goal.vehicle_index).second)
        g["vehicle"].error("a second goal for \"" + goal.vehicle + "\" (one entry per vehicle)");
    }
    if (g.has("depth_m")) {
      goal.depth_m = g.number("depth_m");
      // depth is measured from the water surface: without water there is none
      if (!model.water.present) g["depth_m"].error("a depth goal needs water (world.water)");
    }
    if (g.has("heading_deg")) goal.heading_deg = g.number("heading_deg", Range::between(0, 360));
    if (!goal.depth_m && !goal.heading_deg) g.error("a goal needs depth_m, heading_deg or both");
    out.push_back(std::move(goal));
  }
  return out;
}

}  // namespace tether::runtime
