// SPDX-License-Identifier: Apache-2.0
// What devices may see of the world. hal cannot include runtime headers (the dependency runs
// adapters -> runtime -> hal), so it states here what it needs and runtime implements it
// (runtime/device_world.hpp). Tests and benches use SimpleWorld below.
//
// Frames: the world is x east, y north, z up (gravity along -z). A body frame is x forward,
// y left, z up when the body is level; positions in a body frame are relative to its centre
// of mass. Readings on the wire use the marine body frame x forward, y right, z down
// (firmware_shim/payloads.h); devices convert (y and z change sign).
#pragma once

#include <cstdint>
#include <vector>

#include <Eigen/Core>
#include <Eigen/Geometry>

namespace tether::hal {

using Vec3 = Eigen::Vector3d;
using Mat3 = Eigen::Matrix3d;
/// Unit quaternion; rotates body-frame vectors into the world frame.
using Quat = Eigen::Quaterniond;

/// Motion of one rigid body at its centre of mass, world frame.
struct BodyKinematics {
  Vec3 position_m{0, 0, 0};
  Quat orientation = Quat::Identity();
  Vec3 linear_velocity_m_s{0, 0, 0};
  Vec3 angular_velocity_rad_s{0, 0, 0};
  Vec3 linear_acceleration_m_s2{0, 0, 0};
  Vec3 angular_acceleration_rad_s2{0, 0, 0};
  double mass_kg = 1;
};

/// The water volume: fills z < surface_z_m when present.
struct WaterView {
  bool present = false;
  double density_kg_m3 = 1000;
  double surface_z_m = 0;
  Vec3 current_m_s{0, 0, 0};
};

/// Result of a ray cast: the nearest surface along the ray within the range.
struct RayHit {
  bool hit = false;
  double distance_m = 0;
  Vec3 normal{0, 0, 0};   // world frame, facing the ray origin
  int body = -1;          // body index hit, or -1
  int static_index = -1;  // static geometry index hit, or -1
};

/// One contact point of the last physics step.
struct Contact {
  int body_a = -1;  // body index, or -1 for static geometry
  int body_b = -1;  // body index, or -1 for static geometry
  Vec3 point_m{0, 0, 0};
  Vec3 normal{0, 0, 1};  // world frame, pushes body_a away from body_b
  double force_n = 0;    // magnitude of the contact force (impulse over the step)
};

/// What one joint carried during the last physics step (load cells: the tension sensor).
struct JointLoad {
  int body_a = -1;
  int body_b = -1;        // -1: the world
  Vec3 force_n{0, 0, 0};  // on body_a, world frame, mean over the step (body_b got -force_n)
};

/// A hinge's angle or a slider's travel and its rate (encoders); 0 for other joints.
struct JointMotion {
  double position = 0;
  double rate = 0;
};

/// The world as devices see it at one instant. Implementations fill the data members and
/// answer ray casts; every vector is sized at configure time and refilled each step.
class WorldView {
 public:
  virtual ~WorldView() = default;

  /// The nearest hit along `direction` (unit, world frame) from `origin_m` within
  /// `max_range_m`, ignoring body `ignore_body` (the device's own body; -1 ignores none).
  [[nodiscard]] virtual RayHit ray_cast(const Vec3& origin_m, const Vec3& direction, double max_range_m,
                                        int ignore_body) const = 0;

  std::vector<BodyKinematics> bodies;  // indexed like the runtime's bodies
  Vec3 gravity_m_s2{0, 0, -9.81};
  WaterView water;
  std::vector<Contact> contacts;          // contacts of the step that produced this state
  std::vector<JointLoad> joint_loads;     // per joint of the runtime, that step's loads (may be empty)
  std::vector<JointMotion> joint_motion;  // per joint, at this instant (may be empty)
};

/// A simulated world for tests and benches: analytic half-spaces and spheres.
class SimpleWorld final : public WorldView {
 public:
  /// Solid where normal·p <= offset_m (the runtime's plane convention); normal is unit.
  struct Plane {
    Vec3 normal{0, 0, 1};
    double offset_m = 0;
  };
  /// A sphere fixed in the world (body < 0) or centred on a body's centre of mass.
  struct Sphere {
    Vec3 centre_m{0, 0, 0};
    double radius_m = 0.5;
    int body = -1;
  };

  [[nodiscard]] RayHit ray_cast(const Vec3& origin_m, const Vec3& direction, double max_range_m,
                                int ignore_body) const override;

  /// Adds a level tank: floor at floor_z_m and four walls at x = ±half_x_m, y = ±half_y_m.
  void add_tank(double half_x_m, double half_y_m, double floor_z_m);

  std::vector<Plane> planes;    // static_index = position in this list
  std::vector<Sphere> spheres;  // static_index = planes.size() + position, if not on a body
};

}  // namespace tether::hal
