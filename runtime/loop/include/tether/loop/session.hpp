// SPDX-License-Identifier: Apache-2.0
// The lock-step loop: the phases of one step (docs/architecture.md, "One step"), each a
// function of Session that Session::run_step calls in order.
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
#include "tether/loop/faults_and_expectations.hpp"
#include "tether/feedback/feedback.hpp"
#include "tether/loop/identify_flight.hpp"
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
/// How a session ended. recording_failed: the recording could not be written and
/// recording.on_write_error is `stop` (the session ended cleanly after that step).
enum class Outcome : std::uint8_t { completed, stopped, aborted, failed, faulted, recording_failed };

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

  /// What the session counted of endpoint `index`'s steps (replies, misses, ...).
  const EndpointCounters& endpoint_counters(std::size_t index) const { return counters_[index]; }
  /// The session summary (counters, timing, per-endpoint figures, vehicles).
  nlohmann::json summary() const;
  /// False if an expectation of the scenario's `expect:` failed (known after run()).
  bool expectations_passed() const { return checks_.passed(); }

  const WorldState& state() const { return state_; }
  /// The last loop.history_steps states, S_k included (state_at(t), rewind).
  const StateStore& history() const { return history_; }
  /// The session's model: the scenario's, as changed by `model`-phase processors.
  const WorldModel& model() const { return model_; }
  /// The session's devices (sampled on the projected state each step).
  const hal::DeviceBank& devices() const { return devices_.bank; }
  const std::vector<std::unique_ptr<FeedbackProcessor>>& processors() const { return processors_; }
  Outcome outcome() const { return outcome_; }
  /// The phase of the step in progress ("project", "publish", … "pace"), or nullptr
  /// outside run(): for diagnostics, e.g. naming where an allocation or a throw happened.
  const char* phase() const {
    return timing_.profile.current() == Phase::count ? nullptr : to_string(timing_.profile.current());
  }
  const std::string& abort_reason() const { return abort_reason_; }
  const std::vector<std::unique_ptr<Endpoint>>& endpoints() const { return endpoints_; }
  const Histogram& step_time_ns() const { return timing_.step_time_ns; }
  /// Wall time per phase, when the scenario's loop.profile_phases is on.
  const PhaseProfile& phase_profile() const { return timing_.profile; }
  /// The inputs the last completed step applied (after phase pre).
  const StepInputs& last_inputs() const { return buffers_.held_inputs; }
  std::uint64_t steps_done() const { return steps_done_; }
  /// The steps this run is to take (loop.steps, or the override).
  std::uint64_t steps_total() const { return steps_total_; }
  /// The operator forces acting now (applied by a live client, not yet expired or removed).
  struct OperatorForce {
    ApplyForce command;
    std::uint64_t until_step = 0;  // acts on steps < until_step (UINT64_MAX: until removed)
  };
  const std::vector<OperatorForce>& operator_forces() const;

 private:
  struct Slot;
  // one step (docs/architecture.md, "One step"): the phases in the order run_step calls them
  bool run_step(const std::atomic<bool>& stop_requested);
  void save_keyframe(const StepContext& ctx);
  void begin_faults(const StepContext& ctx);  // decides this step's faults, tells the endpoints
  bool project(const StepContext& ctx);
  void sense(const StepContext& ctx);
  void fly_identify(const StepContext& ctx);
  void publish(const StepContext& ctx);
  bool gather(const StepContext& ctx, const std::atomic<bool>& stop_requested);
  bool gather_one(Slot& slot, const StepContext& ctx, const std::atomic<bool>& stop_requested);
  bool pre(const StepContext& ctx);
  void add_wrenches(const Slot& slot);
  void forward_logs(const Slot& slot, const StepContext& ctx);
  void gate_measurements(const Slot& slot, const StepContext& ctx);
  void command_devices(const StepContext& ctx);
  bool pre_processors(const StepContext& ctx);
  FeedbackContext feedback_context(const StepContext& ctx, std::size_t processor) const;
  bool advance(const StepContext& ctx);
  bool post(const StepContext& ctx);
  void expect(const StepContext& ctx, bool last);
  void emit(const StepContext& ctx);
  std::uint64_t time_step(SteadyClock::time_point began);
  bool record(const StepContext& ctx, std::uint64_t step_ns);
  bool after_step();
  // the run around the steps
  void start_endpoints();
  void pace();
  void report_status(SteadyClock::time_point started, SteadyClock::time_point& next_status);
  void end_run(const std::atomic<bool>& stop_requested, SteadyClock::time_point started);
  void note_endpoint_faults();
  void abort(std::string reason, Outcome outcome = Outcome::aborted);
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
  // after post: the processors' notes on their background work joined to the step's commands,
  // which are recorded then (docs/feedback.md, "Background work")
  void record_commands(const StepContext& ctx);
  BackgroundTakes background_takes() const;
  /// (Re)starts the pacer's schedule at `now`: the wall period from the period and the real-time
  /// factor, the spin from loop.realtime (run() at the start; a live pause or rate change)
  void reanchor_pacer(SteadyClock::time_point now);
  void seek(std::uint64_t target, ControlRequest& request);
  std::int64_t run_until_target(double time_s, std::string* why) const;
  void hold_at_end();
  std::string control_status() const;
  void control_summary(nlohmann::json& out) const;  // the summary's `control` section, if any
  std::string parameters_json() const;

  const Scenario& scenario_;
  WorldModel model_;  // a copy: online estimation may change parameters
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  std::vector<std::unique_ptr<FeedbackProcessor>> processors_;
  // the devices: sampled on S'_{k+1} (sense), commanded by the applied replies (pre)
  struct Devices {
    Devices(const Scenario& scenario, const WorldModel& model);
    hal::DeviceBank bank;
    DeviceWorld view;                   // what the devices read of the world
    std::vector<hal::Wrench> wrenches;  // the actuators' forces this step
    bool encoders = false;              // a device reads the joints' coordinates
    std::uint64_t invalid_commands = 0;
    std::uint64_t nonfinite_commands = 0;  // NaN/Inf actuator commands refused
    std::vector<bool> nonfinite_logged;    // per device: its first one was logged
  };
  Devices devices_;
  // the step's buffers, sized at construction and reused (docs/architecture.md, "The hot
  // path allocates nothing after warm-up")
  struct StepBuffers {
    WorldState projected;          // S'_{k+1}
    WorldState before;             // S_k, for post-advance processors
    StepInputs held_inputs;        // applied in the previous step; used for the projection
    StepReport report;             // the advance's (contacts, when expectations read them)
    StepReport projection_report;  // the projection's contacts feed contact sensors
    PhysicsScratch scratch;        // the physics' buffers, reused by every step() call
    Keyframe keyframe;             // the keyframe written every K steps
  };
  StepBuffers buffers_;
  // loop.plausibility: where a measured body may be, and the measurements it let through
  struct Gate {
    WorldBox box;
    std::vector<std::vector<Measurement>> measurements;  // per vehicle, this step
  };
  Gate gate_;
  std::vector<Slot> slots_;
  std::vector<EndpointCounters> counters_;  // per endpoint, what the session saw of its steps
  SessionOptions options_;
  double rtf_ = 1;
  std::uint64_t steps_total_ = 0;

  WorldState state_;
  StateStore history_;
  StepInputs inputs_;             // applied in this step
  FaultsAndExpectations checks_;  // `faults:`, `expect:`
  IdentifyFlight identify_;       // `identify:` (none in a replay)
  Recorder* recorder_ = nullptr;
  // what the summary says of the run's time
  struct Timing {
    std::int64_t start_time_ns = 0;  // S_0's (or the restored keyframe's)
    Histogram step_time_ns;
    std::uint64_t substeps_total = 0;
    double wall_time_s = 0;
    PhaseProfile profile;  // the phase in progress; its wall time with loop.profile_phases
    std::vector<std::pair<std::string, std::string>> realtime_status;  // what loop.realtime got
  };
  Timing timing_;

  Pacer pacer_;
  // operator control
  SessionControl* control_ = nullptr;
  std::unique_ptr<OperatorControl> op_;  // requests in progress, forces acting, commands to record
  std::uint64_t steps_done_ = 0;
  Outcome outcome_ = Outcome::completed;
  // the recording could not be written (Recorder::write_failed): what failed, the step it was
  // seen at; with recording.on_write_error `continue` the session records nothing after it
  std::string recording_error_, recording_path_;
  std::uint64_t recording_failed_at_ = 0;
  bool recording_lost_ = false;
  bool recording_write_failed(std::uint64_t step);
  std::string abort_reason_;

  void enter(Phase phase) { timing_.profile.mark(phase); }
};

}  // namespace tether::runtime
