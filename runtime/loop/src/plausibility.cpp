// SPDX-License-Identifier: Apache-2.0
#include "tether/loop/plausibility.hpp"

#include <algorithm>
#include <cmath>

namespace tether::runtime {

WorldBox plausible_box(const WorldModel& model, const PlausibilityConfig& config) {
  WorldBox box;
  box.min = Vec3::Constant(-config.max_distance_m);
  box.max = Vec3::Constant(config.max_distance_m);
  // a plane is solid where normal·p <= offset: an axis-aligned one bounds its axis
  for (const StaticBody& s : model.statics) {
    if (s.shape.kind != ShapeKind::plane) continue;
    for (int axis = 0; axis < 3; ++axis) {
      const Vec3 e = Vec3::Unit(axis);
      if (s.shape.normal.isApprox(e)) box.min[axis] = std::max(box.min[axis], s.shape.offset_m);
      if (s.shape.normal.isApprox(-e)) box.max[axis] = std::min(box.max[axis], -s.shape.offset_m);
    }
  }
  box.min.array() -= config.margin_m;
  box.max.array() += config.margin_m;
  return box;
}

const char* implausible(const Measurement& m, const Measurement* previous, std::int64_t period_ns, const WorldBox& box,
                        const PlausibilityConfig& config) {
  if (!config.enabled) return nullptr;
  const auto inside = [&](const Vec3& p) {
    return p.allFinite() && (p.array() >= box.min.array()).all() && (p.array() <= box.max.array()).all();
  };
  if (m.has_pose) {
    if (!m.position_m.allFinite() || !m.orientation.coeffs().allFinite()) return "a position that is not finite";
    if (!inside(m.position_m)) return "a position outside the world";
  }
  if (m.has_velocity) {
    if (!m.velocity_m_s.allFinite() || !m.angular_velocity_rad_s.allFinite()) return "a velocity that is not finite";
    if (m.velocity_m_s.norm() > config.max_speed_m_s) return "a velocity beyond max_speed_m_s";
    if (m.angular_velocity_rad_s.norm() > config.max_angular_speed_rad_s)
      return "an angular velocity beyond max_angular_speed_rad_s";
  }
  // (a previous measurement outside the world says nothing about where the body was)
  if (m.has_pose && previous != nullptr && previous->has_pose && inside(previous->position_m)) {
    // the body cannot have moved faster than the bound since the endpoint's previous reply
    // (in double: times come from the peer and their difference may not fit an int64)
    const double dt =
        std::max(static_cast<double>(m.measured_time_ns) - static_cast<double>(previous->measured_time_ns),
                 static_cast<double>(period_ns)) *
        1e-9;
    if ((m.position_m - previous->position_m).norm() > config.max_speed_m_s * dt)
      return "a jump from the previous measurement beyond max_speed_m_s";
  }
  return nullptr;
}

}  // namespace tether::runtime
