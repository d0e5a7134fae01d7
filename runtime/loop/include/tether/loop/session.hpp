// SPDX-License-Identifier: Apache-2.0
// The lock-step loop: the eight phases of one step (docs/architecture.md, "One step").
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tether/hal/device_bank.hpp"
#include "tether/loop/control.hpp"
#include "tether/loop/device_world.hpp"
#include "tether/loop/endpoint.hpp"
#include "tether/loop/expectations.hpp"
#include "tether/loop/faults.hpp"
#include "tether/loop/feedback.hpp"
#include "tether/loop/pacing.hpp"
#include "tether/loop/phase_profile.hpp"
#include "tether/loop/plausibility.hpp"
#include "tether/recording/recording.hpp"
#include "tether/scenario/scenario.hpp"
#include "tether/physics/state_store.hpp"

namespace tether::runtime {

/// What the live status line shows; handed to SessionOptions::on_status at most 4×/s.
struct LiveStatus {
  std::uint64_t step = 0;
  std::uint64_t steps_total = 0;
  double sim_time_s = 0;
  double achieved_rtf = 0;
  std::uint64_t step_p99_ns = 0;
  std::uint64_t misses = 0;
};

struct SessionOptions {
  std::optional<double> real_time_factor;  // overrides loop.real_time_factor
  std::optional<std::uint64_t> steps;      // overrides loop.steps
  std::function<void(const LiveStatus&)> on_status;
  /// Called after every completed step with S_{k+1}; returning false stops the session
  /// (outcome stopped). Replay uses it to verify states.
  std::function<bool(const WorldState&)> after_step;
  double status_interval_s = 0.25;
  /// Steering from other threads (the live server): pause, step, forces, gains (docs/live.md).
  SessionControl* control = nullptr;
  /// Start paused (with `control`): nothing steps until a client resumes or steps.
  bool start_paused = false;
  /// Replay: the recorded operator commands, applied again at their steps.
  const std::vector<StepCommands>* scripted_commands = nullptr;
  /// Replay served live (with `control`): the recording's keyframes, by the step they
  /// precede; a seek restores the nearest one and steps on to the target.
  const std::map<std::uint64_t, Keyframe>* keyframes = nullptr;
  /// With `control`: at the last step, pause instead of ending (a client may seek back);
  /// the session ends when a client shuts it down or it is stopped.
  bool hold_at_end = false;
};

/// How a session ended. `aborted`: a timeout policy, an endpoint fault under `abort` or
/// `block`, or a numerical fault stopped it. `failed`: something threw mid-step (a feedback
/// processor, a device, the loop itself); abort_reason() names who, the step and the message.
/// How a session ended. `faulted`: every step ran, but an endpoint faulted on the way (its
/// firmware died, its line closed) and its policy (hold, safe) carried the session on.
enum class Outcome : std::uint8_t { completed, stopped, aborted, failed, faulted };

const char* to_string(Outcome outcome);

class Recorder;
class InProcessEndpoint;
struct OperatorControl;

class Session {
 public:
  /// Takes the endpoints (constructed, not started), builds the scenario's feedback
  /// processors (throws ConfigError on bad ones). Allocates every per-step buffer here.
  Session(const Scenario& scenario, std::vector<std::unique_ptr<Endpoint>> endpoints, SessionOptions options = {});
  ~Session();

  /// Starts the endpoints, runs the loop until the step count, a stop request or an abort,
  /// stops the endpoints. Throws std::runtime_error if an endpoint cannot start.
  Outcome run(const std::atomic<bool>& stop_requested);

  /// Records every step to `recorder` (owned by the caller; opened before run()). While the
  /// real-time factor is 0 the loop waits for a full recorder (nothing is lost); paced, it
  /// never waits for the disk (a full queue drops and counts): the session keeps the
  /// recorder's set_wait_when_full() in step with its factor, live changes included.
  void set_recorder(Recorder* recorder);
  /// A snapshot to continue from: S_k and everything else the next step depends on.
  Keyframe keyframe() const;
  /// Same, into `out`, reusing its buffers (the step writes keyframes this way).
  void keyframe(Keyframe& out) const;
  /// Continues from a keyframe instead of the scenario's initial state (before run()).
  bool restore(const Keyframe& keyframe, std::string* error);

  /// The session summary (counters, timing, per-endpoint figures, vehicles).
  nlohmann::json summary() const;
  /// False if an expectation of the scenario's `expect:` failed (known after run()).
  bool expectations_passed() const { return !expectations_ || expectations_->passed(); }

  const WorldState& state() const { return state_; }
  /// The last loop.history_steps states, S_k included (state_at(t), rewind).
  const StateStore& history() const { return history_; }
  /// The session's model: the scenario's, as changed by `model`-phase processors.
  const WorldModel& model() const { return model_; }
  /// The session's devices (sampled on the projected state each step).
  const hal::DeviceBank& devices() const { return devices_; }
  const std::vector<std::unique_ptr<FeedbackProcessor>>& processors() const { return processors_; }
  Outcome outcome() const { return outcome_; }
  /// The phase of the step in progress ("project", "publish", … "pace"), or nullptr
  /// outside run(): for diagnostics, e.g. naming where an allocation or a throw happened.
  const char* phase() const { return phase_; }
  const std::string& abort_reason() const { return abort_reason_; }
  const std::vector<std::unique_ptr<Endpoint>>& endpoints() const { return endpoints_; }
  const Histogram& step_time_ns() const { return step_time_ns_; }
  /// Wall time per phase, when the scenario's loop.profile_phases is on.
  const PhaseProfile& phase_profile() const { return profile_; }
  /// The inputs the last completed step applied (after phase 4).
  const StepInputs& last_inputs() const { return held_inputs_; }
  std::uint64_t steps_done() const { return steps_done_; }
  /// The operator forces acting now (applied by a live client, not yet expired or removed).
  struct OperatorForce {
    ApplyForce command;
    std::uint64_t until_step = 0;  // acts on steps < until_step (UINT64_MAX: until removed)
  };
  const std::vector<OperatorForce>& operator_forces() const;

 private:
  struct Slot;
  bool run_step(const std::atomic<bool>& stop_requested);
  bool gather_one(Slot& slot, const StepContext& ctx, const std::atomic<bool>& stop_requested);
  void abort(std::string reason, Outcome outcome = Outcome::aborted);
  void bind_identify();
  void fly_identify(const StepContext& ctx);
  // the exception boundary: an endpoint call that threw becomes that endpoint's fault
  void endpoint_threw(std::size_t index, const StepContext& ctx, const char* call, const char* what);
  GatherStatus guarded_gather(Slot& slot, const StepContext& ctx, SteadyClock::time_point deadline);
  void nonfinite_command(const Slot& slot, std::size_t device, const StepContext& ctx);
  // a processor that throws fails the session, naming the processor, the step and the message
  template <class Call>
  bool guarded_processor(std::size_t index, const StepContext& ctx, Call&& call);
  // anything else that throws in the step fails the session, naming the phase
  void step_threw(const char* what);
  // operator control (session_control.cpp): between steps, and in phase 4; its state is
  // one member, op_ (runtime/loop/src/operator_control.hpp)
  void init_control();
  bool service_control(const std::atomic<bool>& stop_requested);
  void handle_request(ControlRequest& request);
  void after_step_control();
  void end_control();
  /// `fault`: for inject_fault, the fault as parsed (may be null).
  bool check_command(const OperatorCommand& command, std::string* why, FaultConfig* fault = nullptr) const;
  void apply_command(const OperatorCommand& command, std::uint64_t step);
  /// Replay from a keyframe: the recorded commands of the steps before `before_step`, the
  /// injected faults only (`faults`) or everything else (the forces acting, the gains set).
  void reapply_commands(std::uint64_t before_step, bool faults);
  /// An injected fault's entry (JSON with the keys of a `faults:` entry) parsed as the
  /// scenario's are; without a trigger it starts at step + 1, the first step to begin after
  /// the command's step. False with the reason when it is not a fault this session can run.
  bool live_fault(const std::string& text, std::uint64_t step, FaultConfig& out, std::string* why) const;
  void add_fault(const FaultConfig& fault);  // creates the injector on the first
  void apply_operator_inputs(const StepContext& ctx);
  void reanchor_pacer();
  void seek(std::uint64_t target, ControlRequest& request);
  void hold_at_end();
  std::string control_status() const;
  void control_summary(nlohmann::json& out) const;  // the summary's `control` section, if any
  std::string parameters_json() const;

  const Scenario& scenario_;
  WorldModel model_;  // a copy: online estimation may change parameters
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  std::vector<std::unique_ptr<FeedbackProcessor>> processors_;
  std::vector<std::vector<Measurement>> measurements_;  // per vehicle, this step
  hal::DeviceBank devices_;
  DeviceWorld device_view_;
  std::vector<hal::Wrench> device_wrenches_;
  std::uint64_t invalid_commands_ = 0;
  std::uint64_t nonfinite_commands_ = 0;  // NaN/Inf actuator commands refused
  std::vector<bool> nonfinite_logged_;    // per device: its first one was logged
  WorldBox plausible_box_;
  std::unique_ptr<Expectations> expectations_;                    // `expect:` (null without)
  std::vector<std::span<const LogLine>> expect_logs_;             // per endpoint: this step's LOG lines
  void evaluate_expectations(const StepContext& ctx, bool last);  // loop.plausibility: where a measured body may be
  std::unique_ptr<FaultInjector> faults_;                         // `faults:` and injected ones (null without)
  std::unique_ptr<Expectations> fault_conditions_;                // the faults' `if:` conditions
  std::vector<int> fault_condition_index_;                        // per fault: its condition's index, or -1
  std::vector<bool> fault_holds_;                                 // per fault: its condition holds on S_k
  std::vector<FaultTransition> fault_transitions_;                // faults starting/ending this step
  std::vector<int> fault_logged_;                                 // per fault: starts and ends logged so far
  static constexpr int max_logged_fault_transitions = 10;
  ExpectationStep expectation_step(const StepContext& ctx) const;
  void begin_faults(const StepContext& ctx);  // decides this step's faults, tells the endpoints
  std::vector<Slot> slots_;
  SessionOptions options_;
  double rtf_ = 1;
  std::uint64_t steps_total_ = 0;

  WorldState state_;
  WorldState projected_;
  StateStore history_;
  WorldState before_;       // S_k, for post-advance processors
  StepInputs inputs_;       // applied in this step
  StepInputs held_inputs_;  // applied in the previous step; used for the projection
  StepReport step_report_;
  StepReport projection_report_;  // the projection's contacts feed contact sensors
  bool encoders_ = false;         // a device reads the joints' coordinates
  Recorder* recorder_ = nullptr;
  Keyframe keyframe_;                    // the keyframe written every K steps, buffers reused
  PhysicsScratch scratch_;               // the physics' buffers, reused by every step() call
  std::int64_t start_time_ns_ = 0;

  Pacer pacer_;
  // operator control
  SessionControl* control_ = nullptr;
  std::unique_ptr<OperatorControl> op_;  // requests in progress, forces acting, commands to record
  // `identify:` flown by this in-process endpoint's controller (none in a replay)
  InProcessEndpoint* identify_ = nullptr;
  int identify_manoeuvre_ = -1;
  std::vector<std::pair<std::string, std::string>> realtime_status_;  // what loop.realtime got
  Histogram step_time_ns_;
  std::uint64_t steps_done_ = 0;
  std::uint64_t substeps_total_ = 0;
  double wall_time_s_ = 0;
  Outcome outcome_ = Outcome::completed;
  const char* phase_ = nullptr;
  PhaseProfile profile_;  // loop.profile_phases
  std::string abort_reason_;

  void enter(Phase phase) {
    phase_ = to_string(phase);
    profile_.mark(phase);
  }
};

}  // namespace tether::runtime
