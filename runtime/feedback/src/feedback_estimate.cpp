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
#include <array>
#include <cmath>
#include <limits>
#include <numbers>
#include <memory>
#include <optional>
#include <string>

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <nlohmann/json.hpp>

#include "estimate_refit.hpp"
#include "feedback_processors.hpp"
#include "tether/hal/actuators.hpp"
#include "tether/hal/device_bank.hpp"
#include "tether/feedback/vehicle_parameters.hpp"

namespace tether::runtime::feedback_detail {

namespace {

constexpr int n_params = vp::count;
using VecP = Eigen::Matrix<double, n_params, 1>;
using MatP = Eigen::Matrix<double, n_params, n_params>;
using Mat6 = Eigen::Matrix<double, 6, 6>;
using Vec8 = Eigen::Matrix<double, 8, 1>;
using Vec15 = Eigen::Matrix<double, 15, 1>;
using Mat15 = Eigen::Matrix<double, 15, 15>;

static_assert(n_params == 13);
constexpr const auto& param_names = vehicle_parameter_names;

// parameter groups as the scenario names them
struct Group {
  const char* name;
  int first, count;
};
constexpr std::array<Group, 8> groups = {{{"thrust", 0, 1},
                                          {"linear_drag", 1, 3},
                                          {"quadratic_drag", 4, 3},
                                          {"buoyancy", 7, 1},
                                          {"current", 8, 2},
                                          {"thruster_lag", 10, 1},
                                          {"added_mass", 11, 1},
                                          {"angular_drag", 12, 1}}};
constexpr int default_groups = 5;  // without `parameters`: the first five
constexpr int i_lag = 10, i_added = 11, i_yaw = 12;
// the filter of a thruster lag starts this many steps before a window (its state is the
// inputs' history, not measured)
constexpr int lag_warmup_steps = 100;

class EstimateProcessor final : public FeedbackProcessor {
 public:
  void configure(const ConfigNode& node, const WorldModel& model, int vehicle) override {
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
    warmup_ = active_[i_lag] ? lag_warmup_steps : 0;
    // pre-sized: the step never allocates
    ring_.assign(static_cast<std::size_t>(horizon_ + warmup_ + delay_ + 2), Entry{});
    trial_.bodies.resize(model.bodies.size());
    trial_inputs_.resize(model.bodies.size());
  }

 private:
  // `parameters:`: which groups are estimated (the default groups without it)
  void read_groups(const ConfigNode& node) {
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
  void set_bounds_and_prior(const WorldModel& model, const VehicleParameterRanges& ranges) {
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

 public:
  FeedbackPhase phase() const override { return FeedbackPhase::model; }

  void update_model(const FeedbackContext& ctx, WorldModel& model, const WorldState& state,
                    StepInputs& inputs) override {
    const auto k = static_cast<std::int64_t>(ctx.step);
    if (static_cast<std::size_t>(body_) >= inputs.wrenches.size()) return;
    if (rotor_lag_ && active_[i_lag] && ctx.devices && !thrusters_looked_up_) look_up_thrusters(*ctx.devices);
    // S_k's entry: its velocities from the twin when the measurement had none
    Entry& now = entry(k);
    if (now.time_index == k && now.valid && !now.has_velocity) {
      now.velocity = linear_velocity(model, state, body_);
      now.angular_velocity = angular_velocity(model, state, body_);
    }
    if (now.time_index != k) now = fresh_entry(k);
    now.input = inputs.wrenches[static_cast<std::size_t>(body_)];  // as commanded, before the gain
    now.has_input = true;
    if (refit_.on())
      if (const RefitResult* r = refit_.step(ctx, state, now.input)) take_refit(*r);
    if (!thrusters_.empty()) record_rotors(*ctx.devices, k);

    // the measurement of S_{k+1} goes to the next entry
    Entry& next = entry(k + 1);
    next = fresh_entry(k + 1);
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
    if (!thrusters_.empty())
      add_live_rotors(k, ctx.dt_s, w);
    else
      w = lag_step(live_lag_, w, theta_[i_lag], ctx.dt_s);
    scale(w, theta_[0]);
  }

  // the reported sigma: the covariance's, widened by the misfit for an identified parameter;
  // an unidentified one reports its covariance (its prior, less what the data taught)
  double sigma(int i) const {
    const double sd = std::sqrt(std::max(p_(i, i), 0.0));
    if (structure_exact_ || !identified_[static_cast<std::size_t>(i)]) return sd;
    return std::min(sd * misfit_widening_, std::sqrt(p0_(i, i)));
  }

  // identified as a physical value: the data pin it down, the model fits (under a misfit the
  // estimates are the best fit of a model that cannot represent the vehicle), and its sigma,
  // widened by the misfit, is still well inside the prior's
  bool reported_identified(int i) const {
    return identified_[static_cast<std::size_t>(i)] && !misfit_ && sigma(i) < 0.5 * std::sqrt(p0_(i, i));
  }

  void summarize(nlohmann::json& out) const override {
    out["updates"] = updates_;
    out["rejected"] = rejected_;
    out["noise_scale"] = noise_scale_;
    out["residual_correlation"] = rho_;
    out["systematic_residual"] = systematic_;
    out["misfit_widening"] = misfit_widening_;
    out["misfit"] = misfit_;
    out["model_structure"] = structure_exact_ ? "exact" : "uncertain";
    if (active_[i_lag])
      out["thruster_lag_model"] = !thrusters_.empty() ? "rotors"
                                  : rotor_lag_        ? "filter (no thrusters on the body)"
                                                      : "filter";
    out["mean_noise_scale"] = slow_noise_scale_;
    refit_.summarize(out);
    out["condition"] = condition_;
    auto& est = out["estimates"] = nlohmann::json::object();
    auto& sd = out["stddev"] = nlohmann::json::object();
    auto& id = out["identified"] = nlohmann::json::object();
    for (int i = 0; i < n_params; ++i) {
      const auto u = static_cast<std::size_t>(i);
      if (!active_[u]) continue;
      est[param_names[u]] = theta_[i];
      sd[param_names[u]] = sigma(i);
      id[param_names[u]] = reported_identified(i);
    }
    summarize_combinations(out);
    summarize_weak(out);
  }

  // the directions the trial left weak (the data shrank the prior's sigma along them less than
  // sqrt(identify_information) times), each with its loadings in prior units and the
  // manoeuvre that would strengthen it (the advice `tether identify` gives)
  void summarize_weak(nlohmann::json& out) const {
    auto& weak = out["weak"] = nlohmann::json::array();
    if (updates_ == 0 || n_active_ == 0) return;
    const auto& v = eig_->eigenvectors();
    for (int k = 0; k < n_active_; ++k) {
      if (mu_[k] >= weak_information_) continue;
      nlohmann::json loadings = nlohmann::json::object();
      int top = 0;
      for (int a = 0; a < n_active_; ++a) {
        if (std::abs(v(a, k)) > std::abs(v(top, k))) top = a;
        if (std::abs(v(a, k)) >= 0.3)
          loadings[param_names[static_cast<std::size_t>(index_[static_cast<std::size_t>(a)])]] = v(a, k);
      }
      weak.push_back({{"shrink", std::sqrt(1 + mu_[k])},
                      {"loadings", loadings},
                      {"advice", manoeuvre_advice(index_[static_cast<std::size_t>(top)])}});
    }
  }

  // with the added mass considered: thrust, drags and buoyancy offset over the effective mass
  // (1 + a), the yaw drag over the effective inertia: what the data pin down (docs/feedback.md,
  // "The offline fit"); sigma from the covariance, the considered added mass's share included,
  // widened by the misfit
  struct Combination {
    std::string name;
    double value = 0, stddev = 0;
  };
  std::vector<Combination> combinations() const {
    std::vector<Combination> out;
    if (!active_[i_added]) return out;
    const double eff = 1 + theta_[i_added];
    for (int i : {0, 1, 2, 3, 4, 5, 6, 7, i_yaw}) {
      const auto u = static_cast<std::size_t>(i);
      if (!active_[u]) continue;
      // the buoyancy offset with the model's own net buoyancy: the static force the effective
      // mass carries (as `tether identify` names it)
      const double v = theta_[i] + (i == 7 ? net_buoyancy_n(base_) : 0.0);
      VecP g = VecP::Zero();
      g[i] = 1 / eff;
      g[i_added] = -v / (eff * eff);
      const double sd = std::sqrt(std::max(g.dot(p_ * g), 0.0)) * (structure_exact_ ? 1.0 : misfit_widening_);
      const double prior_sd = std::sqrt(std::max(g.dot(p0_ * g), 0.0));
      out.push_back({i == 0       ? std::string("thrust_per_effective_mass")
                     : i == 7     ? std::string("net_buoyancy_per_effective_mass_n")
                     : i == i_yaw ? std::string("angular_drag_per_effective_inertia")
                                  : std::string(param_names[u]) + "_per_effective_mass",
                     v / eff, std::min(sd, prior_sd)});
    }
    return out;
  }
  void summarize_combinations(nlohmann::json& out) const {
    if (!active_[i_added]) return;
    auto& comb = out["combinations"] = nlohmann::json::object();
    for (const Combination& c : combinations()) comb[c.name] = {{"value", c.value}, {"stddev", c.stddev}};
  }
  // live: each combination and its sigma, as getParameters answers them
  void read_only_parameters(std::vector<std::pair<std::string, double>>& out) const override {
    for (const Combination& c : combinations()) {
      out.emplace_back("combinations." + c.name, c.value);
      out.emplace_back("combinations." + c.name + "_stddev", c.stddev);
    }
  }
  std::vector<std::string> record_fields() const override {
    std::vector<std::string> out;
    for (const char* n : param_names) out.emplace_back(n);
    for (const char* n : param_names) out.emplace_back(std::string(n) + "_stddev");
    for (const char* n : param_names) out.emplace_back(std::string(n) + "_identified");
    out.emplace_back("nis");
    out.emplace_back("noise_scale");
    return out;
  }
  void record(std::vector<double>& out) const override {
    for (int i = 0; i < n_params; ++i) out.push_back(theta_[i]);
    for (int i = 0; i < n_params; ++i) out.push_back(sigma(i));
    for (int i = 0; i < n_params; ++i) out.push_back(reported_identified(i) ? 1.0 : 0.0);
    out.push_back(nis_);
    out.push_back(noise_scale_);
  }
  void snapshot(std::string& out) const override {
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
    for (const Entry& e : ring_) put_entry(out, e);
    // the rotors' history (empty without thrusters on the body or a thruster lag)
    put_bytes(out, static_cast<std::uint32_t>(speed_end_.size()));
    for (const auto* v : {&speed_end_, &live_speed_, &rotor_cmd_, &rotor_speed_})
      for (double x : *v) put_bytes(out, x);
  }
  bool restores_after_start() const override { return !refit_.on(); }
  bool restore(std::string_view b) override {
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
    for (Entry& e : ring_)
      if (!get_entry(b, e)) return false;
    std::uint32_t n = 0;
    if (!get_bytes(b, n) || (thrusters_looked_up_ && n != thrusters_.size())) return false;
    // exactly the rotors' history of n thrusters is left (checked before it is allocated)
    if (b.size() != sizeof(double) * std::size_t{n} * (2 + 2 * ring_.size())) return false;
    size_rotors(n);
    for (auto* v : {&speed_end_, &live_speed_, &rotor_cmd_, &rotor_speed_})
      for (double& x : *v)
        if (!get_bytes(b, x)) return false;
    for (RotorDelta& d : deltas_) d.dtau = -1;  // computed from the timeline before the restore
    return b.empty();
  }

 private:
  // one recorded step: the measured state at time index t and the input from t to t+1
  struct Entry {
    std::int64_t time_index = -1;
    bool valid = false;         // state measured
    bool has_velocity = false;  // its velocities measured (else taken from the twin)
    bool has_input = false;
    BodyState state;  // position and orientation
    Vec3 velocity{0, 0, 0}, angular_velocity{0, 0, 0};
    BodyWrench input;
  };
  static Entry fresh_entry(std::int64_t t) {
    Entry e;
    e.time_index = t;
    return e;
  }
  // field by field: no padding bytes in keyframes
  static void put_entry(std::string& out, const Entry& e) {
    put_bytes(out, e.time_index);
    put_bytes(out, static_cast<std::uint8_t>(e.valid | e.has_velocity << 1 | e.has_input << 2));
    put_bytes(out, e.state.position_m);
    put_bytes(out, e.state.orientation.coeffs());
    put_bytes(out, e.velocity);
    put_bytes(out, e.angular_velocity);
    put_wrench(out, e.input);
  }
  static void put_wrench(std::string& out, const BodyWrench& w) {
    put_bytes(out, w.force_world_n);
    put_bytes(out, w.torque_world_nm);
    put_bytes(out, w.force_body_n);
    put_bytes(out, w.torque_body_nm);
  }
  static bool get_wrench(std::string_view& in, BodyWrench& w) {
    return get_bytes(in, w.force_world_n) && get_bytes(in, w.torque_world_nm) && get_bytes(in, w.force_body_n) &&
           get_bytes(in, w.torque_body_nm);
  }
  static bool get_entry(std::string_view& in, Entry& e) {
    std::uint8_t flags = 0;
    Eigen::Vector4d q;
    const bool ok = get_bytes(in, e.time_index) && get_bytes(in, flags) && get_bytes(in, e.state.position_m) &&
                    get_bytes(in, q) && get_bytes(in, e.velocity) && get_bytes(in, e.angular_velocity) &&
                    get_wrench(in, e.input);
    e.state.orientation.coeffs() = q;
    e.valid = flags & 1, e.has_velocity = flags & 2, e.has_input = flags & 4;
    return ok;
  }
  Entry& entry(std::int64_t t) { return ring_[static_cast<std::size_t>(t % static_cast<std::int64_t>(ring_.size()))]; }

  void apply(WorldModel& model) const { apply(model, theta_); }
  void apply(WorldModel& model, const VecP& th) const {
    apply_vehicle_parameters(base_, th.data(), active_[i_added], model);
    if (active_[i_yaw]) apply_angular_drag(base_, th[i_yaw], model);
  }

  // replays steps [t0, t1) from the measured S_t0 (its velocity changed by dv) with
  // parameters th: the landing (position, velocity, heading, yaw rate) and the positions at
  // the checkpoints (track); false on a fault
  bool replay(WorldModel& model, const WorldState& twin, std::int64_t t0, std::int64_t t1, double dt, const VecP& th,
              Vec8& landing, const Vec3& dv = Vec3::Zero(), Vec15* track = nullptr) {
    apply(model, th);
    trial_.bodies.assign(twin.bodies.begin(), twin.bodies.end());
    BodyState& start = trial_.bodies[static_cast<std::size_t>(body_)];
    const Entry& e0 = entry(t0);
    const BodyModel& b = model.bodies[static_cast<std::size_t>(body_)];
    start = e0.state;
    start.linear_momentum = b.mass_kg * (e0.velocity + dv);
    const Mat3 r0 = e0.state.orientation.toRotationMatrix();
    start.angular_momentum = r0 * b.inertia_body * r0.transpose() * e0.angular_velocity;
    for (auto& w : trial_inputs_.wrenches) w = BodyWrench{};
    const bool rotors = !thrusters_.empty();
    const std::vector<BodyWrench>* delta = rotors ? &rotor_delta(t0 - delay_, t1 - t0, th[i_lag], dt) : nullptr;
    BodyWrench lag = rotors ? BodyWrench{} : lag_before(t0 - delay_, th[i_lag], dt);
    int next_checkpoint = 0;
    for (std::int64_t t = t0; t < t1; ++t) {
      BodyWrench& w = trial_inputs_.wrenches[static_cast<std::size_t>(body_)];
      if (rotors) {
        const BodyWrench& d = (*delta)[static_cast<std::size_t>(t - t0)];
        w = entry(t - delay_).input;
        w.force_body_n += d.force_body_n;
        w.torque_body_nm += d.torque_body_nm;
      } else {
        w = lag_step(lag, entry(t - delay_).input, th[i_lag], dt);
      }
      scale(w, th[0]);
      if (step(model, trial_, trial_inputs_, dt, nullptr, scratch_) != StepStatus::ok) return false;
      if (track && next_checkpoint < checkpoints && t + 1 == checkpoint(t0, t1, next_checkpoint))
        track->segment<3>(3 * next_checkpoint++) = trial_.bodies[static_cast<std::size_t>(body_)].position_m;
    }
    const BodyState& s = trial_.bodies[static_cast<std::size_t>(body_)];
    landing.head<3>() = s.position_m;
    landing.segment<3>(3) = s.linear_momentum * model.bodies[static_cast<std::size_t>(body_)].inv_mass;
    landing[6] = heading(s.orientation);
    landing[7] = angular_velocity(model, trial_, body_).z();
    return true;
  }

  static void scale(BodyWrench& w, double c) { scale_wrench(w, c); }
  // the body x axis' heading in the horizontal plane, and an angle's difference in (-pi, pi]
  static double heading(const Quat& q) {
    const Mat3 r = q.toRotationMatrix();
    return std::atan2(r(1, 0), r(0, 0));
  }
  static double wrapped(double a) { return std::remainder(a, 2 * std::numbers::pi); }
  static BodyWrench lag_step(BodyWrench& y, const BodyWrench& in, double tau, double dt) {
    return lag_wrench_step(y, in, tau, dt);
  }
  // the lag filter's state at the start of a window whose first input is t0's: settled on the
  // earliest input the warm-up keeps, then run over the inputs up to t0
  BodyWrench lag_before(std::int64_t t0, double tau, double dt) {
    BodyWrench y = entry(t0).input;
    bool settled = false;
    for (std::int64_t t = std::max<std::int64_t>(t0 - warmup_, 0); t < t0; ++t) {
      const Entry& e = entry(t);
      if (e.time_index != t || !e.has_input) continue;
      if (!settled) y = e.input, settled = true;
      (void)lag_step(y, e.input, tau, dt);
    }
    return y;
  }

  // --- the thruster lag on the body's thrusters: their rotors run again, slower ---

  void look_up_thrusters(const hal::DeviceBank& bank) {
    thrusters_looked_up_ = true;
    thrusters_ = body_thrusters(bank, body_);
    if (thrusters_.empty()) return;
    if (speed_end_.size() != thrusters_.size()) size_rotors(thrusters_.size());  // else restored
    for (RotorDelta& d : deltas_) d.delta.assign(static_cast<std::size_t>(horizon_), BodyWrench{});
  }
  // the rotors' history for n thrusters, nothing known yet (NaN: the speed at a step's start
  // is known from the second step seen on)
  void size_rotors(std::size_t n) {
    const double unknown = std::numeric_limits<double>::quiet_NaN();
    speed_end_.assign(n, unknown);
    live_speed_.assign(n, unknown);
    rotor_cmd_.assign(ring_.size() * n, 0.0);
    rotor_speed_.assign(ring_.size() * n, unknown);
  }
  std::size_t rotor_slot(std::int64_t t, std::size_t j) const {
    return static_cast<std::size_t>(t % static_cast<std::int64_t>(ring_.size())) * thrusters_.size() + j;
  }
  bool rotors_known(std::int64_t t) const { return thrusters_.empty() || !std::isnan(rotor_speed_[rotor_slot(t, 0)]); }
  // step k: each thruster's command as held (the bank has actuated it) and its rotor's speed
  // at the step's start (the end of the step before)
  void record_rotors(const hal::DeviceBank& bank, std::int64_t k) {
    for (std::size_t j = 0; j < thrusters_.size(); ++j) {
      const hal::Sample& held = bank.sample(thrusters_[j].device);
      rotor_cmd_[rotor_slot(k, j)] = held.valid ? held.ch[0] : 0.0;
      rotor_speed_[rotor_slot(k, j)] = speed_end_[j];
      speed_end_[j] = bank.actuator_state(thrusters_[j].device).x[0];
    }
  }
  // thruster j's rotor at `speed` (advanced) run with `slow` over step t: its mean thrust
  double slow_thrust(std::size_t j, const hal::ThrusterParams& slow, double& speed, std::int64_t t, double dt) const {
    const hal::RotorStep r =
        hal::thruster_advance(slow, speed, hal::thruster_command(slow, rotor_cmd_[rotor_slot(t, j)]), dt);
    speed = r.speed_rad_s;
    return r.mean_thrust_n;
  }
  // the twin's own thrust of thruster j over step t (its recorded speed and command: the same
  // function on the same numbers as the bank's, so an unchanged rotor adds exactly nothing)
  double twin_thrust(std::size_t j, std::int64_t t, double dt) const {
    const hal::ThrusterParams& p = thrusters_[j].params;
    const std::size_t i = rotor_slot(t, j);
    return hal::thruster_advance(p, rotor_speed_[i], hal::thruster_command(p, rotor_cmd_[i]), dt).mean_thrust_n;
  }
  // the live twin: its rotors run slower by the lag estimated so far
  void add_live_rotors(std::int64_t k, double dt, BodyWrench& w) {
    for (std::size_t j = 0; j < thrusters_.size(); ++j) {
      if (std::isnan(rotor_speed_[rotor_slot(k, j)])) {  // the first step: start with the twin's
        live_speed_[j] = speed_end_[j];
        continue;
      }
      if (std::isnan(live_speed_[j])) live_speed_[j] = rotor_speed_[rotor_slot(k, j)];
      const double slow = slow_thrust(j, slower_rotor(thrusters_[j].params, theta_[i_lag]), live_speed_[j], k, dt);
      thrusters_[j].add_thrust(w, slow - twin_thrust(j, k, dt));
    }
  }
  // the change of the input at steps [u0, u0 + steps) when the rotors run with time constants
  // longer by dtau: from the twin's recorded speeds a warm-up of five time constants earlier
  // (as far as the ring and the history reach). Two kept: a window's base and its lag probe.
  const std::vector<BodyWrench>& rotor_delta(std::int64_t u0, std::int64_t steps, double dtau, double dt) {
    for (RotorDelta& d : deltas_)
      if (d.dtau == dtau && d.u0 == u0) return d.delta;
    std::swap(deltas_[0], deltas_[1]);  // the older is overwritten
    RotorDelta& out = deltas_[0];
    out.dtau = dtau, out.u0 = u0;
    std::fill(out.delta.begin(), out.delta.end(), BodyWrench{});
    double tau = 0;
    for (const BodyThruster& th : thrusters_) tau = std::max(tau, th.params.time_constant_s + dtau);
    const auto warm = static_cast<std::int64_t>(std::ceil(5 * tau / dt));
    std::int64_t from = u0;
    while (from > std::max<std::int64_t>(u0 - warm, 1) && entry(from - 1).time_index == from - 1 &&
           entry(from - 1).has_input && rotors_known(from - 1))
      --from;
    for (std::size_t j = 0; j < thrusters_.size(); ++j) {
      const hal::ThrusterParams slow = slower_rotor(thrusters_[j].params, dtau);
      double speed = rotor_speed_[rotor_slot(from, j)];
      for (std::int64_t u = from; u < u0 + steps; ++u) {
        const double thrust = slow_thrust(j, slow, speed, u, dt);
        if (u >= u0)
          thrusters_[j].add_thrust(out.delta[static_cast<std::size_t>(u - u0)], thrust - twin_thrust(j, u, dt));
      }
    }
    return out.delta;
  }

  void update_from_window(const FeedbackContext& ctx, WorldModel& model, const WorldState& twin, std::int64_t t0,
                          std::int64_t t1) {
    if (t0 - delay_ < 0) return;
    const Entry& start = entry(t0);
    if (start.time_index != t0 || !start.valid) return;
    for (std::int64_t t = t0 - delay_; t < t1 - delay_; ++t)
      if (entry(t).time_index != t || !entry(t).has_input || !rotors_known(t)) return;
    if (!start.has_velocity) return update_from_positions(ctx, model, twin, t0, t1);
    const Entry& end = entry(t1);
    Vec8 measured;
    measured << end.state.position_m, end.velocity, heading(end.state.orientation), end.angular_velocity.z();

    Vec8 base;
    if (!replay(model, twin, t0, t1, ctx.dt_s, theta_, base)) return fault(model);
    Eigen::Matrix<double, 8, n_params> jac = Eigen::Matrix<double, 8, n_params>::Zero();
    for (int i = 0; i < n_params; ++i) {
      if (!active_[static_cast<std::size_t>(i)]) continue;
      VecP th = theta_;
      const double h = probe_step(i);
      th[i] += h;
      Vec8 probe;
      if (!replay(model, twin, t0, t1, ctx.dt_s, th, probe)) return fault(model);
      probe[6] = base[6] + wrapped(probe[6] - base[6]);
      jac.col(i) = (probe - base) / h;
    }
    apply(model);

    // measurement noise of the window: both ends' noise, and the start velocity's noise
    // carried over the horizon (the start's angular velocity likewise for the heading)
    const double span_s = static_cast<double>(t1 - t0) * ctx.dt_s;
    const double sv_start = start.has_velocity ? sigma_v_ : 3 * sigma_v_;
    Vec8 r;
    const double rp = 2 * sigma_p_ * sigma_p_ + span_s * span_s * sv_start * sv_start;
    const double rv = end.has_velocity ? 2 * sigma_v_ * sigma_v_ : 1e6;  // unmeasured: ignored
    const double ry = 2 * sigma_yaw_ * sigma_yaw_ + span_s * span_s * sigma_w_ * sigma_w_;
    const double rw = end.has_velocity ? 2 * sigma_w_ * sigma_w_ : 1e6;
    r << rp, rp, rp, rv, rv, rv, ry, rw;
    Vec8 nu = measured - base;
    nu[6] = wrapped(nu[6]);
    // the heading and yaw rate only where the yaw drag is estimated: the other parameters'
    // residuals stay as they were without it
    if (active_[i_yaw]) return rls<8>(nu, jac, r.asDiagonal().toDenseMatrix(), model);
    rls<6>(nu.head<6>(), jac.topRows<6>(), r.head<6>().asDiagonal().toDenseMatrix(), model);
  }

  // a window without measured velocities: the positions at `checkpoints` points of the
  // window, with the start's position and velocity as nuisance parameters projected out
  // (they are fitted along with theta instead of being taken from the twin, whose velocity
  // leans on the very model being fitted)
  void update_from_positions(const FeedbackContext& ctx, WorldModel& model, const WorldState& twin, std::int64_t t0,
                             std::int64_t t1) {
    if (t1 - t0 < checkpoints) return;
    Vec15 measured;
    for (int j = 0; j < checkpoints; ++j) {
      const Entry& e = entry(checkpoint(t0, t1, j));
      if (e.time_index != checkpoint(t0, t1, j) || !e.valid) return;
      measured.segment<3>(3 * j) = e.state.position_m;
    }
    Vec8 landing;
    Vec15 base, probe;
    if (!replay(model, twin, t0, t1, ctx.dt_s, theta_, landing, Vec3::Zero(), &base)) return fault(model);
    Eigen::Matrix<double, 15, n_params> jac = Eigen::Matrix<double, 15, n_params>::Zero();
    for (int i = 0; i < n_params; ++i) {
      if (!active_[static_cast<std::size_t>(i)]) continue;
      VecP th = theta_;
      const double h = probe_step(i);
      th[i] += h;
      if (!replay(model, twin, t0, t1, ctx.dt_s, th, landing, Vec3::Zero(), &probe)) return fault(model);
      jac.col(i) = (probe - base) / h;
    }
    // nuisance: start position (moves every checkpoint alike) and start velocity
    Eigen::Matrix<double, 15, 6> jn = Eigen::Matrix<double, 15, 6>::Zero();
    for (int j = 0; j < checkpoints; ++j) jn.block<3, 3>(3 * j, 0).setIdentity();
    for (int i = 0; i < 3; ++i) {
      const double h = 1e-3;
      if (!replay(model, twin, t0, t1, ctx.dt_s, theta_, landing, Vec3::Unit(i) * h, &probe)) return fault(model);
      jn.col(3 + i) = (probe - base) / h;
    }
    apply(model);
    const Eigen::Matrix<double, 6, 6> ntn = jn.transpose() * jn;
    const Mat15 q = Mat15::Identity() - jn * ntn.ldlt().solve(jn.transpose());
    const Vec15 nu = q * (measured - base);
    const Eigen::Matrix<double, 15, n_params> jq = q * jac;
    const Mat15 r = Mat15::Identity() * (sigma_p_ * sigma_p_);
    rls<15>(nu, jq, r, model);
  }

  // the forward-difference step of parameter i
  double probe_step(int i) const {
    return i == 0                                     ? 1e-4
           : i < 7                                    ? 1e-4 * std::max(std::abs(theta_[i]), 1.0)
           : i == 7                                   ? 1e-3
           : i == i_lag || i == i_added || i == i_yaw ? 1e-4
                                                      : 1e-5;
  }

  static constexpr int checkpoints = 5;
  static std::int64_t checkpoint(std::int64_t t0, std::int64_t t1, int j) {
    return t0 + ((j + 1) * (t1 - t0)) / checkpoints;
  }

  // the recursive least-squares step with forgetting, bounded, with the noise scaled by what
  // the residuals show and the gain only for identified parameters
  template <int Rows>
  void rls(const Eigen::Matrix<double, Rows, 1>& nu, const Eigen::Matrix<double, Rows, n_params>& jac,
           const Eigen::Matrix<double, Rows, Rows>& r, WorldModel& model) {
    using MatR = Eigen::Matrix<double, Rows, Rows>;
    using VecR = Eigen::Matrix<double, Rows, 1>;
    // the residual's size against its prediction with the noise scale so far (NIS per
    // degree of freedom is 1 when the model and the noise are right)
    const MatR s_alpha = jac * p_ * jac.transpose() + (structure_exact_ ? 1.0 : alpha_) * r;
    const Eigen::LDLT<MatR> s_alpha_inv(s_alpha);
    nis_ = nu.dot(s_alpha_inv.solve(nu));
    if (gate_ > 0 && nis_ > gate_) {  // a collision the model missed, a glitch: not data
      ++rejected_;
      return;
    }
    alpha_ = std::clamp(alpha_ * (1 + noise_rate * (nis_ / Rows - 1)), 1.0, max_noise_scale);
    // the correlation of consecutive windows' residuals (whitened by the nominal noise): a
    // systematic misfit repeats itself, and n correlated windows weigh like fewer
    const VecR white = nu.cwiseQuotient(r.diagonal().cwiseSqrt());
    if (last_rows_ == Rows) {
      const auto last = last_nu_.template head<Rows>();
      rho_num_ = (1 - noise_rate) * rho_num_ + noise_rate * white.dot(last);
      rho_den_ = (1 - noise_rate) * rho_den_ + noise_rate * 0.5 * (white.squaredNorm() + last.squaredNorm());
      rho_ = rho_den_ > 0 ? std::clamp(rho_num_ / rho_den_, 0.0, max_rho) : 0.0;
    }
    if (last_rows_ != Rows) rbar_.setZero(), r2_ = 0;
    last_nu_.setZero();
    last_nu_.template head<Rows>() = white;
    last_rows_ = Rows;
    // the systematic share of the residuals: the part of their mean over ~20 windows (1/bias_rate)
    // that white noise would not leave; it does not average out over the trial
    rbar_.template head<Rows>() = (1 - bias_rate) * rbar_.template head<Rows>() + bias_rate * white;
    r2_ = (1 - bias_rate) * r2_ + bias_rate * white.squaredNorm();
    const double floor = bias_rate / (2 - bias_rate);  // |mean|^2 / mean square of white noise
    systematic_ = r2_ > 0 ? std::clamp(rbar_.squaredNorm() / r2_ - floor, 0.0, 1.0) : 0.0;
    const double correlation = (1 + rho_) / (1 - rho_);
    noise_scale_ = alpha_ * correlation;
    // the reported sigma widens by what the systematic residual does not average out: of the
    // windows the information holds (forgetting bounds them), the systematic share counts once
    // (windows overlapping in time are not independent either: horizon / update_every of them share a span)
    const double overlap = std::max(1.0, static_cast<double>(horizon_) / every_);
    const double memory = std::min(static_cast<double>(updates_ + 1), 1 / (1 - lambda_)) / overlap;
    misfit_widening_ = std::sqrt(1 + systematic_ * memory);
    // the misfit verdict on the last few hundred windows (a plan's manoeuvres), not on the
    // manoeuvre of the moment; it starts at 1 (no misfit known) and follows the fit
    slow_noise_scale_ += slow_rate * (noise_scale_ - slow_noise_scale_);
    misfit_ = slow_noise_scale_ > misfit_limit_;
    // the gain trusts the data as much as their size and correlation say: n correlated
    // windows are worth fewer independent ones
    const MatR r_eff = structure_exact_ ? r : MatR(noise_scale_ * r);
    // once a refit is taken its values hold: the windows still measure the residuals but move
    // nothing (moved, they drift toward what fits 0.5 s, not 10 s: docs/feedback.md, "The refit")
    if (refit_.taken() > 0) {
      ++updates_;
      return;
    }

    // the information this window carried (at the noise the residuals show: their size and
    // correlation), forgotten like the covariance: what identifiability is judged on
    const MatP window_info = jac.transpose() * Eigen::LDLT<MatR>(r_eff).solve(jac);
    info_ = lambda_ * info_ + window_info;
    classify();

    const MatR s = jac * p_ * jac.transpose() + r_eff;
    const Eigen::LDLT<MatR> s_inv(s);
    Eigen::Matrix<double, n_params, Rows> k = s_inv.solve(jac * p_).transpose();
    // Schmidt: an unidentified parameter is not moved; its uncertainty stays in the others'
    if (!structure_exact_)
      for (int i = 0; i < n_params; ++i)
        if (!identified_[static_cast<std::size_t>(i)]) k.row(i).setZero();
    k.row(i_added).setZero();  // considered only
    VecP d = k * nu;
    for (int i = 0; i < n_params; ++i) {
      d[i] = std::clamp(d[i], -step_max_[i], step_max_[i]);
      theta_[i] = std::clamp(theta_[i] + d[i], lo_[i], hi_[i]);
    }
    // Joseph form: right for any gain, the zeroed rows included
    const MatP a = MatP::Identity() - k * jac;
    p_ = (a * p_ * a.transpose() + k * r_eff * k.transpose()) / lambda_;
    p_ = 0.5 * (p_ + p_.transpose()).eval();
    // no wind-up: a parameter the motion does not excite keeps at most its prior uncertainty
    for (int i = 0; i < n_params; ++i) {
      if (p_(i, i) <= p0_(i, i)) continue;
      const double f = std::sqrt(p0_(i, i) / p_(i, i));
      p_.row(i) *= f;
      p_.col(i) *= f;
    }
    ++updates_;
    apply(model);
  }

  // identifiability from the information matrix in prior units: its eigen-directions that
  // the data shrink less than sqrt(weak_information_) times are weak; a parameter is
  // identified when at most weak_share_max_ of it lies in weak directions
  void classify() {
    const int n = n_active_;
    if (n == 0) return;
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b) {
        const int i = index_[static_cast<std::size_t>(a)], j = index_[static_cast<std::size_t>(b)];
        scaled_(a, b) = std::sqrt(p0_(i, i) * p0_(j, j)) * info_(i, j);
      }
    eig_->compute(scaled_);                   // sized in configure(): no allocation here
    mu_ = eig_->eigenvalues().cwiseMax(0.0);  // ascending
    condition_ = mu_[n - 1] / std::max(mu_[0], 1e-300);
    for (int a = 0; a < n; ++a) {
      double share = 0;
      for (int j = 0; j < n; ++j)
        if (mu_[j] < weak_information_) share += eig_->eigenvectors()(a, j) * eig_->eigenvectors()(a, j);
      const int i = index_[static_cast<std::size_t>(a)];
      weak_share_[i] = share;
      // with hysteresis: identified at weak_share_max_, lost only well beyond it (forgetting
      // thins the information while a manoeuvre does not excite the parameter)
      bool& id = identified_[static_cast<std::size_t>(i)];
      id = id ? share <= std::min(1.0, 2.5 * weak_share_max_) : share <= weak_share_max_;
    }
  }

  // the fit's values and covariance become the estimate's; what the fit learned becomes the
  // information the identifiability is judged on (the fit saw every window this processor saw)
  void take_refit(const RefitResult& r) {
    MatP p = MatP::Zero();
    for (int i = 0; i < n_params; ++i) {
      const auto u = static_cast<std::size_t>(i);
      if (!active_[u]) continue;
      theta_[i] = std::clamp(r.theta[u], lo_[i], hi_[i]);
      for (int j = 0; j < n_params; ++j)
        if (active_[static_cast<std::size_t>(j)]) p(i, j) = r.covariance[u][static_cast<std::size_t>(j)];
    }
    // never beyond the prior (the estimate's bounds on its covariance)
    for (int i = 0; i < n_params; ++i) {
      if (p(i, i) <= p0_(i, i)) continue;
      const double f = std::sqrt(p0_(i, i) / p(i, i));
      p.row(i) *= f;
      p.col(i) *= f;
    }
    p_ = 0.5 * (p + p.transpose());
    Eigen::MatrixXd c(n_active_, n_active_);
    Eigen::VectorXd prior(n_active_);
    const auto at = [this](int a) { return index_[static_cast<std::size_t>(a)]; };
    for (int a = 0; a < n_active_; ++a) {
      prior[a] = p0_(at(a), at(a));
      for (int b = 0; b < n_active_; ++b) c(a, b) = p_(at(a), at(b));
    }
    const Eigen::MatrixXd info = refit_information(c, prior);
    info_.setZero();
    for (int a = 0; a < n_active_; ++a)
      for (int b = 0; b < n_active_; ++b) info_(at(a), at(b)) = info(a, b);
    classify();
  }

  void fault(WorldModel& model) {
    ++rejected_;
    apply(model);
  }

  int body_ = 0;
  std::array<bool, n_params> active_{};
  int horizon_ = 50, every_ = 5;
  double lambda_ = 0.9995, sigma_p_ = 0.005, sigma_v_ = 0.01, gate_ = 50, step_fraction_ = 0.05;
  double sigma_yaw_ = 0.01, sigma_w_ = 0.01;
  VecP theta_ = VecP::Zero(), nominal_ = VecP::Zero(), lo_ = VecP::Zero(), hi_ = VecP::Zero(), step_max_ = VecP::Zero();
  MatP p_ = MatP::Zero(), p0_ = MatP::Zero();
  VehicleParameterBase base_;
  int warmup_ = 0;         // steps of inputs kept before a window for the lag's filter
  int delay_ = 0;          // input_delay_steps
  BodyWrench live_lag_{};  // the twin's thruster-lag filter (a body without thrusters)
  // with `thruster_lag_model: rotors`, the thruster lag on the body's thrusters (found in the
  // session's devices on the first step; none: the filter above): per ring slot each one's command and its twin rotor's
  // speed at the step's start (NaN: not known), the twin's speeds at the last step's end, and
  // the live twin's slower rotors
  bool rotor_lag_ = false;  // thruster_lag_model: rotors
  bool thrusters_looked_up_ = false;
  std::vector<BodyThruster> thrusters_;
  std::vector<double> rotor_cmd_, rotor_speed_, speed_end_, live_speed_;
  struct RotorDelta {
    double dtau = -1;
    std::int64_t u0 = -1;
    std::vector<BodyWrench> delta;  // horizon_ steps
  };
  std::array<RotorDelta, 2> deltas_;
  std::vector<Entry> ring_;
  WorldState trial_;
  StepInputs trial_inputs_;
  PhysicsScratch scratch_;
  std::uint64_t updates_ = 0, rejected_ = 0;
  double nis_ = 0;
  // identifiability and the noise the residuals show
  static constexpr double noise_rate = 0.02, bias_rate = 0.05, max_noise_scale = 1e4, max_rho = 0.95;
  double weak_information_ = 100, weak_share_max_ = 0.2;
  MatP info_ = MatP::Zero();
  int n_active_ = 0;
  std::array<int, n_params> index_{};  // the estimated parameters, in order
  Eigen::MatrixXd scaled_;             // info_ of those, in prior units
  std::optional<Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>> eig_;
  Eigen::VectorXd mu_;
  double alpha_ = 1, rho_num_ = 0, rho_den_ = 0, rho_ = 0, noise_scale_ = 1, condition_ = 0;
  VecP weak_share_ = VecP::Ones();
  std::array<bool, n_params> identified_{};
  double systematic_ = 0, r2_ = 0, misfit_widening_ = 1, misfit_limit_ = 10;
  bool misfit_ = false;  // the residuals say the model cannot represent the vehicle
  bool structure_exact_ = false;
  double slow_noise_scale_ = 1;
  static constexpr double slow_rate = 0.002;
  Vec15 rbar_ = Vec15::Zero();
  int last_rows_ = 0;  // the previous window's whitened residual, for the correlation
  Vec15 last_nu_ = Vec15::Zero();
  RefitSchedule refit_;  // the batch refit (refit_every_s > 0)
};

}  // namespace

std::unique_ptr<FeedbackProcessor> make_estimate() { return std::make_unique<EstimateProcessor>(); }

}  // namespace tether::runtime::feedback_detail
