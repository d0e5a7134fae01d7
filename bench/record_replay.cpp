// SPDX-License-Identifier: Apache-2.0
// What recording costs the loop and how fast a recording replays.
//   recording overhead: the default scenario at rtf 0, the same number of steps without
//     and with a Recorder, rounds interleaved in one process (best round of each kept);
//     goal < 3 % of the loop's time per step
//   bytes per step of the MCAP file
//   replay speed as a multiple of real time (1 vehicle, 100 Hz), with and without
//     --verify; goal >= 200x
// Prints figures only; --quick shortens everything (the test suite smoke-runs it); a path
// names another scenario than the default in-process depth hold.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <string>

#include <ctime>
#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "bench_util.hpp"
#include "example_controllers.hpp"
#include "test_paths.hpp"
#include "tether/endpoints/endpoint_factory.hpp"
#include "tether/recording/recorder.hpp"
#include "tether/loop/recorder_inputs.hpp"
#include "tether/loop/replay_endpoint.hpp"
#include "tether/loop/session.hpp"

using namespace tether::runtime;
using tether::bench::Clock;
using tether::bench::seconds_since;

namespace {

double cpu_s(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Run {
  double loop_s = 0;         // session.run(), wall time
  double loop_cpu_s = 0;     // CPU time of the loop thread (the caller's) during run()
  double process_cpu_s = 0;  // CPU time of the whole process during run() and close()
  double close_s = 0;        // recorder.close(): the writer drains what the loop handed over
  std::uint64_t file_bytes = 0;
  std::uint64_t dropped = 0;
};

// one session of the scenario, recorded to `path` unless it is empty
Run run_once(const Scenario& sc, std::uint64_t steps, const std::string& path) {
  SessionOptions options;
  options.steps = steps;
  options.real_time_factor = 0;
  Session session(sc, tether::adapters::make_endpoints(sc), options);
  std::unique_ptr<Recorder> recorder;
  if (!path.empty()) {
    recorder = std::make_unique<Recorder>(sc, recorder_inputs(session));
    std::string error;
    if (!recorder->open(path, &error)) {
      std::fprintf(stderr, "record_replay: %s\n", error.c_str());
      std::exit(1);
    }
    session.set_recorder(recorder.get());
  }
  std::atomic<bool> stop{false};
  Run r;
  const double thread0 = cpu_s(CLOCK_THREAD_CPUTIME_ID), process0 = cpu_s(CLOCK_PROCESS_CPUTIME_ID);
  const auto t0 = Clock::now();
  if (session.run(stop) != Outcome::completed) std::exit(1);
  r.loop_s = seconds_since(t0);
  r.loop_cpu_s = cpu_s(CLOCK_THREAD_CPUTIME_ID) - thread0;
  if (recorder) {
    const auto t1 = Clock::now();
    std::string error;
    if (!recorder->close(session.summary(), &error)) {
      std::fprintf(stderr, "record_replay: %s\n", error.c_str());
      std::exit(1);
    }
    r.close_s = seconds_since(t1);
    r.dropped = recorder->dropped();
    r.file_bytes = std::filesystem::file_size(path);
  }
  r.process_cpu_s = cpu_s(CLOCK_PROCESS_CPUTIME_ID) - process0;
  return r;
}

// replays the whole recording as `tether replay [--verify]` does; seconds of wall time
double replay_once(const Recording& rec, bool verify, std::uint64_t& verified) {
  std::vector<std::unique_ptr<Endpoint>> eps;
  for (std::size_t i = 0; i < rec.scenario.endpoints.size(); ++i)
    eps.push_back(std::make_unique<ReplayEndpoint>(rec.scenario.endpoints[i], rec, i));
  SessionOptions options;
  options.steps = rec.steps.size();
  options.real_time_factor = 0;
  verified = 0;
  bool diverged = false;
  if (verify)
    options.after_step = [&](const WorldState& s) {
      if (compare_state(rec, s)) {
        diverged = true;
        return false;
      }
      ++verified;
      return true;
    };
  Session session(rec.scenario, std::move(eps), options);
  std::atomic<bool> stop{false};
  const auto t0 = Clock::now();
  (void)session.run(stop);
  const double s = seconds_since(t0);
  if (diverged) {
    std::fprintf(stderr, "record_replay: the replay diverged\n");
    std::exit(1);
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  tether::examples::register_example_controllers();  // the scenario's in-process depth_heading_hold
  const bool quick = tether::bench::quick_mode(argc, argv);
  // another scenario may be named (its in-process endpoints only): record_replay [--quick] [PATH]
  std::string scenario_path = TETHER_SOURCE_DIR + "/config/scenarios/in_process_depth_hold.yaml";
  for (int i = 1; i < argc; ++i)
    if (argv[i][0] != '-') scenario_path = argv[i];
  const Scenario sc = load_scenario(scenario_path);
  const std::uint64_t steps = quick ? 2'000 : 20'000;
  const int rounds = quick ? 1 : 5;
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("tether_bench_rr_" + std::to_string(getpid()))).string();
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/recording.mcap";
  // the controller's log lines go to stdout; only figures are printed
  std::fflush(stdout);
  const int figures_fd = dup(STDOUT_FILENO);
  const int devnull = open("/dev/null", O_WRONLY);
  dup2(devnull, STDOUT_FILENO);

  // interleaved rounds, so that a busy moment on the machine hits both sides alike
  double bare = 1e300, recorded = 1e300, close = 0, bare_cpu = 1e300, recorded_cpu = 1e300, bare_proc = 1e300,
         recorded_proc = 1e300;
  Run last;
  for (int i = 0; i < rounds; ++i) {
    const Run b = run_once(sc, steps, "");
    bare = std::min(bare, b.loop_s);
    bare_cpu = std::min(bare_cpu, b.loop_cpu_s);
    bare_proc = std::min(bare_proc, b.process_cpu_s);
    last = run_once(sc, steps, path);
    recorded_cpu = std::min(recorded_cpu, last.loop_cpu_s);
    recorded_proc = std::min(recorded_proc, last.process_cpu_s);
    if (last.loop_s < recorded) {
      recorded = last.loop_s;
      close = last.close_s;
    }
  }
  const double per_step = 1e9 / static_cast<double>(steps);
  const double period_s = static_cast<double>(sc.loop.period_ns) * 1e-9;
  std::fflush(stdout);
  dup2(figures_fd, STDOUT_FILENO);
  std::printf("record_replay: scenario %s (%zu vehicle, %zu bodies, %.0f Hz), %llu steps at rtf 0, best of %d rounds\n",
              sc.name.c_str(), sc.model.vehicles.size(), sc.model.bodies.size(), 1.0 / period_s,
              static_cast<unsigned long long>(steps), rounds);
  std::printf("  loop thread CPU without recorder %8.0f ns/step\n", bare_cpu * per_step);
  std::printf("  loop thread CPU with recorder    %8.0f ns/step\n", recorded_cpu * per_step);
  std::printf("  recording overhead on the loop   %+8.1f %%        (goal < 3 %%)\n",
              (recorded_cpu / bare_cpu - 1) * 100);
  std::printf(
      "  writer thread CPU                %8.0f ns/step (runs beside the loop; on a free core it costs the loop "
      "nothing)\n",
      ((recorded_proc - recorded_cpu) - (bare_proc - bare_cpu)) * per_step);
  std::printf(
      "  wall time without / with         %8.0f / %.0f ns/step (%+.1f %%; includes sharing the CPU with the writer)\n",
      bare * per_step, recorded * per_step, (recorded / bare - 1) * 100);
  std::printf("  recorder close (drain)           %8.1f ms after the last step; %llu items dropped\n", close * 1e3,
              static_cast<unsigned long long>(last.dropped));
  std::printf("  file size                        %8.0f bytes/step (%.2f MB for %.0f s of session)\n",
              static_cast<double>(last.file_bytes) / static_cast<double>(steps),
              static_cast<double>(last.file_bytes) * 1e-6, static_cast<double>(steps) * period_s);

  Recording rec;
  std::string error;
  const auto t0 = Clock::now();
  if (!load_recording(path, rec, &error)) {
    std::fprintf(stderr, "record_replay: %s\n", error.c_str());
    return 1;
  }
  const double load_s = seconds_since(t0);
  std::fflush(stdout);
  dup2(devnull, STDOUT_FILENO);
  double plain = 1e300, verify = 1e300;
  std::uint64_t verified = 0;
  for (int i = 0; i < std::max(1, rounds / 2); ++i) {
    plain = std::min(plain, replay_once(rec, false, verified));
    verify = std::min(verify, replay_once(rec, true, verified));
  }
  const double sim_s = static_cast<double>(rec.steps.size()) * period_s;
  std::fflush(stdout);
  dup2(figures_fd, STDOUT_FILENO);
  std::printf("  load_recording                   %8.1f ms (%.0f x real time)\n", load_s * 1e3, sim_s / load_s);
  std::printf("  replay                           %8.0f x real time (goal >= 200x)\n", sim_s / plain);
  std::printf("  replay --verify                  %8.0f x real time (%llu states compared bit for bit)\n",
              sim_s / verify, static_cast<unsigned long long>(verified));
  std::printf("  load + replay --verify           %8.0f x real time\n", sim_s / (load_s + verify));
  tether::bench::figure("recording overhead on the loop (loop thread CPU)",
                        tether::bench::format("%+.1f %%", (recorded_cpu / bare_cpu - 1) * 100), "< 2 %");
  tether::bench::figure("replay", tether::bench::format("%.0f x real time", sim_s / plain), ">= 200 x");
  std::filesystem::remove_all(dir);
  return 0;
}
