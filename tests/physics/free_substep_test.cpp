// SPDX-License-Identifier: Apache-2.0
// Free sub-steps (docs/physics.md, "Sub-steps"): a body far from every surface in steady water
// takes the loop step in longer sub-steps; near a surface, crossing the water's surface or
// under fast forces the step is the fixed rule's, bit for bit.
#include <doctest/doctest.h>

#include <cstring>

#include "shape_test_util.hpp"
#include "tether/physics/physics.hpp"

using namespace tether::runtime;
using namespace tether::runtime::test;

namespace {

// the AUV of config/scenarios/default.yaml in a tank of water, cruising and turning
struct Tank {
  WorldModel model;
  WorldState state;
  StepInputs inputs;

  Tank(const Vec3& position, const Shape& shape = cylinder(0.1, 0.6), double mass_kg = 38.0) {
    model.water.present = true;
    model.water.density_kg_m3 = 1025;
    BodyModel b;
    b.name = "auv.hull";
    b.shape = shape;
    b.mass_kg = mass_kg;
    b.centre_of_buoyancy_m = {0, 0, 0.02};
    b.damping.linear = {10, 30, 30};
    b.damping.quadratic = {20, 80, 80};
    b.damping.angular_linear = {2, 6, 6};
    b.damping.angular_quadratic = {1, 4, 4};
    finish_body_model(b, nullptr, nullptr);
    model.bodies.push_back(b);
    model.vehicles.push_back({"auv", {0}});
    // floor and four walls of an 80 x 20 m tank, 8 m deep
    auto plane = [this](const Vec3& n, double offset) {
      StaticBody s;
      s.name = "plane" + std::to_string(model.statics.size());
      s.shape = half_space(n, offset);
      model.statics.push_back(s);
    };
    plane({0, 0, 1}, -8);
    plane({1, 0, 0}, -40);
    plane({-1, 0, 0}, -40);
    plane({0, 1, 0}, -10);
    plane({0, -1, 0}, -10);
    state.bodies.resize(1);
    state.bodies[0].position_m = position;
    inputs.resize(1);
    inputs.wrenches[0].force_body_n = {12, 0, -10};
    inputs.wrenches[0].torque_body_nm = {0, 0, 0.4};
  }
  // the same world with free sub-steps off
  Tank fixed() const {
    Tank t = *this;
    t.model.free_substep_s = t.model.max_substep_s;
    return t;
  }
  std::uint32_t step_once(double dt = 0.01) {
    StepReport r;
    REQUIRE(step(model, state, inputs, dt, &r) == StepStatus::ok);
    return r.substeps;
  }
};

bool same_bits(const BodyState& a, const BodyState& b) {
  return std::memcmp(a.position_m.data(), b.position_m.data(), sizeof(double) * 3) == 0 &&
         std::memcmp(a.orientation.coeffs().data(), b.orientation.coeffs().data(), sizeof(double) * 4) == 0 &&
         std::memcmp(a.linear_momentum.data(), b.linear_momentum.data(), sizeof(double) * 3) == 0 &&
         std::memcmp(a.angular_momentum.data(), b.angular_momentum.data(), sizeof(double) * 3) == 0;
}

}  // namespace

TEST_CASE(
    "a lone vehicle far from every surface takes a 10 ms step in one sub-step, within a nanometre of the fixed rule") {
  Tank free_run({-35, 0, -2});
  Tank fixed_run = free_run.fixed();
  double worst_m = 0, worst_rad = 0;
  for (int k = 0; k < 1000; ++k) {  // 10 s: about 5 m of cruise and a half turn
    REQUIRE(free_run.step_once() == 1);
    REQUIRE(fixed_run.step_once() == 5);
    const BodyState& a = free_run.state.bodies[0];
    const BodyState& b = fixed_run.state.bodies[0];
    worst_m = std::max(worst_m, (a.position_m - b.position_m).norm());
    worst_rad = std::max(worst_rad, a.orientation.angularDistance(b.orientation));
  }
  MESSAGE("largest difference from 2 ms sub-steps over 10 s: ", worst_m, " m, ", worst_rad, " rad");
  CHECK(worst_m > 0);     // the longer sub-step was taken: not the same computation
  CHECK(worst_m < 1e-9);  // 6e-12 m and 4e-12 rad when written
  CHECK(worst_rad < 1e-9);
  CHECK((free_run.state.bodies[0].position_m - Vec3(-35, 0, -2)).norm() > 2.0);
}

TEST_CASE(
    "near a surface, across the water's surface and under fast forces the step is the fixed rule's, bit for bit") {
  struct Case {
    const char* what;
    Tank tank;
    int steps;  // while the condition holds
  };
  Tank stiff({0, 0, -2}, sphere(0.05), 0.2);  // 30 N/(m/s) on 0.2 kg: 150 per second
  stiff.model.bodies[0].damping = Damping{{30, 30, 30}, {0, 0, 0}, {1e-4, 1e-4, 1e-4}, {0, 0, 0}};
  stiff.inputs.wrenches[0].torque_body_nm.setZero();
  Case cases[] = {
      {"0.5 m above the floor", Tank({0, 0, -7.5}), 20},
      {"0.61 m from a wall, heading for it (and hitting it)", Tank({39.39, 0, -2}), 2},
      {"crossing the water's surface", Tank({0, 0, -0.05}), 20},
      {"damping faster than a free sub-step allows", stiff, 20},
  };
  cases[1].tank.state.bodies[0].linear_momentum = Vec3(38.0 * 2.0, 0, 0);  // 2 m/s: reaches the wall in 10 ms
  for (Case& c : cases) {
    const std::string what = c.what;
    CAPTURE(what);
    Tank fixed_run = c.tank.fixed();
    for (int k = 0; k < c.steps; ++k) {
      CHECK(c.tank.step_once() == fixed_run.step_once());
      REQUIRE(same_bits(c.tank.state.bodies[0], fixed_run.state.bodies[0]));
    }
  }
}

TEST_CASE("free sub-steps split a long loop step equally and keep to the motion rule") {
  Tank t({0, 0, -3});
  CHECK(t.step_once(0.025) == 3);  // 25 ms in three sub-steps of 8.3 ms (free_substep_s 10 ms)
  t.model.free_substep_s = 0.02;
  CHECK(t.step_once(0.025) == 2);
  // fast enough that the motion rule (half the hull's radius a sub-step) cuts it shorter
  Tank fast({0, 0, -3});
  fast.state.bodies[0].linear_momentum = Vec3(38.0 * 8.0, 0, 0);  // 8 m/s
  CHECK(fast.step_once() > 1);
}
