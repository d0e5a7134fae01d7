// SPDX-License-Identifier: Apache-2.0
// Narrow phase: contact points between two placed shapes, bounds, and the per-shape numbers
// the sub-step rule needs. Pure functions; no allocation. See docs/physics.md for which pairs
// are exact and which are approximated.
#pragma once

#include <cstdint>
#include <limits>

#include "tether/physics/math.hpp"
#include "tether/physics/world_model.hpp"

namespace tether::runtime {

/// Axis-aligned box in world coordinates.
struct Aabb {
  Vec3 min{0, 0, 0};
  Vec3 max{0, 0, 0};

  bool overlaps(const Aabb& o) const {
    return min.x() <= o.max.x() && o.min.x() <= max.x() && min.y() <= o.max.y() && o.min.y() <= max.y() &&
           min.z() <= o.max.z() && o.min.z() <= max.z();
  }
  void inflate(double by_m) {
    min.array() -= by_m;
    max.array() += by_m;
  }
  static Aabb infinite() {
    const double inf = std::numeric_limits<double>::infinity();
    return {Vec3(-inf, -inf, -inf), Vec3(inf, inf, inf)};
  }
};

/// A shape placed in the world: `rotation` turns shape-frame vectors into world vectors.
struct ShapePose {
  const Shape* shape = nullptr;
  Vec3 position{0, 0, 0};
  Mat3 rotation = Mat3::Identity();
};

/// One contact point. `normal` is a unit vector pointing from shape b toward shape a (the
/// direction that pushes a away from b); `separation_m` is the gap along it (negative when
/// the shapes overlap); `point` lies halfway between the two surfaces.
struct ContactPoint {
  Vec3 point{0, 0, 0};
  Vec3 normal{0, 0, 1};
  double separation_m = 0;
};

/// Most points one call returns (a box face on a box face gives 4; terrain up to this many).
constexpr int max_contact_points = 8;

/// World bounding box of a placed shape (planes: infinite; heightfields need the model, see
/// heightfield_aabb in terrain.hpp).
Aabb shape_aabb(const ShapePose& pose);
/// Radius of the smallest sphere about the shape origin that holds the shape (0 for a plane).
double shape_bounding_radius(const Shape& shape);
/// The length the sub-step rule compares motion with: a sphere's, capsule's or cylinder's
/// radius (a cylinder's half length if smaller), a box's smallest half extent.
double shape_size(const Shape& shape);

/// Contacts of two convex shapes (sphere, box, cylinder, capsule, plane) whose gap is below
/// `margin_m` (gaps between 0 and margin are speculative contacts). Writes at most
/// max_contact_points into `out` and returns how many. Plane–plane gives none.
int collide(const ShapePose& a, const ShapePose& b, double margin_m, ContactPoint* out);

/// Signed distance from a world point to a convex shape (negative inside); `normal` gets the
/// outward surface normal at the closest surface point `surface`. Planes included.
double point_distance(const ShapePose& s, const Vec3& point, Vec3& normal, Vec3& surface);

/// Result of the generic convex distance query (GJK) between two shapes' cores.
struct ConvexDistance {
  bool overlapping = false;  // the cores intersect: distance and witnesses are not meaningful
  double distance_m = 0;
  Vec3 point_a{0, 0, 0};  // closest point on a's core
  Vec3 point_b{0, 0, 0};  // closest point on b's core
};

/// Shortest distance between two convex shapes shrunk by their margins (GJK on the cores);
/// exposed for tests. `margin_a`/`margin_b` receive the radius each shape was shrunk by.
ConvexDistance convex_core_distance(const ShapePose& a, const ShapePose& b, double& margin_a, double& margin_b);

}  // namespace tether::runtime
