// SPDX-License-Identifier: Apache-2.0
// A long trial, as fast as it runs: config/scenarios/auv_sensors.yaml (an AUV with its
// sensors and the in-process depth law) at rtf 0 for N steps with recording on, in this
// process; then the tools a user runs on that recording, each in its own process.
//   memory: the process's resident set every N/10 steps (after warm-up it should stay flat;
//     goal <= 200 MB)
//   recording: bytes per step and per simulated hour
//   tether info, tether replay --verify, tether report on the recording: wall time and
//     peak resident set (ru_maxrss); memory that grows with the recording's length means the
//     tool loads it whole (goal: streaming, <= 500 MB whatever the length)
// Usage: soak [--quick] [--steps N] [--keep DIR]   (default 10^6 steps; --quick 20,000;
//   --keep leaves the recording in DIR). Figures only: nothing passes or fails on them.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_util.hpp"
#include "example_controllers.hpp"
#include "test_paths.hpp"
#include "tether/endpoints/endpoint_factory.hpp"
#include "tether/loop/recorder_inputs.hpp"
#include "tether/loop/session.hpp"
#include "tether/recording/recorder.hpp"

using namespace tether::runtime;
namespace bench = tether::bench;
namespace fs = std::filesystem;

namespace {

double rss_mb() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / 1e6;
}

struct Tool {
  int exit_code = -1;
  double wall_s = 0;
  double peak_mb = 0;
};

// runs argv (output to /dev/null) and measures it: wall time and peak resident set
Tool measure(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const auto t0 = bench::Clock::now();
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!std::freopen("/dev/null", "w", stdout) || !std::freopen("/dev/null", "w", stderr)) std::_Exit(126);
    ::execv(argv[0], argv.data());
    std::_Exit(127);
  }
  Tool t;
  int status = 0;
  rusage ru{};
  if (pid > 0 && ::wait4(pid, &status, 0, &ru) == pid) {
    t.wall_s = bench::seconds_since(t0);
    t.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    t.peak_mb = static_cast<double>(ru.ru_maxrss) / 1e3;  // kB on Linux
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  tether::examples::register_example_controllers();
  const bool quick = bench::quick_mode(argc, argv);
  long long steps = quick ? 20000 : 1000000;
  std::string keep;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--steps" && i + 1 < argc) {
      steps = std::atoll(argv[++i]);
    } else if (a == "--keep" && i + 1 < argc) {
      keep = argv[++i];
    } else if (a != "--quick") {
      std::fprintf(stderr, "usage: %s [--quick] [--steps N] [--keep DIR]\n", argv[0]);
      return 2;
    }
  }
  if (steps < 10) {
    std::fprintf(stderr, "soak: --steps takes a number of at least 10\n");
    return 2;
  }
  const fs::path dir =
      keep.empty() ? fs::temp_directory_path() / ("tether_bench_soak_" + std::to_string(getpid())) : fs::path(keep);
  fs::create_directories(dir);
  const std::string path = (dir / "soak.mcap").string();
  const Scenario sc = load_scenario(TETHER_SOURCE_DIR + "/config/scenarios/auv_sensors.yaml");
  SessionOptions options;
  options.steps = static_cast<std::uint64_t>(steps);
  options.real_time_factor = 0;
  const long long every = steps / 10;
  long long done = 0;
  std::vector<double> rss;
  const auto t0 = bench::Clock::now();
  options.after_step = [&](const WorldState&) {
    if (++done % every == 0) {
      rss.push_back(rss_mb());
      std::printf("  step %10lld  %8.1f s  resident %7.1f MB\n", done, bench::seconds_since(t0), rss.back());
      std::fflush(stdout);
    }
    return true;
  };
  std::printf("soak: %s at rtf 0, %lld steps of %.0f ms (%.2f simulated hours), recording on\n",
              "config/scenarios/auv_sensors.yaml", steps, static_cast<double>(sc.loop.period_ns) * 1e-6,
              static_cast<double>(steps) * static_cast<double>(sc.loop.period_ns) * 1e-9 / 3600);
  std::printf("  before the session: resident %.1f MB\n", rss_mb());
  Session session(sc, tether::adapters::make_endpoints(sc), options);
  Recorder recorder(sc, recorder_inputs(session));
  std::string error;
  if (!recorder.open(path, &error)) {
    std::fprintf(stderr, "soak: %s\n", error.c_str());
    return 1;
  }
  session.set_recorder(&recorder);
  std::atomic<bool> stop{false};
  if (session.run(stop) != Outcome::completed) {
    std::fprintf(stderr, "soak: the session did not complete\n");
    return 1;
  }
  const double run_s = bench::seconds_since(t0);
  if (!recorder.close(session.summary(), &error)) {
    std::fprintf(stderr, "soak: %s\n", error.c_str());
    return 1;
  }
  const double bytes = static_cast<double>(fs::file_size(path));
  const double hours = static_cast<double>(steps) * static_cast<double>(sc.loop.period_ns) * 1e-9 / 3600;
  std::printf(
      "  %lld steps in %.1f s (%.0f steps/s); recording %.1f MB: %.0f B per step, %.2f GB per simulated hour; "
      "%llu records dropped\n",
      steps, run_s, static_cast<double>(steps) / run_s, bytes / 1e6, bytes / static_cast<double>(steps),
      bytes / hours / 1e9, static_cast<unsigned long long>(recorder.dropped()));
  const double warm = rss.size() > 1 ? rss[1] : rss.front();
  std::printf("  resident after 20 %% of the steps %.1f MB, at the end %.1f MB (growth %+.1f MB)\n", warm, rss.back(),
              rss.back() - warm);

  const std::string tether = TETHER_BINARY_DIR + "/tether";
  const Tool info = measure({tether, "info", path});
  const Tool verify = measure({tether, "replay", path, "--verify", "-q"});
  const Tool report = measure({tether, "report", path, "-o", (dir / "soak.html").string()});
  std::printf("  the recording's tools (%.1f MB recording):\n", bytes / 1e6);
  for (const auto& [name, t] : {std::pair<const char*, const Tool&>{"tether info", info},
                                {"tether replay --verify", verify},
                                {"tether report", report}})
    std::printf("    %-24s exit %d  %8.2f s  peak resident %8.1f MB (%.2f x the recording)\n", name, t.exit_code,
                t.wall_s, t.peak_mb, t.peak_mb * 1e6 / bytes);
  bench::figure("soak: loop resident set growth after warm-up",
                bench::format("%+.1f MB (%.1f MB at the end, %lld steps)", rss.back() - warm, rss.back(), steps),
                "flat, <= 200 MB");
  bench::figure("soak: peak memory of replay --verify / the recording's size",
                bench::format("%.2f (%.0f MB for %.0f MB)", verify.peak_mb * 1e6 / bytes, verify.peak_mb, bytes / 1e6),
                "streaming, <= 500 MB");
  if (keep.empty()) fs::remove_all(dir);
  return info.exit_code == 0 && verify.exit_code == 0 && report.exit_code == 0 ? 0 : 1;
}
