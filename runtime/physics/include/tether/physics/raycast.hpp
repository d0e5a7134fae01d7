// SPDX-License-Identifier: Apache-2.0
// Ray casts against bodies, static geometry and terrain: range finders, sonar beams,
// altimeters. One-off rays go through raycast(); a sensor that casts many rays per step builds
// a RayScene once per step (a bounding-volume tree) and casts against it.
#pragma once

#include <cstdint>
#include <vector>

#include "tether/physics/collision.hpp"
#include "tether/physics/world_model.hpp"
#include "tether/physics/world_state.hpp"

namespace tether::runtime {

/// The nearest surface a ray meets. A ray that starts inside a solid hits it at distance 0
/// with the normal facing back along the ray.
struct RayHit {
  bool hit = false;
  double distance_m = 0;
  Vec3 point_m{0, 0, 0};
  Vec3 normal{0, 0, 1};   // unit, world frame, facing the ray
  int body = -1;          // index into WorldModel::bodies, or -1
  int static_index = -1;  // index into WorldModel::statics, or -1
};

/// Distance along a unit direction at which a ray meets one placed convex shape or plane
/// (false if not within max_range_m); `normal` gets the surface normal there.
bool raycast_shape(const ShapePose& shape, const Vec3& origin, const Vec3& unit_direction, double max_range_m,
                   double& distance_m, Vec3& normal);

/// Same for a heightfield placed at (position, rotation): the first triangle the ray meets.
bool raycast_heightfield(const HeightField& field, const Vec3& position, const Mat3& rotation, const Vec3& origin,
                         const Vec3& unit_direction, double max_range_m, double& distance_m, Vec3& normal);

/// Nearest hit within max_range_m along `direction` (any length > 0) from `origin`, skipping
/// body `ignore_body` (the sensor's own hull). Tests every body (a bounding-sphere check
/// first) and every static: fine for a few rays; use RayScene for many.
RayHit raycast(const WorldModel& model, const WorldState& state, const Vec3& origin, const Vec3& direction,
               double max_range_m, int ignore_body = -1);

/// A bounding-volume tree over one state's bodies and bounded statics, for many rays against
/// the same state. build() keeps its buffers, so rebuilding each step does not allocate once
/// the body count is steady. Results equal raycast()'s.
class RayScene {
 public:
  /// Builds the tree for `state`; the model and state must outlive the casts.
  void build(const WorldModel& model, const WorldState& state);
  /// Same contract as raycast().
  RayHit cast(const Vec3& origin, const Vec3& direction, double max_range_m, int ignore_body = -1) const;

 private:
  struct Node {
    Aabb box;
    std::int32_t left = -1;  // inner node: its two children
    std::int32_t right = -1;
    std::int32_t first = 0;  // leaf: perm_[first, first + count)
    std::int32_t count = 0;
  };
  std::int32_t build_node(std::int32_t first, std::int32_t count);

  const WorldModel* model_ = nullptr;
  const WorldState* state_ = nullptr;
  std::vector<Node> nodes_;
  std::vector<std::int32_t> items_;  // body i, or bodies.size() + static index
  std::vector<std::int32_t> perm_;   // item order; nodes hold ranges of it
  std::vector<Aabb> item_boxes_;
  std::vector<Vec3> centres_;
  std::vector<Mat3> rotations_;          // per body, then per static
  std::vector<std::int32_t> unbounded_;  // planes and heightfields
};

}  // namespace tether::runtime
