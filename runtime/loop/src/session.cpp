// SPDX-License-Identifier: Apache-2.0
#include "tether/loop/session.hpp"
#include "tether/loop/goal_summary.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <stdexcept>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "operator_control.hpp"
#include "tether/loop/hal_bridge.hpp"
#include "tether/loop/realtime.hpp"
#include "tether/recording/recorder.hpp"
#include <spdlog/spdlog.h>

namespace tether::runtime {

// per-endpoint buffers of the step, allocated once
struct Session::Slot {
  Reply reply;  // what gather filled this step
  Reply last;   // the last reply applied on time (policy hold)
  Reply safe;   // the endpoint's safe reply (policy safe)
  const Reply* applied = nullptr;
  bool fresh = false;  // applied is this step's reply (its measurements count)
  SlotOutcome outcome = SlotOutcome::fresh;
  std::uint64_t round_trip_ns = 0;
  bool faulted = false;
  SteadyClock::time_point published_at{};
};

namespace {

// copies a reply into another's buffers (assign keeps their capacity; log text and wire
// frames are not part of a keyframe)
void copy_reply(const Reply& from, Reply& to) {
  to.step = from.step;
  to.wrenches.assign(from.wrenches.begin(), from.wrenches.end());
  to.commands.assign(from.commands.begin(), from.commands.end());
  to.measurements.assign(from.measurements.begin(), from.measurements.end());
  to.logs.clear();
  to.wire.clear();
  to.wire_bytes.clear();
}

double seconds(std::int64_t ns) { return static_cast<double>(ns) * 1e-9; }

}  // namespace

const char* to_string(Outcome outcome) {
  switch (outcome) {
    case Outcome::completed: return "completed";
    case Outcome::stopped: return "stopped";
    case Outcome::aborted: return "aborted";
    case Outcome::failed: return "failed";
    case Outcome::faulted: return "completed_with_faults";
    case Outcome::recording_failed: return "recording_failed";
  }
  return "?";
}

Session::Session(const Scenario& scenario, std::vector<std::unique_ptr<Endpoint>> endpoints, SessionOptions options)
    : scenario_(scenario), model_(scenario.model), endpoints_(std::move(endpoints)),
      processors_(make_feedback_processors(scenario)), devices_(scenario, model_), options_(std::move(options)),
      checks_(scenario, processors_, endpoints_, counters_, model_, state_, devices_.bank, buffers_.report),
      identify_(scenario, endpoints_) {
  const std::size_t bodies = scenario_.model.bodies.size();
  devices_.wrenches.resize(model_.bodies.size());
  control_ = options_.control;
  init_control();
  rtf_ = options_.real_time_factor.value_or(scenario_.loop.real_time_factor);
  steps_total_ = options_.steps.value_or(scenario_.loop.steps);
  state_ = scenario_.initial;
  history_ = StateStore(scenario_.loop.history_steps);
  history_.reserve_bodies(bodies);
  history_.push(state_);
  buffers_.projected = scenario_.initial;
  buffers_.before = scenario_.initial;
  timing_.start_time_ns = scenario_.initial.time_ns;
  gate_.box = plausible_box(model_, scenario_.loop.plausibility);
  if (checks_.needs_contacts()) buffers_.report.contacts.reserve(8 * bodies + 16);
  gate_.measurements.resize(model_.vehicles.size());
  for (auto& m : gate_.measurements) m.reserve(8);
  inputs_.resize(bodies);
  buffers_.held_inputs.resize(bodies);
  // touching pairs for contact sensors: a few per body is plenty (more are counted, dropped)
  if (!scenario_.devices.empty()) buffers_.projection_report.reserve_contacts(8 * bodies + 16);
  // the joints' loads for load cells (only then: the physics skips the work otherwise)
  for (const auto& d : scenario_.devices) {
    const hal::KindInfo& info = hal::kind_info(d.kind);
    if (info.reads_joint_loads) buffers_.projection_report.reserve_joint_loads(model_.joints.size());
    if (info.reads_joint_coordinates) devices_.encoders = true;
  }
  slots_.resize(endpoints_.size());
  counters_.resize(endpoints_.size());
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    // a firmware's log lines are moved in whole (their text is built off the loop thread)
    for (Reply* r : {&slots_[i].reply, &slots_[i].last, &slots_[i].safe}) {
      r->wrenches.reserve(bodies);
      r->logs.reserve(16);
    }
    endpoints_[i]->safe_reply(slots_[i].safe);
  }
}

Session::Devices::Devices(const Scenario& scenario, const WorldModel& model)
    : bank(scenario.devices, scenario.loop.seed, scenario.model.bodies.size()), view(model, &hal_ray_cast) {}

Session::~Session() {
  for (auto& e : endpoints_) e->stop();
}

void Session::abort(std::string reason, Outcome outcome) {
  if (outcome_ != Outcome::aborted && outcome_ != Outcome::failed) {
    outcome_ = outcome;
    abort_reason_ = std::move(reason);
    spdlog::error("{}", abort_reason_);
    if (recorder_) recorder_->event(state_.step, state_.time_ns, 5, "session", abort_reason_);
  }
}

Outcome Session::run(const std::atomic<bool>& stop_requested) {
  start_endpoints();
  if (rtf_ > 0) Pacer::reduce_timer_slack();
  if (const long cpus = sysconf(_SC_NPROCESSORS_ONLN); cpus > 0 && model_.threads > cpus)
    spdlog::warn(
        "world.physics_threads is {} but {} CPUs are online: the results are the same, the extra "
        "threads only take turns",
        model_.threads, cpus);
  // loop.realtime for this thread while the session runs (refusals are warnings)
  std::optional<RealtimeGuard> realtime;
  if (scenario_.loop.realtime.any()) {
    realtime.emplace(scenario_.loop.realtime);
    timing_.realtime_status = realtime->status();
  }
  const auto t0 = SteadyClock::now();
  reanchor_pacer(t0);
  auto next_status = t0;

  op_->end_step = state_.step + (steps_total_ - steps_done_);
  const bool hold = control_ && options_.hold_at_end;
  timing_.profile.enable(scenario_.loop.profile_phases);
  while (steps_done_ < steps_total_ || hold) {
    enter(Phase::loop);
    if (stop_requested.load(std::memory_order_relaxed)) {
      outcome_ = Outcome::stopped;
      break;
    }
    // operator requests (docs/live.md); while paused this is where the loop waits
    if (control_) {
      if (hold && steps_done_ >= steps_total_) hold_at_end();
      if (!service_control(stop_requested)) break;
      if (steps_done_ >= steps_total_) continue;  // still at the end (resumed there): hold again
    }
    bool go_on = false;
    try {
      go_on = run_step(stop_requested);
    } catch (const std::exception& ex) {
      step_threw(ex.what());
    } catch (...) {
      step_threw("an exception that is not a std::exception");
    }
    if (!go_on) break;
    ++steps_done_;
    if (control_) after_step_control();
    pace();
    report_status(t0, next_status);
  }
  timing_.profile.stop();
  end_run(stop_requested, t0);
  return outcome_;
}

void Session::start_endpoints() {
  for (auto& e : endpoints_) {
    e->attach_devices(&devices_.bank);
    try {
      e->start(scenario_.model, state_);
    } catch (const std::exception& ex) {
      for (auto& started : endpoints_) started->stop();
      end_control();
      throw std::runtime_error("endpoint \"" + e->name() + "\" (" + e->type() + ") could not start: " + ex.what());
    }
  }
}

// the pacer's absolute deadline (nothing to wait for as fast as possible)
void Session::pace() {
  enter(Phase::pace);
  pacer_.wait_next();
}

// the live status line, at most every options_.status_interval_s
void Session::report_status(SteadyClock::time_point started, SteadyClock::time_point& next_status) {
  if (!options_.on_status) return;
  enter(Phase::status);
  const auto now = SteadyClock::now();
  if (now < next_status) return;
  next_status = now + std::chrono::duration_cast<SteadyClock::duration>(
                          std::chrono::duration<double>(options_.status_interval_s));
  LiveStatus s;
  s.step = steps_done_;
  s.steps_total = steps_total_;
  s.sim_time_s = seconds(state_.time_ns - timing_.start_time_ns);
  const double wall = std::chrono::duration<double>(now - started).count();
  s.achieved_rtf = wall > 0 ? s.sim_time_s / wall : 0;
  s.step_p99_ns = timing_.step_time_ns.percentile(0.99);
  for (const EndpointCounters& c : counters_) s.misses += c.misses;
  options_.on_status(s);
}

// the run is over: the verdicts, the outcome, the endpoints stopped
void Session::end_run(const std::atomic<bool>& stop_requested, SteadyClock::time_point started) {
  if (stop_requested.load() && outcome_ == Outcome::completed && steps_done_ < steps_total_)
    outcome_ = Outcome::stopped;
  checks_.finish_faults(state_.step);
  if (checks_.has_expectations() && steps_done_ > 0) expect(StepContext{state_.step - 1, state_.time_ns, 0}, true);
  if (steps_done_ == 0) checks_.not_run();
  if (outcome_ == Outcome::completed) note_endpoint_faults();
  timing_.wall_time_s = std::chrono::duration<double>(SteadyClock::now() - started).count();
  end_control();
  for (auto& e : endpoints_) e->stop();
}

// every step ran, but not with every endpoint: say so (policy hold/safe carried it on)
void Session::note_endpoint_faults() {
  for (std::size_t i = 0; i < endpoints_.size(); ++i)
    if (const Endpoint* e = endpoints_[i].get(); counters_[i].faults > 0) {
      outcome_ = Outcome::faulted;
      abort_reason_ = "endpoint \"" + e->name() + "\" faulted (" + e->fault_message() + "); its policy " +
                      to_string(e->policy()) + " carried the session on for " + std::to_string(counters_[i].faults) +
                      " steps";
      spdlog::warn("{}", abort_reason_);
      if (recorder_) recorder_->event(state_.step, state_.time_ns, 4, "session", abort_reason_);
      return;
    }
}

void Session::endpoint_threw(std::size_t index, const StepContext& ctx, const char* call, const char* what) {
  Endpoint& ep = *endpoints_[index];
  ep.set_fault_message(std::string(call) + " threw at step " + std::to_string(ctx.step) + ": " + what);
  slots_[index].faulted = true;
}

void Session::step_threw(const char* what) {
  const char* in = phase();
  abort(std::string("step ") + std::to_string(state_.step) + " failed in phase " + (in ? in : "?") + ": " + what,
        Outcome::failed);
}

template <class Call>
bool Session::guarded_processor(std::size_t index, const StepContext& ctx, Call&& call) {
  std::string message;
  try {
    call();
    return true;
  } catch (const std::exception& ex) {
    message = ex.what();
  } catch (...) {
    message = "an exception that is not a std::exception";
  }
  const FeedbackProcessor& p = *processors_[index];
  abort("feedback processor \"" + p.name() + "\" (" + p.type() + ") threw at step " + std::to_string(ctx.step) +
            " in phase " + phase() + ": " + message,
        Outcome::failed);
  return false;
}

// One step, k -> k+1 (docs/architecture.md, "One step"): each phase enters its Phase, and
// those with nothing to do in this session (no recorder, faults, devices, plan,
// expectations) return at once. False: the session ends here.
bool Session::run_step(const std::atomic<bool>& stop_requested) {
  const auto began = SteadyClock::now();
  const StepContext ctx{state_.step, state_.time_ns, scenario_.loop.period_ns};
  save_keyframe(ctx);
  begin_faults(ctx);
  if (!project(ctx)) return false;
  sense(ctx);
  fly_identify(ctx);
  publish(ctx);
  if (!gather(ctx, stop_requested)) return false;
  if (!pre(ctx)) return false;
  if (!advance(ctx)) return false;
  if (!post(ctx)) return false;
  record_commands(ctx);
  expect(ctx, false);
  emit(ctx);
  if (!record(ctx, time_step(began))) return false;
  return after_step();
}

// keyframe: every keyframe_every_steps, S_k and what the next step depends on, to the recorder
void Session::save_keyframe(const StepContext& ctx) {
  if (!recorder_ || (state_.step - scenario_.initial.step) % scenario_.recording.keyframe_every_steps != 0) return;
  enter(Phase::keyframe);
  if (std::string* bytes = recorder_->keyframe_buffer()) {
    keyframe(buffers_.keyframe);
    encode_keyframe(buffers_.keyframe, *bytes);
    recorder_->push_keyframe(bytes, ctx.step, ctx.time_ns);
  }
}

// faults: which act in this step (conditions on S_k), and each endpoint's link plan
void Session::begin_faults(const StepContext& ctx) {
  if (!checks_.has_faults()) return;
  enter(Phase::faults);
  checks_.begin_faults(ctx, timing_.start_time_ns, recorder_);
  for (std::size_t i = 0; i < endpoints_.size(); ++i) {
    if (slots_[i].faulted) continue;
    try {
      endpoints_[i]->set_link_faults(checks_.faults()->link(i));
    } catch (const std::exception& ex) {
      endpoint_threw(i, ctx, "set_link_faults", ex.what());
    }
  }
}

// project: S'_{k+1} from S_k with the inputs held from step k-1
bool Session::project(const StepContext& ctx) {
  enter(Phase::project);
  WorldState& projected = buffers_.projected;
  projected.step = state_.step;
  projected.time_ns = state_.time_ns;
  projected.bodies.assign(state_.bodies.begin(), state_.bodies.end());
  if (step(model_, projected, buffers_.held_inputs, seconds(ctx.period_ns), &buffers_.projection_report,
           buffers_.scratch) != StepStatus::ok) {
    abort("numerical fault (NaN/Inf) in the projection of step " + std::to_string(ctx.step));
    return false;
  }
  return true;
}

// sense: the devices sample the projected state, what the participants are told about
// S'_{k+1}; then the active device faults rewrite their readings
void Session::sense(const StepContext& ctx) {
  if (!devices_.bank.size()) return;
  enter(Phase::sense);
  const double dt = seconds(ctx.period_ns);
  DeviceWorld& view = devices_.view;
  // contact sensors read the contacts of this same projected step
  to_hal_contacts(buffers_.projection_report.contacts, dt, view.contacts);
  // load cells (tension sensors) read the joints' loads of it
  to_hal_joint_loads(model_, buffers_.projection_report.joint_loads, dt, view.joint_loads);
  // encoders read the joints' coordinates in the projected state
  if (devices_.encoders) to_hal_joint_motion(model_, buffers_.projected, view.joint_motion);
  view.update(buffers_.projected, &state_, dt);
  devices_.bank.sense(view, buffers_.projected.time_ns);
  if (checks_.has_faults()) checks_.faults()->apply_devices(devices_.bank, ctx.step);
}

// identify: the excitation plan's manoeuvre for this step, set on its controller
void Session::fly_identify(const StepContext& ctx) {
  if (!identify_.active()) return;
  enter(Phase::identify);
  identify_.fly(ctx, recorder_);
}

// publish: to everyone first, so that replies are produced concurrently
void Session::publish(const StepContext& ctx) {
  enter(Phase::publish);
  for (std::size_t i = 0; i < endpoints_.size(); ++i) {
    slots_[i].published_at = SteadyClock::now();
    if (slots_[i].faulted) continue;
    try {
      if (!endpoints_[i]->publish(ctx, buffers_.projected)) slots_[i].faulted = true;
    } catch (const std::exception& ex) {
      endpoint_threw(i, ctx, "publish", ex.what());
    } catch (...) {
      endpoint_threw(i, ctx, "publish", "an exception that is not a std::exception");
    }
  }
}

// gather: each endpoint against its own deadline; the policy decides what a miss applies
bool Session::gather(const StepContext& ctx, const std::atomic<bool>& stop_requested) {
  enter(Phase::gather);
  for (Slot& slot : slots_) {
    slot.applied = nullptr;
    slot.fresh = false;
    if (!gather_one(slot, ctx, stop_requested)) {
      if (outcome_ != Outcome::aborted) outcome_ = Outcome::stopped;
      return false;
    }
  }
  return true;
}

// a NaN or infinite actuator command (the device keeps its previous one): each goes into the
// recording's events, the first per device to the log too
void Session::nonfinite_command(const Slot& slot, std::size_t device, const StepContext& ctx) {
  ++devices_.nonfinite_commands;
  const std::string& source = endpoints_[static_cast<std::size_t>(&slot - slots_.data())]->name();
  const std::string text =
      "non-finite (NaN/Inf) command for " + devices_.bank.full_name(device) + " refused; the previous command stays";
  std::vector<bool>& logged = devices_.nonfinite_logged;
  if (logged.size() < devices_.bank.size()) logged.resize(devices_.bank.size(), false);
  if (!logged[device]) {
    logged[device] = true;
    spdlog::warn("endpoint \"{}\" at step {}: {} (further ones are counted)", source, ctx.step, text);
  }
  if (recorder_) recorder_->event(ctx.step, ctx.time_ns, 4, source, text);
}

// an endpoint's gather behind the exception boundary: a throw is the endpoint's fault
GatherStatus Session::guarded_gather(Slot& slot, const StepContext& ctx, SteadyClock::time_point deadline) {
  const auto index = static_cast<std::size_t>(&slot - slots_.data());
  try {
    return endpoints_[index]->gather(ctx, deadline, slot.reply);
  } catch (const std::exception& ex) {
    endpoint_threw(index, ctx, "gather", ex.what());
  } catch (...) {
    endpoint_threw(index, ctx, "gather", "an exception that is not a std::exception");
  }
  return GatherStatus::fault;
}

// gathers one endpoint's reply for this step and decides, by policy, what is applied
bool Session::gather_one(Slot& slot, const StepContext& ctx, const std::atomic<bool>& stop_requested) {
  const auto index = static_cast<std::size_t>(&slot - slots_.data());
  Endpoint& ep = *endpoints_[index];
  EndpointCounters& counters = counters_[index];
  const auto deadline = slot.published_at + std::chrono::nanoseconds(ep.deadline_ns());
  GatherStatus status = slot.faulted ? GatherStatus::fault : guarded_gather(slot, ctx, deadline);
  const bool late = status == GatherStatus::timeout && ep.policy() == TimeoutPolicy::block;
  if (late) {
    // strict lock-step: keep waiting in deadline-sized slices, but stay stoppable
    const auto slice = std::chrono::nanoseconds(std::max<std::int64_t>(ep.deadline_ns(), 1'000'000));
    while (status == GatherStatus::timeout && !stop_requested.load(std::memory_order_relaxed))
      status = guarded_gather(slot, ctx, SteadyClock::now() + slice);
    if (status == GatherStatus::ready) ++counters.late;
    if (status == GatherStatus::timeout) return false;  // stopped while waiting
  }
  if (status == GatherStatus::ready) {
    if (!late) ++counters.replies;
    slot.round_trip_ns = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - slot.published_at).count());
    counters.round_trip_ns.record(slot.round_trip_ns);
    slot.outcome = SlotOutcome::fresh;
    std::swap(slot.last, slot.reply);
    slot.applied = &slot.last;
    slot.fresh = true;
    return true;
  }
  slot.outcome = status == GatherStatus::fault ? SlotOutcome::fault : SlotOutcome::timeout;
  slot.round_trip_ns = 0;
  if (status == GatherStatus::fault) {
    ++counters.faults;
    if (!slot.faulted) {
      slot.faulted = true;
      spdlog::warn("endpoint \"{}\" faulted at step {}: {} (policy {})", ep.name(), ctx.step, ep.fault_message(),
                   to_string(ep.policy()));
      if (recorder_)
        recorder_->event(ctx.step, ctx.time_ns, 4, ep.name(),
                         "faulted: " + ep.fault_message() + " (policy " + to_string(ep.policy()) + ")");
    }
  }
  if (counters.misses == 0 && recorder_)
    recorder_->event(ctx.step, ctx.time_ns, 3, ep.name(),
                     std::string("first missed deadline (policy ") + to_string(ep.policy()) + ")");
  ++counters.misses;
  switch (ep.policy()) {
    case TimeoutPolicy::hold: slot.applied = &slot.last; return true;
    case TimeoutPolicy::safe: slot.applied = &slot.safe; return true;
    case TimeoutPolicy::block:  // a faulted endpoint will never answer: waiting would hang
    case TimeoutPolicy::abort:
      abort("endpoint \"" + ep.name() + "\" " +
            (status == GatherStatus::fault ? "faulted (" + ep.fault_message() + ")" : "missed its deadline") +
            " at step " + std::to_string(ctx.step) + "; policy " + to_string(ep.policy()) + " stopped the session");
      return false;
  }
  return false;
}

// pre: the applied replies become this step's inputs (wrenches summed per body, in endpoint
// order); a fresh reply's firmware logs go to the log and its measurements through the
// plausibility gate to the vehicle's processors (a held reply's are old news, not reused);
// then the operator's commands and forces, the actuators' commands and forces, and the
// `model` and `pre` processors
bool Session::pre(const StepContext& ctx) {
  enter(Phase::pre);
  inputs_.clear();
  for (auto& m : gate_.measurements) m.clear();
  for (const Slot& slot : slots_) {
    add_wrenches(slot);
    if (!slot.fresh) continue;
    forward_logs(slot, ctx);
    gate_measurements(slot, ctx);
  }
  // operator commands of this step (recorded with it), then the operator forces acting now
  apply_operator_inputs(ctx);
  command_devices(ctx);
  return pre_processors(ctx);
}

void Session::add_wrenches(const Slot& slot) {
  for (const auto& [body, w] : slot.applied->wrenches) {
    if (body >= inputs_.wrenches.size()) continue;
    BodyWrench& in = inputs_.wrenches[body];
    in.force_world_n += w.force_world_n;
    in.torque_world_nm += w.torque_world_nm;
    in.force_body_n += w.force_body_n;
    in.torque_body_nm += w.torque_body_nm;
  }
}

// a firmware's LOG lines at its own level: 0 info, 1 warning, 2 error (anything above: error)
void Session::forward_logs(const Slot& slot, const StepContext& ctx) {
  for (const LogLine& line : slot.applied->logs) {
    const std::string& source = endpoints_[static_cast<std::size_t>(&slot - slots_.data())]->name();
    const auto level = line.level == 0   ? spdlog::level::info
                       : line.level == 1 ? spdlog::level::warn
                                         : spdlog::level::err;
    spdlog::log(level, "[{}] {}", source, line.text);
    if (recorder_) recorder_->event(ctx.step, ctx.time_ns, 2 + line.level, source, line.text);
  }
}

// the gate: each measurement against the world and the same body's in the endpoint's
// previous reply (after the swap in gather_one, slot.reply holds that one)
void Session::gate_measurements(const Slot& slot, const StepContext& ctx) {
  const auto index = static_cast<std::size_t>(&slot - slots_.data());
  Endpoint& ep = *endpoints_[index];
  for (const Measurement& m : slot.applied->measurements) {
    if (m.body >= model_.bodies.size()) continue;
    const Measurement* previous = nullptr;
    for (const Measurement& p : slot.reply.measurements)
      if (p.body == m.body) previous = &p;
    if (const char* why = implausible(m, previous, scenario_.loop.period_ns, gate_.box, scenario_.loop.plausibility)) {
      if (counters_[index].implausible++ == 0) {
        const std::string text = "measurement of " + model_.bodies[m.body].name + " at step " +
                                 std::to_string(ctx.step) + " rejected: " + why +
                                 " (loop.plausibility; further ones are counted)";
        spdlog::warn("endpoint \"{}\": {}", ep.name(), text);
        if (recorder_) recorder_->event(ctx.step, ctx.time_ns, 4, ep.name(), text);
      }
      continue;
    }
    gate_.measurements[static_cast<std::size_t>(model_.bodies[m.body].vehicle)].push_back(m);
  }
}

// actuator commands of the applied replies, then the actuators' forces from S_k
void Session::command_devices(const StepContext& ctx) {
  hal::DeviceBank& bank = devices_.bank;
  if (!bank.size()) return;
  for (const Slot& slot : slots_)
    for (const DeviceCommand& c : slot.applied->commands)
      if (c.device >= bank.size()) {
        ++devices_.invalid_commands;
      } else {
        // size and value refusals are counted by the bank itself
        const hal::Status st = bank.command(c.device, c.bytes.data(), c.size);
        if (st == hal::Status::unknown_device || st == hal::Status::invalid_operation) ++devices_.invalid_commands;
        if (st == hal::Status::invalid_value) nonfinite_command(slot, c.device, ctx);
      }
  const double dt = seconds(ctx.period_ns);
  devices_.view.update_kinematics(state_);  // actuators read no accelerations
  bank.actuate(devices_.view, dt, devices_.wrenches);
  add_device_wrenches(devices_.wrenches, inputs_);
}

FeedbackContext Session::feedback_context(const StepContext& ctx, std::size_t processor) const {
  FeedbackContext fc;
  fc.step = ctx.step;
  fc.time_ns = ctx.time_ns;
  fc.dt_s = seconds(ctx.period_ns);
  fc.vehicle = scenario_.feedback[processor].vehicle;
  fc.measurements = gate_.measurements[static_cast<std::size_t>(fc.vehicle)];
  fc.devices = &devices_.bank;
  fc.background = background_takes();
  return fc;
}

// the `model` and `pre` processors, in the order the scenario lists them
bool Session::pre_processors(const StepContext& ctx) {
  for (std::size_t i = 0; i < processors_.size(); ++i) {
    FeedbackProcessor& p = *processors_[i];
    if (!guarded_processor(i, ctx, [&] {
          if (p.phase() == FeedbackPhase::model) p.update_model(feedback_context(ctx, i), model_, state_, inputs_);
          if (p.phase() == FeedbackPhase::pre) p.pre(feedback_context(ctx, i), model_, state_, inputs_);
        }))
      return false;
  }
  return true;
}

// advance: S_{k+1} = step(model, S_k, inputs, dt), S_k kept for the post processors
bool Session::advance(const StepContext& ctx) {
  enter(Phase::advance);
  buffers_.before.step = state_.step;
  buffers_.before.time_ns = state_.time_ns;
  buffers_.before.bodies.assign(state_.bodies.begin(), state_.bodies.end());
  if (step(model_, state_, inputs_, seconds(ctx.period_ns), &buffers_.report, buffers_.scratch) != StepStatus::ok) {
    abort("numerical fault (NaN/Inf) while advancing step " + std::to_string(ctx.step));
    return false;
  }
  timing_.substeps_total += buffers_.report.substeps;
  return true;
}

// post: the `post` processors correct S_{k+1}
bool Session::post(const StepContext& ctx) {
  enter(Phase::post);
  for (std::size_t i = 0; i < processors_.size(); ++i) {
    FeedbackProcessor& p = *processors_[i];
    if (p.phase() != FeedbackPhase::post) continue;
    if (!guarded_processor(i, ctx, [&] { p.post(feedback_context(ctx, i), model_, buffers_.before, state_); }))
      return false;
  }
  return true;
}

// expect: the expectations due at this step, on S_{k+1} and the replies' LOG lines; `last`:
// the end of the run (after the last step, not a phase of one)
void Session::expect(const StepContext& ctx, bool last) {
  if (!checks_.has_expectations()) return;
  if (!last) enter(Phase::expect);
  const std::span<std::span<const LogLine>> logs = checks_.logs();
  for (std::size_t i = 0; i < slots_.size(); ++i)
    logs[i] = slots_[i].fresh && slots_[i].applied ? std::span<const LogLine>(slots_[i].applied->logs)
                                                   : std::span<const LogLine>();
  checks_.expect(ctx.step, timing_.start_time_ns, last);
}

// emit: the endpoints see S_{k+1} (a throw here faults the endpoint from the next step)
void Session::emit(const StepContext& ctx) {
  enter(Phase::emit);
  history_.push(state_);
  for (std::size_t i = 0; i < endpoints_.size(); ++i) {
    try {
      endpoints_[i]->emit(ctx, state_);
    } catch (const std::exception& ex) {
      endpoint_threw(i, ctx, "emit", ex.what());  // its policy applies from the next step
    } catch (...) {
      endpoint_threw(i, ctx, "emit", "an exception that is not a std::exception");
    }
  }
  std::swap(buffers_.held_inputs, inputs_);
}

// the step's wall time, from its start to the end of emit (the recorder's hand-over is not in it)
std::uint64_t Session::time_step(SteadyClock::time_point began) {
  const auto step_ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - began).count());
  timing_.step_time_ns.record(step_ns);
  return step_ns;
}

// record: copies only, swapped into the recorder's ring; the writer thread hashes and
// encodes them (Recorder::StepItem)
bool Session::record(const StepContext& ctx, std::uint64_t step_ns) {
  if (!recorder_) return true;
  enter(Phase::record);
  Recorder::StepItem& item = recorder_->step_staging();
  StepRecord& rec = item.record;
  rec.step = ctx.step;
  rec.time_ns = ctx.time_ns;
  rec.state_hash = 0;  // the writer's: hash_state(item.actual)
  rec.step_time_ns = step_ns;
  rec.slots.resize(slots_.size());
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    SlotRecord& r = rec.slots[i];
    r.outcome = slots_[i].outcome;
    r.round_trip_ns = slots_[i].round_trip_ns;
    if (r.outcome == SlotOutcome::fresh) {
      r.reply.step = slots_[i].last.step;
      r.reply.wrenches.assign(slots_[i].last.wrenches.begin(), slots_[i].last.wrenches.end());
      r.reply.commands.assign(slots_[i].last.commands.begin(), slots_[i].last.commands.end());
      r.reply.measurements.assign(slots_[i].last.measurements.begin(), slots_[i].last.measurements.end());
      r.reply.copy_wire(slots_[i].last);
    }
  }
  item.actual = state_;
  item.projected = buffers_.projected;
  item.values.clear();
  for (std::size_t i = 0; i < processors_.size(); ++i)
    if (!guarded_processor(i, ctx, [&] { processors_[i]->record(item.values); })) return false;
  item.take_sensors(devices_.bank);
  recorder_->push(Recorder::ItemKind::step, ctx.step, ctx.time_ns);
  return !recorder_->write_failed() || recording_write_failed(ctx.step);
}

// The recording cannot be written any more (the writer thread found out; docs/recording.md,
// "When the disk is full"). `stop`: this step is the last, the outcome recording_failed.
// `continue`: the session goes on and records nothing more. False: the session ends here.
bool Session::recording_write_failed(std::uint64_t step) {
  recording_error_ = recorder_->write_error();
  recording_path_ = recorder_->path();
  recording_failed_at_ = step;
  recording_lost_ = true;
  const std::string what =
      "the recording cannot be written after step " + std::to_string(step) + ": " + recording_error_;
  if (scenario_.recording.stop_on_write_error) {
    ++steps_done_;  // the step itself completed
    outcome_ = Outcome::recording_failed;
    abort_reason_ = what + "; the session stopped there (recording.on_write_error: stop)";
    spdlog::error("{}", abort_reason_);
    recorder_ = nullptr;
    return false;
  }
  spdlog::error("{}; the session goes on WITHOUT RECORDING (recording.on_write_error: continue)", what);
  recorder_ = nullptr;
  return true;
}

// after_step: SessionOptions::after_step sees S_{k+1} and may stop the session (replay's check)
bool Session::after_step() {
  enter(Phase::after_step);
  if (options_.after_step && !options_.after_step(state_)) {
    ++steps_done_;  // the step itself completed
    outcome_ = Outcome::stopped;
    return false;
  }
  return true;
}

void Session::set_recorder(Recorder* recorder) {
  recorder_ = recorder;
  if (recorder_) recorder_->set_wait_when_full(rtf_ == 0);
}

Keyframe Session::keyframe() const {
  Keyframe k;
  keyframe(k);
  return k;
}

// copies into the existing buffers: after the first keyframe, later ones find the
// capacity they need (vector and string assignment reuse it)
void Session::keyframe(Keyframe& k) const {
  k.state.step = state_.step;
  k.state.time_ns = state_.time_ns;
  k.state.bodies.assign(state_.bodies.begin(), state_.bodies.end());
  k.held_inputs.wrenches.assign(buffers_.held_inputs.wrenches.begin(), buffers_.held_inputs.wrenches.end());
  k.last_replies.resize(slots_.size());
  for (std::size_t i = 0; i < slots_.size(); ++i) copy_reply(slots_[i].last, k.last_replies[i]);
  serialize_model_params(model_, k.model_params);
  k.processor_state.resize(processors_.size());
  for (std::size_t i = 0; i < processors_.size(); ++i) {
    k.processor_state[i].clear();
    processors_[i]->snapshot(k.processor_state[i]);
  }
  k.devices.clear();
  devices_.bank.snapshot(k.devices);
  k.faults.clear();
  if (checks_.has_faults()) checks_.faults()->snapshot(k.faults);
}

bool Session::restore(const Keyframe& k, std::string* error) {
  auto fail = [error](std::string why) {
    if (error) *error = std::move(why);
    return false;
  };
  if (k.state.bodies.size() != model_.bodies.size())
    return fail("keyframe has " + std::to_string(k.state.bodies.size()) + " bodies, the scenario " +
                std::to_string(model_.bodies.size()));
  if (k.last_replies.size() != slots_.size() || k.processor_state.size() != processors_.size())
    return fail("keyframe does not match the scenario's endpoints and feedback processors");
  // the scenario's model first: what a keyframe does not hold (derived fields such as the
  // inertia an estimate's refit scaled by its added mass) is as a run from the start has it
  model_ = scenario_.model;
  if (!restore_model_params(k.model_params, model_, error)) return false;
  for (std::size_t i = 0; i < processors_.size(); ++i)
    if (!processors_[i]->restore(k.processor_state[i]))
      return fail("feedback processor \"" + processors_[i]->name() + "\" cannot restore its keyframe state" +
                  (processors_[i]->restores_after_start()
                       ? std::string()
                       : std::string(" (its state is the whole run so far, as with the estimate's refit_every_s: "
                                     "only the session's start restores it; replay from there)")));
  if (!devices_.bank.restore(k.devices, error)) return false;
  // the faults injected before the keyframe join the list first: its snapshot counts them
  if (options_.scripted_commands) {
    if (checks_.has_faults())
      checks_.faults()->keep_first(scenario_.faults.size());  // the scenario's own; injected ones follow
    reapply_commands(k.state.step, true);
  }
  if (checks_.has_faults() && !checks_.faults()->restore(k.faults, error)) return false;
  state_ = k.state;
  buffers_.held_inputs = k.held_inputs;
  buffers_.held_inputs.wrenches.resize(model_.bodies.size());
  for (std::size_t i = 0; i < slots_.size(); ++i) slots_[i].last = k.last_replies[i];
  timing_.start_time_ns = state_.time_ns;
  history_.clear();
  history_.push(state_);
  // the operator commands before the keyframe: the forces acting and the gains set then
  reapply_commands(state_.step, false);
  return true;
}

}  // namespace tether::runtime
