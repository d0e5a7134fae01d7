// SPDX-License-Identifier: Apache-2.0
// The world model core against analytic answers.
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>

#include "tether/runtime/physics.hpp"

using namespace tether::runtime;

namespace {

// one body in an otherwise empty world
struct OneBody {
  WorldModel model;
  WorldState state;
  StepInputs inputs;

  explicit OneBody(Shape shape, double mass_kg, bool gravity = true) {
    BodyModel b;
    b.name = "v.body";
    b.shape = shape;
    b.mass_kg = mass_kg;
    finish_body_model(b, nullptr, nullptr);
    model.bodies.push_back(b);
    model.vehicles.push_back({"v", {0}});
    if (!gravity) model.gravity_m_s2.setZero();
    state.bodies.resize(1);
    inputs.resize(1);
  }
  BodyState& body() { return state.bodies[0]; }
  Vec3 velocity() const { return linear_velocity(model, state, 0); }
  void run(int steps, double dt) {
    for (int i = 0; i < steps; ++i) REQUIRE(step(model, state, inputs, dt) == StepStatus::ok);
  }
};

Shape sphere(double r) {
  Shape s;
  s.kind = ShapeKind::sphere;
  s.radius_m = r;
  return s;
}

Shape box(double x, double y, double z) {
  Shape s;
  s.kind = ShapeKind::box;
  s.half_extents_m = Vec3(x, y, z) / 2;
  return s;
}

double kinetic_energy(const WorldModel& m, const WorldState& s) {
  const Vec3 v = linear_velocity(m, s, 0);
  const Vec3 w = angular_velocity(m, s, 0);
  return 0.5 * m.bodies[0].mass_kg * v.squaredNorm() + 0.5 * w.dot(s.bodies[0].angular_momentum);
}

}  // namespace

TEST_CASE("free fall matches z0 - g t^2 / 2") {
  OneBody w(sphere(0.1), 2.0);
  w.body().position_m = Vec3(0, 0, 100);
  w.run(200, 0.01);  // 2 s
  const double g = 9.81, t = 2.0;
  CHECK(w.body().position_m.z() == doctest::Approx(100 - 0.5 * g * t * t).epsilon(1e-12));
  CHECK(w.velocity().z() == doctest::Approx(-g * t).epsilon(1e-12));
  CHECK(w.state.time_ns == 2'000'000'000);
  CHECK(w.state.step == 200);
}

TEST_CASE("projectile follows the parabola") {
  OneBody w(sphere(0.1), 1.0);
  set_velocity(w.model, w.state, 0, Vec3(10, 0, 10), Vec3::Zero());
  w.run(150, 0.01);  // 1.5 s
  const double g = 9.81, t = 1.5;
  CHECK(w.body().position_m.x() == doctest::Approx(10 * t).epsilon(1e-12));
  CHECK(w.body().position_m.z() == doctest::Approx(10 * t - 0.5 * g * t * t).epsilon(1e-12));
  CHECK(w.velocity().x() == doctest::Approx(10).epsilon(1e-12));
}

TEST_CASE("a sphere sinking under quadratic drag reaches terminal velocity") {
  OneBody w(sphere(0.1), 10.0);
  w.model.water.present = true;
  w.model.water.density_kg_m3 = 1000;
  w.model.bodies[0].damping.quadratic = Vec3(20, 20, 20);
  w.body().position_m = Vec3(0, 0, -1000);  // deep enough to stay submerged
  w.run(3000, 0.01);
  const double volume = 4.0 / 3.0 * std::numbers::pi * 0.001;
  const double net_weight = (10.0 - 1000 * volume) * 9.81;
  const double v_terminal = std::sqrt(net_weight / 20.0);
  CHECK(w.velocity().z() == doctest::Approx(-v_terminal).epsilon(1e-6));
}

TEST_CASE("buoyancy: a neutral body stays put, a light one floats at the analytic draught") {
  SUBCASE("neutral") {
    OneBody w(box(1, 1, 1), 1000.0);
    w.model.water.present = true;
    w.model.water.density_kg_m3 = 1000;
    w.body().position_m = Vec3(0, 0, -2);
    w.run(1000, 0.01);
    CHECK(w.body().position_m.z() == doctest::Approx(-2).epsilon(1e-12));
    CHECK(w.velocity().norm() < 1e-12);
  }
  SUBCASE("positive: half submerged at rest") {
    OneBody w(box(1, 1, 1), 500.0);
    w.model.water.present = true;
    w.model.water.density_kg_m3 = 1000;
    w.model.bodies[0].damping.linear = Vec3(800, 800, 800);
    w.body().position_m = Vec3(0, 0, -2);
    w.run(6000, 0.01);  // 60 s
    // 500 kg displaces 0.5 m^3: the bottom sits 0.5 m under the surface, the centre at 0
    CHECK(w.body().position_m.z() == doctest::Approx(0.0).epsilon(1e-3).scale(1));
    CHECK(std::abs(w.velocity().z()) < 1e-4);
  }
}

TEST_CASE("a torque-free spinning box keeps its angular momentum and energy") {
  OneBody w(box(0.4, 1.0, 1.6), 3.0, /*gravity=*/false);
  // mostly about the major axis, a little about the others: the body tumbles
  w.body().orientation = quat_from_rpy(0.3, -0.2, 0.7);
  set_velocity(w.model, w.state, 0, Vec3::Zero(), Vec3(0.3, -0.4, 2.0));
  const Vec3 l0 = w.body().angular_momentum;
  const double e0 = kinetic_energy(w.model, w.state);
  w.run(10000, 0.01);
  CHECK((w.body().angular_momentum - l0).norm() == doctest::Approx(0).epsilon(1e-12).scale(1));
  // RK4 at 2 ms sub-steps over 100 s: energy drift stays below 1e-6 relative
  CHECK(std::abs(kinetic_energy(w.model, w.state) - e0) / e0 < 1e-6);
  CHECK(std::abs(w.body().orientation.norm() - 1.0) < 1e-12);
  // the angular velocity did change direction: it is tumbling, not trivially spinning
  CHECK((angular_velocity(w.model, w.state, 0) - Vec3(0.3, -0.4, 2.0)).norm() > 0.1);
}

TEST_CASE("body-relative thrust turns with the body") {
  // a sphere spinning at w about z, pushed by F along its own x axis:
  // v(t) = F/m (sin wt / w, (1 - cos wt) / w, 0)
  OneBody w(sphere(0.5), 2.0, /*gravity=*/false);
  const double omega = 1.3, force = 4.0, mass = 2.0;
  set_velocity(w.model, w.state, 0, Vec3::Zero(), Vec3(0, 0, omega));
  w.inputs.wrenches[0].force_body_n = Vec3(force, 0, 0);
  w.run(200, 0.01);
  const double t = 2.0;
  const Vec3 v = w.velocity();
  CHECK(v.x() == doctest::Approx(force / mass * std::sin(omega * t) / omega).epsilon(1e-9));
  CHECK(v.y() == doctest::Approx(force / mass * (1 - std::cos(omega * t)) / omega).epsilon(1e-9));
  CHECK(std::abs(v.z()) < 1e-12);

  SUBCASE("while a world-frame force does not turn") {
    OneBody u(sphere(0.5), 2.0, false);
    set_velocity(u.model, u.state, 0, Vec3::Zero(), Vec3(0, 0, omega));
    u.inputs.wrenches[0].force_world_n = Vec3(force, 0, 0);
    u.run(200, 0.01);
    CHECK(u.velocity().x() == doctest::Approx(force / mass * t).epsilon(1e-12));
    CHECK(std::abs(u.velocity().y()) < 1e-12);
  }
}

TEST_CASE("a force at a point makes the matching torque") {
  BodyWrench w;
  w.add_body_force_at(Vec3(0, 10, 0), Vec3(0.5, 0, 0));
  CHECK(w.torque_body_nm.isApprox(Vec3(0, 0, 5)));
  w.add_world_force_at(Vec3(0, 0, 2), Vec3(1, 0, 0));
  CHECK(w.torque_world_nm.isApprox(Vec3(0, -2, 0)));
}

TEST_CASE("a NaN input is reported as a numerical fault, not hidden") {
  OneBody w(sphere(0.1), 1.0);
  w.inputs.wrenches[0].force_world_n = Vec3(std::nan(""), 0, 0);
  CHECK(step(w.model, w.state, w.inputs, 0.01) == StepStatus::numerical_fault);
}

TEST_CASE("stepping is deterministic: same inputs, bit-identical state") {
  auto run = [] {
    OneBody w(box(0.3, 0.5, 1.1), 7.0);
    w.model.water.present = true;
    w.model.water.current_m_s = Vec3(0.2, -0.1, 0);
    w.model.bodies[0].damping = {Vec3(5, 6, 7), Vec3(10, 11, 12), Vec3(1, 1, 1), Vec3(0.5, 0.5, 0.5)};
    w.model.bodies[0].centre_of_buoyancy_m = Vec3(0.01, 0, 0.05);
    w.body().orientation = quat_from_rpy(0.2, 0.1, -0.4);
    for (int k = 0; k < 2000; ++k) {
      w.inputs.wrenches[0].force_body_n = Vec3(std::sin(k * 0.01), 0.5, std::cos(k * 0.02));
      REQUIRE(step(w.model, w.state, w.inputs, 0.01) == StepStatus::ok);
    }
    return hash_state(w.state);
  };
  const auto a = run();
  CHECK(a == run());
}

TEST_CASE("state serialization round-trips exactly and rejects wrong sizes") {
  WorldState s;
  s.step = 42;
  s.time_ns = 420'000'000;
  s.bodies.resize(2);
  s.bodies[1].position_m = Vec3(0.1, -2.5e-300, 3.0 / 7.0);
  s.bodies[1].orientation = quat_from_rpy(0.1, 0.2, 0.3);
  s.bodies[0].angular_momentum = Vec3(1e-17, 2, 3);
  std::string bytes;
  serialize_state(s, bytes);
  CHECK(bytes.size() == 20 + 2 * 13 * 8);
  WorldState back;
  std::string error;
  REQUIRE(deserialize_state(bytes, back, &error));
  CHECK(hash_state(back) == hash_state(s));
  CHECK_FALSE(deserialize_state(bytes.substr(0, bytes.size() - 1), back, &error));
  CHECK(error == "state record of 227 bytes, expected 228 for 2 bodies");
  CHECK_FALSE(deserialize_state("abc", back, &error));
}
