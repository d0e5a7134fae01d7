// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <numbers>

#include "tether/physics/world_model.hpp"

using namespace tether::runtime;

TEST_CASE("mass properties of the basic shapes") {
  const double pi = std::numbers::pi;
  Shape s;
  s.kind = ShapeKind::sphere;
  s.radius_m = 0.5;
  CHECK(shape_volume(s) == doctest::Approx(4.0 / 3.0 * pi * 0.125));
  CHECK(shape_inertia(s, 10)(0, 0) == doctest::Approx(0.4 * 10 * 0.25));

  s.kind = ShapeKind::box;
  s.half_extents_m = Vec3(0.5, 1.0, 1.5);  // 1 x 2 x 3 m
  CHECK(shape_volume(s) == doctest::Approx(6.0));
  const Mat3 ib = shape_inertia(s, 12);
  CHECK(ib(0, 0) == doctest::Approx(12.0 / 12.0 * (4 + 9)));
  CHECK(ib(1, 1) == doctest::Approx(12.0 / 12.0 * (1 + 9)));
  CHECK(ib(2, 2) == doctest::Approx(12.0 / 12.0 * (1 + 4)));

  s.kind = ShapeKind::cylinder;
  s.radius_m = 0.1;
  s.half_length_m = 0.6;
  CHECK(shape_volume(s) == doctest::Approx(pi * 0.01 * 1.2));
  const Mat3 ic = shape_inertia(s, 30);
  CHECK(ic(0, 0) == doctest::Approx(0.5 * 30 * 0.01));
  CHECK(ic(1, 1) == doctest::Approx(30.0 / 12.0 * (3 * 0.01 + 1.44)));

  SUBCASE("a capsule is between its cylinder and the cylinder with the caps' length") {
    s.kind = ShapeKind::capsule;
    const double vol = shape_volume(s);
    CHECK(vol == doctest::Approx(pi * 0.01 * 1.2 + 4.0 / 3.0 * pi * 0.001));
    const Mat3 ik = shape_inertia(s, 30);
    Shape longer = s;
    longer.kind = ShapeKind::cylinder;
    longer.half_length_m = 0.7;
    CHECK(ik(1, 1) < shape_inertia(longer, 30)(1, 1));
    CHECK(ik(1, 1) > shape_inertia(s, 30)(0, 0));
  }
}

TEST_CASE("submerged fraction") {
  Shape s;
  s.kind = ShapeKind::sphere;
  s.radius_m = 1;
  CHECK(submerged_fraction(s, Quat::Identity(), -5, 0) == 1.0);
  CHECK(submerged_fraction(s, Quat::Identity(), 5, 0) == 0.0);
  CHECK(submerged_fraction(s, Quat::Identity(), 0, 0) == doctest::Approx(0.5));
  s.kind = ShapeKind::box;
  s.half_extents_m = Vec3(1, 1, 0.5);
  CHECK(submerged_fraction(s, Quat::Identity(), 0.25, 0) == doctest::Approx(0.25));
  // tilted 90° about x: the box's y extent (1) is now vertical
  CHECK(shape_vertical_half_extent(s, quat_from_rpy(std::numbers::pi / 2, 0, 0)) == doctest::Approx(1.0));
}
