// SPDX-License-Identifier: Apache-2.0
// The scenario's `goals:` in the session summary: per vehicle, the final depth and compass
// heading and their errors against the goal (docs/scenario.md). The keys are parsed in
// scenario/goals.hpp; expectations that pass or fail a run are loop/expectation_eval.hpp.
#pragma once

#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tether/physics/heading.hpp"  // compass_heading_deg
#include "tether/physics/math.hpp"
#include "tether/physics/world_model.hpp"
#include "tether/physics/world_state.hpp"
#include "tether/scenario/goals.hpp"

namespace tether::runtime {

/// One JSON object per goal: vehicle, target_depth_m, final_depth_m, depth_error_m (final -
/// target), target_heading_deg, final_heading_deg, heading_error_deg (final - target, wrapped
/// to [-180, 180)); only the targets the goal names. Reads the vehicle's first body.
nlohmann::json summarize_goals(const std::vector<GoalConfig>& goals, const WorldModel& model, const WorldState& state);

}  // namespace tether::runtime
