// SPDX-License-Identifier: Apache-2.0
// The constant part of the world: bodies' mass properties, shapes, water, static geometry.
// Built once from a scenario; never changes during a run (the state changes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tether/physics/math.hpp"

namespace tether::runtime {

enum class ShapeKind : std::uint8_t { sphere, box, cylinder, capsule, plane, heightfield };

/// A collision/mass shape in its own frame. Cylinders and capsules lie along the body x axis
/// (the long axis of a torpedo-shaped vehicle); planes are half-spaces {p : normal·p <= offset}.
/// A heightfield (static geometry only) is terrain: WorldModel::heightfields[heightfield], its
/// grid corner at the shape's origin, cells along +x and +y, heights along +z.
struct Shape {
  ShapeKind kind = ShapeKind::sphere;
  double radius_m = 0.5;               // sphere, cylinder, capsule
  double half_length_m = 0.5;          // cylinder, capsule: half the length of the straight part
  Vec3 half_extents_m{0.5, 0.5, 0.5};  // box
  Vec3 normal{0, 0, 1};                // plane (unit)
  double offset_m = 0;                 // plane
  int heightfield = -1;                // heightfield: index into WorldModel::heightfields
};

/// A terrain grid: heights_m[row * columns + column] is the height at
/// (column * cell_size_m, row * cell_size_m) in the owning static body's frame. Each cell is
/// split into two triangles along its (0,0)-(1,1) diagonal; outside the grid there is no terrain.
struct HeightField {
  std::string name;
  int columns = 0;  // vertices along x (>= 2)
  int rows = 0;     // vertices along y (>= 2)
  double cell_size_m = 1;
  std::vector<double> heights_m;
  double min_height_m = 0;  // filled by finish_heightfield() (terrain.hpp)
  double max_height_m = 0;

  double height(int column, int row) const {
    return heights_m[static_cast<std::size_t>(row) * static_cast<std::size_t>(columns) +
                     static_cast<std::size_t>(column)];
  }
};

/// Volume of a closed shape in m^3 (0 for a plane).
double shape_volume(const Shape& shape);
/// Inertia tensor about the centre of mass, body frame, for a solid of uniform density.
Mat3 shape_inertia(const Shape& shape, double mass_kg);
/// Half of the shape's extent along world z when rotated by `orientation` (for buoyancy).
double shape_vertical_half_extent(const Shape& shape, const Quat& orientation);
/// Fraction of the shape's volume below the water surface, in [0, 1].
double submerged_fraction(const Shape& shape, const Quat& orientation, double centre_z_m, double surface_z_m);

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
  double volume_m3 = 0;                // displaced volume when fully submerged
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

/// What a joint holds (docs/physics.md, "Joints").
enum class JointKind : std::uint8_t {
  fixed,   // no relative motion: the pair moves as one rigid body
  hinge,   // turns about one axis (a door, a propeller shaft, an arm's elbow)
  slider,  // slides along one axis without turning (prismatic)
  ball,    // a shared point, free to turn (a tow hook, a cable's links)
  lock,    // one body against the world: the world axes it may not move along or turn about
};

/// A joint between two bodies, or a body and the world (body_b = -1). Anchors and axes are
/// held in each body's own frame (the world's for body_b = -1), so the joint moves with its
/// bodies; make_joint() (joints.hpp) fills them from a world anchor and axis at a pose.
struct JointModel {
  std::string name;
  JointKind kind = JointKind::ball;
  int body_a = -1;
  int body_b = -1;                            // -1: the world
  Vec3 anchor_a{0, 0, 0}, anchor_b{0, 0, 0};  // the shared point (hinge, ball, fixed; slider: on the axis)
  Vec3 axis_a{1, 0, 0}, axis_b{1, 0, 0};      // hinge / slider axis (unit)
  Vec3 ref_a{0, 1, 0}, ref_b{0, 1, 0};        // perpendicular to the axis: the hinge's zero angle
  Quat relative = Quat::Identity();           // orientation of b in a's frame (fixed, slider)
  /// Limits: hinge angle of b relative to a about the axis (rad), slider travel of b along it
  /// from where it was built (m); lower <= upper.
  bool limited = false;
  double lower = 0, upper = 0;
  /// lock: which world axes body_a may not move along (bits 0..2: x, y, z) or turn about
  /// (bits 3..5); the held pose is anchor_b (position) and relative (orientation)
  std::uint8_t locked = 0;
  /// hinge, slider: a motor drives the coordinate's rate (rad/s, m/s) toward motor_speed
  /// with at most motor_max (N·m, N; 0: no motor); a brake resists any motion of the
  /// coordinate with up to brake (N·m, N; 0: none)
  double motor_speed = 0, motor_max = 0, brake = 0;
  /// slider: a spring (N/m) and damper (N·s/m) along the axis pull the travel toward
  /// spring_rest_m (a suspension); 0: none
  double spring_n_m = 0, damper_n_s_m = 0, spring_rest_m = 0;
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

/// Where the broad phase looks for candidate pairs (docs/physics.md has the measurements).
enum class BroadPhaseKind : std::uint8_t { grid, sweep_and_prune, brute_force };

/// Collision and sub-step tuning; the defaults suit bodies from centimetres to metres.
struct ContactSettings {
  /// No body moves (or turns its surface) more than this fraction of its size per sub-step;
  /// size = radius of a sphere, capsule or cylinder, smallest half extent of a box.
  double max_motion_fraction = 0.5;
  /// Sub-steps are never shorter than this (a body faster than size/min_substep_s moves more).
  double min_substep_s = 1e-6;
  /// At most this many sub-steps per loop step; reaching it is counted in StepReport.
  std::uint32_t max_substeps = 100000;
  /// Most sequential-impulse sweeps per island and sub-step; an island stops earlier once no
  /// sweep changes a velocity by more than velocity_tolerance_fraction of the speeds at stake
  /// (or velocity_tolerance_m_s). The first sub-step of a loop step starts cold (nothing
  /// carries between loop steps): its islands may sweep up to cold_velocity_iterations times
  /// as long as that stays within cold_solve_budget contact updates per island.
  int velocity_iterations = 8;
  int cold_velocity_iterations = 128;
  std::uint32_t cold_solve_budget = 4096;
  double velocity_tolerance_m_s = 1e-7;
  double velocity_tolerance_fraction = 1e-4;
  /// Most position-projection sweeps per sub-step that remove overlap deeper than twice the
  /// slop (they stop as soon as nothing is deeper; each sweep only visits contacts next to
  /// bodies the previous sweep moved).
  int position_iterations = 150;
  /// Overlap that is left alone (keeps resting contact still): per pair the smaller of slop_m
  /// and slop_fraction of the smaller body's size. The position projection starts on overlaps
  /// deeper than twice the slop and pushes them apart to a gap of one slop.
  double slop_m = 1e-4;
  double slop_fraction = 0.002;
  /// Impacts slower than this are inelastic (resting contact does not bounce).
  double bounce_threshold_m_s = 0.01;
  /// Impacts are always resolved at their own time of impact inside a sub-step. With cuts > 0,
  /// up to this many sub-steps per loop step are also cut short to end exactly at the earliest
  /// impact (exact timing under forces too, at the cost of extra sub-steps in busy scenes).
  std::uint32_t max_toi_cuts = 0;
  BroadPhaseKind broad_phase = BroadPhaseKind::grid;
  /// Islands with joints sweep at least this many times, unless they hold nothing but joint
  /// trees (solved exactly in one sweep, docs/physics.md): with contacts, limits, motors or
  /// joints swept one by one, the tension travels one joint per sweep and too few sweeps leave
  /// an error the position correction turns into motion.
  int joint_velocity_iterations = 16;
  /// Joints: after each sub-step's integration, at most this many sweeps move the bodies back
  /// onto what the joints hold (post-stabilisation: a joint tree by its exact solve, other
  /// joints one by one); they stop once every joint is within joint_tolerance (m, and rad).
  int joint_position_iterations = 4;
  double joint_tolerance = 1e-9;
};

struct WorldModel {
  Vec3 gravity_m_s2{0, 0, -9.81};
  Water water;
  std::vector<BodyModel> bodies;
  std::vector<StaticBody> statics;
  std::vector<HeightField> heightfields;  // terrain grids, referenced by heightfield statics
  std::vector<VehicleModel> vehicles;
  std::vector<JointModel> joints;
  /// Largest physics sub-step inside one loop step; the integrator splits dt to stay below it.
  double max_substep_s = 0.002;
  /// Largest sub-step while nothing is within reach: no body can touch a surface in it, no
  /// joint, no body crossing the water's surface, and the water's forces change slowly enough
  /// for RK4 (docs/physics.md, "Sub-steps"). At or below max_substep_s: off.
  double free_substep_s = 0.01;
  ContactSettings contact;
  /// Threads step() may use, the calling one included. The state it computes is bit-identical
  /// for every count (docs/physics.md, "Threads"); worlds too small to gain stay on one.
  int threads = 1;

  /// Index of a body by fully qualified name, or -1.
  int find_body(const std::string& name) const;
  /// Index of a vehicle by name, or -1.
  int find_vehicle(const std::string& name) const;
  /// Index of a joint by name, or -1.
  int find_joint(const std::string& name) const;
};

/// Fills inv_mass, inertia (from the shape unless `inertia_override` is set) and volume.
void finish_body_model(BodyModel& body, const Mat3* inertia_override, const double* volume_override);

}  // namespace tether::runtime
