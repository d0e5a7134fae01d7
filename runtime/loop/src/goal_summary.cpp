// SPDX-License-Identifier: Apache-2.0
#include "tether/loop/goal_summary.hpp"

#include <cmath>
#include <numbers>

#include <nlohmann/json.hpp>

#include "tether/physics/math.hpp"

namespace tether::runtime {

nlohmann::json summarize_goals(const std::vector<GoalConfig>& goals, const WorldModel& model, const WorldState& state) {
  nlohmann::json out = nlohmann::json::array();
  for (const GoalConfig& g : goals) {
    if (g.vehicle_index < 0) continue;  // rejected at parse time; kept out of the summary
    const int body = model.vehicles[static_cast<std::size_t>(g.vehicle_index)].bodies.front();
    const BodyState& b = state.bodies[static_cast<std::size_t>(body)];
    nlohmann::json j{{"vehicle", g.vehicle}};
    if (g.depth_m) {
      const double depth_m = model.water.surface_z_m - b.position_m.z();
      j["target_depth_m"] = *g.depth_m;
      j["final_depth_m"] = depth_m;
      j["depth_error_m"] = depth_m - *g.depth_m;
    }
    if (g.heading_deg) {
      const double heading_deg = compass_heading_deg(b.orientation);
      j["target_heading_deg"] = *g.heading_deg;
      j["final_heading_deg"] = heading_deg;
      j["heading_error_deg"] = wrap_360_deg(heading_deg - *g.heading_deg + 180.0) - 180.0;
    }
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace tether::runtime
