// SPDX-License-Identifier: Apache-2.0
// Shapes for the physics, collision and ray tests, made in one line.
#pragma once

#include "tether/physics/world_model.hpp"

namespace tether::runtime::test {

inline Shape sphere(double r) {
  Shape s;
  s.kind = ShapeKind::sphere;
  s.radius_m = r;
  return s;
}
/// A box by its half extents.
inline Shape half_box(double hx, double hy, double hz) {
  Shape s;
  s.kind = ShapeKind::box;
  s.half_extents_m = {hx, hy, hz};
  return s;
}
/// A capsule along x: radius and half the straight part.
inline Shape capsule(double r, double half_length) {
  Shape s;
  s.kind = ShapeKind::capsule;
  s.radius_m = r;
  s.half_length_m = half_length;
  return s;
}
/// A cylinder along x: radius and half its length.
inline Shape cylinder(double r, double half_length) {
  Shape s;
  s.kind = ShapeKind::cylinder;
  s.radius_m = r;
  s.half_length_m = half_length;
  return s;
}
/// The half-space normal·p <= offset (n is normalised).
inline Shape half_space(const Vec3& n, double offset) {
  Shape s;
  s.kind = ShapeKind::plane;
  s.normal = n.normalized();
  s.offset_m = offset;
  return s;
}

}  // namespace tether::runtime::test
