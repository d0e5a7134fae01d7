// SPDX-License-Identifier: Apache-2.0
// Runs a campaign's planned runs (campaign.hpp) in worker processes: each one `tether run`
// (or `tether replay`) with its own session folder, up to N at a time. Ctrl-C and SIGTERM
// stop launching, pass the signal on to the running workers (which stop cleanly after a
// step and write their summaries) and return what is done; a second signal kills them.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "tether/campaign/campaign.hpp"

namespace tether::campaign {

struct RunnerOptions {
  std::string program;         // the tether executable the workers run
  std::size_t jobs = 1;        // workers at a time (>= 1)
  std::string out_dir;         // the campaign's output folder; each run gets out_dir/<its folder>
  double run_timeout_s = 600;  // a run still going after this is stopped (SIGTERM, then SIGKILL) and fails
  double kill_after_s = 10;    // after a SIGTERM, how long before SIGKILL
  std::string report_assets;   // each scenario run's --report-assets (relative to its folder); "": none
  bool keep_passed_recordings = true;  // false: a passed run's recording.mcap is removed (recording.txt says so)
  /// Called on the calling thread as each run ends (in the order they end).
  std::function<void(const RunResult&)> on_finished;
};

/// Runs `runs` and returns one result per run, by index order. While it runs, SIGINT and
/// SIGTERM are handled here (the previous handlers come back after); `interrupted` says
/// whether one arrived (the runs it kept from starting are `not_run`).
std::vector<RunResult> run_campaign(const std::vector<PlannedRun>& runs, const RunnerOptions& options,
                                    bool& interrupted);

}  // namespace tether::campaign
