// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tether::cli {

struct RunOptions {
  std::string scenario;
  std::optional<double> real_time_factor;
  std::optional<std::uint64_t> steps;
  std::string out_dir;
  bool quiet = false;
  bool json = false;
};

struct CheckOptions {
  std::string scenario;
};

enum ExitCode : int { exit_ok = 0, exit_aborted = 1, exit_usage = 2, exit_start_failed = 3, exit_stopped = 130 };

/// `tether run`: returns the process exit code.
int run_command(const RunOptions& options);
/// `tether check`: returns the process exit code.
int check_command(const CheckOptions& options);

}  // namespace tether::cli
