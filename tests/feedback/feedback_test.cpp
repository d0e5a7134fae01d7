// SPDX-License-Identifier: Apache-2.0
// The feedback processors against hand-computed cases, and `estimate` against synthetic data
// from a truth model (the runtime's own step() on a copy of the model with other parameters).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <optional>
#include <random>

#include <unistd.h>
#include <string>

#include <nlohmann/json.hpp>

#include "tether/feedback/feedback.hpp"
#include "tether/scenario/scenario.hpp"
#include "tether/recording/recorder.hpp"
#include "tether/loop/recorder_inputs.hpp"
#include "tether/loop/replay_endpoint.hpp"
#include "tether/loop/session.hpp"

using namespace tether::runtime;

namespace {

// an AUV in water: drag, buoyancy, a tank wall at x = 2
std::string auv_scenario(const std::string& feedback, double x_m = 0) {
  return R"(name: fb
world:
  water: {density_kg_m3: 1025, surface_z_m: 0}
  tank: {size_m: [4, 20, 10], floor_z_m: -10}
vehicles:
  - name: auv
    bodies:
      - name: hull
        shape: {type: cylinder, radius_m: 0.1, length_m: 1.2}
        mass_kg: 38
        centre_of_buoyancy_m: [0, 0, 0.02]
        damping: {linear: [10, 30, 30], quadratic: [20, 80, 80], angular_linear: [2, 6, 6], angular_quadratic: [1, 4, 4]}
        initial: {position_m: [)" +
         std::to_string(x_m) + R"(, 0, -3], velocity_m_s: [0.5, 0.1, 0]}
    feedback: )" +
         feedback + R"(
loop: {period_ms: 10, real_time_factor: 0, steps: 1}
)";
}

FeedbackContext context(std::uint64_t step, const Measurement* m) {
  FeedbackContext ctx;
  ctx.step = step;
  ctx.time_ns = static_cast<std::int64_t>(step) * 10'000'000;
  ctx.dt_s = 0.01;
  ctx.vehicle = 0;
  ctx.measurements = m ? std::span<const Measurement>(m, 1) : std::span<const Measurement>();
  return ctx;
}

Measurement pose_of(const BodyState& b) {
  Measurement m;
  m.body = 0;
  m.has_pose = true;
  m.position_m = b.position_m;
  m.orientation = b.orientation;
  return m;
}

double angle_between(const Quat& a, const Quat& b) { return a.angularDistance(b); }

}  // namespace

TEST_CASE("feedback: the registry knows every processor and rejects unknown keys with their position") {
  const auto types = feedback_processor_types();
  for (const char* t : {"direct", "blend", "vector_adjust", "kalman", "estimate"})
    CHECK(std::find(types.begin(), types.end(), t) != types.end());
  const Scenario sc = parse_scenario(auv_scenario("[{type: blend, alpha: 0.5, gain: 3}]"), "fb.yaml");
  try {
    make_feedback_processors(sc);
    FAIL("expected a ConfigError");
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    CHECK(what.find("fb.yaml:") != std::string::npos);
    CHECK(what.find("gain") != std::string::npos);
  }
  const Scenario bad = parse_scenario(auv_scenario("[{type: estimate, parameters: [drag]}]"), "fb.yaml");
  CHECK_THROWS_WITH_AS(make_feedback_processors(bad), doctest::Contains("angular_drag)"), ConfigError);
  // out of range, wrong type, absurd and NaN; a misspelled key is refused like any unknown one
  for (const char* key :
       {"input_delay_steps: -1", "input_delay_steps: 0.5", "input_delay_steps: 101", "input_delay_steps: 1e308",
        "input_delay_steps: .nan", "input_delay_steps: one", "input_delay_steps: [1]", "input_delay_step: 1",
        "orientation_stddev_rad: 0", "orientation_stddev_rad: 1e308", "orientation_stddev_rad: .nan",
        "orientation_stddev_rad: abc", "angular_velocity_stddev_rad_s: -1", "angular_velocity_stddev_rad_s: 1e308",
        "angular_velocity_stddev_rad_s: .nan", "parameters: [angular_drags]", "thruster_lag_model: rotor",
        "thruster_lag_model: 1", "thruster_lag_model: [rotors]"}) {
    INFO(key);
    const Scenario s = parse_scenario(auv_scenario(std::string("[{type: estimate, ") + key + "}]"), "fb.yaml");
    CHECK_THROWS_WITH_AS(make_feedback_processors(s), doctest::Contains("fb.yaml:"), ConfigError);
  }
  // a choice key: absurd, NaN and empty are not a choice either, and the refusal names them
  for (const char* value : {"1e308", ".nan", "''", "ROTORS"}) {
    INFO(value);
    const Scenario s =
        parse_scenario(auv_scenario(std::string("[{type: estimate, thruster_lag_model: ") + value + "}]"), "fb.yaml");
    CHECK_THROWS_WITH_AS(make_feedback_processors(s), doctest::Contains("filter, rotors"), ConfigError);
  }
  // a standard deviation whose square is infinite made the noise matrix inf and the update NaN:
  // each noise key is bounded (1e6 in its unit; angles by pi, rates by 100), and says where
  for (const char* kv : {"type: estimate, position_stddev_m: 1e300", "type: estimate, velocity_stddev_m_s: 1e200",
                         "type: estimate, added_mass_stddev: 1e7", "type: estimate, initial_stddev: 1e300",
                         "type: kalman, position_stddev_m: 1e300", "type: kalman, orientation_stddev_rad: 4",
                         "type: kalman, velocity_stddev_m_s: 1e300", "type: kalman, angular_velocity_stddev_rad_s: 1e3",
                         "type: kalman, accel_noise_m_s2: 1e300", "type: kalman, angular_accel_noise_rad_s2: 1e300",
                         "type: kalman, initial_stddev_scale: 1e300", "type: kalman, position_stddev_m: 0",
                         "type: kalman, position_stddev_m: .nan", "type: kalman, velocity_stddev_m_s: abc",
                         "type: kalman, accel_noise_m_s2: [1]", "type: kalman, position_stdev_m: 0.1",
                         "type: estimate, position_stddev_m: 1e308", "type: estimate, velocity_stddev_m_s: .nan"}) {
    INFO(kv);
    const Scenario s = parse_scenario(auv_scenario(std::string("[{") + kv + "}]"), "fb.yaml");
    CHECK_THROWS_WITH_AS(make_feedback_processors(s), doctest::Contains("fb.yaml:"), ConfigError);
  }
  for (const char* kv : {"type: estimate, position_stddev_m: 1e6", "type: kalman, orientation_stddev_rad: 3",
                         "type: estimate, thruster_lag_model: rotors", "type: estimate, thruster_lag_model: filter"}) {
    INFO(kv);  // the bounds themselves are accepted
    const Scenario s = parse_scenario(auv_scenario(std::string("[{") + kv + "}]"), "fb.yaml");
    CHECK_NOTHROW(make_feedback_processors(s));
  }
  const Scenario alpha = parse_scenario(auv_scenario("[{type: blend, alpha: 1.5}]"), "fb.yaml");
  CHECK_THROWS_AS(make_feedback_processors(alpha), ConfigError);
  const Scenario dry = parse_scenario(R"(name: dry
vehicles:
  - name: v
    bodies: [{name: b, shape: {type: sphere, radius_m: 0.5}, mass_kg: 1}]
    feedback: [{type: estimate}]
)",
                                      "dry.yaml");
  CHECK_THROWS_WITH_AS(make_feedback_processors(dry), doctest::Contains("needs world.water"), ConfigError);
}

TEST_CASE("feedback: direct sets the pose and velocity to the measurement, blend moves a fraction alpha") {
  const Scenario sc =
      parse_scenario(auv_scenario("[{type: direct}, {name: half, type: blend, alpha: 0.25}]"), "fb.yaml");
  auto ps = make_feedback_processors(sc);
  REQUIRE(ps.size() == 2);
  CHECK(ps[0]->phase() == FeedbackPhase::post);
  CHECK(ps[1]->name() == "half");

  Measurement m;
  m.has_pose = m.has_velocity = true;
  m.position_m = Vec3(0.3, -0.2, -2.5);
  m.orientation = quat_from_rpy(0, 0, 0.4);
  m.velocity_m_s = Vec3(0.2, 0, 0.1);
  m.angular_velocity_rad_s = Vec3(0, 0, 0.05);

  WorldState s = sc.initial;
  ps[0]->post(context(0, &m), sc.model, sc.initial, s);
  CHECK((s.bodies[0].position_m - m.position_m).norm() < 1e-12);
  CHECK(angle_between(s.bodies[0].orientation, m.orientation) < 1e-12);
  CHECK((linear_velocity(sc.model, s, 0) - m.velocity_m_s).norm() < 1e-12);
  CHECK((angular_velocity(sc.model, s, 0) - m.angular_velocity_rad_s).norm() < 1e-12);

  WorldState b = sc.initial;  // at (0, 0, -3), yaw 0, velocity (0.5, 0.1, 0)
  ps[1]->post(context(0, &m), sc.model, sc.initial, b);
  CHECK(b.bodies[0].position_m.x() == doctest::Approx(0.075));
  CHECK(b.bodies[0].position_m.y() == doctest::Approx(-0.05));
  CHECK(b.bodies[0].position_m.z() == doctest::Approx(-2.875));
  CHECK(rpy_from_quat(b.bodies[0].orientation).z() == doctest::Approx(0.1));
  CHECK(linear_velocity(sc.model, b, 0).x() == doctest::Approx(0.5 + 0.25 * (0.2 - 0.5)));
  std::vector<double> rec;
  ps[1]->record(rec);
  REQUIRE(rec.size() == ps[1]->record_fields().size());
  CHECK(rec[0] == doctest::Approx(0.25 * (m.position_m - sc.initial.bodies[0].position_m).norm()));
}

TEST_CASE("feedback: vector_adjust finds the force and torque that land on a reachable pose within 1 mm") {
  const Scenario sc = parse_scenario(auv_scenario("[{type: vector_adjust, iterations: 2}]"), "fb.yaml");
  auto ps = make_feedback_processors(sc);
  REQUIRE(ps[0]->phase() == FeedbackPhase::pre);
  StepInputs none;
  none.resize(1);
  // the target: where a hidden push (40 N, 15 N, -25 N; torque 2 N·m about z) takes the hull
  StepInputs pushed = none;
  pushed.wrenches[0].force_world_n = Vec3(40, 15, -25);
  pushed.wrenches[0].torque_world_nm = Vec3(0.2, -0.5, 2);
  WorldState target = sc.initial;
  REQUIRE(step(sc.model, target, pushed, 0.01) == StepStatus::ok);
  const Measurement m = pose_of(target.bodies[0]);

  StepInputs inputs = none;
  ps[0]->pre(context(0, &m), sc.model, sc.initial, inputs);
  WorldState s = sc.initial;
  REQUIRE(step(sc.model, s, inputs, 0.01) == StepStatus::ok);
  CHECK((s.bodies[0].position_m - target.bodies[0].position_m).norm() < 1e-3);
  CHECK((s.bodies[0].position_m - target.bodies[0].position_m).norm() < 1e-8);  // in fact far closer
  CHECK(angle_between(s.bodies[0].orientation, target.bodies[0].orientation) < 1e-6);
  // and the force it found is the hidden one
  CHECK((inputs.wrenches[0].force_world_n - Vec3(40, 15, -25)).norm() < 0.05);
  std::vector<double> rec;
  ps[0]->record(rec);
  REQUIRE(rec.size() == 8);
  CHECK(rec[0] == doctest::Approx(40).epsilon(0.01));
  CHECK(rec[7] < 1e-6);  // residual after
}

TEST_CASE("feedback: direct puts the body through a wall, vector_adjust does not") {
  // the hull at x = 1.5, its nose 0.1 m from the wall at x = 2; the measurement says x = 2.4
  const Scenario sc = parse_scenario(auv_scenario("[{type: direct}, {type: vector_adjust}]", 1.3), "fb.yaml");
  auto ps = make_feedback_processors(sc);
  WorldState start = sc.initial;
  set_velocity(sc.model, start, 0, Vec3::Zero(), Vec3::Zero());
  Measurement m = pose_of(start.bodies[0]);
  m.position_m.x() = 2.4;

  WorldState direct = start;
  StepInputs inputs;
  inputs.resize(1);
  REQUIRE(step(sc.model, direct, inputs, 0.01) == StepStatus::ok);
  ps[0]->post(context(0, &m), sc.model, start, direct);
  CHECK(direct.bodies[0].position_m.x() == doctest::Approx(2.4));  // nose at 3.0: inside the wall

  // vector_adjust pushes as hard as it may, over several steps; the wall holds
  WorldState va = start;
  double max_x = 0;
  for (std::uint64_t k = 0; k < 100; ++k) {
    inputs.clear();
    ps[1]->pre(context(k, &m), sc.model, va, inputs);
    REQUIRE(step(sc.model, va, inputs, 0.01) == StepStatus::ok);
    max_x = std::max(max_x, va.bodies[0].position_m.x());
  }
  CHECK(max_x + 0.6 < 2.0 + 0.01);  // nose (0.6 m ahead of the centre) at most touching
  CHECK(max_x > 1.35);              // it did try
}

TEST_CASE("feedback: kalman weighs prediction and measurement by their covariances") {
  const char* text = R"(name: kf
world: {gravity_m_s2: [0, 0, 0]}
vehicles:
  - name: v
    bodies: [{name: b, shape: {type: sphere, radius_m: 0.5}, mass_kg: 1}]
    feedback: [{type: kalman, position_stddev_m: 0.01, orientation_stddev_rad: 0.01, velocity_stddev_m_s: 0.02,
                angular_velocity_stddev_rad_s: 0.02, accel_noise_m_s2: 0.5, initial_stddev_scale: 10}]
loop: {period_ms: 10, real_time_factor: 0, steps: 1}
)";
  const Scenario sc = parse_scenario(text, "kf.yaml");
  auto ps = make_feedback_processors(sc);
  Measurement m = pose_of(sc.initial.bodies[0]);
  m.position_m.x() = 0.05;  // the model says 0, the measurement 5 cm
  WorldState s = sc.initial;
  ps[0]->post(context(0, &m), sc.model, sc.initial, s);
  // by hand: prior variance of x after one predict step, gain = P / (P + R)
  const double dt = 0.01, p0 = 0.1 * 0.1, pv = 0.2 * 0.2, q = 0.25;
  const double pxx = p0 + dt * dt * pv + q * dt * dt * dt / 3;
  const double gain = pxx / (pxx + 0.01 * 0.01);
  CHECK(s.bodies[0].position_m.x() == doctest::Approx(gain * 0.05).epsilon(1e-9));
  CHECK(s.bodies[0].position_m.y() == doctest::Approx(0));
  // the velocity picks up the position error through the prior's p-v correlation
  const double pxv = dt * pv + q * dt * dt / 2;
  CHECK(linear_velocity(sc.model, s, 0).x() == doctest::Approx(pxv / (pxx + 1e-4) * 0.05).epsilon(1e-9));
  std::vector<double> rec;
  ps[0]->record(rec);
  REQUIRE(rec.size() == ps[0]->record_fields().size());
  CHECK(rec[0] == doctest::Approx(0.05));                                  // innovation x
  CHECK(rec[7] == doctest::Approx(std::sqrt(pxx * 1e-4 / (pxx + 1e-4))));  // posterior stddev x

  // snapshot/restore: the filter's covariance comes back
  std::string snap;
  ps[0]->snapshot(snap);
  auto fresh = make_feedback_processors(sc);
  REQUIRE(fresh[0]->restore(snap));
  CHECK_FALSE(fresh[0]->restore(snap.substr(1)));
  std::vector<double> rec2;
  REQUIRE(fresh[0]->restore(snap));
  fresh[0]->record(rec2);
  CHECK(rec2[7] == rec[7]);
}

namespace {

// the truth: the same step() on a copy of the model with other parameters, and a thrust
// gain; an excitation that turns, surges, sways and heaves
struct Truth {
  WorldModel model;
  WorldState state;
  double thrust = 0.8;

  Truth(const Scenario& sc) : model(sc.model), state(sc.initial) {
    BodyModel& b = model.bodies[0];
    b.damping.linear = Vec3(13, 24, 36);
    b.damping.quadratic = Vec3(25, 70, 95);
    b.volume_m3 -= 4.0 / (1025 * 9.81);  // 4 N less buoyant
    model.water.current_m_s = Vec3(0.08, -0.05, 0);
  }
  static BodyWrench command(double t) {
    BodyWrench w;
    w.force_body_n = Vec3(30 * std::sin(0.5 * t) + 15 * std::sin(1.7 * t), 12 * std::sin(0.9 * t + 1),
                          25 * std::sin(0.7 * t + 2) - 6);
    w.torque_body_nm = Vec3(0, 0, 1.5 * std::sin(0.25 * t));
    return w;
  }
};

}  // namespace

namespace {
// runs estimate over 60 s of the truth's measurements; returns its summary
nlohmann::json estimate_from_truth(bool with_velocity, WorldModel* model_out = nullptr) {
  const Scenario sc =
      // the truth here is the model's own physics: its structure is exact, only its values unknown
      parse_scenario(
          auv_scenario("[{type: estimate, horizon_steps: 50, update_every_steps: 5, model_structure: exact}]"),
          "fb.yaml");
  auto ps = make_feedback_processors(sc);
  REQUIRE(ps[0]->phase() == FeedbackPhase::model);
  Truth truth(sc);
  WorldModel model = sc.model;  // the session's copy, which estimate changes
  StepInputs cmd, scaled;
  cmd.resize(1);
  scaled.resize(1);
  for (std::uint64_t k = 0; k < 6000; ++k) {
    const double t = static_cast<double>(k) * 0.01;
    cmd.wrenches[0] = Truth::command(t);
    scaled.wrenches[0] = cmd.wrenches[0];
    scaled.wrenches[0].force_body_n *= truth.thrust;
    scaled.wrenches[0].torque_body_nm *= truth.thrust;
    const WorldState before = truth.state;
    REQUIRE(step(truth.model, truth.state, scaled, 0.01) == StepStatus::ok);
    Measurement m = pose_of(truth.state.bodies[0]);
    m.has_velocity = with_velocity;
    m.velocity_m_s = linear_velocity(truth.model, truth.state, 0);
    m.angular_velocity_rad_s = angular_velocity(truth.model, truth.state, 0);
    StepInputs in = cmd;
    // the twin as a filter would keep it: here the truth's S_k (unmeasured angular rates come from it)
    ps[0]->update_model(context(k, &m), model, before, in);
  }
  nlohmann::json j;
  ps[0]->summarize(j);
  if (model_out) *model_out = model;
  return j;
}

// the hidden truth estimate_from_truth() simulates, each estimate within 5 % of it
void check_within_5_percent_of_truth(const nlohmann::json& e) {
  auto within = [](double est, double truth_value) {
    return std::abs(est - truth_value) <= 0.05 * std::abs(truth_value);
  };
  CHECK(within(e["thrust_coefficient"], 0.8));
  CHECK(within(e["linear_drag_x"], 13));
  CHECK(within(e["linear_drag_y"], 24));
  CHECK(within(e["linear_drag_z"], 36));
  CHECK(within(e["quadratic_drag_x"], 25));
  CHECK(within(e["quadratic_drag_y"], 70));
  CHECK(within(e["quadratic_drag_z"], 95));
  CHECK(within(e["buoyancy_offset_n"], -4));
  CHECK(within(e["current_x_m_s"], 0.08));
  CHECK(within(e["current_y_m_s"], -0.05));
}

}  // namespace

TEST_CASE("feedback: estimate recovers known parameters from pose-only data within 5 %") {
  const nlohmann::json j = estimate_from_truth(false);
  INFO(j.dump());
  const auto& e = j["estimates"];
  check_within_5_percent_of_truth(e);
}

TEST_CASE("feedback: estimate recovers known parameters from synthetic data within 5 %") {
  WorldModel model;
  const nlohmann::json j = estimate_from_truth(true, &model);
  const auto& e = j["estimates"];
  INFO(j.dump());
  check_within_5_percent_of_truth(e);
  // the model copy carries them
  CHECK(model.bodies[0].damping.linear.x() == doctest::Approx(static_cast<double>(e["linear_drag_x"])));
  CHECK(model.water.current_m_s.x() == doctest::Approx(static_cast<double>(e["current_x_m_s"])));
}

namespace {

// what else the truth of estimate_with_structure does otherwise than the model
struct Structure {
  int delay_steps = 0;        // it moves on each step's command this many steps later (a rig)
  double yaw_drag = 1;        // its yaw damping x this
  bool model_values = false;  // its drags, buoyancy and current are the model's (fewer to estimate)
  std::uint64_t steps = 3000;
};

// a truth whose thrusters lag the commands by `lag_s` (a first-order lag integrated in 1 ms
// sub-steps, its mean over each step applied) and whose hull carries `added` of its mass as
// added mass (weightless in water); 30 s of estimate `processor` on its measurements, with
// 2 mm and 5 mm/s of white noise
nlohmann::json estimate_with_structure(const std::string& processor, double lag_s, double added,
                                       const Structure& more = {}) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> gauss;
  const auto noise = [&](double sd) -> Vec3 { return Vec3(gauss(rng), gauss(rng), gauss(rng)) * sd; };
  const Scenario sc = parse_scenario(auv_scenario(processor), "fb.yaml");
  auto ps = make_feedback_processors(sc);
  Truth truth(sc);
  if (more.model_values) truth.model = sc.model;
  BodyModel& b = truth.model.bodies[0];
  b.damping.angular_linear.z() *= more.yaw_drag;
  b.damping.angular_quadratic.z() *= more.yaw_drag;
  b.mass_kg *= 1 + added;
  b.inv_mass = 1 / b.mass_kg;
  b.inertia_body *= 1 + added;
  b.inv_inertia_body = b.inertia_body.inverse();
  b.volume_m3 += added * sc.model.bodies[0].mass_kg / 1025;
  WorldModel model = sc.model;
  StepInputs cmd, applied;
  cmd.resize(1);
  applied.resize(1);
  Vec3 force = Truth::command(0).force_body_n, torque = Truth::command(0).torque_body_nm;
  for (std::uint64_t k = 0; k < more.steps; ++k) {
    const double t = static_cast<double>(k) * 0.01;
    cmd.wrenches[0] = Truth::command(t);
    const BodyWrench driving = Truth::command(std::max(0.0, t - 0.01 * more.delay_steps));
    Vec3 mean_f = Vec3::Zero(), mean_t = Vec3::Zero();
    for (int i = 0; i < 10; ++i) {
      const double a = lag_s > 0 ? 1 - std::exp(-0.001 / lag_s) : 1.0;
      const Vec3 f0 = force, t0 = torque;
      force += a * (driving.force_body_n - force);
      torque += a * (driving.torque_body_nm - torque);
      mean_f += 0.05 * (f0 + force);
      mean_t += 0.05 * (t0 + torque);
    }
    applied.wrenches[0] = BodyWrench{};
    applied.wrenches[0].force_body_n = truth.thrust * mean_f;
    applied.wrenches[0].torque_body_nm = truth.thrust * mean_t;
    const WorldState before = truth.state;
    REQUIRE(step(truth.model, truth.state, applied, 0.01) == StepStatus::ok);
    Measurement m = pose_of(truth.state.bodies[0]);
    m.position_m += noise(0.002);
    m.has_velocity = true;
    m.velocity_m_s = linear_velocity(truth.model, truth.state, 0) + noise(0.005);
    m.angular_velocity_rad_s = angular_velocity(truth.model, truth.state, 0);
    StepInputs in = cmd;
    ps[0]->update_model(context(k, &m), model, before, in);
  }
  nlohmann::json j;
  ps[0]->summarize(j);
  return j;
}

}  // namespace

TEST_CASE("feedback: estimate finds a thruster lag the model does not have, and the thrust behind it") {
  const std::string all =
      "position_stddev_m: 0.002, velocity_stddev_m_s: 0.005, parameters: [thrust, linear_drag, quadratic_drag, "
      "buoyancy, current";
  const auto with_lag = estimate_with_structure(
      "[{type: estimate, model_structure: exact, " + all + ", thruster_lag]}]", 0.08, 0);
  INFO(with_lag.dump());
  const auto& e = with_lag["estimates"];
  CHECK(std::abs(e["thruster_lag_s"].get<double>() - 0.08) <= 0.15 * 0.08);  // 0.070 after 30 s
  CHECK(std::abs(e["thrust_coefficient"].get<double>() - 0.8) <= 0.05 * 0.8);
  CHECK(with_lag["identified"]["thruster_lag_s"].get<bool>());
  // without the lag the same data give a worse fit of the thrust
  const auto without = estimate_with_structure(
      "[{type: estimate, model_structure: exact, " + all + "]}]", 0.08, 0);
  INFO(without.dump());
  CHECK(std::abs(without["estimates"]["thrust_coefficient"].get<double>() - 0.8) >
        std::abs(e["thrust_coefficient"].get<double>() - 0.8));
}

TEST_CASE("feedback: estimate takes a rig's step of delay as a delay, not as a thruster lag") {
  // a rig moves on step k's commands at step k + 1; the thrusters themselves do not lag
  Structure rig;
  rig.delay_steps = 1;
  rig.model_values = true;
  rig.steps = 1500;
  const std::string est =
      "[{type: estimate, model_structure: exact, position_stddev_m: 0.002, velocity_stddev_m_s: 0.005, "
      "parameters: [thrust, thruster_lag]";
  const auto told = estimate_with_structure(est + ", input_delay_steps: 1}]", 0, 0, rig);
  const auto untold = estimate_with_structure(est + "}]", 0, 0, rig);
  INFO(told.dump());
  INFO(untold.dump());
  // told the delay, no lag is left and the thrust is the truth's
  CHECK(told["estimates"]["thruster_lag_s"].get<double>() < 0.002);
  CHECK(std::abs(told["estimates"]["thrust_coefficient"].get<double>() - 0.8) <= 0.01 * 0.8);
  // not told, the step of dead time shows up as a lag of about a step
  CHECK(untold["estimates"]["thruster_lag_s"].get<double>() > 0.005);
}

TEST_CASE("feedback: estimate finds a yaw drag from the heading and yaw rate") {
  Structure turning;
  turning.yaw_drag = 1.5;
  turning.model_values = true;
  turning.steps = 2000;
  const auto j = estimate_with_structure(
      "[{type: estimate, model_structure: exact, position_stddev_m: 0.002, velocity_stddev_m_s: 0.005, "
      "orientation_stddev_rad: 0.002, angular_velocity_stddev_rad_s: 0.005, parameters: [thrust, angular_drag]}]",
      0, 0, turning);
  INFO(j.dump());
  CHECK(std::abs(j["estimates"]["angular_drag_scale"].get<double>() - 1.5) <= 0.05 * 1.5);
  CHECK(j["identified"]["angular_drag_scale"].get<bool>());
  CHECK(std::abs(j["estimates"]["thrust_coefficient"].get<double>() - 0.8) <= 0.02 * 0.8);
}

TEST_CASE("feedback: added mass is considered, never estimated: it stays at 0, flagged, and widens the thrust's sigma") {
  const std::string all =
      "position_stddev_m: 0.002, velocity_stddev_m_s: 0.005, parameters: [thrust, linear_drag, quadratic_drag, "
      "buoyancy, current";
  const auto considered = estimate_with_structure("[{type: estimate, " + all + ", added_mass]}]", 0, 0.15);
  const auto ignored = estimate_with_structure("[{type: estimate, " + all + "]}]", 0, 0.15);
  INFO(considered.dump());
  INFO(ignored.dump());
  CHECK(considered["estimates"]["added_mass_fraction"].get<double>() == 0.0);
  CHECK_FALSE(considered["identified"]["added_mass_fraction"].get<bool>());
  CHECK(considered["stddev"]["added_mass_fraction"].get<double>() == doctest::Approx(0.1));
  CHECK_FALSE(ignored["estimates"].contains("added_mass_fraction"));
  CHECK(considered["stddev"]["thrust_coefficient"].get<double>() >
        1.2 * ignored["stddev"]["thrust_coefficient"].get<double>());
  // a bad key is positioned
  const Scenario bad = parse_scenario(auv_scenario("[{type: estimate, added_mass_stddev: -1}]"), "fb.yaml");
  CHECK_THROWS_WITH_AS(make_feedback_processors(bad), doctest::Contains("added_mass_stddev"), ConfigError);
}

namespace {

// replays precomputed truth measurements and commands by step index, like a vehicle would
class MeasuringEndpoint final : public Endpoint {
 public:
  MeasuringEndpoint(const EndpointConfig& c, std::vector<Measurement> ms, std::vector<BodyWrench> cmds)
      : Endpoint(c), ms_(std::move(ms)), cmds_(std::move(cmds)) {}
  bool publish(const StepContext&, const WorldState&) override { return true; }
  GatherStatus gather(const StepContext& ctx, SteadyClock::time_point, Reply& reply) override {
    reply.clear();
    reply.step = ctx.step;
    reply.wrenches.emplace_back(0, cmds_.at(ctx.step));
    reply.measurements.push_back(ms_.at(ctx.step));
    return GatherStatus::ready;
  }

 private:
  std::vector<Measurement> ms_;
  std::vector<BodyWrench> cmds_;
};

}  // namespace

TEST_CASE("feedback: a session with processors continues bit for bit from a keyframe") {
  std::string text = auv_scenario(
      "[{type: estimate, horizon_steps: 20, update_every_steps: 5, model_structure: exact}, {type: vector_adjust}, "
      "{type: kalman}]");
  text += "endpoints:\n  - {name: vehicle, type: measuring, vehicle: auv}\n";
  const Scenario sc = parse_scenario(text, "fb.yaml");
  Truth truth(sc);
  std::vector<Measurement> ms;
  std::vector<BodyWrench> cmds;
  StepInputs in;
  in.resize(1);
  for (int k = 0; k < 300; ++k) {
    cmds.push_back(Truth::command(k * 0.01));
    in.wrenches[0] = cmds.back();
    in.wrenches[0].force_body_n *= truth.thrust;
    in.wrenches[0].torque_body_nm *= truth.thrust;
    REQUIRE(step(truth.model, truth.state, in, 0.01) == StepStatus::ok);
    Measurement m = pose_of(truth.state.bodies[0]);
    m.position_m.x() += 0.002 * std::sin(k * 1.7);  // noise, deterministic
    m.has_velocity = true;
    m.velocity_m_s = linear_velocity(truth.model, truth.state, 0);
    ms.push_back(m);
  }
  auto endpoints = [&] {
    std::vector<std::unique_ptr<Endpoint>> eps;
    eps.push_back(std::make_unique<MeasuringEndpoint>(sc.endpoints[0], ms, cmds));
    return eps;
  };
  std::atomic<bool> stop{false};
  Keyframe at150;
  std::vector<std::uint64_t> hashes;
  SessionOptions o;
  o.steps = 300;
  o.real_time_factor = 0;
  Session* full_ptr = nullptr;
  o.after_step = [&](const WorldState& s) {
    hashes.push_back(hash_state(s));
    if (s.step == 150) at150 = full_ptr->keyframe();
    return true;
  };
  Session full(sc, endpoints(), o);
  full_ptr = &full;
  REQUIRE(full.run(stop) == Outcome::completed);
  CHECK(full.model().bodies[0].damping.linear.x() != sc.model.bodies[0].damping.linear.x());  // it learned

  SessionOptions o2;
  o2.steps = 150;
  o2.real_time_factor = 0;
  std::vector<std::uint64_t> resumed;
  o2.after_step = [&](const WorldState& s) {
    resumed.push_back(hash_state(s));
    return true;
  };
  Session part(sc, endpoints(), o2);
  std::string error;
  REQUIRE(part.restore(at150, &error));
  REQUIRE(part.run(stop) == Outcome::completed);
  REQUIRE(resumed.size() == 150);
  CHECK(std::equal(resumed.begin(), resumed.end(), hashes.begin() + 150));
  CHECK(hash_state(part.state()) == hash_state(full.state()));
}

TEST_CASE("feedback: a recorded session with processors replays bit for bit, from the start and a keyframe") {
  std::string text = auv_scenario(
      "[{type: estimate, horizon_steps: 20, update_every_steps: 5, model_structure: exact}, {type: vector_adjust}, "
      "{type: kalman}]");
  text +=
      "endpoints:\n  - {name: vehicle, type: measuring, vehicle: auv}\n"
      "recording: {keyframe_every_steps: 100, flush_interval_s: 0.05}\n";
  const Scenario sc = parse_scenario(text, "fb.yaml");
  Truth truth(sc);
  std::vector<Measurement> ms;
  std::vector<BodyWrench> cmds;
  StepInputs in;
  in.resize(1);
  for (int k = 0; k < 300; ++k) {
    cmds.push_back(Truth::command(k * 0.01));
    in.wrenches[0] = cmds.back();
    in.wrenches[0].force_body_n *= truth.thrust;
    REQUIRE(step(truth.model, truth.state, in, 0.01) == StepStatus::ok);
    Measurement m = pose_of(truth.state.bodies[0]);
    m.position_m.y() += 0.002 * std::cos(k * 2.3);
    m.has_velocity = m.has_covariance = true;
    m.velocity_m_s = linear_velocity(truth.model, truth.state, 0);
    m.angular_velocity_rad_s = angular_velocity(truth.model, truth.state, 0);
    m.pose_covariance *= 1e-5;
    ms.push_back(m);
  }
  const std::string path =
      (std::filesystem::temp_directory_path() / ("tether_feedback_test_" + std::to_string(::getpid()) + ".mcap"))
          .string();
  std::vector<std::uint64_t> live;
  {
    std::vector<std::unique_ptr<Endpoint>> eps;
    eps.push_back(std::make_unique<MeasuringEndpoint>(sc.endpoints[0], ms, cmds));
    SessionOptions o;
    o.steps = 300;
    o.after_step = [&](const WorldState& s) {
      live.push_back(hash_state(s));
      return true;
    };
    Session session(sc, std::move(eps), o);
    Recorder recorder(sc, recorder_inputs(session));
    std::string error;
    REQUIRE(recorder.open(path, &error));
    session.set_recorder(&recorder);
    std::atomic<bool> stop{false};
    REQUIRE(session.run(stop) == Outcome::completed);
    REQUIRE(recorder.close(session.summary(), &error));
  }
  Recording rec;
  std::string error;
  REQUIRE_MESSAGE(load_recording(path, rec, &error), error);
  std::filesystem::remove(path);
  for (std::uint64_t from : {0, 200}) {
    CAPTURE(from);
    REQUIRE(rec.keyframes.count(from) == 1);
    std::vector<std::unique_ptr<Endpoint>> eps;
    eps.push_back(std::make_unique<ReplayEndpoint>(rec.scenario.endpoints[0], rec, 0));
    SessionOptions o;
    o.steps = 300 - from;
    std::uint64_t verified = 0;
    std::optional<Divergence> divergence;
    o.after_step = [&](const WorldState& s) {
      divergence = compare_state(rec, s);
      if (divergence) return false;
      ++verified;
      return true;
    };
    Session session(rec.scenario, std::move(eps), o);
    REQUIRE(session.restore(rec.keyframes.at(from), &error));
    std::atomic<bool> stop{false};
    (void)session.run(stop);
    CHECK_MESSAGE(!divergence, (divergence ? divergence->describe() : ""));
    CHECK(verified == 300 - from);
    CHECK(hash_state(session.state()) == live.back());
  }
}

TEST_CASE("feedback: estimate stays bounded on bad data") {
  const Scenario sc =
      parse_scenario(auv_scenario("[{type: estimate, horizon_steps: 10, update_every_steps: 2}]"), "fb.yaml");
  auto ps = make_feedback_processors(sc);
  WorldModel model = sc.model;
  WorldState s = sc.initial;
  StepInputs in;
  in.resize(1);
  for (std::uint64_t k = 0; k < 2000; ++k) {
    in.clear();
    in.wrenches[0].force_body_n = Vec3(20, 0, 0);
    // a tracker gone mad: positions jump metres, velocities are nonsense
    Measurement m = pose_of(s.bodies[0]);
    m.position_m += Vec3(std::sin(k * 12.9898) * 3, std::cos(k * 78.233) * 3, 0);
    m.has_velocity = true;
    m.velocity_m_s = Vec3(std::sin(k * 3.1) * 5, 4, -3);
    ps[0]->update_model(context(k, &m), model, s, in);
    REQUIRE(step(model, s, in, 0.01) == StepStatus::ok);
  }
  const BodyModel& b = model.bodies[0];
  CHECK(b.damping.linear.minCoeff() >= 0);
  CHECK(b.damping.quadratic.minCoeff() >= 0);
  CHECK(b.damping.linear.maxCoeff() <= 5 * 30 + 1e-9);
  CHECK(model.water.current_m_s.cwiseAbs().maxCoeff() <= 1.0);
  CHECK(std::abs(b.volume_m3 - sc.model.bodies[0].volume_m3) * 1025 * 9.81 <= 0.25 * 38 * 9.81 + 1e-9);
  nlohmann::json j;
  ps[0]->summarize(j);
  CHECK(j["rejected"].get<int>() > 0);  // the gate threw most of it out
  CHECK(std::isfinite(s.bodies[0].position_m.norm()));
}
