// SPDX-License-Identifier: Apache-2.0
// Linear algebra types shared by the world model, physics and devices.
#pragma once

#include <algorithm>
#include <cmath>

#include <Eigen/Core>
#include <Eigen/Geometry>

namespace tether::runtime {

using Vec3 = Eigen::Vector3d;
using Mat3 = Eigen::Matrix3d;
/// Unit quaternion; rotates body-frame vectors into the world frame.
using Quat = Eigen::Quaterniond;

/// Quaternion from roll, pitch, yaw in radians (z-y-x intrinsic, as in aviation and marine use).
inline Quat quat_from_rpy(double roll, double pitch, double yaw) {
  return Quat(Eigen::AngleAxisd(yaw, Vec3::UnitZ()) * Eigen::AngleAxisd(pitch, Vec3::UnitY()) *
              Eigen::AngleAxisd(roll, Vec3::UnitX()));
}

/// Roll, pitch, yaw in radians of a unit quaternion (inverse of quat_from_rpy away from pitch = ±90°).
inline Vec3 rpy_from_quat(const Quat& q) {
  const Mat3 r = q.toRotationMatrix();
  const double roll = std::atan2(r(2, 1), r(2, 2));
  const double pitch = std::asin(std::clamp(-r(2, 0), -1.0, 1.0));
  const double yaw = std::atan2(r(1, 0), r(0, 0));
  return {roll, pitch, yaw};
}

}  // namespace tether::runtime
