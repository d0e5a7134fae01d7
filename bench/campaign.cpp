// SPDX-License-Identifier: Apache-2.0
// What `tether test` costs and gains: 64 short in-process runs of
// config/scenarios/in_process_depth_hold.yaml (seeds 1..64, 200 steps, unpaced).
//   baseline: the same 64 runs as 64 `tether run` processes one after another, each
//     timed from fork to exit; their sum is the work the campaign has to do
//   -j 1: the campaign with one worker; runs per second, and its wall time over the sum
//     (the campaign's own overhead: spawning, watching, judging, writing the results)
//   -j all cores: runs per second, speed-up over -j 1, and parallel efficiency =
//     sum of single-run times / (wall time x workers)
//   merge: `tether test --merge` of synthetic slices (a real run's record of this campaign,
//     renumbered) at 10 and 100 slices of 100 and 1,000 runs: seconds, microseconds per run
//     and how that grows (1.00: linear), the cost on a cluster's merge job (docs/campaigns.md)
// Prints figures only; --quick uses 4 runs of 50 steps and small merges (the test suite
// smoke-runs it); --runs N sets the number of runs (default 64: four waves of 16 workers, so
// the first wave's start and the last wave's end weigh in, as in a small campaign);
// --merge-only measures the merge alone.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_util.hpp"
#include "test_paths.hpp"

namespace bench = tether::bench;
using tether::bench::Clock;
using tether::bench::seconds_since;

namespace {

const std::string tether_exe = TETHER_BINARY_DIR + "/tether";
const std::string scenario = TETHER_SOURCE_DIR + "/config/scenarios/in_process_depth_hold.yaml";

// runs argv to completion with stdout and stderr to /dev/null; its exit code, or -1
int run_quietly(const std::vector<std::string>& args) {
  std::string command;
  for (const auto& a : args) command += "'" + a + "' ";
  const int status = std::system((command + ">/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct CampaignRun {
  double wall_s = 0;
  double runs_per_s = 0;
  std::size_t passed = 0;
  double sum_run_s = 0;  // the runs' own durations as the campaign measured them
};

CampaignRun run_campaign(const std::string& file, const std::string& out, unsigned jobs, std::size_t runs) {
  const auto t0 = Clock::now();
  const int code = run_quietly({tether_exe, "test", file, "-j", std::to_string(jobs), "-q", "--out", out});
  CampaignRun r;
  r.wall_s = seconds_since(t0);
  r.runs_per_s = static_cast<double>(runs) / r.wall_s;
  std::ifstream in(out + "/campaign.json");
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_discarded()) {
    r.passed = j.value("passed", std::size_t{0});
    for (const auto& x : j["runs"]) r.sum_run_s += x.value("duration_s", 0.0);
  }
  if (code != 0) std::printf("  (the campaign exited %d: %zu of %zu runs passed)\n", code, r.passed, runs);
  return r;
}

// `tether test --merge` of `slices` slice folders of `per_slice` runs each, made from `result`
// (a campaign.json of this campaign): its first run renumbered as run i of slice i mod n;
// the merge's wall time in seconds, or a negative number if it failed
double time_merge(const nlohmann::json& result, const std::filesystem::path& dir, std::size_t slices,
                  std::size_t per_slice) {
  std::filesystem::remove_all(dir);
  const nlohmann::json& model = result["runs"][0];
  std::vector<std::string> args = {tether_exe, "test", "--merge"};
  for (std::size_t k = 1; k <= slices; ++k) {
    nlohmann::json slice = result;
    slice["total_runs"] = slices * per_slice;
    slice["shard"] = {{"k", k}, {"n", slices}};
    slice["passed"] = per_slice;
    slice["failed"] = 0;
    slice["runs"] = nlohmann::json::array();
    for (std::size_t r = 0; r < per_slice; ++r) {
      nlohmann::json run = model;
      const std::size_t index = r * slices + (k - 1);
      run["index"] = index;
      run["name"] = "seed " + std::to_string(index + 1);
      run["folder"] = bench::format("%06zu-seed-%zu", index, index + 1);
      slice["runs"].push_back(std::move(run));
    }
    const auto folder = dir / ("shard-" + std::to_string(k));
    std::filesystem::create_directories(folder);
    std::ofstream(folder / "campaign.json") << slice.dump();
    args.push_back(folder.string());
  }
  args.insert(args.end(), {"--out", (dir / "all").string(), "-q"});
  const auto t0 = Clock::now();
  const int code = run_quietly(args);
  const double wall = seconds_since(t0);
  std::ifstream in(dir / "all" / "campaign.json");
  const auto merged = nlohmann::json::parse(in, nullptr, false);
  const bool whole = !merged.is_discarded() && merged["runs"].size() == slices * per_slice &&
                     merged.value("passed", std::size_t{0}) == slices * per_slice;
  std::filesystem::remove_all(dir);
  return code == 0 && whole ? wall : -1;
}

// the merge at several sizes: per-run cost and its growth
void merge_figures(const nlohmann::json& result, const std::filesystem::path& dir, bool quick) {
  const std::vector<std::pair<std::size_t, std::size_t>> sizes =
      quick ? std::vector<std::pair<std::size_t, std::size_t>>{{2, 5}, {4, 10}}
            : std::vector<std::pair<std::size_t, std::size_t>>{{10, 100}, {10, 1000}, {100, 100}, {100, 1000}};
  std::printf("  merge of synthetic slices (each run's record %zu bytes of JSON):\n", result["runs"][0].dump().size());
  double first_us = 0, last_s = 0, last_us = 0;
  for (const auto& [slices, per_slice] : sizes) {
    const double s = time_merge(result, dir, slices, per_slice);
    if (s < 0) {
      std::printf("    %zu slices of %zu runs: the merge failed!\n", slices, per_slice);
      return;
    }
    const double us = s / static_cast<double>(slices * per_slice) * 1e6;
    if (first_us == 0) first_us = us;
    last_s = s;
    last_us = us;
    std::printf("    %3zu slices of %4zu runs (%6zu): %7.3f s, %6.1f us per run\n", slices, per_slice,
                slices * per_slice, s, us);
  }
  const auto [slices, per_slice] = sizes.back();
  std::printf("    per-run cost at %zu runs / at %zu runs: %.2f (1.00: linear)\n", slices * per_slice,
              sizes.front().first * sizes.front().second, last_us / first_us);
  bench::figure(bench::format("campaign merge of %zu runs (%zu slices)", slices * per_slice, slices),
                bench::format("%.2f s (%.0f us per run; %.2fx the per-run cost of the smallest merge)", last_s, last_us,
                              last_us / first_us),
                "<= 10 s, linear");
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = tether::bench::quick_mode(argc, argv);
  std::size_t runs = quick ? 4 : 64;
  bool merge_only = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--merge-only") merge_only = true;
    if (std::string(argv[i]) != "--runs") continue;
    char* end = nullptr;
    const long n = i + 1 < argc ? std::strtol(argv[i + 1], &end, 10) : 0;
    if (end == nullptr || *end != '\0' || n < 1 || n > 100000) {
      std::fprintf(stderr, "campaign: --runs takes a whole number from 1 to 100000, got %s\n",
                   i + 1 < argc ? argv[i + 1] : "nothing");
      return 2;
    }
    runs = static_cast<std::size_t>(n);
  }
  const int steps = quick ? 50 : 200;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const unsigned physical = bench::physical_cores();
  const auto dir = std::filesystem::temp_directory_path() / ("tether_bench_campaign_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);

  const std::string file = (dir / "bench.yaml").string();
  std::ofstream(file) << "name: bench\nscenarios: [" << scenario << "]\nseeds: {first: 1, count: " << runs
                      << "}\nset: {loop.real_time_factor: 0, loop.steps: " << steps << "}\n";

  if (merge_only) {
    // a campaign of two runs gives the record the synthetic slices are made of
    std::ofstream(dir / "two.yaml") << "name: bench\nscenarios: [" << scenario
                                    << "]\nseeds: {first: 1, count: 2}\nset: {loop.real_time_factor: 0, loop.steps: "
                                    << steps << "}\n";
    run_campaign((dir / "two.yaml").string(), (dir / "two").string(), 1, 2);
    std::ifstream in(dir / "two" / "campaign.json");
    merge_figures(nlohmann::json::parse(in), dir / "merge", quick);
    std::filesystem::remove_all(dir);
    return 0;
  }
  std::printf(
      "campaign benchmark: %zu in-process runs of %d steps (in_process_depth_hold.yaml), %u CPUs on %u physical "
      "cores\n",
      runs, steps, cores, physical);

  // baseline: one process after another, each timed
  double sum_s = 0;
  int baseline_failures = 0;
  for (std::size_t seed = 1; seed <= runs; ++seed) {
    const auto t0 = Clock::now();
    const int code = run_quietly({tether_exe, "run", scenario, "--quiet", "--set", "loop.real_time_factor=0", "--set",
                                  "loop.steps=" + std::to_string(steps), "--set", "loop.seed=" + std::to_string(seed),
                                  "--out", (dir / ("single-" + std::to_string(seed))).string()});
    sum_s += seconds_since(t0);
    baseline_failures += code != 0;
  }
  std::printf("  baseline: %zu single `tether run`s one after another: sum %.3f s, %.3f s per run, %.2f runs/s%s\n",
              runs, sum_s, sum_s / static_cast<double>(runs), static_cast<double>(runs) / sum_s,
              baseline_failures ? " (some failed!)" : "");

  const CampaignRun one = run_campaign(file, (dir / "j1").string(), 1, runs);
  std::printf(
      "  tether test -j 1:  wall %.3f s, %.2f runs/s, %zu/%zu passed; wall / baseline sum = %.3f "
      "(campaign overhead %+.1f %%)\n",
      one.wall_s, one.runs_per_s, one.passed, runs, one.wall_s / sum_s, (one.wall_s / sum_s - 1) * 100);
  const CampaignRun all = run_campaign(file, (dir / "jn").string(), cores, runs);
  std::printf(
      "  tether test -j %u:  wall %.3f s, %.2f runs/s, %zu/%zu passed; speed-up over -j 1 %.2fx; "
      "parallel efficiency (baseline sum / (wall x %u)) %.2f\n",
      cores, all.wall_s, all.runs_per_s, all.passed, runs, one.wall_s / all.wall_s, cores,
      sum_s / (all.wall_s * cores));
  std::printf(
      "  run durations as the campaign measured them: sum %.3f s at -j 1, %.3f s at -j %u (%.2fx: runs slow "
      "down when they share the cores)\n",
      one.sum_run_s, all.sum_run_s, cores, all.sum_run_s / one.sum_run_s);
  const double efficiency = sum_s / (all.wall_s * cores);
  std::string value =
      bench::format("%.2f (-j %u: %.1f runs/s, %.2fx -j 1", efficiency, cores, all.runs_per_s, one.wall_s / all.wall_s);
  // two hardware threads on a core share its units: the speed-up per physical core says how
  // much of what the machine has the campaign used
  if (physical < cores)
    value += bench::format("; %.2f per physical core, %u of them", sum_s / (all.wall_s * physical), physical);
  bench::figure("campaign throughput, parallel efficiency at -j all CPUs", value + ")", ">= 0.9");
  // the campaign process's own time per run (spawning, watching, judging, writing results)
  std::printf("  the campaign's own cost per run at -j 1: %.1f ms (wall - the runs' own durations, / runs)\n",
              (one.wall_s - one.sum_run_s) / static_cast<double>(runs) * 1e3);
  {
    std::ifstream in(dir / "j1" / "campaign.json");
    const auto result = nlohmann::json::parse(in, nullptr, false);
    if (!result.is_discarded() && !result["runs"].empty()) merge_figures(result, dir / "merge", quick);
  }
  std::filesystem::remove_all(dir);
  return 0;
}
