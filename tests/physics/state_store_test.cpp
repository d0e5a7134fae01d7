// SPDX-License-Identifier: Apache-2.0
#include "tether/physics/state_store.hpp"

#include <doctest/doctest.h>

#include <numbers>

#include "tether/physics/physics.hpp"

using namespace tether::runtime;

namespace {

WorldState state_with(std::uint64_t step, std::int64_t time_ns, double x) {
  WorldState s;
  s.step = step;
  s.time_ns = time_ns;
  BodyState b;
  b.position_m = {x, 2 * x, 0};
  b.linear_momentum = {x, 0, 0};
  s.bodies.push_back(b);
  return s;
}

// a small world with collisions: spheres thrown at each other and at a floor
void make_world(WorldModel& model, WorldState& state) {
  model.gravity_m_s2 = {0, 0, -9.81};
  StaticBody floor;
  floor.shape.kind = ShapeKind::plane;
  model.statics.push_back(floor);
  for (int i = 0; i < 12; ++i) {
    BodyModel b;
    b.name = "b" + std::to_string(i);
    b.shape.kind = i % 2 ? ShapeKind::box : ShapeKind::sphere;
    b.shape.radius_m = 0.1;
    b.shape.half_extents_m = {0.1, 0.08, 0.06};
    b.mass_kg = 1 + 0.1 * i;
    b.restitution = 0.6;
    finish_body_model(b, nullptr, nullptr);
    model.bodies.push_back(b);
    BodyState s;
    s.position_m = {0.25 * (i % 4), 0.3 * (i / 4), 0.2 + 0.3 * i};
    s.orientation = quat_from_rpy(0.1 * i, 0.2, 0);
    state.bodies.push_back(s);
    set_velocity(model, state, i, Vec3(i % 3 - 1.0, (i % 2) - 0.5, 0), Vec3(0, 0, 0.5 * i));
  }
}

}  // namespace

TEST_CASE("the store keeps the last K states in order") {
  StateStore store(4);
  CHECK(store.empty());
  CHECK(store.newest() == nullptr);
  for (std::uint64_t k = 0; k < 10; ++k) store.push(state_with(k, static_cast<std::int64_t>(k) * 10, k));
  CHECK(store.size() == 4);
  CHECK(store.oldest()->step == 6);
  CHECK(store.newest()->step == 9);
  CHECK(store.at_step(7)->time_ns == 70);
  CHECK(store.at_step(5) == nullptr);
  CHECK(store.at_step(10) == nullptr);
}

TEST_CASE("state_at interpolates position and momentum linearly, orientation by slerp") {
  StateStore store(8);
  WorldState a = state_with(0, 0, 0.0), b = state_with(1, 10'000'000, 1.0);
  a.bodies[0].orientation = Quat::Identity();
  b.bodies[0].orientation = quat_from_rpy(0, 0, std::numbers::pi / 2);
  store.push(a);
  store.push(b);
  WorldState out;
  REQUIRE(store.state_at(2'500'000, out));
  CHECK(out.step == 0);
  CHECK(out.time_ns == 2'500'000);
  CHECK(out.bodies[0].position_m.isApprox(Vec3(0.25, 0.5, 0)));
  CHECK(out.bodies[0].linear_momentum.x() == doctest::Approx(0.25));
  CHECK(rpy_from_quat(out.bodies[0].orientation).z() == doctest::Approx(std::numbers::pi / 8));
  // exactly on a stored state: that state, bit for bit
  REQUIRE(store.state_at(10'000'000, out));
  CHECK(hash_state(out) == hash_state(b));
  // outside the span
  CHECK_FALSE(store.state_at(-1, out));
  CHECK_FALSE(store.state_at(10'000'001, out));
}

TEST_CASE("rewinding to step m and re-advancing reproduces the later states bit for bit") {
  WorldModel model;
  WorldState state;
  make_world(model, state);
  StepInputs inputs;
  inputs.resize(model.bodies.size());
  auto input_for = [&](std::uint64_t step) {
    // inputs that change with the step, as a recording would hold them
    for (std::size_t i = 0; i < inputs.wrenches.size(); ++i) {
      inputs.wrenches[i] = BodyWrench{};
      inputs.wrenches[i].force_world_n = Vec3(std::sin(0.1 * static_cast<double>(step + i)), 0, 0);
    }
  };
  StateStore store(200);
  store.push(state);
  std::vector<std::uint64_t> hashes{hash_state(state)};
  for (int k = 0; k < 150; ++k) {
    input_for(state.step);
    REQUIRE(step(model, state, inputs, 0.01) == StepStatus::ok);
    store.push(state);
    hashes.push_back(hash_state(state));
  }
  WorldState replay;
  REQUIRE(store.rewind(60, replay));
  CHECK(store.newest()->step == 60);
  CHECK(hash_state(replay) == hashes[60]);
  for (std::uint64_t k = 60; k < 150; ++k) {
    input_for(replay.step);
    REQUIRE(step(model, replay, inputs, 0.01) == StepStatus::ok);
    store.push(replay);
    CHECK(hash_state(replay) == hashes[k + 1]);
  }
  CHECK(store.size() == 151);
  // rewinding to a step that is gone fails and changes nothing
  StateStore small(3);
  for (std::uint64_t k = 0; k < 5; ++k) small.push(state_with(k, static_cast<std::int64_t>(k), 0));
  CHECK_FALSE(small.rewind(0, replay));
  CHECK(small.size() == 3);
  // pushing an older step replaces the stored future
  small.push(state_with(3, 3, 7));
  CHECK(small.newest()->step == 3);
  CHECK(small.size() == 2);
  CHECK(small.newest()->bodies[0].position_m.x() == 7);
}
