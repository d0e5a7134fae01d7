// SPDX-License-Identifier: Apache-2.0
// The world model core against analytic answers.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>
#include <numbers>
#include <random>

#include "shape_test_util.hpp"
#include "tether/physics/physics.hpp"

using namespace tether::runtime;
using namespace tether::runtime::test;

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
    OneBody w(half_box(0.5, 0.5, 0.5), 1000.0);
    w.model.water.present = true;
    w.model.water.density_kg_m3 = 1000;
    w.body().position_m = Vec3(0, 0, -2);
    w.run(1000, 0.01);
    CHECK(w.body().position_m.z() == doctest::Approx(-2).epsilon(1e-12));
    CHECK(w.velocity().norm() < 1e-12);
  }
  SUBCASE("positive: half submerged at rest") {
    OneBody w(half_box(0.5, 0.5, 0.5), 500.0);
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
  OneBody w(half_box(0.2, 0.5, 0.8), 3.0, /*gravity=*/false);
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
    OneBody w(half_box(0.15, 0.25, 0.55), 7.0);
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

// ---- collisions, sub-steps, contacts (docs/physics.md) -----------------------------------

// counts heap allocations while a test asks for it (global replacement, this binary only)
namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
}  // namespace

void* operator new(std::size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// the nothrow forms too (std::stable_sort asks for one): with only some forms replaced,
// AddressSanitizer sees its own new paired with this delete and aborts
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace {

struct World {
  WorldModel model;
  WorldState state;
  StepInputs inputs;

  World() { model.gravity_m_s2 = Vec3::Zero(); }

  int add(const Shape& shape, double mass, const Vec3& pos, const Vec3& vel = Vec3::Zero(), double restitution = 0.3,
          double friction = 0.5, const Quat& q = Quat::Identity()) {
    BodyModel b;
    b.name = "body" + std::to_string(model.bodies.size());
    b.shape = shape;
    b.mass_kg = mass;
    b.restitution = restitution;
    b.friction = friction;
    finish_body_model(b, nullptr, nullptr);
    model.bodies.push_back(b);
    BodyState s;
    s.position_m = pos;
    s.orientation = q;
    state.bodies.push_back(s);
    const int i = static_cast<int>(model.bodies.size()) - 1;
    set_velocity(model, state, i, vel, Vec3::Zero());
    inputs.resize(model.bodies.size());
    return i;
  }
  int add_static(const Shape& shape, const Vec3& pos = Vec3::Zero(), const Quat& q = Quat::Identity(),
                 double restitution = 0.3, double friction = 0.5) {
    StaticBody s;
    s.name = "static" + std::to_string(model.statics.size());
    s.shape = shape;
    s.position_m = pos;
    s.orientation = q;
    s.restitution = restitution;
    s.friction = friction;
    model.statics.push_back(s);
    return static_cast<int>(model.statics.size()) - 1;
  }
  void run(double seconds, double dt = 0.01, StepReport* report = nullptr) {
    const auto steps = static_cast<int>(std::llround(seconds / dt));
    for (int k = 0; k < steps; ++k) REQUIRE(step(model, state, inputs, dt, report) == StepStatus::ok);
  }
  Vec3 v(int i) const { return linear_velocity(model, state, i); }
  Vec3 x(int i) const { return state.bodies[static_cast<std::size_t>(i)].position_m; }
  Vec3 momentum() const {
    Vec3 p = Vec3::Zero();
    for (const auto& b : state.bodies) p += b.linear_momentum;
    return p;
  }
  Vec3 angular_momentum_about_origin() const {
    Vec3 l = Vec3::Zero();
    for (const auto& b : state.bodies) l += b.position_m.cross(b.linear_momentum) + b.angular_momentum;
    return l;
  }
  double kinetic_energy() const {
    double e = 0;
    for (std::size_t i = 0; i < state.bodies.size(); ++i) {
      const Vec3 v = linear_velocity(model, state, static_cast<int>(i));
      const Vec3 w = angular_velocity(model, state, static_cast<int>(i));
      e += 0.5 * model.bodies[i].mass_kg * v.squaredNorm() + 0.5 * w.dot(state.bodies[i].angular_momentum);
    }
    return e;
  }
};

}  // namespace

TEST_CASE("head-on elastic collision of equal spheres swaps velocities") {
  for (std::uint32_t cuts : {0u, 16u}) {
    CAPTURE(cuts);
    World w;
    w.model.contact.max_toi_cuts = cuts;
    const int a = w.add(sphere(0.1), 1.0, {-1, 0, 0}, {2, 0, 0}, 1.0, 0.0);
    const int b = w.add(sphere(0.1), 1.0, {1, 0, 0}, {-1, 0, 0}, 1.0, 0.0);
    const Vec3 p0 = w.momentum();
    const double e0 = w.kinetic_energy();
    w.run(1.0);
    CHECK(w.v(a).x() == doctest::Approx(-1.0).epsilon(1e-12));
    CHECK(w.v(b).x() == doctest::Approx(2.0).epsilon(1e-12));
    CHECK((w.momentum() - p0).norm() < 1e-12);
    CHECK(w.kinetic_energy() == doctest::Approx(e0).epsilon(1e-12));
    // contact at t = 0.6 s (gap 1.8 m closing at 3 m/s); positions as if the bounce were exact
    CHECK(w.x(a).x() == doctest::Approx(-1 + 2 * 0.6 - 1 * 0.4).epsilon(1e-9));
    CHECK(w.x(b).x() == doctest::Approx(1 - 0.6 + 2 * 0.4).epsilon(1e-9));
  }
}

TEST_CASE("restitution loses the expected energy, momentum is always conserved") {
  for (double e : {0.0, 0.25, 0.5, 0.8, 1.0}) {
    CAPTURE(e);
    World w;
    const int a = w.add(sphere(0.1), 1.0, {-0.5, 0, 0}, {3, 0, 0}, e, 0.0);
    const int b = w.add(sphere(0.15), 3.0, {0.5, 0, 0}, {-1, 0, 0}, e, 0.0);
    const Vec3 p0 = w.momentum();
    const double e0 = w.kinetic_energy();
    const double mu = 1.0 * 3.0 / 4.0;  // reduced mass
    const double vrel = 4.0;
    w.run(0.5);
    CHECK((w.momentum() - p0).norm() < 1e-12);
    CHECK((w.v(b) - w.v(a)).x() == doctest::Approx(e * vrel).epsilon(1e-9));
    CHECK(e0 - w.kinetic_energy() == doctest::Approx(0.5 * mu * vrel * vrel * (1 - e * e)).epsilon(1e-9));
  }
}

TEST_CASE("oblique collisions with friction conserve linear and angular momentum") {
  World w;
  w.add(sphere(0.1), 1.0, {-0.5, 0.05, 0}, {3, 0, 0.2}, 0.7, 0.6);
  w.add(sphere(0.2), 2.5, {0.5, -0.1, 0.02}, {-1, 0.3, 0}, 0.7, 0.6);
  w.add(half_box(0.1, 0.2, 0.15), 1.5, {0.0, 0.8, 0}, {0, -2, 0}, 0.7, 0.6, quat_from_rpy(0.2, 0.3, 0.4));
  const Vec3 p0 = w.momentum();
  const Vec3 l0 = w.angular_momentum_about_origin();
  StepReport r;
  for (int k = 0; k < 100; ++k) REQUIRE(step(w.model, w.state, w.inputs, 0.01, &r) == StepStatus::ok);
  CHECK((w.momentum() - p0).norm() < 1e-12);
  CHECK((w.angular_momentum_about_origin() - l0).norm() < 1e-9);
}

TEST_CASE("a crowd of colliding bodies conserves momentum and is deterministic") {
  auto build = [](BroadPhaseKind kind) {
    World w;
    w.model.contact.broad_phase = kind;
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<Vec3> placed;
    for (int i = 0; i < 60; ++i) {
      // start apart: overlaps at the start would be projected out, which moves bodies
      // without momentum and so changes angular momentum about the origin
      Vec3 p;
      do {
        p = Vec3(u(rng) * 1.5, u(rng) * 1.5, u(rng) * 1.5);
      } while (std::any_of(placed.begin(), placed.end(), [&](const Vec3& q) { return (q - p).norm() < 0.45; }));
      placed.push_back(p);
      const Vec3 v = -p * 2 + Vec3(u(rng), u(rng), u(rng));
      if (i % 3 == 2)
        w.add(half_box(0.08, 0.1, 0.12), 1.0 + 0.1 * i, p, v, 0.5, 0.4, quat_from_rpy(u(rng), u(rng), u(rng)));
      else
        w.add(sphere(0.1 + 0.002 * i), 1.0 + 0.05 * i, p, v, 0.5, 0.4);
    }
    return w;
  };
  World a = build(BroadPhaseKind::grid);
  const Vec3 p0 = a.momentum();
  const Vec3 l0 = a.angular_momentum_about_origin();
  StepReport r;
  std::uint64_t contacts = 0;
  for (int k = 0; k < 200; ++k) {
    REQUIRE(step(a.model, a.state, a.inputs, 0.01, &r) == StepStatus::ok);
    contacts += r.contact_points;
  }
  CHECK(contacts > 100);
  CHECK((a.momentum() - p0).norm() < 1e-9);
  // angular momentum is exact per impulse; the position projection that removes leftover
  // overlap moves bodies without momentum, which shifts it slightly
  CAPTURE(l0.norm());
  CHECK((a.angular_momentum_about_origin() - l0).norm() < 1e-3 * l0.norm());
  // bit-identical again, and with every broad phase (they return the same pairs in order)
  for (BroadPhaseKind kind : {BroadPhaseKind::grid, BroadPhaseKind::sweep_and_prune, BroadPhaseKind::brute_force}) {
    World b = build(kind);
    for (int k = 0; k < 200; ++k) REQUIRE(step(b.model, b.state, b.inputs, 0.01) == StepStatus::ok);
    CHECK(hash_state(b.state) == hash_state(a.state));
  }
}

TEST_CASE("no tunnelling: small fast spheres against a thin plate, a plane and each other") {
  for (double lengths_per_s : {10.0, 100.0, 1000.0}) {
    CAPTURE(lengths_per_s);
    const double r = 0.01;
    const double speed = lengths_per_s * 2 * r;
    {
      // a 1 mm steel sheet, 0.2 m ahead
      World w;
      w.add_static(half_box(0.0005, 0.5, 0.5), {0.2, 0, 0});
      const int s = w.add(sphere(r), 0.01, {0, 0, 0}, {speed, 0, 0}, 0.5, 0.2);
      StepReport rep;
      for (int k = 0; k < 100; ++k) {
        REQUIRE(step(w.model, w.state, w.inputs, 0.01, &rep) == StepStatus::ok);
        CHECK(w.x(s).x() <= 0.2 - 0.0005 - r + 1e-4);
      }
      CHECK(w.v(s).x() < 0);  // it bounced
    }
    {
      // a thin dynamic plate hit by a bullet: both move, neither passes through the other
      World w;
      const int plate = w.add(half_box(0.0005, 0.2, 0.2), 0.5, {0.2, 0, 0});
      const int s = w.add(sphere(r), 0.01, {0, 0, 0}, {speed, 0, 0}, 0.5, 0.2);
      for (int k = 0; k < 50; ++k) {
        REQUIRE(step(w.model, w.state, w.inputs, 0.01) == StepStatus::ok);
        CHECK(w.x(s).x() <= w.x(plate).x() - 0.0005 - r + 1e-4);
      }
    }
    {
      // a floor: falling with the speed of a bullet
      World w;
      w.add_static(half_space({0, 0, 1}, 0));
      const int s = w.add(sphere(r), 0.01, {0, 0, 0.5}, {0, 0, -speed}, 0.0, 0.2);
      for (int k = 0; k < 50; ++k) {
        REQUIRE(step(w.model, w.state, w.inputs, 0.01) == StepStatus::ok);
        CHECK(w.x(s).z() >= r - 1e-4);
      }
    }
    {
      // two bullets head-on, meeting after 0.25 s
      World w;
      const double d = r + 0.25 * speed;
      const int a = w.add(sphere(r), 0.01, {-d, 0, 0}, {speed, 0, 0}, 1.0, 0.0);
      const int b = w.add(sphere(r), 0.01, {d, 0, 0}, {-speed, 0, 0}, 1.0, 0.0);
      for (int k = 0; k < 50; ++k) {
        REQUIRE(step(w.model, w.state, w.inputs, 0.01) == StepStatus::ok);
        CHECK(w.x(b).x() - w.x(a).x() >= 2 * r - 1e-4);
      }
      CHECK(w.v(a).x() == doctest::Approx(-speed));
    }
  }
}

TEST_CASE("sub-steps shrink so that no body moves more than a fraction of its size") {
  World w;
  w.model.max_substep_s = 0.01;
  w.add(sphere(0.05), 1.0, {0, 0, 0}, {10, 0, 0});
  StepReport r;
  REQUIRE(step(w.model, w.state, w.inputs, 0.01, &r) == StepStatus::ok);
  // 10 m/s * h <= 0.5 * 0.05 m  ->  h <= 2.5 ms  ->  4 sub-steps
  CHECK(r.substeps == 4);
  World slow;
  slow.model.max_substep_s = 0.01;
  slow.add(sphere(0.05), 1.0, {0, 0, 0}, {0.1, 0, 0});
  REQUIRE(step(slow.model, slow.state, slow.inputs, 0.01, &r) == StepStatus::ok);
  CHECK(r.substeps == 1);
}

TEST_CASE("a box resting on the tank floor stays put for 10 minutes") {
  World w;
  w.model.gravity_m_s2 = {0, 0, -9.81};
  w.add_static(half_space({0, 0, 1}, -2.0));
  const int b =
      w.add(half_box(0.2, 0.15, 0.1), 3.0, {0.3, -0.2, -2.0 + 0.1}, Vec3::Zero(), 0.3, 0.6, quat_from_rpy(0, 0, 0.4));
  const int s = w.add(sphere(0.1), 1.0, {-0.5, 0.5, -2.0 + 0.1}, Vec3::Zero(), 0.3, 0.6);
  const Vec3 xb = w.x(b), xs = w.x(s);
  const Quat qb = w.state.bodies[0].orientation;
  w.run(600.0);
  CHECK((w.x(b) - xb).norm() < 1e-3);
  CHECK((w.x(s) - xs).norm() < 1e-3);
  CHECK(w.state.bodies[0].orientation.angularDistance(qb) < 1e-3);
  CHECK(w.v(b).norm() < 1e-6);
}

TEST_CASE("a stack of three boxes stands") {
  World w;
  w.model.gravity_m_s2 = {0, 0, -9.81};
  w.add_static(half_space({0, 0, 1}, 0));
  const double h = 0.1;
  int top = -1;
  for (int k = 0; k < 3; ++k)
    top = w.add(half_box(0.2, 0.2, h), 1.0, {0.01 * k, 0, h + 2 * h * k}, Vec3::Zero(), 0.2, 0.7);
  const Vec3 x0 = w.x(top);
  StepReport r;
  for (int k = 0; k < 1000; ++k) REQUIRE(step(w.model, w.state, w.inputs, 0.01, &r) == StepStatus::ok);
  CHECK((w.x(top) - x0).norm() < 2e-3);
  CHECK(r.max_penetration_m < 1e-3);
  for (int k = 0; k < 3; ++k) CHECK(w.v(k).norm() < 1e-3);
}

TEST_CASE("a dropped ball bounces to e^2 of its height") {
  World w;
  w.model.gravity_m_s2 = {0, 0, -9.81};
  w.add_static(half_space({0, 0, 1}, 0), Vec3::Zero(), Quat::Identity(), 0.5, 0.0);
  const int b = w.add(sphere(0.1), 1.0, {0, 0, 1.1}, Vec3::Zero(), 0.5, 0.0);
  double top_after_bounce = 0;
  bool bounced = false;
  for (int k = 0; k < 150; ++k) {
    REQUIRE(step(w.model, w.state, w.inputs, 0.01) == StepStatus::ok);
    if (w.v(b).z() > 0) bounced = true;
    if (bounced) top_after_bounce = std::max(top_after_bounce, w.x(b).z() - 0.1);
  }
  CHECK(top_after_bounce == doctest::Approx(0.25).epsilon(0.02));
}

TEST_CASE("a sliding box stops where Coulomb friction says") {
  World w;
  w.model.gravity_m_s2 = {0, 0, -9.81};
  w.add_static(half_space({0, 0, 1}, 0), Vec3::Zero(), Quat::Identity(), 0.0, 0.4);
  const int b = w.add(half_box(0.1, 0.1, 0.1), 1.0, {0, 0, 0.1}, {2, 0, 0}, 0.0, 0.4);
  w.run(2.0);
  // mu = sqrt(0.4 * 0.4); distance v^2 / (2 mu g)
  CHECK(w.x(b).x() == doctest::Approx(4.0 / (2 * 0.4 * 9.81)).epsilon(0.02));
  CHECK(w.v(b).norm() < 1e-6);
  CHECK(w.x(b).z() == doctest::Approx(0.1).epsilon(1e-3));
}

TEST_CASE("contact events name the pair, the normal and the impulse") {
  World w;
  w.model.gravity_m_s2 = {0, 0, -9.81};
  const int floor = w.add_static(half_space({0, 0, 1}, 0));
  const int s = w.add(sphere(0.1), 2.0, {0, 0, 0.1});
  const int t = w.add(sphere(0.1), 1.0, {0, 0, 0.3});
  StepReport r;
  r.reserve_contacts(8);
  w.run(0.5, 0.01, &r);
  REQUIRE(r.contacts.size() == 2);
  CHECK(r.contacts_dropped == 0);
  const ContactEvent& e0 = r.contacts[0];
  CHECK(e0.body_a == s);
  CHECK(e0.body_b == -1);
  CHECK(e0.static_index == floor);
  CHECK(e0.normal.isApprox(Vec3(0, 0, 1)));
  CHECK(e0.impulse_n_s.z() == doctest::Approx(3.0 * 9.81 * 0.01).epsilon(1e-3));  // carries both
  const ContactEvent& e1 = r.contacts[1];
  CHECK(e1.body_a == s);
  CHECK(e1.body_b == t);
  CHECK(e1.normal.isApprox(Vec3(0, 0, -1)));
  CHECK(e1.point_m.z() == doctest::Approx(0.2).epsilon(1e-3));
  // a report without reserved room records nothing but counts
  StepReport none;
  w.run(0.01, 0.01, &none);
  CHECK(none.contacts.empty());
  CHECK(none.contact_points >= 2);
  // room for one: the other is dropped and counted
  StepReport one;
  one.reserve_contacts(1);
  w.run(0.01, 0.01, &one);
  CHECK(one.contacts.size() == 1);
  CHECK(one.contacts_dropped == 1);
}

TEST_CASE("shapes of every kind settle in a tank without passing through anything") {
  World w;
  w.model.gravity_m_s2 = {0, 0, -9.81};
  w.add_static(half_space({0, 0, 1}, 0));
  w.add_static(half_space({1, 0, 0}, -1));
  w.add_static(half_space({-1, 0, 0}, -1));
  w.add_static(half_space({0, 1, 0}, -1));
  w.add_static(half_space({0, -1, 0}, -1));
  Shape pipe;
  pipe.kind = ShapeKind::cylinder;
  pipe.radius_m = 0.1;
  pipe.half_length_m = 1.0;
  w.add_static(pipe, {0, 0, 0.3}, quat_from_rpy(0, 0, 0.3));
  Shape cap;
  cap.kind = ShapeKind::capsule;
  cap.radius_m = 0.06;
  cap.half_length_m = 0.15;
  Shape cyl = cap;
  cyl.kind = ShapeKind::cylinder;
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-0.7, 0.7);
  for (int i = 0; i < 24; ++i) {
    const Shape shapes[4] = {sphere(0.08), half_box(0.08, 0.06, 0.05), cap, cyl};
    w.add(shapes[i % 4], 1.0, {u(rng), u(rng), 0.6 + 0.25 * i}, Vec3::Zero(), 0.3, 0.5,
          quat_from_rpy(u(rng), u(rng), u(rng)));
  }
  StepReport r;
  for (int k = 0; k < 600; ++k) {
    REQUIRE(step(w.model, w.state, w.inputs, 0.01, &r) == StepStatus::ok);
    for (int i = 0; i < 24; ++i) {
      const Vec3 p = w.x(i);
      CHECK(p.z() > 0.0);
      CHECK(std::abs(p.x()) < 1.0);
      CHECK(std::abs(p.y()) < 1.0);
    }
  }
  CHECK(r.max_penetration_m < 5e-3);
  double ke = w.kinetic_energy();
  CHECK(ke < 0.5);
}

TEST_CASE("after warm-up a step does not allocate") {
  World w;
  w.model.gravity_m_s2 = {0, 0, -9.81};
  w.add_static(half_space({0, 0, 1}, 0));
  for (int i = 0; i < 40; ++i) w.add(sphere(0.05), 1.0, {0.03 * (i % 7), 0.02 * (i % 5), 0.1 + 0.11 * i});
  PhysicsScratch scratch;
  StepReport r;
  r.reserve_contacts(256);
  for (int k = 0; k < 300; ++k) REQUIRE(step(w.model, w.state, w.inputs, 0.01, &r, scratch) == StepStatus::ok);
  g_allocations = 0;
  g_counting = true;
  for (int k = 0; k < 20; ++k) REQUIRE(step(w.model, w.state, w.inputs, 0.01, &r, scratch) == StepStatus::ok);
  g_counting = false;
  CHECK(g_allocations.load() == 0);
}
