// SPDX-License-Identifier: Apache-2.0
// The one place where Tether's frames become ArduPilot's (docs/ardupilot.md, "Frames").
//
// Tether: the world is x east, y north, z up (ENU); a body is x forward, y left, z up (FLU);
// an orientation rotates body vectors into the world (docs/devices.md, "Frames").
// ArduPilot: the earth frame is x north, y east, z down (NED); a body is x forward, y right,
// z down (FRD); its quaternion [w, x, y, z] rotates body FRD vectors into earth NED.
//
//   earth NED = A · world ENU,   A = [[0,1,0],[1,0,0],[0,0,-1]]   (swap x and y, negate z)
//   body  FRD = B · body  FLU,   B = diag(1, -1, -1)               (negate y and z)
//   q_ned_frd = q(A) · q_enu_flu · q(B)
//
// So a Tether vehicle at rest with the identity orientation (nose east, level) is, for
// ArduPilot, level with yaw +90° (nose east), and its accelerometer reads [0, 0, -9.81].
#pragma once

#include <cstdint>

#include "tether/ardupilot/ardupilot_json.hpp"
#include "tether/physics/math.hpp"

namespace tether::adapters::ardupilot {

/// One body's motion in Tether's frames (world ENU, body FLU), all world-frame vectors.
struct TetherKinematics {
  std::int64_t time_ns = 0;
  Vec3 position_m{0, 0, 0};
  Quat orientation = Quat::Identity();  // body FLU -> world ENU
  Vec3 velocity_m_s{0, 0, 0};
  Vec3 angular_velocity_rad_s{0, 0, 0};
  Vec3 acceleration_m_s2{0, 0, 0};  // the body's acceleration (not specific force)
};

/// A world ENU vector in earth NED.
Vec3 ned_from_enu(const Vec3& enu);
/// A body FLU vector in body FRD.
Vec3 frd_from_flu(const Vec3& flu);
/// A Tether orientation (body FLU -> world ENU) as ArduPilot's (body FRD -> earth NED).
Quat ned_frd_from_enu_flu(const Quat& q_enu_flu);

/// Fills the pose fields of a reply (time, gyro, accel_body, position, velocity,
/// quaternion; the optional fields are left alone). `gravity_m_s2` is the world's gravity
/// in ENU (e.g. [0, 0, -9.81]): accel_body is the specific force (acceleration minus
/// gravity) in FRD. `home_m` is the ENU point ArduPilot's position counts from.
void to_ardupilot(const TetherKinematics& k, const Vec3& gravity_m_s2, const Vec3& home_m, ReplyState& out);

}  // namespace tether::adapters::ardupilot
