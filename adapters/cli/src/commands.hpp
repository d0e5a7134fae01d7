// SPDX-License-Identifier: Apache-2.0
// The `tether` commands and their options; each command is in its own file (run_command.cpp,
// replay_command.cpp, ...), what several share in helpers.hpp, the log in console.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace tether::cli {

struct RunOptions {
  std::string scenario;
  std::vector<std::string> overrides;  // --set PATH=VALUE
  std::vector<std::string> set_files;  // --set-file FILE: the `set:` list of a fit file, before --set
  std::optional<double> real_time_factor;
  std::optional<std::uint64_t> steps;
  std::string out_dir;
  bool overwrite = false;  // --overwrite: replace an earlier session in out_dir
  std::string log_level = "info";
  bool quiet = false;
  bool json = false;
  std::string live;           // --live [HOST:]PORT: serve the session (docs/live.md)
  bool live_paused = false;   // --paused: start paused (a client resumes or steps)
  std::string report_assets;  // --report-assets URL: the report loads its charting library from there
};

struct CtlOptions {
  std::string url = "ws://127.0.0.1:8765";
  std::string token;              // else TETHER_LIVE_TOKEN
  std::vector<std::string> args;  // the command and its arguments
  bool json = false;
  double timeout_s = 60;
  std::uint64_t count = 0;  // watch: stop after this many messages (0: until the session ends)
};

struct ReplayOptions {
  std::string recording;
  bool verify = false;
  std::vector<std::string> firmware;  // ENDPOINT=LAUNCH: new firmware in place of a recorded endpoint
  bool closed_loop = false;           // the new firmware's commands drive the world
  double tolerance = 1e-6;            // |new - recorded| beyond this is a divergence
  std::optional<std::uint64_t> from_step;
  std::optional<double> real_time_factor;  // default 0 (as fast as possible); with --live 1
  bool quiet = false;
  bool json = false;
  std::string live;          // --live [HOST:]PORT: serve the replay, with playback control (docs/live.md)
  bool live_paused = false;  // --paused: start paused
};

struct InfoOptions {
  std::string recording;
  bool json = false;
};

struct ReportOptions {
  std::string recording;
  std::string compare;  // a second recording: compared with the first, series overlaid
  std::string output;   // default: the recording's path with .html instead of .mcap
};

struct DevicesOptions {
  std::string scenario;
  bool json = false;
};

struct KindsOptions {
  bool json = false;
};

struct InitOptions {
  std::string name;              // the folder to make
  std::string from = "default";  // the shipped scenario to copy (config/scenarios/<from>.yaml)
};

struct IdentifyOptions {
  std::vector<std::string> recordings;  // trials of one vehicle
  std::string output;                   // -o fit.yaml
  std::string report;                   // --report fit.html: the fit's page
  std::string vehicle;                  // default: the measured one
  std::string validate;                 // --validate REC: predict this trial open loop
  double holdout = 0;                   // --holdout F: the last F of the (first) trial is not fitted
  double horizon_s = 10;                // the open-loop prediction's span
  int window_steps = 50;
  int max_delay_steps = 3;
  double position_stddev_m = 0.005, velocity_stddev_m_s = 0.01;
  double orientation_stddev_rad = 0.01;  // 0: orientations not compared
  bool no_lag = false;
  int threads = 2;
};

struct CheckOptions {
  std::string scenario;
  std::vector<std::string> overrides;  // --set PATH=VALUE
};

struct TestOptions {
  std::string campaign;
  std::vector<std::string> overrides;           // --set PATH=VALUE: every scenario run
  std::vector<std::string> campaign_overrides;  // --campaign-set PATH=VALUE: the campaign file's keys
  std::optional<std::size_t> jobs;              // default: the number of cores
  std::string out_dir;
  std::string shard;               // "K/N"
  std::vector<std::string> merge;  // --merge DIR...: the slices' output folders
  bool list = false;               // print the runs, run nothing
  bool quiet = false;
};

enum ExitCode : int {
  exit_ok = 0,
  exit_aborted = 1,
  exit_usage = 2,
  exit_start_failed = 3,
  exit_failed = 4,
  exit_faulted = 5,              // every step ran, but an endpoint faulted and its policy carried on
  exit_expectations_failed = 6,  // the run completed, an expectation of `expect:` failed; test: a run failed
  exit_recording_failed = 7,     // the recording, summary.json or report.html could not be written (a full disk)
  exit_stopped = 130
};

/// `tether run`: returns the process exit code.
int run_command(const RunOptions& options);
/// `tether ctl`: one command to a live session; returns the process exit code.
int ctl_command(const CtlOptions& options);
/// `tether replay`: returns the process exit code.
int replay_command(const ReplayOptions& options);
/// Sends the log (spdlog) to stderr, so that stdout carries only results (--json).
void log_to_stderr();
/// The log's level on the terminal and in files: trace, debug, info, warn, error, off.
/// False for another word.
bool set_log_level(const std::string& level);
/// Also writes the log to `path` (truncated), at the log level, whatever --quiet hides on
/// the terminal. False with the reason when the file cannot be opened.
bool log_to_file(const std::string& path, std::string* error);
/// --quiet: the terminal shows warnings and errors only (the log file keeps everything).
void quiet_console();
/// A status line rewritten in place on a terminal: log lines clear it first and draw it
/// again after them, so neither is glued onto the other. Empty: none shown.
void show_status_line(const std::string& line);
/// `tether info`: returns the process exit code.
int info_command(const InfoOptions& options);
/// `path`, or PATH/recording.mcap when it is a folder (a session folder `tether run` wrote).
std::string recording_path(const std::string& path);
/// `tether report`: returns the process exit code.
int report_command(const ReportOptions& options);
/// `tether devices`: returns the process exit code.
int devices_command(const DevicesOptions& options);
/// `tether identify` (identify_command.cpp): fits a vehicle's model to recorded trials.
int identify_command(const IdentifyOptions& options);
/// `tether check`: returns the process exit code.
int check_command(const CheckOptions& options);
/// `tether test` (campaign_command.cpp): runs a campaign, or merges slices; returns the exit code.
int test_command(const TestOptions& options);

/// Registers what the CLI adds to the built-ins (the example controllers); call once at
/// start-up, before any scenario is loaded.
void register_extensions();
/// With TETHER_TEST_DOUBLES=1 in the environment, registers the test doubles of
/// test_doubles.cpp (a processor that throws at a chosen step); otherwise nothing.
void register_test_doubles();
/// `tether kinds`: lists every extension point and its registered kinds; returns the exit code.
int kinds_command(const KindsOptions& options);

/// `tether ports`: lists the serial ports libserialport finds; returns the process exit code.
int ports_command();

/// Sets TETHER_BUILD_DIR, unless set, to the running tether's own folder: where its helpers
/// and the host firmware are, in a build folder and in an installed tree's lib/tether/.
void default_helper_dir();
/// What is shipped to copy from (holding config/, examples/, firmware_shim/): share/tether/ of
/// an installed tree, or the checkout of the build folder this tether is in; nothing if neither.
std::optional<std::filesystem::path> shipped_dir();
/// `tether init`: a new scenario folder from a shipped scenario and the example firmware.
int init_command(const InitOptions& options);

}  // namespace tether::cli
