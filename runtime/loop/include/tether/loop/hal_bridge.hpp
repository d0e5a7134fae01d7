// SPDX-License-Identifier: Apache-2.0
// The physics' answers in the shapes hal devices read: a ray cast usable as DeviceWorld's
// RayCastFn, and a step's contact events as hal contacts (bump sensors).
#pragma once

#include <vector>

#include "tether/hal/world_view.hpp"
#include "tether/physics/physics.hpp"
#include "tether/physics/world_model.hpp"
#include "tether/physics/world_state.hpp"

namespace tether::runtime {

/// raycast() (every shape and terrain) with hal's result type; pass &hal_ray_cast to
/// DeviceWorld to replace basic_ray_cast.
hal::RayHit hal_ray_cast(const WorldModel& model, const WorldState& state, const Vec3& origin, const Vec3& direction,
                         double max_range_m, int ignore_body);

/// Replaces `out` with one hal contact per event of a step of length dt_s (force = impulse
/// magnitude / dt_s; static geometry becomes body -1). Reuses out's capacity.
void to_hal_contacts(const std::vector<ContactEvent>& events, double dt_s, std::vector<hal::Contact>& out);

/// Replaces `out` with the joints' loads of a step of length dt_s (force = impulse / dt_s),
/// one per joint of `model`; empty when the step reported none. Reuses out's capacity.
void to_hal_joint_loads(const WorldModel& model, const std::vector<JointLoad>& loads, double dt_s,
                        std::vector<hal::JointLoad>& out);

/// Replaces `out` with every joint's coordinate and its rate in `state` (encoders). Reuses
/// out's capacity.
void to_hal_joint_motion(const WorldModel& model, const WorldState& state, std::vector<hal::JointMotion>& out);

}  // namespace tether::runtime
