// SPDX-License-Identifier: Apache-2.0
#include "estimate_refit.hpp"

#include <algorithm>
#include <cmath>

#include <Eigen/Eigenvalues>
#include <Eigen/QR>
#include <nlohmann/json.hpp>

namespace tether::runtime::feedback_detail {

void RefitSchedule::configure(const ConfigNode& node, const WorldModel& model, const RefitOptions& options) {
  // every refit_every_s the trial so far (at most refit_history_s of it) is fitted in the
  // background by `tether identify`'s fit; the processor takes it refit_latency_s after it
  // started (the step waits for it if it is late: the same step in every run and replay)
  every_s_ = node.number_or("refit_every_s", 0.0, Range::between(0, 86400));
  latency_s_ = node.number_or("refit_latency_s", 2.0, Range::between(0, 86400));
  history_s_ = node.number_or("refit_history_s", 120.0, Range::between(1, 3600));
  if (every_s_ <= 0) return;
  if (latency_s_ > every_s_)
    node["refit_latency_s"].error("refit_latency_s (" + std::to_string(latency_s_) +
                                  ") must not exceed refit_every_s (" + std::to_string(every_s_) +
                                  "): a refit is taken before the next one starts");
  if (!batch_refit_factory())
    node["refit_every_s"].error(
        "the batch refit is not available in this program (`tether` provides it; a program of its own "
        "calls tether::identify::register_online_refit() before loading the scenario)");
  else if (const std::string why = batch_refit_problem(); !why.empty())
    node["refit_every_s"].error("the batch refit cannot run here: " + why);
  model_ = model;
  options_ = options;
}

const RefitResult* RefitSchedule::step(const FeedbackContext& ctx, const WorldState& state, const BodyWrench& input) {
  const auto k = static_cast<std::int64_t>(ctx.step);
  if (!refit_) {
    options_.dt_s = ctx.dt_s;
    options_.history_steps = static_cast<std::size_t>(std::max(1.0, std::round(history_s_ / ctx.dt_s)));
    refit_ = batch_refit_factory()(model_, options_);
    every_steps_ = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::llround(every_s_ / ctx.dt_s)));
    latency_steps_ = std::min(every_steps_, static_cast<std::int64_t>(std::llround(latency_s_ / ctx.dt_s)));
    first_ = k;
  }
  refit_->capture(ctx, state, input);
  bool took = false;
  const auto take = [&] {
    take_at_ = -1;
    std::string why;
    if (!refit_->finish(result_, &why)) {
      ++failures_;
      error_ = why;
      return;
    }
    ++taken_;
    windows_ = result_.windows;
    error_.clear();
    took = true;
  };
  if (take_at_ == k) take();
  if (k > first_ && (k - first_) % every_steps_ == 0 && refit_->start()) {
    take_at_ = k + latency_steps_;
    if (latency_steps_ == 0) take();
  }
  return took ? &result_ : nullptr;
}

void RefitSchedule::reset() {
  refit_.reset();  // waits for a fit running
  take_at_ = -1;
  taken_ = failures_ = 0;
  windows_ = 0;
  error_.clear();
}

void RefitSchedule::summarize(nlohmann::json& out) const {
  if (!on()) return;
  out["refits"] = taken_;
  out["refit_failures"] = failures_;
  out["refit_windows"] = windows_;
  if (!error_.empty()) out["refit_error"] = error_;
}

Eigen::MatrixXd refit_information(const Eigen::MatrixXd& covariance, const Eigen::VectorXd& prior_variance) {
  const Eigen::MatrixXd info = covariance.completeOrthogonalDecomposition().pseudoInverse() -
                               Eigen::MatrixXd(prior_variance.cwiseInverse().asDiagonal());
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> e(0.5 * (info + info.transpose()));
  return e.eigenvectors() * e.eigenvalues().cwiseMax(0.0).asDiagonal() * e.eigenvectors().transpose();
}

}  // namespace tether::runtime::feedback_detail
