// SPDX-License-Identifier: Apache-2.0
#include "tether/hal/actuators.hpp"

#include <cmath>

#include <doctest/doctest.h>

#include "hal_test_util.hpp"

using namespace tether::hal;
using namespace tether::hal::test;

TEST_CASE("thruster: command saturation, dead band and Ct Omega |Omega|") {
  ThrusterParams p = resolve_thruster(ThrusterParams{});
  CHECK(p.ct == doctest::Approx(10.0 / (300.0 * 300.0)));
  CHECK(thruster_command(p, 2.0) == 1.0);
  CHECK(thruster_command(p, -7.0) == -1.0);
  CHECK(thruster_command(p, std::nan("")) == 0.0);
  p.dead_band = 0.05;
  CHECK(thruster_command(p, 0.04) == 0.0);
  CHECK(thruster_command(p, -0.06) == -0.06);
  CHECK(thruster_thrust(p, 300) == doctest::Approx(10.0));
  CHECK(thruster_thrust(p, -150) == doctest::Approx(-2.5));
  p.reverse_ratio = 0.6;
  CHECK(thruster_thrust(p, -150) == doctest::Approx(-1.5));
}

TEST_CASE("thruster: first-order step response is Omega_ss (1 - exp(-t / tau))") {
  ThrusterParams p = resolve_thruster(ThrusterParams{});
  p.time_constant_s = 0.2;
  double w = 0;
  for (int k = 1; k <= 50; ++k) {
    w = thruster_advance(p, w, 0.5, 0.01).speed_rad_s;
    const double t = 0.01 * k;
    REQUIRE(w == doctest::Approx(150.0 * (1.0 - std::exp(-t / 0.2))).epsilon(1e-12));
  }
  CHECK(thruster_steady_speed(p, 0.5) == 150.0);
}

TEST_CASE("thruster: Yoerger's model settles at sqrt(beta u / alpha)") {
  ThrusterParams p;
  p.model = RotorModel::yoerger;
  p.alpha = 0.02;
  p.beta = 1500;
  p = resolve_thruster(p);
  CHECK(p.alpha == 0.02);  // given coefficients are kept
  for (double u : {1.0, 0.3, -0.6}) {
    double w = 0;
    RotorStep step;
    for (int k = 0; k < 500; ++k) {
      step = thruster_advance(p, w, u, 0.01);
      w = step.speed_rad_s;
    }
    const double expected = (u < 0 ? -1 : 1) * std::sqrt(p.beta * std::abs(u) / p.alpha);
    CHECK(w == doctest::Approx(expected).epsilon(1e-9));
    CHECK(thruster_steady_speed(p, u) == doctest::Approx(expected));
    // at steady state the mean thrust over a step is the thrust of that speed
    CHECK(step.mean_thrust_n == doctest::Approx(p.ct * expected * std::abs(expected)).epsilon(1e-9));
  }
  SUBCASE("derived coefficients: full command gives max speed with the given small-signal tau") {
    ThrusterParams d;
    d.model = RotorModel::yoerger;
    d = resolve_thruster(d);
    CHECK(thruster_steady_speed(d, 1.0) == doctest::Approx(d.max_speed_rad_s));
    CHECK(1.0 / (2.0 * d.alpha * d.max_speed_rad_s) == doctest::Approx(d.time_constant_s));
  }
  SUBCASE("the rotor follows dOmega/dt = beta u - alpha Omega |Omega| from rest") {
    // from rest with u = 1 the solution is Omega_ss tanh(t sqrt(alpha beta))
    double w = 0;
    for (int k = 0; k < 10; ++k) w = thruster_advance(p, w, 1.0, 0.005).speed_rad_s;
    const double ss = std::sqrt(p.beta / p.alpha);
    CHECK(w == doctest::Approx(ss * std::tanh(0.05 * std::sqrt(p.alpha * p.beta))).epsilon(1e-8));
  }
}

TEST_CASE("thruster device: force along the mount axis at the mount point, none out of the water") {
  SimpleWorld w = make_world();
  w.water.present = true;
  w.bodies[0].position_m = Vec3(0, 0, -1);
  DeviceSpec s = make_spec(TETHER_KIND_THRUSTER, "lateral");
  auto& p = std::get<ThrusterParams>(s.params);
  p.time_constant_s = 1e-3;  // quick: steady within a step
  s.mount.position_m = Vec3(0.5, 0, 0);
  s.mount.orientation = rpy(0, 0, pi / 2);  // pushes to the left (body +y)
  ActuatorState st;
  Wrench out;
  const double u = 1.0;
  for (int k = 0; k < 20; ++k) {
    out.clear();
    actuate_device(s, &u, st, w, 0.01, out);
  }
  CHECK(st.x[0] == doctest::Approx(300.0));
  CHECK(out.force_body_n.isApprox(Vec3(0, 10.0, 0), 1e-6));
  CHECK(out.torque_body_nm.isApprox(Vec3(0, 0, 5.0), 1e-6));  // 0.5 m x 10 N about z
  w.bodies[0].position_m.z() = 1;                             // the vehicle lifted out of the water
  out.clear();
  actuate_device(s, &u, st, w, 0.01, out);
  CHECK(out.force_body_n.norm() == 0.0);
}

TEST_CASE("dc motor: armature torque and steady-state speed") {
  DcMotorParams p;
  CHECK(dc_motor_torque(p, 12, 0) == doctest::Approx(0.05 * 12 / 1.0));
  CHECK(dc_motor_torque(p, 12, 100) == doctest::Approx(0.05 * (12 - 5) / 1.0));
  CHECK(dc_motor_torque(p, 100, 0) == dc_motor_torque(p, 12, 0));  // clamped to the supply
  // no load: K_T (V - K_E w) / R = b w  =>  w = K_T V / (K_T K_E + b R)
  double w = 0, torque = 0, thrust = 0;
  for (int k = 0; k < 200; ++k) w = dc_motor_advance(p, w, 6.0, 0.01, torque, thrust);
  CHECK(w == doctest::Approx(0.05 * 6.0 / (0.05 * 0.05 + 1e-5 * 1.0)).epsilon(1e-9));
  CHECK(torque == doctest::Approx(0).scale(1e-3));  // nothing left to accelerate
  SUBCASE("the body feels the stator's reaction while the rotor spins up") {
    SimpleWorld world = make_world();
    DeviceSpec s = make_spec(TETHER_KIND_DC_MOTOR, "motor");
    ActuatorState st;
    Wrench out;
    const double volts = 12;
    actuate_device(s, &volts, st, world, 0.001, out);
    CHECK(out.torque_body_nm.x() < 0);
    CHECK(out.torque_body_nm.x() == doctest::Approx(-0.6).epsilon(0.05));
  }
}

TEST_CASE("fin: lift and drag against the angle of attack and flow speed") {
  FinParams p;
  p.area_m2 = 0.02;
  const double rho = 1000, speed = 2.0, q = 0.5 * rho * speed * speed * p.area_m2;
  SUBCASE("aligned with the flow: drag only") {
    const Vec3 f = fin_force(p, 0, Vec3(speed, 0, 0), rho);
    CHECK(f.x() == doctest::Approx(-q * p.cd0));
    CHECK(f.y() == doctest::Approx(0).scale(1));
  }
  SUBCASE("small deflection: lift = q S cl_alpha a toward the deflection") {
    const double a = 5 * deg;
    const Vec3 f = fin_force(p, a, Vec3(speed, 0, 0), rho);
    CHECK(f.y() == doctest::Approx(q * p.cl_alpha_per_rad * a));
    CHECK(f.x() == doctest::Approx(-q * (p.cd0 + p.cd_alpha * std::sin(a) * std::sin(a))));
  }
  SUBCASE("sideslip without deflection: the fin resists it") {
    CHECK(fin_force(p, 0, Vec3(speed, 0.2, 0), rho).y() < 0);
  }
  SUBCASE("beyond stall the lift coefficient holds at the stall value") {
    const Vec3 f = fin_force(p, 40 * deg, Vec3(speed, 0, 0), rho);
    CHECK(f.y() == doctest::Approx(q * p.cl_alpha_per_rad * 20 * deg));
  }
  SUBCASE("force grows with the square of the speed; no flow, no force") {
    const Vec3 f1 = fin_force(p, 0.1, Vec3(1, 0, 0), rho), f2 = fin_force(p, 0.1, Vec3(2, 0, 0), rho);
    CHECK(f2.y() == doctest::Approx(4 * f1.y()));
    CHECK(fin_force(p, 0.1, Vec3::Zero(), rho).norm() == 0);
  }
  SUBCASE("the fin device: deflection limited by max angle and rate; force in the body frame") {
    SimpleWorld w = make_world();
    w.water.present = true;
    w.bodies[0].position_m = Vec3(0, 0, -2);
    w.bodies[0].linear_velocity_m_s = Vec3(speed, 0, 0);
    DeviceSpec s = make_spec(TETHER_KIND_FIN, "rudder");
    auto& fp = std::get<FinParams>(s.params);
    fp.area_m2 = p.area_m2;
    fp.rate_deg_s = 100;
    s.mount.position_m = Vec3(-0.6, 0, 0);
    ActuatorState st;
    Wrench out;
    const double cmd = 1.0;  // more than max_angle (30°)
    actuate_device(s, &cmd, st, w, 0.1, out);
    CHECK(st.x[0] == doctest::Approx(10 * deg));  // 100°/s for 0.1 s
    for (int k = 0; k < 5; ++k) actuate_device(s, &cmd, st, w, 0.1, out);
    CHECK(st.x[0] == doctest::Approx(30 * deg));
    out.clear();
    actuate_device(s, &cmd, st, w, 0.1, out);
    CHECK(out.force_body_n.y() == doctest::Approx(q * fp.cl_alpha_per_rad * 20 * deg));
    CHECK(out.torque_body_nm.z() == doctest::Approx(-0.6 * out.force_body_n.y()));
  }
}

TEST_CASE("servo: rate-limited position within its range") {
  CHECK(rate_limited(0, 1, 2, 0.1) == doctest::Approx(0.2));
  CHECK(rate_limited(0.95, 1, 2, 0.1) == 1.0);
  CHECK(rate_limited(0, -1, 0, 0.1) == -1.0);
  SimpleWorld w = make_world();
  DeviceSpec s = make_spec(TETHER_KIND_SERVO, "servo");  // ±90°, 60°/s
  ActuatorState st;
  Wrench out;
  const double target = 2.0;  // beyond 90°: clamped
  for (int k = 0; k < 10; ++k) actuate_device(s, &target, st, w, 0.1, out);
  CHECK(st.x[0] == doctest::Approx(60 * deg));
  for (int k = 0; k < 10; ++k) actuate_device(s, &target, st, w, 0.1, out);
  CHECK(st.x[0] == doctest::Approx(90 * deg));
  CHECK(out.force_body_n.norm() == 0);
}

TEST_CASE("wheel drive: slip forces at the wheel contacts") {
  SimpleWorld w = make_world();
  w.planes.push_back({Vec3(0, 0, 1), 0.0});  // ground at z = 0
  w.bodies[0].position_m = Vec3(0, 0, 0.1);
  w.bodies[0].mass_kg = 4;
  DeviceSpec s = make_spec(TETHER_KIND_WHEEL_DRIVE, "drive");
  auto& p = std::get<WheelDriveParams>(s.params);
  s.mount.position_m = Vec3(0, 0, -0.05);  // axle 5 cm below the centre: hubs at 0.05 m
  const double limit = p.friction * 0.5 * 4 * 9.81;
  ActuatorState st;
  Wrench out;
  SUBCASE("both forward from rest: forward push, saturated at friction x load") {
    const double u[2] = {1, 1};
    for (int k = 0; k < 50; ++k) {
      out.clear();
      actuate_device(s, u, st, w, 0.01, out);
    }
    CHECK(st.x[0] == doctest::Approx(20 * (1 - std::exp(-0.5 / 0.05))).epsilon(1e-12));
    CHECK(out.force_body_n.x() == doctest::Approx(2 * limit));
    CHECK(out.force_body_n.y() == doctest::Approx(0).scale(1));
    CHECK(out.torque_body_nm.z() == doctest::Approx(0).scale(1));
  }
  SUBCASE("opposite commands: a turn on the spot") {
    const double u[2] = {-0.5, 0.5};  // left back, right forward: turn left (+z, z up)
    for (int k = 0; k < 50; ++k) {
      out.clear();
      actuate_device(s, u, st, w, 0.01, out);
    }
    CHECK(out.force_body_n.x() == doctest::Approx(0).scale(1));
    CHECK(out.torque_body_nm.z() == doctest::Approx(2 * limit * 0.15));
  }
  SUBCASE("rolling at the wheel speed: no slip, no force") {
    const double u[2] = {0.5, 0.5};
    st.x = {10, 10};
    w.bodies[0].linear_velocity_m_s = Vec3(10 * p.wheel_radius_m, 0, 0);
    actuate_device(s, u, st, w, 0.01, out);
    CHECK(out.force_body_n.norm() == doctest::Approx(0).scale(1));
  }
  SUBCASE("lifted off the ground: the wheels spin freely") {
    w.bodies[0].position_m.z() = 1.0;
    const double u[2] = {1, 1};
    actuate_device(s, u, st, w, 0.01, out);
    CHECK(out.force_body_n.norm() == 0);
    CHECK(st.x[0] > 0);
  }
}
