// SPDX-License-Identifier: Apache-2.0
// Tether's frames (world ENU, body FLU) to ArduPilot's (earth NED, body FRD): the vehicle
// level and turned 90° about each world axis, every field of the reply checked against
// numbers worked out by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <string>

#include "tether/ardupilot/ardupilot_frames.hpp"

using namespace tether::adapters::ardupilot;

namespace {

constexpr double g = 9.81;
const double h = std::sqrt(0.5);

void check_vec(const Vec3& got, const Vec3& want, const char* what) {
  INFO(what << ": got [" << got.x() << ", " << got.y() << ", " << got.z() << "], want [" << want.x() << ", "
            << want.y() << ", " << want.z() << "]");
  CHECK((got - want).norm() < 1e-12);
}

// the same rotation: q or -q
void check_quat(const Quat& got, const Quat& want) {
  INFO("quaternion: got [" << got.w() << ", " << got.x() << ", " << got.y() << ", " << got.z() << "], want ["
                           << want.w() << ", " << want.x() << ", " << want.y() << ", " << want.z() << "]");
  CHECK(std::min((got.coeffs() - want.coeffs()).norm(), (got.coeffs() + want.coeffs()).norm()) < 1e-12);
  CHECK(got.w() >= 0);
}

struct Case {
  const char* name;
  Quat tether;         // body FLU -> world ENU
  Quat ardupilot;      // body FRD -> earth NED, by hand
  Vec3 nose_ned;       // where the nose points, NED
  Vec3 right_ned;      // where the right side points, NED
  Vec3 accel_at_rest;  // FRD: the specific force, up, in body axes
  Vec3 gyro_up;        // FRD: turning counter-clockwise seen from above at 0.3 rad/s (world +z)
  Vec3 gyro_east;      // FRD: turning about world +x (east) at 0.3 rad/s
};

}  // namespace

TEST_CASE("ardupilot frames: level and turned 90 degrees about each axis, every field as worked out by hand") {
  using std::numbers::pi;
  const Case cases[] = {
      // identity: nose east, level. ArduPilot: yaw +90 (nose east); up is -z in FRD
      {"level, nose east", Quat::Identity(), Quat(h, 0, 0, h), {0, 1, 0}, {-1, 0, 0}, {0, 0, -g}, {0, 0, -0.3},
       {0.3, 0, 0}},
      // +90 about world z: nose north. ArduPilot: yaw 0, the identity; counter-clockwise = yaw
      // rate < 0; turning about east (the right side) lifts the nose: pitch rate > 0
      {"yawed to north", Quat(Eigen::AngleAxisd(pi / 2, Vec3::UnitZ())), Quat(1, 0, 0, 0), {1, 0, 0}, {0, 1, 0},
       {0, 0, -g}, {0, 0, -0.3}, {0, 0.3, 0}},
      // +90 about world x (the nose): the left side goes up, the right down. ArduPilot:
      // roll +90 at yaw 90; up is along -y (FRD); turning about up is turning about -y
      {"rolled right", Quat(Eigen::AngleAxisd(pi / 2, Vec3::UnitX())), Quat(0.5, 0.5, 0.5, 0.5), {0, 1, 0},
       {0, 0, 1}, {0, -g, 0}, {0, -0.3, 0}, {0.3, 0, 0}},
      // +90 about world y (north): the nose goes down. ArduPilot: pitch -90 at yaw 90; up is
      // along -x (FRD)
      {"nose down", Quat(Eigen::AngleAxisd(pi / 2, Vec3::UnitY())), Quat(0.5, 0.5, -0.5, 0.5), {0, 0, 1},
       {-1, 0, 0}, {-g, 0, 0}, {-0.3, 0, 0}, {0, 0, -0.3}},
  };
  const Vec3 gravity(0, 0, -g);
  for (const Case& c : cases) {
    INFO(c.name);
    TetherKinematics k;
    k.time_ns = 1'234'000'000;
    k.orientation = c.tether;
    k.position_m = {1, 2, 3};  // 1 m east, 2 m north, 3 m up
    k.velocity_m_s = {-0.5, 0.25, -1};
    ReplyState s;
    to_ardupilot(k, gravity, Vec3(0, 0, 0), s);
    CHECK(s.time_ns == 1'234'000'000);
    check_quat(s.quaternion, c.ardupilot);
    check_vec(s.quaternion * Vec3(1, 0, 0), c.nose_ned, "nose");
    check_vec(s.quaternion * Vec3(0, 1, 0), c.right_ned, "right side");
    check_vec(s.quaternion * Vec3(0, 0, 1), c.nose_ned.cross(c.right_ned), "body down");
    check_vec(s.position_m, {2, 1, -3}, "position: north, east, down");
    check_vec(s.velocity_m_s, {0.25, -0.5, 1}, "velocity: north, east, down");
    check_vec(s.accel_body_m_s2, c.accel_at_rest, "accel_body at rest");
    check_vec(s.gyro_rad_s, Vec3::Zero(), "gyro at rest");

    k.angular_velocity_rad_s = {0, 0, 0.3};
    to_ardupilot(k, gravity, Vec3(0, 0, 0), s);
    check_vec(s.gyro_rad_s, c.gyro_up, "gyro turning about up");
    k.angular_velocity_rad_s = {0.3, 0, 0};
    to_ardupilot(k, gravity, Vec3(0, 0, 0), s);
    check_vec(s.gyro_rad_s, c.gyro_east, "gyro turning about east");

    // accelerating along the nose at 2 m/s²: the accelerometer adds +2 along its x
    k.acceleration_m_s2 = c.tether * Vec3(2, 0, 0);
    to_ardupilot(k, gravity, Vec3(0, 0, 0), s);
    check_vec(s.accel_body_m_s2, c.accel_at_rest + Vec3(2, 0, 0), "accel_body accelerating forward");
    // free fall reads nothing
    k.acceleration_m_s2 = gravity;
    to_ardupilot(k, gravity, Vec3(0, 0, 0), s);
    check_vec(s.accel_body_m_s2, Vec3::Zero(), "accel_body in free fall");
  }
}

TEST_CASE("ardupilot frames: position counts from home, the two vector maps and the quaternion agree") {
  TetherKinematics k;
  k.position_m = {10, -4, -2.5};
  ReplyState s;
  to_ardupilot(k, Vec3(0, 0, -9.81), Vec3(7, -6, 0.5), s);
  check_vec(s.position_m, {2, 3, 3}, "position from home");
  // for any orientation: the quaternion maps a body vector as the frame maps do
  const Quat q = Quat(Eigen::AngleAxisd(0.7, Vec3(0.3, -1.2, 0.5).normalized())) *
                 Quat(Eigen::AngleAxisd(-2.1, Vec3(1, 0.4, 0).normalized()));
  const Quat ap = ned_frd_from_enu_flu(q);
  for (const Vec3& v : {Vec3(1, 0, 0), Vec3(0, 1, 0), Vec3(0, 0, 1), Vec3(0.2, -3, 1.5)})
    check_vec(ap * frd_from_flu(v), ned_from_enu(q * v), "body vector through both paths");
  CHECK(std::abs(ap.norm() - 1) < 1e-12);
  // a quaternion that is not quite unit is normalised first
  const Quat sloppy(q.coeffs() * 1.001);
  check_quat(ned_frd_from_enu_flu(sloppy), ap);
}
