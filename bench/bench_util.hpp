// SPDX-License-Identifier: Apache-2.0
// Small helpers shared by the benchmarks: timing and figure printing.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <utility>

namespace tether::bench {

using Clock = std::chrono::steady_clock;

/// Seconds since `t0`.
inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Runs `fn(iterations)` with growing iteration counts until one run takes at least
/// `min_s`; returns seconds per iteration of that run.
template <typename F>
double time_per_iteration(F&& fn, double min_s = 0.3) {
  long n = 1;
  for (;;) {
    const auto t0 = Clock::now();
    fn(n);
    const double s = seconds_since(t0);
    if (s >= min_s || n > (1L << 40)) return s / static_cast<double>(n);
    n = s <= 0 ? n * 10 : static_cast<long>(static_cast<double>(n) * std::max(1.5, 1.2 * min_s / s));
  }
}

/// A --quick flag shortens runs (used by the test suite to check that benchmarks run).
inline bool quick_mode(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--quick") return true;
  return false;
}

/// printf into a std::string.
inline std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline std::string format(const char* fmt, ...) {
  char buffer[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buffer, sizeof buffer, fmt, args);
  va_end(args);
  return buffer;
}

/// The machine's physical cores: distinct (package, core) pairs of the CPUs Linux lists in
/// /sys; where two hardware threads share a core (SMT) there are half as many as CPUs. Falls
/// back to the CPU count where /sys does not say.
inline unsigned physical_cores() {
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  std::set<std::pair<int, int>> cores;
  for (unsigned c = 0; c < cpus; ++c) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/";
    int package = -1, core = -1;
    std::ifstream(dir + "physical_package_id") >> package;
    std::ifstream(dir + "core_id") >> core;
    if (package < 0 || core < 0) return cpus;
    cores.emplace(package, core);
  }
  return cores.empty() ? cpus : static_cast<unsigned>(cores.size());
}

/// One headline figure, in the line bench/run_all.sh collects into its table:
/// `figure | what | value | goal`.
inline void figure(const std::string& what, const std::string& value, const std::string& goal) {
  std::printf("figure | %s | %s | %s\n", what.c_str(), value.c_str(), goal.c_str());
  std::fflush(stdout);
}

}  // namespace tether::bench
