// SPDX-License-Identifier: Apache-2.0
#include "tether/ardupilot/ardupilot_frames.hpp"

#include <numbers>

namespace tether::adapters::ardupilot {

namespace {

// q(A): A swaps x and y and negates z, a half turn about (1, 1, 0)/sqrt(2)
const Quat& q_ned_enu() {
  static const Quat q = Quat(Eigen::AngleAxisd(std::numbers::pi, Vec3(1, 1, 0).normalized()));
  return q;
}
// q(B): B negates y and z, a half turn about x
const Quat& q_flu_frd() {
  static const Quat q = Quat(Eigen::AngleAxisd(std::numbers::pi, Vec3::UnitX()));
  return q;
}

}  // namespace

Vec3 ned_from_enu(const Vec3& enu) { return {enu.y(), enu.x(), -enu.z()}; }

Vec3 frd_from_flu(const Vec3& flu) { return {flu.x(), -flu.y(), -flu.z()}; }

Quat ned_frd_from_enu_flu(const Quat& q_enu_flu) {
  Quat q = q_ned_enu() * q_enu_flu.normalized() * q_flu_frd();
  q.normalize();
  // one sign for the same rotation: w >= 0
  if (q.w() < 0) q.coeffs() = -q.coeffs();
  return q;
}

void to_ardupilot(const TetherKinematics& k, const Vec3& gravity_m_s2, const Vec3& home_m, ReplyState& out) {
  const Quat world_from_body = k.orientation.normalized();
  const Quat body_from_world = world_from_body.conjugate();
  out.time_ns = k.time_ns;
  out.gyro_rad_s = frd_from_flu(body_from_world * k.angular_velocity_rad_s);
  out.accel_body_m_s2 = frd_from_flu(body_from_world * (k.acceleration_m_s2 - gravity_m_s2));
  out.position_m = ned_from_enu(k.position_m - home_m);
  out.velocity_m_s = ned_from_enu(k.velocity_m_s);
  out.quaternion = ned_frd_from_enu_flu(world_from_body);
}

}  // namespace tether::adapters::ardupilot
