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
  // started: as fast as possible the step waits for it if it is late (the same step in every
  // run), in a paced session it is taken at the first step it is ready, a step that replay
  // reads from the recording (docs/feedback.md, "Background work")
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
  note_ = BackgroundNote::none;
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
  const auto defer = [&] {
    take_at_ = -1;
    deferred_ = true;
    deferred_at_ = k;
    if (ctx.background != BackgroundTakes::as_recorded) note_ = BackgroundNote::deferred;
  };
  // the fit due at this step: taken now (waiting for it if it is late), or deferred
  const auto due = [&] {
    switch (ctx.background) {
      case BackgroundTakes::at_schedule: return take();
      case BackgroundTakes::when_ready: return refit_->ready() ? take() : defer();
      case BackgroundTakes::as_recorded: return recorded_defer_ == k ? defer() : take();
    }
  };
  if (deferred_) {
    bool now = true;  // at_schedule (the session stopped pacing): now, waiting if need be
    if (ctx.background == BackgroundTakes::when_ready) now = refit_->ready();
    if (ctx.background == BackgroundTakes::as_recorded) now = recorded_take_ == k;
    if (now) {
      deferred_ = false;
      ++late_;
      late_steps_max_ = std::max(late_steps_max_, k - deferred_at_);
      if (ctx.background != BackgroundTakes::as_recorded) note_ = BackgroundNote::taken;
      take();
    }
  }
  if (take_at_ == k) due();
  if (k > first_ && (k - first_) % every_steps_ == 0) {
    if (refit_->start()) {
      take_at_ = k + latency_steps_;
      if (latency_steps_ == 0) due();
    } else {
      ++skipped_;  // the last one is still deferred: this one is not made
    }
  }
  return took ? &result_ : nullptr;
}

void RefitSchedule::recorded_note(std::uint64_t step, BackgroundNote note) {
  if (note == BackgroundNote::deferred) recorded_defer_ = static_cast<std::int64_t>(step);
  if (note == BackgroundNote::taken) recorded_take_ = static_cast<std::int64_t>(step);
}

void RefitSchedule::reset() {
  refit_.reset();  // waits for a fit running
  take_at_ = -1;
  taken_ = failures_ = late_ = skipped_ = 0;
  deferred_ = false;
  deferred_at_ = recorded_defer_ = recorded_take_ = -1;
  late_steps_max_ = 0;
  note_ = BackgroundNote::none;
  windows_ = 0;
  error_.clear();
}

void RefitSchedule::summarize(nlohmann::json& out) const {
  if (!on()) return;
  out["refits"] = taken_;
  out["refit_failures"] = failures_;
  out["refit_windows"] = windows_;
  out["refits_late"] = late_;  // deferred at their step (not ready, a paced session), taken later
  out["refit_late_steps_max"] = late_steps_max_;
  out["refit_starts_skipped"] = skipped_;
  if (!error_.empty()) out["refit_error"] = error_;
}

Eigen::MatrixXd refit_information(const Eigen::MatrixXd& covariance, const Eigen::VectorXd& prior_variance) {
  const Eigen::MatrixXd info = covariance.completeOrthogonalDecomposition().pseudoInverse() -
                               Eigen::MatrixXd(prior_variance.cwiseInverse().asDiagonal());
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> e(0.5 * (info + info.transpose()));
  return e.eigenvectors() * e.eigenvalues().cwiseMax(0.0).asDiagonal() * e.eigenvectors().transpose();
}

}  // namespace tether::runtime::feedback_detail
