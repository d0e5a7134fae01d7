// SPDX-License-Identifier: Apache-2.0
// The scenario's `faults:` and `expect:` as a session runs them (docs/faults.md,
// docs/scenario.md): at the start of a step, which faults act (their `if:` conditions read
// on S_k; starts and ends go to the log and the recording); after the advance, the
// expectations judged on S_{k+1}. Both read the same step data (ExpectationStep) from the
// session's own objects; neither reads a clock, so a replay reaches the same faults and
// the same verdicts. The session hands each endpoint its link plan (faults()->link(i)).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tether/loop/expectation_eval.hpp"
#include "tether/loop/fault_injector.hpp"

namespace tether::runtime {

class Recorder;

class FaultsAndExpectations {
 public:
  /// Builds the injector and the expectations (throws ConfigError for an expectation or a
  /// fault's condition that reads what the session lacks). The step data is read from
  /// `model`, `state`, `devices`, `endpoints` (with the session's `counters` of each) and
  /// `report`, which must outlive this.
  FaultsAndExpectations(const Scenario& scenario, const std::vector<std::unique_ptr<FeedbackProcessor>>& processors,
                        const std::vector<std::unique_ptr<Endpoint>>& endpoints,
                        const std::vector<EndpointCounters>& counters, const WorldModel& model,
                        const WorldState& state, const hal::DeviceBank& devices, const StepReport& report);
  ~FaultsAndExpectations();

  /// True if the scenario has faults or one was injected (then faults() is not null).
  bool has_faults() const { return faults_ != nullptr; }
  bool has_expectations() const { return expectations_ != nullptr; }
  /// True if an expectation or a fault's condition reads contacts (the advance must report them).
  bool needs_contacts() const { return needs_contacts_; }
  /// The injector (null without faults): link plans, device faults, keyframes.
  FaultInjector* faults() { return faults_.get(); }
  const FaultInjector* faults() const { return faults_.get(); }

  /// Step `ctx.step` begins: the `if:` conditions on S_k, then the faults that start and end
  /// (the first starts and ends of each in the log, all of them events of `recorder`).
  /// `start_time_ns`: the session's start (expectations' t_s). Needs has_faults().
  void begin_faults(const StepContext& ctx, std::int64_t start_time_ns, Recorder* recorder);
  /// A fault injected while the session runs (creates the injector on the first).
  void add_fault(const FaultConfig& fault);

  /// Per endpoint, the LOG lines of its reply this step: the session fills them before expect().
  std::span<std::span<const LogLine>> logs() { return expect_logs_; }
  /// Judges the expectations due at `step` on the state after it (allocation-free); `last`:
  /// the end of the run (`at end`, `eventually`). Needs has_expectations().
  void expect(std::uint64_t step, std::int64_t start_time_ns, bool last);
  /// The run ended at `end_step`: closes the faults' open activations; with no step run the
  /// expectations are skipped (with steps, expect(end_step - 1, ..., true) judges the end).
  void finish_faults(std::uint64_t end_step);
  void not_run();
  /// False if an expectation failed (known after the run).
  bool passed() const { return !expectations_ || expectations_->passed(); }

  /// Adds `faults` (per fault: its activations), `expectations` and `verdict` to the summary.
  void summarize(nlohmann::json& out) const;

 private:
  ExpectationStep step_data(std::uint64_t step, std::int64_t start_time_ns) const;

  const Scenario& scenario_;
  const std::vector<std::unique_ptr<Endpoint>>& endpoints_;
  const std::vector<EndpointCounters>& counters_;
  const WorldModel& model_;
  const WorldState& state_;
  const hal::DeviceBank& devices_;
  const StepReport& report_;
  bool needs_contacts_ = false;
  std::unique_ptr<Expectations> expectations_;         // `expect:` (null without)
  std::vector<std::span<const LogLine>> expect_logs_;  // per endpoint: this step's LOG lines
  std::unique_ptr<FaultInjector> faults_;              // `faults:` and injected ones (null without)
  std::unique_ptr<Expectations> fault_conditions_;     // the faults' `if:` conditions
  std::vector<int> fault_condition_index_;             // per fault: its condition's index, or -1
  std::vector<bool> fault_holds_;                      // per fault: its condition holds on S_k
  std::vector<FaultTransition> fault_transitions_;     // faults starting/ending this step
  std::vector<int> fault_logged_;                      // per fault: starts and ends logged so far
  static constexpr int max_logged_fault_transitions = 10;
};

}  // namespace tether::runtime
