// SPDX-License-Identifier: Apache-2.0
// `estimate`: online estimation of a vehicle's model parameters from the residuals between
// what the model predicts and what was measured (J. Brawn, "An AUV Simulator for
// Incorporating Physical Feedback", 2012, chapter 7: correcting the model, not only the state). A model-phase
// processor: it changes the session's model copy before the advance, so the twin runs on the learned parameters.
//
// Parameters theta: thrust coefficient (a gain on the commanded wrench), linear and quadratic
// drag per body axis, buoyancy offset (N, up), water current (x, y); on request a thruster lag
// (thrusters that spin up slower than the model's: a first-order lag on the body's whole
// input, or with `thruster_lag_model: rotors` the body's thrusters' rotors run again from
// their commands with time constants longer by the lag, as `tether identify` runs them), a
// scale of the yaw damping (its windows then compare the heading and yaw rate too), and an
// added mass that is never estimated, only *considered*: its prior uncertainty counts in the
// others' (the data of a trial rarely tell it from the thrust gain). Each update takes a
// window of `horizon_steps` recorded steps (their inputs `input_delay_steps` earlier: a rig's
// dead time): it starts the real step() from the measured state at the window's start, replays
// the inputs with theta, and compares the landing with the measured position and velocity at
// the end. The Jacobian d(landing)/d(theta) comes from forward differences over the same
// replay; theta is then updated by recursive least squares with exponential forgetting (an
// iterated EKF on constant parameters). Windows start every `update_every_steps`, so
// consecutive windows share no measurement and their noise is independent. Bounded: each
// parameter stays in its range, moves at most a fraction of it per update, innovations beyond
// the gate are rejected, and the covariance never exceeds its initial value (forgetting cannot
// wind it up while the vehicle does not excite a parameter).
//
// Honest uncertainty (docs/feedback.md, "Identifiability and coverage"): the information the
// windows carried is accumulated beside the covariance; a parameter is identified when the
// data alone pin it down (its share of the information's weak directions is small). An
// unidentified parameter stays where it is (its prior until it is first identified), its
// uncertainty still counted in the others' (a Schmidt "consider" update). The measurement
// noise is scaled by what the residuals show: by their size against the prediction (NIS per
// degree of freedom above 1: the model is not reality) and by their correlation from window
// to window (a systematic misfit is not independent evidence), so sigma widens when the
// model's structure cannot represent the truth instead of shrinking to a confident wrong value.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "estimate.hpp"

namespace tether::runtime::feedback_detail {

void EstimateProcessor::configure(const ConfigNode& node, const WorldModel& model, int vehicle) {
  node.expect_map({"name",
                   "type",
                   "part",
                   "parameters",
                   "horizon_steps",
                   "update_every_steps",
                   "forgetting",
                   "position_stddev_m",
                   "velocity_stddev_m_s",
                   "orientation_stddev_rad",
                   "angular_velocity_stddev_rad_s",
                   "gate",
                   "thrust_range",
                   "drag_range_factor",
                   "max_buoyancy_offset_n",
                   "max_current_m_s",
                   "max_thruster_lag_s",
                   "added_mass_stddev",
                   "max_step_fraction",
                   "initial_stddev",
                   "identify_weak_share",
                   "identify_information",
                   "misfit_noise_scale",
                   "model_structure",
                   "input_delay_steps",
                   "thruster_lag_model",
                   "refit_every_s",
                   "refit_latency_s",
                   "refit_history_s"});
  body_ = part_body(node, model, vehicle);
  const BodyModel& b = model.bodies[static_cast<std::size_t>(body_)];
  if (!model.water.present || model.gravity_m_s2.norm() <= 0)
    node.error("the estimate processor needs world.water and gravity (drag, buoyancy and current act in water)");
  read_groups(node);
  horizon_ = static_cast<int>(node.integer_or("horizon_steps", 50, 1, 1000));
  every_ = static_cast<int>(node.integer_or("update_every_steps", 5, 1, 1000));
  lambda_ = node.number_or("forgetting", 0.9995, Range{0.9, 1, false});
  sigma_p_ = node.number_or("position_stddev_m", 0.005, kStddevRange);
  sigma_v_ = node.number_or("velocity_stddev_m_s", 0.01, kStddevRange);
  // the heading and yaw rate at a window's end, compared when the yaw drag is estimated
  // (bounded: their squares must stay finite)
  sigma_yaw_ = node.number_or("orientation_stddev_rad", 0.01, kAngleStddevRange);
  sigma_w_ = node.number_or("angular_velocity_stddev_rad_s", 0.01, kRateStddevRange);
  gate_ = node.number_or("gate", 50.0, Range::non_negative());
  const auto thrust_range = node.numbers_or("thrust_range", {0.3, 3.0}, 2, Range::positive());
  const double drag_factor = node.number_or("drag_range_factor", 5.0, Range{1, 1e6, true});
  const double weight_n = b.mass_kg * model.gravity_m_s2.norm();
  const double max_buoy = node.number_or("max_buoyancy_offset_n", 0.25 * weight_n, Range::positive());
  const double max_current = node.number_or("max_current_m_s", 1.0, Range::positive());
  const double max_lag = node.number_or("max_thruster_lag_s", 0.3, Range::positive());
  const double added_sd = node.number_or("added_mass_stddev", 0.1, kStddevRange);
  step_fraction_ = node.number_or("max_step_fraction", 0.05, Range{0, 1, true});
  const double sd_scale = node.number_or("initial_stddev", 1.0, kStddevRange);
  // a direction of the information is weak when the data shrink the prior's sigma along it
  // less than sqrt(identify_information) times; a parameter more than identify_weak_share
  // in weak directions is not identified
  weak_information_ = node.number_or("identify_information", 100.0, Range::positive());
  weak_share_max_ = node.number_or("identify_weak_share", 0.2, Range{0, 1, false});
  // residuals this many times the stated noise (their size times their correlation): the
  // model cannot represent the vehicle, and no estimate is reported as identified
  misfit_limit_ = node.number_or("misfit_noise_scale", 10.0, Range{1, 1e6, false});
  // `exact`: the user knows the model's structure is the vehicle's and only its values are
  // unknown (a lab check): plain recursive least squares, every parameter moves, sigma is the
  // covariance's; identifiability and misfit are still reported. `uncertain` (the default):
  // the consider update and the sigma widened by what the residuals show.
  structure_exact_ = node.choice_or("model_structure", "uncertain", {"uncertain", "exact"}) == "exact";
  // the steps between a command and the measured motion it drives: a rig (`mqtt`,
  // `stand_in`) gets step k's commands with step k+1's request, so its S_{k+1} was driven by
  // step k-1's (docs/feedback.md); the replays take each step's input this many steps back
  delay_ = static_cast<int>(node.integer_or("input_delay_steps", 0, 0, 100));
  // how the thruster lag acts: `filter`, a first-order lag on the body's whole input (the
  // default: against the mismatched stand-in it predicts best), or `rotors`, the body's
  // thrusters' rotors run again with time constants longer by the lag (what `tether identify`
  // and the stand-in's hidden truth mean by it; found when the structure is the vehicle's).
  // docs/feedback.md, "The thruster lag: a filter or the rotors"
  rotor_lag_ = node.choice_or("thruster_lag_model", "filter", {"filter", "rotors"}) == "rotors";

  // the batch refit (docs/feedback.md, "The refit"): the fit told what the windows are
  RefitOptions refit;
  refit.body = body_, refit.input_delay_steps = delay_, refit.active = active_, refit.added_mass_stddev = added_sd;
  refit.position_stddev_m = sigma_p_, refit.velocity_stddev_m_s = sigma_v_, refit.orientation_stddev_rad = sigma_yaw_;
  refit_.configure(node, model, refit);
  set_bounds_and_prior(
      model, {thrust_range[0], thrust_range[1], drag_factor, max_buoy, max_current, max_lag, added_sd, sd_scale});
  p_ = p0_;
  // the estimated parameters, and the identifiability workspace sized for them
  n_active_ = 0;
  for (int i = 0; i < n_params; ++i)
    if (active_[static_cast<std::size_t>(i)] && i != i_added) index_[static_cast<std::size_t>(n_active_++)] = i;
  scaled_.resize(n_active_, n_active_);
  mu_.resize(n_active_);
  eig_.emplace(n_active_);  // built in place: the solver's status is unset until compute()
  info_.setZero();
  identified_.fill(false);
  weak_share_.fill(1.0);
  base_ = vehicle_parameter_base(model, body_);
  // pre-sized: the step never allocates
  windows_.configure(body_, horizon_, active_[i_lag] ? lag_warmup_steps : 0, delay_, model.bodies.size());
}

// `parameters:`: which groups are estimated (the default groups without it)
void EstimateProcessor::read_groups(const ConfigNode& node) {
  active_.fill(false);
  if (node.has("parameters")) {
    const ConfigNode ps = node["parameters"];
    if (ps.expect_sequence())
      for (std::size_t i = 0; i < ps.size(); ++i) {
        const std::string g = ps.at(i).yaml().IsScalar() ? ps.at(i).yaml().as<std::string>() : "";
        bool known = false;
        for (const Group& gr : groups)
          if (g == gr.name) {
            known = true;
            for (int j = 0; j < gr.count; ++j) active_[static_cast<std::size_t>(gr.first + j)] = true;
          }
        if (!known)
          ps.at(i).error("unknown parameter group \"" + g +
                         "\" (known: thrust, linear_drag, quadratic_drag, buoyancy, current, "
                         "thruster_lag, added_mass, angular_drag)");
      }
  } else {
    for (int g = 0; g < default_groups; ++g)
      for (int j = 0; j < groups[static_cast<std::size_t>(g)].count; ++j)
        active_[static_cast<std::size_t>(groups[static_cast<std::size_t>(g)].first + j)] = true;
  }
}

// the nominal values (the scenario's), their bounds and the prior
void EstimateProcessor::set_bounds_and_prior(const WorldModel& model, const VehicleParameterRanges& ranges) {
  const auto nominal = nominal_vehicle_parameters(model, body_);
  for (int i = 0; i < n_params; ++i) theta_[i] = nominal[static_cast<std::size_t>(i)];
  nominal_ = theta_;
  const VehicleParameterPrior prior = vehicle_parameter_prior(nominal, ranges);
  p0_.setZero();
  for (int i = 0; i < n_params; ++i) {
    const auto u = static_cast<std::size_t>(i);
    lo_[i] = prior.lo[u];
    hi_[i] = prior.hi[u];
    if (active_[u]) p0_(i, i) = prior.sd[u] * prior.sd[u];
    step_max_[i] = step_fraction_ * (hi_[i] - lo_[i]);
  }
  if (refit_.on()) lo_[i_added] = -0.5, hi_[i_added] = 2;  // a refit moves it: the fit's bounds
}

void EstimateProcessor::update_model(const FeedbackContext& ctx, WorldModel& model, const WorldState& state,
                                     StepInputs& inputs) {
  const auto k = static_cast<std::int64_t>(ctx.step);
  if (static_cast<std::size_t>(body_) >= inputs.wrenches.size()) return;
  if (rotor_lag_ && active_[i_lag] && ctx.devices && !windows_.thrusters_looked_up())
    windows_.look_up_thrusters(*ctx.devices);
  // S_k's entry: its velocities from the twin when the measurement had none
  EstimateWindows::Entry& now = windows_.entry(k);
  if (now.time_index == k && now.valid && !now.has_velocity) {
    now.velocity = linear_velocity(model, state, body_);
    now.angular_velocity = angular_velocity(model, state, body_);
  }
  if (now.time_index != k) now = EstimateWindows::fresh_entry(k);
  now.input = inputs.wrenches[static_cast<std::size_t>(body_)];  // as commanded, before the gain
  now.has_input = true;
  if (refit_.on())
    if (const RefitResult* r = refit_.step(ctx, state, now.input)) take_refit(*r);
  if (!windows_.thrusters().empty()) windows_.record_rotors(*ctx.devices, k);

  // the measurement of S_{k+1} goes to the next entry
  EstimateWindows::Entry& next = windows_.entry(k + 1);
  next = EstimateWindows::fresh_entry(k + 1);
  if (const Measurement* m = measurement_of(ctx, body_)) {
    next.valid = true;
    next.state.position_m = m->position_m;
    next.state.orientation = m->orientation;
    next.has_velocity = m->has_velocity;
    if (m->has_velocity) {
      next.velocity = m->velocity_m_s;
      next.angular_velocity = m->angular_velocity_rad_s;
    }
    // a window from S_{k+1-N} to S_{k+1}, every `every_` steps
    if ((k + 1) % every_ == 0) update_from_window(ctx, model, state, k + 1 - horizon_, k + 1);
  }
  apply(model);
  // the twin's thrusters as learned: lagged (their rotors slower), then scaled
  BodyWrench& w = inputs.wrenches[static_cast<std::size_t>(body_)];
  if (!windows_.thrusters().empty())
    windows_.add_live_rotors(k, theta_[i_lag], ctx.dt_s, w);
  else
    w = lag_step(live_lag_, w, theta_[i_lag], ctx.dt_s);
  scale(w, theta_[0]);
}

void EstimateProcessor::snapshot(std::string& out) const {
  put_bytes(out, theta_);
  put_bytes(out, p_);
  put_bytes(out, updates_);
  put_bytes(out, rejected_);
  put_bytes(out, nis_);
  put_bytes(out, info_);
  put_bytes(out, alpha_);
  put_bytes(out, rho_num_);
  put_bytes(out, rho_den_);
  put_bytes(out, rho_);
  put_bytes(out, noise_scale_);
  put_bytes(out, condition_);
  put_bytes(out, weak_share_);
  for (bool id : identified_) put_bytes(out, static_cast<std::uint8_t>(id));
  put_bytes(out, systematic_);
  put_bytes(out, misfit_widening_);
  put_bytes(out, static_cast<std::uint8_t>(misfit_));
  put_bytes(out, slow_noise_scale_);
  put_bytes(out, r2_);
  put_bytes(out, rbar_);
  put_bytes(out, last_rows_);
  put_bytes(out, last_nu_);
  put_wrench(out, live_lag_);
  // the refit's history is not kept (the trial so far): only an empty one restores
  put_bytes(out, static_cast<std::uint64_t>(refit_.captured()));
  windows_.snapshot(out);  // the ring and the rotors' history
}

bool EstimateProcessor::restore(std::string_view b) {
  if (!get_bytes(b, theta_) || !get_bytes(b, p_) || !get_bytes(b, updates_) || !get_bytes(b, rejected_) ||
      !get_bytes(b, nis_) || !get_bytes(b, info_) || !get_bytes(b, alpha_) || !get_bytes(b, rho_num_) ||
      !get_bytes(b, rho_den_) || !get_bytes(b, rho_) || !get_bytes(b, noise_scale_) || !get_bytes(b, condition_) ||
      !get_bytes(b, weak_share_))
    return false;
  for (bool& id : identified_) {
    std::uint8_t v = 0;
    if (!get_bytes(b, v)) return false;
    id = v != 0;
  }
  std::uint8_t misfit = 0;
  if (!get_bytes(b, systematic_) || !get_bytes(b, misfit_widening_) || !get_bytes(b, misfit) ||
      !get_bytes(b, slow_noise_scale_) || !get_bytes(b, r2_) || !get_bytes(b, rbar_) || !get_bytes(b, last_rows_) ||
      !get_bytes(b, last_nu_) || !get_wrench(b, live_lag_))
    return false;
  misfit_ = misfit != 0;
  std::uint64_t refit_captured = 0;
  if (!get_bytes(b, refit_captured) || refit_captured != 0) return false;
  refit_.reset();  // made again on the next step: the schedule counts from there
  return windows_.restore(b);
}

std::unique_ptr<FeedbackProcessor> make_estimate() { return std::make_unique<EstimateProcessor>(); }

}  // namespace tether::runtime::feedback_detail
