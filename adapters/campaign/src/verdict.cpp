// SPDX-License-Identifier: Apache-2.0
// Judging a finished run (docs/campaigns.md, "A run's verdict"): its exit status, and what it
// wrote into its folder (summary.json of a run, replay.json of a replay).
#include <sys/wait.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tether/process/child_process.hpp"
#include "tether/campaign/campaign.hpp"
#include "text_util.hpp"

namespace tether::campaign {

namespace fs = std::filesystem;
using adapters::ChildProcess;

namespace {

// the lines of a failed run's output worth quoting: its errors, not its log chatter
std::string error_lines(const std::string& output) {
  std::vector<std::string> lines;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty()) continue;
    if (line.find("] [info] ") != std::string::npos || line.find("] [debug] ") != std::string::npos ||
        line.find("] [trace] ") != std::string::npos)
      continue;
    // the count after a list of config errors
    if (line.size() < 16 && line.find(" error") != std::string::npos &&
        std::isdigit(static_cast<unsigned char>(line[0])))
      continue;
    lines.push_back(line);
  }
  const std::size_t from = lines.size() > 4 ? lines.size() - 4 : 0;
  std::string out;
  for (std::size_t i = from; i < lines.size(); ++i) out += (out.empty() ? "" : "; ") + lines[i];
  return out.empty() ? "(it printed nothing)" : out;
}

// a run's expectations (summary.json's `expectations`): every one's verdict and margin, and
// the failed ones' details
void expectation_failures(const nlohmann::json& summary, RunResult& r) {
  for (const auto& x : summary["expectations"]) {
    if (!x.is_object()) continue;
    ExpectationOutcome e{x.value("name", "?"), x.value("verdict", ""), std::nullopt};
    if (x.contains("margin") && x["margin"].is_number()) e.margin = x["margin"].get<double>();
    r.expectations.push_back(std::move(e));
    if (x.value("verdict", "") != "FAIL") continue;
    RunFailure f;
    f.name = x.value("name", "?");
    if (x.contains("first_failing_step") && x["first_failing_step"].is_number())
      f.step = x["first_failing_step"].get<std::uint64_t>();
    if (x.contains("first_failing_time_s") && x["first_failing_time_s"].is_number())
      f.time_s = x["first_failing_time_s"].get<double>();
    if (x.contains("worst") && x["worst"].is_number()) {
      f.worst = x["worst"].get<double>();
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s %.4g", x.value("when", "").rfind("eventually", 0) == 0 ? "closest" : "worst",
                    *f.worst);
      f.detail = buf;
    }
    if (x.contains("reason") && x["reason"].is_string())
      f.detail += (f.detail.empty() ? "" : "; ") + x["reason"].get<std::string>();
    r.failures.push_back(std::move(f));
  }
}

// a replay's failed comparisons (replay.json): states that differed, commands that diverged
void replay_failures(const nlohmann::json& summary, RunResult& r) {
  if (summary.contains("identical") && summary["identical"] == false) {
    RunFailure f;
    f.name = "replayed states match the recording";
    f.detail = summary.value("first_divergence", "");
    r.failures.push_back(std::move(f));
  }
  if (summary.contains("firmware_regression"))
    for (const auto& fr : summary["firmware_regression"]) {
      if (!fr.value("diverged", false)) continue;
      RunFailure f;
      f.name = "commands of endpoint \"" + fr.value("endpoint", "?") + "\" match the recorded firmware";
      if (fr.contains("first_divergent_step") && fr["first_divergent_step"].is_number())
        f.step = fr["first_divergent_step"].get<std::uint64_t>();
      if (fr.contains("new_firmware_failure"))
        f.detail = "the new firmware failed: " + fr["new_firmware_failure"].value("reason", "?");
      else if (fr.contains("channels"))
        for (const auto& ch : fr["channels"])
          if (f.step && ch.contains("first_divergent_step") && ch["first_divergent_step"] == *f.step) {
            char buf[160];
            const auto num = [](const nlohmann::json& v) { return v.is_number() ? v.get<double>() : NAN; };
            std::snprintf(buf, sizeof buf, "%s: recorded %.6g, new %.6g", ch.value("name", "?").c_str(),
                          num(ch.value("first_recorded", nlohmann::json())),
                          num(ch.value("first_new", nlohmann::json())));
            f.detail = buf;
            break;
          }
      r.failures.push_back(std::move(f));
    }
}

}  // namespace

std::string RunFailure::message() const {
  std::string m = name;
  char buf[96];
  if (step) {
    std::snprintf(buf, sizeof buf, ": first failing at step %llu", static_cast<unsigned long long>(*step));
    m += buf;
    if (time_s) {
      std::snprintf(buf, sizeof buf, " (t = %.3f s)", *time_s);
      m += buf;
    }
  } else {
    m += ": failed";
  }
  if (!detail.empty()) m += ", " + detail;
  return m;
}

const char* to_string(RunVerdict verdict) {
  switch (verdict) {
    case RunVerdict::pass: return "pass";
    case RunVerdict::fail: return "fail";
    case RunVerdict::not_run: return "not_run";
  }
  return "?";
}

RunResult not_run(const PlannedRun& plan, const std::string& reason) {
  RunResult r;
  r.plan = plan;
  r.verdict = RunVerdict::not_run;
  r.reason = reason;
  return r;
}

RunResult judge_run(const PlannedRun& plan, const RunEnd& end, const std::string& folder) {
  RunResult r;
  r.plan = plan;
  r.folder = folder;
  r.duration_s = end.duration_s;
  r.verdict = RunVerdict::fail;
  std::error_code ec;
  if (fs::exists(fs::path(folder) / "output.txt", ec)) r.log = (fs::path(folder) / "output.txt").string();
  if (!end.started) {
    r.reason = "could not start: " + end.start_error;
    return r;
  }
  const std::string what = plan.replay ? "tether replay" : "tether run";

  // what the run wrote: the session's summary, or the replay's result
  nlohmann::json summary;
  const fs::path file = fs::path(folder) / (plan.replay ? "replay.json" : "summary.json");
  if (fs::exists(file, ec)) {
    try {
      summary = nlohmann::json::parse(read_text(file));
    } catch (const nlohmann::json::exception&) {
      summary = nlohmann::json();
    }
  }
  if (!plan.replay && fs::exists(fs::path(folder) / "report.html", ec))
    r.report = (fs::path(folder) / "report.html").string();
  if (plan.replay && summary.is_object()) r.report = file.string();
  if (!plan.replay && fs::exists(fs::path(folder) / "recording.mcap", ec))
    r.recording = (fs::path(folder) / "recording.mcap").string();
  if (summary.is_object()) r.outcome = summary.value("outcome", "");
  const std::string summary_reason = summary.is_object() && summary.contains("reason") && summary["reason"].is_string()
                                         ? summary["reason"].get<std::string>()
                                         : "";

  // failed expectations (a run) or comparisons (a replay), whatever the exit code
  if (!plan.replay && summary.is_object() && summary.contains("expectations") && summary["expectations"].is_array())
    expectation_failures(summary, r);
  if (plan.replay && summary.is_object()) replay_failures(summary, r);

  const std::string timeout =
      end.timed_out ? "timed out after " + seconds_text(end.duration_s) + " s (run_timeout_s) and was stopped; " : "";
  if (!WIFEXITED(end.wait_status)) {
    r.reason = timeout + what + " " + ChildProcess::describe_status(end.wait_status) +
               (end.stopped ? " (the campaign was interrupted)" : "");
    return r;
  }
  const int code = WEXITSTATUS(end.wait_status);
  r.exit_code = code;
  if (code == 0 && !end.timed_out) {
    r.verdict = RunVerdict::pass;
    return r;
  }
  switch (code) {
    case 2: r.reason = "could not start (exit 2): " + error_lines(end.output_tail); break;
    case 3: r.reason = "an endpoint did not start (exit 3): " + error_lines(end.output_tail); break;
    case 1:
      if (plan.replay)
        r.reason = r.failures.empty() ? "the replay failed (exit 1): " + error_lines(end.output_tail)
                                      : "the replay diverged (exit 1)";
      else
        r.reason = "aborted (exit 1): " + (summary_reason.empty() ? error_lines(end.output_tail) : summary_reason);
      break;
    case 4:
      r.reason = "failed (exit 4): " + (summary_reason.empty() ? error_lines(end.output_tail) : summary_reason);
      break;
    case 5: r.reason = "completed with faults (exit 5): " + summary_reason; break;
    case 7:
      r.reason =
          "recording failed (exit 7): " + (summary_reason.empty() ? error_lines(end.output_tail) : summary_reason);
      break;
    case 6: {
      std::string names;
      for (const auto& f : r.failures) names += (names.empty() ? "" : ", ") + f.name;
      r.reason = std::to_string(r.failures.size()) + (r.failures.size() == 1 ? " expectation" : " expectations") +
                 " failed (exit 6): " + names;
      break;
    }
    case 130: {
      r.reason = "stopped (exit 130)";
      if (summary.is_object() && summary.contains("steps") && summary.contains("steps_planned"))
        r.reason += " after " + std::to_string(summary["steps"].get<std::uint64_t>()) + " of " +
                    std::to_string(summary["steps_planned"].get<std::uint64_t>()) + " steps";
      if (end.stopped) r.reason += ": the campaign was interrupted";
      break;
    }
    default: r.reason = what + " exited with status " + std::to_string(code) + ": " + error_lines(end.output_tail);
  }
  r.reason = timeout + r.reason;
  return r;
}

}  // namespace tether::campaign
