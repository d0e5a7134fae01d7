// SPDX-License-Identifier: Apache-2.0
// `tether identify`: trials recorded with the in-process stand-in vehicle (its hidden values
// known), read back, fitted with Ceres and validated on held-out data; bad input refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "alloc_count.hpp"
#include "example_controllers.hpp"
#include "stand_in_endpoint.hpp"
#include "test_paths.hpp"
#include "tether/endpoints/endpoint_factory.hpp"
#include "tether/identify/identify.hpp"
#include "tether/feedback/batch_refit.hpp"
#include "tether/feedback/estimate_windows.hpp"
#include "tether/loop/recorder_inputs.hpp"
#include "tether/loop/session.hpp"
#include "tether/recording/recorder.hpp"
#include "tether/recording/replay.hpp"
#include "tether/scenario/scenario.hpp"

using namespace tether;
using namespace tether::runtime;

namespace {

std::string source(const char* rel) {
  std::ifstream f(TETHER_SOURCE_DIR + "/" + rel);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::filesystem::path temp_dir() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("tether_identify_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

// tank_identify.yaml with the MQTT vehicle replaced by the in-process stand-in (`hidden`:
// its differences from the model), `feedback` as given (the estimate's batch refit only when
// asked for), `seconds` long, as fast as possible
std::string trial_scenario(double seconds, const std::string& hidden, bool online_estimate, bool stand_in = true,
                           bool refit = false) {
  YAML::Node root = YAML::Load(source("config/scenarios/tank_identify.yaml"));
  if (!refit)
    for (const char* key : {"refit_every_s", "refit_latency_s"}) root["vehicles"][0]["feedback"][0].remove(key);
  if (stand_in) {
    test::stand_in_for_mqtt(root, 3, hidden);
  } else {  // no vehicle at all
    YAML::Node eps(YAML::NodeType::Sequence);
    for (YAML::Node e : root["endpoints"])
      if (e["type"].as<std::string>() != "mqtt") eps.push_back(e);
    root["endpoints"] = eps;
  }
  if (!online_estimate) root["vehicles"][0].remove("feedback");
  root["loop"]["duration_s"] = seconds;
  root["loop"]["real_time_factor"] = 0;
  YAML::Emitter out;
  out << root;
  return out.c_str();
}

// the model's structure, other values: what the fit can represent exactly
const char* representable = R"({thrust_scale: 0.85, drag_scale: 1.2, buoyancy_offset_n: -3, current_m_s: [0, 0.05, 0],
  thruster_time_constant_scale: 1, thruster_dead_band: 0, added_mass_fraction: 0, current_swing_m_s: [0, 0, 0],
  velocity_bias_m_s: [0, 0, 0], position_noise_m: 0.002, orientation_noise_rad: 0.002, velocity_noise_m_s: 0.005})";

// runs the scenario and records it; the recording's path
std::string record(const std::string& text, const std::string& name) {
  static const bool registered = (examples::register_example_controllers(), true);  // depth_heading_hold
  (void)registered;
  const Scenario sc = parse_scenario(text, name + ".yaml");
  auto eps = adapters::make_endpoints(sc);
  SessionOptions options;
  Session session(sc, std::move(eps), options);
  Recorder recorder(sc, recorder_inputs(session));
  const std::string path = (temp_dir() / (name + ".mcap")).string();
  std::string error;
  REQUIRE(recorder.open(path, &error));
  session.set_recorder(&recorder);
  std::atomic<bool> stop{false};
  const Outcome outcome = session.run(stop);
  REQUIRE(outcome == Outcome::completed);
  REQUIRE(recorder.close(session.summary(), &error));
  session.set_recorder(nullptr);
  return path;
}

const std::string& representable_trial() {
  static const std::string path = record(trial_scenario(18, representable, false), "representable");
  return path;
}

// the representable stand-in with `key` set to `value`, recorded for `seconds`, read back
identify::Trial representable_with(const std::string& key, const std::string& value, double seconds,
                                   const std::string& name) {
  std::string hidden = representable;
  const auto at = hidden.find(key + ": ");
  REQUIRE(at != std::string::npos);
  hidden.replace(at, hidden.find_first_of(",}", at) - at, key + ": " + value);
  identify::Trial trial;
  std::string error;
  REQUIRE_MESSAGE(identify::load_trial(record(trial_scenario(seconds, hidden, false), name), "", trial, &error), error);
  return trial;
}

// the stand-in's measurement noise, as the fit is told it
identify::FitOptions stand_in_fit_options(int max_delay_steps) {
  identify::FitOptions o;
  o.position_stddev_m = 0.002;
  o.velocity_stddev_m_s = 0.005;
  o.orientation_stddev_rad = 0.002;
  o.max_delay_steps = max_delay_steps;
  return o;
}

double truth_of(const identify::Trial& t, const std::string& name) {
  for (const auto& [n, v] : t.truth)
    if (n == name) return v;
  FAIL("no hidden truth for " << name);
  return 0;
}

const identify::Combination& combination(const identify::FitResult& f, const std::string& name) {
  for (const auto& c : f.combinations)
    if (c.name == name) return c;
  FAIL("no combination " << name);
  return f.combinations.front();
}

// `env`: VAR=value assignments for the program, or empty
std::string run_cli(const std::string& args, int& code, const std::string& env = "") {
  const std::string cmd = (env.empty() ? "" : "env " + env + " ") + TETHER_BINARY_DIR + "/tether " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  while (const std::size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = pclose(p);
  code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

}  // namespace

TEST_CASE(
    "identify: a trial whose structure the model has is fitted to its hidden values, and predicts held-out data") {
  identify::Trial trial;
  std::string error;
  REQUIRE_MESSAGE(identify::load_trial(representable_trial(), "", trial, &error), error);
  CHECK(trial.scenario.model.vehicles[static_cast<std::size_t>(trial.vehicle)].name == "auv");
  CHECK(trial.samples.size() == 1801);
  CHECK(trial.measured == 1800);
  // the inputs as gathered: the thrusters push (the plan flies at up to 0.75 surge)
  double max_force = 0;
  for (const auto& s : trial.samples) max_force = std::max(max_force, s.input.force_body_n.norm());
  CHECK(max_force > 5);
  // the thrusters as captured (commands, rotor speeds, the twin's thrust again) add up to the
  // input the body received: they are its only actuators
  REQUIRE(trial.thrusters.size() == 4);
  REQUIRE(trial.thruster_thrust.size() >= 4 * 1800);
  double worst = 0;
  for (std::size_t t = 0; t < trial.thruster_thrust.size() / 4; ++t) {
    BodyWrench sum;
    for (std::size_t k = 0; k < 4; ++k) {
      sum.force_body_n += trial.thruster_thrust[t * 4 + k] * trial.thrusters[k].unit.force_body_n;
      sum.torque_body_nm += trial.thruster_thrust[t * 4 + k] * trial.thrusters[k].unit.torque_body_nm;
    }
    worst = std::max({worst, (sum.force_body_n - trial.samples[t].input.force_body_n).norm(),
                      (sum.torque_body_nm - trial.samples[t].input.torque_body_nm).norm()});
  }
  CHECK(worst < 1e-9);

  identify::FitOptions o = stand_in_fit_options(1);
  o.holdout = 0.25;
  const identify::FitResult fit = identify::fit({trial}, o);
  INFO(fit.solver_report);
  CHECK(fit.windows >= 20);
  // the rig moves a step behind the twin's inputs (it gets a step's commands with the next
  // request); its rotors are the model's: the lag is none
  CHECK(fit.delay_steps == 1);
  const identify::ParameterEstimate& lag = fit.parameters[vp::thruster_lag];
  INFO("thruster lag " << lag.value << " +- " << lag.stddev);
  CHECK(lag.value <= 2 * lag.stddev + 1e-6);
  // the combinations the data pin down, against the stand-in's own values (added mass 0)
  for (const char* name : {"thrust_per_effective_mass", "current_y_m_s"}) {
    const identify::Combination& c = combination(fit, name);
    const double truth = truth_of(trial, std::string(name) == "current_y_m_s" ? "current_y_m_s" : "thrust_coefficient");
    INFO(name << " " << c.value << " +- " << c.stddev << " truth " << truth);
    CHECK(c.identified);
    CHECK(std::abs(c.value - truth) <= 2 * c.stddev + 1e-9);
    CHECK(std::abs(c.value - truth) <= 0.05 * std::abs(truth));
  }
  // the yaw drag: the fitted 13.5 s hold their heading (the plan's first turn is at 19 s), so
  // the trial does not tell it, and the fit says so
  const identify::Combination& ang = combination(fit, "angular_drag_per_effective_inertia");
  INFO("angular drag per effective inertia " << ang.value << " +- " << ang.stddev);
  CHECK(!ang.identified);
  // the truth of a combination, as the CLI and the benchmark print it (the stand-in's added mass 0)
  CHECK(identify::combination_truth(trial, combination(fit, "thrust_per_effective_mass")) == doctest::Approx(0.85));
  CHECK(identify::combination_truth(trial, ang) == doctest::Approx(1.2));
  // the buoyancy offset with the model's own net buoyancy: what the effective mass carries
  const identify::Combination& b = combination(fit, "net_buoyancy_per_effective_mass_n");
  const auto b_truth = identify::combination_truth(trial, b);
  REQUIRE(b_truth.has_value());
  const auto base = tether::runtime::vehicle_parameter_base(trial.scenario.model, trial.body);
  CHECK(*b_truth == doctest::Approx(tether::runtime::net_buoyancy_n(base) + truth_of(trial, "buoyancy_offset_n")));
  CHECK(std::abs(b.value - *b_truth) <= 2 * b.stddev + 0.3);
  // thrust and added mass: one is not told from the other; the weak direction says so
  bool thrust_mass_weak = false;
  for (const auto& w : fit.weak)
    for (const auto& [n, l] : w.loadings) thrust_mass_weak |= n == "added_mass_fraction";
  CHECK(thrust_mass_weak);

  // the held-out quarter predicted open loop, 4 s at a time: the fit beats the scenario's model
  const identify::Prediction p =
      identify::predict(trial, fit, identify::holdout_start(trial, 0.25), trial.samples.size(), 4);
  INFO("fitted " << p.fitted_m << " uncorrected " << p.uncorrected_m);
  CHECK(p.segments >= 1);
  CHECK(p.gain() > 3);

  // the file applies to the scenario: its overrides load, and the model has the fitted drags
  const std::vector<std::string> set = identify::fit_overrides(trial, fit);
  CHECK(set.size() >= 5);
  const Scenario applied = parse_scenario(trial.scenario.source_text, "applied.yaml", set);
  const auto& body = applied.model.bodies[static_cast<std::size_t>(trial.body)];
  CHECK(body.damping.linear.x() == doctest::Approx(fit.theta[vp::linear_drag]).epsilon(1e-6));
  const auto& before = trial.scenario.model.bodies[static_cast<std::size_t>(trial.body)];
  CHECK(body.damping.angular_linear.z() ==
        doctest::Approx(before.damping.angular_linear.z() * fit.theta[vp::angular_drag]).epsilon(1e-6));
  CHECK(body.damping.angular_linear.x() == before.damping.angular_linear.x());
  CHECK(applied.model.water.current_m_s.y() == doctest::Approx(fit.theta[vp::current_y]).epsilon(1e-6));
  const YAML::Node file = YAML::Load(identify::fit_yaml(trial, fit, p));
  CHECK(file["set"].size() == set.size());
  CHECK(file["combinations"]["thrust_per_effective_mass"]["value"].as<double>() ==
        doctest::Approx(combination(fit, "thrust_per_effective_mass").value));
  CHECK(file["validation"]["gain"].as<double>() == doctest::Approx(p.gain()));
}

TEST_CASE("identify: a misfit that changes from one manoeuvre to the next widens sigma through the blocks' scatter") {
  // the representable vehicle, but its thrusters give nothing below 15 % of a command (the
  // model's dead band is 2 %): the turns' and the holds' small commands push the model and
  // not the vehicle, the cruise's large ones push both; white residuals do not show it
  const identify::Trial trial = representable_with("thruster_dead_band", "0.15", 34, "dead_band");
  const identify::FitResult fit = identify::fit({trial}, stand_in_fit_options(1));
  INFO(fit.solver_report);
  CHECK(fit.blocks >= 5);  // 30 s fitted, 5 s a block
  // the blocks pull differently: sigma wider than the residuals alone say
  CHECK(fit.misfit_widening > 1.3);
  const identify::Combination& c = combination(fit, "thrust_per_effective_mass");
  const double truth = truth_of(trial, "thrust_coefficient");
  INFO("thrust per effective mass " << c.value << " +- " << c.stddev << " truth " << truth << "; widening "
                                    << fit.misfit_widening);
  CHECK(std::abs(c.value - truth) <= 2 * c.stddev);
  for (const auto& [n, v] : trial.truth) MESSAGE(n << " = " << v);
  for (const auto& e : fit.parameters) MESSAGE(e.name << " " << e.value << " +- " << e.stddev);
  for (const auto& e : fit.combinations) MESSAGE(e.name << " " << e.value << " +- " << e.stddev);
}

TEST_CASE("identify: thrusters that spin up slower than the model's are fitted by running their rotors again") {
  // the representable vehicle with rotors 1.5 times slower: the fit re-runs each thruster's
  // rotor from its recorded commands with the time constant lengthened by the lag; 26 s hold
  // the plan's first turn, which tells the yaw drag (the measured orientations)
  const identify::Trial trial = representable_with("thruster_time_constant_scale", "1.5", 26, "slow_rotors");
  const identify::FitResult fit = identify::fit({trial}, stand_in_fit_options(2));
  INFO(fit.solver_report);
  const identify::ParameterEstimate& lag = fit.parameters[vp::thruster_lag];
  const double truth = truth_of(trial, "thruster_lag_s");  // 0.5 x the rotors' 0.1 s
  INFO("thruster lag " << lag.value << " +- " << lag.stddev << " truth " << truth << ", delay " << fit.delay_steps);
  CHECK(truth == doctest::Approx(0.05));
  CHECK(fit.delay_steps == 1);
  CHECK(lag.identified);
  CHECK(std::abs(lag.value - truth) <= 2 * lag.stddev);
  CHECK(std::abs(lag.value - truth) <= 0.2 * truth);
  const identify::Combination& c = combination(fit, "thrust_per_effective_mass");
  CHECK(std::abs(c.value - truth_of(trial, "thrust_coefficient")) <= 2 * c.stddev);
  // the yaw drag, seen in the measured orientations: the stand-in's is the model's x 1.2
  const identify::Combination& ang = combination(fit, "angular_drag_per_effective_inertia");
  INFO("angular drag per effective inertia " << ang.value << " +- " << ang.stddev);
  CHECK(truth_of(trial, "angular_drag_scale") == doctest::Approx(1.2));
  CHECK(ang.identified);
  CHECK(std::abs(ang.value - 1.2) <= 2 * ang.stddev);
  CHECK(std::abs(ang.value - 1.2) <= 0.1 * 1.2);
}

TEST_CASE("identify: the estimate's window replay and the fit's agree bit for bit on a recorded trial") {
  // one window of a recorded trial (thrusters on the body: their rotors run again slower by
  // the lag), replayed by the online `estimate`'s windows — filled from the trial as the
  // processor fills them step by step — and by `tether identify`'s fit: the same states
  const identify::Trial trial = representable_with("thruster_time_constant_scale", "1", 4, "replay_agree");
  REQUIRE(!trial.thrusters.empty());
  const WorldModel& m0 = trial.scenario.model;
  std::array<double, vp::count> theta = nominal_vehicle_parameters(m0, trial.body);
  theta[vp::thrust] *= 1.1;
  theta[vp::linear_drag] *= 1.3;
  theta[vp::buoyancy] += 1.5;
  theta[vp::thruster_lag] = 0.05;
  theta[vp::added_mass] = 0.1;
  theta[vp::angular_drag] = 1.2;
  const int horizon = 50, delay = 1, warmup = 100;
  const std::size_t n = trial.thrusters.size();
  // a window whose rotors' warm-up lies inside both histories: measured start, inputs throughout
  std::size_t t0 = 200;
  const auto usable = [&](std::size_t t) {
    if (!trial.samples[t].measured || !trial.samples[t].has_velocity || t >= trial.twin.size()) return false;
    for (std::size_t u = t - delay - 80; u < t + horizon - delay; ++u)
      if (!trial.samples[u].has_input) return false;
    return t + horizon + 1 < trial.samples.size() && (t + horizon + 1) * n <= trial.thruster_speed.size();
  };
  while (t0 + horizon + 2 < trial.samples.size() && !usable(t0)) ++t0;
  REQUIRE(usable(t0));
  const auto t1 = static_cast<std::int64_t>(t0) + horizon;

  EstimateWindows windows;
  windows.configure(trial.body, horizon, warmup, delay, m0.bodies.size());
  windows.set_thrusters(trial.thrusters);
  for (std::int64_t t = 0; t <= t1; ++t) {
    const identify::TrialSample& s = trial.samples[static_cast<std::size_t>(t)];
    EstimateWindows::Entry& e = windows.entry(t);
    e = EstimateWindows::fresh_entry(t);
    e.valid = s.measured, e.has_velocity = s.has_velocity, e.has_input = s.has_input;
    e.state.position_m = s.position;
    e.state.orientation = s.orientation;
    e.velocity = s.velocity;
    e.angular_velocity = s.angular_velocity;
    e.input = s.input;
    // the command held over step t and the twin rotor's speed at its end (the next's start)
    for (std::size_t j = 0; j < n; ++j)
      windows.record_rotor(t, j, trial.thruster_command[static_cast<std::size_t>(t) * n + j],
                           trial.thruster_speed[static_cast<std::size_t>(t + 1) * n + j]);
  }
  WorldModel model = m0;
  const VehicleParameterBase base = vehicle_parameter_base(m0, trial.body);
  WorldState twin;
  twin.bodies = trial.twin[t0];
  EstimateWindows::Landing landing;
  EstimateWindows::Track track;
  REQUIRE(windows.replay(model, {&base, true, true}, theta.data(), twin, static_cast<std::int64_t>(t0), t1, trial.dt_s,
                         landing, Vec3::Zero(), &track));

  std::vector<BodyState> states;
  REQUIRE(identify::replay_trial_window(trial, theta, t0, horizon, delay, states));
  REQUIRE(states.size() == static_cast<std::size_t>(horizon));
  const auto body = static_cast<std::size_t>(trial.body);
  for (int j = 0; j < EstimateWindows::checkpoints; ++j) {
    const auto at = EstimateWindows::checkpoint(static_cast<std::int64_t>(t0), t1, j) - static_cast<std::int64_t>(t0);
    CHECK(track.segment<3>(3 * j) == states[static_cast<std::size_t>(at - 1)].position_m);
  }
  const BodyState& last = states.back();
  const Mat3 r = last.orientation.toRotationMatrix();
  CHECK(landing.head<3>() == last.position_m);
  CHECK(landing.segment<3>(3) == Vec3(last.linear_momentum * model.bodies[body].inv_mass));
  CHECK(landing[6] == std::atan2(r(1, 0), r(0, 0)));

  // the lag made a difference: the rotors' path was taken, not a no-op
  theta[vp::thruster_lag] = 0;
  std::vector<BodyState> unlagged;
  REQUIRE(identify::replay_trial_window(trial, theta, t0, horizon, delay, unlagged));
  CHECK(unlagged.back().position_m != last.position_m);
}

TEST_CASE("identify: a measurement delay is found (the thrusters' lag known)") {
  identify::Trial trial;
  std::string error;
  const std::string hidden =
      std::string(representable).substr(0, std::string(representable).size() - 1) + ", delay_steps: 5}";
  REQUIRE_MESSAGE(identify::load_trial(record(trial_scenario(20, hidden, false), "delayed"), "", trial, &error), error);
  identify::FitOptions o;
  o.position_stddev_m = 0.002;
  o.velocity_stddev_m_s = 0.005;
  o.max_delay_steps = 8;
  // a dead time and a first-order lag of the thrusters look alike over two steps: with the lag
  // fitted too, the delay trades against it (docs/feedback.md); here the lag is the model's
  o.estimate_lag = false;
  const identify::FitResult fit = identify::fit({trial}, o);
  for (const auto& [d, c] : fit.delay_costs) MESSAGE("delay " << d << ": cost per window " << c);
  // the profile is shallow (held manoeuvres change the commands seldom, the thrusters smooth
  // them, and the example law's commands are rate-limited: smooth commands say little about a
  // dead time; 10 s sufficed while the law chattered); the truth 6: the stand-in's 5 and the
  // step the rig's commands come behind the twin's: a delay, a step or two off
  CHECK(fit.delay_steps >= 3);
  CHECK(fit.delay_steps <= 7);
  CHECK(fit.delay_stddev_steps < 5);
  CHECK(fit.delay_costs.size() == 9);
}

TEST_CASE("identify: the online estimate's final values lie within the offline fit's two sigma") {
  identify::Trial trial;
  std::string error;
  REQUIRE_MESSAGE(identify::load_trial(record(trial_scenario(24, representable, true), "online"), "", trial, &error),
                  error);
  REQUIRE(!trial.online.empty());
  identify::FitOptions o;
  o.position_stddev_m = 0.002;
  o.velocity_stddev_m_s = 0.005;
  o.max_delay_steps = 0;
  const identify::FitResult fit = identify::fit({trial}, o);
  int compared = 0;
  for (const auto& on : trial.online) {
    if (!on.identified) continue;
    for (const auto& p : fit.parameters)
      if (p.name == on.name) {
        INFO(on.name << ": online " << on.value << ", offline " << p.value << " +- " << p.stddev);
        CHECK(std::abs(on.value - p.value) <= 2 * p.stddev);
        ++compared;
      }
  }
  CHECK(compared >= 3);
  // the online processor's own combinations agree with the offline fit's (within two sigma of
  // the two together)
  int combinations = 0;
  for (const auto& on : trial.online_combinations)
    for (const auto& off : fit.combinations)
      if (on.name == off.name) {
        INFO(on.name << ": online " << on.value << " +- " << on.stddev << ", offline " << off.value << " +- "
                     << off.stddev);
        CHECK(on.stddev > 0);
        CHECK(std::abs(on.value - off.value) <= 2 * std::hypot(on.stddev, off.stddev));
        ++combinations;
      }
  CHECK(combinations >= 8);  // thrust, six drags, buoyancy
}

TEST_CASE("identify: the online estimate's batch refit takes the fit of the trial so far, and replays bit for bit") {
  examples::register_example_controllers();  // depth_heading_hold
  identify::register_online_refit();
  std::string text = trial_scenario(14, representable, true, true, true);
  // a refit every 4 s, taken 1 s after it starts: at 5, 9 and 13 s
  YAML::Node root = YAML::Load(text);
  YAML::Node est = root["vehicles"][0]["feedback"][0];
  REQUIRE(est["type"].as<std::string>() == "estimate");
  est["refit_every_s"] = 4;
  est["refit_latency_s"] = 1;
  YAML::Emitter emitted;
  emitted << root;
  text = emitted.c_str();

  // the estimate's thrust gain after each step (its record()'s first value): it moves when a
  // refit is taken, and only then (the windows move nothing once one is)
  const Scenario sc = parse_scenario(text, "refit.yaml");
  const FeedbackProcessor* watched_estimate = nullptr;
  std::vector<double> row, gain;
  row.reserve(64);
  SessionOptions so;
  so.after_step = [&](const WorldState&) {
    row.clear();
    watched_estimate->record(row);
    gain.push_back(row.front());
    return true;
  };
  Session watched(sc, adapters::make_endpoints(sc), so);
  for (const auto& p : watched.processors())
    if (p->type() == "estimate") watched_estimate = p.get();
  REQUIRE(watched_estimate != nullptr);
  Recorder recorder(sc, recorder_inputs(watched));
  const std::string path = (temp_dir() / "refit.mcap").string();
  std::string error;
  REQUIRE(recorder.open(path, &error));
  watched.set_recorder(&recorder);
  std::atomic<bool> stop{false};
  REQUIRE(watched.run(stop) == Outcome::completed);
  REQUIRE(recorder.close(watched.summary(), &error));
  watched.set_recorder(nullptr);
  nlohmann::json summary;
  watched_estimate->summarize(summary);
  INFO(summary.dump());
  CHECK(summary["refits"].get<int>() == 3);
  CHECK(summary["refit_failures"].get<int>() == 0);
  CHECK(summary["refit_windows"].get<int>() >= 10);
  // a refit's state is the whole trial so far: a keyframe after the start does not restore it
  std::string late;
  watched_estimate->snapshot(late);
  CHECK_FALSE(watched_estimate->restores_after_start());
  CHECK_FALSE(const_cast<FeedbackProcessor*>(watched_estimate)->restore(late));

  // the thrust per effective mass the refits found: the stand-in's (its added mass 0)
  const double thrust = summary["combinations"]["thrust_per_effective_mass"]["value"].get<double>();
  const double thrust_sd = summary["combinations"]["thrust_per_effective_mass"]["stddev"].get<double>();
  INFO("thrust per effective mass " << thrust << " +- " << thrust_sd);
  CHECK(std::abs(thrust - 0.85) <= 0.05 * 0.85);
  CHECK(std::abs(thrust - 0.85) <= 2 * thrust_sd);

  // after the first refit the gain moves only at the steps the next ones are taken (step k's
  // update_model takes it; after_step sees it from step k on)
  std::vector<std::size_t> moved;
  for (std::size_t k = 1; k < gain.size(); ++k)
    if (gain[k] != gain[k - 1] && k > 500) moved.push_back(k);
  INFO("moved after the first refit at " << moved.size() << " steps");
  CHECK(moved.size() <= 2);
  for (std::size_t k : moved) CHECK((k == 900 || k == 1300));

  // read back, the recording replays exactly: the refits run again at the same steps on the
  // same data, and load_trial compares every replayed state with the recorded one
  identify::Trial trial;
  REQUIRE_MESSAGE(identify::load_trial(path, "", trial, &error), error);
  CHECK(trial.samples.size() == 1401);
}

TEST_CASE("identify: the batch refit's keys are checked, and a fit that cannot be made changes nothing") {
  examples::register_example_controllers();
  identify::register_online_refit();
  const auto with = [](const std::string& keys) {
    std::string text = trial_scenario(2, representable, true, true, true);
    YAML::Node root = YAML::Load(text);
    YAML::Node est = root["vehicles"][0]["feedback"][0];
    const YAML::Node extra = YAML::Load(keys);
    for (const auto& kv : extra) est[kv.first.as<std::string>()] = kv.second;
    YAML::Emitter out;
    out << root;
    return std::string(out.c_str());
  };
  const auto refused = [](const std::string& text, const std::string& expected) {
    try {
      const Scenario sc = parse_scenario(text, "refit_bad.yaml");
      Session session(sc, adapters::make_endpoints(sc), SessionOptions{});
      FAIL("accepted: " << expected);
    } catch (const ConfigError& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(expected) != std::string::npos);
    }
  };
  refused(with("{refit_every_s: 2, refit_latency_s: 3}"), "must not exceed refit_every_s");
  refused(with("{refit_every_s: -1}"), "refit_every_s");
  refused(with("{refit_history_s: 0.5}"), "refit_history_s");
  refused(with("{refit_every_s: nan}"), "refit_every_s");
  refused(with("{refit_every_s: 1e308}"), "refit_every_s");
  refused(with("{refit_every_s: often}"), "refit_every_s");
  refused(with("{refit_every_s: 5, refit_latency_s: 1e308}"), "refit_latency_s");
  refused(with("{refit_every_s: 5, refit_latency_s: .nan}"), "refit_latency_s");
  refused(with("{refit_every_s: 5, refit_history_s: 1e308}"), "refit_history_s");
  refused(with("{refit_every_s: 5, refit_history_s: [1, 2]}"), "refit_history_s");
  refused(with("{refit_evry_s: 5}"), "refit_evry_s");  // misspelled: an unknown key
  // a program that did not make the refit known is told how
  set_batch_refit_factory(nullptr);
  refused(with("{refit_every_s: 5}"), "register_online_refit");
  identify::register_online_refit();
  // off (the default) needs nothing
  const Scenario sc = parse_scenario(with("{refit_every_s: 0}"), "refit_off.yaml");
  CHECK_NOTHROW(Session(sc, adapters::make_endpoints(sc), SessionOptions{}));

  // a fit that cannot be made changes nothing and says why: a history of 1 s holds two
  // windows of 0.5 s, a fit needs four (the oldest half of the history dropped as it fills)
  std::string text = with("{refit_every_s: 0.5, refit_latency_s: 0, refit_history_s: 1}");
  YAML::Node root = YAML::Load(text);
  root["loop"]["duration_s"] = 3;
  YAML::Emitter out;
  out << root;
  const Scenario short_sc = parse_scenario(out.c_str(), "refit_short.yaml");
  Session session(short_sc, adapters::make_endpoints(short_sc), SessionOptions{});
  std::atomic<bool> stop{false};
  REQUIRE(session.run(stop) == Outcome::completed);
  nlohmann::json summary;
  for (const auto& p : session.processors())
    if (p->type() == "estimate") p->summarize(summary);
  INFO(summary.dump());
  CHECK(summary["refits"].get<int>() == 0);
  CHECK(summary["refit_failures"].get<int>() == 5);  // at 0.5, 1, ..., 2.5 s
  CHECK(summary["refit_error"].get<std::string>().find("usable windows") != std::string::npos);
}

TEST_CASE("identify: bad input gets a clear error") {
  std::string error;
  identify::Trial trial;
  // not a recording
  const std::string junk = (temp_dir() / "junk.mcap").string();
  std::ofstream(junk) << "not an mcap file";
  CHECK_FALSE(identify::load_trial(junk, "", trial, &error));
  CHECK(!error.empty());
  // nothing measured the vehicle: the controller alone
  const std::string unmeasured = record(trial_scenario(2, "", false, false), "unmeasured");
  CHECK_FALSE(identify::load_trial(unmeasured, "", trial, &error));
  CHECK(error.find("no endpoint measured a vehicle") != std::string::npos);
  CHECK_FALSE(identify::load_trial(representable_trial(), "rover", trial, &error));
  CHECK(error.find("has no vehicle \"rover\"") != std::string::npos);
  // too short to fit
  identify::Trial short_trial;
  REQUIRE(identify::load_trial(record(trial_scenario(1, representable, false), "short"), "", short_trial, &error));
  CHECK_THROWS_WITH_AS(identify::fit({short_trial}, identify::FitOptions{}), doctest::Contains("usable windows"),
                       std::runtime_error);
  // two vehicles in one fit
  identify::Trial other = short_trial;
  other.scenario.model.bodies[static_cast<std::size_t>(other.body)].mass_kg += 1;
  other.path = "other.mcap";
  CHECK_FALSE(identify::same_vehicle(short_trial, other, &error));
  CHECK(error.find("is not the vehicle of") != std::string::npos);
  CHECK(identify::same_vehicle(short_trial, short_trial, &error));
  CHECK_THROWS_WITH_AS(identify::fit({short_trial, other}, identify::FitOptions{}),
                       doctest::Contains("one fit is for one vehicle"), std::runtime_error);
}

// the shared objects this process has mapped whose file names hold `part`
int mapped(const std::string& part) {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);) n += line.find(part) != std::string::npos;
  return n;
}

TEST_CASE("identify: Ceres and its libraries are loaded by the first fit, not at start, and a missing module is said") {
  // the tether program starts without them: none among the libraries it loads
  int code = 0;
  FILE* p = popen(("ldd " + TETHER_BINARY_DIR + "/tether 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  std::string libs;
  char buf[4096];
  while (const std::size_t n = fread(buf, 1, sizeof buf, p)) libs.append(buf, n);
  REQUIRE(pclose(p) == 0);
  CHECK(libs.find("libstdc++") != std::string::npos);
  for (const char* lib : {"libceres", "libtether_fit_ceres", "libglog", "libcholmod", "liblapack", "libgfortran"}) {
    INFO(lib);
    CHECK(libs.find(lib) == std::string::npos);
  }
  // a fit opens the module (and with it Ceres' libraries)
  identify::Trial trial;
  std::string error;
  REQUIRE_MESSAGE(identify::load_trial(record(trial_scenario(4, representable, false), "module"), "", trial, &error),
                  error);
  identify::FitOptions o;
  o.max_delay_steps = 0;
  o.max_iterations = 3;
  const identify::FitResult f = identify::fit({trial}, o);
  CHECK(f.iterations > 0);
  CHECK(f.windows > 0);
  CHECK(mapped("libtether_fit_ceres") > 0);
  CHECK(mapped("libglog") > 0);
  // a module that is not there: the fit fails saying which and how to name another
  const std::string missing = "TETHER_FIT_MODULE=/nonexistent/m.so";
  const std::string out = run_cli("identify " + representable_trial() + " --max-delay-steps 0", code, missing);
  INFO(out);
  CHECK(code == 2);
  CHECK(out.find("cannot open the fit's solver module /nonexistent/m.so") != std::string::npos);
  CHECK(out.find("TETHER_FIT_MODULE") != std::string::npos);
  // and a scenario whose estimate refits is refused when it is loaded, not at its first refit
  const std::string check =
      run_cli("check " + TETHER_SOURCE_DIR + "/config/scenarios/tank_identify.yaml", code, missing);
  INFO(check);
  CHECK(code == 2);
  CHECK(check.find("refit_every_s: the batch refit cannot run here: cannot open the fit's solver module "
                   "/nonexistent/m.so") != std::string::npos);
}

TEST_CASE("identify: the command fits, validates and writes a file tether run applies") {
  int code = 0;
  const std::string fit_path = (temp_dir() / "fit.yaml").string();
  const std::string trial = record(trial_scenario(10, representable, false), "cli");
  const std::string page_path = (temp_dir() / "fit.html").string();
  const std::string out = run_cli("identify " + trial +
                                      " --holdout 0.3 --horizon 2 --max-delay-steps 0 --position-stddev 0.002 "
                                      "--velocity-stddev 0.005 -o " +
                                      fit_path + " --report " + page_path,
                                  code);
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("thrust_per_effective_mass") != std::string::npos);
  CHECK(out.find("better") != std::string::npos);
  CHECK(std::filesystem::exists(fit_path));
  // the fit's page: both models' open-loop predictions against the held-out measurements,
  // per axis; the estimates; the file as written; nothing fetched
  std::ifstream page_file(page_path);
  std::stringstream page_text;
  page_text << page_file.rdbuf();
  const std::string page = page_text.str();
  for (const char* axis : {"x (m)", "y (m)", "depth (m)"})
    CHECK(page.find(std::string(">open loop from measured states: ") + axis + "</text>") != std::string::npos);
  CHECK(page.find(">fitted model</text>") != std::string::npos);
  CHECK(page.find(">uncorrected model</text>") != std::string::npos);
  CHECK(page.find(">measured</text>") != std::string::npos);
  CHECK(page.find("&times; better</b>") != std::string::npos);
  CHECK(page.find("<td>thrust_per_effective_mass</td>") != std::string::npos);
  CHECK(page.find("<pre># tether identify") != std::string::npos);
  CHECK(page.find("\nset:\n") != std::string::npos);
  CHECK(page.find("src=") == std::string::npos);
  CHECK(page.find("href=") == std::string::npos);
  CHECK(out.find("report: " + page_path) != std::string::npos);
  // applied to the trial's scenario, it loads (tether check would say; run needs the same)
  const std::string scenario = (temp_dir() / "trial.yaml").string();
  std::ofstream(scenario) << trial_scenario(1, representable, false);
  const std::string run = run_cli(
      "run " + scenario + " --set-file " + fit_path + " --steps 10 -q --out " + (temp_dir() / "applied").string(),
      code);
  INFO(run);
  CHECK(code == 0);
  // bad input: a file that is not there, a --set-file without `set:`, a holdout out of range
  CHECK(run_cli("identify " + (temp_dir() / "absent.mcap").string(), code).find("tether:") != std::string::npos);
  CHECK(code == 2);
  CHECK(run_cli("run " + scenario + " --set-file " + scenario, code).find("no `set:` list") != std::string::npos);
  CHECK(code == 2);
  CHECK(run_cli("identify " + trial + " --holdout 0.95", code).find("--holdout") != std::string::npos);
  CHECK(code == 2);
  // where the fit and its page go: said before the fit
  const std::string nowhere = (temp_dir() / "no-such-folder").string();
  CHECK(run_cli("identify " + trial + " -o " + nowhere + "/fit.yaml", code) ==
        "tether: -o " + nowhere + "/fit.yaml: there is no folder " + nowhere + "\n");
  CHECK(code == 2);
  CHECK(run_cli("identify " + trial + " --report " + nowhere + "/fit.html", code) ==
        "tether: --report " + nowhere + "/fit.html: there is no folder " + nowhere + "\n");
  CHECK(code == 2);
  CHECK(run_cli("identify " + trial + " --report " + temp_dir().string(), code)
            .find(": a folder; expected a file name") != std::string::npos);
  CHECK(code == 2);
  for (const char* bad :
       {" --holdout nan", " --horizon nan", " --position-stddev nan", " --velocity-stddev 1e308", " --window-steps 1",
        " --holdout x", " --orientation-stddev nan", " --orientation-stddev -1"}) {
    INFO(bad);
    CHECK(!run_cli("identify " + trial + bad, code).empty());
    CHECK(code == 2);
  }
  // said in a line: what is expected and what was given (not CLI11's 309 digits of its bound)
  for (const char* bad : {" --orientation-stddev abc", " --position-stddev -1", " --velocity-stddev 0"}) {
    INFO(bad);
    const std::string said = run_cli("identify " + trial + bad, code);
    CHECK(said.find("expects a number") != std::string::npos);
    CHECK(said.size() < 200);
    CHECK(code == 2);
  }
}

TEST_CASE("identify: the batch refit's capture allocates nothing per step once its history is full") {
  // The history keeps the last 20 steps: full at step 20, it drops its oldest 10 then and
  // every 10 steps after; the dropped steps' storage holds the steps captured next.
  identify::register_online_refit();
  const Scenario sc = parse_scenario(trial_scenario(1, representable, false, false), "identify.yaml");
  RefitOptions o;
  o.dt_s = 0.01;
  o.history_steps = 20;
  o.active.fill(true);
  const std::unique_ptr<BatchRefit> refit = batch_refit_factory()(sc.model, o);
  Measurement m;
  m.body = 0;
  m.has_pose = true;
  FeedbackContext ctx;
  ctx.dt_s = o.dt_s;
  ctx.vehicle = 0;
  ctx.measurements = std::span<const Measurement>(&m, 1);
  const BodyWrench input{};
  WorldState state = sc.initial;
  const auto capture_steps = [&](std::uint64_t from, std::uint64_t to) {
    for (ctx.step = from; ctx.step < to; ++ctx.step) {
      state.bodies[0].position_m.x() = 0.001 * static_cast<double>(ctx.step);
      refit->capture(ctx, state, input);
    }
  };
  capture_steps(0, 40);  // filled once, dropped twice
  test::AllocCount count;
  test::arm(count);
  capture_steps(40, 140);
  test::disarm();
  CHECK_MESSAGE(count.total == 0, count.describe());
  CHECK(refit->captured() >= 10);
  CHECK(refit->captured() <= 20);
}

namespace {

// the real refit, made slow on purpose: its result is ready `slow` after it started (and
// not before the real fit is done); finish() before then waits, and counts that it did
class SlowRefit final : public BatchRefit {
 public:
  SlowRefit(std::unique_ptr<BatchRefit> inner, std::chrono::milliseconds slow, std::atomic<int>* waits)
      : inner_(std::move(inner)), slow_(slow), waits_(waits) {}
  void capture(const FeedbackContext& ctx, const WorldState& state, const BodyWrench& input) override {
    inner_->capture(ctx, state, input);
  }
  std::size_t captured() const override { return inner_->captured(); }
  bool start() override {
    if (!inner_->start()) return false;
    started_ = std::chrono::steady_clock::now();
    return true;
  }
  bool ready() override { return std::chrono::steady_clock::now() - started_ >= slow_ && inner_->ready(); }
  bool finish(RefitResult& out, std::string* why) override {
    if (!ready()) {
      ++*waits_;
      std::this_thread::sleep_until(started_ + slow_);
    }
    return inner_->finish(out, why);
  }

 private:
  std::unique_ptr<BatchRefit> inner_;
  std::chrono::milliseconds slow_;
  std::atomic<int>* waits_;
  std::chrono::steady_clock::time_point started_{};
};

struct PacedRefitRun {
  nlohmann::json estimate, session;
  std::vector<std::size_t> gain_moved;  // the steps after which the estimate's thrust gain changed
  std::string path;
};

// the representable trial with a refit every 2 s taken 0.1 s after it starts, `seconds` long
// at `rtf`, recorded
PacedRefitRun run_refit_trial(double seconds, double rtf, const std::string& name) {
  YAML::Node root = YAML::Load(trial_scenario(seconds, representable, true, true, true));
  YAML::Node est = root["vehicles"][0]["feedback"][0];
  est["refit_every_s"] = 2;
  est["refit_latency_s"] = 0.1;
  root["loop"]["real_time_factor"] = rtf;
  YAML::Emitter emitted;
  emitted << root;
  const Scenario sc = parse_scenario(emitted.c_str(), name + ".yaml");
  const FeedbackProcessor* estimate = nullptr;
  std::vector<double> row, gain;
  row.reserve(64);
  SessionOptions so;
  so.after_step = [&](const WorldState&) {
    row.clear();
    estimate->record(row);
    gain.push_back(row.front());
    return true;
  };
  Session session(sc, adapters::make_endpoints(sc), so);
  for (const auto& p : session.processors())
    if (p->type() == "estimate") estimate = p.get();
  REQUIRE(estimate != nullptr);
  Recorder recorder(sc, recorder_inputs(session));
  PacedRefitRun run;
  run.path = (temp_dir() / (name + ".mcap")).string();
  std::string error;
  REQUIRE(recorder.open(run.path, &error));
  session.set_recorder(&recorder);
  std::atomic<bool> stop{false};
  REQUIRE(session.run(stop) == Outcome::completed);
  run.session = session.summary();
  REQUIRE(recorder.close(run.session, &error));
  session.set_recorder(nullptr);
  estimate->summarize(run.estimate);
  for (std::size_t k = 1; k < gain.size(); ++k)
    if (gain[k] != gain[k - 1]) run.gain_moved.push_back(k);
  return run;
}

}  // namespace

TEST_CASE(
    "identify: a paced session never waits for a late refit: taken at the first step it is ready, recorded, "
    "and replayed at that step bit for bit") {
  examples::register_example_controllers();
  identify::register_online_refit();
  std::atomic<int> waits{0};
  const BatchRefitFactory real = batch_refit_factory();
  set_batch_refit_factory([&](const WorldModel& model, const RefitOptions& o) {
    return std::make_unique<SlowRefit>(real(model, o), std::chrono::milliseconds(600), &waits);
  });
  struct Restore {
    ~Restore() { identify::register_online_refit(); }
  } restore;

  // as fast as possible: each refit is taken at its step (starts at 200, 400, 600; taken 10
  // steps later), the step waiting for the slow fit, the same steps in every run
  const PacedRefitRun fast = run_refit_trial(7, 0, "refit_slow_rtf0");
  INFO("rtf 0: " << fast.estimate.dump());
  CHECK(fast.estimate["refits"].get<int>() == 3);
  CHECK(fast.estimate["refits_late"].get<int>() == 0);
  CHECK(waits.load() == 3);
  // the step k that takes a fit changes the gain from k on (after_step index k-1 to k)
  CHECK(fast.gain_moved == std::vector<std::size_t>{210, 410, 610});

  // paced (rtf 1): a fit due before it is ready is deferred and taken at the first step it
  // is; the step never waits on the worker
  waits = 0;
  const PacedRefitRun paced = run_refit_trial(7, 1, "refit_slow_paced");
  INFO("paced: " << paced.estimate.dump());
  MESSAGE("paced, a refit 0.6 s slow, due 0.1 s after it starts: step time max "
          << paced.session["step_time_ns"].dump() << " ns, overruns " << paced.session["overruns"].dump()
          << ", late refits " << paced.estimate["refits_late"].get<int>() << ", the latest "
          << paced.estimate["refit_late_steps_max"].get<int>() << " steps late");
  CHECK(waits.load() == 0);
  CHECK(paced.estimate["refit_failures"].get<int>() == 0);
  const int refits = paced.estimate["refits"].get<int>();
  CHECK(refits >= 1);  // how many are taken in 7 s depends on the machine (the fit's own time)
  CHECK(paced.estimate["refits_late"].get<int>() == refits);
  CHECK(paced.estimate["refit_late_steps_max"].get<int>() >= 49);  // 0.6 s after the start, due at 0.1 s

  // the recording has each deferral at its due step and each take at its step, and the gain
  // moved exactly at the takes
  Recording rec;
  std::string error;
  REQUIRE_MESSAGE(load_recording(paced.path, rec, &error), error);
  std::vector<std::uint64_t> deferred, taken;
  for (const StepCommands& sc : rec.commands)
    for (const OperatorCommand& c : sc.commands)
      if (const auto* b = std::get_if<BackgroundTake>(&c)) {
        CHECK(b->processor == rec.scenario.feedback[0].name);
        (b->taken ? taken : deferred).push_back(sc.step);
      }
  INFO("deferred at " << deferred.size() << " steps, taken at " << taken.size());
  CHECK(taken.size() == static_cast<std::size_t>(refits));
  // each start (200, 400, 600) deferred at its due step; a start while the last fit is still
  // deferred is skipped; the last may still be deferred at the end
  CHECK(deferred.size() + static_cast<std::size_t>(paced.estimate["refit_starts_skipped"].get<int>()) == 3);
  REQUIRE((deferred.size() == taken.size() || deferred.size() == taken.size() + 1));
  for (std::size_t i = 0; i < deferred.size(); ++i) {
    CHECK((deferred[i] == 210 || deferred[i] == 410 || deferred[i] == 610));
    if (i < taken.size()) CHECK(taken[i] >= deferred[i] + 49);
    if (i + 1 < deferred.size()) CHECK(taken[i] < deferred[i + 1]);
  }
  CHECK(paced.gain_moved == std::vector<std::size_t>(taken.begin(), taken.end()));

  // read back, the recording replays exactly (load_trial compares every replayed state with
  // the recorded one): the refits are taken at the recorded steps, waiting for them if need be
  identify::Trial trial;
  REQUIRE_MESSAGE(identify::load_trial(paced.path, "", trial, &error), error);
  CHECK(trial.samples.size() == 701);
}
