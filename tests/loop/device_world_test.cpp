// SPDX-License-Identifier: Apache-2.0
#include "tether/loop/device_world.hpp"

#include <cmath>
#include <numbers>

#include <doctest/doctest.h>

#include "tether/hal/device_bank.hpp"
#include "tether/physics/math.hpp"

using namespace tether;
using namespace tether::runtime;

namespace {

constexpr double pi = std::numbers::pi;

StaticBody plane(const char* name, Vec3 normal, double offset) {
  StaticBody b;
  b.name = name;
  b.shape.kind = ShapeKind::plane;
  b.shape.normal = normal;
  b.shape.offset_m = offset;
  return b;
}

// a 20 x 10 x 8 m tank (floor at z = -8, walls at x = ±10, y = ±5) with water up to z = 0
// and one neutrally buoyant sphere of radius 0.2 m
struct Tank {
  WorldModel model;
  WorldState state;

  Tank() {
    model.water.present = true;
    model.water.density_kg_m3 = 1000;
    model.statics = {plane("floor", {0, 0, 1}, -8), plane("x_min", {1, 0, 0}, -10), plane("x_max", {-1, 0, 0}, -10),
                     plane("y_min", {0, 1, 0}, -5), plane("y_max", {0, -1, 0}, -5)};
    add_body("auv.hull", Shape{});
    model.bodies[0].shape.radius_m = 0.2;
    finish_body_model(model.bodies[0], nullptr, nullptr);
    model.bodies[0].mass_kg = model.bodies[0].volume_m3 * 1000;  // neutral
    model.bodies[0].inv_mass = 1.0 / model.bodies[0].mass_kg;
    state.bodies[0].position_m = Vec3(0, 0, -3);
  }
  int add_body(const char* name, Shape shape) {
    BodyModel b;
    b.name = name;
    b.shape = shape;
    b.mass_kg = 10;
    finish_body_model(b, nullptr, nullptr);
    model.bodies.push_back(b);
    state.bodies.emplace_back();
    return static_cast<int>(model.bodies.size() - 1);
  }
};

}  // namespace

TEST_CASE("device world: kinematics, water and gravity from the model and state") {
  Tank t;
  set_velocity(t.model, t.state, 0, Vec3(1, 2, 3), Vec3(0, 0, 0.5));
  t.state.bodies[0].orientation = quat_from_rpy(0, 0, 0.3);
  DeviceWorld view(t.model);
  view.update(t.state, nullptr, 0.01);
  REQUIRE(view.bodies.size() == 1);
  CHECK(view.bodies[0].position_m.isApprox(Vec3(0, 0, -3)));
  CHECK(view.bodies[0].linear_velocity_m_s.isApprox(Vec3(1, 2, 3)));
  CHECK(view.bodies[0].angular_velocity_rad_s.isApprox(Vec3(0, 0, 0.5)));
  CHECK(view.bodies[0].orientation.isApprox(quat_from_rpy(0, 0, 0.3)));
  CHECK(view.bodies[0].mass_kg == t.model.bodies[0].mass_kg);
  CHECK(view.water.present);
  CHECK(view.water.density_kg_m3 == 1000);
  CHECK(view.gravity_m_s2.isApprox(Vec3(0, 0, -9.81)));
}

TEST_CASE("device world: update_kinematics refreshes what actuators read, to the bit, and keeps the accelerations") {
  Tank t;
  set_velocity(t.model, t.state, 0, Vec3(1, 2, 3), Vec3(0, 0, 0.5));
  t.state.bodies[0].orientation = quat_from_rpy(0.1, -0.2, 0.3);
  t.state.bodies[0].position_m = Vec3(1.5, -2, -4);
  DeviceWorld whole(t.model), kinematics(t.model);
  whole.update(t.state, nullptr, 0.01);
  // earlier accelerations in the view stay as they were
  kinematics.bodies[0].linear_acceleration_m_s2 = Vec3(7, 8, 9);
  kinematics.bodies[0].angular_acceleration_rad_s2 = Vec3(-1, -2, -3);
  kinematics.update_kinematics(t.state);
  const hal::BodyKinematics& a = whole.bodies[0];
  const hal::BodyKinematics& b = kinematics.bodies[0];
  CHECK(a.position_m == b.position_m);
  CHECK(a.orientation.coeffs() == b.orientation.coeffs());
  CHECK(a.linear_velocity_m_s == b.linear_velocity_m_s);
  CHECK(a.angular_velocity_rad_s == b.angular_velocity_rad_s);
  CHECK(a.mass_kg == b.mass_kg);
  CHECK(b.linear_acceleration_m_s2 == Vec3(7, 8, 9));
  CHECK(b.angular_acceleration_rad_s2 == Vec3(-1, -2, -3));
  // ray casts read the state it was given
  CHECK(kinematics.ray_cast(Vec3(0, 0, -1), Vec3(0, 0, -1), 20, 0).hit);
}

TEST_CASE("device world: accelerations") {
  Tank t;
  DeviceWorld view(t.model);
  SUBCASE("neutrally buoyant at rest: no acceleration, the accelerometer reads +g up") {
    view.update(t.state, nullptr, 0.01);
    CHECK(view.bodies[0].linear_acceleration_m_s2.norm() == doctest::Approx(0).scale(1e-6));
    hal::DeviceSpec accel;
    accel.name = {"auv", "hull", "accel"};
    accel.kind = TETHER_KIND_ACCEL;
    accel.body = 0;
    hal::Sample s;
    hal::measure(accel, view, 0, s);
    CHECK(s.ch[2] == doctest::Approx(-9.81));  // +9.81 up = -9.81 along z down
  }
  SUBCASE("out of the water it falls: a = g") {
    t.state.bodies[0].position_m.z() = 5;
    view.update(t.state, nullptr, 0.01);
    CHECK(view.bodies[0].linear_acceleration_m_s2.isApprox(Vec3(0, 0, -9.81), 1e-9));
  }
  SUBCASE("finite differences of the velocities when the previous state is given") {
    WorldState before = t.state;
    set_velocity(t.model, before, 0, Vec3(0, 0, 0), Vec3(0, 0, 0));
    set_velocity(t.model, t.state, 0, Vec3(0.02, 0, 0), Vec3(0, 0, 0.1));
    view.update(t.state, &before, 0.01);
    CHECK(view.bodies[0].linear_acceleration_m_s2.isApprox(Vec3(2, 0, 0), 1e-9));
    CHECK(view.bodies[0].angular_acceleration_rad_s2.isApprox(Vec3(0, 0, 10), 1e-9));
  }
}

TEST_CASE("basic_ray_cast: planes and every body shape against analytic distances") {
  Tank t;
  const Vec3 o(0, 0, -3);
  SUBCASE("tank walls and floor, ignoring the sensor's own body") {
    CHECK(basic_ray_cast(t.model, t.state, o, Vec3(1, 0, 0), 100, 0).distance_m == doctest::Approx(10));
    CHECK(basic_ray_cast(t.model, t.state, o, Vec3(0, 0, -1), 100, 0).distance_m == doctest::Approx(5));
    const double a = 30 * pi / 180;
    CHECK(basic_ray_cast(t.model, t.state, o, Vec3(0, std::cos(a), -std::sin(a)), 100, 0).distance_m ==
          doctest::Approx(5 / std::cos(a)));
    CHECK_FALSE(basic_ray_cast(t.model, t.state, o, Vec3(0, 0, 1), 100, 0).hit);  // open top
    CHECK_FALSE(basic_ray_cast(t.model, t.state, o, Vec3(1, 0, 0), 9.9, 0).hit);
    const hal::RayHit own = basic_ray_cast(t.model, t.state, o, Vec3(1, 0, 0), 100, -1);
    CHECK(own.distance_m == 0);  // starts inside its own sphere
    CHECK(own.body == 0);
  }
  SUBCASE("a box, turned 45 degrees about z") {
    Shape box;
    box.kind = ShapeKind::box;
    box.half_extents_m = Vec3(0.5, 0.5, 0.5);
    const int id = t.add_body("obstacle.box", box);
    t.state.bodies[static_cast<std::size_t>(id)].position_m = Vec3(4, 0, -3);
    t.state.bodies[static_cast<std::size_t>(id)].orientation = quat_from_rpy(0, 0, pi / 4);
    const hal::RayHit h = basic_ray_cast(t.model, t.state, o, Vec3(1, 0, 0), 100, 0);
    CHECK(h.body == id);
    CHECK(h.distance_m == doctest::Approx(4 - 0.5 * std::sqrt(2.0)));
  }
  SUBCASE("a cylinder along x: side and end cap") {
    Shape cyl;
    cyl.kind = ShapeKind::cylinder;
    cyl.radius_m = 0.3;
    cyl.half_length_m = 1.0;
    const int id = t.add_body("obstacle.cyl", cyl);
    t.state.bodies[static_cast<std::size_t>(id)].position_m = Vec3(3, 2, -3);
    CHECK(basic_ray_cast(t.model, t.state, Vec3(3, 0, -3), Vec3(0, 1, 0), 100, 0).distance_m == doctest::Approx(1.7));
    CHECK(basic_ray_cast(t.model, t.state, Vec3(0, 2, -3), Vec3(1, 0, 0), 100, 0).distance_m == doctest::Approx(2.0));
  }
  SUBCASE("a capsule along x: the rounded end") {
    Shape cap;
    cap.kind = ShapeKind::capsule;
    cap.radius_m = 0.25;
    cap.half_length_m = 0.5;
    const int id = t.add_body("obstacle.cap", cap);
    t.state.bodies[static_cast<std::size_t>(id)].position_m = Vec3(3, 0, -3);
    CHECK(basic_ray_cast(t.model, t.state, o, Vec3(1, 0, 0), 100, 0).distance_m == doctest::Approx(2.25));
    CHECK(basic_ray_cast(t.model, t.state, Vec3(3.5, -2, -3), Vec3(0, 1, 0), 100, 0).distance_m ==
          doctest::Approx(1.75));
  }
}

TEST_CASE("device world + bank + physics: sensors see the world, thrusters move it") {
  Tank t;
  t.model.bodies[0].damping.linear = Vec3(20, 20, 20);
  hal::DeviceSpec psd;
  psd.name = {"auv", "hull", "psd"};
  psd.kind = TETHER_KIND_RANGE;
  psd.body = 0;
  psd.params = hal::RayParams{0, 20, 0, 1};
  psd.mount.position_m = Vec3(0.2, 0, 0);
  hal::DeviceSpec depth = psd;
  depth.name.device = "depth";
  depth.kind = TETHER_KIND_DEPTH;
  depth.params = hal::DepthParams{};
  hal::DeviceSpec thruster = psd;
  thruster.name.device = "thruster";
  thruster.kind = TETHER_KIND_THRUSTER;
  thruster.params = hal::ThrusterParams{};
  thruster.mount.position_m = Vec3(-0.2, 0, 0);
  hal::DeviceBank bank({psd, depth, thruster}, 42, t.model.bodies.size());

  DeviceWorld view(t.model);
  StepInputs inputs;
  inputs.resize(t.model.bodies.size());
  std::vector<hal::Wrench> wrenches;
  std::uint8_t cmd[TETHER_THRUSTER_SIZE];
  tether_put_f32le(cmd, 1.0f);
  REQUIRE(bank.command(2, cmd, sizeof cmd) == hal::Status::ok);
  const double dt = 0.01;
  WorldState before = t.state;
  for (int k = 0; k < 100; ++k) {
    view.update(t.state, k ? &before : nullptr, dt);
    inputs.clear();
    bank.actuate(view, dt, wrenches);
    add_device_wrenches(wrenches, inputs);
    before = t.state;
    REQUIRE(step(t.model, t.state, inputs, dt) == StepStatus::ok);
    view.update(t.state, &before, dt);
    bank.sense(view, t.state.time_ns);
  }
  const double x = t.state.bodies[0].position_m.x();
  CHECK(x > 0.05);  // pushed forward (10 N on 33.5 kg against 20 N/(m/s) for 1 s)
  hal::DeviceHandle h;
  REQUIRE(bank.open("auv.hull.psd", h) == hal::Status::ok);
  std::uint8_t reading[TETHER_RANGE_SIZE];
  REQUIRE(bank.get(h, reading, sizeof reading) == hal::Status::ok);
  CHECK(tether_get_f32le(reading) == doctest::Approx(10 - x - 0.2).epsilon(1e-5));
  REQUIRE(bank.open("auv.hull.depth", h) == hal::Status::ok);
  std::uint8_t d[TETHER_DEPTH_SIZE];
  REQUIRE(bank.get(h, d, sizeof d) == hal::Status::ok);
  CHECK(tether_get_f32le(d) == doctest::Approx(-t.state.bodies[0].position_m.z()).epsilon(1e-5));
}

TEST_CASE("add_device_wrenches adds body-frame parts only") {
  StepInputs inputs;
  inputs.resize(2);
  inputs.wrenches[1].force_body_n = Vec3(1, 0, 0);
  std::vector<hal::Wrench> w(2);
  w[1].force_body_n = Vec3(2, 0, 0);
  w[1].torque_body_nm = Vec3(0, 0, 3);
  add_device_wrenches(w, inputs);
  CHECK(inputs.wrenches[1].force_body_n.isApprox(Vec3(3, 0, 0)));
  CHECK(inputs.wrenches[1].torque_body_nm.isApprox(Vec3(0, 0, 3)));
  CHECK(inputs.wrenches[0].is_zero());
  CHECK(inputs.wrenches[1].force_world_n.isZero());
}
