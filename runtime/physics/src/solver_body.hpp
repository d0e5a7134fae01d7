// SPDX-License-Identifier: Apache-2.0
// What the velocity solver and the joints share inside one sub-step (internal to physics).
#pragma once

#include "tether/physics/math.hpp"

namespace tether::runtime::detail {

/// A body as the solver sees it: velocities being solved for, world-frame inverse inertia.
struct SolverBody {
  Vec3 v{0, 0, 0};
  Vec3 w{0, 0, 0};
  Mat3 inv_i = Mat3::Zero();
  double inv_m = 0;
};

/// 3x3 times 3-vector, written out: the solver's inner loop calls it millions of times
inline Vec3 mul(const Mat3& m, const Vec3& v) {
  return {m(0, 0) * v.x() + m(0, 1) * v.y() + m(0, 2) * v.z(), m(1, 0) * v.x() + m(1, 1) * v.y() + m(1, 2) * v.z(),
          m(2, 0) * v.x() + m(2, 1) * v.y() + m(2, 2) * v.z()};
}

/// A unit vector perpendicular to the unit vector n (continuous away from one switch).
inline Vec3 unit_perpendicular(const Vec3& n) {
  const Vec3 t = std::abs(n.x()) < 0.57 ? Vec3(1, 0, 0) : Vec3(0, 1, 0);
  return n.cross(t).normalized();
}

/// Rotation by the rotation vector th (axis * angle).
inline Quat rotation_quat(const Vec3& th) {
  const double a = th.norm();
  if (a < 1e-9) return Quat(1.0, 0.5 * th.x(), 0.5 * th.y(), 0.5 * th.z()).normalized();
  const double s = std::sin(0.5 * a) / a;
  return Quat(std::cos(0.5 * a), s * th.x(), s * th.y(), s * th.z());
}

/// Rotation vector of a rotation quaternion (the shorter way round).
inline Vec3 rotation_vector(const Quat& dq) {
  const double sgn = dq.w() < 0 ? -1.0 : 1.0;
  const Vec3 v(sgn * dq.x(), sgn * dq.y(), sgn * dq.z());
  const double s = v.norm();
  if (s < 1e-12) return 2.0 * v;
  return v * (2.0 * std::atan2(s, sgn * dq.w()) / s);
}

}  // namespace tether::runtime::detail
