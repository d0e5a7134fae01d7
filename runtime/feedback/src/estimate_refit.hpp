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
  /// made on the first step. A fit is taken as ctx.background says (feedback.hpp): at its
  /// step, waiting if late; deferred while not ready (a paced session); or where the recording
  /// says.
  const RefitResult* step(const FeedbackContext& ctx, const WorldState& state, const BodyWrench& input);
  /// What step() did that replay must repeat (a deferral, a late take); cleared by the call.
  BackgroundNote take_note() {
    const BackgroundNote n = note_;
    note_ = BackgroundNote::none;
    return n;
  }
  /// The recording's note for step `step`, before step() runs for it.
  void recorded_note(std::uint64_t step, BackgroundNote note);
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
  // a fit due and not taken (BackgroundTakes::when_ready / as_recorded), since step deferred_at_
  bool deferred_ = false;
  std::int64_t deferred_at_ = -1, recorded_defer_ = -1, recorded_take_ = -1;
  BackgroundNote note_ = BackgroundNote::none;
  std::uint64_t late_ = 0, skipped_ = 0;  // taken after their step; starts skipped (one still running)
  std::int64_t late_steps_max_ = 0;
  int windows_ = 0;
  std::string error_;
  RefitResult result_;  // the last one taken
};

/// What a fit learned beyond the prior, as information: its covariance's inverse less the
/// prior's (a diagonal of variances), made positive semidefinite.
Eigen::MatrixXd refit_information(const Eigen::MatrixXd& covariance, const Eigen::VectorXd& prior_variance);

}  // namespace tether::runtime::feedback_detail
