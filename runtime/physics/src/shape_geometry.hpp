// SPDX-License-Identifier: Apache-2.0
// What the narrow phase's two files share (internal to physics): collision.cpp makes contact
// points, shape_queries.cpp answers distances and bounds; both use these.
#pragma once

#include "tether/physics/collision.hpp"

namespace tether::runtime::detail {

inline constexpr double tiny = 1e-12;

inline double sign_of(double x) { return x < 0 ? -1.0 : 1.0; }

// a plane static in world terms: solid where n·x <= offset
struct WorldPlane {
  Vec3 n;
  double offset;
};

inline WorldPlane world_plane(const ShapePose& p) {
  const Vec3 n = p.rotation * p.shape->normal;
  return {n, n.dot(p.position) + p.shape->offset_m};
}

}  // namespace tether::runtime::detail
