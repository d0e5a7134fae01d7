// SPDX-License-Identifier: Apache-2.0
#include "tether/loop/session.hpp"
#include "tether/loop/goals.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <stdexcept>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "operator_control.hpp"
#include "tether/loop/hal_bridge.hpp"
#include "tether/loop/in_process.hpp"
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

// copies a reply into another's buffers (assign keeps their capacity; log text is not
// part of a keyframe)
void copy_reply(const Reply& from, Reply& to) {
  to.step = from.step;
  to.wrenches.assign(from.wrenches.begin(), from.wrenches.end());
  to.commands.assign(from.commands.begin(), from.commands.end());
  to.measurements.assign(from.measurements.begin(), from.measurements.end());
  to.logs.clear();
}

}  // namespace

const char* to_string(Outcome outcome) {
  switch (outcome) {
    case Outcome::completed: return "completed";
    case Outcome::stopped: return "stopped";
    case Outcome::aborted: return "aborted";
    case Outcome::failed: return "failed";
    case Outcome::faulted: return "completed_with_faults";
  }
  return "?";
}

Session::Session(const Scenario& scenario, std::vector<std::unique_ptr<Endpoint>> endpoints, SessionOptions options)
    : scenario_(scenario), model_(scenario.model), endpoints_(std::move(endpoints)),
      processors_(make_feedback_processors(scenario)),
      devices_(scenario.devices, scenario.loop.seed, scenario.model.bodies.size()), device_view_(model_, &hal_ray_cast),
      options_(std::move(options)) {
  device_wrenches_.resize(model_.bodies.size());
  control_ = options_.control;
  init_control();
  rtf_ = options_.real_time_factor.value_or(scenario_.loop.real_time_factor);
  steps_total_ = options_.steps.value_or(scenario_.loop.steps);
  state_ = scenario_.initial;
  history_ = StateStore(scenario_.loop.history_steps);
  history_.reserve_bodies(scenario_.model.bodies.size());
  history_.push(state_);
  projected_ = scenario_.initial;
  before_ = scenario_.initial;
  start_time_ns_ = scenario_.initial.time_ns;
  plausible_box_ = plausible_box(model_, scenario_.loop.plausibility);
  if (!scenario_.expectations.empty()) {
    expectations_ = std::make_unique<Expectations>(scenario_.expectations, processors_, scenario_);
    if (expectations_->needs_contacts()) step_report_.contacts.reserve(8 * scenario_.model.bodies.size() + 16);
    expect_logs_.resize(endpoints_.size());
  }
  if (!scenario_.faults.empty()) {
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
      fault_conditions_ = std::make_unique<Expectations>(conditions, processors_, scenario_);
      if (fault_conditions_->needs_contacts()) step_report_.contacts.reserve(8 * scenario_.model.bodies.size() + 16);
    }
    fault_holds_.assign(scenario_.faults.size(), false);
    fault_transitions_.reserve(scenario_.faults.size());
    fault_logged_.assign(scenario_.faults.size(), 0);
  }
  const std::size_t bodies = scenario_.model.bodies.size();
  measurements_.resize(model_.vehicles.size());
  for (auto& m : measurements_) m.reserve(8);
  inputs_.resize(bodies);
  held_inputs_.resize(bodies);
  // touching pairs for contact sensors: a few per body is plenty (more are counted, dropped)
  if (!scenario_.devices.empty()) projection_report_.reserve_contacts(8 * bodies + 16);
  // the joints' loads for load cells (only then: the physics skips the work otherwise)
  for (const auto& d : scenario_.devices) {
    if (d.kind == TETHER_KIND_TENSION) projection_report_.reserve_joint_loads(model_.joints.size());
    if (d.kind == TETHER_KIND_ENCODER) encoders_ = true;
  }
  slots_.resize(endpoints_.size());
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    // a firmware's log lines are moved in whole (their text is built off the loop thread)
    for (Reply* r : {&slots_[i].reply, &slots_[i].last, &slots_[i].safe}) {
      r->wrenches.reserve(bodies);
      r->logs.reserve(16);
    }
    endpoints_[i]->safe_reply(slots_[i].safe);
  }
  bind_identify();
}

// the `identify:` plan's endpoint and a check of its setpoints against its controller; a
// replay's endpoints are not controllers (the recorded replies carry the manoeuvres)
void Session::bind_identify() {
  const IdentifyPlan& plan = scenario_.identify;
  if (!plan.enabled || plan.endpoint_index < 0 || static_cast<std::size_t>(plan.endpoint_index) >= endpoints_.size())
    return;
  identify_ = dynamic_cast<InProcessEndpoint*>(endpoints_[static_cast<std::size_t>(plan.endpoint_index)].get());
  if (!identify_) return;
  const std::vector<std::string> names = identify_->controller().setpoint_names();
  for (const IdentifyManoeuvre& m : plan.manoeuvres)
    for (const auto& [name, value] : m.setpoints)
      if (std::find(names.begin(), names.end(), name) == names.end() && m.node) {
        std::string known;
        for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
        (*m.node)[name.c_str()].error("the controller of endpoint \"" + plan.endpoint + "\" has no setpoint \"" + name +
                                      "\" (" + (known.empty() ? "it has none" : "it has: " + known) + ")");
      }
  scenario_.throw_if_errors();
}

void Session::fly_identify(const StepContext& ctx) {
  const IdentifyPlan& plan = scenario_.identify;
  const int m = plan.manoeuvre_at(static_cast<double>(ctx.time_ns - scenario_.initial.time_ns) * 1e-9);
  if (m < 0 || m == identify_manoeuvre_) return;
  identify_manoeuvre_ = m;
  std::string text = "identify: manoeuvre " + std::to_string(m + 1) + " of " + std::to_string(plan.manoeuvres.size());
  const char* separator = ": ";
  for (const auto& [name, value] : plan.manoeuvres[static_cast<std::size_t>(m)].setpoints) {
    identify_->controller().set_setpoint(name, value);
    char number[32];
    std::snprintf(number, sizeof number, "%g", value);
    text += separator + name + " " + number;
    separator = ", ";
  }
  spdlog::info("{}", text);
  if (recorder_) recorder_->event(ctx.step, ctx.time_ns, 2, "identify", text);
}

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
  for (auto& e : endpoints_) {
    e->attach_devices(&devices_);
    try {
      e->start(scenario_.model, state_);
    } catch (const std::exception& ex) {
      for (auto& started : endpoints_) started->stop();
      end_control();
      throw std::runtime_error("endpoint \"" + e->name() + "\" (" + e->type() + ") could not start: " + ex.what());
    }
  }
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
    realtime_status_ = realtime->status();
  }
  const auto t0 = SteadyClock::now();
  const std::int64_t wall_period_ns =
      rtf_ > 0 ? static_cast<std::int64_t>(static_cast<double>(scenario_.loop.period_ns) / rtf_) : 0;
  pacer_.start(t0, wall_period_ns);
  auto next_status = t0;
  const auto status_every =
      std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(options_.status_interval_s));

  op_->end_step = state_.step + (steps_total_ - steps_done_);
  const bool hold = control_ && options_.hold_at_end;
  profile_.enable(scenario_.loop.profile_phases);
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
    enter(Phase::pace);
    if (const auto deadline = pacer_.after_step(SteadyClock::now())) {
      sleep_until(*deadline);
      pacer_.woke(*deadline, SteadyClock::now());
    }
    if (options_.on_status) {
      enter(Phase::status);
      const auto now = SteadyClock::now();
      if (now >= next_status) {
        next_status = now + status_every;
        LiveStatus s;
        s.step = steps_done_;
        s.steps_total = steps_total_;
        s.sim_time_s = static_cast<double>(state_.time_ns - start_time_ns_) * 1e-9;
        const double wall = std::chrono::duration<double>(now - t0).count();
        s.achieved_rtf = wall > 0 ? s.sim_time_s / wall : 0;
        s.step_p99_ns = step_time_ns_.percentile(0.99);
        for (const auto& e : endpoints_) s.misses += e->counters.misses;
        options_.on_status(s);
      }
    }
  }
  profile_.stop();
  phase_ = nullptr;
  if (stop_requested.load() && outcome_ == Outcome::completed && steps_done_ < steps_total_)
    outcome_ = Outcome::stopped;
  if (faults_) faults_->finish(state_.step);
  if (expectations_ && steps_done_ > 0) evaluate_expectations(StepContext{state_.step - 1, state_.time_ns, 0}, true);
  if (expectations_ && steps_done_ == 0) expectations_->not_run();
  // every step ran, but not with every endpoint: say so (policy hold/safe carried it on)
  if (outcome_ == Outcome::completed)
    for (const auto& e : endpoints_)
      if (e->counters.faults > 0) {
        outcome_ = Outcome::faulted;
        abort_reason_ = "endpoint \"" + e->name() + "\" faulted (" + e->fault_message() + "); its policy " +
                        to_string(e->policy()) + " carried the session on for " + std::to_string(e->counters.faults) +
                        " steps";
        spdlog::warn("{}", abort_reason_);
        if (recorder_) recorder_->event(state_.step, state_.time_ns, 4, "session", abort_reason_);
        break;
      }
  wall_time_s_ = std::chrono::duration<double>(SteadyClock::now() - t0).count();
  end_control();
  for (auto& e : endpoints_) e->stop();
  return outcome_;
}

void Session::endpoint_threw(std::size_t index, const StepContext& ctx, const char* call, const char* what) {
  Endpoint& ep = *endpoints_[index];
  ep.set_fault_message(std::string(call) + " threw at step " + std::to_string(ctx.step) + ": " + what);
  slots_[index].faulted = true;
}

void Session::step_threw(const char* what) {
  abort(
      std::string("step ") + std::to_string(state_.step) + " failed in phase " + (phase_ ? phase_ : "?") + ": " + what,
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
            " in phase " + phase_ + ": " + message,
        Outcome::failed);
  return false;
}

// what expectations and fault conditions read: the step's state, devices, endpoints, report
ExpectationStep Session::expectation_step(const StepContext& ctx) const {
  ExpectationStep s;
  s.step = ctx.step;
  s.t_s = static_cast<double>(state_.time_ns - start_time_ns_) * 1e-9;
  s.model = &model_;
  s.state = &state_;
  s.devices = &devices_;
  s.endpoints = &endpoints_;
  s.report = &step_report_;
  return s;
}

// the step's data for `expect:` (the state after the step); `last`: the end of the run
void Session::evaluate_expectations(const StepContext& ctx, bool last) {
  for (std::size_t i = 0; i < slots_.size(); ++i)
    expect_logs_[i] = slots_[i].fresh && slots_[i].applied ? std::span<const LogLine>(slots_[i].applied->logs)
                                                           : std::span<const LogLine>();
  ExpectationStep s = expectation_step(ctx);
  s.logs = expect_logs_;
  if (last)
    expectations_->finish(s);
  else
    expectations_->evaluate(s);
}

// the faults of this step: `if:` conditions on S_k, starts and ends (logged and recorded
// as events), each endpoint's link plan
void Session::begin_faults(const StepContext& ctx) {
  if (fault_conditions_) {
    const ExpectationStep s = expectation_step(ctx);
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
    if (recorder_) recorder_->event(ctx.step, ctx.time_ns, 3, "faults", text);
  }
  for (std::size_t i = 0; i < endpoints_.size(); ++i) {
    if (slots_[i].faulted) continue;
    try {
      endpoints_[i]->set_link_faults(faults_->link(i));
    } catch (const std::exception& ex) {
      endpoint_threw(i, ctx, "set_link_faults", ex.what());
    }
  }
}

// a NaN or infinite actuator command (the device keeps its previous one): each goes into the
// recording's events, the first per device to the log too
void Session::nonfinite_command(const Slot& slot, std::size_t device, const StepContext& ctx) {
  ++nonfinite_commands_;
  const std::string& source = endpoints_[static_cast<std::size_t>(&slot - slots_.data())]->name();
  const std::string text =
      "non-finite (NaN/Inf) command for " + devices_.full_name(device) + " refused; the previous command stays";
  if (nonfinite_logged_.size() < devices_.size()) nonfinite_logged_.resize(devices_.size(), false);
  if (!nonfinite_logged_[device]) {
    nonfinite_logged_[device] = true;
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
  Endpoint& ep = *endpoints_[static_cast<std::size_t>(&slot - slots_.data())];
  const auto deadline = slot.published_at + std::chrono::nanoseconds(ep.deadline_ns());
  GatherStatus status = slot.faulted ? GatherStatus::fault : guarded_gather(slot, ctx, deadline);
  const bool late = status == GatherStatus::timeout && ep.policy() == TimeoutPolicy::block;
  if (late) {
    // strict lock-step: keep waiting in deadline-sized slices, but stay stoppable
    const auto slice = std::chrono::nanoseconds(std::max<std::int64_t>(ep.deadline_ns(), 1'000'000));
    while (status == GatherStatus::timeout && !stop_requested.load(std::memory_order_relaxed))
      status = guarded_gather(slot, ctx, SteadyClock::now() + slice);
    if (status == GatherStatus::ready) ++ep.counters.late;
    if (status == GatherStatus::timeout) return false;  // stopped while waiting
  }
  if (status == GatherStatus::ready) {
    if (!late) ++ep.counters.replies;
    slot.round_trip_ns = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - slot.published_at).count());
    ep.counters.round_trip_ns.record(slot.round_trip_ns);
    slot.outcome = SlotOutcome::fresh;
    std::swap(slot.last, slot.reply);
    slot.applied = &slot.last;
    slot.fresh = true;
    return true;
  }
  slot.outcome = status == GatherStatus::fault ? SlotOutcome::fault : SlotOutcome::timeout;
  slot.round_trip_ns = 0;
  if (status == GatherStatus::fault) {
    ++ep.counters.faults;
    if (!slot.faulted) {
      slot.faulted = true;
      spdlog::warn("endpoint \"{}\" faulted at step {}: {} (policy {})", ep.name(), ctx.step, ep.fault_message(),
                   to_string(ep.policy()));
      if (recorder_)
        recorder_->event(ctx.step, ctx.time_ns, 4, ep.name(),
                         "faulted: " + ep.fault_message() + " (policy " + to_string(ep.policy()) + ")");
    }
  }
  if (ep.counters.misses == 0 && recorder_)
    recorder_->event(ctx.step, ctx.time_ns, 3, ep.name(),
                     std::string("first missed deadline (policy ") + to_string(ep.policy()) + ")");
  ++ep.counters.misses;
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

bool Session::run_step(const std::atomic<bool>& stop_requested) {
  const auto t_begin = SteadyClock::now();
  const double dt = static_cast<double>(scenario_.loop.period_ns) * 1e-9;
  const StepContext ctx{state_.step, state_.time_ns, scenario_.loop.period_ns};
  if (recorder_ && (state_.step - scenario_.initial.step) % scenario_.recording.keyframe_every_steps == 0) {
    enter(Phase::keyframe);
    if (std::string* bytes = recorder_->keyframe_buffer()) {
      keyframe(keyframe_);
      encode_keyframe(keyframe_, *bytes);
      recorder_->push_keyframe(bytes, ctx.step, ctx.time_ns);
    }
  }

  if (faults_) {
    enter(Phase::faults);
    begin_faults(ctx);
  }

  // 1 project: S'_{k+1} from S_k with the inputs held from step k-1
  enter(Phase::project);
  projected_.step = state_.step;
  projected_.time_ns = state_.time_ns;
  projected_.bodies.assign(state_.bodies.begin(), state_.bodies.end());
  if (step(model_, projected_, held_inputs_, dt, &projection_report_, scratch_) != StepStatus::ok) {
    abort("numerical fault (NaN/Inf) in the projection of step " + std::to_string(ctx.step));
    return false;
  }
  // sensors sample the projected state: what the participants are told about S'_{k+1}
  if (devices_.size()) {
    enter(Phase::sense);
    // contact sensors read the contacts of this same projected step
    to_hal_contacts(projection_report_.contacts, dt, device_view_.contacts);
    // load cells (tension sensors) read the joints' loads of it
    to_hal_joint_loads(model_, projection_report_.joint_loads, dt, device_view_.joint_loads);
    // encoders read the joints' coordinates in the projected state
    if (encoders_) to_hal_joint_motion(model_, projected_, device_view_.joint_motion);
    device_view_.update(projected_, &state_, dt);
    devices_.sense(device_view_, projected_.time_ns);
    if (faults_) faults_->apply_devices(devices_, ctx.step);
  }

  if (identify_) {
    enter(Phase::identify);
    fly_identify(ctx);
  }

  // 2 publish to everyone first, so that replies are produced concurrently
  enter(Phase::publish);
  for (std::size_t i = 0; i < endpoints_.size(); ++i) {
    slots_[i].published_at = SteadyClock::now();
    if (slots_[i].faulted) continue;
    try {
      if (!endpoints_[i]->publish(ctx, projected_)) slots_[i].faulted = true;
    } catch (const std::exception& ex) {
      endpoint_threw(i, ctx, "publish", ex.what());
    } catch (...) {
      endpoint_threw(i, ctx, "publish", "an exception that is not a std::exception");
    }
  }

  // 3 gather, each against its own deadline; the policy decides what a miss applies
  enter(Phase::gather);
  for (Slot& slot : slots_) {
    slot.applied = nullptr;
    slot.fresh = false;
    if (!gather_one(slot, ctx, stop_requested)) {
      if (outcome_ != Outcome::aborted) outcome_ = Outcome::stopped;
      return false;
    }
  }

  // 4 pre-advance: replies become this step's inputs; fresh measurements go to the
  // vehicle's processors (a held reply's measurements are old news and are not reused)
  enter(Phase::pre);
  inputs_.clear();
  for (auto& m : measurements_) m.clear();
  for (const Slot& slot : slots_) {
    for (const auto& [body, w] : slot.applied->wrenches) {
      if (body >= inputs_.wrenches.size()) continue;
      BodyWrench& in = inputs_.wrenches[body];
      in.force_world_n += w.force_world_n;
      in.torque_world_nm += w.torque_world_nm;
      in.force_body_n += w.force_body_n;
      in.torque_body_nm += w.torque_body_nm;
    }
    if (!slot.fresh) continue;
    for (const LogLine& line : slot.applied->logs) {
      const std::string& source = endpoints_[static_cast<std::size_t>(&slot - slots_.data())]->name();
      // the firmware's own level: 0 info, 1 warning, 2 error (anything above: error)
      const auto level = line.level == 0   ? spdlog::level::info
                         : line.level == 1 ? spdlog::level::warn
                                           : spdlog::level::err;
      spdlog::log(level, "[{}] {}", source, line.text);
      if (recorder_) recorder_->event(ctx.step, ctx.time_ns, 2 + line.level, source, line.text);
    }
    // the gate: each measurement against the world and the same body's in the endpoint's
    // previous reply (after the swap in gather_one, slot.reply holds that one)
    Endpoint& ep = *endpoints_[static_cast<std::size_t>(&slot - slots_.data())];
    for (const Measurement& m : slot.applied->measurements) {
      if (m.body >= model_.bodies.size()) continue;
      const Measurement* previous = nullptr;
      for (const Measurement& p : slot.reply.measurements)
        if (p.body == m.body) previous = &p;
      if (const char* why =
              implausible(m, previous, scenario_.loop.period_ns, plausible_box_, scenario_.loop.plausibility)) {
        if (ep.counters.implausible++ == 0) {
          const std::string text = "measurement of " + model_.bodies[m.body].name + " at step " +
                                   std::to_string(ctx.step) + " rejected: " + why +
                                   " (loop.plausibility; further ones are counted)";
          spdlog::warn("endpoint \"{}\": {}", ep.name(), text);
          if (recorder_) recorder_->event(ctx.step, ctx.time_ns, 4, ep.name(), text);
        }
        continue;
      }
      measurements_[static_cast<std::size_t>(model_.bodies[m.body].vehicle)].push_back(m);
    }
  }
  // operator commands of this step (recorded with it), then the operator forces acting now
  apply_operator_inputs(ctx);
  // actuator commands of the applied replies, then the actuators' forces from S_k
  if (devices_.size()) {
    for (const Slot& slot : slots_)
      for (const DeviceCommand& c : slot.applied->commands)
        if (c.device >= devices_.size()) {
          ++invalid_commands_;
        } else {
          // size and value refusals are counted by the bank itself
          const hal::Status st = devices_.command(c.device, c.bytes.data(), c.size);
          if (st == hal::Status::unknown_device || st == hal::Status::invalid_operation) ++invalid_commands_;
          if (st == hal::Status::invalid_value) nonfinite_command(slot, c.device, ctx);
        }
    device_view_.update(state_, nullptr, dt, &inputs_);
    devices_.actuate(device_view_, dt, device_wrenches_);
    add_device_wrenches(device_wrenches_, inputs_);
  }
  auto feedback_context = [&](int vehicle) {
    FeedbackContext fc;
    fc.step = ctx.step;
    fc.time_ns = ctx.time_ns;
    fc.dt_s = dt;
    fc.vehicle = vehicle;
    fc.measurements = measurements_[static_cast<std::size_t>(vehicle)];
    return fc;
  };
  for (std::size_t i = 0; i < processors_.size(); ++i) {
    FeedbackProcessor& p = *processors_[i];
    const int vehicle = scenario_.feedback[i].vehicle;
    if (!guarded_processor(i, ctx, [&] {
          if (p.phase() == FeedbackPhase::model) p.update_model(feedback_context(vehicle), model_, state_, inputs_);
          if (p.phase() == FeedbackPhase::pre) p.pre(feedback_context(vehicle), model_, state_, inputs_);
        }))
      return false;
  }

  // 5 advance
  enter(Phase::advance);
  before_.step = state_.step;
  before_.time_ns = state_.time_ns;
  before_.bodies.assign(state_.bodies.begin(), state_.bodies.end());
  if (step(model_, state_, inputs_, dt, &step_report_, scratch_) != StepStatus::ok) {
    abort("numerical fault (NaN/Inf) while advancing step " + std::to_string(ctx.step));
    return false;
  }
  substeps_total_ += step_report_.substeps;

  // 6 post-advance corrections of the state
  enter(Phase::post);
  for (std::size_t i = 0; i < processors_.size(); ++i) {
    FeedbackProcessor& p = *processors_[i];
    if (p.phase() != FeedbackPhase::post) continue;
    if (!guarded_processor(i, ctx,
                           [&] { p.post(feedback_context(scenario_.feedback[i].vehicle), model_, before_, state_); }))
      return false;
  }

  if (expectations_) {
    enter(Phase::expect);
    evaluate_expectations(ctx, false);
  }

  // 7 emit the actual state; hand the step to the recorder
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
  std::swap(held_inputs_, inputs_);

  const auto step_ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - t_begin).count());
  step_time_ns_.record(step_ns);
  if (recorder_) {
    // copies only: the writer thread hashes and encodes them (Recorder::StepItem)
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
      }
    }
    item.actual = state_;
    item.projected = projected_;
    item.values.clear();
    for (std::size_t i = 0; i < processors_.size(); ++i)
      if (!guarded_processor(i, ctx, [&] { processors_[i]->record(item.values); })) return false;
    item.take_sensors(devices_);
    recorder_->push(Recorder::ItemKind::step, ctx.step, ctx.time_ns);
  }
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
  k.held_inputs.wrenches.assign(held_inputs_.wrenches.begin(), held_inputs_.wrenches.end());
  k.last_replies.resize(slots_.size());
  for (std::size_t i = 0; i < slots_.size(); ++i) copy_reply(slots_[i].last, k.last_replies[i]);
  serialize_model_params(model_, k.model_params);
  k.processor_state.resize(processors_.size());
  for (std::size_t i = 0; i < processors_.size(); ++i) {
    k.processor_state[i].clear();
    processors_[i]->snapshot(k.processor_state[i]);
  }
  k.devices.clear();
  devices_.snapshot(k.devices);
  k.faults.clear();
  if (faults_) faults_->snapshot(k.faults);
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
  if (!restore_model_params(k.model_params, model_, error)) return false;
  for (std::size_t i = 0; i < processors_.size(); ++i)
    if (!processors_[i]->restore(k.processor_state[i]))
      return fail("feedback processor \"" + processors_[i]->name() + "\" cannot restore its keyframe state");
  if (!devices_.restore(k.devices, error)) return false;
  // the faults injected before the keyframe join the list first: its snapshot counts them
  if (options_.scripted_commands) {
    if (faults_) faults_->keep_first(scenario_.faults.size());  // the scenario's own; injected ones follow
    reapply_commands(k.state.step, true);
  }
  if (faults_ && !faults_->restore(k.faults, error)) return false;
  state_ = k.state;
  held_inputs_ = k.held_inputs;
  held_inputs_.wrenches.resize(model_.bodies.size());
  for (std::size_t i = 0; i < slots_.size(); ++i) slots_[i].last = k.last_replies[i];
  start_time_ns_ = state_.time_ns;
  history_.clear();
  history_.push(state_);
  // the operator commands before the keyframe: the forces acting and the gains set then
  reapply_commands(state_.step, false);
  return true;
}

nlohmann::json Session::summary() const {
  using nlohmann::json;
  auto figures = [](const Histogram& h) {
    return json{{"p50", h.percentile(0.5)},
                {"p99", h.percentile(0.99)},
                {"max", h.max()},
                {"mean", h.mean()},
                {"count", h.count()}};
  };
  const double sim_s = static_cast<double>(state_.time_ns - start_time_ns_) * 1e-9;
  json out;
  out["scenario"] = scenario_.name;
  if (!scenario_.overrides.empty()) out["overrides"] = scenario_.overrides;
  out["outcome"] = to_string(outcome_);
  if (!abort_reason_.empty()) out["reason"] = abort_reason_;
  out["steps"] = steps_done_;
  out["steps_planned"] = steps_total_;
  out["sim_time_s"] = sim_s;
  out["wall_time_s"] = wall_time_s_;
  out["real_time_factor"] = rtf_;
  out["achieved_real_time_factor"] = wall_time_s_ > 0 ? sim_s / wall_time_s_ : 0.0;
  out["step_time_ns"] = figures(step_time_ns_);
  out["overruns"] = pacer_.overruns();
  out["reanchors"] = pacer_.reanchors();
  out["physics_substeps"] = substeps_total_;
  out["physics_threads"] = model_.threads;
  if (devices_.size())
    out["devices"] = {{"count", devices_.size()},
                      {"samples", devices_.counters().samples},
                      {"dropped", devices_.counters().dropped},
                      {"invalid_commands", invalid_commands_ + devices_.counters().invalid_commands},
                      {"nonfinite_commands", nonfinite_commands_}};
  if (recorder_) out["recording"] = {{"path", recorder_->path()}, {"dropped_items", recorder_->dropped()}};
  if (!realtime_status_.empty()) {
    auto& rt = out["realtime"] = json::object();
    for (const auto& [option, status] : realtime_status_) rt[option] = status;
  }
  out["endpoints"] = json::array();
  for (const auto& e : endpoints_) {
    json j{{"name", e->name()},
           {"type", e->type()},
           {"policy", to_string(e->policy())},
           {"deadline_ms", static_cast<double>(e->deadline_ns()) * 1e-6},
           {"replies", e->counters.replies},
           {"late", e->counters.late},
           {"misses", e->counters.misses},
           {"stale", e->counters.stale},
           {"corrupt", e->counters.corrupt},
           {"implausible", e->counters.implausible},
           {"faults", e->counters.faults},
           {"round_trip_ns", figures(e->counters.round_trip_ns)}};
    if (!e->fault_message().empty()) j["fault"] = e->fault_message();
    e->summarize(j);
    out["endpoints"].push_back(std::move(j));
  }
  out["feedback"] = json::array();
  for (std::size_t i = 0; i < processors_.size(); ++i) {
    json j{{"name", processors_[i]->name()},
           {"type", processors_[i]->type()},
           {"phase", to_string(processors_[i]->phase())},
           {"vehicle", model_.vehicles[static_cast<std::size_t>(scenario_.feedback[i].vehicle)].name}};
    processors_[i]->summarize(j);
    out["feedback"].push_back(std::move(j));
  }
  out["vehicles"] = json::array();
  const WorldModel& m = model_;
  for (const auto& v : m.vehicles) {
    const int b = v.bodies.front();
    const BodyState& s = state_.bodies[static_cast<std::size_t>(b)];
    json j{{"name", v.name}, {"position_m", {s.position_m.x(), s.position_m.y(), s.position_m.z()}}};
    if (m.water.present) j["depth_m"] = m.water.surface_z_m - s.position_m.z();
    // heading as a compass reads it (clockwise from north), as in goals and expectations;
    // yaw as the world measures it (counter-clockwise from east)
    j["heading_deg"] = compass_heading_deg(s.orientation);
    j["yaw_deg"] = rpy_from_quat(s.orientation).z() * 180.0 / 3.14159265358979323846;
    out["vehicles"].push_back(std::move(j));
  }
  if (!scenario_.goals.empty()) out["goals"] = summarize_goals(scenario_.goals, model_, state_);
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
  control_summary(out);
  // 16 hex digits: a JSON number this large is rounded by JavaScript and jq 1.6
  char hash[24];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(hash_state(state_)));
  out["state_hash"] = hash;
  if (profile_.enabled()) out["phase_profile"] = profile_.summary(steps_done_);
  return out;
}

}  // namespace tether::runtime
