// SPDX-License-Identifier: Apache-2.0
#include "tether/physics/terrain.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numbers>

#include "tether/physics/physics.hpp"

using namespace tether::runtime;

namespace {

// z = 0.5 x on a 5 x 3 grid of 1 m cells, with a bump at (2, 1)
HeightField ramp() {
  std::vector<std::vector<double>> rows;
  for (int j = 0; j < 3; ++j) {
    std::vector<double> row;
    for (int i = 0; i < 5; ++i) row.push_back(0.5 * i + (i == 2 && j == 1 ? 1.0 : 0.0));
    rows.push_back(row);
  }
  return make_heightfield(rows, 1.0, 1.0, "ramp");
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("tether_terrain_test_" + name)).string();
}

}  // namespace

TEST_CASE("terrain height: at vertices, inside both triangles, outside the grid") {
  const HeightField f = ramp();
  CHECK(f.min_height_m == 0);
  CHECK(f.max_height_m == doctest::Approx(2.0));
  double z;
  Vec3 n;
  REQUIRE(heightfield_height(f, 0, 0, z, &n));
  CHECK(z == 0);
  REQUIRE(heightfield_height(f, 4, 2, z));
  CHECK(z == doctest::Approx(2.0));
  // plain ramp part: z = 0.5 x whatever the triangle, normal (-0.5, 0, 1)/|.|
  REQUIRE(heightfield_height(f, 0.7, 0.2, z, &n));
  CHECK(z == doctest::Approx(0.35));
  CHECK(n.isApprox(Vec3(-0.5, 0, 1).normalized()));
  REQUIRE(heightfield_height(f, 0.2, 0.7, z, &n));
  CHECK(z == doctest::Approx(0.1));
  // next to the bump: cell (1,0) lower triangle (fx >= fy) rises to it at (2,1)
  REQUIRE(heightfield_height(f, 1.75, 0.25, z));
  // h00=0.5, h10=1.0, h11=2.0: z = 0.5 + 0.75*0.5 + 0.25*1.0
  CHECK(z == doctest::Approx(1.125));
  CHECK_FALSE(heightfield_height(f, -0.1, 1, z));
  CHECK_FALSE(heightfield_height(f, 1, 2.01, z));
}

TEST_CASE("terrain from PGM: P2 and P5, 8 and 16 bit, comments, PNG refused") {
  const std::string p2 = "P2\n# a comment\n3 2\n# another\n100\n0 50 100\n100 100 100\n";
  const HeightField a = heightfield_from_pgm(p2, 0.5, 2.0, -1.0);
  CHECK(a.columns == 3);
  CHECK(a.rows == 2);
  // image row 0 is the top (largest y): grid row 1
  CHECK(a.height(1, 1) == doctest::Approx(-1.0 + 1.0));
  CHECK(a.height(0, 1) == doctest::Approx(-1.0));
  CHECK(a.height(0, 0) == doctest::Approx(1.0));
  std::string p5 = "P5 2 2 255\n";
  p5 += std::string("\x00\xff\x80\x40", 4);
  const HeightField b = heightfield_from_pgm(p5, 1.0, 255.0);
  CHECK(b.height(0, 1) == 0);
  CHECK(b.height(1, 1) == 255);
  CHECK(b.height(0, 0) == 128);
  std::string p16 = "P5\n2 2\n65535\n";
  p16 += std::string("\x00\x00\xff\xff\x80\x00\x00\x01", 8);
  const HeightField c = heightfield_from_pgm(p16, 1.0, 65535.0);
  CHECK(c.height(1, 1) == 65535);
  CHECK(c.height(0, 0) == 32768);
  CHECK(c.height(1, 0) == 1);
  CHECK_THROWS_WITH_AS(heightfield_from_pgm("\x89PNG\r\n", 1, 1), doctest::Contains("PNG is not supported"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(heightfield_from_pgm("P5 4 4 255\nxx", 1, 1), doctest::Contains("shorter"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(heightfield_from_pgm("P2 2 2 10\n1 2 3 11\n", 1, 1), doctest::Contains("above the maximum"),
                       std::invalid_argument);
  // a 20-byte header asking for 65536 x 65536 pixels (32 GB of heights): refused before allocating
  CHECK_THROWS_WITH_AS(heightfield_from_pgm("P5 65536 65536 255\nxx", 1, 1),
                       doctest::Contains("larger than 16,777,216 pixels"), std::invalid_argument);
  CHECK_THROWS_AS(make_heightfield({{1, 2}, {3}}, 1.0), std::invalid_argument);
  CHECK_THROWS_AS(make_heightfield({{1, 2}}, 1.0), std::invalid_argument);
  // from a file
  const std::string path = temp_path("map.pgm");
  std::ofstream(path, std::ios::binary) << p2;
  const HeightField d = load_pgm_heightfield(path, 0.5, 2.0, -1.0);
  CHECK(d.name == "tether_terrain_test_map");
  CHECK(d.heights_m == a.heights_m);
  std::filesystem::remove(path);
  CHECK_THROWS_WITH_AS(load_pgm_heightfield(path, 1, 1), doctest::Contains("cannot open"), std::invalid_argument);
}

TEST_CASE("terrain placed in the world: height lookup, bounds") {
  WorldModel model;
  model.heightfields.push_back(ramp());
  StaticBody t;
  t.shape.kind = ShapeKind::heightfield;
  t.shape.heightfield = 0;
  t.position_m = {10, 20, -5};
  t.orientation = quat_from_rpy(0, 0, std::numbers::pi / 2);  // grid x along world y
  model.statics.push_back(t);
  double z;
  Vec3 n;
  // world (9, 22): grid (2, 1), the bump top: 2.0 - 5
  REQUIRE(terrain_height(model, 0, 9, 22, z, &n));
  CHECK(z == doctest::Approx(-3.0));
  // world (10, 20.7): grid (0.7, 0): ramp
  REQUIRE(terrain_height(model, 0, 10, 20.7, z, &n));
  CHECK(z == doctest::Approx(-5 + 0.35));
  CHECK(n.isApprox(Vec3(0, -0.5, 1).normalized()));
  CHECK_FALSE(terrain_height(model, 0, 0, 0, z));
  CHECK_FALSE(terrain_height(model, 1, 9, 22, z));
  const Aabb box = heightfield_aabb(model.heightfields[0], t.position_m, t.orientation.toRotationMatrix());
  CHECK(box.min.isApprox(Vec3(8, 20, -5)));
  CHECK(box.max.isApprox(Vec3(10, 24, -3)));
}

TEST_CASE("contacts with terrain: spheres exact, boxes by corners and grid vertices") {
  const HeightField f = ramp();
  const Vec3 at(0, 0, 0);
  ContactPoint p[max_contact_points];
  Shape s;
  s.kind = ShapeKind::sphere;
  s.radius_m = 0.2;
  // over the ramp at x = 0.5: the closest point lies along the slope normal
  const Vec3 nrm = Vec3(-0.5, 0, 1).normalized();
  const Vec3 foot(0.5, 0.5, 0.25);
  int n = collide_heightfield({&s, foot + nrm * 0.25, Mat3::Identity()}, f, at, Mat3::Identity(), 0.1, p);
  REQUIRE(n >= 1);
  CHECK(p[0].separation_m == doctest::Approx(0.05));
  CHECK(p[0].normal.isApprox(nrm, 1e-9));
  // buried centre: pushed out along the face normal
  n = collide_heightfield({&s, foot - nrm * 0.05, Mat3::Identity()}, f, at, Mat3::Identity(), 0.0, p);
  REQUIRE(n >= 1);
  CHECK(p[0].separation_m == doctest::Approx(-0.25));
  // a flat patch: box corners
  const HeightField flat = make_heightfield({{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}}, 1.0);
  Shape b;
  b.kind = ShapeKind::box;
  b.half_extents_m = {0.3, 0.2, 0.1};
  n = collide_heightfield({&b, {1.5, 1.5, 0.1}, Mat3::Identity()}, flat, at, Mat3::Identity(), 0.01, p);
  CHECK(n == 4);
  for (int i = 0; i < n; ++i) CHECK(p[i].separation_m == doctest::Approx(0).scale(1));
  // a spike under the middle of a big box pokes into its bottom face
  HeightField spike = flat;
  spike.heights_m[static_cast<std::size_t>(1 * 4 + 1)] = 0.3;
  finish_heightfield(spike);
  b.half_extents_m = {0.9, 0.9, 0.1};
  n = collide_heightfield({&b, {1.0, 1.0, 0.35}, Mat3::Identity()}, spike, at, Mat3::Identity(), 0.0, p);
  REQUIRE(n >= 1);
  CHECK(p[0].separation_m == doctest::Approx(-0.05));
  CHECK(p[0].normal.isApprox(Vec3(0, 0, 1)));
  // nothing when far above
  CHECK(collide_heightfield({&s, {1, 1, 5}, Mat3::Identity()}, f, at, Mat3::Identity(), 0.1, p) == 0);
}

TEST_CASE("bodies on terrain: a ball rolls down the ramp, a box rests on the flat") {
  WorldModel model;
  model.heightfields.push_back(make_heightfield(
      {{2, 1.5, 1, 0.5, 0, 0, 0, 0}, {2, 1.5, 1, 0.5, 0, 0, 0, 0}, {2, 1.5, 1, 0.5, 0, 0, 0, 0}}, 1.0));
  StaticBody t;
  t.shape.kind = ShapeKind::heightfield;
  t.shape.heightfield = 0;
  t.friction = 0.8;
  model.statics.push_back(t);
  WorldState state;
  auto add = [&](ShapeKind kind, const Vec3& pos) {
    BodyModel b;
    b.shape.kind = kind;
    b.shape.radius_m = 0.1;
    b.shape.half_extents_m = {0.15, 0.15, 0.1};
    b.mass_kg = 1;
    b.friction = 0.8;
    b.restitution = 0.1;
    finish_body_model(b, nullptr, nullptr);
    model.bodies.push_back(b);
    BodyState s;
    s.position_m = pos;
    state.bodies.push_back(s);
  };
  add(ShapeKind::sphere, {0.5, 0.5, 2.0});
  add(ShapeKind::box, {5.5, 1.6, 0.1});
  StepInputs inputs;
  inputs.resize(2);
  const Vec3 box0 = state.bodies[1].position_m;
  for (int k = 0; k < 300; ++k) {
    REQUIRE(step(model, state, inputs, 0.01) == StepStatus::ok);
    double z;
    const Vec3& ball = state.bodies[0].position_m;
    if (heightfield_height(model.heightfields[0], ball.x(), ball.y(), z)) CHECK(ball.z() > z);
  }
  CHECK(state.bodies[0].position_m.x() > 4.0);  // rolled down and along the flat
  CHECK((state.bodies[1].position_m - box0).norm() < 1e-3);
}
