// SPDX-License-Identifier: Apache-2.0
#include "tether/physics/raycast.hpp"

#include <doctest/doctest.h>

#include <numbers>
#include <random>

#include "tether/physics/terrain.hpp"

using namespace tether::runtime;

namespace {

Shape make(ShapeKind kind, double r = 0.5, double hl = 1.0, Vec3 he = Vec3(0.5, 0.5, 0.5)) {
  Shape s;
  s.kind = kind;
  s.radius_m = r;
  s.half_length_m = hl;
  s.half_extents_m = he;
  return s;
}

}  // namespace

TEST_CASE("rays against each shape, analytically") {
  double t;
  Vec3 n;
  const Vec3 x(1, 0, 0);
  // sphere of radius 0.5 at (3, 0, 0), ray along x from the origin; and a grazing miss
  const Shape s = make(ShapeKind::sphere);
  REQUIRE(raycast_shape({&s, {3, 0, 0}, Mat3::Identity()}, Vec3::Zero(), x, 10, t, n));
  CHECK(t == doctest::Approx(2.5));
  CHECK(n.isApprox(-x));
  REQUIRE(raycast_shape({&s, {3, 0.3, 0}, Mat3::Identity()}, Vec3::Zero(), x, 10, t, n));
  CHECK(t == doctest::Approx(3 - std::sqrt(0.25 - 0.09)));
  CHECK_FALSE(raycast_shape({&s, {3, 0.51, 0}, Mat3::Identity()}, Vec3::Zero(), x, 10, t, n));
  CHECK_FALSE(raycast_shape({&s, {3, 0, 0}, Mat3::Identity()}, Vec3::Zero(), x, 2.4, t, n));
  CHECK_FALSE(raycast_shape({&s, {-3, 0, 0}, Mat3::Identity()}, Vec3::Zero(), x, 10, t, n));  // behind
  REQUIRE(raycast_shape({&s, {0.2, 0, 0}, Mat3::Identity()}, Vec3::Zero(), x, 10, t, n));     // inside
  CHECK(t == 0);
  // box turned 45 degrees about z: its edge toward the ray at 3 - 0.5 sqrt(2)
  const Shape b = make(ShapeKind::box);
  const Mat3 yaw45 = quat_from_rpy(0, 0, std::numbers::pi / 4).toRotationMatrix();
  REQUIRE(raycast_shape({&b, {3, 0, 0}, yaw45}, Vec3::Zero(), x, 10, t, n));
  CHECK(t == doctest::Approx(3 - 0.5 * std::sqrt(2.0)));
  REQUIRE(raycast_shape({&b, {3, 0, 0}, Mat3::Identity()}, Vec3(3, 0, 5), Vec3(0, 0, -1), 10, t, n));
  CHECK(t == doctest::Approx(4.5));
  CHECK(n.isApprox(Vec3(0, 0, 1)));
  // capsule along x (radius 0.5, straight part 2 m): end cap, then the side
  const Shape c = make(ShapeKind::capsule);
  REQUIRE(raycast_shape({&c, {5, 0, 0}, Mat3::Identity()}, Vec3::Zero(), x, 10, t, n));
  CHECK(t == doctest::Approx(5 - 1 - 0.5));
  REQUIRE(raycast_shape({&c, {5, 0, 0}, Mat3::Identity()}, Vec3(5.7, 0, 3), Vec3(0, 0, -1), 10, t, n));
  CHECK(t == doctest::Approx(2.5));
  CHECK(n.isApprox(Vec3(0, 0, 1)));
  // cylinder: flat end, then the side, then past the rim
  const Shape y = make(ShapeKind::cylinder);
  REQUIRE(raycast_shape({&y, {5, 0, 0}, Mat3::Identity()}, Vec3(0, 0.3, 0), x, 10, t, n));
  CHECK(t == doctest::Approx(4.0));
  CHECK(n.isApprox(-x));
  REQUIRE(raycast_shape({&y, {5, 0, 0}, Mat3::Identity()}, Vec3(5.9, 0, 3), Vec3(0, 0, -1), 10, t, n));
  CHECK(t == doctest::Approx(2.5));
  CHECK_FALSE(raycast_shape({&y, {5, 0, 0}, Mat3::Identity()}, Vec3(6.1, 0, 3), Vec3(0, 0, -1), 10, t, n));
  // a cylinder standing upright (axis turned to z), ray down its axis
  const Mat3 up = quat_from_rpy(0, -std::numbers::pi / 2, 0).toRotationMatrix();
  REQUIRE(raycast_shape({&y, {0, 0, 0}, up}, Vec3(0, 0, 4), Vec3(0, 0, -1), 10, t, n));
  CHECK(t == doctest::Approx(3.0));
  CHECK(n.isApprox(Vec3(0, 0, 1)));
  // plane z <= -2 placed by a static pose, seen from above, and from inside
  Shape p;
  p.kind = ShapeKind::plane;
  REQUIRE(raycast_shape({&p, {0, 0, -2}, Mat3::Identity()}, Vec3(0, 0, 1), Vec3(0, 0.6, -0.8), 10, t, n));
  CHECK(t == doctest::Approx(3.0 / 0.8));
  CHECK(n.isApprox(Vec3(0, 0, 1)));
  CHECK_FALSE(raycast_shape({&p, {0, 0, -2}, Mat3::Identity()}, Vec3(0, 0, 1), x, 10, t, n));
  REQUIRE(raycast_shape({&p, {0, 0, -2}, Mat3::Identity()}, Vec3(0, 0, -3), x, 10, t, n));
  CHECK(t == 0);
}

TEST_CASE("rays against terrain: straight down reads the height, slanted rays hit the slope") {
  const HeightField f = make_heightfield({{0, 0.5, 1, 1.5}, {0, 0.5, 1, 1.5}, {0, 0.5, 1, 1.5}}, 1.0);
  const Vec3 at(10, 0, -5);
  double t;
  Vec3 n;
  REQUIRE(raycast_heightfield(f, at, Mat3::Identity(), Vec3(11.3, 1.2, 0), Vec3(0, 0, -1), 100, t, n));
  CHECK(t == doctest::Approx(5 - 0.65));
  CHECK(n.isApprox(Vec3(-0.5, 0, 1).normalized()));
  // horizontal ray at z = -4 running up the slope hits where 0.5 x = 1: x = 2
  REQUIRE(raycast_heightfield(f, at, Mat3::Identity(), Vec3(5, 1.5, -4), Vec3(1, 0, 0), 100, t, n));
  CHECK(t == doctest::Approx(7.0));
  // diagonal across cells
  const Vec3 d = Vec3(1, 0.3, -0.2).normalized();
  REQUIRE(raycast_heightfield(f, at, Mat3::Identity(), Vec3(10.1, 0.1, -3.2), d, 100, t, n));
  const Vec3 hit = Vec3(10.1, 0.1, -3.2) + t * d - at;
  double z;
  REQUIRE(heightfield_height(f, hit.x(), hit.y(), z));
  CHECK(hit.z() == doctest::Approx(z).epsilon(1e-9));
  // misses: outside the grid, range too short, pointing up
  CHECK_FALSE(raycast_heightfield(f, at, Mat3::Identity(), Vec3(20, 1, 0), Vec3(0, 0, -1), 100, t, n));
  CHECK_FALSE(raycast_heightfield(f, at, Mat3::Identity(), Vec3(11, 1, 0), Vec3(0, 0, -1), 4, t, n));
  CHECK_FALSE(raycast_heightfield(f, at, Mat3::Identity(), Vec3(11, 1, 0), Vec3(0, 0, 1), 100, t, n));
  // from below the ground
  REQUIRE(raycast_heightfield(f, at, Mat3::Identity(), Vec3(12, 1, -4.5), Vec3(0, 0, 1), 100, t, n));
  CHECK(t == 0);
}

TEST_CASE("raycast in a world: nearest hit, the sensor's own body ignored, statics named") {
  WorldModel model;
  WorldState state;
  auto add = [&](const Shape& shape, const Vec3& pos) {
    BodyModel b;
    b.shape = shape;
    finish_body_model(b, nullptr, nullptr);
    model.bodies.push_back(b);
    BodyState s;
    s.position_m = pos;
    state.bodies.push_back(s);
  };
  add(make(ShapeKind::sphere, 0.2), {0, 0, 0});  // the vehicle carrying the sensor
  add(make(ShapeKind::box), {5, 0, 0});
  add(make(ShapeKind::sphere, 0.5), {3, 0, 0});
  StaticBody floor;
  floor.shape.kind = ShapeKind::plane;
  floor.position_m = {0, 0, -1};
  model.statics.push_back(floor);
  RayHit h = raycast(model, state, Vec3::Zero(), Vec3(2, 0, 0), 20, 0);
  REQUIRE(h.hit);
  CHECK(h.body == 2);
  CHECK(h.static_index == -1);
  CHECK(h.distance_m == doctest::Approx(2.5));
  CHECK(h.point_m.isApprox(Vec3(2.5, 0, 0)));
  // without ignoring the carrier, the ray starts inside it
  h = raycast(model, state, Vec3::Zero(), Vec3(1, 0, 0), 20);
  CHECK(h.body == 0);
  CHECK(h.distance_m == 0);
  h = raycast(model, state, Vec3(0, 0, 0.5), Vec3(0, 0, -1), 20, 0);
  CHECK(h.body == -1);
  CHECK(h.static_index == 0);
  CHECK(h.distance_m == doctest::Approx(1.5));
  CHECK_FALSE(raycast(model, state, Vec3::Zero(), Vec3(0, 1, 0), 20, 0).hit);
  CHECK_FALSE(raycast(model, state, Vec3::Zero(), Vec3(1, 0, 0), 2.4, 0).hit);
}

TEST_CASE("RayScene agrees with raycast on thousands of random rays") {
  WorldModel model;
  WorldState state;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(-1, 1);
  const ShapeKind kinds[4] = {ShapeKind::sphere, ShapeKind::box, ShapeKind::capsule, ShapeKind::cylinder};
  for (int i = 0; i < 300; ++i) {
    BodyModel b;
    b.shape = make(kinds[i % 4], 0.1 + 0.05 * (u(rng) + 1), 0.2, Vec3(0.1, 0.2, 0.15));
    finish_body_model(b, nullptr, nullptr);
    model.bodies.push_back(b);
    BodyState s;
    s.position_m = Vec3(u(rng), u(rng), u(rng)) * 5;
    s.orientation = quat_from_rpy(u(rng) * 3, u(rng) * 3, u(rng) * 3);
    state.bodies.push_back(s);
  }
  StaticBody floor;
  floor.shape.kind = ShapeKind::plane;
  floor.position_m = {0, 0, -6};
  model.statics.push_back(floor);
  StaticBody pipe;
  pipe.shape = make(ShapeKind::cylinder, 0.3, 4.0);
  pipe.position_m = {0, 2, -2};
  model.statics.push_back(pipe);
  model.heightfields.push_back(make_heightfield({{0, 1, 0, 1}, {1, 0, 1, 0}, {0, 1, 0, 1}}, 2.0));
  StaticBody ground;
  ground.shape.kind = ShapeKind::heightfield;
  ground.shape.heightfield = 0;
  ground.position_m = {-3, -2, -5.5};
  model.statics.push_back(ground);
  RayScene scene;
  scene.build(model, state);
  int hits = 0;
  for (int k = 0; k < 3000; ++k) {
    const Vec3 o = Vec3(u(rng), u(rng), u(rng)) * 7;
    const Vec3 d(u(rng), u(rng), u(rng));
    const int ignore = k % 5 == 0 ? k % 300 : -1;
    const RayHit a = raycast(model, state, o, d, 15, ignore);
    const RayHit b = scene.cast(o, d, 15, ignore);
    REQUIRE(a.hit == b.hit);
    if (!a.hit) continue;
    ++hits;
    CHECK(a.body == b.body);
    CHECK(a.static_index == b.static_index);
    CHECK(a.distance_m == b.distance_m);
  }
  CHECK(hits > 1000);
  // rebuilding for a moved state does not allocate once warm (same counts) - exercised here
  state.bodies[0].position_m.x() += 1;
  scene.build(model, state);
  CHECK(scene.cast(state.bodies[0].position_m + Vec3(0, 0, 3), Vec3(0, 0, -1), 10).body == 0);
}
