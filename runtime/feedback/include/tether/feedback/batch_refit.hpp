// SPDX-License-Identifier: Apache-2.0
// The online `estimate` processor's batch refit (docs/feedback.md, "The refit"): every
// `refit_every_s` it hands what it has seen of the trial so far to a batch fit over the whole
// of it — `tether identify`'s fit, run in the background — and takes the fit's values and
// covariance as its own a fixed `refit_latency_s` later (in a paced session: then, or at the
// first step after it when the fit is late; docs/feedback.md, "Background work"). The fit lives in the identify
// library, which depends on this one; it makes itself known here
// (tether::identify::register_online_refit()), as a feedback processor from outside would.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <string>

#include "tether/feedback/feedback.hpp"
#include "tether/feedback/vehicle_parameters.hpp"

namespace tether::runtime {

/// What a refit is asked for: the estimate's own view of the vehicle.
struct RefitOptions {
  int body = 0;
  double dt_s = 0;
  int input_delay_steps = 0;      // the estimate's: the fit takes it as the delay, not profiled
  std::size_t history_steps = 0;  // the most recent steps kept and fitted
  double position_stddev_m = 0.005, velocity_stddev_m_s = 0.01, orientation_stddev_rad = 0.01;
  double added_mass_stddev = 0.1;
  std::array<bool, vp::count> active{};  // the estimate's groups (the added mass: fitted against its prior)
};

/// A refit's result: values and covariance in vehicle_parameters.hpp's order.
struct RefitResult {
  std::array<double, vp::count> theta{};
  std::array<std::array<double, vp::count>, vp::count> covariance{};
  int windows = 0;
  bool converged = false;
};

/// One vehicle's refit: captures every step, fits a copy in the background.
class BatchRefit {
 public:
  virtual ~BatchRefit() = default;
  /// Step k's S_k (the twin), the body's input as gathered (before any gain or lag of the
  /// estimate), this step's measurements and devices. Allocates while the history first fills
  /// (a step of it at a time), then nothing; the `estimate` processor without a refit never
  /// allocates in the step.
  virtual void capture(const FeedbackContext& ctx, const WorldState& state, const BodyWrench& input) = 0;
  /// Steps captured and kept (at most history_steps).
  virtual std::size_t captured() const = 0;
  /// Starts a fit of a copy of what is captured now, in the background; false when one is
  /// started and not yet finished.
  virtual bool start() = 0;
  /// Whether the fit started last has finished (finish() would not wait); never waits.
  virtual bool ready() = 0;
  /// Waits for the fit started last; false with the reason when it had no result (too few
  /// windows: nothing is changed). The result depends only on what was captured when it started.
  virtual bool finish(RefitResult& out, std::string* why) = 0;
  // (a restored session makes a new one: destroying it waits for a fit running)
};

using BatchRefitFactory = std::function<std::unique_ptr<BatchRefit>(const WorldModel& model, const RefitOptions&)>;

/// Whether a refit can run in this process: empty if so, else why not (checked when a
/// scenario asking for a refit is loaded, so that it is refused then, not minutes into a trial).
using BatchRefitProbe = std::function<std::string()>;

/// Installs the refit (the identify library's register_online_refit() calls it); not thread-safe.
void set_batch_refit_factory(BatchRefitFactory factory, BatchRefitProbe probe = {});
/// The installed one; empty until then (a scenario asking for a refit is then refused).
const BatchRefitFactory& batch_refit_factory();
/// Why the installed refit cannot run here (its probe's answer); empty when it can.
std::string batch_refit_problem();

}  // namespace tether::runtime
