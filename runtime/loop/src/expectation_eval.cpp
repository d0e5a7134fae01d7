// SPDX-License-Identifier: Apache-2.0
#include "tether/loop/expectation_eval.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>

#include <nlohmann/json.hpp>

#include "tether/loop/goal_summary.hpp"
#include "tether/physics/math.hpp"
#include "tether/scenario/expectation_window.hpp"

namespace tether::runtime {

struct Expectations::Item {
  ExpectationConfig c;
  std::string that, when;  // as written, for the summary
  int processor = -1;      // feedback: index of the processor
  int field = -1;          //           and of the figure in its record()
  std::uint64_t evaluated = 0;
  bool failed = false;
  bool skipped = false;    // its window lies beyond the end of the run: not judged
  bool held_once = false;  // eventually: it held at some step
  std::uint64_t first_fail_step = 0;
  double first_fail_t = 0;
  bool have_worst = false;
  double worst = 0, worst_margin = 0;
  std::string why;  // a failure that is not a value (never evaluated, never held)
  // the scenario's planned run (loop.steps from its initial step): a run cut short of it
  // (`--steps`, a stop) cannot judge `at end` or an `eventually` that has not held yet
  std::uint64_t first_step = 0, planned_steps = 0;
};

namespace {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

// how far inside the condition v is: >= 0 passes for the non-strict, > 0 for the strict ones
double margin(const ExpectationConfig& c, double v) {
  switch (c.op) {
    case ExpectOp::lt:
    case ExpectOp::le: return c.a - v;
    case ExpectOp::gt:
    case ExpectOp::ge: return v - c.a;
    case ExpectOp::eq: return -std::abs(v - c.a);
    case ExpectOp::ne: return std::abs(v - c.a);
    case ExpectOp::within: return c.a - std::abs(v - c.b);
    case ExpectOp::between: return std::min(v - c.a, c.b - v);
    case ExpectOp::matches: return 0;
  }
  return 0;
}

bool holds(const ExpectationConfig& c, double v) {
  switch (c.op) {
    case ExpectOp::lt: return v < c.a;
    case ExpectOp::le: return v <= c.a;
    case ExpectOp::gt: return v > c.a;
    case ExpectOp::ge: return v >= c.a;
    case ExpectOp::eq: return v == c.a;
    case ExpectOp::ne: return v != c.a;
    case ExpectOp::within: return std::abs(v - c.b) <= c.a;
    case ExpectOp::between: return v >= c.a && v <= c.b;
    case ExpectOp::matches: return false;
  }
  return false;
}

double deg(double rad) { return rad * 180.0 / std::numbers::pi; }

std::string that_text(const ExpectationConfig& c) {
  const auto n = [](double v) {
    std::string s = nlohmann::json(v).dump();
    return s;
  };
  switch (c.op) {
    case ExpectOp::lt: return "< " + n(c.a);
    case ExpectOp::le: return "<= " + n(c.a);
    case ExpectOp::gt: return "> " + n(c.a);
    case ExpectOp::ge: return ">= " + n(c.a);
    case ExpectOp::eq: return "== " + n(c.a);
    case ExpectOp::ne: return "!= " + n(c.a);
    case ExpectOp::within: return "within " + n(c.a) + " of " + n(c.b);
    case ExpectOp::between: return "between " + n(c.a) + " and " + n(c.b);
    case ExpectOp::matches: return "matches \"" + c.pattern + "\"";
  }
  return "?";
}

std::string when_text(const ExpectationConfig& c) {
  const auto n = [](double v) { return nlohmann::json(v).dump(); };
  switch (c.when) {
    case ExpectWhen::always: return "always";
    case ExpectWhen::at_end: return "at end";
    case ExpectWhen::after: return "after " + n(c.t0_s) + " s";
    case ExpectWhen::during: return "during [" + n(c.t0_s) + " s, " + n(c.t1_s) + " s]";
    case ExpectWhen::eventually: return c.t1_s > 0 ? "eventually before " + n(c.t1_s) + " s" : "eventually";
  }
  return "?";
}

}  // namespace

Expectations::Expectations(const std::vector<ExpectationConfig>& configs,
                           const std::vector<std::unique_ptr<FeedbackProcessor>>& processors, const Scenario& scenario)
    : processors_(processors) {
  std::vector<std::string> errors;
  std::size_t most_fields = 0;
  for (const ExpectationConfig& c : configs) {
    Item it;
    it.c = c;
    it.first_step = scenario.initial.step;
    it.planned_steps = scenario.loop.steps;
    it.that = that_text(c);
    it.when = when_text(c);
    if (c.kind == QuantityKind::feedback) {
      for (std::size_t p = 0; p < processors.size(); ++p) {
        if (processors[p]->name() != c.processor) continue;
        const auto fields = processors[p]->record_fields();
        most_fields = std::max(most_fields, fields.size());
        for (std::size_t f = 0; f < fields.size(); ++f)
          if (fields[f] == c.field) {
            it.processor = static_cast<int>(p);
            it.field = static_cast<int>(f);
          }
        if (it.field < 0) {
          std::string list;
          for (const auto& f : fields) list += (list.empty() ? "" : ", ") + f;
          errors.push_back(c.where + ": expect: " + c.value + ": processor \"" + c.processor + "\" records " +
                           (list.empty() ? std::string("no figures") : list));
        }
      }
    }
    if (c.kind == QuantityKind::contacts) needs_contacts_ = true;
    items_.push_back(std::move(it));
  }
  (void)scenario;
  if (!errors.empty()) throw ConfigError(errors);
  figures_.reserve(most_fields);
}

Expectations::~Expectations() = default;

void Expectations::evaluate(const ExpectationStep& s) {
  for (Item& it : items_) {
    const ExpectationConfig& c = it.c;
    // at the end: judged once the run is over (finish()); eventually: until it held once
    const ExpectWindow w =
        expectation_window(c, -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity());
    const bool due =
        c.when != ExpectWhen::at_end && w.contains(s.t_s) && !(c.when == ExpectWhen::eventually && it.held_once);
    // eventually before t1: its deadline passed without it holding, it fails at this step
    if (c.when == ExpectWhen::eventually && !it.held_once && !it.failed && s.t_s > w.to_s + 1e-12) {
      it.failed = true;
      it.first_fail_step = s.step;
      it.first_fail_t = s.t_s;
      it.why = "never held before " + it.when.substr(std::string("eventually before ").size());
    }
    if (due) evaluate_one(it, s);
  }
}

void Expectations::evaluate_one(Item& it, const ExpectationStep& s) {
  const ExpectationConfig& c = it.c;
  {
    if (c.kind == QuantityKind::log) {
      const auto& lines = s.logs[static_cast<std::size_t>(c.endpoint)];
      ++it.evaluated;
      for (const LogLine& l : lines)
        if (l.text.find(c.pattern) != std::string::npos) {
          it.held_once = true;
          it.have_worst = true;
          it.worst = static_cast<double>(s.step);  // the step it was seen
          break;
        }
      return;
    }
    const double v = value_of(it, s);
    if (!std::isfinite(v)) return;  // no reading this step (dropout): nothing to judge
    ++it.evaluated;
    const double m = margin(c, v);
    const bool ok = holds(c, v);
    if (c.when == ExpectWhen::eventually) {
      if (!it.have_worst || m > it.worst_margin) {
        it.have_worst = true;
        it.worst = v;
        it.worst_margin = m;
      }
      if (ok) it.held_once = true;
      return;
    }
    if (!it.have_worst || m < it.worst_margin) {
      it.have_worst = true;
      it.worst = v;
      it.worst_margin = m;
    }
    if (!ok && !it.failed) {
      it.failed = true;
      it.first_fail_step = s.step;
      it.first_fail_t = s.t_s;
    }
  }
}

double Expectations::value_of(Item& it, const ExpectationStep& s) {
  const ExpectationConfig& c = it.c;
  double v = nan;
  switch (c.kind) {
    case QuantityKind::body: {
      const BodyState& b = s.state->bodies[static_cast<std::size_t>(c.body)];
      const Vec3 vel = linear_velocity(*s.model, *s.state, c.body);
      switch (c.figure) {
        case BodyFigure::x_m: v = b.position_m.x(); break;
        case BodyFigure::y_m: v = b.position_m.y(); break;
        case BodyFigure::z_m: v = b.position_m.z(); break;
        case BodyFigure::depth_m: v = s.model->water.surface_z_m - b.position_m.z(); break;
        case BodyFigure::heading_deg: v = compass_heading_deg(b.orientation); break;
        case BodyFigure::roll_deg: v = deg(rpy_from_quat(b.orientation).x()); break;
        case BodyFigure::pitch_deg: v = deg(rpy_from_quat(b.orientation).y()); break;
        case BodyFigure::yaw_deg: v = deg(rpy_from_quat(b.orientation).z()); break;
        case BodyFigure::speed_m_s: v = vel.norm(); break;
        case BodyFigure::vx_m_s: v = vel.x(); break;
        case BodyFigure::vy_m_s: v = vel.y(); break;
        case BodyFigure::vz_m_s: v = vel.z(); break;
      }
      break;
    }
    case QuantityKind::device: {
      const hal::Sample& sample = s.devices->sample(static_cast<std::size_t>(c.device));
      if (sample.valid || s.devices->is_actuator(static_cast<std::size_t>(c.device)))
        v = sample.ch[static_cast<std::size_t>(c.channel)];
      break;
    }
    case QuantityKind::endpoint: {
      const auto index = static_cast<std::size_t>(c.endpoint);
      const EndpointCounters& k = (*s.counters)[index];
      const LinkCounts link = (*s.endpoints)[index]->link_counts();
      const std::string& n = c.counter;
      v = static_cast<double>(n == "replies"   ? k.replies
                              : n == "late"    ? k.late
                              : n == "misses"  ? k.misses
                              : n == "stale"   ? link.stale
                              : n == "corrupt" ? link.corrupt
                              : n == "faults"  ? k.faults
                                               : k.implausible);
      break;
    }
    case QuantityKind::feedback: {
      figures_.clear();
      processors_[static_cast<std::size_t>(it.processor)]->record(figures_);
      if (static_cast<std::size_t>(it.field) < figures_.size()) v = figures_[static_cast<std::size_t>(it.field)];
      break;
    }
    case QuantityKind::contacts: {
      int n = 0;
      for (const ContactEvent& e : s.report->contacts) {
        const auto of = [&](int body) {
          return body >= 0 && s.model->bodies[static_cast<std::size_t>(body)].vehicle == c.vehicle;
        };
        if (of(e.body_a) || of(e.body_b)) ++n;
      }
      v = n;
      break;
    }
    case QuantityKind::log: break;
  }
  return v;
}

bool Expectations::holds_now(std::size_t i, const ExpectationStep& s) {
  const double v = value_of(items_[i], s);
  return std::isfinite(v) && holds(items_[i].c, v);
}

void Expectations::finish(const ExpectationStep& last) {
  for (Item& it : items_) {
    const ExpectationConfig& c = it.c;
    const std::uint64_t ran = last.step + 1 - std::min(last.step + 1, it.first_step);
    if (ran < it.planned_steps && !it.failed &&
        (c.when == ExpectWhen::at_end || (c.when == ExpectWhen::eventually && !it.held_once))) {
      // judged at the cut, `at end` would judge a state the scenario never meant as its end
      it.skipped = true;
      it.why = "run shortened (" + std::to_string(ran) + " of " + std::to_string(it.planned_steps) +
               " steps): judged only on the whole run";
      continue;
    }
    if (c.when == ExpectWhen::at_end) evaluate_one(it, last);  // the last state only
    if (it.failed) continue;
    // a window (or a deadline) the run ended before: the run cannot judge it (a run cut
    // short with --steps); neither a pass nor a failure
    const bool window_after_end = (c.when == ExpectWhen::after || c.when == ExpectWhen::during)
                                      ? last.t_s < c.t0_s - 1e-12
                                      : (c.when == ExpectWhen::eventually && c.t1_s > 0 && last.t_s < c.t1_s - 1e-12);
    const bool never_held = c.when == ExpectWhen::eventually && !it.held_once;
    if (!never_held && it.evaluated > 0) continue;
    if (window_after_end) {
      it.skipped = true;
      char t[32];
      std::snprintf(t, sizeof t, "%.9g", last.t_s);  // 2.01, not 2.0100000000000002
      it.why = std::string("the run ended at ") + t + " s, before its " + (never_held ? "deadline" : "window");
    } else {
      it.failed = true;
      it.first_fail_step = last.step;
      it.first_fail_t = last.t_s;
      it.why = !never_held                   ? "never evaluated: the quantity had no reading in its window"
               : c.kind == QuantityKind::log ? "no log line contained the text"
                                             : "never held";
    }
  }
}

void Expectations::not_run() {
  for (Item& it : items_) {
    if (it.failed) continue;
    it.skipped = true;
    it.why = "the run ended before its first step";
  }
}

bool Expectations::passed() const {
  for (const Item& it : items_)
    if (it.failed) return false;
  return true;
}

nlohmann::json Expectations::summary() const {
  nlohmann::json out = nlohmann::json::array();
  for (const Item& it : items_) {
    nlohmann::json j{{"name", it.c.name},
                     {"value", it.c.value},
                     {"that", it.that},
                     {"when", it.when},
                     {"verdict", it.failed    ? "FAIL"
                                 : it.skipped ? "SKIPPED"
                                              : "PASS"},
                     {"evaluated_steps", it.evaluated}};
    if (it.c.kind == QuantityKind::log)
      j["seen_at_step"] = it.held_once ? nlohmann::json(static_cast<std::uint64_t>(it.worst)) : nlohmann::json();
    else {
      j["worst"] = it.have_worst ? nlohmann::json(it.worst) : nlohmann::json();
      // how far inside its condition the worst value was (< 0: outside by that much), in
      // the value's unit: what a campaign compares across runs
      j["margin"] = it.have_worst && it.c.op != ExpectOp::matches ? nlohmann::json(it.worst_margin) : nlohmann::json();
    }
    j["first_failing_step"] = it.failed ? nlohmann::json(it.first_fail_step) : nlohmann::json();
    j["first_failing_time_s"] = it.failed ? nlohmann::json(it.first_fail_t) : nlohmann::json();
    if (!it.why.empty()) j["reason"] = it.why;
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace tether::runtime
