// SPDX-License-Identifier: Apache-2.0
// The mutable part of the world: plain data that can be copied, hashed and serialized.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tether/physics/math.hpp"

namespace tether::runtime {

struct WorldModel;

/// Rigid-body state as in Baraff's formulation: momenta rather than velocities, so the
/// integrator conserves what the physics conserves.
struct BodyState {
  Vec3 position_m{0, 0, 0};
  Quat orientation = Quat::Identity();
  Vec3 linear_momentum{0, 0, 0};   // kg·m/s, world frame
  Vec3 angular_momentum{0, 0, 0};  // kg·m^2/s, world frame
};

struct WorldState {
  std::uint64_t step = 0;  // loop step index k
  std::int64_t time_ns = 0;
  std::vector<BodyState> bodies;
};

/// Linear velocity of a body in the world frame.
Vec3 linear_velocity(const WorldModel& model, const WorldState& state, int body);
/// Angular velocity of a body in the world frame.
Vec3 angular_velocity(const WorldModel& model, const WorldState& state, int body);
/// Sets momenta from world-frame velocities.
void set_velocity(const WorldModel& model, WorldState& state, int body, const Vec3& v_m_s, const Vec3& w_rad_s);

/// Number of doubles of a body's state (position, quaternion, two momenta).
constexpr std::size_t state_doubles_per_body = 13;
/// FNV-1a 64 over the exact bit patterns: equal hashes mean bit-identical states.
std::uint64_t hash_state(const WorldState& state);

}  // namespace tether::runtime
