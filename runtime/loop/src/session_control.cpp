// SPDX-License-Identifier: Apache-2.0
// Operator control of a running session (docs/live.md): the requests a SessionControl
// queues are taken between steps; world commands (forces, gains, faults) are applied in
// phase `pre` of the next step (apply_operator_inputs) and recorded with it, so `tether
// replay --verify` repeats them.
// Every switch over a request or a command is a std::visit with no catch-all: a new kind
// does not build until it is handled here.
#include <cmath>
#include <limits>
#include <algorithm>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "operator_control.hpp"
#include "tether/loop/session.hpp"
#include "tether/recording/recorder.hpp"
#include "tether/scenario/config.hpp"

namespace tether::runtime {

namespace {

constexpr std::uint64_t forever = std::numeric_limits<std::uint64_t>::max();

bool finite(const Vec3& v) { return std::isfinite(v.x()) && std::isfinite(v.y()) && std::isfinite(v.z()); }

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// An operator's force is bounded by the vehicle it acts on (docs/live.md, "apply_force"):
// at most what would accelerate the whole vehicle at 1000 g, and that force at 1 m for the
// torque. Far above any real push, far below what breaks the integrator (1e308 N did).
constexpr double max_force_g = 1000;
constexpr double max_force_duration_s = 1e7;
constexpr double max_force_arm_m = 1000;

// the largest force an operator may apply to `body` (N), and where that bound comes from
double force_bound(const WorldModel& model, std::size_t body, std::string& why) {
  const BodyModel& b = model.bodies[body];
  double mass = b.mass_kg;
  std::string whose = "body " + b.name;
  if (b.vehicle >= 0 && static_cast<std::size_t>(b.vehicle) < model.vehicles.size()) {
    mass = 0;
    for (int i : model.vehicles[b.vehicle].bodies) mass += model.bodies[i].mass_kg;
    whose = "vehicle " + model.vehicles[b.vehicle].name;
  }
  why = "1000 g on the " + number(mass) + " kg of " + whose;
  return max_force_g * 9.80665 * mass;
}

std::string describe(const OperatorCommand& command, const WorldModel& model) {
  char buf[400];
  return std::visit(
      overloaded{
          [&](const ApplyForce& c) -> std::string {
            std::snprintf(buf, sizeof buf,
                          "apply_force \"%s\" on %s: force (%g, %g, %g) N, torque (%g, %g, %g) N·m, %s frame, "
                          "at (%g, %g, %g) m, %s",
                          c.name.c_str(), c.body < model.bodies.size() ? model.bodies[c.body].name.c_str() : "?",
                          c.force_n.x(), c.force_n.y(), c.force_n.z(), c.torque_nm.x(), c.torque_nm.y(),
                          c.torque_nm.z(), c.body_frame ? "body" : "world", c.point_m.x(), c.point_m.y(), c.point_m.z(),
                          c.duration_s > 0 ? ("for " + number(c.duration_s) + " s").c_str() : "until removed");
            return buf;
          },
          [](const RemoveForce& c) -> std::string { return "remove_force \"" + c.name + "\""; },
          [&](const SetParameter& c) -> std::string {
            std::snprintf(buf, sizeof buf, "set_parameter %s = %.17g", c.name.c_str(), c.value);
            return buf;
          },
          [](const InjectFault& c) -> std::string { return "inject_fault " + c.entry; },
          [](const EndpointCommand& c) -> std::string {
            return "endpoint_command " + c.verb + " " + c.arguments + " to endpoint " + c.endpoint;
          },
          [](const BackgroundTake& c) -> std::string {
            return "feedback." + c.processor +
                   (c.taken ? ": the late refit taken" : ": the refit due not ready, deferred");
          },
      },
      command);
}

}  // namespace

void Session::init_control() {
  op_ = std::make_unique<OperatorControl>();
  op_->paused = control_ && options_.start_paused;
  op_->forces.reserve(16);
  op_->step_commands.commands.reserve(16);
}

const std::vector<Session::OperatorForce>& Session::operator_forces() const { return op_->forces; }

void Session::reanchor_pacer(SteadyClock::time_point now) {
  const std::int64_t wall_period_ns =
      rtf_ > 0 ? static_cast<std::int64_t>(static_cast<double>(scenario_.loop.period_ns) / rtf_) : 0;
  pacer_.start(now, wall_period_ns, scenario_.loop.realtime.spin_us * 1000);
}

std::string Session::control_status() const {
  nlohmann::json j{{"step", state_.step},
                   {"steps_done", steps_done_},
                   {"steps_planned", steps_total_},
                   {"time_s", static_cast<double>(state_.time_ns) * 1e-9},
                   {"paused", op_->paused && op_->targets.empty()},
                   {"real_time_factor", rtf_},
                   {"stepping", !op_->targets.empty()}};
  j["forces"] = nlohmann::json::array();
  for (const auto& f : op_->forces)
    if (f.until_step > state_.step)  // a force that has run its course leaves at the next step
      j["forces"].push_back(
          {{"name", f.command.name},
           {"body", model_.bodies[f.command.body].name},
           {"until_step", f.until_step == forever ? nlohmann::json() : nlohmann::json(f.until_step)}});
  // the session's own counters, as its summary will give them (a page counts only what it saw)
  j["endpoints"] = nlohmann::json::array();
  for (std::size_t i = 0; i < endpoints_.size(); ++i) {
    const EndpointCounters& c = counters_[i];
    const LinkCounts link = endpoints_[i]->link_counts();
    j["endpoints"].push_back({{"name", endpoints_[i]->name()},
                              {"replies", c.replies},
                              {"late", c.late},
                              {"misses", c.misses},
                              {"stale", link.stale},
                              {"corrupt", link.corrupt},
                              {"faults", c.faults}});
  }
  // the expectations so far: FAIL from the first failing step on; PASS until then (the end
  // judges `at end` and `eventually`)
  if (checks_.has_expectations()) {
    nlohmann::json so_far;
    checks_.summarize(so_far);
    j["expectations"] = std::move(so_far["expectations"]);
  }
  return j.dump();
}

void Session::control_summary(nlohmann::json& out) const {
  if (!control_ && op_->commands_applied == 0) return;
  nlohmann::json forces = nlohmann::json::array();
  for (const auto& f : op_->forces)
    if (f.until_step > state_.step) forces.push_back(f.command.name);
  out["control"] = {{"operator_commands", op_->commands_applied},
                    {"pauses", op_->pauses},
                    {"paused_wall_s", op_->paused_wall_s},
                    {"forces_acting", forces}};
}

std::string Session::parameters_json() const {
  nlohmann::json j = nlohmann::json::array();
  j.push_back({{"name", "rtf"}, {"value", rtf_}});
  std::vector<std::pair<std::string, double>> computed;
  for (const auto& p : processors_) {
    for (const auto& n : p->parameter_names()) {
      double v = 0;
      if (p->parameter(n, v)) j.push_back({{"name", "feedback." + p->name() + "." + n}, {"value", v}});
    }
    computed.clear();
    p->read_only_parameters(computed);
    for (const auto& [n, v] : computed) j.push_back({{"name", "feedback." + p->name() + "." + n}, {"value", v}});
  }
  return j.dump();
}

bool Session::check_command(const OperatorCommand& command, std::string* why, FaultConfig* fault) const {
  auto fail = [why](std::string text) {
    if (why) *why = std::move(text);
    return false;
  };
  return std::visit(
      overloaded{
          [&](const ApplyForce& c) {
            if (c.name.empty()) return fail("a force needs a name (remove_force names it)");
            if (c.body >= model_.bodies.size()) return fail("no body " + std::to_string(c.body));
            if (!finite(c.force_n) || !finite(c.torque_nm) || !finite(c.point_m) || !std::isfinite(c.duration_s))
              return fail("force, torque, point and duration must be finite numbers");
            if (c.duration_s < 0) return fail("duration_s must be >= 0 (0: until removed)");
            if (c.duration_s > max_force_duration_s)
              return fail("duration_s must be <= " + number(max_force_duration_s) + " s (0: until removed)");
            std::string why_bound;
            const double bound_n = force_bound(model_, c.body, why_bound);
            if (c.force_n.norm() > bound_n)
              return fail("the force's size, " + number(c.force_n.norm()) + " N, is over " + number(bound_n) + " N (" +
                          why_bound + ")");
            if (c.torque_nm.norm() > bound_n * 1.0)  // that force at 1 m
              return fail("the torque's size, " + number(c.torque_nm.norm()) + " N·m, is over " + number(bound_n) +
                          " N·m (" + why_bound + ", times 1 m)");
            if (c.point_m.norm() > max_force_arm_m)
              return fail("the point is " + number(c.point_m.norm()) + " m from the centre of mass; at most " +
                          number(max_force_arm_m) + " m");
            return true;
          },
          [&](const RemoveForce& c) {
            for (const auto& f : op_->forces)
              if (f.command.name == c.name) return true;
            for (const auto& p : op_->pending)
              if (const auto* a = std::get_if<ApplyForce>(&p); a && a->name == c.name) return true;
            return fail("no force named \"" + c.name + "\" acts now");
          },
          [&](const SetParameter& c) {
            const std::string prefix = "feedback.";
            if (c.name.rfind(prefix, 0) == 0) {
              const std::string rest = c.name.substr(prefix.size());
              for (const auto& p : processors_)
                if (rest.rfind(p->name() + ".", 0) == 0) {
                  const std::string field = rest.substr(p->name().size() + 1);
                  double old = 0;
                  if (!p->parameter(field, old)) {
                    std::vector<std::pair<std::string, double>> computed;
                    p->read_only_parameters(computed);
                    for (const auto& [n, v] : computed)
                      if (n == field)
                        return fail(c.name + " is what the processor computes (" + number(v) +
                                    " now); it cannot be set");
                    break;
                  }
                  const Range range = p->parameter_range(field);
                  if (!std::isfinite(c.value) || !range.contains(c.value))
                    return fail(c.name + " must be " + range.expected() + " (its range in the scenario file), got " +
                                number(c.value) + "; it stays " + number(old));
                  return true;
                }
            }
            return fail("no parameter \"" + c.name + "\" (see getParameters)");
          },
          [&](const InjectFault& c) {
            FaultConfig f;
            if (!live_fault(c.entry, state_.step, f, why)) return false;
            if ((f.trigger == FaultTrigger::at_step || f.trigger == FaultTrigger::at_time) &&
                fault_fire_step(f, scenario_.initial.step, scenario_.loop.period_ns) <= state_.step)
              return fail("it would start at a step that has begun already (the next step to begin is " +
                          std::to_string(state_.step + 1) + ")");
            if (fault) *fault = std::move(f);
            return true;
          },
          [&](const EndpointCommand& c) {
            const nlohmann::json arguments = nlohmann::json::parse(c.arguments, nullptr, false);
            if (!arguments.is_object()) return fail("the arguments must be a JSON object");
            std::string known;
            for (const auto& e : endpoints_) {
              if (e->name() == c.endpoint) return e->operator_command(c.verb, arguments, false, why);
              known += (known.empty() ? "" : ", ") + e->name();
            }
            return fail("no endpoint \"" + c.endpoint + "\" (known: " + known + ")");
          },
          [&](const BackgroundTake&) {
            return fail(
                "background_take is the session's own record of a feedback processor's late result, not a "
                "request");
          },
      },
      command);
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
void Session::apply_command(const OperatorCommand& command, std::uint64_t step) {
  ++op_->commands_applied;
  auto& forces = op_->forces;
  std::visit(
      overloaded{
          [&](const ApplyForce& c) {
            // a force of the same name is replaced
            std::erase_if(forces, [&](const OperatorForce& f) { return f.command.name == c.name; });
            std::uint64_t until = forever;
            if (c.duration_s > 0) {
              const double steps = std::ceil(c.duration_s * 1e9 / static_cast<double>(scenario_.loop.period_ns));
              until = step + static_cast<std::uint64_t>(std::max(1.0, steps));
            }
            forces.push_back({c, until});
          },
          [&](const RemoveForce& c) {
            std::erase_if(forces, [&](const OperatorForce& f) { return f.command.name == c.name; });
          },
          [&](const SetParameter& c) {
            const std::string rest = c.name.substr(std::string("feedback.").size());
            for (const auto& p : processors_)
              if (rest.rfind(p->name() + ".", 0) == 0) {
                std::string why;
                if (!p->set_parameter(rest.substr(p->name().size() + 1), c.value, &why))
                  spdlog::warn("operator command {} at step {} refused: {}", c.name, step, why);
                return;
              }
          },
          [&](const InjectFault& c) {
            FaultConfig f;
            std::string why;
            if (live_fault(c.entry, step, f, &why))
              add_fault(f);
            else
              spdlog::warn("operator command inject_fault at step {} refused: {}", step, why);
          },
          [&](const EndpointCommand& c) {
            std::string why = "no such endpoint";
            const nlohmann::json arguments = nlohmann::json::parse(c.arguments, nullptr, false);
            for (auto& e : endpoints_)
              if (e->name() == c.endpoint && arguments.is_object() &&
                  e->operator_command(c.verb, arguments, true, &why))
                return;
            spdlog::warn("operator command {} for endpoint {} at step {} refused: {}", c.verb, c.endpoint, step, why);
          },
          [&](const BackgroundTake& c) {
            std::string why = "no feedback processor of that name";
            for (const auto& p : processors_)
              if (p->name() == c.processor &&
                  p->apply_background_note(step, c.taken ? BackgroundNote::taken : BackgroundNote::deferred, &why))
                return;
            spdlog::warn("recorded background_take for feedback.{} at step {} not applied: {}", c.processor, step, why);
          },
      },
      command);
}

void Session::reapply_commands(std::uint64_t before_step, bool faults) {
  if (!options_.scripted_commands) return;
  if (!faults) op_->forces.clear();
  for (const StepCommands& sc : *options_.scripted_commands) {
    if (sc.step >= before_step) break;
    for (const OperatorCommand& c : sc.commands)
      if (std::holds_alternative<InjectFault>(c) == faults) apply_command(c, sc.step);
  }
  if (!faults) std::erase_if(op_->forces, [&](const OperatorForce& f) { return f.until_step <= before_step; });
}

// in phase `pre`: this step's operator commands, then the forces acting now, into inputs_
void Session::apply_operator_inputs(const StepContext& ctx) {
  OperatorControl& op = *op_;
  op.step_commands.commands.clear();
  if (options_.scripted_commands) {
    const auto& script = *options_.scripted_commands;
    while (op.script_at < script.size() && script[op.script_at].step < ctx.step) ++op.script_at;
    if (op.script_at < script.size() && script[op.script_at].step == ctx.step) {
      for (const auto& c : script[op.script_at].commands) op.step_commands.commands.push_back(c);
      ++op.script_at;
    }
  }
  if (!op.pending.empty()) {
    for (auto& c : op.pending) op.step_commands.commands.push_back(std::move(c));
    op.pending.clear();
  }
  if (!op.step_commands.commands.empty()) {
    op.step_commands.step = ctx.step;
    for (const auto& c : op.step_commands.commands) {
      apply_command(c, ctx.step);
      const std::string text = "operator: " + describe(c, model_) + " at step " + std::to_string(ctx.step);
      spdlog::info("{}", text);
      if (recorder_) recorder_->event(ctx.step, ctx.time_ns, 2, "operator", text);
    }
  }
  if (op.forces.empty()) return;
  std::erase_if(op.forces, [&](const OperatorForce& f) { return f.until_step <= ctx.step; });
  for (const auto& f : op.forces) {
    const ApplyForce& c = f.command;
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

// Replay takes a background result where the recording says; a paced session never waits for
// one (it is taken at the first step it is ready); as fast as possible, at its step.
BackgroundTakes Session::background_takes() const {
  if (options_.scripted_commands) return BackgroundTakes::as_recorded;
  return rtf_ > 0 ? BackgroundTakes::when_ready : BackgroundTakes::at_schedule;
}

void Session::record_commands(const StepContext& ctx) {
  OperatorControl& op = *op_;
  if (background_takes() != BackgroundTakes::as_recorded)  // replay's notes came with the script
    for (const auto& p : processors_) {
      const BackgroundNote note = p->take_background_note();
      if (note == BackgroundNote::none) continue;
      op.step_commands.commands.push_back(BackgroundTake{p->name(), note == BackgroundNote::taken});
      const std::string text =
          describe(op.step_commands.commands.back(), model_) + " at step " + std::to_string(ctx.step);
      spdlog::info("{}", text);
      if (recorder_) recorder_->event(ctx.step, ctx.time_ns, 2, "feedback", text);
    }
  if (op.step_commands.commands.empty()) return;
  op.step_commands.step = ctx.step;
  if (recorder_) recorder_->commands(op.step_commands, ctx.time_ns);
}

void Session::handle_request(ControlRequest& r) {
  using R = ControlRequest;
  OperatorControl& op = *op_;
  auto answer = [&](bool ok, const std::string& text) {
    if (r.done) r.done(ok, text);
  };
  auto event = [&](const std::string& text) {
    if (recorder_) recorder_->event(state_.step, state_.time_ns, 2, "operator", text);
  };
  std::visit(overloaded{
                 [&](const R::Status&) { answer(true, control_status()); },
                 [&](const R::Parameters&) { answer(true, parameters_json()); },
                 [&](const R::Pause&) {
                   if (!op.paused) event("paused before step " + std::to_string(state_.step));
                   op.paused = true;
                   for (auto& t : op.targets)
                     if (t.done) t.done(false, "interrupted by pause at step " + std::to_string(state_.step));
                   op.targets.clear();
                   answer(true, control_status());
                 },
                 [&](const R::Resume&) {
                   if (op.paused) event("resumed at step " + std::to_string(state_.step));
                   op.paused = false;
                   answer(true, control_status());
                 },
                 [&](const R::Step& s) {
                   if (s.steps == 0) return answer(false, "steps must be >= 1");
                   op.paused = true;  // stepping a running session pauses it first
                   std::uint64_t from = steps_done_;
                   for (const auto& t : op.targets)
                     if (!t.by_time) from = std::max(from, t.steps);
                   op.targets.push_back({false, from + s.steps, 0, std::move(r.done)});
                 },
                 [&](const R::RunUntil& u) {
                   std::string why;
                   const std::int64_t ns = run_until_target(u.time_s, &why);
                   if (ns < 0) return answer(false, why);
                   op.paused = true;
                   op.targets.push_back({true, 0, ns, std::move(r.done)});
                 },
                 [&](const R::SetRtf& s) {
                   if (!std::isfinite(s.rtf) || s.rtf < 0 || s.rtf > 1000)
                     return answer(false, "the real-time factor must be a number in 0..1000 (0: as fast as possible)");
                   rtf_ = s.rtf;
                   reanchor_pacer(SteadyClock::now());
                   if (recorder_) recorder_->set_wait_when_full(rtf_ == 0);
                   event("real-time factor set to " + std::to_string(rtf_) + " at step " + std::to_string(state_.step));
                   answer(true, control_status());
                 },
                 [&](R::World& w) {
                   std::string why;
                   FaultConfig f;
                   if (!check_command(w.command, &why, &f)) return answer(false, why);
                   nlohmann::json j{{"accepted", true}, {"takes_effect_at_step", state_.step}};
                   if (std::holds_alternative<InjectFault>(w.command)) {
                     j["fault"] = f.name;
                     if (f.trigger != FaultTrigger::probability)
                       j["starts_at_step"] = fault_fire_step(f, scenario_.initial.step, scenario_.loop.period_ns);
                   }
                   answer(true, j.dump());
                   op.pending.push_back(std::move(w.command));
                 },
                 [&](const R::Shutdown&) {
                   op.shutdown = true;
                   answer(true, control_status());
                 },
                 [&](const R::Seek& s) { seek(s.step, r); },
             },
             r.action);
}

// run_until's target in ns: after the time now and no later than the session's last
// planned step; -1 with the reason otherwise (a time past the int64 range once wrapped round
// and answered at once)
std::int64_t Session::run_until_target(double time_s, std::string* why) const {
  const double now_s = static_cast<double>(state_.time_ns) * 1e-9;
  const double end_s = now_s + static_cast<double>(steps_total_ - std::min(steps_done_, steps_total_)) *
                                   static_cast<double>(scenario_.loop.period_ns) * 1e-9;
  auto fail = [&](std::string text) {
    *why = std::move(text);
    return std::int64_t{-1};
  };
  if (!std::isfinite(time_s)) return fail("time_s must be a finite number");
  if (time_s > 9.2e9) return fail("time_s must be <= 9.2e9 s (the clock's range)");
  if (time_s <= now_s)
    return fail("time_s " + number(time_s) + " s is not in the future: the session is at " + number(now_s) + " s");
  if (time_s > end_s)
    return fail("time_s " + number(time_s) + " s is past the session's end at " + number(end_s) + " s (step " +
                std::to_string(state_.step + (steps_total_ - std::min(steps_done_, steps_total_))) + ")");
  return static_cast<std::int64_t>(std::llround(time_s * 1e9));
}

// replay served live: restore the nearest keyframe at or before the target, then step on
// to it (paused; answered when it is there)
void Session::seek(std::uint64_t target, ControlRequest& r) {
  OperatorControl& op = *op_;
  auto answer = [&](bool ok, const std::string& text) {
    if (r.done) r.done(ok, text);
  };
  if (!options_.keyframes || options_.keyframes->empty())
    return answer(false, "only a recording served live (tether replay --live) can seek");
  if (target >= op.end_step)
    return answer(false, "step " + std::to_string(target) + " is past the recording's last step " +
                             std::to_string(op.end_step - 1));
  auto it = options_.keyframes->upper_bound(target);
  if (it == options_.keyframes->begin())
    return answer(false, "no keyframe at or before step " + std::to_string(target));
  --it;
  // a processor whose state is the whole run so far (the estimate's refit) restores only the
  // start: step from there
  for (const auto& p : processors_)
    if (!p->restores_after_start()) it = options_.keyframes->begin();
  std::string why;
  if (!restore(it->second, &why))
    return answer(false, "cannot restore the keyframe at step " + std::to_string(it->first) + ": " + why);
  op.script_at = 0;  // apply_operator_inputs skips forward to the step
  steps_total_ = steps_done_ + (op.end_step - state_.step);
  for (auto& t : op.targets)
    if (t.done) t.done(false, "interrupted by a seek to step " + std::to_string(target));
  op.targets.clear();
  op.paused = true;
  if (recorder_)
    recorder_->event(
        state_.step, state_.time_ns, 2, "operator",
        "seek to step " + std::to_string(target) + " from the keyframe at step " + std::to_string(it->first));
  if (state_.step == target) return answer(true, control_status());
  op.targets.push_back({false, steps_done_ + (target - state_.step), 0, std::move(r.done)});
}

// hold_at_end: the last step has run; pause there until a seek, a shutdown or a stop
void Session::hold_at_end() {
  OperatorControl& op = *op_;
  if (!op.paused && recorder_)
    recorder_->event(state_.step, state_.time_ns, 2, "session", "end of the recording: paused (seek to go on)");
  op.paused = true;
  for (auto& t : op.targets)
    if (t.done) t.done(false, "the recording ends at step " + std::to_string(state_.step));
  op.targets.clear();
}

// between steps: take requests; while paused (and nothing to step), wait for one
bool Session::service_control(const std::atomic<bool>& stop_requested) {
  OperatorControl& op = *op_;
  bool held = false;
  SteadyClock::time_point held_since{};
  for (;;) {
    if (control_->pending() && control_->try_take(op.batch))
      for (auto& r : op.batch) handle_request(r);
    if (op.shutdown) {
      outcome_ = Outcome::stopped;
      return false;
    }
    if (!op.paused || !op.targets.empty()) break;
    if (stop_requested.load(std::memory_order_relaxed)) {
      outcome_ = Outcome::stopped;
      return false;
    }
    if (!held) {
      held = true;
      held_since = SteadyClock::now();
      ++op.pauses;
      for (auto& e : endpoints_) e->paused(true);
    }
    control_->wait(20);
  }
  if (held) {
    for (auto& e : endpoints_) e->paused(false);
    op.paused_wall_s += std::chrono::duration<double>(SteadyClock::now() - held_since).count();
    reanchor_pacer(SteadyClock::now());  // no burst of steps to make up the pause
  }
  return true;
}

void Session::after_step_control() {
  auto& targets = op_->targets;
  if (targets.empty()) return;
  // the targets reached leave the list first, so that their answer says where the session
  // now stands (paused, unless another step request is still running)
  std::vector<OperatorControl::Target> reached;
  for (auto it = targets.begin(); it != targets.end();) {
    if (it->by_time ? state_.time_ns >= it->time_ns : steps_done_ >= it->steps) {
      reached.push_back(std::move(*it));
      it = targets.erase(it);
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
  for (auto& t : op_->targets)
    if (t.done) t.done(false, why);
  op_->targets.clear();
  control_->close(why);
  // requests taken but not answered: none (handle_request answers or keeps a target)
}

}  // namespace tether::runtime
