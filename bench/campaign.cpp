// SPDX-License-Identifier: Apache-2.0
// What `tether test` costs and gains: 64 short in-process runs of
// config/scenarios/in_process_depth_hold.yaml (seeds 1..64, 200 steps, unpaced).
//   baseline: the same 64 runs as 64 `tether run` processes one after another, each
//     timed from fork to exit; their sum is the work the campaign has to do
//   -j 1: the campaign with one worker; runs per second, and its wall time over the sum
//     (the campaign's own overhead: spawning, watching, judging, writing the results)
//   -j all cores: runs per second, speed-up over -j 1, and parallel efficiency =
//     sum of single-run times / (wall time x workers)
// Prints figures only; --quick uses 4 runs of 50 steps (the test suite smoke-runs it);
// --runs N sets the number of runs (default 64: four waves of 16 workers, so the first
// wave's start and the last wave's end weigh in, as in a small campaign).
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

}  // namespace

int main(int argc, char** argv) {
  const bool quick = tether::bench::quick_mode(argc, argv);
  std::size_t runs = quick ? 4 : 64;
  for (int i = 1; i < argc; ++i) {
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
  std::filesystem::remove_all(dir);
  return 0;
}
