// SPDX-License-Identifier: Apache-2.0
// The stand-in vehicle: the model's own physics with hidden differences, noise and delay.
#include <doctest/doctest.h>

#include <cmath>

#include "tether/scenario/scenario.hpp"
#include "tether/loop/stand_in_vehicle.hpp"

using namespace tether::runtime;

namespace {

const char* scenario_text = R"(name: stand_in
world:
  gravity_m_s2: [0, 0, -9.81]
  water: {density_kg_m3: 1000, surface_z_m: 0}
vehicles:
  - name: auv
    bodies:
      - name: hull
        shape: {type: cylinder, radius_m: 0.1, length_m: 1.2}
        mass_kg: 37.7
        damping: {linear: [10, 30, 30], quadratic: [20, 80, 80]}
        initial: {position_m: [0, 0, -2]}
        devices:
          - name: thruster
            kind: thruster
            mount: {position_m: [-0.55, 0, 0]}
            params: {model: first_order, max_thrust_n: 20, max_speed_rad_s: 250, time_constant_s: 0.05}
loop: {period_ms: 10, real_time_factor: 0, steps: 10}
)";

}  // namespace

TEST_CASE("stand-in vehicle: without hidden differences it is the model") {
  const Scenario sc = parse_scenario(scenario_text, "stand_in.yaml");
  StandInVehicle truth(sc, 0, HiddenParams{}, 7);
  const int thruster = truth.find_device("auv.hull.thruster");
  REQUIRE(thruster >= 0);
  const double u = 0.5;
  CHECK(truth.command_values(static_cast<std::size_t>(thruster), &u, 1));
  CHECK_FALSE(truth.command_values(9999, &u, 1));

  WorldState reference = sc.initial;
  for (int i = 0; i < 50; ++i) REQUIRE(truth.advance(0.01) == StepStatus::ok);
  // the same physics without the thruster stays put in x; with it the vehicle moves forward
  StepInputs none;
  none.resize(sc.model.bodies.size());
  for (int i = 0; i < 50; ++i) REQUIRE(step(sc.model, reference, none, 0.01) == StepStatus::ok);
  CHECK(truth.state().step == reference.step);
  CHECK(truth.state().time_ns == reference.time_ns);
  CHECK(truth.state().bodies[0].position_m.x() > reference.bodies[0].position_m.x() + 0.01);
  // perfect sensors: the measurement is the state
  const Measurement m = truth.measure();
  CHECK(m.has_pose);
  CHECK(m.measured_time_ns == truth.state().time_ns);
  CHECK((m.position_m - truth.state().bodies[0].position_m).norm() == 0.0);
  CHECK_FALSE(m.has_covariance);
}

TEST_CASE("stand-in vehicle: hidden drag and thrust make it slower and noise and delay show in measurements") {
  const Scenario sc = parse_scenario(scenario_text, "stand_in.yaml");
  StandInVehicle model_twin(sc, 0, HiddenParams{}, 7);
  HiddenParams h;
  h.drag_scale = 1.5;
  h.thrust_scale = 0.8;
  h.buoyancy_offset_n = -5;
  h.current_m_s = Vec3(0, 0.1, 0);
  h.position_noise_m = 0.01;
  h.delay_steps = 3;
  StandInVehicle real(sc, 0, h, 7);
  const double u = 1.0;
  for (StandInVehicle* v : {&model_twin, &real})
    CHECK(v->command_values(static_cast<std::size_t>(v->find_device("auv.hull.thruster")), &u, 1));
  for (int i = 0; i < 200; ++i) {
    REQUIRE(model_twin.advance(0.01) == StepStatus::ok);
    REQUIRE(real.advance(0.01) == StepStatus::ok);
  }
  const Vec3 twin = model_twin.state().bodies[0].position_m;
  const Vec3 truth = real.state().bodies[0].position_m;
  CHECK(truth.x() < twin.x() - 0.05);  // less thrust, more drag
  CHECK(truth.y() > twin.y() + 0.05);  // carried by the current
  CHECK(truth.z() < twin.z());         // heavier
  const Measurement m = real.measure();
  CHECK(m.measured_time_ns == real.state().time_ns - 3 * 10'000'000);
  CHECK(m.has_covariance);
  CHECK(m.pose_covariance(0, 0) == doctest::Approx(1e-4));
  CHECK((m.position_m - truth).norm() < 1.0);
  CHECK_THROWS_AS(StandInVehicle(sc, 3, h, 1), std::invalid_argument);
}

TEST_CASE("stand-in vehicle: angular velocity noise, as bench/correction's survey vehicle measures") {
  const Scenario sc = parse_scenario(scenario_text, "stand_in.yaml");
  HiddenParams h;
  h.angular_velocity_noise_rad_s = 0.005;
  StandInVehicle real(sc, 0, h, 11);
  StepInputs spin;
  spin.resize(sc.model.bodies.size());
  spin.wrenches[0].torque_body_nm = Vec3(0, 0, 2);
  double sum_sq = 0;
  const int n = 400;
  for (int i = 0; i < n; ++i) {
    REQUIRE(real.advance(spin, 0.01) == StepStatus::ok);
    const Measurement m = real.measure();
    const Vec3 e = m.angular_velocity_rad_s - angular_velocity(real.model(), real.state(), 0);
    sum_sq += e.squaredNorm();
  }
  // the sample standard deviation of 1,200 draws within 10 % of the stated one
  CHECK(std::sqrt(sum_sq / (3 * n)) == doctest::Approx(0.005).epsilon(0.1));
  // without it the rates are exact
  StandInVehicle exact(sc, 0, HiddenParams{}, 11);
  REQUIRE(exact.advance(spin, 0.01) == StepStatus::ok);
  CHECK((exact.measure().angular_velocity_rad_s - angular_velocity(exact.model(), exact.state(), 0)).norm() == 0.0);
}

TEST_CASE("stand-in vehicle: a prediction takes another vehicle's spinning rotors, not rotors at rest") {
  const Scenario sc = parse_scenario(scenario_text, "stand_in.yaml");
  StandInVehicle truth(sc, 0, HiddenParams{}, 7);
  const auto thruster = static_cast<std::size_t>(truth.find_device("auv.hull.thruster"));
  const double u = 1.0;
  REQUIRE(truth.command_values(thruster, &u, 1));
  for (int i = 0; i < 30; ++i) REQUIRE(truth.advance(0.01) == StepStatus::ok);
  // two predictions from the truth's state: one with its devices, one fresh
  StandInVehicle taken(sc, 0, HiddenParams{}, 1), fresh(sc, 0, HiddenParams{}, 1);
  REQUIRE(taken.take_devices_from(truth));
  for (StandInVehicle* v : {&taken, &fresh}) {
    v->set_state(truth.state());
    REQUIRE(v->command_values(thruster, &u, 1));
  }
  for (int i = 0; i < 20; ++i) {
    REQUIRE(truth.advance(0.01) == StepStatus::ok);
    REQUIRE(taken.advance(0.01) == StepStatus::ok);
    REQUIRE(fresh.advance(0.01) == StepStatus::ok);
  }
  // the same vehicle from the same state and rotors: the same path; from rotors at rest it lags
  CHECK((taken.state().bodies[0].position_m - truth.state().bodies[0].position_m).norm() == 0.0);
  CHECK(fresh.state().bodies[0].position_m.x() < truth.state().bodies[0].position_m.x() - 1e-4);
  // another device table: refused, nothing taken
  Scenario other = sc;
  other.devices.pop_back();
  StandInVehicle bare(other, 0, HiddenParams{}, 1);
  CHECK_FALSE(bare.take_devices_from(truth));
}
