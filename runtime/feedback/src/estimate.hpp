// SPDX-License-Identifier: Apache-2.0
// The `estimate` processor (feedback_estimate.cpp says what it does; docs/feedback.md,
// "estimate"). Its parts, a file each: configure and the step (feedback_estimate.cpp), its
// measured-state windows and their replay (tether/feedback/estimate_windows.hpp), the online
// filter — a window's Jacobian, recursive least squares, identifiability (estimate_filter.cpp) —,
// the batch refit's schedule (estimate_refit.hpp) and the summary and recording
// (estimate_summary.cpp). Private to the feedback library.
#pragma once

#include <array>
#include <cmath>
#include <numbers>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <Eigen/Core>
#include <Eigen/Eigenvalues>
#include <nlohmann/json_fwd.hpp>

#include "estimate_refit.hpp"
#include "feedback_processors.hpp"
#include "tether/feedback/estimate_windows.hpp"
#include "tether/feedback/vehicle_parameters.hpp"

namespace tether::runtime::feedback_detail {

inline constexpr int n_params = vp::count;
using VecP = Eigen::Matrix<double, n_params, 1>;
using MatP = Eigen::Matrix<double, n_params, n_params>;
using Vec8 = EstimateWindows::Landing;
using Vec15 = EstimateWindows::Track;
using Mat15 = Eigen::Matrix<double, 15, 15>;

static_assert(n_params == 13);
inline constexpr const auto& param_names = vehicle_parameter_names;

// parameter groups as the scenario names them
struct Group {
  const char* name;
  int first, count;
};
inline constexpr std::array<Group, 8> groups = {{{"thrust", 0, 1},
                                                 {"linear_drag", 1, 3},
                                                 {"quadratic_drag", 4, 3},
                                                 {"buoyancy", 7, 1},
                                                 {"current", 8, 2},
                                                 {"thruster_lag", 10, 1},
                                                 {"added_mass", 11, 1},
                                                 {"angular_drag", 12, 1}}};
inline constexpr int default_groups = 5;  // without `parameters`: the first five
inline constexpr int i_lag = vp::thruster_lag, i_added = vp::added_mass, i_yaw = vp::angular_drag;
// the filter of a thruster lag starts this many steps before a window (its state is the
// inputs' history, not measured)
inline constexpr int lag_warmup_steps = 100;

class EstimateProcessor final : public FeedbackProcessor {
 public:
  // configure and the step (feedback_estimate.cpp)
  void configure(const ConfigNode& node, const WorldModel& model, int vehicle) override;
  FeedbackPhase phase() const override { return FeedbackPhase::model; }
  void update_model(const FeedbackContext& ctx, WorldModel& model, const WorldState& state,
                    StepInputs& inputs) override;
  void snapshot(std::string& out) const override;
  bool restores_after_start() const override { return !refit_.on(); }
  bool restore(std::string_view b) override;
  // the refit, a paced session's late takes (docs/feedback.md, "Background work")
  BackgroundNote take_background_note() override { return refit_.take_note(); }
  bool apply_background_note(std::uint64_t step, BackgroundNote note, std::string* why) override {
    if (refit_.on()) {
      refit_.recorded_note(step, note);
      return true;
    }
    return FeedbackProcessor::apply_background_note(step, note, why);
  }

  // the summary and the recording (estimate_summary.cpp)
  void summarize(nlohmann::json& out) const override;
  void read_only_parameters(std::vector<std::pair<std::string, double>>& out) const override;
  std::vector<std::string> record_fields() const override;
  void record(std::vector<double>& out) const override;

 private:
  void read_groups(const ConfigNode& node);
  void set_bounds_and_prior(const WorldModel& model, const VehicleParameterRanges& ranges);
  void apply(WorldModel& model) const { apply(model, theta_); }
  void apply(WorldModel& model, const VecP& th) const {
    apply_vehicle_parameters(base_, th.data(), active_[i_added], model);
    if (active_[i_yaw]) apply_angular_drag(base_, th[i_yaw], model);
  }
  // what a window's replay applies (as apply() does)
  EstimateWindows::Parameters replay_parameters() const { return {&base_, active_[i_added], active_[i_yaw]}; }
  static void scale(BodyWrench& w, double c) { scale_wrench(w, c); }
  static BodyWrench lag_step(BodyWrench& y, const BodyWrench& in, double tau, double dt) {
    return lag_wrench_step(y, in, tau, dt);
  }
  // the body x axis' heading in the horizontal plane, and an angle's difference in (-pi, pi]
  static double heading(const Quat& q) {
    const Mat3 r = q.toRotationMatrix();
    return std::atan2(r(1, 0), r(0, 0));
  }
  static double wrapped(double a) { return std::remainder(a, 2 * std::numbers::pi); }
  static constexpr int checkpoints = EstimateWindows::checkpoints;
  static std::int64_t checkpoint(std::int64_t t0, std::int64_t t1, int j) {
    return EstimateWindows::checkpoint(t0, t1, j);
  }

  // the online filter (estimate_filter.cpp)
  void update_from_window(const FeedbackContext& ctx, WorldModel& model, const WorldState& twin, std::int64_t t0,
                          std::int64_t t1);
  void update_from_positions(const FeedbackContext& ctx, WorldModel& model, const WorldState& twin, std::int64_t t0,
                             std::int64_t t1);
  double probe_step(int i) const;
  // one step for any number of residual rows (6, 8 or 15): sizes at run time, so that one
  // body is compiled, not one fully unrolled copy per size (it runs once a window)
  using JacP = Eigen::Matrix<double, Eigen::Dynamic, n_params>;
  void rls(const Eigen::VectorXd& nu, const JacP& jac, const Eigen::MatrixXd& r, WorldModel& model);
  void classify();
  void take_refit(const RefitResult& r);
  void fault(WorldModel& model);

  // the summary (estimate_summary.cpp)
  double sigma(int i) const;
  bool reported_identified(int i) const;
  void summarize_weak(nlohmann::json& out) const;
  // with the added mass considered: thrust, drags and buoyancy offset over the effective mass
  // (1 + a), the yaw drag over the effective inertia: what the data pin down (docs/feedback.md,
  // "The offline fit"); sigma from the covariance, the considered added mass's share included,
  // widened by the misfit
  struct Combination {
    std::string name;
    double value = 0, stddev = 0;
  };
  std::vector<Combination> combinations() const;
  void summarize_combinations(nlohmann::json& out) const;

  // configuration
  int body_ = 0;
  std::array<bool, n_params> active_{};
  int horizon_ = 50, every_ = 5;
  double lambda_ = 0.9995, sigma_p_ = 0.005, sigma_v_ = 0.01, gate_ = 50, step_fraction_ = 0.05;
  double sigma_yaw_ = 0.01, sigma_w_ = 0.01;
  VecP nominal_ = VecP::Zero(), lo_ = VecP::Zero(), hi_ = VecP::Zero(), step_max_ = VecP::Zero();
  MatP p0_ = MatP::Zero();
  VehicleParameterBase base_;
  int delay_ = 0;           // input_delay_steps
  bool rotor_lag_ = false;  // thruster_lag_model: rotors
  bool structure_exact_ = false;
  double weak_information_ = 100, weak_share_max_ = 0.2, misfit_limit_ = 10;

  // the live twin
  BodyWrench live_lag_{};  // the twin's thruster-lag filter (a body without thrusters)

  // the measured-state windows (estimate_windows.hpp)
  EstimateWindows windows_;

  // the online filter: the estimate, its covariance, the information the windows carried
  VecP theta_ = VecP::Zero();
  MatP p_ = MatP::Zero();
  std::uint64_t updates_ = 0, rejected_ = 0;
  double nis_ = 0;
  // identifiability and the noise the residuals show
  static constexpr double noise_rate = 0.02, bias_rate = 0.05, max_noise_scale = 1e4, max_rho = 0.95;
  MatP info_ = MatP::Zero();
  int n_active_ = 0;
  std::array<int, n_params> index_{};  // the estimated parameters, in order
  Eigen::MatrixXd scaled_;             // info_ of those, in prior units
  std::optional<Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>> eig_;
  Eigen::VectorXd mu_;
  double alpha_ = 1, rho_num_ = 0, rho_den_ = 0, rho_ = 0, noise_scale_ = 1, condition_ = 0;
  VecP weak_share_ = VecP::Ones();
  std::array<bool, n_params> identified_{};
  double systematic_ = 0, r2_ = 0, misfit_widening_ = 1;
  bool misfit_ = false;  // the residuals say the model cannot represent the vehicle
  double slow_noise_scale_ = 1;
  static constexpr double slow_rate = 0.002;
  Vec15 rbar_ = Vec15::Zero();
  int last_rows_ = 0;  // the previous window's whitened residual, for the correlation
  Vec15 last_nu_ = Vec15::Zero();

  // the batch refit (refit_every_s > 0)
  RefitSchedule refit_;
};

}  // namespace tether::runtime::feedback_detail
