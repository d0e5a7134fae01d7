// SPDX-License-Identifier: Apache-2.0
#include "tether/loop/faults_and_expectations.hpp"

#include <string>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "tether/recording/recorder.hpp"

namespace tether::runtime {

FaultsAndExpectations::FaultsAndExpectations(const Scenario& scenario,
                                             const std::vector<std::unique_ptr<FeedbackProcessor>>& processors,
                                             const std::vector<std::unique_ptr<Endpoint>>& endpoints,
                                             const std::vector<EndpointCounters>& counters, const WorldModel& model,
                                             const WorldState& state, const hal::DeviceBank& devices,
                                             const StepReport& report)
    : scenario_(scenario), endpoints_(endpoints), counters_(counters), model_(model), state_(state), devices_(devices), report_(report) {
  if (!scenario_.expectations.empty()) {
    expectations_ = std::make_unique<Expectations>(scenario_.expectations, processors, scenario_);
    needs_contacts_ = expectations_->needs_contacts();
    expect_logs_.resize(endpoints_.size());
  }
  if (scenario_.faults.empty()) return;
  faults_ = std::make_unique<FaultInjector>(scenario_.faults, endpoints_.size(), scenario_.loop.seed,
                                            scenario_.initial.step, scenario_.loop.period_ns);
  std::vector<ExpectationConfig> conditions;
  fault_condition_index_.assign(scenario_.faults.size(), -1);
  for (std::size_t i = 0; i < scenario_.faults.size(); ++i)
    if (scenario_.faults[i].trigger == FaultTrigger::condition) {
      fault_condition_index_[i] = static_cast<int>(conditions.size());
      conditions.push_back(scenario_.faults[i].condition);
    }
  if (!conditions.empty()) {
    fault_conditions_ = std::make_unique<Expectations>(conditions, processors, scenario_);
    needs_contacts_ = needs_contacts_ || fault_conditions_->needs_contacts();
  }
  fault_holds_.assign(scenario_.faults.size(), false);
  fault_transitions_.reserve(scenario_.faults.size());
  fault_logged_.assign(scenario_.faults.size(), 0);
}

FaultsAndExpectations::~FaultsAndExpectations() = default;

// what expectations and fault conditions read: the step's state, devices, endpoints, report
ExpectationStep FaultsAndExpectations::step_data(std::uint64_t step, std::int64_t start_time_ns) const {
  ExpectationStep s;
  s.step = step;
  s.t_s = static_cast<double>(state_.time_ns - start_time_ns) * 1e-9;
  s.model = &model_;
  s.state = &state_;
  s.devices = &devices_;
  s.endpoints = &endpoints_;
  s.counters = &counters_;
  s.report = &report_;
  return s;
}

void FaultsAndExpectations::begin_faults(const StepContext& ctx, std::int64_t start_time_ns, Recorder* recorder) {
  if (fault_conditions_) {
    const ExpectationStep s = step_data(ctx.step, start_time_ns);
    for (std::size_t i = 0; i < fault_holds_.size(); ++i)
      fault_holds_[i] = fault_condition_index_[i] >= 0 &&
                        fault_conditions_->holds_now(static_cast<std::size_t>(fault_condition_index_[i]), s);
  }
  faults_->begin_step(ctx.step, fault_holds_, devices_, fault_transitions_);
  for (const FaultTransition& t : fault_transitions_) {
    const FaultConfig& f = faults_->faults()[t.fault];
    const std::string target = f.endpoint >= 0
                                   ? "endpoint \"" + endpoints_[static_cast<std::size_t>(f.endpoint)]->name() + "\""
                                   : devices_.full_name(static_cast<std::size_t>(f.device));
    const std::string text = "fault \"" + f.name + "\" (" + to_string(f.kind) + " on " + target + ") " +
                             (t.started ? "starts" : "ends") + " at step " + std::to_string(ctx.step);
    // the first starts and ends of each fault go to the log; all of them are events
    int& logged = fault_logged_[t.fault];
    if (logged < max_logged_fault_transitions)
      spdlog::info(
          "{}{}", text,
          ++logged == max_logged_fault_transitions ? " (its further starts and ends are in the recording only)" : "");
    if (recorder) recorder->event(ctx.step, ctx.time_ns, 3, "faults", text);
  }
}

void FaultsAndExpectations::add_fault(const FaultConfig& fault) {
  if (!faults_)
    faults_ = std::make_unique<FaultInjector>(scenario_.faults, endpoints_.size(), scenario_.loop.seed,
                                              scenario_.initial.step, scenario_.loop.period_ns);
  faults_->add(fault);
  fault_logged_.resize(faults_->faults().size(), 0);
  fault_transitions_.reserve(faults_->faults().size());
}

void FaultsAndExpectations::expect(std::uint64_t step, std::int64_t start_time_ns, bool last) {
  ExpectationStep s = step_data(step, start_time_ns);
  s.logs = expect_logs_;
  if (last)
    expectations_->finish(s);
  else
    expectations_->evaluate(s);
}

void FaultsAndExpectations::finish_faults(std::uint64_t end_step) {
  if (faults_) faults_->finish(end_step);
}

void FaultsAndExpectations::not_run() {
  if (expectations_) expectations_->not_run();
}

void FaultsAndExpectations::summarize(nlohmann::json& out) const {
  if (faults_) {
    std::vector<std::string> endpoint_names, device_names;
    for (const auto& e : endpoints_) endpoint_names.push_back(e->name());
    for (std::size_t d = 0; d < devices_.size(); ++d) device_names.push_back(devices_.full_name(d));
    out["faults"] = faults_->summary(endpoint_names, device_names);
  }
  if (expectations_) {
    out["expectations"] = expectations_->summary();
    out["verdict"] = expectations_->passed() ? "pass" : "fail";
  }
}

}  // namespace tether::runtime
