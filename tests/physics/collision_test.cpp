// SPDX-License-Identifier: Apache-2.0
#include "tether/physics/collision.hpp"

#include <doctest/doctest.h>

#include <numbers>

#include "shape_test_util.hpp"

using namespace tether::runtime;
using namespace tether::runtime::test;

namespace {

Mat3 rot(double roll, double pitch, double yaw) { return quat_from_rpy(roll, pitch, yaw).toRotationMatrix(); }

double min_sep(const ContactPoint* p, int n) {
  double m = 1e300;
  for (int i = 0; i < n; ++i) m = std::min(m, p[i].separation_m);
  return m;
}

}  // namespace

TEST_CASE("sphere-sphere: gap, normal from b to a, midpoint") {
  const Shape a = sphere(0.5), b = sphere(0.25);
  ContactPoint p[max_contact_points];
  const int n = collide({&a, {1, 0, 0}, Mat3::Identity()}, {&b, {0, 0, 0}, Mat3::Identity()}, 1.0, p);
  REQUIRE(n == 1);
  CHECK(p[0].separation_m == doctest::Approx(0.25));
  CHECK(p[0].normal.isApprox(Vec3(1, 0, 0)));
  CHECK(p[0].point.isApprox(Vec3(0.375, 0, 0)));
  // beyond the margin: nothing
  CHECK(collide({&a, {1, 0, 0}, Mat3::Identity()}, {&b, {0, 0, 0}, Mat3::Identity()}, 0.2, p) == 0);
  // overlapping
  const int m = collide({&a, {0.6, 0, 0}, Mat3::Identity()}, {&b, {0, 0, 0}, Mat3::Identity()}, 0.0, p);
  REQUIRE(m == 1);
  CHECK(p[0].separation_m == doctest::Approx(-0.15));
}

TEST_CASE("sphere-box: face, edge, corner and inside, in either order") {
  const Shape s = sphere(0.1), b = half_box(0.5, 0.5, 0.5);
  const ShapePose pb{&b, {0, 0, 0}, rot(0, 0, 0)};
  ContactPoint p[max_contact_points];
  REQUIRE(collide({&s, {0, 0, 0.7}, Mat3::Identity()}, pb, 1, p) == 1);
  CHECK(p[0].separation_m == doctest::Approx(0.1));
  CHECK(p[0].normal.isApprox(Vec3(0, 0, 1)));
  REQUIRE(collide({&s, {0.6, 0.6, 0}, Mat3::Identity()}, pb, 1, p) == 1);
  CHECK(p[0].separation_m == doctest::Approx(std::sqrt(0.02) - 0.1));
  CHECK(p[0].normal.isApprox(Vec3(1, 1, 0).normalized()));
  REQUIRE(collide({&s, {0.6, 0.6, 0.6}, Mat3::Identity()}, pb, 1, p) == 1);
  CHECK(p[0].separation_m == doctest::Approx(std::sqrt(0.03) - 0.1));
  // centre inside, nearest face is +x
  REQUIRE(collide({&s, {0.45, 0, 0}, Mat3::Identity()}, pb, 0, p) == 1);
  CHECK(p[0].separation_m == doctest::Approx(-0.15));
  CHECK(p[0].normal.isApprox(Vec3(1, 0, 0)));
  // reversed order flips the normal
  REQUIRE(collide(pb, {&s, {0, 0, 0.7}, Mat3::Identity()}, 1, p) == 1);
  CHECK(p[0].normal.isApprox(Vec3(0, 0, -1)));
  // rotated box: 45 degrees about z puts a vertical edge toward +x at x = 0.5*sqrt(2)
  REQUIRE(collide({&s, {1.0, 0, 0}, Mat3::Identity()}, {&b, {0, 0, 0}, rot(0, 0, std::numbers::pi / 4)}, 1, p) == 1);
  CHECK(p[0].separation_m == doctest::Approx(1.0 - 0.5 * std::sqrt(2.0) - 0.1));
}

TEST_CASE("box resting on a box gives a four-point face manifold") {
  const Shape a = half_box(0.5, 0.5, 0.5), b = half_box(2, 2, 0.5);
  ContactPoint p[max_contact_points];
  const int n = collide({&a, {0.2, 0.1, 1.0 + 1e-4}, rot(0, 0, 0.3)}, {&b, {0, 0, 0}, Mat3::Identity()}, 0.01, p);
  REQUIRE(n == 4);
  for (int i = 0; i < n; ++i) {
    CHECK(p[i].separation_m == doctest::Approx(1e-4).epsilon(1e-6));
    CHECK(p[i].normal.isApprox(Vec3(0, 0, 1)));
    CHECK(p[i].point.z() == doctest::Approx(0.5 + 0.5e-4));
  }
  // small box hanging over the edge: the clipped manifold stays on the big box
  const int m = collide({&a, {1.9, 0, 0.99}, Mat3::Identity()}, {&b, {0, 0, 0}, Mat3::Identity()}, 0.05, p);
  REQUIRE(m == 4);
  for (int i = 0; i < m; ++i) {
    CHECK(p[i].point.x() <= 2.0 + 1e-9);
    CHECK(p[i].separation_m == doctest::Approx(-0.01));
  }
  // separated by more than the margin
  CHECK(collide({&a, {0, 0, 1.2}, Mat3::Identity()}, {&b, {0, 0, 0}, Mat3::Identity()}, 0.1, p) == 0);
}

TEST_CASE("box-box edge against edge") {
  const Shape a = half_box(0.5, 0.5, 0.5);
  ContactPoint p[max_contact_points];
  // a turned 45 deg about x (edge pointing down along x), b turned 45 deg about y (edge up along y)
  const double e = 0.5 * std::sqrt(2.0);
  const int n = collide({&a, {0, 0, 2 * e + 0.01}, rot(std::numbers::pi / 4, 0, 0)},
                        {&a, {0, 0, 0}, rot(0, std::numbers::pi / 4, 0)}, 0.1, p);
  REQUIRE(n == 1);
  CHECK(p[0].separation_m == doctest::Approx(0.01));
  CHECK(p[0].normal.isApprox(Vec3(0, 0, 1), 1e-9));
  CHECK(p[0].point.isApprox(Vec3(0, 0, e + 0.005), 1e-9));
}

TEST_CASE("planes: box corners, capsule ends, cylinder rims") {
  const Shape pl = half_space({0, 0, 1}, 0);
  const ShapePose pp{&pl, {0, 0, 0}, Mat3::Identity()};
  ContactPoint p[max_contact_points];
  const Shape b = half_box(0.5, 0.3, 0.2);
  REQUIRE(collide({&b, {0, 0, 0.2}, Mat3::Identity()}, pp, 0.01, p) == 4);
  CHECK(min_sep(p, 4) == doctest::Approx(0).scale(1));
  // tilted box: one corner lowest
  const Mat3 r = rot(0.3, 0.2, 0);
  const ShapePose tilted{&b, {0, 0, 0.3}, r};
  const int n = collide(tilted, pp, 0.0, p);
  REQUIRE(n >= 1);
  double lowest = 1e9;
  for (int i = 0; i < 8; ++i) {
    const Vec3 c((i & 1) ? 0.5 : -0.5, (i & 2) ? 0.3 : -0.3, (i & 4) ? 0.2 : -0.2);
    lowest = std::min(lowest, (Vec3(0, 0, 0.3) + r * c).z());
  }
  CHECK(min_sep(p, n) == doctest::Approx(lowest));
  // capsule lying flat: two points at the ends of the segment
  const Shape c = capsule(0.1, 0.5);
  REQUIRE(collide({&c, {0, 0, 0.1}, Mat3::Identity()}, pp, 0.01, p) == 2);
  CHECK(std::abs(p[0].point.x()) == doctest::Approx(0.5));
  CHECK(p[0].separation_m == doctest::Approx(0).scale(1));
  // a plane offset and turned by its static pose: the floor of a tank at z = -2
  const ShapePose lowered{&pl, {0, 0, -2}, Mat3::Identity()};
  REQUIRE(collide({&c, {0, 0, -1.85}, Mat3::Identity()}, lowered, 0.1, p) == 2);
  CHECK(p[0].separation_m == doctest::Approx(0.05));
  // cylinder on its side: one rim point per end; standing: four on the bottom disc
  const Shape cy = cylinder(0.2, 0.4);
  REQUIRE(collide({&cy, {0, 0, 0.2}, Mat3::Identity()}, pp, 0.001, p) == 2);
  CHECK(p[0].separation_m == doctest::Approx(0).scale(1));
  REQUIRE(collide({&cy, {0, 0, 0.4}, rot(0, -std::numbers::pi / 2, 0)}, pp, 0.001, p) == 4);
  for (int i = 0; i < 4; ++i) CHECK(p[i].separation_m == doctest::Approx(0).scale(1));
  // tilted cylinder touching with its rim: the exact lowest rim point
  const Mat3 rc = rot(0, -0.5, 0);
  const ShapePose tc{&cy, {0, 0, 1}, rc};
  const int k = collide(tc, pp, 2.0, p);
  REQUIRE(k >= 1);
  const Vec3 u = rc.col(0);
  const double lowest_rim = 1 - 0.4 * std::abs(u.z()) - 0.2 * std::sqrt(1 - u.z() * u.z());
  CHECK(min_sep(p, k) == doctest::Approx(lowest_rim));
}

TEST_CASE("capsule-capsule: crossing and parallel") {
  const Shape c = capsule(0.1, 0.5);
  ContactPoint p[max_contact_points];
  // crossing at right angles, 0.3 apart along z
  int n = collide({&c, {0, 0, 0.3}, rot(0, 0, std::numbers::pi / 2)}, {&c, {0, 0, 0}, Mat3::Identity()}, 0.2, p);
  REQUIRE(n == 1);
  CHECK(p[0].separation_m == doctest::Approx(0.1));
  CHECK(p[0].normal.isApprox(Vec3(0, 0, 1)));
  // parallel, offset along x: the line contact is supported at both ends of the overlap
  n = collide({&c, {0.4, 0, 0.2}, Mat3::Identity()}, {&c, {0, 0, 0}, Mat3::Identity()}, 0.01, p);
  REQUIRE(n == 2);
  double xmin = 1e9, xmax = -1e9;
  for (int i = 0; i < n; ++i) {
    CHECK(p[i].separation_m == doctest::Approx(0).scale(1));
    xmin = std::min(xmin, p[i].point.x());
    xmax = std::max(xmax, p[i].point.x());
  }
  CHECK(xmin == doctest::Approx(-0.1));
  CHECK(xmax == doctest::Approx(0.5));
}

TEST_CASE("sphere against cylinder and capsule sides and caps") {
  const Shape s = sphere(0.1), cy = cylinder(0.2, 0.4), ca = capsule(0.2, 0.4);
  ContactPoint p[max_contact_points];
  const ShapePose pc{&cy, {0, 0, 0}, Mat3::Identity()};
  REQUIRE(collide({&s, {0, 0, 0.35}, Mat3::Identity()}, pc, 1, p) == 1);  // side
  CHECK(p[0].separation_m == doctest::Approx(0.05));
  REQUIRE(collide({&s, {0.55, 0, 0}, Mat3::Identity()}, pc, 1, p) == 1);  // cap
  CHECK(p[0].separation_m == doctest::Approx(0.05));
  CHECK(p[0].normal.isApprox(Vec3(1, 0, 0)));
  REQUIRE(collide({&s, {0.5, 0, 0.3}, Mat3::Identity()}, pc, 1, p) == 1);  // rim
  CHECK(p[0].separation_m == doctest::Approx(std::sqrt(0.01 + 0.01) - 0.1));
  REQUIRE(collide({&s, {0.7, 0, 0}, Mat3::Identity()}, {&ca, {0, 0, 0}, Mat3::Identity()}, 1, p) == 1);
  CHECK(p[0].separation_m == doctest::Approx(0.0).scale(1));
}

TEST_CASE("GJK core distance matches closed forms") {
  const Shape b = half_box(0.5, 0.5, 0.5), c = capsule(0.1, 0.5), cy = cylinder(0.2, 0.5);
  double ma = 0, mb = 0;
  // capsule core (segment) above a box face
  ConvexDistance d =
      convex_core_distance({&c, {0, 0, 1.0}, Mat3::Identity()}, {&b, {0, 0, 0}, Mat3::Identity()}, ma, mb);
  REQUIRE_FALSE(d.overlapping);
  CHECK(d.distance_m == doctest::Approx(0.5));
  CHECK(ma == doctest::Approx(0.1));
  CHECK(mb == doctest::Approx(0));
  // cylinder beside a box edge, turned 45 degrees: closest to the box's vertical edge
  d = convex_core_distance({&cy, {1.2, 0.0, 0}, rot(0, std::numbers::pi / 2, 0)},
                           {&b, {0, 0, 0}, rot(0, 0, std::numbers::pi / 4)}, ma, mb);
  REQUIRE_FALSE(d.overlapping);
  CHECK(d.distance_m - ma - mb == doctest::Approx(1.2 - 0.5 * std::sqrt(2.0) - 0.2).epsilon(1e-6));
  // through contact points: cylinder lying on a box gives the exact gap and a manifold
  ContactPoint p[max_contact_points];
  const int n = collide({&cy, {0, 0, 0.71}, Mat3::Identity()}, {&b, {0, 0, 0}, Mat3::Identity()}, 0.05, p);
  REQUIRE(n >= 2);
  CHECK(min_sep(p, n) == doctest::Approx(0.01).epsilon(1e-6));
  for (int i = 0; i < n; ++i) CHECK(p[i].normal.z() == doctest::Approx(1.0).epsilon(1e-6));
  // overlapping cores fall back to the least-overlap axis
  const int m = collide({&cy, {0, 0, 0.5}, Mat3::Identity()}, {&b, {0, 0, 0}, Mat3::Identity()}, 0.0, p);
  REQUIRE(m >= 1);
  CHECK(min_sep(p, m) == doctest::Approx(-0.2).epsilon(1e-6));
}

TEST_CASE("bounding boxes of turned shapes") {
  const Shape b = half_box(1, 0.5, 0.25);
  Aabb a = shape_aabb({&b, {1, 2, 3}, rot(0, 0, std::numbers::pi / 2)});
  CHECK(a.min.isApprox(Vec3(0.5, 1, 2.75)));
  CHECK(a.max.isApprox(Vec3(1.5, 3, 3.25)));
  const Shape c = cylinder(0.2, 1.0);
  a = shape_aabb({&c, {0, 0, 0}, Mat3::Identity()});
  CHECK(a.max.isApprox(Vec3(1.0, 0.2, 0.2)));
  CHECK(shape_size(b) == doctest::Approx(0.25));
  CHECK(shape_bounding_radius(c) == doctest::Approx(std::hypot(1.0, 0.2)));
}
