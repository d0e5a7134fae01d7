// SPDX-License-Identifier: Apache-2.0
// Feedback processors correct the virtual world from what the real world measured
// (the Corrective Feedback System of J. Brawn, "An AUV Simulator for Incorporating
// Physical Feedback", 2012, §7.2). Each is configured per vehicle, runs in a declared phase, and sees
// only the measurements of its vehicle for the step in progress.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tether/hal/registry.hpp"
#include "tether/scenario/config.hpp"
#include "tether/scenario/step_data.hpp"
#include "tether/physics/physics.hpp"

namespace tether::hal {
class DeviceBank;
}

namespace tether::runtime {

enum class FeedbackPhase : std::uint8_t {
  pre,    // before the advance: change the step's inputs (forces)
  post,   // after the advance: change the state
  model,  // before the advance: change the model's parameters (online estimation)
};

const char* to_string(FeedbackPhase phase);

/// How a processor takes the result of work it runs in the background (the estimate's batch
/// refit; docs/feedback.md, "Background work"). The session says which for each step.
enum class BackgroundTakes : std::uint8_t {
  /// At the step its schedule names, waiting for the worker if it is late (as fast as
  /// possible: the same step in every run, and a wait costs no real time).
  at_schedule,
  /// A paced session: a result not ready at its step is deferred, and taken at the first step
  /// it is ready; never waits. The processor says what it did (take_background_note()); the session
  /// records it, so that replay takes it at the same step.
  when_ready,
  /// Replay: deferred and taken where the recording says (apply_background_note()); at the
  /// schedule's step, waiting if late, where it says nothing.
  as_recorded,
};

/// What a processor did with a background result this step (when_ready), or what the
/// recording says it did (as_recorded).
enum class BackgroundNote : std::uint8_t {
  none,
  deferred,  // due this step and not ready: taken later
  taken,     // deferred before, ready now: taken this step
};

/// What a processor sees of the step in progress.
struct FeedbackContext {
  std::uint64_t step = 0;
  std::int64_t time_ns = 0;  // t_k
  double dt_s = 0;
  int vehicle = -1;
  std::span<const Measurement> measurements;  // this vehicle's, for this step (may be empty)
  /// The session's devices, this step's commands actuated (each thruster's command and its
  /// rotor's speed at the step's end); nullptr outside a session.
  const hal::DeviceBank* devices = nullptr;
  BackgroundTakes background = BackgroundTakes::at_schedule;
};

class FeedbackProcessor {
 public:
  virtual ~FeedbackProcessor() = default;

  /// Reads the processor's own keys (records config errors on `node`); may allocate.
  virtual void configure(const ConfigNode& node, const WorldModel& model, int vehicle) = 0;
  virtual FeedbackPhase phase() const = 0;

  /// Phase pre: `state` is S_k, `inputs` the step's inputs gathered so far.
  virtual void pre(const FeedbackContext& ctx, const WorldModel& model, const WorldState& state, StepInputs& inputs) {
    (void)ctx, (void)model, (void)state, (void)inputs;
  }
  /// Phase post: `state` is S_{k+1} as advanced; `before` is S_k.
  virtual void post(const FeedbackContext& ctx, const WorldModel& model, const WorldState& before, WorldState& state) {
    (void)ctx, (void)model, (void)before, (void)state;
  }
  /// Phase model: may change the vehicle's parameters in `model` (a session-owned copy).
  /// `state` is S_k; `inputs` the step's inputs gathered so far (actuator forces included),
  /// which a processor may scale by parameters the model has no field for (thrust gain).
  virtual void update_model(const FeedbackContext& ctx, WorldModel& model, const WorldState& state,
                            StepInputs& inputs) {
    (void)ctx, (void)model, (void)state, (void)inputs;
  }
  /// Figures for the summary (corrections, innovations, estimates so far).
  virtual void summarize(nlohmann::json& out) const { (void)out; }
  /// Names of the values record() writes each step (fixed at configure time).
  virtual std::vector<std::string> record_fields() const { return {}; }
  /// This step's values for the recording, in record_fields() order; appends to `out`
  /// (its capacity is reserved by the caller: no allocation in the step).
  virtual void record(std::vector<double>& out) const { (void)out; }
  /// Internal state (filter covariance, estimator memory) for keyframes: replay from a
  /// keyframe restores it so the replayed steps are bit-identical.
  virtual void snapshot(std::string& out) const { (void)out; }
  /// Restores what snapshot() wrote; false if `bytes` is not a snapshot of this processor.
  virtual bool restore(std::string_view bytes) { return bytes.empty(); }
  /// False when only the session's first keyframe restores it (its state is the whole run so
  /// far, which keyframes do not hold): a seek then steps from the start.
  virtual bool restores_after_start() const { return true; }

  /// Gains a live client may tune while the session runs (docs/live.md). A change is an
  /// operator command: applied in phase 4 of a step and recorded, so replay repeats it.
  virtual std::vector<std::string> parameter_names() const { return {}; }
  /// The parameter's value; false for a name parameter_names() does not list.
  virtual bool parameter(std::string_view name, double& value) const {
    (void)name, (void)value;
    return false;
  }
  /// The values the parameter may take: the range its scenario key has (docs/feedback.md), so
  /// a live set and `tether check` accept the same values. The session refuses a set outside
  /// it before the command is queued or recorded.
  virtual Range parameter_range(std::string_view name) const {
    (void)name;
    return Range::any();
  }
  /// Sets it; false with the reason (unknown name, value out of range).
  virtual bool set_parameter(std::string_view name, double value, std::string* why) {
    (void)value;
    if (why) *why = "processor \"" + name_ + "\" has no parameter \"" + std::string(name) + "\"";
    return false;
  }

  /// Background work (docs/feedback.md, "Background work"): what the processor did this step
  /// with a result of it under BackgroundTakes::when_ready (the session takes the note after
  /// the step's phases, once, and records it), and, under as_recorded, what the recording says it did at this
  /// step (applied in phase pre, before the processor runs). A processor without background
  /// work has nothing to say and nothing to apply.
  virtual BackgroundNote take_background_note() { return BackgroundNote::none; }
  virtual bool apply_background_note(std::uint64_t step, BackgroundNote note, std::string* why) {
    (void)step, (void)note;
    if (why) *why = "processor \"" + name_ + "\" runs no background work";
    return false;
  }

  /// Figures a live client may read beside the gains (getParameters lists them under
  /// `feedback.<processor>.<name>`); the processor computes them, so a set is refused.
  virtual void read_only_parameters(std::vector<std::pair<std::string, double>>& out) const { (void)out; }

  const std::string& name() const { return name_; }
  const std::string& type() const { return type_; }
  void set_identity(std::string name, std::string type) {
    name_ = std::move(name);
    type_ = std::move(type);
  }

 private:
  std::string name_;
  std::string type_;
};

/// Makes a processor of the registered type.
using FeedbackFactory = std::function<std::unique_ptr<FeedbackProcessor>()>;
using FeedbackRegistry = hal::Registry<FeedbackFactory>;

/// The feedback processor types: the built-ins (registered on first use) and any added with
/// add() or register_feedback_processor() at set-up (docs/extending.md).
FeedbackRegistry& feedback_processors();

/// The processor of that type, or nullptr. Adding one: a class and one line in
/// feedback_processors() in runtime/feedback/src/feedback.cpp (built in), or
/// register_feedback_processor() from outside the library.
std::unique_ptr<FeedbackProcessor> make_feedback_processor(const std::string& type);

/// Makes a processor type known to make_feedback_processor (for processors outside the
/// library: examples/feedback_processor/). Call at set-up, before scenarios are loaded; not
/// thread-safe. Returns false if the type is already known (the existing one stays).
bool register_feedback_processor(const std::string& type, FeedbackFactory factory, const std::string& description = "");

/// Processor types make_feedback_processor knows, for messages and docs.
std::vector<std::string> feedback_processor_types();

struct Scenario;
/// Constructs and configures every processor the scenario lists, in order. Throws
/// ConfigError listing every problem found.
std::vector<std::unique_ptr<FeedbackProcessor>> make_feedback_processors(const Scenario& scenario);

}  // namespace tether::runtime
