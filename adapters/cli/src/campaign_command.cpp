// SPDX-License-Identifier: Apache-2.0
// `tether test CAMPAIGN` and `tether test --merge DIR...` (docs/campaigns.md): the campaign
// itself is the campaign room (adapters/campaign/: campaign.hpp, its workers runner.hpp).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <thread>

#include "commands.hpp"
#include "tether/campaign/campaign.hpp"
#include "tether/campaign/runner.hpp"
#include "tether/report/report.hpp"
#include "tether/scenario/config.hpp"

namespace tether::cli {

namespace {

namespace fs = std::filesystem;

std::string local_time(const char* format) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char text[40];
  std::strftime(text, sizeof text, format, &tm);
  return text;
}

std::string default_out(const std::string& name) {
  const std::string base = "runs/" + name + "-" + local_time("%Y%m%d-%H%M%S");
  std::string dir = base;
  for (int i = 2; fs::exists(dir); ++i) dir = base + "-" + std::to_string(i);
  return dir;
}

// the table, the totals, where the results are; the exit code
int report(const campaign::CampaignResult& result, const std::string& out_dir, bool interrupted) {
  std::cout << campaign::verdict_table(result);
  char line[256];
  std::snprintf(line, sizeof line, "campaign \"%s\": %zu runs, %zu passed, %zu failed", result.name.c_str(),
                result.runs.size(), result.passed(), result.failed());
  std::cout << line;
  if (result.not_run() > 0) std::cout << ", " << result.not_run() << " not run";
  if (result.shard)
    std::cout << " (shard " << result.shard->first << "/" << result.shard->second << " of " << result.total_runs
              << " runs)";
  std::snprintf(line, sizeof line, " in %.1f s", result.wall_s);
  std::cout << line << (interrupted ? " - INTERRUPTED" : "")
            << (result.failed() > 0 ? " - FAIL" : (interrupted ? "" : " - PASS")) << '\n';
  std::cout << "  junit: " << (fs::path(out_dir) / "junit.xml").string() << '\n';
  std::cout << "  index: " << (fs::path(out_dir) / "index.html").string() << '\n';
  if (interrupted) return exit_stopped;
  return result.failed() > 0 ? exit_expectations_failed : exit_ok;
}

int merge(const TestOptions& options) {
  if (!options.campaign.empty() || !options.shard.empty() || !options.overrides.empty() ||
      !options.campaign_overrides.empty()) {
    std::cerr << "tether: --merge takes output folders only (no campaign file, --shard, --set or --campaign-set)\n";
    return exit_usage;
  }
  campaign::CampaignResult merged;
  try {
    merged = campaign::merge_campaign_results(options.merge);
  } catch (const std::exception& e) {
    std::cerr << "tether: " << e.what() << '\n';
    return exit_usage;
  }
  const std::string out = options.out_dir.empty() ? default_out(merged.name + "-merged") : options.out_dir;
  std::string error;
  if (!campaign::write_campaign_results(merged, out, &error)) {
    std::cerr << "tether: " << error << '\n';
    return exit_usage;
  }
  // a merged campaign passes when every one of its runs is there and passed
  return report(merged, out, false);
}

// a finished run's line: "[ 3/20] PASS  (1.2 s) name", and why it failed
void print_finished(const campaign::RunResult& r, std::size_t finished, std::size_t total) {
  char line[128];
  std::snprintf(line, sizeof line, "[%*zu/%zu] %s  ", static_cast<int>(std::to_string(total).size()), finished, total,
                r.verdict == campaign::RunVerdict::pass ? "PASS" : "FAIL");
  std::string why = r.reason;
  if (r.exit_code && *r.exit_code == 6 && !r.failures.empty()) why = r.failures.front().message();
  std::snprintf(line + std::strlen(line), sizeof line - std::strlen(line), "(%.1f s) ", r.duration_s);
  std::cerr << line << r.plan.name << (why.empty() ? "" : ": " + runtime::printable(why)) << '\n';
}

// `tether test --list`: each run's index and name, and how many of how many
void list_runs(const std::vector<campaign::PlannedRun>& all, const std::vector<campaign::PlannedRun>& runs,
               const std::optional<std::pair<std::size_t, std::size_t>>& shard) {
  const std::size_t width = std::to_string(all.empty() ? 0 : all.size() - 1).size() + 2;
  for (const auto& r : runs) {
    std::string index = std::to_string(r.index);
    index.resize(width, ' ');
    std::cout << index << runtime::printable(r.name) << '\n';
  }
  std::cout << runs.size();
  if (shard)
    std::cout << " of " << all.size() << " runs (shard " << shard->first << "/" << shard->second << ")\n";
  else
    std::cout << " runs\n";
}

}  // namespace

int test_command(const TestOptions& options) {
  if (!options.merge.empty()) return merge(options);
  if (options.campaign.empty()) {
    std::cerr << "tether: test needs a campaign file (or --merge DIR...)\n";
    return exit_usage;
  }
  campaign::Campaign campaign;
  try {
    campaign = campaign::load_campaign(options.campaign, options.campaign_overrides);
  } catch (const runtime::ConfigError& e) {
    for (const auto& line : e.errors()) std::cerr << line << '\n';
    std::cerr << e.count() << (e.count() == 1 ? " error" : " errors") << '\n';
    return exit_usage;
  }
  const std::vector<campaign::PlannedRun> all = campaign::expand_campaign(campaign, options.overrides);
  std::vector<campaign::PlannedRun> runs = all;
  campaign::CampaignResult result;
  if (!options.shard.empty()) {
    std::size_t k = 0, n = 0;
    std::string error;
    if (!campaign::parse_shard(options.shard, k, n, &error)) {
      std::cerr << "tether: " << error << '\n';
      return exit_usage;
    }
    runs = campaign::shard_runs(all, k, n);
    result.shard = std::make_pair(k, n);
  }
  if (options.list) {
    list_runs(all, runs, result.shard);
    return exit_ok;
  }
  const std::string out_dir =
      options.out_dir.empty()
          ? default_out(campaign.name + (result.shard ? "-shard" + std::to_string(result.shard->first) + "of" +
                                                            std::to_string(result.shard->second)
                                                      : ""))
          : options.out_dir;
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) {
    std::cerr << "tether: cannot create the output folder " << out_dir << ": " << ec.message() << '\n';
    return exit_usage;
  }

  result.name = campaign.name;
  result.file = options.campaign;
  result.fingerprint = campaign::campaign_fingerprint(campaign, all);
  result.total_runs = all.size();
  result.started = local_time("%Y-%m-%dT%H:%M:%S%z");
  const unsigned cores = std::thread::hardware_concurrency();
  result.jobs = static_cast<int>(options.jobs.value_or(cores > 0 ? cores : 1));

  campaign::RunnerOptions runner;
  std::error_code self_ec;
  runner.program = fs::read_symlink("/proc/self/exe", self_ec).string();
  if (self_ec) runner.program = "/proc/self/exe";
  runner.jobs = static_cast<std::size_t>(result.jobs);
  runner.out_dir = fs::absolute(out_dir).lexically_normal().string();
  runner.run_timeout_s = campaign.run_timeout_s;
  runner.keep_passed_recordings = campaign.keep_passed_recordings;
  // the runs' reports share one copy of the charting library (131 kB each otherwise)
  std::string assets_error;
  if (runtime::write_report_assets((fs::path(runner.out_dir) / "assets").string(), &assets_error))
    runner.report_assets = "../assets";
  else
    std::cerr << "tether: " << assets_error << "; each report carries its own copy\n";
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t finished = 0;
  campaign::ResultsPacing pacing;
  // each finished run: a line, and the results so far on disk, paced (a campaign killed
  // outright still leaves them, a moment old)
  runner.on_finished = [&](const campaign::RunResult& r) {
    ++finished;
    result.runs.push_back(r);
    const auto now = std::chrono::steady_clock::now();
    if (pacing.due(now)) {
      std::sort(result.runs.begin(), result.runs.end(),
                [](const auto& a, const auto& b) { return a.plan.index < b.plan.index; });
      result.wall_s = std::chrono::duration<double>(now - t0).count();
      std::string error;
      if (!campaign::write_campaign_results(result, out_dir, &error)) std::cerr << "tether: " << error << '\n';
      pacing.wrote(now, std::chrono::steady_clock::now());
    }
    if (!options.quiet) print_finished(r, finished, runs.size());
  };

  std::cerr << "campaign \"" << campaign.name << "\": " << runs.size() << " runs";
  if (result.shard) std::cerr << " (shard " << options.shard << " of " << all.size() << ")";
  std::cerr << ", " << runner.jobs << " at a time, into " << out_dir << '\n';
  bool interrupted = false;
  try {
    result.runs = campaign::run_campaign(runs, runner, interrupted);
  } catch (const std::exception& e) {
    std::cerr << "tether: " << e.what() << '\n';
    return exit_usage;
  }
  result.interrupted = interrupted;
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string error;
  if (!campaign::write_campaign_results(result, out_dir, &error)) {
    std::cerr << "tether: " << error << '\n';
    return exit_recording_failed;
  }
  return report(result, out_dir, interrupted);
}

}  // namespace tether::cli
