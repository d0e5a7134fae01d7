// SPDX-License-Identifier: Apache-2.0
#include "summary_text.hpp"

#include <cstdint>
#include <cstdio>
#include <string>

namespace tether::cli {

namespace {

std::string us(double ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f µs", ns / 1000.0);
  return buf;
}

// an estimator's parameters, one per line: value, sigma, whether the data identified it and,
// when an in-process stand-in knows it, the hidden truth beside it (docs/feedback.md)
void print_estimates(std::ostream& out, const nlohmann::json& f, const nlohmann::json& s) {
  char line[256];
  if (f.value("misfit", false)) {
    std::snprintf(line, sizeof line,
                  "    model misfit: the residuals are %.3g times the stated noise (with their correlation): the "
                  "estimates are the best fit of a model that cannot represent the vehicle, none is identified\n",
                  f.value("noise_scale", 0.0));
    out << line;
  }
  // the batch refit (refit_every_s): how many were taken, and why one could not be
  if (f.contains("refits") && f["refits"].is_number()) {
    std::snprintf(line, sizeof line, "    batch refits taken: %llu (the last over %d windows), failed: %llu\n",
                  static_cast<unsigned long long>(f.value("refits", std::uint64_t{0})), f.value("refit_windows", 0),
                  static_cast<unsigned long long>(f.value("refit_failures", std::uint64_t{0})));
    out << line;
    if (f.contains("refit_error") && f["refit_error"].is_string())
      out << "      the last failed: " << f["refit_error"].get<std::string>() << '\n';
  }
  // the truth, from a stand_in endpoint's summary: the vehicle's first body
  const nlohmann::json* truth = nullptr;
  const std::string vehicle = f.value("vehicle", "") + ".";
  if (s.contains("endpoints"))
    for (const auto& e : s["endpoints"])
      if (e.contains("hidden_truth") && e["hidden_truth"].is_object())
        for (const auto& [body, values] : e["hidden_truth"].items())
          if (!truth && body.rfind(vehicle, 0) == 0) truth = &values;
  const auto& sd = f.contains("stddev") ? f["stddev"] : nlohmann::json();
  const auto& id = f.contains("identified") ? f["identified"] : nlohmann::json();
  for (const auto& [key, value] : f["estimates"].items()) {
    if (!value.is_number()) continue;
    std::snprintf(line, sizeof line, "    %-20s %10.4g", key.c_str(), value.get<double>());
    out << line;
    const bool has_sd = sd.is_object() && sd.contains(key) && sd[key].is_number();
    if (has_sd) {
      std::snprintf(line, sizeof line, " ± %-9.2g", sd[key].get<double>());
      out << line;
    }
    if (id.is_object() && id.contains(key) && id[key].is_boolean())
      out << (id[key].get<bool>() ? "  identified" : "  not identified");
    if (truth && truth->contains(key) && (*truth)[key].is_number()) {
      const double t = (*truth)[key].get<double>();
      std::snprintf(line, sizeof line, "  (hidden truth %.4g", t);
      out << line;
      if (has_sd && sd[key].get<double>() > 0) {
        std::snprintf(line, sizeof line, ", %+.1f sigma", (value.get<double>() - t) / sd[key].get<double>());
        out << line;
      }
      out << ')';
    }
    // which thruster lag ran: a filter on the whole input or the rotors slower (docs/feedback.md)
    if (key == "thruster_lag_s" && f.contains("thruster_lag_model") && f["thruster_lag_model"].is_string())
      out << "  [" << f["thruster_lag_model"].get<std::string>() << ']';
    out << '\n';
  }
  // with the added mass considered: what the data pin down, over the effective mass
  if (f.contains("combinations") && f["combinations"].is_object() && !f["combinations"].empty()) {
    out << "    over the effective mass m (1 + added mass), as the data pin them down:\n";
    for (const auto& [key, c] : f["combinations"].items()) {
      if (!c.is_object() || !c.contains("value") || !c["value"].is_number()) continue;
      std::snprintf(line, sizeof line, "    %-36s %10.4g ± %-9.2g\n", key.c_str(), c["value"].get<double>(),
                    c.value("stddev", 0.0));
      out << line;
    }
  }
  // what the trial left weak, and the manoeuvre that would strengthen it
  if (f.contains("weak") && f["weak"].is_array())
    for (const auto& w : f["weak"]) {
      if (!w.is_object() || !w.contains("loadings") || !w["loadings"].is_object()) continue;
      std::snprintf(line, sizeof line, "    weak (sigma shrunk %.2gx):", w.value("shrink", 1.0));
      out << line;
      for (const auto& [name, l] : w["loadings"].items())
        if (l.is_number()) {
          std::snprintf(line, sizeof line, " %+.2f %s", l.get<double>(), name.c_str());
          out << line;
        }
      out << "\n      strengthen with: " << w.value("advice", std::string()) << '\n';
    }
}

// the first line: outcome, steps, times; the reason; the recorder's drops; step time
void print_header(const nlohmann::json& s, std::ostream& out) {
  char line[512];
  std::snprintf(line, sizeof line,
                "session \"%s\" %s: %llu of %llu steps, %.3f s sim time in %.3f s wall (real-time factor %.2f achieved",
                s["scenario"].get<std::string>().c_str(), s["outcome"].get<std::string>().c_str(),
                static_cast<unsigned long long>(s["steps"].get<std::uint64_t>()),
                static_cast<unsigned long long>(s["steps_planned"].get<std::uint64_t>()), s["sim_time_s"].get<double>(),
                s["wall_time_s"].get<double>(), s["achieved_real_time_factor"].get<double>());
  out << line;
  if (s["real_time_factor"].get<double>() > 0) out << ", target " << s["real_time_factor"].get<double>();
  out << ")\n";
  if (s.contains("reason"))  // "aborted: ..." or "failed: ..."
    out << "  " << s["outcome"].get<std::string>() << ": " << s["reason"].get<std::string>() << '\n';
  if (s.contains("recording") && s["recording"].contains("write_error") &&
      s["recording"].value("on_write_error", "") == "continue")
    out << "  WARNING: nothing was recorded after step " << s["recording"].value("write_failed_after_step", 0) << ": "
        << s["recording"]["write_error"].get<std::string>() << " (recording.on_write_error: continue)\n";
  if (s.contains("recording") && s["recording"].value("dropped_items", 0) > 0)
    out << "  warning: the recorder dropped " << s["recording"]["dropped_items"]
        << " items (queue full); replay of this recording will stop at the first gap\n";
  const auto& st = s["step_time_ns"];
  out << "  step time p50 " << us(st["p50"].get<double>()) << ", p99 " << us(st["p99"].get<double>()) << ", max "
      << us(st["max"].get<double>()) << "; overruns " << s["overruns"].get<std::uint64_t>() << "; physics sub-steps "
      << s["physics_substeps"].get<std::uint64_t>();
  if (s.value("physics_threads", 1) > 1) out << " on " << s["physics_threads"].get<int>() << " threads";
  out << '\n';
}

// one line per endpoint: its counters and round trip, its fault, a depth hold's result
void print_endpoints(const nlohmann::json& s, std::ostream& out) {
  char line[512];
  for (const auto& e : s["endpoints"]) {
    out << "  endpoint " << e["name"].get<std::string>() << " (" << e["type"].get<std::string>() << ", policy "
        << e["policy"].get<std::string>() << ", deadline " << e["deadline_ms"].get<double>() << " ms): replies "
        << e["replies"] << ", misses " << e["misses"] << ", late " << e["late"] << ", stale " << e["stale"]
        << ", corrupt " << e["corrupt"] << ", faults " << e["faults"]
        << (e.value("implausible", 0) > 0 ? ", implausible " + std::to_string(e["implausible"].get<std::uint64_t>())
                                          : "")
        << "; round trip p50 " << us(e["round_trip_ns"]["p50"].get<double>()) << ", p99 "
        << us(e["round_trip_ns"]["p99"].get<double>()) << '\n';
    if (e.contains("fault")) out << "    fault: " << e["fault"].get<std::string>() << '\n';
    if (e.contains("depth_error_m")) {
      std::snprintf(line, sizeof line, "    depth hold: target %.3f m, final %.4f m, final depth error %+.4f m\n",
                    e["target_depth_m"].get<double>(), e["final_depth_m"].get<double>(),
                    e["depth_error_m"].get<double>());
      out << line;
    }
  }
}

// refused actuator commands, and each injected fault's activations
void print_devices_and_faults(const nlohmann::json& s, std::ostream& out) {
  char line[512];
  if (s.contains("devices") && s["devices"].value("invalid_commands", 0) > 0)
    out << "  devices: " << s["devices"]["invalid_commands"] << " actuator commands refused, of them "
        << s["devices"].value("nonfinite_commands", 0) << " NaN/Inf (the previous command stayed; see the events)\n";
  if (s.contains("faults"))
    for (const auto& f : s["faults"]) {
      const auto& acts = f["activations"];
      out << "  fault " << f["name"].get<std::string>() << ": active " << f["active_steps"].get<std::uint64_t>()
          << " steps in " << f["activation_count"].get<std::uint64_t>() << " activation"
          << (f["activation_count"] == 1 ? "" : "s");
      if (!acts.empty()) {
        std::snprintf(line, sizeof line, ", first at step %llu (t = %.3f s)",
                      acts[0]["start_step"].get<unsigned long long>(), acts[0]["start_s"].get<double>());
        out << line;
      }
      out << '\n';
    }
}

// the verdicts of `expect:`
void print_expectations(const nlohmann::json& s, std::ostream& out) {
  char line[512];
  if (s.contains("expectations")) {
    std::size_t failed = 0, skipped = 0;
    for (const auto& x : s["expectations"]) {
      failed += x["verdict"] == "FAIL";
      skipped += x["verdict"] == "SKIPPED";
    }
    out << "  expectations: " << s["expectations"].size() - failed - skipped << " of " << s["expectations"].size()
        << " passed"
        << (skipped ? ", " + std::to_string(skipped) + " skipped (the run ended before it could judge them)" : "")
        << (failed ? " - FAIL" : "") << '\n';
    for (const auto& x : s["expectations"]) {
      out << "    " << x["verdict"].get<std::string>() << "  " << x["name"].get<std::string>();
      if (x.contains("worst") && !x["worst"].is_null()) {
        std::snprintf(line, sizeof line, "; %s %.4g",
                      x["when"].get<std::string>().rfind("eventually", 0) == 0 ? "closest" : "worst",
                      x["worst"].get<double>());
        out << line;
      }
      if (!x["first_failing_step"].is_null()) {
        std::snprintf(line, sizeof line, "; first failing at step %llu (t = %.3f s)",
                      x["first_failing_step"].get<unsigned long long>(), x["first_failing_time_s"].get<double>());
        out << line;
      }
      if (x.contains("reason")) out << "; " << x["reason"].get<std::string>();
      out << '\n';
    }
  }
}

// each vehicle's final pose, then the scenario's goals against it
void print_vehicles_and_goals(const nlohmann::json& s, std::ostream& out) {
  char line[512];
  for (const auto& v : s["vehicles"]) {
    const auto& p = v["position_m"];
    std::snprintf(line, sizeof line, "  vehicle %s: position (%.3f, %.3f, %.3f) m, heading %.1f° (compass)",
                  v["name"].get<std::string>().c_str(), p[0].get<double>(), p[1].get<double>(), p[2].get<double>(),
                  v["heading_deg"].get<double>());
    out << line;
    if (v.contains("depth_m")) {
      std::snprintf(line, sizeof line, ", depth %.4f m", v["depth_m"].get<double>());
      out << line;
    }
    out << '\n';
  }
  // the scenario's goals: each vehicle's final depth and heading against them
  if (s.contains("goals"))
    for (const auto& g : s["goals"]) {
      out << "  goal " << g["vehicle"].get<std::string>() << ":";
      if (g.contains("depth_error_m")) {
        std::snprintf(line, sizeof line, " depth target %.3f m, final %.4f m, final depth error %+.4f m",
                      g["target_depth_m"].get<double>(), g["final_depth_m"].get<double>(),
                      g["depth_error_m"].get<double>());
        out << line << (g.contains("heading_error_deg") ? ";" : "");
      }
      if (g.contains("heading_error_deg")) {
        std::snprintf(line, sizeof line, " heading target %.1f°, final %.1f°, error %+.1f°",
                      g["target_heading_deg"].get<double>(), g["final_heading_deg"].get<double>(),
                      g["heading_error_deg"].get<double>());
        out << line;
      }
      out << '\n';
    }
}

// what loop.realtime got, and what the feedback processors did
void print_realtime_and_feedback(const nlohmann::json& s, std::ostream& out) {
  char line[512];
  // loop.realtime: what the system granted the loop thread
  if (s.contains("realtime") && s["realtime"].is_object())
    for (const auto& [option, status] : s["realtime"].items())
      out << "  realtime " << option << ": " << (status.is_string() ? status.get<std::string>() : status.dump())
          << '\n';
  // feedback processors: what they did and, for estimators, what they learned
  if (s.contains("feedback"))
    for (const auto& f : s["feedback"]) {
      out << "  feedback " << f.value("name", "?") << " (" << f.value("type", "?") << ", " << f.value("phase", "?")
          << ", vehicle " << f.value("vehicle", "?") << ")";
      if (f.contains("updates")) out << ": updates " << f["updates"];
      if (f.contains("rejected")) out << ", rejected " << f["rejected"];
      if (f.contains("mean_nis") && f["mean_nis"].is_number()) {
        std::snprintf(line, sizeof line, ", mean NIS %.2f", f["mean_nis"].get<double>());
        out << line;
      }
      out << '\n';
      if (f.contains("estimates") && f["estimates"].is_object()) print_estimates(out, f, s);
    }
}

// loop.profile_phases, and the final state's hash
void print_phases_and_hash(const nlohmann::json& s, std::ostream& out) {
  char line[512];
  // loop.profile_phases: where a step's wall time went, phase by phase
  if (s.contains("phase_profile")) {
    const auto& p = s["phase_profile"];
    out << "  phases (wall time per step, loop.profile_phases):\n";
    for (const auto& name : p["order"]) {
      const auto& ph = p["phases"][name.get<std::string>()];
      std::snprintf(line, sizeof line, "    %-10s %10.0f ns %6.1f %%   max %9.0f ns\n", name.get<std::string>().c_str(),
                    ph["mean_ns_per_step"].get<double>(), 100 * ph["share"].get<double>(),
                    static_cast<double>(ph["max_ns"].get<std::uint64_t>()));
      out << line;
    }
  }
  if (s.contains("state_hash")) out << "  final state hash " << s["state_hash"].get<std::string>() << '\n';
}

}  // namespace

void print_summary_text(const nlohmann::json& s, std::ostream& out) {
  print_header(s, out);
  print_endpoints(s, out);
  print_devices_and_faults(s, out);
  print_expectations(s, out);
  print_vehicles_and_goals(s, out);
  print_realtime_and_feedback(s, out);
  print_phases_and_hash(s, out);
}

}  // namespace tether::cli
