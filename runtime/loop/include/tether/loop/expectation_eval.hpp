// SPDX-License-Identifier: Apache-2.0
// The scenario's `expect:` evaluated every step from the step's data (docs/scenario.md):
// PASS or FAIL per expectation, its worst value and the first failing step. Nothing here
// reads a clock, so a replay of the recording reaches the same verdicts. The keys are parsed
// in scenario/expectations.hpp.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tether/hal/device_bank.hpp"
#include "tether/loop/endpoint.hpp"
#include "tether/feedback/feedback.hpp"
#include "tether/physics/physics.hpp"
#include "tether/scenario/scenario.hpp"

namespace tether::runtime {

/// What one step offers the expectations.
struct ExpectationStep {
  std::uint64_t step = 0;
  double t_s = 0;  // simulation time of the state, from the session's start
  const WorldModel* model = nullptr;
  const WorldState* state = nullptr;
  const hal::DeviceBank* devices = nullptr;
  const std::vector<std::unique_ptr<Endpoint>>* endpoints = nullptr;
  const std::vector<EndpointCounters>* counters = nullptr;  // the session's, per endpoint
  const StepReport* report = nullptr;
  /// Per endpoint: the LOG lines of its reply this step (empty when it did not answer).
  std::span<const std::span<const LogLine>> logs;
};

class Expectations {
 public:
  /// Resolves each expectation's figures (a feedback processor's must be one it records);
  /// throws ConfigError with the entry's position otherwise.
  Expectations(const std::vector<ExpectationConfig>& configs,
               const std::vector<std::unique_ptr<FeedbackProcessor>>& processors, const Scenario& scenario);
  ~Expectations();

  bool empty() const { return items_.empty(); }
  /// True if some expectation reads contacts (the step must report them).
  bool needs_contacts() const { return needs_contacts_; }
  /// Evaluates every expectation due at this step (allocation-free).
  void evaluate(const ExpectationStep& s);
  /// The end of the run: `at end` expectations on `last`; `eventually` ones that never held
  /// fail, and so do windows without a reading; a window after the run's end is SKIPPED.
  void finish(const ExpectationStep& last);
  /// The run stopped before its first step (a fault in the first projection, a stop at once):
  /// nothing can be judged; every expectation is skipped, none passes by default.
  void not_run();
  /// True if expectation i's condition holds on this step's data (its `when` is not
  /// consulted, nothing is recorded): a fault's `if:` trigger.
  bool holds_now(std::size_t i, const ExpectationStep& s);
  /// False if any expectation failed (after finish()); skipped ones do not fail a run.
  bool passed() const;
  /// One object per expectation: name, value, that, when, verdict (PASS, FAIL, or SKIPPED
  /// when its window lies beyond the end of a shortened run), worst (the
  /// value furthest from the condition among the steps evaluated; for `eventually`, the
  /// closest), evaluated_steps, first_failing_step and _time_s (null when it passed).
  nlohmann::json summary() const;

 private:
  struct Item;
  void evaluate_one(Item& it, const ExpectationStep& s);
  double value_of(Item& it, const ExpectationStep& s);  // NaN: no reading this step
  std::vector<Item> items_;
  std::vector<double> figures_;  // feedback figures of this step (reused)
  bool needs_contacts_ = false;
  const std::vector<std::unique_ptr<FeedbackProcessor>>& processors_;
};

}  // namespace tether::runtime
