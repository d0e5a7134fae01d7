// SPDX-License-Identifier: Apache-2.0
// The batch fit (docs/feedback.md, "The offline fit"): multiple shooting over windows of the
// trial. Each window starts the model's step() from its own start state (position, velocity
// and a turn of the measured orientation: parameters of the fit, tied to the measured start by
// its noise, so a noisy start is fitted rather than trusted), replays the recorded inputs —
// delayed by the delay tried, the body's thrusters' rotors run again with their time constants
// lengthened by the thruster lag (a first-order lag of the input where the body has none),
// scaled by the thrust gain — and is compared with the measured positions, velocities and
// orientations at five checkpoints. The parameters
// (tether/feedback/vehicle_parameters.hpp, the online `estimate` processor's) carry the same
// weak prior as online; the added mass is estimated against its prior (no motion alone tells
// it from the thrust gain: every force is divided by the effective mass), so the combinations
// over the effective mass are what the data pin down. Ceres Solver minimises; its covariance,
// widened by what the residuals show (their size and correlation), gives sigma.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <atomic>
#include <limits>
#include <memory>
#include <thread>
#include <stdexcept>

#include <Eigen/Eigenvalues>

#include "tether/identify/identify.hpp"
#include "tether/physics/physics.hpp"
#include "tether/physics/world_state.hpp"

#include "least_squares.hpp"
#include "trial_window.hpp"

namespace tether::identify {

using namespace detail;
using ParamArray = std::array<double, vp::count>;

namespace {

constexpr int checkpoints = 5;
constexpr int per_checkpoint = 9;  // position, velocity, orientation
constexpr int residuals_per_window = checkpoints * per_checkpoint;
// the length of a block of the sandwich covariance: long enough to hold a misfit that
// persists through a manoeuvre, short enough for a dozen in a minute's trial
constexpr double block_s = 5.0;

// the forward-difference step of parameter i at value v
double probe_step(int i, double v) {
  return i == vp::thrust                                                         ? 1e-4
         : i < vp::buoyancy                                                      ? 1e-4 * std::max(std::abs(v), 1.0)
         : i == vp::buoyancy                                                     ? 1e-3
         : i == vp::thruster_lag || i == vp::added_mass || i == vp::angular_drag ? 1e-4
                                                                                 : 1e-5;
}

// one window: residuals at five checkpoints (position, and velocity where measured)
class WindowCost final : public lsq::Cost {
 public:
  WindowCost(const TrialModel& tm, std::size_t t0, int steps)
      : tm_(tm), t0_(t0), steps_(steps), model_(tm.trial->scenario.model) {
    work_.inputs.resize(model_.bodies.size());
  }

  // what compute() found at the point it was given (the evaluation callback fills it for every
  // window at once, in parallel; Evaluate copies it when asked at that point)
  struct Cache {
    std::array<double, vp::count> theta{};
    std::array<double, start_size> start{};
    bool valid = false, with_jacobians = false, ok = false;
    std::array<double, residuals_per_window> residuals{};
    std::array<double, residuals_per_window * vp::count> jac_theta{};
    std::array<double, residuals_per_window * start_size> jac_start{};
  };

  void compute(const double* theta, const double* start, bool with_jacobians) const {
    Cache& c = cache_;
    std::copy(theta, theta + vp::count, c.theta.begin());
    std::copy(start, start + start_size, c.start.begin());
    c.valid = true;
    c.with_jacobians = with_jacobians;
    double* jac[] = {c.jac_theta.data(), c.jac_start.data()};
    c.ok = evaluate_now(theta, start, c.residuals.data(), with_jacobians ? jac : nullptr);
  }

  bool evaluate(double const* const* p, double* residuals, double** jacobians) const override {
    const Cache& c = cache_;
    const bool same = c.valid && std::equal(c.theta.begin(), c.theta.end(), p[0]) &&
                      std::equal(c.start.begin(), c.start.end(), p[1]) && (c.with_jacobians || !jacobians);
    if (!same) return evaluate_now(p[0], p[1], residuals, jacobians);
    if (!c.ok) return false;
    std::copy(c.residuals.begin(), c.residuals.end(), residuals);
    if (jacobians && jacobians[0]) std::copy(c.jac_theta.begin(), c.jac_theta.end(), jacobians[0]);
    if (jacobians && jacobians[1]) std::copy(c.jac_start.begin(), c.jac_start.end(), jacobians[1]);
    return true;
  }

  bool evaluate_now(const double* th0, const double* st0, double* residuals, double** jacobians) const {
    if (!run(th0, st0, residuals)) return false;
    if (!jacobians) return true;
    std::array<double, residuals_per_window> probe{};
    if (jacobians[0]) {
      ParamArray th;
      std::copy(th0, th0 + vp::count, th.begin());
      for (int i = 0; i < vp::count; ++i) {
        const double h = probe_step(i, th[static_cast<std::size_t>(i)]);
        if (!tm_.active[static_cast<std::size_t>(i)]) {
          for (int r = 0; r < residuals_per_window; ++r) jacobians[0][r * vp::count + i] = 0;
          continue;
        }
        const double keep = th[static_cast<std::size_t>(i)];
        th[static_cast<std::size_t>(i)] = keep + h;
        if (!run(th.data(), st0, probe.data())) return false;
        th[static_cast<std::size_t>(i)] = keep;
        for (int r = 0; r < residuals_per_window; ++r)
          jacobians[0][r * vp::count + i] = (probe[static_cast<std::size_t>(r)] - residuals[r]) / h;
      }
    }
    if (jacobians[1]) {
      std::array<double, start_size> st;
      std::copy(st0, st0 + start_size, st.begin());
      const double h = 1e-4;
      // in uniform water away from the surface and the walls, a start moved by d lands moved
      // by d: one probe moving every axis at once tells (then the position columns are the
      // identity), else one probe per axis
      int first_axis = 0;
      for (int a = 0; a < 3; ++a) st[static_cast<std::size_t>(a)] += h;
      if (!run(th0, st.data(), probe.data())) return false;
      for (int a = 0; a < 3; ++a) st[static_cast<std::size_t>(a)] -= h;
      bool translates = true;
      for (int r = 0; r < residuals_per_window && translates; ++r) {
        const bool position_row = r % per_checkpoint < 3;
        const double expected = residuals[r] + (position_row ? h / tm_.sigma_p : 0.0);
        translates = std::abs(probe[static_cast<std::size_t>(r)] - expected) <= 1e-6 * h / tm_.sigma_p;
      }
      if (translates) {
        for (int r = 0; r < residuals_per_window; ++r)
          for (int a = 0; a < 3; ++a)
            jacobians[1][r * start_size + a] = r % per_checkpoint == a ? 1 / tm_.sigma_p : 0.0;
        first_axis = 3;
      }
      // the turn of the start only where orientations are compared (else it is held at 0)
      const int probed = tm_.sigma_q > 0 ? start_size : 6;
      for (int r = 0; r < residuals_per_window; ++r)
        for (int i = probed; i < start_size; ++i) jacobians[1][r * start_size + i] = 0;
      for (int i = first_axis; i < probed; ++i) {
        st[static_cast<std::size_t>(i)] += h;
        if (!run(th0, st.data(), probe.data())) return false;
        st[static_cast<std::size_t>(i)] -= h;
        for (int r = 0; r < residuals_per_window; ++r)
          jacobians[1][r * start_size + i] = (probe[static_cast<std::size_t>(r)] - residuals[r]) / h;
      }
    }
    return true;
  }

  std::size_t t0() const { return t0_; }

 private:
  static int checkpoint(int steps, int j) { return ((j + 1) * steps) / checkpoints; }

  bool run(const double* theta, const double* start, double* r) const {
    const Trial& tr = *tm_.trial;
    int next = 0;
    const auto u0 = static_cast<std::int64_t>(t0_) - tm_.delay;
    return simulate(tm_, model_, work_, TrialWindow{theta, start, t0_, u0, steps_},
                    [&](int j, const runtime::BodyState& s, const runtime::BodyModel& bm) {
                      if (next >= checkpoints || j != checkpoint(steps_, next)) return;
                      const TrialSample& m = tr.samples[t0_ + static_cast<std::size_t>(j)];
                      double* out = r + per_checkpoint * next++;
                      const Vec3 dp = (s.position_m - m.position) / tm_.sigma_p;
                      const Vec3 dv = m.has_velocity
                                          ? Vec3((s.linear_momentum * bm.inv_mass - m.velocity) / tm_.sigma_v)
                                          : Vec3::Zero();
                      // the turn from the measured orientation to the model's (body frame)
                      Vec3 dq = Vec3::Zero();
                      if (tm_.sigma_q > 0) {
                        const Eigen::AngleAxisd e(m.orientation.conjugate() * s.orientation);
                        dq = e.axis() * (std::remainder(e.angle(), 2 * 3.14159265358979323846) / tm_.sigma_q);
                      }
                      for (int a = 0; a < 3; ++a) out[a] = dp[a], out[3 + a] = dv[a], out[6 + a] = dq[a];
                    });
  }

  const TrialModel& tm_;
  std::size_t t0_;
  int steps_;
  mutable runtime::WorldModel model_;
  mutable runtime::ReplayWork work_;
  mutable Cache cache_;
};

// before Ceres evaluates the windows at a new point, every window is computed at once on
// `threads` threads (each window has its own model copy and scratch)
class ParallelWindows {
 public:
  ParallelWindows(int threads, const double* theta) : threads_(std::max(1, threads)), theta_(theta) {}
  void add(const WindowCost* cost, const double* start) { windows_.emplace_back(cost, start); }
  void prepare(bool jacobians, bool new_point) {
    if (!new_point && !jacobians) return;
    std::atomic<std::size_t> next{0};
    const auto work = [&] {
      for (std::size_t i = next++; i < windows_.size(); i = next++)
        windows_[i].first->compute(theta_, windows_[i].second, jacobians);
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads_; ++t) pool.emplace_back(work);
    work();
    for (std::thread& t : pool) t.join();
  }

 private:
  int threads_;
  const double* theta_;
  std::vector<std::pair<const WindowCost*, const double*>> windows_;
};

// a parameter block tied to a value by a stddev per component: (x - mean) / sd
class PriorCost final : public lsq::Cost {
 public:
  PriorCost(std::vector<double> mean, std::vector<double> sd) : mean_(std::move(mean)), sd_(std::move(sd)) {}
  bool evaluate(double const* const* p, double* r, double** j) const override {
    const std::size_t n = mean_.size();
    for (std::size_t i = 0; i < n; ++i) r[i] = sd_[i] > 0 ? (p[0][i] - mean_[i]) / sd_[i] : 0;
    if (j && j[0])
      for (std::size_t a = 0; a < n; ++a)
        for (std::size_t b = 0; b < n; ++b) j[0][a * n + b] = a == b && sd_[a] > 0 ? 1 / sd_[a] : 0;
    return true;
  }

 private:
  std::vector<double> mean_, sd_;
};

struct Window {
  std::size_t trial = 0, t0 = 0;
};

// the windows of each trial's fitted part: every measured start whose checkpoints are
// measured and whose inputs (delayed) are there
std::vector<Window> windows_of(const std::vector<Trial>& trials, const FitOptions& o, int delay, std::size_t stride) {
  std::vector<Window> out;
  const auto w = static_cast<std::size_t>(o.window_steps);
  for (std::size_t k = 0; k < trials.size(); ++k) {
    const Trial& tr = trials[k];
    const std::size_t end = holdout_start(tr, o.holdout);
    // the same windows whatever the delay tried (they start after the largest), so that the
    // delays' costs compare the delays and not the windows
    for (std::size_t t0 = static_cast<std::size_t>(std::max(delay, o.max_delay_steps)); t0 + w < end; t0 += w) {
      bool ok = tr.samples[t0].measured && t0 < tr.twin.size();
      for (int j = 0; ok && j < checkpoints; ++j)
        ok = tr.samples[t0 + static_cast<std::size_t>(((j + 1) * o.window_steps) / checkpoints)].measured;
      for (std::size_t t = t0 - static_cast<std::size_t>(delay); ok && t < t0 + w - static_cast<std::size_t>(delay);
           ++t)
        ok = tr.samples[t].has_input;
      if (ok) out.push_back({k, t0});
    }
  }
  if (stride > 1) {
    std::vector<Window> every;
    for (std::size_t i = 0; i < out.size(); i += stride) every.push_back(out[i]);
    out.swap(every);
  }
  return out;
}

struct Solved {
  ParamArray theta{};
  double data_cost = 0, initial_cost = 0;
  int iterations = 0;
  bool converged = false;
  std::string report;
  Eigen::MatrixXd covariance;    // of theta, raw (empty if not computed)
  Eigen::MatrixXd block_scores;  // the data's gradient on theta over each block of windows (a column each)
  std::vector<std::array<double, residuals_per_window>> residuals;  // per window, at the solution
};

class FitProblem {
 public:
  FitProblem(const std::vector<Trial>& trials, const FitOptions& o, int delay, const ParamArray& prior_mean,
             const ParamArray& prior_sd, const ParamArray& lo, const ParamArray& hi,
             const std::array<bool, vp::count>& active, std::size_t stride = 1)
      : trials_(trials), o_(o) {
    for (const Trial& tr : trials) {
      TrialModel tm;
      tm.trial = &tr;
      tm.base = runtime::vehicle_parameter_base(tr.scenario.model, tr.body);
      tm.active = active;
      tm.sigma_p = o.position_stddev_m;
      tm.sigma_v = o.velocity_stddev_m_s;
      tm.sigma_q = o.orientation_stddev_rad;
      tm.delay = delay;
      models_.push_back(tm);
    }
    windows_ = windows_of(trials, o, delay, stride);
    prior_mean_ = prior_mean, prior_sd_ = prior_sd, lo_ = lo, hi_ = hi, active_ = active;
  }
  std::size_t windows() const { return windows_.size(); }

  Solved solve(const ParamArray& start, int max_iterations, double huber, bool covariance) {
    ParamArray theta = start;
    ParallelWindows parallel(o_.threads, theta.data());
    lsq::Problem problem;
    problem.before_evaluation = [&parallel](bool jacobians, bool new_point) { parallel.prepare(jacobians, new_point); };
    problem.blocks.push_back({theta.data(), vp::count, {}, {}, {}});
    starts_.assign(windows_.size(), {});
    std::vector<std::unique_ptr<WindowCost>> costs;
    std::vector<std::unique_ptr<PriorCost>> priors;
    for (std::size_t i = 0; i < windows_.size(); ++i) {
      const Window& w = windows_[i];
      const Trial& tr = trials_[w.trial];
      const TrialSample& s = tr.samples[w.t0];
      auto& st = starts_[i];
      st = start_of(tr, w.t0);
      const int block = static_cast<int>(problem.blocks.size());
      const double sq = o_.orientation_stddev_rad;
      // orientations not compared: the start's turn is held at 0 (its prior's sd 0 adds nothing)
      problem.blocks.push_back(
          {st.data(), start_size, sq > 0 ? std::vector<int>{} : std::vector<int>{6, 7, 8}, {}, {}});
      costs.push_back(std::make_unique<WindowCost>(models_[w.trial], w.t0, o_.window_steps));
      parallel.add(costs.back().get(), st.data());
      problem.terms.push_back({costs.back().get(), residuals_per_window, {0, block}, huber});
      std::vector<double> mean(st.begin(), st.end());
      const double sv = s.has_velocity ? o_.velocity_stddev_m_s : 10.0;  // unmeasured: the checkpoints decide
      priors.push_back(
          std::make_unique<PriorCost>(mean, std::vector<double>{o_.position_stddev_m, o_.position_stddev_m,
                                                                o_.position_stddev_m, sv, sv, sv, sq, sq, sq}));
      problem.terms.push_back({priors.back().get(), start_size, {block}, 0});
    }
    std::vector<double> pm(prior_mean_.begin(), prior_mean_.end()), ps(vp::count, 0.0);
    lsq::Block& th = problem.blocks.front();
    for (int i = 0; i < vp::count; ++i) {
      const auto u = static_cast<std::size_t>(i);
      if (!active_[u]) {
        th.held.push_back(i);
        continue;
      }
      ps[u] = prior_sd_[u];
      theta[u] = std::clamp(theta[u], lo_[u], hi_[u]);
      th.lower.emplace_back(i, lo_[u]);
      th.upper.emplace_back(i, hi_[u]);
    }
    priors.push_back(std::make_unique<PriorCost>(pm, ps));
    problem.terms.push_back({priors.back().get(), vp::count, {0}, 0});
    problem.max_iterations = max_iterations;
    problem.function_tolerance = 1e-6;
    problem.parameter_tolerance = 1e-8;
    problem.full_report = std::getenv("TETHER_IDENTIFY_REPORT") != nullptr;
    if (covariance) {
      problem.covariance_block = 0;
      problem.covariance_threads = std::max(1, o_.threads);
    }
    // the covariance, where asked for, comes with the solution: the solver's problem lives
    // only for the call
    lsq::Result summary;
    lsq::solve(problem, summary);

    Solved out;
    out.theta = theta;
    out.iterations = summary.iterations;
    out.converged = summary.converged;
    out.report = summary.brief_report;
    if (problem.full_report) std::fprintf(stderr, "%s\n", summary.full_report.c_str());
    out.initial_cost = summary.initial_cost;
    // the data's cost at the solution (no loss, no priors), and the residuals
    out.residuals.resize(windows_.size());
    for (std::size_t i = 0; i < windows_.size(); ++i) {
      const double* params[] = {theta.data(), starts_[i].data()};
      if (!costs[i]->evaluate_now(params[0], params[1], out.residuals[i].data(), nullptr)) out.residuals[i].fill(0);
      for (double r : out.residuals[i]) out.data_cost += 0.5 * r * r;
    }
    if (covariance) {
      out.block_scores = block_scores(parallel, costs, theta, huber);
      if (summary.covariance.size() == static_cast<std::size_t>(vp::count * vp::count))
        out.covariance =
            Eigen::Map<const Eigen::Matrix<double, vp::count, vp::count, Eigen::RowMajor>>(summary.covariance.data());
    }
    return out;
  }

 private:
  // The gradient of the data's cost on theta, summed over each block of consecutive windows
  // of a trial, at the solution. With every start at its best for this theta, a window's pull
  // on theta is J_theta^T r (the starts' own terms vanish); under a robust loss, as weighted.
  Eigen::MatrixXd block_scores(ParallelWindows& parallel, const std::vector<std::unique_ptr<WindowCost>>& costs,
                               const ParamArray& theta, double huber) const {
    parallel.prepare(true, true);
    std::vector<Eigen::VectorXd> blocks;
    std::size_t trial = SIZE_MAX, first_t0 = 0;
    std::array<double, residuals_per_window> r{};
    std::array<double, residuals_per_window * vp::count> jt{};
    for (std::size_t i = 0; i < windows_.size(); ++i) {
      const Window& w = windows_[i];
      const double dt = trials_[w.trial].dt_s;
      if (w.trial != trial || static_cast<double>(w.t0 - first_t0) * dt >= block_s) {
        trial = w.trial, first_t0 = w.t0;
        blocks.push_back(Eigen::VectorXd::Zero(vp::count));
      }
      const double* params[] = {theta.data(), starts_[i].data()};
      double* jac[] = {jt.data(), nullptr};
      if (!costs[i]->evaluate(params, r.data(), jac)) continue;
      double norm = 0;
      for (double v : r) norm += v * v;
      norm = std::sqrt(norm);
      const double weight = huber > 0 && norm > huber ? huber / norm : 1.0;
      const Eigen::Map<const Eigen::Matrix<double, residuals_per_window, vp::count, Eigen::RowMajor>> j(jt.data());
      const Eigen::Map<const Eigen::Matrix<double, residuals_per_window, 1>> rv(r.data());
      blocks.back() += weight * (j.transpose() * rv);
    }
    Eigen::MatrixXd out(vp::count, static_cast<Eigen::Index>(blocks.size()));
    for (std::size_t b = 0; b < blocks.size(); ++b) out.col(static_cast<Eigen::Index>(b)) = blocks[b];
    return out;
  }

  // a window's start: the measured position and velocity (the twin's velocity where none was measured)
  static std::array<double, start_size> start_of(const Trial& tr, std::size_t t) {
    const TrialSample& s = tr.samples[t];
    runtime::WorldState twin;
    if (!s.has_velocity) twin.bodies = tr.twin[std::min(t, tr.twin.size() - 1)];
    const Vec3 v = s.has_velocity ? s.velocity : runtime::linear_velocity(tr.scenario.model, twin, tr.body);
    return {s.position.x(), s.position.y(), s.position.z(), v.x(), v.y(), v.z(), 0, 0, 0};
  }

  const std::vector<Trial>& trials_;
  const FitOptions& o_;
  std::vector<TrialModel> models_;
  std::vector<Window> windows_;
  std::vector<std::array<double, start_size>> starts_;
  ParamArray prior_mean_{}, prior_sd_{}, lo_{}, hi_{};
  std::array<bool, vp::count> active_{};
};

}  // namespace

bool same_vehicle(const Trial& a, const Trial& b, std::string* why) {
  const auto& ba = a.scenario.model.bodies[static_cast<std::size_t>(a.body)];
  const auto& bb = b.scenario.model.bodies[static_cast<std::size_t>(b.body)];
  if (ba.name == bb.name && ba.mass_kg == bb.mass_kg && a.dt_s == b.dt_s) return true;
  if (why)
    *why = b.path + ": body \"" + bb.name + "\" (" + std::to_string(bb.mass_kg) + " kg, step " +
           std::to_string(b.dt_s) + " s) is not the vehicle of " + a.path + " (\"" + ba.name + "\", " +
           std::to_string(ba.mass_kg) + " kg, step " + std::to_string(a.dt_s) + " s)";
  return false;
}

std::size_t holdout_start(const Trial& trial, double holdout) {
  const std::size_t n = trial.samples.size();
  const double keep = std::clamp(1 - holdout, 0.0, 1.0);
  return std::min(n, static_cast<std::size_t>(std::floor(static_cast<double>(n) * keep)));
}

namespace {

// what every stage of a fit shares: the nominal values, the prior and bounds, what is estimated
struct FitSetup {
  runtime::VehicleParameterBase base;  // the first trial's (every trial is of the same vehicle)
  ParamArray nominal{};
  runtime::VehicleParameterPrior prior;
  std::array<bool, vp::count> active{};
};

FitSetup fit_setup(const std::vector<Trial>& trials, const FitOptions& o) {
  if (trials.empty()) throw std::runtime_error("no trial to fit");
  const Trial& t0 = trials.front();
  const runtime::WorldModel& m0 = t0.scenario.model;
  const auto& b0 = m0.bodies[static_cast<std::size_t>(t0.body)];
  std::string why;
  for (const Trial& tr : trials)
    if (!same_vehicle(t0, tr, &why)) throw std::runtime_error(why + ": one fit is for one vehicle");
  FitSetup f;
  f.base = runtime::vehicle_parameter_base(m0, t0.body);
  f.nominal = runtime::nominal_vehicle_parameters(m0, t0.body);
  runtime::VehicleParameterRanges ranges;
  ranges.max_buoyancy_n = 0.25 * b0.mass_kg * m0.gravity_m_s2.norm();
  ranges.added_mass_stddev = o.added_mass_stddev;
  f.prior = runtime::vehicle_parameter_prior(f.nominal, ranges);
  // estimated here, against its prior (online it is only considered)
  f.prior.lo[vp::added_mass] = -0.5, f.prior.hi[vp::added_mass] = 2;
  f.active.fill(true);
  f.active[vp::thruster_lag] = o.estimate_lag;
  f.active[vp::added_mass] = o.estimate_added_mass;
  // turning is seen in the orientations: without them the angular drag is left as it is
  f.active[vp::angular_drag] = o.estimate_angular_drag && o.orientation_stddev_rad > 0;
  for (int i = 0; i < vp::count; ++i) f.active[static_cast<std::size_t>(i)] &= !o.held[static_cast<std::size_t>(i)];
  return f;
}

// the fewest windows a fit takes
constexpr std::size_t min_windows = 4;
void require_windows(std::size_t windows, const FitOptions& o) {
  if (windows < min_windows)
    throw std::runtime_error("the trial has " + std::to_string(windows) + " usable windows of " +
                             std::to_string(o.window_steps) +
                             " steps (a window needs a measured start and measured checkpoints); a fit needs at "
                             "least " +
                             std::to_string(min_windows) + ": record a longer trial, or measure more often");
}

// the fit at no delay; then each delay tried from that solution on a subsample of about 24
// windows, refitted a few iterations (a delay and a thruster lag look alike until the lag is
// refitted): the least cost per window wins where it is clearly less than the protocol's one step's. Returns the first
// fit (theta and residuals).
Solved delay_profile(const std::vector<Trial>& trials, const FitOptions& o, const FitSetup& f, FitResult& out) {
  Solved first;
  double best_cost = 0, delay_windows = 0;
  std::size_t stride = 1;
  for (int d = 0; d <= std::max(0, o.max_delay_steps); ++d) {
    if (d == 0) {
      FitProblem p(trials, o, 0, f.nominal, f.prior.sd, f.prior.lo, f.prior.hi, f.active);
      require_windows(p.windows(), o);
      first = p.solve(f.nominal, o.max_iterations, 0, false);
      if (o.max_delay_steps <= 0) break;
      stride = std::max<std::size_t>(1, p.windows() / 24);
    }
    FitProblem sub(trials, o, d, f.nominal, f.prior.sd, f.prior.lo, f.prior.hi, f.active, stride);
    if (sub.windows() < min_windows) break;
    const Solved s = sub.solve(first.theta, 3, 0, false);
    const double cost = s.data_cost / static_cast<double>(sub.windows());
    delay_windows = static_cast<double>(sub.windows());
    out.delay_costs.emplace_back(d, cost);
    if (d == 0 || cost < best_cost) best_cost = cost, out.delay_steps = d;
  }
  // the delay the protocol makes is taken unless the data clearly ask for another: a cost
  // below its cost by more than a likelihood ratio of 4 (chi^2 = 2 cost; about 2 sigma). A
  // dead time of a step and a slower spin-up of the rotors look alike over a trial's commands,
  // and otherwise the noise of the subsample picks among them. The protocol's delay: a rig
  // (the `mqtt` endpoint, and the `stand_in` that plays one) gets a step's commands with the
  // next step's request, so it moves one step behind the inputs the twin's body received
  const int expected = std::min(1, std::max(0, o.max_delay_steps));
  if (static_cast<std::size_t>(expected) < out.delay_costs.size() && out.delay_steps != expected &&
      (out.delay_costs[static_cast<std::size_t>(expected)].second - best_cost) * delay_windows < 2)
    out.delay_steps = expected;
  // sigma from the profile's curvature at its least: cost = chi^2 / 2 grows by 1/2 a sigma away
  if (out.delay_costs.size() >= 3) {
    const auto i = static_cast<std::size_t>(out.delay_steps);
    const std::size_t lo = i == 0 ? 0 : i - 1, hi = std::min(lo + 2, out.delay_costs.size() - 1);
    const std::size_t mid = lo + 1 <= hi ? lo + 1 : lo;
    const double curvature =
        (out.delay_costs[lo].second - 2 * out.delay_costs[mid].second + out.delay_costs[hi].second) * delay_windows;
    out.delay_stddev_steps = curvature > 0 ? 1 / std::sqrt(curvature) : std::numeric_limits<double>::infinity();
  }
  return first;
}

// a Huber loss at three times the typical window's residual
double huber_scale(const std::vector<std::array<double, residuals_per_window>>& residuals) {
  std::vector<double> norms;
  for (const auto& r : residuals) {
    double s = 0;
    for (double v : r) s += v * v;
    norms.push_back(std::sqrt(s));
  }
  if (norms.empty()) return 0;
  std::nth_element(norms.begin(), norms.begin() + static_cast<std::ptrdiff_t>(norms.size() / 2), norms.end());
  return 3 * std::max(norms[norms.size() / 2], 1e-9);
}

// what the residuals show: their size against the stated noise, and the correlation of
// consecutive windows (a systematic misfit repeats itself)
void residual_diagnostics(const Solved& s, int n_active, FitResult& out) {
  std::size_t n = 0;
  double sum_sq = 0, num = 0, den = 0;
  for (std::size_t i = 0; i < s.residuals.size(); ++i) {
    for (double r : s.residuals[i]) n += r != 0, sum_sq += r * r;
    if (i > 0)
      for (std::size_t u = 0; u < residuals_per_window; ++u) {
        num += s.residuals[i][u] * s.residuals[i - 1][u];
        den += 0.5 * (s.residuals[i][u] * s.residuals[i][u] + s.residuals[i - 1][u] * s.residuals[i - 1][u]);
      }
  }
  out.residuals = n;
  out.mean_nis = n ? sum_sq / static_cast<double>(n) : 0;
  const double dof = std::max(1.0, static_cast<double>(n) - n_active - start_size * static_cast<double>(out.windows));
  out.noise_scale = sum_sq / dof;
  out.residual_correlation = den > 0 ? std::clamp(num / den, 0.0, 0.95) : 0;
  const double rho = out.residual_correlation;
  out.sigma_widening = std::sqrt(std::max(1.0, out.noise_scale) * (1 + rho) / (1 - rho));
}

// The cluster-robust covariance: cov (sum over blocks of g g^T) cov, with the small-sample
// factor B / (B - 1). Where the model holds, the blocks' pulls scatter as the noise does and
// this is about cov; where it misses something the vehicle does, they disagree from one
// manoeuvre to the next and it is larger.
Eigen::MatrixXd block_sandwich(const Eigen::MatrixXd& cov, const Eigen::MatrixXd& scores, FitResult& out) {
  const auto b = scores.cols();
  out.blocks = static_cast<int>(b);
  out.block_s = block_s;
  if (b < 4) return cov;  // too few to say anything
  const Eigen::MatrixXd meat = scores * scores.transpose() * (static_cast<double>(b) / static_cast<double>(b - 1));
  return cov * meat * cov;
}

// a variance: the larger of the widened covariance's and the sandwich's (a quadratic form g^T C g)
double larger_variance(const Eigen::VectorXd& g, const Eigen::MatrixXd& widened, const Eigen::MatrixXd& sandwich) {
  return std::max({g.dot(widened * g), g.dot(sandwich * g), 0.0});
}

void estimates(const FitSetup& f, const Eigen::MatrixXd& cov, const Eigen::MatrixXd& widened,
               const Eigen::MatrixXd& sandwich, bool have_cov, FitResult& out) {
  for (int i = 0; i < vp::count; ++i) {
    const auto u = static_cast<std::size_t>(i);
    ParameterEstimate e;
    e.name = runtime::vehicle_parameter_names[u];
    e.value = out.theta[u];
    e.nominal = f.nominal[u];
    e.estimated = f.active[u];
    e.prior_stddev = f.prior.sd[u];
    e.stddev = f.active[u] ? std::min(std::sqrt(std::max({widened(i, i), sandwich(i, i), 0.0})), f.prior.sd[u]) : 0;
    if (f.active[u] && widened(i, i) > 0)
      out.misfit_widening = std::max(out.misfit_widening, std::sqrt(sandwich(i, i) / widened(i, i)));
    e.identified = have_cov && f.active[u] && e.stddev < 0.5 * f.prior.sd[u];
    out.parameters.push_back(e);
    for (int j = 0; j < vp::count; ++j) {
      const double d = std::sqrt(std::max(cov(i, i), 0.0) * std::max(cov(j, j), 0.0));
      out.correlation[u][static_cast<std::size_t>(j)] = d > 0 ? cov(i, j) / d : (i == j ? 1 : 0);
    }
  }
}

// the combinations: every force over the effective mass (1 + a), the angular drag over the
// effective inertia (also 1 + a), the current and the lag alone
void combinations(const FitSetup& f, const Eigen::MatrixXd& widened, const Eigen::MatrixXd& sandwich, bool have_cov,
                  FitResult& out) {
  const auto& active = f.active;
  const double eff = 1 + (active[vp::added_mass] ? out.theta[vp::added_mass] : 0);
  Eigen::MatrixXd p0 = Eigen::MatrixXd::Zero(vp::count, vp::count);
  for (int i = 0; i < vp::count; ++i)
    if (active[static_cast<std::size_t>(i)])
      p0(i, i) = f.prior.sd[static_cast<std::size_t>(i)] * f.prior.sd[static_cast<std::size_t>(i)];
  const auto combine = [&](int i, const std::string& name, const std::string& meaning, bool per_mass,
                           double offset = 0) {
    if (!active[static_cast<std::size_t>(i)]) return;
    Eigen::VectorXd g = Eigen::VectorXd::Zero(vp::count);
    Combination c;
    c.name = name;
    c.meaning = meaning;
    c.parameter = i;
    c.per_effective_mass = per_mass && active[vp::added_mass];
    c.offset = offset;
    const double v = out.theta[static_cast<std::size_t>(i)] + offset;
    if (c.per_effective_mass) {
      c.value = v / eff;
      g[i] = 1 / eff;
      g[vp::added_mass] = -v / (eff * eff);
    } else {
      c.value = v;
      g[i] = 1;
    }
    const double prior_sd = std::sqrt(std::max(g.dot(p0 * g), 0.0));
    c.stddev = std::min(std::sqrt(larger_variance(g, widened, sandwich)), prior_sd);
    c.identified = have_cov && c.stddev < 0.5 * prior_sd;
    out.combinations.push_back(c);
  };
  const std::string per = " / (1 + added_mass_fraction)";
  combine(vp::thrust, "thrust_per_effective_mass", "thrust_coefficient" + per, true);
  for (int i = 0; i < 6; ++i) {
    const std::string n = runtime::vehicle_parameter_names[static_cast<std::size_t>(vp::linear_drag + i)];
    combine(vp::linear_drag + i, n + "_per_effective_mass", n + per, true);
  }
  // the buoyancy offset moves the vertical acceleration as the net static force does: the model's
  // own (displaced water less weight) plus b is what the effective mass carries
  const double b0 = runtime::net_buoyancy_n(f.base);
  char net[160];
  std::snprintf(net, sizeof net, "(%.6g N, the model's displaced water less its weight, + buoyancy_offset_n)", b0);
  combine(vp::buoyancy, "net_buoyancy_per_effective_mass_n", net + per, true, b0);
  combine(vp::current_x, "current_x_m_s", "the steady water current along x", false);
  combine(vp::current_y, "current_y_m_s", "the steady water current along y", false);
  // the inertia grows with the added mass as the mass does: angular drag per effective inertia
  combine(vp::angular_drag, "angular_drag_per_effective_inertia", "angular_drag_scale" + per, true);
  combine(vp::thruster_lag, "thruster_lag_s",
          "how much slower the thrusters spin up: their rotors' time constant beyond the model's", false);
}

// the weak directions: the data's information in prior units (the posterior's precision less
// the prior's), eigen-directions along which the data shrank the prior's sigma less than 10x
void weak_directions(const FitSetup& f, const Eigen::MatrixXd& cov, FitResult& out) {
  std::vector<int> idx;
  for (int i = 0; i < vp::count; ++i)
    if (f.active[static_cast<std::size_t>(i)]) idx.push_back(i);
  const auto na = static_cast<Eigen::Index>(idx.size());
  const auto at = [&](Eigen::Index a) { return idx[static_cast<std::size_t>(a)]; };
  Eigen::MatrixXd c(na, na);
  Eigen::VectorXd d(na);
  for (Eigen::Index a = 0; a < na; ++a) {
    d[a] = f.prior.sd[static_cast<std::size_t>(at(a))];
    for (Eigen::Index b = 0; b < na; ++b) c(a, b) = cov(at(a), at(b));
  }
  const Eigen::MatrixXd info = d.asDiagonal() * c.completeOrthogonalDecomposition().pseudoInverse() * d.asDiagonal() -
                               Eigen::MatrixXd::Identity(na, na);
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(0.5 * (info + info.transpose()));
  for (Eigen::Index k = 0; k < na; ++k) {
    const double mu = std::max(eig.eigenvalues()[k], 0.0);
    if (mu >= 99) continue;  // shrunk 10x or more
    WeakDirection w;
    w.shrink = std::sqrt(1 + mu);
    const Eigen::VectorXd v = eig.eigenvectors().col(k);
    Eigen::Index top = 0;
    for (Eigen::Index a = 0; a < na; ++a) {
      if (std::abs(v[a]) >= std::abs(v[top])) top = a;
      if (std::abs(v[a]) >= 0.3)
        w.loadings.emplace_back(runtime::vehicle_parameter_names[static_cast<std::size_t>(at(a))], v[a]);
    }
    std::sort(w.loadings.begin(), w.loadings.end(),
              [](const auto& x, const auto& y) { return std::abs(x.second) > std::abs(y.second); });
    bool mass = false;
    for (const auto& [name, l] : w.loadings) mass |= name == std::string("added_mass_fraction");
    w.advice = runtime::manoeuvre_advice(mass ? vp::added_mass : at(top));
    out.weak.push_back(std::move(w));
  }
}

}  // namespace

FitResult fit(const std::vector<Trial>& trials, const FitOptions& options) {
  // a delay given is the only one tried (the windows then start right after it)
  FitOptions o = options;
  if (o.delay_steps >= 0) o.max_delay_steps = o.delay_steps;
  const FitSetup f = fit_setup(trials, o);
  const auto started = std::chrono::steady_clock::now();
  FitResult out;
  Solved first;
  if (o.delay_steps >= 0) {
    out.delay_steps = o.delay_steps;
    FitProblem p(trials, o, o.delay_steps, f.nominal, f.prior.sd, f.prior.lo, f.prior.hi, f.active);
    require_windows(p.windows(), o);
    first = p.solve(f.nominal, o.max_iterations, 0, false);
  } else {
    first = delay_profile(trials, o, f, out);
  }
  // the final fit at the best delay, robust, with the covariance
  FitProblem p(trials, o, out.delay_steps, f.nominal, f.prior.sd, f.prior.lo, f.prior.hi, f.active);
  const Solved s =
      p.solve(first.theta, std::min(o.max_iterations, 10), o.robust ? huber_scale(first.residuals) : 0, true);
  out.theta = s.theta;
  out.windows = static_cast<int>(p.windows());
  out.iterations = s.iterations;
  out.converged = s.converged;
  out.solver_report = s.report;
  out.initial_cost = s.initial_cost;
  out.final_cost = s.data_cost;
  int n_active = 0;
  for (bool a : f.active) n_active += a;
  residual_diagnostics(s, n_active, out);

  const bool have_cov = s.covariance.rows() == vp::count;
  const Eigen::MatrixXd cov = have_cov ? s.covariance : Eigen::MatrixXd::Zero(vp::count, vp::count);
  const Eigen::MatrixXd widened = cov * out.sigma_widening * out.sigma_widening;
  const Eigen::MatrixXd sandwich = have_cov ? block_sandwich(cov, s.block_scores, out) : widened;
  estimates(f, cov, widened, sandwich, have_cov, out);
  combinations(f, widened, sandwich, have_cov, out);
  if (have_cov) weak_directions(f, cov, out);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return out;
}

}  // namespace tether::identify
