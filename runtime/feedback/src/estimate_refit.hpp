// SPDX-License-Identifier: Apache-2.0
// The `estimate` processor's batch refit schedule (docs/feedback.md, "The refit";
// tether/feedback/batch_refit.hpp): its keys, the capture every step, a fit started every
// `refit_every_s` and taken `refit_latency_s` later, and what the processor makes of the fit.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <Eigen/Core>
#include <nlohmann/json_fwd.hpp>

#include "tether/feedback/batch_refit.hpp"

namespace tether::runtime::feedback_detail {

class RefitSchedule {
 public:
  /// Reads `refit_every_s`, `refit_latency_s`, `refit_history_s` (errors on `node`); `model`
  /// is the scenario's, what each fit starts from; `options` the estimate's view of the vehicle
  /// (the dt and the history's length are filled in on the first step).
  void configure(const ConfigNode& node, const WorldModel& model, const RefitOptions& options);
  bool on() const { return every_s_ > 0; }
  /// Step k: captures it; the fit taken this step, if one was (else nullptr). The refit is
  /// made on the first step.
  const RefitResult* step(const FeedbackContext& ctx, const WorldState& state, const BodyWrench& input);
  /// The steps captured so far (0 before the first step and after reset()).
  std::size_t captured() const { return refit_ ? refit_->captured() : 0; }
  /// The session restored its start: the refit is made again on the next step.
  void reset();
  std::uint64_t taken() const { return taken_; }
  void summarize(nlohmann::json& out) const;

 private:
  double every_s_ = 0, latency_s_ = 2, history_s_ = 120;
  WorldModel model_;
  RefitOptions options_;
  std::unique_ptr<BatchRefit> refit_;
  std::int64_t every_steps_ = 0, latency_steps_ = 0, first_ = 0, take_at_ = -1;
  std::uint64_t taken_ = 0, failures_ = 0;
  int windows_ = 0;
  std::string error_;
  RefitResult result_;  // the last one taken
};

/// What a fit learned beyond the prior, as information: its covariance's inverse less the
/// prior's (a diagonal of variances), made positive semidefinite.
Eigen::MatrixXd refit_information(const Eigen::MatrixXd& covariance, const Eigen::VectorXd& prior_variance);

}  // namespace tether::runtime::feedback_detail
