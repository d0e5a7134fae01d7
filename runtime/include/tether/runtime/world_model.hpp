// SPDX-License-Identifier: Apache-2.0
// The constant part of the world: bodies' mass properties, shapes, water, static geometry.
// Built once from a scenario; never changes during a run (the state changes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tether/runtime/math.hpp"

namespace tether::runtime {

enum class ShapeKind : std::uint8_t { sphere, box, cylinder, capsule, plane };

/// A collision/mass shape in its own frame. Cylinders and capsules lie along the body x axis
/// (the long axis of a torpedo-shaped vehicle); planes are half-spaces {p : normal·p <= offset}.
struct Shape {
  ShapeKind kind = ShapeKind::sphere;
  double radius_m = 0.5;        // sphere, cylinder, capsule
  double half_length_m = 0.5;   // cylinder, capsule: half the length of the straight part
  Vec3 half_extents_m{0.5, 0.5, 0.5};  // box
  Vec3 normal{0, 0, 1};         // plane (unit)
  double offset_m = 0;          // plane
};

/// Volume of a closed shape in m^3 (0 for a plane).
double shape_volume(const Shape& shape);
/// Inertia tensor about the centre of mass, body frame, for a solid of uniform density.
Mat3 shape_inertia(const Shape& shape, double mass_kg);
/// Half of the shape's extent along world z when rotated by `orientation` (for buoyancy).
double shape_vertical_half_extent(const Shape& shape, const Quat& orientation);
/// Fraction of the shape's volume below the water surface, in [0, 1].
double submerged_fraction(const Shape& shape, const Quat& orientation, double centre_z_m,
                          double surface_z_m);

/// Linear + quadratic damping per body axis, applied to velocity relative to the water.
struct Damping {
  Vec3 linear{0, 0, 0};             // N per (m/s)
  Vec3 quadratic{0, 0, 0};          // N per (m/s)^2
  Vec3 angular_linear{0, 0, 0};     // N·m per (rad/s)
  Vec3 angular_quadratic{0, 0, 0};  // N·m per (rad/s)^2
};

/// One rigid body: constant properties. Its index in WorldModel::bodies is its id.
struct BodyModel {
  std::string name;  // fully qualified "vehicle.part"
  int vehicle = -1;  // index into WorldModel::vehicles
  Shape shape;
  double mass_kg = 1;
  double inv_mass = 1;
  Mat3 inertia_body = Mat3::Identity();
  Mat3 inv_inertia_body = Mat3::Identity();
  double volume_m3 = 0;          // displaced volume when fully submerged
  Vec3 centre_of_buoyancy_m{0, 0, 0};  // body frame, relative to the centre of mass
  Damping damping;
  double restitution = 0.3;
  double friction = 0.5;
};

/// Immovable geometry (tank walls, floor, obstacles), placed in the world frame.
struct StaticBody {
  std::string name;
  Shape shape;
  Vec3 position_m{0, 0, 0};
  Quat orientation = Quat::Identity();
  double restitution = 0.3;
  double friction = 0.5;
};

struct VehicleModel {
  std::string name;
  std::vector<int> bodies;  // indices into WorldModel::bodies
};

struct Water {
  bool present = false;
  double density_kg_m3 = 1000;
  double surface_z_m = 0;  // water fills z < surface_z_m
  Vec3 current_m_s{0, 0, 0};
};

struct WorldModel {
  Vec3 gravity_m_s2{0, 0, -9.81};
  Water water;
  std::vector<BodyModel> bodies;
  std::vector<StaticBody> statics;
  std::vector<VehicleModel> vehicles;
  /// Largest physics sub-step inside one loop step; the integrator splits dt to stay below it.
  double max_substep_s = 0.002;

  /// Index of a body by fully qualified name, or -1.
  int find_body(const std::string& name) const;
  /// Index of a vehicle by name, or -1.
  int find_vehicle(const std::string& name) const;
};

/// Fills inv_mass, inertia (from the shape unless `inertia_override` is set) and volume.
void finish_body_model(BodyModel& body, const Mat3* inertia_override, const double* volume_override);

}  // namespace tether::runtime
