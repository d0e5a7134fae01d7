// SPDX-License-Identifier: Apache-2.0
// A trial's windows replayed (trial_window.hpp): the rotors and the lag filter a window starts
// from, the open-loop prediction of the fit's page, and one window for the tests.
#include "trial_window.hpp"

#include <cmath>
#include <limits>
#include <optional>

namespace tether::identify {

using namespace detail;
using ParamArray = std::array<double, vp::count>;

namespace detail {

BodyWrench lag_before(const Trial& trial, std::int64_t u0, double tau, double dt) {
  const std::int64_t from = std::max<std::int64_t>(u0 - lag_warmup_steps, 0);
  BodyWrench y = trial.samples[static_cast<std::size_t>(from)].input;
  for (std::int64_t u = from; u < u0; ++u)
    (void)runtime::lag_wrench_step(y, trial.samples[static_cast<std::size_t>(u)].input, tau, dt);
  return y;
}

namespace {
// a trial's rotor history, as run_slower_rotors asks for it
struct TrialRotors {
  const Trial& tr;
  std::size_t n;
  double command(std::int64_t u, std::size_t j) const { return tr.thruster_command[static_cast<std::size_t>(u) * n + j]; }
  double speed(std::int64_t u, std::size_t j) const { return tr.thruster_speed[static_cast<std::size_t>(u) * n + j]; }
  double twin_thrust(std::int64_t u, std::size_t j) const {
    return tr.thruster_thrust[static_cast<std::size_t>(u) * n + j];
  }
};
}  // namespace

const std::vector<BodyWrench>& rotor_delta(const Trial& tr, std::int64_t u0, int steps, double dtau,
                                           runtime::RotorDeltas& cache) {
  if (const runtime::RotorDelta* kept = cache.find(dtau, u0, steps)) return kept->delta;
  runtime::RotorDelta& out = cache.make(dtau, u0, steps);
  const std::size_t n = tr.thrusters.size();
  const auto available = static_cast<std::int64_t>(tr.thruster_command.size() / n);
  const std::int64_t from = std::max<std::int64_t>(u0 - runtime::rotor_warmup_steps(tr.thrusters, dtau, tr.dt_s), 0);
  runtime::run_slower_rotors(tr.thrusters, from, std::min<std::int64_t>(u0 + steps, available), tr.dt_s, out,
                             TrialRotors{tr, n});
  return out.delta;
}

}  // namespace detail

bool replay_trial_window(const Trial& trial, const ParamArray& theta, std::size_t t0, int steps, int delay,
                         std::vector<runtime::BodyState>& states) {
  states.clear();
  if (steps < 1 || delay < 0 || t0 < static_cast<std::size_t>(delay) || t0 >= trial.twin.size() ||
      t0 + static_cast<std::size_t>(steps) >= trial.samples.size())
    return false;
  const TrialSample& s0 = trial.samples[t0];
  TrialModel tm;
  tm.trial = &trial;
  tm.base = runtime::vehicle_parameter_base(trial.scenario.model, trial.body);
  tm.active.fill(true);
  tm.delay = delay;
  runtime::WorldModel model = trial.scenario.model;
  runtime::ReplayWork work;
  work.inputs.resize(model.bodies.size());
  const double start[start_size] = {s0.position.x(), s0.position.y(), s0.position.z(),
                                    s0.velocity.x(), s0.velocity.y(), s0.velocity.z()};
  const TrialWindow window{theta.data(), start, t0, static_cast<std::int64_t>(t0) - delay, steps};
  return simulate(tm, model, work, window,
                  [&](int, const runtime::BodyState& s, const runtime::BodyModel&) { states.push_back(s); });
}

Prediction predict(const Trial& trial, const FitResult& fit, std::size_t from, std::size_t to, double horizon_s) {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  Prediction out;
  out.horizon_s = horizon_s;
  const int steps = std::max(1, static_cast<int>(std::lround(horizon_s / trial.dt_s)));
  const runtime::WorldModel& m0 = trial.scenario.model;
  TrialModel tm;
  tm.trial = &trial;
  tm.base = runtime::vehicle_parameter_base(m0, trial.body);
  tm.active.fill(true);
  const ParamArray nominal = runtime::nominal_vehicle_parameters(m0, trial.body);
  runtime::WorldModel model = m0;
  runtime::ReplayWork work;
  work.inputs.resize(m0.bodies.size());
  double sum_fit = 0, sum_nom = 0, sq_fit = 0, sq_nom = 0;
  std::size_t n_sq = 0;
  const auto delay = static_cast<std::size_t>(std::max(fit.delay_steps, 0));
  to = std::min(to, trial.samples.size());
  // segments one after the other, each from the next sample with a measured state and inputs
  for (std::size_t t0 = std::max(from, delay), next = t0; t0 + static_cast<std::size_t>(steps) < to; t0 = next) {
    next = t0 + 1;
    const TrialSample& s0 = trial.samples[t0];
    if (!s0.measured || !s0.has_velocity || t0 >= trial.twin.size()) continue;
    bool inputs = true;
    for (std::size_t t = t0 - delay; t < t0 - delay + static_cast<std::size_t>(steps); ++t)
      inputs = inputs && trial.samples[t].has_input;
    if (!inputs) continue;
    next = t0 + static_cast<std::size_t>(steps);
    const double start[start_size] = {s0.position.x(), s0.position.y(), s0.position.z(),
                                      s0.velocity.x(), s0.velocity.y(), s0.velocity.z()};
    double end_fit = -1, end_nom = -1, seg_fit = 0, seg_nom = 0;
    std::size_t seg_n = 0;
    std::vector<runtime::Vec3> track_fit, track_nom;  // this segment's predictions, step by step
    const auto run = [&](const ParamArray& th, bool with_added, std::size_t u_delay, double& end, double& sq,
                         std::vector<runtime::Vec3>& track) {
      tm.active[vp::added_mass] = with_added;
      const TrialWindow window{th.data(), start, t0,
                               static_cast<std::int64_t>(t0) - static_cast<std::int64_t>(u_delay), steps};
      return simulate(tm, model, work, window,
                      [&](int j, const runtime::BodyState& s, const runtime::BodyModel&) {
                        track.resize(static_cast<std::size_t>(j) + 1, runtime::Vec3::Constant(nan));
                        track[static_cast<std::size_t>(j)] = s.position_m;
                        const TrialSample& m = trial.samples[t0 + static_cast<std::size_t>(j)];
                        if (!m.measured) return;
                        const double e = (s.position_m - m.position).norm();
                        sq += e * e;
                        if (&sq == &seg_fit) ++seg_n;
                        end = e;
                      });
    };
    model = m0;
    const bool ok_fit = run(fit.theta, true, delay, end_fit, seg_fit, track_fit);
    model = m0;
    const bool ok_nom = run(nominal, false, 0, end_nom, seg_nom, track_nom);
    if (!ok_fit || !ok_nom || end_fit < 0 || end_nom < 0) continue;
    ++out.segments;
    for (std::size_t j = 0; j < track_fit.size() && j < track_nom.size(); ++j) {
      const TrialSample& m = trial.samples[t0 + j];
      out.t.push_back(static_cast<double>(t0 + j) * trial.dt_s);
      out.measured.push_back(m.measured ? m.position : runtime::Vec3::Constant(nan));
      out.fitted.push_back(track_fit[j]);
      out.uncorrected.push_back(track_nom[j]);
    }
    out.t.push_back(nan);  // a break between segments
    out.measured.push_back(runtime::Vec3::Constant(nan));
    out.fitted.push_back(runtime::Vec3::Constant(nan));
    out.uncorrected.push_back(runtime::Vec3::Constant(nan));
    sum_fit += end_fit, sum_nom += end_nom;
    sq_fit += seg_fit, sq_nom += seg_nom, n_sq += seg_n;
  }
  if (out.segments) {
    out.fitted_m = sum_fit / out.segments;
    out.uncorrected_m = sum_nom / out.segments;
    out.fitted_rms_m = std::sqrt(sq_fit / static_cast<double>(std::max<std::size_t>(n_sq, 1)));
    out.uncorrected_rms_m = std::sqrt(sq_nom / static_cast<double>(std::max<std::size_t>(n_sq, 1)));
  }
  return out;
}

std::optional<double> combination_truth(const Trial& trial, const Combination& c) {
  const auto truth = [&](int i) -> std::optional<double> {
    for (const auto& [n, v] : trial.truth)
      if (n == runtime::vehicle_parameter_names[static_cast<std::size_t>(i)]) return v;
    return std::nullopt;
  };
  if (c.parameter < 0 || c.parameter >= vp::count) return std::nullopt;
  const std::optional<double> v = truth(c.parameter);
  if (!v) return v;
  if (!c.per_effective_mass) return *v + c.offset;
  return (*v + c.offset) / (1 + truth(vp::added_mass).value_or(0));
}

}  // namespace tether::identify
