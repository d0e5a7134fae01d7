// SPDX-License-Identifier: Apache-2.0
#include "tether/loop/hal_bridge.hpp"

#include <doctest/doctest.h>

using namespace tether::runtime;

TEST_CASE("hal bridge: ray casts and contact events in hal's types") {
  WorldModel model;
  WorldState state;
  BodyModel b;
  b.shape.kind = ShapeKind::sphere;
  b.shape.radius_m = 0.5;
  finish_body_model(b, nullptr, nullptr);
  model.bodies.push_back(b);
  BodyState s;
  s.position_m = {3, 0, 0};
  state.bodies.push_back(s);
  const tether::hal::RayHit h = hal_ray_cast(model, state, Vec3::Zero(), Vec3(1, 0, 0), 10, -1);
  CHECK(h.hit);
  CHECK(h.body == 0);
  CHECK(h.distance_m == doctest::Approx(2.5));
  CHECK(h.normal.isApprox(Vec3(-1, 0, 0)));

  std::vector<ContactEvent> events(1);
  events[0].body_a = 2;
  events[0].static_index = 1;
  events[0].impulse_n_s = {0, 0.3, 0.4};
  std::vector<tether::hal::Contact> out;
  to_hal_contacts(events, 0.01, out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].body_a == 2);
  CHECK(out[0].body_b == -1);
  CHECK(out[0].force_n == doctest::Approx(50));
}
