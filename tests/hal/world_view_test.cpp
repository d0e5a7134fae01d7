// SPDX-License-Identifier: Apache-2.0
#include "tether/hal/world_view.hpp"

#include <cmath>

#include <doctest/doctest.h>

using namespace tether::hal;

TEST_CASE("simple world: rays against a tank's floor and walls") {
  SimpleWorld w;
  w.add_tank(10, 5, -8);
  SUBCASE("straight down to the floor") {
    const RayHit h = w.ray_cast(Vec3(0, 0, -2), Vec3(0, 0, -1), 100, -1);
    CHECK(h.hit);
    CHECK(h.distance_m == doctest::Approx(6));
    CHECK(h.static_index == 0);
    CHECK(h.normal.isApprox(Vec3(0, 0, 1)));
  }
  SUBCASE("at 30 degrees to a wall's normal") {
    const double a = 30.0 * M_PI / 180.0;
    const RayHit h = w.ray_cast(Vec3(7, 0, -1), Vec3(std::cos(a), std::sin(a), 0), 100, -1);
    CHECK(h.hit);
    CHECK(h.distance_m == doctest::Approx(3.0 / std::cos(a)));
  }
  SUBCASE("out of range, and away from every plane") {
    CHECK_FALSE(w.ray_cast(Vec3(0, 0, -2), Vec3(0, 0, -1), 5.9, -1).hit);
    CHECK_FALSE(w.ray_cast(Vec3(0, 0, -2), Vec3(0, 0, 1), 100, -1).hit);
  }
  SUBCASE("a ray that starts inside a wall hits at 0") {
    CHECK(w.ray_cast(Vec3(11, 0, -1), Vec3(-1, 0, 0), 100, -1).distance_m == 0);
  }
}

TEST_CASE("simple world: spheres, fixed and on bodies, the own body is ignored") {
  SimpleWorld w;
  w.bodies.resize(2);
  w.bodies[1].position_m = Vec3(5, 0, 0);
  w.spheres.push_back({Vec3::Zero(), 0.5, 1});    // on body 1
  w.spheres.push_back({Vec3(0, 0, 0), 0.25, 0});  // on body 0 (the sensor's own)
  w.spheres.push_back({Vec3(0, 3, 0), 1.0, -1});  // fixed
  const RayHit h = w.ray_cast(Vec3(0, 0, 0), Vec3(1, 0, 0), 100, 0);
  CHECK(h.hit);
  CHECK(h.distance_m == doctest::Approx(4.5));
  CHECK(h.body == 1);
  CHECK(h.normal.isApprox(Vec3(-1, 0, 0)));
  const RayHit f = w.ray_cast(Vec3(0, 0, 0), Vec3(0, 1, 0), 100, 0);
  CHECK(f.distance_m == doctest::Approx(2.0));
  CHECK(f.body == -1);
  CHECK(f.static_index == 2);  // no planes: its position in the sphere list
  // not ignoring body 0: the ray starts inside its sphere
  CHECK(w.ray_cast(Vec3(0, 0, 0), Vec3(1, 0, 0), 100, -1).distance_m == 0);
}
