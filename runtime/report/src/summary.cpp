// SPDX-License-Identifier: Apache-2.0
// The summary at the top of the page and its tables: the verdict and goals, the expectations,
// the run's figures, its endpoints, feedback processors and vehicles; and the events table.
#include <cstdint>
#include <cstdio>
#include <set>

#include "page.hpp"

namespace tether::runtime::report_detail {

namespace {

// the verdict and the goals before anything else: what a reader opens the report for
void verdict_section(Page& p, const json& s) {
  const std::string verdict = jstr(s, "verdict"), outcome = jstr(s, "outcome");
  const bool ok = outcome == "completed" && verdict != "fail";
  std::string line = "<b>" + std::string(verdict == "pass" ? "PASS" : verdict == "fail" ? "FAIL" : outcome) + "</b>";
  line += verdict.empty() ? " (no expectations)" : " &mdash; session " + esc(outcome);
  if (s.contains("expectations") && s["expectations"].is_array()) {
    std::size_t passed = 0;
    for (const auto& x : s["expectations"]) passed += jstr(x, "verdict") == "PASS";
    line += ", " + std::to_string(passed) + " of " + std::to_string(s["expectations"].size()) + " expectations pass";
  }
  p.add("<div class=\"banner " + std::string(ok ? "ok" : "bad") + "\">" + line + "</div>");
  if (!s.contains("goals") || !s["goals"].is_array() || s["goals"].empty()) return;
  p.add(
      "<table><tr><th>vehicle</th><th>target depth</th><th>final depth</th><th>error</th><th>target "
      "heading</th><th>final heading</th><th>error</th></tr>");
  for (const auto& g : s["goals"]) {
    auto m = [&](const char* k, int decimals, const char* unit) {
      return g.contains(k) && g[k].is_number() ? fmt(g[k].get<double>(), decimals) + unit : std::string("&ndash;");
    };
    // depth to the centimetre, heading to a tenth of a degree: what the sensors resolve
    p.add("<tr><td>" + esc(jstr(g, "vehicle")) + "</td><td class=\"n\">" + m("target_depth_m", 2, " m") +
          "</td><td class=\"n\">" + m("final_depth_m", 2, " m") + "</td><td class=\"n\">" +
          m("depth_error_m", 2, " m") + "</td><td class=\"n\">" + m("target_heading_deg", 1, "°") +
          "</td><td class=\"n\">" + m("final_heading_deg", 1, "°") + "</td><td class=\"n\">" +
          m("heading_error_deg", 1, "°") + "</td></tr>");
  }
  p.add("</table>");
}

// the verdict of `expect:` first: what a test run is for
void expectations_section(Page& p, const json& s) {
  if (!s.contains("expectations") || !s["expectations"].is_array()) return;
  const json& list = s["expectations"];
  std::size_t failed = 0, skipped = 0;
  for (const auto& x : list) {
    failed += jstr(x, "verdict") == "FAIL";
    skipped += jstr(x, "verdict") == "SKIPPED";
  }
  p.add("<h2>Expectations</h2><p class=\"" + std::string(failed ? "outcome-failed" : "outcome-completed") + "\">" +
        std::to_string(list.size() - failed - skipped) + " of " + std::to_string(list.size()) + " passed" +
        (skipped ? ", " + std::to_string(skipped) + " skipped (the run ended before their window)" : std::string()) +
        (failed ? " &mdash; the run FAILED" : "") + "</p>");
  p.add(
      "<table><tr><th>verdict</th><th>expectation</th><th>value</th><th>condition</th><th>when</th><th>worst "
      "(closest)</th><th>first failing step</th><th>note</th></tr>");
  for (const auto& x : list) {
    const std::string verdict = jstr(x, "verdict");
    const bool has_worst = x.contains("worst") && x["worst"].is_number();
    const char* cls = verdict == "PASS"   ? "outcome-completed"
                      : verdict == "FAIL" ? "outcome-failed"
                                          : "outcome-stopped";
    p.add("<tr><td class=\"" + std::string(cls) + "\">" + esc(verdict) + "</td><td>" + esc(jstr(x, "name")) +
          "</td><td><code>" + esc(jstr(x, "value")) + "</code></td><td>" + esc(jstr(x, "that")) + "</td><td>" +
          esc(jstr(x, "when")) + "</td><td>" + (has_worst ? fmt(x["worst"].get<double>(), 4) : std::string("&ndash;")) +
          "</td><td>" +
          (x.contains("first_failing_step") && x["first_failing_step"].is_number()
               ? esc(jstr(x, "first_failing_step")) + " (t = " + fmt(jnum(x, "first_failing_time_s"), 3) + " s)"
               : std::string("&ndash;")) +
          "</td><td>" + esc(jstr(x, "reason")) + "</td></tr>");
  }
  p.add("</table>");
}

// the run in figures: outcome, steps, time, step time, overruns, the final state hash and
// whatever else a newer summary holds at its top level
void run_table(Page& p, const json& s) {
  const std::string outcome = jstr(s, "outcome");
  p.add("<table class=\"kv\">");
  auto row = [&](const std::string& k, const std::string& v, const std::string& cls = "") {
    p.add("<tr><th>" + esc(k) + "</th><td" + (cls.empty() ? "" : " class=\"" + cls + "\"") + ">" + v + "</td></tr>");
  };
  // coloured by the verdict too: a session that completed but failed an expectation is red
  if (outcome == "completed" && jstr(s, "verdict") == "fail")
    row("outcome", "completed, an expectation failed", "outcome-failed");
  else
    row("outcome", esc(outcome), "outcome-" + esc(outcome));
  if (s.contains("reason")) row("reason", esc(jstr(s, "reason")));
  row("steps", esc(jstr(s, "steps")) + " of " + esc(jstr(s, "steps_planned")) + " planned");
  row("simulated time", fmt(jnum(s, "sim_time_s"), 3) + " s");
  row("wall time", fmt(jnum(s, "wall_time_s"), 3) + " s");
  const double rtf = jnum(s, "real_time_factor");
  row("real-time factor", fmt(jnum(s, "achieved_real_time_factor"), 2) + " achieved" +
                              (rtf > 0 ? ", target " + fmt(rtf, 2) : std::string(", target 0 (as fast as possible)")));
  if (s.contains("step_time_ns")) {
    const json& st = s["step_time_ns"];
    row("step time", "p50 " + fmt_us(jnum(st, "p50")) + ", p99 " + fmt_us(jnum(st, "p99")) + ", max " +
                         fmt_us(jnum(st, "max")) + ", mean " + fmt_us(jnum(st, "mean")));
  }
  const double reanchors = jnum(s, "reanchors");
  row("overruns", esc(jstr(s, "overruns")) +
                      (reanchors > 0 ? " (the pacer re-anchored " + esc(jstr(s, "reanchors")) + "×)" : std::string()));
  if (s.contains("physics_substeps")) row("physics sub-steps", esc(jstr(s, "physics_substeps")));
  if (s.contains("recording") && s["recording"].is_object())
    row("recorder dropped items", esc(jstr(s["recording"], "dropped_items")));
  if (s.contains("state_hash") && s["state_hash"].is_number_unsigned()) {  // recordings before it was text
    char hash[32];
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(s["state_hash"].get<std::uint64_t>()));
    row("final state hash", std::string("<code>") + hash + "</code>");
  } else if (s.contains("state_hash") && s["state_hash"].is_string()) {
    row("final state hash", "<code>" + esc(s["state_hash"].get<std::string>()) + "</code>");
  }
  // anything else at the top level (newer summaries)
  static const std::set<std::string> shown = {"scenario",
                                              "outcome",
                                              "reason",
                                              "steps",
                                              "steps_planned",
                                              "sim_time_s",
                                              "wall_time_s",
                                              "real_time_factor",
                                              "achieved_real_time_factor",
                                              "step_time_ns",
                                              "overruns",
                                              "reanchors",
                                              "physics_substeps",
                                              "recording",
                                              "state_hash",
                                              "endpoints",
                                              "feedback",
                                              "vehicles",
                                              "expectations"};
  for (const auto& [k, v] : s.items())
    if (!shown.count(k) && !v.is_structured()) row(k, esc(cell(v)));
  p.add("</table>");
}

// each endpoint's counters and round trips
void endpoints_table(Page& p, const json& s) {
  if (s.contains("endpoints") && s["endpoints"].is_array() && !s["endpoints"].empty()) {
    p.add(
        "<h3>Endpoints</h3><table><tr><th>endpoint</th><th>type</th><th>policy</th><th>deadline</th><th>replies</th>"
        "<th>late</th><th>misses</th><th>stale</th><th>corrupt</th><th>faults</th><th>round trip p50</th>"
        "<th>p99</th><th>max</th><th>details</th></tr>");
    static const std::set<std::string> known = {"name",   "type",  "policy",  "deadline_ms", "replies",      "late",
                                                "misses", "stale", "corrupt", "faults",      "round_trip_ns"};
    for (const json& e : s["endpoints"]) {
      if (!e.is_object()) continue;
      std::string details;
      for (const auto& [k, v] : e.items())
        if (!known.count(k)) details += (details.empty() ? "" : "<br>") + esc(k) + " = " + esc(cell(v));
      const json rt = e.contains("round_trip_ns") ? e["round_trip_ns"] : json::object();
      p.add("<tr><td>" + esc(jstr(e, "name")) + "</td><td>" + esc(jstr(e, "type")) + "</td><td>" +
            esc(jstr(e, "policy")) + "</td><td class=\"n\">" + fmt(jnum(e, "deadline_ms"), 3) + " ms</td>");
      for (const char* k : {"replies", "late", "misses", "stale", "corrupt", "faults"})
        p.add("<td class=\"n\">" + esc(jstr(e, k)) + "</td>");
      p.add("<td class=\"n\">" + fmt_us(jnum(rt, "p50")) + "</td><td class=\"n\">" + fmt_us(jnum(rt, "p99")) +
            "</td><td class=\"n\">" + fmt_us(jnum(rt, "max")) + "</td><td>" + details + "</td></tr>");
    }
    p.add("</table>");
  }
}

// each feedback processor's figures
void feedback_table(Page& p, const json& s) {
  if (s.contains("feedback") && s["feedback"].is_array() && !s["feedback"].empty()) {
    p.add(
        "<h3>Feedback processors</h3><table><tr><th>processor</th><th>type</th><th>phase</th><th>vehicle</th>"
        "<th>figures</th></tr>");
    for (const json& f : s["feedback"]) {
      if (!f.is_object()) continue;
      std::string details;
      for (const auto& [k, v] : f.items())
        if (k != "name" && k != "type" && k != "phase" && k != "vehicle")
          details += (details.empty() ? "" : "<br>") + esc(k) + " = " + esc(cell(v));
      p.add("<tr><td>" + esc(jstr(f, "name")) + "</td><td>" + esc(jstr(f, "type")) + "</td><td>" +
            esc(jstr(f, "phase")) + "</td><td>" + esc(jstr(f, "vehicle")) + "</td><td>" + details + "</td></tr>");
    }
    p.add("</table>");
  }
}

// where each vehicle ended
void vehicles_table(Page& p, const json& s) {
  if (s.contains("vehicles") && s["vehicles"].is_array() && !s["vehicles"].empty()) {
    p.add(
        "<h3>Vehicles at the end</h3><table><tr><th>vehicle</th><th>position (m)</th><th>depth</th>"
        "<th>heading</th></tr>");
    for (const json& v : s["vehicles"]) {
      if (!v.is_object()) continue;
      std::string pos = "–";
      if (v.contains("position_m") && v["position_m"].is_array() && v["position_m"].size() == 3) {
        const json& q = v["position_m"];
        pos = "(" + fmt(q[0].is_number() ? q[0].get<double>() : nan_v, 3) + ", " +
              fmt(q[1].is_number() ? q[1].get<double>() : nan_v, 3) + ", " +
              fmt(q[2].is_number() ? q[2].get<double>() : nan_v, 3) + ")";
      }
      p.add("<tr><td>" + esc(jstr(v, "name")) + "</td><td class=\"n\">" + pos + "</td><td class=\"n\">" +
            (v.contains("depth_m") ? fmt(jnum(v, "depth_m"), 4) + " m" : std::string("–")) + "</td><td class=\"n\">" +
            fmt(jnum(v, "heading_deg"), 1) + "°</td></tr>");
    }
    p.add("</table>");
  }
}

}  // namespace

void summary_section(Page& p, const Collected& c, const ReportOptions& o) {
  if (c.summary) verdict_section(p, *c.summary);
  if (c.summary) expectations_section(p, *c.summary);
  faults_section(p, c, o);
  p.add("<h2>Summary</h2>");
  if (!c.summary) {
    p.add(
        "<table class=\"kv\"><tr><th>outcome</th><td class=\"outcome-truncated\">session did not finish "
        "(truncated)</td></tr>");
    p.add("<tr><th>steps recorded</th><td>" + std::to_string(c.steps) + "</td></tr></table>");
    p.add(
        "<p>The recording has no session summary: the recorder was stopped before the session ended "
        "(killed, crashed or power lost). Everything up to the last flushed chunk is shown below.</p>");
    return;
  }
  const json& s = *c.summary;
  run_table(p, s);
  endpoints_table(p, s);
  feedback_table(p, s);
  vehicles_table(p, s);
}

void events_section(Page& p, const Collected& c, const ReportOptions& o) {
  p.add("<h2>Events</h2>");
  if (c.events.empty()) {
    p.add("<p>No events (misses, faults, aborts, firmware log lines) were recorded.</p>");
    return;
  }
  p.add("<table><tr><th>time (s)</th><th>level</th><th>source</th><th>message</th></tr>");
  std::size_t shown = 0;
  for (const EventRow& e : c.events) {
    if (shown++ >= o.max_events) break;
    const std::string lvl = level_name(e.level);
    p.add("<tr><td class=\"n\">" + fmt(e.t_s, 3) + "</td><td class=\"lvl-" + esc(lvl) + "\">" + esc(lvl) + "</td><td>" +
          esc(e.name) + "</td><td>" + esc(e.message) + "</td></tr>");
  }
  p.add("</table>");
  if (c.events.size() > o.max_events)
    p.add("<p>… and " + std::to_string(c.events.size() - o.max_events) + " more (tether info lists the count).</p>");
}

}  // namespace tether::runtime::report_detail
