// SPDX-License-Identifier: Apache-2.0
// `tether identify`: a batch fit of a vehicle's model parameters over whole recorded trials
// (docs/feedback.md, "The offline fit"). The trial is read back by replaying the recording
// through the session, exactly as it ran, so that every step's inputs are what the twin's
// body received (the firmware's and the operator's, through the same actuators) and every
// measurement is what passed the plausibility gate. The fit replays windows of the trial with
// the model's own step() — the parameters of tether/feedback/vehicle_parameters.hpp, the online
// `estimate` processor's — and solves the nonlinear least-squares problem with Ceres Solver.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tether/hal/device_spec.hpp"
#include "tether/feedback/vehicle_parameters.hpp"
#include "tether/scenario/scenario.hpp"

namespace tether::identify {

using runtime::BodyWrench;
using runtime::Quat;
using runtime::Vec3;

/// One step of a trial: the measured S_t (if any) and the input of the step from t to t+1.
struct TrialSample {
  bool measured = false, has_velocity = false, has_input = false;
  Vec3 position{0, 0, 0}, velocity{0, 0, 0}, angular_velocity{0, 0, 0};
  Quat orientation = Quat::Identity();
  BodyWrench input;  // as the twin's body received it, before any `estimate` gain or lag
};

/// A thruster on the fitted body: the fit runs its rotor again from the recorded commands with
/// a longer time constant (the thruster lag), and adds the difference to the recorded input
/// (the online `estimate` processor does the same, runtime::BodyThruster).
using TrialThruster = runtime::BodyThruster;

/// A recorded trial of one vehicle, read back.
struct Trial {
  std::string path;
  runtime::Scenario scenario;
  int vehicle = -1, body = -1;  // the fitted vehicle and its body (its first)
  double dt_s = 0;
  std::vector<TrialSample> samples;                   // index t: step first + t
  std::vector<std::vector<runtime::BodyState>> twin;  // the twin's bodies at S_t (the world around the window)
  std::size_t measured = 0;                           // samples with a measurement
  /// The fitted body's thrusters and, per step t (index t * thrusters.size() + i), the
  /// command thruster i held (before its dead band), its rotor's speed at the step's start and
  /// the mean thrust the twin's rotor gave over the step.
  std::vector<TrialThruster> thrusters;
  std::vector<double> thruster_command, thruster_speed, thruster_thrust;
  std::vector<std::pair<std::string, double>> truth;  // a stand-in's hidden truth, when the summary has it
  /// The online `estimate` processor's final values, when the trial ran one.
  struct Online {
    std::string name;
    double value = 0, stddev = 0;
    bool identified = false;
  };
  std::vector<Online> online;
  std::vector<Online> online_combinations;  // its combinations over the effective mass (value, stddev)
};

/// Reads `path` back (replaying it through a session) for the vehicle named `vehicle` (empty:
/// the one whose body the recording's replies measured). False with a clear reason: not a
/// recording, a recording that does not replay, no measured vehicle, no water.
bool load_trial(const std::string& path, const std::string& vehicle, Trial& out, std::string* error);

/// True when `b` is a trial of `a`'s vehicle (its body's name and mass, the loop period); else
/// false with the reason in `why`. fit() requires it of every trial; a validation trial too.
bool same_vehicle(const Trial& a, const Trial& b, std::string* why);

struct FitOptions {
  int window_steps = 50;    // each window replays this many steps from a measured state
  int max_delay_steps = 3;  // measurement delays tried: 0 .. this many steps
  double holdout = 0;       // the last fraction of each trial kept out of the fit (validation)
  double position_stddev_m = 0.005, velocity_stddev_m_s = 0.01;  // the measurements' noise
  double orientation_stddev_rad = 0.01;  // 0: orientations not compared (the angular drag then unseen)
  double added_mass_stddev = 0.1;        // the prior of the added mass (it scales every force alike)
  bool estimate_lag = true, estimate_added_mass = true;
  bool estimate_angular_drag = true;  // a scale of the body's angular damping (offline only)
  int threads = 2;
  int max_iterations = 50;
  int delay_steps = -1;  // >= 0: the delay is this, not profiled (the online refit: the estimate's)
  std::array<bool, runtime::vp::count> held{};  // parameters kept at the model's values
  bool robust = true;  // a Huber loss: a window with a collision the model missed weighs little
};

struct ParameterEstimate {
  std::string name;
  double value = 0, stddev = 0, prior_stddev = 0, nominal = 0;
  bool estimated = false, identified = false;
};

/// A combination of parameters the data pin down (a ratio to the effective mass, or a
/// parameter alone), with its sigma from the full covariance.
struct Combination {
  std::string name, meaning;
  double value = 0, stddev = 0;
  bool identified = false;
  int parameter = -1;               // the vp index it is made of
  bool per_effective_mass = false;  // divided by (1 + added_mass_fraction)
  double offset = 0;                // added to the parameter before (the model's net buoyancy B0)
};

/// A direction of the parameter space the trial left weak, and what would strengthen it.
struct WeakDirection {
  std::vector<std::pair<std::string, double>> loadings;  // the largest, in prior units
  double shrink = 0;                                     // how much the data shrank the prior's sigma along it
  std::string advice;
};

struct FitResult {
  std::vector<ParameterEstimate> parameters;  // vehicle_parameter_names order
  std::array<double, runtime::vp::count> theta{};
  std::array<std::array<double, runtime::vp::count>, runtime::vp::count> correlation{};
  std::vector<Combination> combinations;
  std::vector<WeakDirection> weak;
  /// The delay of the measured motion behind the inputs the twin's body received, in steps:
  /// one for a rig (the `mqtt` endpoint sends it a step's commands with the next step's
  /// request), more for a measurement delay or a dead time of the thrusters (motion against
  /// commands cannot tell them apart); one unless the data clearly ask for another. Its sigma
  /// from the cost profile's curvature (0: not tried; large: the trial's commands change too
  /// slowly to tell).
  int delay_steps = 0;
  double delay_stddev_steps = 0;
  std::vector<std::pair<int, double>> delay_costs;  // (delay, cost per window) tried
  int windows = 0, iterations = 0;
  std::size_t residuals = 0;
  double initial_cost = 0, final_cost = 0;
  double noise_scale = 1;           // reduced chi-square of the residuals (1: as stated)
  double residual_correlation = 0;  // lag-one correlation of consecutive normalised residuals
  double sigma_widening = 1;        // sqrt(noise_scale x (1 + rho) / (1 - rho)), at least 1
  /// The scatter of the data's pull on the parameters from one stretch of the trial to the next
  /// (a cluster-robust "sandwich" covariance over `blocks` stretches of about 5 s): a model
  /// that lacks something the vehicle has pulls differently in different manoeuvres. Each
  /// sigma is the larger of the two; this is the largest ratio it gave (1: none widened).
  double misfit_widening = 1;
  int blocks = 0;
  double block_s = 0;         // the length of a block
  double mean_nis = 0;        // mean squared normalised residual
  double seconds = 0;         // the solve, covariance included
  std::string solver_report;  // Ceres' brief report
  bool converged = false;
};

/// A combination's value for a stand-in's hidden truth (the trial's `truth`), when it told the
/// parameter's.
std::optional<double> combination_truth(const Trial& trial, const Combination& c);

/// Fits the trials (the same vehicle); throws std::runtime_error with the reason for data a fit
/// cannot use (too few windows, trials of different vehicles).
FitResult fit(const std::vector<Trial>& trials, const FitOptions& options);

/// Open-loop prediction from measured states over `horizon_s` segments of [from, to) of a
/// trial: the fitted model against the uncorrected one (the scenario's).
struct Prediction {
  int segments = 0;
  double horizon_s = 0;
  double fitted_m = 0, uncorrected_m = 0;          // the mean position error at the segments' ends
  double fitted_rms_m = 0, uncorrected_rms_m = 0;  // over every step of every segment
  double gain() const { return fitted_m > 0 ? uncorrected_m / fitted_m : 0; }
  // the segments step by step, for the fit's page: the time, the measured position and both
  // models' predictions (NaN where a measurement is missing and between segments)
  std::vector<double> t;
  std::vector<runtime::Vec3> measured, fitted, uncorrected;
};
Prediction predict(const Trial& trial, const FitResult& fit, std::size_t from, std::size_t to, double horizon_s);

/// The fit's replay of one window of `trial`: `steps` steps from the measured state of sample
/// t0 (its position, velocity, orientation and angular velocity), the inputs from sample
/// t0 - delay on, with parameters `theta` (vehicle_parameters.hpp's order; the added mass
/// applied). The body's state after each step in `states` (states[j - 1] after step j);
/// false on a numerical fault or a window outside the trial. The online `estimate` replays
/// its windows with the same code (tether/feedback/window_replay.hpp).
bool replay_trial_window(const Trial& trial, const std::array<double, runtime::vp::count>& theta, std::size_t t0,
                         int steps, int delay, std::vector<runtime::BodyState>& states);

/// The first sample of a trial's held-out part (the fit's windows end before it).
std::size_t holdout_start(const Trial& trial, double holdout);

/// Makes the batch fit the online `estimate` processor's refit (its `refit_every_s` key;
/// tether/feedback/batch_refit.hpp). The `tether` program calls it at start; a program of its own
/// that runs scenarios with a refit calls it before loading them.
void register_online_refit();

/// The fit as YAML: `set:` (the PATH=VALUE overrides that put it into the scenario, for
/// `tether run --set` or `--set-file`), then the estimates, combinations and diagnostics.
std::string fit_yaml(const Trial& trial, const FitResult& fit, const std::optional<Prediction>& prediction);

/// The PATH=VALUE overrides alone.
std::vector<std::string> fit_overrides(const Trial& trial, const FitResult& fit);

}  // namespace tether::identify
