// SPDX-License-Identifier: Apache-2.0
// Joints against analytic answers: a pendulum's period and energy, limits that hold, a slider
// under gravity, a fixed pair moving as one body, DOF locks; and the same bits on any thread count.
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "shape_test_util.hpp"
#include "tether/physics/joints.hpp"
#include "tether/physics/physics.hpp"

using namespace tether::runtime;
using namespace tether::runtime::test;

namespace {

struct World {
  WorldModel model;
  WorldState state;
  StepInputs inputs;
  StepReport report;

  int add(const Shape& shape, double mass, const Vec3& pos, const Quat& q = Quat::Identity()) {
    BodyModel b;
    b.name = "b" + std::to_string(model.bodies.size());
    b.shape = shape;
    b.mass_kg = mass;
    finish_body_model(b, nullptr, nullptr);
    model.bodies.push_back(b);
    BodyState s;
    s.position_m = pos;
    s.orientation = q;
    state.bodies.push_back(s);
    inputs.resize(model.bodies.size());
    return static_cast<int>(model.bodies.size()) - 1;
  }
  int join(JointKind kind, int a, int b, const Vec3& anchor, const Vec3& axis = Vec3::UnitX()) {
    JointSpec spec;
    spec.name = "j" + std::to_string(model.joints.size());
    spec.kind = kind;
    spec.body_a = a;
    spec.body_b = b;
    spec.anchor_world_m = anchor;
    spec.axis_world = axis;
    model.joints.push_back(make_joint(spec, state));
    return static_cast<int>(model.joints.size()) - 1;
  }
  void run(double dt) { REQUIRE(step(model, state, inputs, dt, &report) == StepStatus::ok); }
};

double kinetic_energy(const World& w, int i) {
  const BodyModel& b = w.model.bodies[static_cast<std::size_t>(i)];
  const BodyState& s = w.state.bodies[static_cast<std::size_t>(i)];
  const Vec3 v = linear_velocity(w.model, w.state, i), om = angular_velocity(w.model, w.state, i);
  return 0.5 * b.mass_kg * v.squaredNorm() + 0.5 * om.dot(s.angular_momentum);
}

// a sphere of radius r hung at distance len below a world hinge about y, swung to angle0
World pendulum(double len, double r, double angle0) {
  World w;
  const Vec3 pivot(0, 0, 2);
  const Vec3 bob = pivot + len * Vec3(std::sin(angle0), 0, -std::cos(angle0));
  w.add(sphere(r), 1.0, bob);
  w.join(JointKind::hinge, 0, -1, pivot, Vec3::UnitY());
  return w;
}

}  // namespace

TEST_CASE("a pendulum on a hinge swings at the small-angle period") {
  const double len = 1.0, r = 0.05, g = 9.81;
  // compound pendulum: T = 2 pi sqrt(I_pivot / (m g L)), I_pivot = 2/5 m r^2 + m L^2
  const double period = 2 * std::numbers::pi * std::sqrt((0.4 * r * r + len * len) / (g * len));
  World w = pendulum(len, r, 0.02);
  const JointModel& hinge = w.model.joints[0];
  const double dt = 0.001;
  // the hinge angle counts from where the joint was built (0.02 rad out): the bottom is -0.02
  CHECK(joint_position(hinge, w.state) == doctest::Approx(0).epsilon(1e-12));
  auto angle = [&] { return joint_position(hinge, w.state) + 0.02; };
  double previous = angle(), t = 0;
  std::vector<double> crossings;  // zero crossings of the swing in one direction, interpolated
  while (crossings.size() < 4 && t < 20) {
    w.run(dt);
    t += dt;
    const double now = angle();
    if (previous < 0 && now >= 0) crossings.push_back(t - dt * now / (now - previous));
    previous = now;
    REQUIRE(w.report.max_joint_error_m < 1e-6);
  }
  REQUIRE(crossings.size() == 4);
  const double measured = (crossings[3] - crossings[0]) / 3;
  CAPTURE(measured);
  CAPTURE(period);
  CHECK(std::abs(measured / period - 1) < 0.005);
  // the bob stays on its circle
  CHECK(std::abs((w.state.bodies[0].position_m - Vec3(0, 0, 2)).norm() - len) < 1e-6);
}

TEST_CASE("a pendulum's energy stays bounded over 10^4 steps") {
  World w = pendulum(1.0, 0.05, 0.8);
  auto energy = [&w] { return kinetic_energy(w, 0) + 9.81 * w.state.bodies[0].position_m.z(); };
  const double e0 = energy();
  const double swing = 9.81 * (1.0 - std::cos(0.8));  // the energy that moves back and forth
  double worst = 0, worst_joint = 0;
  for (int k = 0; k < 10000; ++k) {
    w.run(0.01);
    worst = std::max(worst, std::abs(energy() - e0));
    worst_joint = std::max(worst_joint, w.report.max_joint_error_m);
  }
  CAPTURE(worst / swing);
  CHECK(worst < 0.01 * swing);
  CHECK(worst_joint < 1e-6);
  // it never left the plane of the hinge
  CHECK(std::abs(w.state.bodies[0].position_m.y()) < 1e-9);
}

TEST_CASE("a hinge limit holds a falling arm") {
  // a horizontal rod hinged at one end about y: gravity swings its free end down, the limit at
  // 0.5 rad stops it (the angle of the rod relative to the world grows as it falls)
  World w;
  const int rod = w.add(half_box(0.5, 0.05, 0.05), 2.0, Vec3(0.5, 0, 1));
  JointSpec spec;
  spec.name = "elbow";
  spec.kind = JointKind::hinge;
  spec.body_a = rod;
  spec.body_b = -1;
  spec.anchor_world_m = Vec3(0, 0, 1);
  spec.axis_world = Vec3::UnitY();
  spec.limited = true;
  spec.lower = -0.5;
  spec.upper = 0.5;
  w.model.joints.push_back(make_joint(spec, w.state));
  const JointModel& j = w.model.joints[0];
  double lowest = 0, highest = 0;
  for (int k = 0; k < 300; ++k) {
    w.run(0.01);
    const double a = joint_position(j, w.state);
    lowest = std::min(lowest, a);
    highest = std::max(highest, a);
  }
  CAPTURE(lowest);
  CAPTURE(highest);
  // the world (side b) turns relative to the rod: one sign reaches the limit, within 1 mrad
  CHECK(std::max(std::abs(lowest), std::abs(highest)) < 0.5 + 1e-3);
  CHECK(std::max(std::abs(lowest), std::abs(highest)) > 0.5 - 1e-3);
  // and rests there
  CHECK(angular_velocity(w.model, w.state, rod).norm() < 1e-3);
}

TEST_CASE("a slider under gravity accelerates at g sin(slope) and stops at its limit") {
  World w;
  const double slope = std::numbers::pi / 6;
  const Vec3 axis(std::cos(slope), 0, -std::sin(slope));  // downhill
  const int box = w.add(half_box(0.1, 0.1, 0.1), 3.0, Vec3(0, 0, 5));
  JointSpec spec;
  spec.name = "rail";
  spec.kind = JointKind::slider;
  spec.body_a = box;  // travel is side b's (the world's) relative to the box: minus the box's
  spec.body_b = -1;
  spec.anchor_world_m = Vec3(0, 0, 5);
  spec.axis_world = axis;
  spec.limited = true;
  spec.lower = -2;
  spec.upper = 1;
  w.model.joints.push_back(make_joint(spec, w.state));
  const JointModel& j = w.model.joints[0];
  const double a = 9.81 * std::sin(slope);
  double t = 0;
  for (int k = 0; k < 50; ++k) {
    w.run(0.01);
    t += 0.01;
  }
  const double travel = -joint_position(j, w.state);  // the box's travel downhill
  CAPTURE(travel);
  CHECK(std::abs(travel / (0.5 * a * t * t) - 1) < 0.005);
  // it stays on the rail and does not turn
  const Vec3 off = w.state.bodies[0].position_m - Vec3(0, 0, 5);
  CHECK((off - off.dot(axis) * axis).norm() < 1e-6);
  CHECK(w.state.bodies[0].orientation.angularDistance(Quat::Identity()) < 1e-6);
  for (int k = 0; k < 200; ++k) w.run(0.01);
  CHECK(std::abs(-joint_position(j, w.state) - 2.0) < 1e-3);
  CHECK(linear_velocity(w.model, w.state, box).norm() < 1e-3);
}

TEST_CASE("a fixed pair moves as the merged rigid body") {
  World w;
  w.model.gravity_m_s2 = Vec3::Zero();
  const int a = w.add(half_box(0.2, 0.1, 0.1), 2.0, Vec3(0, 0, 0));
  const int b = w.add(sphere(0.15), 1.0, Vec3(0.5, 0.1, 0));
  w.join(JointKind::fixed, a, b, Vec3(0.3, 0, 0));
  // a force off the common centre of mass on one body only, for 1 s
  const Vec3 force(0, 2.0, 1.0);
  w.inputs.wrenches[static_cast<std::size_t>(b)].add_world_force_at(force, Vec3(0.1, 0, 0));
  const double m = 3.0;
  const Vec3 c0 = (2.0 * w.state.bodies[0].position_m + 1.0 * w.state.bodies[1].position_m) / m;
  for (int k = 0; k < 100; ++k) w.run(0.01);
  const Vec3 p = w.state.bodies[0].linear_momentum + w.state.bodies[1].linear_momentum;
  CHECK((p - force * 1.0).norm() < 1e-9);
  const Vec3 c = (2.0 * w.state.bodies[0].position_m + 1.0 * w.state.bodies[1].position_m) / m;
  // symplectic Euler (the step's rule for bodies in joints) under a constant force over
  // sub-steps h: x = a t (t + h) / 2
  const double h = 0.002;
  CHECK((c - (c0 + 0.5 * force / m * (1.0 + h))).norm() < 1e-6);
  // both bodies turn together at the merged body's rate
  const Vec3 wa = angular_velocity(w.model, w.state, a), wb = angular_velocity(w.model, w.state, b);
  CHECK(wa.norm() > 0.1);
  CHECK((wa - wb).norm() < 1e-3 * wa.norm());
  // the pair's angular momentum about its centre of mass = merged inertia * common rate
  Vec3 l = Vec3::Zero();
  Mat3 merged = Mat3::Zero();
  for (int i : {a, b}) {
    const BodyState& s = w.state.bodies[static_cast<std::size_t>(i)];
    const BodyModel& bm = w.model.bodies[static_cast<std::size_t>(i)];
    const Vec3 r = s.position_m - c;
    l += s.angular_momentum + r.cross(s.linear_momentum - bm.mass_kg * p / m);
    const Mat3 rot = s.orientation.toRotationMatrix();
    merged +=
        rot * bm.inertia_body * rot.transpose() + bm.mass_kg * (r.squaredNorm() * Mat3::Identity() - r * r.transpose());
  }
  CAPTURE((merged * wa - l).norm());
  CHECK((merged * wa - l).norm() < 1e-3 * l.norm());
  CHECK(joint_error(w.model.joints[0], w.state).linear_m < 1e-6);
  CHECK(joint_error(w.model.joints[0], w.state).angular_rad < 1e-6);
}

TEST_CASE("a ball joint keeps two spinning bodies together, and joined bodies never collide") {
  World w;
  w.model.gravity_m_s2 = Vec3::Zero();
  const int a = w.add(half_box(0.3, 0.1, 0.1), 1.0, Vec3(0, 0, 0));
  const int b = w.add(half_box(0.3, 0.1, 0.1), 1.0, Vec3(0.55, 0, 0));  // overlaps a by 5 cm
  w.join(JointKind::ball, a, b, Vec3(0.275, 0, 0));
  set_velocity(w.model, w.state, a, Vec3(0, 0.5, 0), Vec3(1, 2, 0));
  set_velocity(w.model, w.state, b, Vec3(0, -0.5, 0), Vec3(0, -1, 3));
  w.report.reserve_contacts(16);
  double worst = 0;
  for (int k = 0; k < 500; ++k) {
    w.run(0.01);
    worst = std::max(worst, w.report.max_joint_error_m);
    REQUIRE(w.report.contacts.empty());
  }
  CHECK(worst < 1e-6);
  CHECK(joint_error(w.model.joints[0], w.state).linear_m < 1e-6);
}

TEST_CASE("a lock lets a body move only along the axes it leaves free") {
  World w;
  w.model.gravity_m_s2 = Vec3(0, 0, -9.81);
  const int box = w.add(half_box(0.2, 0.2, 0.2), 1.0, Vec3(1, 2, 3));
  JointSpec spec;
  spec.name = "rail";
  spec.kind = JointKind::lock;
  spec.body_a = box;
  spec.locked = 0b110110;  // y, z, turning about y and z: it slides along x and rolls about x
  w.model.joints.push_back(make_joint(spec, w.state));
  w.inputs.wrenches[0].add_world_force_at(Vec3(2, 5, 1), Vec3(0.1, 0.1, 0.1));
  for (int k = 0; k < 100; ++k) w.run(0.01);
  const BodyState& s = w.state.bodies[0];
  CHECK(std::abs(s.position_m.x() - (1 + 0.5 * 2 * 1.0 * (1.0 + 0.002))) < 1e-6);  // x = a t (t + h) / 2
  CHECK(std::abs(s.position_m.y() - 2) < 1e-9);
  CHECK(std::abs(s.position_m.z() - 3) < 1e-9);
  // the body's x axis still lies along world x; it rolled about it
  const Vec3 x_axis = s.orientation * Vec3::UnitX();
  CHECK((x_axis - Vec3::UnitX()).norm() < 1e-6);
  CHECK(angular_velocity(w.model, w.state, box).x() != doctest::Approx(0));
}

TEST_CASE("a chain over a floor: the same bits on 1, 2 and 4 threads") {
  auto build = [](int threads) {
    World w;
    w.model.threads = threads;
    StaticBody floor;
    floor.name = "floor";
    floor.shape = half_space(Vec3::UnitZ(), 0);
    w.model.statics.push_back(floor);
    // 12 chains of 24 capsule links hung from the world and swinging onto the floor
    for (int c = 0; c < 12; ++c) {
      const double y = 0.5 * c;
      int previous = -1;
      for (int k = 0; k < 24; ++k) {
        const Vec3 centre(0.1 + 0.2 * k, y, 1.5);
        const int link = w.add(capsule(0.04, 0.06), 0.2, centre);
        const Vec3 anchor = centre - Vec3(0.1, 0, 0);
        if (previous < 0)
          w.join(JointKind::ball, link, -1, anchor);
        else
          w.join(k % 3 == 0 ? JointKind::hinge : JointKind::ball, link, previous, anchor, Vec3::UnitY());
        previous = link;
      }
    }
    return w;
  };
  World one = build(1), two = build(2), four = build(4);
  std::uint64_t contact_points = 0;
  double worst = 0;
  for (int k = 0; k < 100; ++k) {
    one.run(0.01);
    two.run(0.01);
    four.run(0.01);
    REQUIRE(hash_state(one.state) == hash_state(two.state));
    REQUIRE(hash_state(one.state) == hash_state(four.state));
    contact_points += one.report.contact_points;
    worst = std::max(worst, one.report.max_joint_error_m);
  }
  CHECK(worst < 1e-3);
  CHECK(contact_points > 0);
}

namespace {

// a four-wheeled car: a 20 kg chassis on four suspension sliders (k = 2000 N/m, 150 N s/m),
// each with an upright carrying a wheel (radius 0.1 m) on a hinge about the axle, with brakes;
// on a plane tilted by `slope` (rad) about y, the car facing down the slope (+x)
struct Car {
  World w;
  int chassis = -1;
  std::vector<int> springs, wheels;

  Car(double slope, double brake_nm, double motor_rad_s = 0, double motor_nm = 0) {
    w.model.gravity_m_s2 = Vec3(9.81 * std::sin(slope), 0, -9.81 * std::cos(slope));  // tilt gravity, not the plane
    StaticBody ground;
    ground.name = "ground";
    ground.shape = half_space(Vec3::UnitZ(), 0);
    ground.friction = 0.5;
    w.model.statics.push_back(ground);
    chassis = w.add(half_box(0.5, 0.3, 0.1), 20.0, Vec3(0, 0, 0.45));
    for (int i = 0; i < 4; ++i) {
      const double x = i < 2 ? 0.4 : -0.4, y = i % 2 ? 0.35 : -0.35;
      const int upright = w.add(half_box(0.03, 0.03, 0.03), 2.0, Vec3(x, y, 0.2));
      Shape tyre = cylinder(0.1, 0.03);
      const int wheel = w.add(tyre, 1.0, Vec3(x, y + (y > 0 ? 0.07 : -0.07), 0.1),
                              Quat(Eigen::AngleAxisd(std::numbers::pi / 2, Vec3::UnitZ())));
      w.model.bodies[static_cast<std::size_t>(wheel)].friction = 0.5;
      JointSpec spring;
      spring.name = "spring" + std::to_string(i);
      spring.kind = JointKind::slider;
      spring.body_a = upright;
      spring.body_b = chassis;
      spring.anchor_world_m = Vec3(x, y, 0.2);
      spring.axis_world = Vec3::UnitZ();
      spring.spring_n_m = 2000;
      spring.damper_n_s_m = 150;
      w.model.joints.push_back(make_joint(spring, w.state));
      springs.push_back(static_cast<int>(w.model.joints.size()) - 1);
      JointSpec axle;
      axle.name = "axle" + std::to_string(i);
      axle.kind = JointKind::hinge;
      axle.body_a = wheel;
      axle.body_b = upright;
      axle.anchor_world_m = Vec3(x, y + (y > 0 ? 0.07 : -0.07), 0.1);
      axle.axis_world = Vec3::UnitY();
      axle.brake = brake_nm;
      axle.motor_speed = motor_rad_s;
      axle.motor_max = motor_nm;
      w.model.joints.push_back(make_joint(axle, w.state));
      wheels.push_back(wheel);
    }
  }
  Vec3 position() const { return w.state.bodies[static_cast<std::size_t>(chassis)].position_m; }
};

}  // namespace

TEST_CASE("a car's suspension settles at the static deflection m g / (4 k)") {
  Car car(0.0, 50.0);
  for (int k = 0; k < 300; ++k) car.w.run(0.01);
  // the chassis' 20 kg on four springs: 20 * 9.81 / 4 / 2000 = 24.5 mm each
  for (int s : car.springs) {
    const double travel = joint_position(car.w.model.joints[static_cast<std::size_t>(s)], car.w.state);
    CAPTURE(travel);
    CHECK(travel == doctest::Approx(-20 * 9.81 / 4 / 2000).epsilon(0.01));
  }
  CHECK(linear_velocity(car.w.model, car.w.state, car.chassis).norm() < 1e-3);
}

TEST_CASE("a braked car holds on a slope below the friction angle and slides above it") {
  // pair friction 0.5: the friction angle is atan(0.5) = 26.6 degrees
  Car held(20 * std::numbers::pi / 180, 50.0);
  Car free(20 * std::numbers::pi / 180, 0.0);
  for (int k = 0; k < 100; ++k) held.w.run(0.01), free.w.run(0.01);  // settle on the springs
  const Vec3 start = held.position(), free_start = free.position();
  for (int k = 0; k < 300; ++k) held.w.run(0.01), free.w.run(0.01);
  // without brakes it rolls away (g sin 20 deg = 3.4 m/s^2, already rolling after the settling
  // second: 23.7 m in 3 s); braked, it holds: it creeps by under 2 mm (measured 0.2 mm; 29 mm
  // before the car's joints were solved as one tree, when Gauss-Seidel did not converge on its
  // 13-body island within a loop step, docs/physics.md)
  CAPTURE((held.position() - start).transpose());
  CAPTURE((free.position() - free_start).transpose());
  CHECK((free.position() - free_start).x() > 10.0);
  CHECK((held.position() - start).norm() < 0.002);
  // above it the locked wheels slide: a = g (sin - mu cos)
  const double steep = 35 * std::numbers::pi / 180;
  Car sliding(steep, 50.0);
  for (int k = 0; k < 100; ++k) sliding.w.run(0.01);
  const double v0 = linear_velocity(sliding.w.model, sliding.w.state, sliding.chassis).x();
  for (int k = 0; k < 100; ++k) sliding.w.run(0.01);
  const double v1 = linear_velocity(sliding.w.model, sliding.w.state, sliding.chassis).x();
  const double a = 9.81 * (std::sin(steep) - 0.5 * std::cos(steep));
  CAPTURE(v0);
  CAPTURE(v1);
  CHECK((v1 - v0) / 1.0 == doctest::Approx(a).epsilon(0.05));
  // the wheels did not turn (locked by the brakes)
  // (rolling at this speed would be 30 rad/s)
  for (int wh : sliding.wheels) CHECK(std::abs(angular_velocity(sliding.w.model, sliding.w.state, wh).y()) < 0.5);
}

TEST_CASE("motors on the axles drive a car at the wheels' speed") {
  // 5 rad/s on 0.1 m wheels: 0.5 m/s, within the motors' 20 N m
  Car car(0.0, 0.0, -5.0, 20.0);
  for (int k = 0; k < 300; ++k) car.w.run(0.01);
  const Vec3 v = linear_velocity(car.w.model, car.w.state, car.chassis);
  CAPTURE(v.transpose());
  CHECK(std::abs(std::abs(v.x()) - 0.5) < 0.02);
  CHECK(std::abs(v.y()) < 0.01);
}

TEST_CASE("joint loads: a swinging pendulum's hinge gives exactly the momentum gravity does not") {
  World w = pendulum(1.0, 0.05, 0.6);
  const double dt = 0.01, m = 1.0;
  // not reserved: nothing is filled (and nothing allocated)
  w.run(dt);
  CHECK(w.report.joint_loads.empty());
  w.report.reserve_joint_loads(w.model.joints.size());
  for (int k = 0; k < 200; ++k) {
    const Vec3 p0 = w.state.bodies[0].linear_momentum, l0 = w.state.bodies[0].angular_momentum;
    w.run(dt);
    REQUIRE(w.report.joint_loads.size() == 1);
    const JointLoad& load = w.report.joint_loads[0];
    const Vec3 dp = w.state.bodies[0].linear_momentum - p0, dl = w.state.bodies[0].angular_momentum - l0;
    // gravity is the only other force, and it has no torque about the centre of mass
    CHECK((dp - (m * w.model.gravity_m_s2 * dt + load.impulse_n_s)).norm() < 1e-12);
    CHECK((dl - load.angular_impulse_a_n_m_s).norm() < 1e-12);
    CHECK(load.angular_impulse_b_n_m_s.norm() == 0);  // the world's side
  }
  // the rod's tension along the swing: m g cos(theta) + m v^2 / L (energy: v^2 = 2 g L (cos theta - cos theta0))
  World swing = pendulum(1.0, 0.05, 0.6);
  swing.report.reserve_joint_loads(1);
  const double h = 0.001, len = 1.0;
  for (int k = 0; k < 400; ++k) {
    swing.run(h);
    const Vec3 arm = Vec3(0, 0, 2) - swing.state.bodies[0].position_m;  // bob -> pivot
    const double cos_t = arm.normalized().z();
    const double v2 = linear_velocity(swing.model, swing.state, 0).squaredNorm();
    const Vec3 f = swing.report.joint_loads[0].impulse_n_s / h;
    if (k < 5) continue;  // the first steps start from a state at rest (half a step's turn)
    CAPTURE(k);
    CHECK(f.norm() == doctest::Approx(m * 9.81 * cos_t + m * v2 / len).epsilon(0.01));
    CHECK(f.normalized().dot(arm.normalized()) > 0.999);  // along the rod, toward the pivot
  }
}

TEST_CASE("joint loads: a body at rest on a sprung slider is held by spring and joint together") {
  World w;
  w.add(sphere(0.1), 3.0, Vec3(0, 0, 1));
  const int j = w.join(JointKind::slider, 0, -1, Vec3(0, 0, 1), Vec3::UnitZ());
  w.model.joints[static_cast<std::size_t>(j)].spring_n_m = 500;
  w.model.joints[static_cast<std::size_t>(j)].damper_n_s_m = 60;
  w.report.reserve_joint_loads(1);
  for (int k = 0; k < 400; ++k) w.run(0.01);
  // settled: the spring holds the weight along the axis (travel m g / k), the rows nothing else
  CHECK(std::abs(joint_position(w.model.joints[0], w.state)) == doctest::Approx(3.0 * 9.81 / 500).epsilon(0.01));
  const Vec3 f = w.report.joint_loads[0].impulse_n_s / 0.01;
  CHECK(f.z() == doctest::Approx(3.0 * 9.81).epsilon(1e-3));
  CHECK(Vec3(f.x(), f.y(), 0).norm() < 1e-6);
}

namespace {

// n capsule links of length len along x from `from`, each joined to the one before by a ball
// joint (the first to the world at `from`); returns the first link's body index
int chain_of(World& w, int n, const Vec3& from, double len, double mass = 0.2) {
  const int first = static_cast<int>(w.model.bodies.size());
  for (int k = 0; k < n; ++k) {
    w.add(capsule(0.02, 0.5 * len - 0.02), mass, from + Vec3((k + 0.5) * len, 0, 0));
    w.join(JointKind::ball, first + k, k == 0 ? -1 : first + k - 1, from + Vec3(k * len, 0, 0));
  }
  return first;
}

}  // namespace

TEST_CASE("joint trees: a chain, a cable held at both ends and a closed loop are solved exactly") {
  SUBCASE("a falling chain: one sweep per sub-step while nothing touches, errors near rounding") {
    World w;
    double worst = 0;
    int free_steps = 0;
    chain_of(w, 30, Vec3(0, 0, 0), 0.1);
    for (int k = 0; k < 300; ++k) {
      w.run(0.01);
      if (w.report.contact_points > 0) continue;  // folded onto itself: its links touch
      ++free_steps;
      worst = std::max(worst, w.report.max_joint_error_m);
      CHECK(w.report.max_sweeps == 1);
    }
    MESSAGE("worst " << worst << " over " << free_steps << " steps");
    CHECK(free_steps > 50);
    // the corrections push along the rows of the sub-step's start: where the chain's tip whips
    // round (tenths of a radian per sub-step) four of them leave a micrometre (Gauss-Seidel
    // sweeps left 0.4 mm on a 50-link chain, bench/joints)
    CHECK(worst < 1e-5);
  }
  SUBCASE("both ends to the world (the second end's joint solved with the tree): still exact") {
    // 12 links of 0.5 m laid out as a V between points 5 m apart, 1.66 m deep
    World w;
    double worst = 0;
    std::vector<Vec3> pts;
    const Vec3 corner(2.5, 0, -std::sqrt(3.0 * 3.0 - 2.5 * 2.5));
    for (int k = 0; k <= 12; ++k)
      pts.push_back(k <= 6 ? Vec3(corner * (k / 6.0)) : Vec3(corner + (Vec3(5, 0, 0) - corner) * ((k - 6) / 6.0)));
    for (int k = 0; k < 12; ++k) {
      const Vec3 chord = pts[static_cast<std::size_t>(k) + 1] - pts[static_cast<std::size_t>(k)];
      w.add(capsule(0.02, 0.23), 0.2, 0.5 * (pts[static_cast<std::size_t>(k)] + pts[static_cast<std::size_t>(k) + 1]),
            Quat::FromTwoVectors(Vec3::UnitX(), chord.normalized()));
      w.join(JointKind::ball, k, k == 0 ? -1 : k - 1, pts[static_cast<std::size_t>(k)]);
    }
    w.join(JointKind::ball, 11, -1, pts.back());
    for (int k = 0; k < 300; ++k) {
      w.run(0.01);
      worst = std::max(worst, w.report.max_joint_error_m);
      CHECK(w.report.max_sweeps == 1);
    }
    MESSAGE("worst " << worst);
    CHECK(worst < 1e-8);
    // it swung down from the V to a hanging curve: the middle still below the ends
    CHECK(w.state.bodies[6].position_m.z() < -1.0);
  }
  SUBCASE("a ring of four bodies on ball joints (a loop), spinning in empty space: exact, momentum kept") {
    World w;
    double worst = 0;
    w.model.gravity_m_s2 = Vec3::Zero();
    const double r = 0.5;
    for (int k = 0; k < 4; ++k) {
      const double a = k * std::numbers::pi / 2;
      w.add(sphere(0.05), 1.0 + k, Vec3(r * std::cos(a), r * std::sin(a), 0));
    }
    for (int k = 0; k < 4; ++k) {
      const double a = (k + 0.5) * std::numbers::pi / 2;
      w.join(JointKind::ball, k, (k + 1) % 4, Vec3(r * std::cos(a), r * std::sin(a), 0));
    }
    // a spin about z plus a kick
    Vec3 p_total = Vec3::Zero();
    for (int k = 0; k < 4; ++k) {
      BodyState& b = w.state.bodies[static_cast<std::size_t>(k)];
      const double m = 1.0 + k;
      b.linear_momentum = m * (Vec3(0.3, 0, 0) + Vec3(0, 0, 2.0).cross(b.position_m));
      p_total += b.linear_momentum;
    }
    for (int k = 0; k < 200; ++k) {
      w.run(0.01);
      worst = std::max(worst, w.report.max_joint_error_m);
    }
    MESSAGE("worst " << worst);
    CHECK(worst < 1e-8);
    Vec3 p = Vec3::Zero();
    for (const BodyState& b : w.state.bodies) p += b.linear_momentum;
    CHECK((p - p_total).norm() < 1e-9);
  }
}

TEST_CASE("joint_rate is the rate of joint_position (a hinge swinging, a slider sliding)") {
  World w = pendulum(1.0, 0.05, 0.6);
  const int slider_body = w.add(sphere(0.1), 2.0, Vec3(3, 0, 1));
  w.join(JointKind::slider, slider_body, -1, Vec3(3, 0, 1), Vec3(1, 0, -1).normalized());
  const double h = 0.001;
  for (int k = 0; k < 300; ++k) {
    const double a0 = joint_position(w.model.joints[0], w.state), s0 = joint_position(w.model.joints[1], w.state);
    const double ra = joint_rate(w.model.joints[0], w.model, w.state),
                 rs = joint_rate(w.model.joints[1], w.model, w.state);
    w.run(h);
    const double ra1 = joint_rate(w.model.joints[0], w.model, w.state),
                 rs1 = joint_rate(w.model.joints[1], w.model, w.state);
    // the change over the step against the mean of the rates at its ends (second order in h)
    CHECK(joint_position(w.model.joints[0], w.state) - a0 == doctest::Approx(0.5 * (ra + ra1) * h).epsilon(1e-3));
    if (k > 0)
      CHECK(joint_position(w.model.joints[1], w.state) - s0 == doctest::Approx(0.5 * (rs + rs1) * h).epsilon(1e-3));
  }
  // sliding down its 45 degree rail (the travel counts the world's side relative to the ball's)
  CHECK(joint_rate(w.model.joints[1], w.model, w.state) < -0.5);
}
