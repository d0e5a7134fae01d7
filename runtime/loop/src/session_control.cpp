// SPDX-License-Identifier: Apache-2.0
// Operator control of a running session (docs/live.md): the requests a SessionControl
// queues are taken between steps; world commands (forces, gains) are applied in phase 4
// of the next step and recorded with it, so `tether replay --verify` repeats them.
#include <cmath>
#include <limits>
#include <algorithm>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "tether/loop/session.hpp"
#include "tether/recording/recorder.hpp"
#include "tether/scenario/config.hpp"

namespace tether::runtime {

namespace {

constexpr std::uint64_t forever = std::numeric_limits<std::uint64_t>::max();

bool finite(const Vec3& v) { return std::isfinite(v.x()) && std::isfinite(v.y()) && std::isfinite(v.z()); }

std::string describe(const OperatorCommand& c, const WorldModel& model) {
  char buf[400];
  switch (c.kind) {
    case OperatorCommand::Kind::apply_force:
      std::snprintf(buf, sizeof buf,
                    "apply_force \"%s\" on %s: force (%g, %g, %g) N, torque (%g, %g, %g) N·m, %s frame, "
                    "at (%g, %g, %g) m, %s",
                    c.name.c_str(), c.body < model.bodies.size() ? model.bodies[c.body].name.c_str() : "?",
                    c.force_n.x(), c.force_n.y(), c.force_n.z(), c.torque_nm.x(), c.torque_nm.y(), c.torque_nm.z(),
                    c.body_frame ? "body" : "world", c.point_m.x(), c.point_m.y(), c.point_m.z(),
                    c.duration_s > 0 ? ("for " + std::to_string(c.duration_s) + " s").c_str() : "until removed");
      return buf;
    case OperatorCommand::Kind::remove_force: return "remove_force \"" + c.name + "\"";
    case OperatorCommand::Kind::set_parameter:
      std::snprintf(buf, sizeof buf, "set_parameter %s = %.17g", c.name.c_str(), c.value);
      return buf;
    case OperatorCommand::Kind::inject_fault: return "inject_fault " + c.name;
  }
  return "?";
}

}  // namespace

void Session::reanchor_pacer() {
  const std::int64_t wall_period_ns =
      rtf_ > 0 ? static_cast<std::int64_t>(static_cast<double>(scenario_.loop.period_ns) / rtf_) : 0;
  pacer_.start(SteadyClock::now(), wall_period_ns);
}

std::string Session::control_status() const {
  nlohmann::json j{{"step", state_.step},
                   {"steps_done", steps_done_},
                   {"steps_planned", steps_total_},
                   {"time_s", static_cast<double>(state_.time_ns) * 1e-9},
                   {"paused", paused_ && targets_.empty()},
                   {"real_time_factor", rtf_},
                   {"stepping", !targets_.empty()}};
  j["forces"] = nlohmann::json::array();
  for (const auto& f : forces_)
    if (f.until_step > state_.step)  // a force that has run its course leaves at the next step
      j["forces"].push_back(
          {{"name", f.command.name},
           {"body", model_.bodies[f.command.body].name},
           {"until_step", f.until_step == forever ? nlohmann::json() : nlohmann::json(f.until_step)}});
  return j.dump();
}

std::string Session::parameters_json() const {
  nlohmann::json j = nlohmann::json::array();
  j.push_back({{"name", "rtf"}, {"value", rtf_}});
  for (const auto& p : processors_)
    for (const auto& n : p->parameter_names()) {
      double v = 0;
      if (p->parameter(n, v)) j.push_back({{"name", "feedback." + p->name() + "." + n}, {"value", v}});
    }
  return j.dump();
}

bool Session::check_command(const OperatorCommand& c, std::string* why, FaultConfig* fault) const {
  auto fail = [why](std::string text) {
    if (why) *why = std::move(text);
    return false;
  };
  switch (c.kind) {
    case OperatorCommand::Kind::apply_force:
      if (c.name.empty()) return fail("a force needs a name (remove_force names it)");
      if (c.body >= model_.bodies.size()) return fail("no body " + std::to_string(c.body));
      if (!finite(c.force_n) || !finite(c.torque_nm) || !finite(c.point_m) || !std::isfinite(c.duration_s))
        return fail("force, torque, point and duration must be finite numbers");
      if (c.duration_s < 0) return fail("duration_s must be >= 0 (0: until removed)");
      return true;
    case OperatorCommand::Kind::remove_force: {
      for (const auto& f : forces_)
        if (f.command.name == c.name) return true;
      for (const auto& r : world_pending_)
        if (r.command.kind == OperatorCommand::Kind::apply_force && r.command.name == c.name) return true;
      return fail("no force named \"" + c.name + "\" acts now");
    }
    case OperatorCommand::Kind::set_parameter: {
      const std::string prefix = "feedback.";
      if (c.name.rfind(prefix, 0) == 0) {
        const std::string rest = c.name.substr(prefix.size());
        for (const auto& p : processors_)
          if (rest.rfind(p->name() + ".", 0) == 0) {
            const std::string field = rest.substr(p->name().size() + 1);
            double old = 0;
            if (!p->parameter(field, old)) break;
            if (!std::isfinite(c.value)) return fail(c.name + " must be a finite number");
            return true;
          }
      }
      return fail("no parameter \"" + c.name + "\" (see getParameters)");
    }
    case OperatorCommand::Kind::inject_fault: {
      FaultConfig f;
      if (!live_fault(c.name, state_.step, f, why)) return false;
      if ((f.trigger == FaultTrigger::at_step || f.trigger == FaultTrigger::at_time) &&
          fault_fire_step(f, scenario_.initial.step, scenario_.loop.period_ns) <= state_.step)
        return fail("it would start at a step that has begun already (the next step to begin is " +
                    std::to_string(state_.step + 1) + ")");
      if (fault) *fault = std::move(f);
      return true;
    }
  }
  return fail("unknown command");
}

bool Session::live_fault(const std::string& text, std::uint64_t step, FaultConfig& out, std::string* why) const {
  auto fail = [why](std::string reason) {
    if (why) *why = std::move(reason);
    return false;
  };
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object())
    return fail("a fault is a JSON object with the keys of a `faults:` entry (docs/faults.md), got " + text);
  if (j.contains("if"))
    return fail(
        "a live fault starts now, at at_s / at_step, or with a probability per step; `if:` conditions are "
        "for the scenario's faults");
  if (!j.contains("at_s") && !j.contains("at_step") && !j.contains("probability")) j["at_step"] = step + 1;
  try {
    const ConfigNode list = load_config_text("[" + j.dump() + "]", "inject_fault");
    std::vector<FaultConfig> parsed = parse_faults(list, scenario_);
    if (!list.context().errors.empty()) throw ConfigError(list.context().errors);
    if (parsed.size() != 1) return fail("not a fault: " + text);
    out = std::move(parsed.front());
  } catch (const ConfigError& e) {
    std::string all;
    for (const auto& line : e.errors()) all += (all.empty() ? "" : "; ") + line;
    return fail(all);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  out.where = "inject_fault at step " + std::to_string(step);
  return true;
}

void Session::add_fault(const FaultConfig& fault) { checks_.add_fault(fault); }

// applies a world command at `step` (live: the step about to run; replay: the recorded one)
void Session::apply_command(const OperatorCommand& c, std::uint64_t step) {
  ++commands_applied_;
  switch (c.kind) {
    case OperatorCommand::Kind::apply_force: {
      // a force of the same name is replaced
      std::erase_if(forces_, [&](const OperatorForce& f) { return f.command.name == c.name; });
      std::uint64_t until = forever;
      if (c.duration_s > 0) {
        const double steps = std::ceil(c.duration_s * 1e9 / static_cast<double>(scenario_.loop.period_ns));
        until = step + static_cast<std::uint64_t>(std::max(1.0, steps));
      }
      forces_.push_back({c, until});
      return;
    }
    case OperatorCommand::Kind::remove_force:
      std::erase_if(forces_, [&](const OperatorForce& f) { return f.command.name == c.name; });
      return;
    case OperatorCommand::Kind::set_parameter: {
      const std::string rest = c.name.substr(std::string("feedback.").size());
      for (const auto& p : processors_)
        if (rest.rfind(p->name() + ".", 0) == 0) {
          std::string why;
          if (!p->set_parameter(rest.substr(p->name().size() + 1), c.value, &why))
            spdlog::warn("operator command {} at step {} refused: {}", c.name, step, why);
          return;
        }
      return;
    }
    case OperatorCommand::Kind::inject_fault: {
      FaultConfig f;
      std::string why;
      if (live_fault(c.name, step, f, &why))
        add_fault(f);
      else
        spdlog::warn("operator command inject_fault at step {} refused: {}", step, why);
      return;
    }
  }
}

// phase 4: this step's operator commands, then the forces acting now, into inputs_
void Session::apply_operator_inputs(const StepContext& ctx) {
  step_commands_.commands.clear();
  if (options_.scripted_commands) {
    const auto& script = *options_.scripted_commands;
    while (script_at_ < script.size() && script[script_at_].step < ctx.step) ++script_at_;
    if (script_at_ < script.size() && script[script_at_].step == ctx.step) {
      for (const auto& c : script[script_at_].commands) step_commands_.commands.push_back(c);
      ++script_at_;
    }
  }
  if (!world_pending_.empty()) {
    for (auto& r : world_pending_) step_commands_.commands.push_back(std::move(r.command));
    world_pending_.clear();
  }
  if (!step_commands_.commands.empty()) {
    step_commands_.step = ctx.step;
    for (const auto& c : step_commands_.commands) {
      apply_command(c, ctx.step);
      const std::string text = "operator: " + describe(c, model_) + " at step " + std::to_string(ctx.step);
      spdlog::info("{}", text);
      if (recorder_) recorder_->event(ctx.step, ctx.time_ns, 2, "operator", text);
    }
    if (recorder_) recorder_->commands(step_commands_, ctx.time_ns);
  }
  if (forces_.empty()) return;
  std::erase_if(forces_, [&](const OperatorForce& f) { return f.until_step <= ctx.step; });
  for (const auto& f : forces_) {
    const OperatorCommand& c = f.command;
    BodyWrench& in = inputs_.wrenches[c.body];
    if (c.body_frame) {
      in.add_body_force_at(c.force_n, c.point_m);
      in.torque_body_nm += c.torque_nm;
    } else {
      // world axes; the point is on the body, so it turns with it
      in.add_world_force_at(c.force_n, state_.bodies[c.body].orientation * c.point_m);
      in.torque_world_nm += c.torque_nm;
    }
  }
}

void Session::handle_request(ControlRequest& r) {
  auto answer = [&](bool ok, const std::string& text) {
    if (r.done) r.done(ok, text);
  };
  using K = ControlRequest::Kind;
  switch (r.kind) {
    case K::status: answer(true, control_status()); return;
    case K::parameters: answer(true, parameters_json()); return;
    case K::pause:
      if (!paused_ && recorder_)
        recorder_->event(state_.step, state_.time_ns, 2, "operator",
                         "paused before step " + std::to_string(state_.step));
      paused_ = true;
      for (auto& t : targets_)
        if (t.done) t.done(false, "interrupted by pause at step " + std::to_string(state_.step));
      targets_.clear();
      answer(true, control_status());
      return;
    case K::resume:
      if (paused_ && recorder_)
        recorder_->event(state_.step, state_.time_ns, 2, "operator", "resumed at step " + std::to_string(state_.step));
      paused_ = false;
      answer(true, control_status());
      return;
    case K::step: {
      if (r.steps == 0) return answer(false, "steps must be >= 1");
      paused_ = true;  // stepping a running session pauses it first
      std::uint64_t from = steps_done_;
      for (const auto& t : targets_)
        if (!t.by_time) from = std::max(from, t.steps);
      Target t;
      t.steps = from + r.steps;
      t.done = std::move(r.done);
      targets_.push_back(std::move(t));
      return;
    }
    case K::run_until: {
      if (!std::isfinite(r.value)) return answer(false, "time_s must be a finite number");
      const auto ns = static_cast<std::int64_t>(std::llround(r.value * 1e9));
      paused_ = true;
      if (ns <= state_.time_ns) return answer(true, control_status());
      Target t;
      t.by_time = true;
      t.time_ns = ns;
      t.done = std::move(r.done);
      targets_.push_back(std::move(t));
      return;
    }
    case K::set_rtf:
      if (!std::isfinite(r.value) || r.value < 0 || r.value > 1000)
        return answer(false, "the real-time factor must be a number in 0..1000 (0: as fast as possible)");
      rtf_ = r.value;
      reanchor_pacer();
      if (recorder_) {
        recorder_->set_wait_when_full(rtf_ == 0);
        recorder_->event(state_.step, state_.time_ns, 2, "operator",
                         "real-time factor set to " + std::to_string(rtf_) + " at step " + std::to_string(state_.step));
      }
      answer(true, control_status());
      return;
    case K::world: {
      std::string why;
      FaultConfig f;
      if (!check_command(r.command, &why, &f)) return answer(false, why);
      nlohmann::json j{{"accepted", true}, {"takes_effect_at_step", state_.step}};
      if (r.command.kind == OperatorCommand::Kind::inject_fault) {
        j["fault"] = f.name;
        if (f.trigger != FaultTrigger::probability)
          j["starts_at_step"] = fault_fire_step(f, scenario_.initial.step, scenario_.loop.period_ns);
      }
      answer(true, j.dump());
      r.done = nullptr;
      world_pending_.push_back(std::move(r));
      return;
    }
    case K::shutdown:
      shutdown_ = true;
      answer(true, control_status());
      return;
    case K::seek: seek(r); return;
  }
}

// replay served live: restore the nearest keyframe at or before the target, then step on
// to it (paused; answered when it is there)
void Session::seek(ControlRequest& r) {
  auto answer = [&](bool ok, const std::string& text) {
    if (r.done) r.done(ok, text);
  };
  if (!options_.keyframes || options_.keyframes->empty())
    return answer(false, "seek: only a recording served live (tether replay --live) can seek");
  const std::uint64_t target = r.steps;
  if (target >= end_step_)
    return answer(false, "seek: step " + std::to_string(target) + " is past the recording's last step " +
                             std::to_string(end_step_ - 1));
  auto it = options_.keyframes->upper_bound(target);
  if (it == options_.keyframes->begin())
    return answer(false, "seek: no keyframe at or before step " + std::to_string(target));
  --it;
  std::string why;
  if (!restore(it->second, &why))
    return answer(false, "seek: cannot restore the keyframe at step " + std::to_string(it->first) + ": " + why);
  script_at_ = 0;  // apply_operator_inputs skips forward to the step
  steps_total_ = steps_done_ + (end_step_ - state_.step);
  for (auto& t : targets_)
    if (t.done) t.done(false, "interrupted by a seek to step " + std::to_string(target));
  targets_.clear();
  paused_ = true;
  if (recorder_)
    recorder_->event(
        state_.step, state_.time_ns, 2, "operator",
        "seek to step " + std::to_string(target) + " from the keyframe at step " + std::to_string(it->first));
  if (state_.step == target) return answer(true, control_status());
  Target t;
  t.steps = steps_done_ + (target - state_.step);
  t.done = std::move(r.done);
  targets_.push_back(std::move(t));
}

// hold_at_end: the last step has run; pause there until a seek, a shutdown or a stop
void Session::hold_at_end() {
  if (!paused_ && recorder_)
    recorder_->event(state_.step, state_.time_ns, 2, "session", "end of the recording: paused (seek to go on)");
  paused_ = true;
  for (auto& t : targets_)
    if (t.done) t.done(false, "the recording ends at step " + std::to_string(state_.step));
  targets_.clear();
}

// between steps: take requests; while paused (and nothing to step), wait for one
bool Session::service_control(const std::atomic<bool>& stop_requested) {
  bool held = false;
  SteadyClock::time_point held_since{};
  for (;;) {
    if (control_->pending() && control_->try_take(control_batch_))
      for (auto& r : control_batch_) handle_request(r);
    if (shutdown_) {
      outcome_ = Outcome::stopped;
      return false;
    }
    if (!paused_ || !targets_.empty()) break;
    if (stop_requested.load(std::memory_order_relaxed)) {
      outcome_ = Outcome::stopped;
      return false;
    }
    if (!held) {
      held = true;
      held_since = SteadyClock::now();
      ++pauses_;
      for (auto& e : endpoints_) e->paused(true);
    }
    control_->wait(20);
  }
  if (held) {
    for (auto& e : endpoints_) e->paused(false);
    paused_wall_s_ += std::chrono::duration<double>(SteadyClock::now() - held_since).count();
    reanchor_pacer();  // no burst of steps to make up the pause
  }
  return true;
}

void Session::after_step_control() {
  if (targets_.empty()) return;
  // the targets reached leave the list first, so that their answer says where the session
  // now stands (paused, unless another step request is still running)
  std::vector<Target> reached;
  for (auto it = targets_.begin(); it != targets_.end();) {
    if (it->by_time ? state_.time_ns >= it->time_ns : steps_done_ >= it->steps) {
      reached.push_back(std::move(*it));
      it = targets_.erase(it);
    } else {
      ++it;
    }
  }
  if (reached.empty()) return;
  const std::string status = control_status();
  for (auto& t : reached)
    if (t.done) t.done(true, status);
}

void Session::end_control() {
  if (!control_) return;
  const std::string why = "the session ended at step " + std::to_string(state_.step) + " (" + to_string(outcome_) + ")";
  for (auto& t : targets_)
    if (t.done) t.done(false, why);
  targets_.clear();
  control_->close(why);
  // requests taken but not answered: none (handle_request answers or keeps a target)
}

}  // namespace tether::runtime
