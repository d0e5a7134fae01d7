// SPDX-License-Identifier: Apache-2.0
// `tether run SCENARIO`: one session into its session folder (recording.mcap, report.html,
// summary.json, tether.log), optionally served live; the summary on stdout.
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "commands.hpp"
#include "helpers.hpp"
#include "summary_text.hpp"
#include "tether/endpoints/endpoint_factory.hpp"
#include "tether/live/server.hpp"
#include "tether/loop/session.hpp"
#include "tether/recording/json_text.hpp"
#include "tether/recording/recorder.hpp"
#include "tether/recording/write_whole.hpp"
#include "tether/report/report.hpp"
#include "tether/scenario/scenario.hpp"

namespace tether::cli {

namespace {

std::string default_out_dir(const std::string& scenario_name) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  std::string base = "runs/" + scenario_name + "-" + stamp;
  std::string dir = base;
  for (int i = 2; std::filesystem::exists(dir); ++i) dir = base + "-" + std::to_string(i);
  return dir;
}

// the session folder, made ready: exit_ok, or exit_usage with the reason on stderr
int open_session_folder(const std::string& out_dir, bool overwrite) {
  std::error_code ec;
  // an earlier session's files are never replaced silently
  if (!overwrite)
    for (const char* name : {"recording.mcap", "summary.json", "report.html"})
      if (std::filesystem::exists(std::filesystem::path(out_dir) / name, ec)) {
        std::cerr << "tether: " << out_dir << " holds an earlier session (" << name
                  << "): choose another --out, remove it, or add --overwrite\n";
        return exit_usage;
      }
  std::filesystem::create_directories(out_dir, ec);
  if (ec) {
    std::cerr << "tether: cannot create the session folder " << out_dir << ": " << ec.message() << '\n';
    return exit_usage;
  }

  // the whole log goes to the session folder too, whatever --quiet hides on the terminal
  std::string log_error;
  if (!log_to_file(out_dir + "/tether.log", &log_error)) {
    std::cerr << "tether: cannot write " << out_dir << "/tether.log: " << log_error << '\n';
    return exit_usage;
  }
  return exit_ok;
}

// a terminal gets one line rewritten in place; a log file gets a line every 5 s
void show_status(runtime::SessionOptions& session_options) {
  const bool tty = isatty(STDERR_FILENO) != 0;
  session_options.status_interval_s = tty ? 0.25 : 5.0;
  session_options.on_status = [](const runtime::LiveStatus& s) {
    char line[256];
    std::snprintf(line, sizeof line, "step %llu/%llu  t=%.2f s  rtf %.2f  step p99 %.1f µs  misses %llu",
                  static_cast<unsigned long long>(s.step), static_cast<unsigned long long>(s.steps_total), s.sim_time_s,
                  s.achieved_rtf, static_cast<double>(s.step_p99_ns) / 1000.0,
                  static_cast<unsigned long long>(s.misses));
    show_status_line(line);
  };
}

// the recorder: into recording.mcap, or keeping no file when only the live server reads it;
// null with the reason on stderr
std::unique_ptr<runtime::Recorder> open_recorder(const runtime::Scenario& scenario, const runtime::Session& session,
                                                 live::Server* server, const std::string& recording_path) {
  auto recorder = make_recorder(scenario, session);
  // (unpaced, the session makes the recorder wait rather than drop: Session::set_recorder)
  if (server) recorder->set_tap(server);
  std::string error;
  const bool opened =
      scenario.recording.enabled ? recorder->open(recording_path, &error) : recorder->open_without_file(&error);
  if (!opened) {
    std::cerr << "tether: cannot record to " << recording_path << ": " << error << '\n';
    return nullptr;
  }
  return recorder;
}

// --report-assets names the folder (or a URL) the report loads its charting library from,
// relative to the report; a local folder without the library is said now, not found out
// when the page opens without zoom and hover
void warn_missing_report_assets(const std::string& url, const std::string& out_dir) {
  if (url.empty() || url.find("://") != std::string::npos) return;
  const std::filesystem::path dir =
      std::filesystem::path(url).is_absolute() ? std::filesystem::path(url) : std::filesystem::path(out_dir) / url;
  std::error_code ec;
  if (std::filesystem::exists(dir / "dygraph.min.js", ec)) return;
  std::cerr << "tether: --report-assets " << url << ": there is no dygraph.min.js in "
            << dir.lexically_normal().string()
            << "; the report's plots stay as drawn (SVG, without zoom and hover) until it is there\n";
}

// after the run: the recording closed with the summary (the live clients get it), the server
// stopped, the report, summary.json, and the summary on stdout. False when a file the session
// leaves could not be written (said on stderr, naming the file and the error; a summary.json
// that could not be written whole is removed): the run exits exit_recording_failed
bool finish_session(const RunOptions& options, const runtime::Scenario& scenario, const runtime::Session& session,
                    std::unique_ptr<runtime::Recorder>& recorder, live::Server* server, const std::string& out_dir,
                    const std::string& recording_path) {
  nlohmann::json summary = session.summary();
  if (server) summary["live"] = server->summary();
  bool written = true;
  if (recorder && !scenario.recording.enabled) {
    std::string error;
    (void)recorder->close(summary, &error);  // the live clients get the summary; no file
    recorder.reset();
  }
  if (recorder) {
    std::string error;
    if (!recorder->close(summary, &error)) {
      std::cerr << "tether: the recording " << recording_path << " is incomplete: " << error
                << " (readable up to its last whole chunk)\n";
      if (scenario.recording.stop_on_write_error) written = false;
    }
    summary["recording"]["dropped_items"] = recorder->dropped();
  }
  // after the recorder has handed the summary to the clients
  if (server) server->stop();
  // the report reads the closed recording, as `tether report` would
  const std::string report_path = out_dir + "/report.html";
  bool report_written = false;
  if (recorder) {
    std::string error;
    runtime::ReportOptions report;
    report.assets_url = options.report_assets;
    report_written = runtime::write_report(recording_path, report_path, &error, report);
    if (!report_written) {
      std::cerr << "tether: could not write the report " << report_path << ": " << error << '\n';
      written = false;
    }
  }
  const std::string summary_path = out_dir + "/summary.json";
  std::string summary_error;
  const bool summary_written =
      runtime::write_whole_file(summary_path, runtime::json_text(summary, 2) + "\n", &summary_error);
  if (!summary_written) {
    std::cerr << "tether: " << summary_error << '\n';
    written = false;
  }
  if (options.json) {
    std::cout << runtime::json_text(summary, 2) << '\n';
  } else {
    print_summary_text(summary, std::cout);
    if (recorder) std::cout << "  recording: " << recording_path << '\n';
    if (report_written) std::cout << "  report: " << report_path << '\n';
    if (summary_written) std::cout << "  summary: " << summary_path << '\n';
  }
  return written;
}

int exit_code_of(runtime::Outcome outcome, const runtime::Session& session) {
  // the verdict of `expect:` outranks a fault that policy carried: it is what a test asks
  if ((outcome == runtime::Outcome::completed || outcome == runtime::Outcome::faulted) &&
      !session.expectations_passed())
    return exit_expectations_failed;
  switch (outcome) {
    case runtime::Outcome::completed: return exit_ok;
    case runtime::Outcome::stopped: return exit_stopped;
    case runtime::Outcome::aborted: return exit_aborted;
    case runtime::Outcome::failed: return exit_failed;
    case runtime::Outcome::faulted: return exit_faulted;
    case runtime::Outcome::recording_failed: return exit_recording_failed;
  }
  return exit_aborted;
}

// the `set:` list of each --set-file (a `tether identify` fit), then --set: false with the
// reason on stderr
bool collect_overrides(const RunOptions& options, std::vector<std::string>& out) {
  for (const std::string& file : options.set_files) {
    try {
      const YAML::Node root = YAML::LoadFile(file);
      const YAML::Node set = root.IsMap() ? root["set"] : YAML::Node();
      if (!set || !set.IsSequence()) {
        std::cerr << "tether: --set-file " << file << ": no `set:` list of PATH=VALUE overrides in it\n";
        return false;
      }
      for (std::size_t i = 0; i < set.size(); ++i) {
        if (!set[i].IsScalar() || set[i].as<std::string>().find('=') == std::string::npos) {
          std::cerr << "tether: --set-file " << file << ":" << set[i].Mark().line + 1
                    << ": each entry of `set:` is one PATH=VALUE override\n";
          return false;
        }
        out.push_back(set[i].as<std::string>());
      }
    } catch (const YAML::Exception& e) {
      std::cerr << "tether: --set-file " << file << ": " << e.what() << '\n';
      return false;
    }
  }
  out.insert(out.end(), options.overrides.begin(), options.overrides.end());
  return true;
}

}  // namespace

int run_command(const RunOptions& options) {
  if (!set_log_level(options.log_level)) {
    std::cerr << "tether: --log-level " << options.log_level << ": expected trace, debug, info, warn, error or off\n";
    return exit_usage;
  }
  if (options.quiet) quiet_console();
  std::vector<std::string> overrides;
  if (!collect_overrides(options, overrides)) return exit_usage;
  runtime::Scenario scenario;
  std::vector<std::unique_ptr<runtime::Endpoint>> endpoints;
  try {
    scenario = runtime::load_scenario(options.scenario, overrides);
    endpoints = adapters::make_endpoints(scenario);
  } catch (const runtime::ConfigError& e) {
    print_config_error(e);
    return exit_usage;
  }

  const std::string out_dir = options.out_dir.empty() ? default_out_dir(scenario.name) : options.out_dir;
  if (const int code = open_session_folder(out_dir, options.overwrite); code != exit_ok) return code;
  warn_missing_report_assets(options.report_assets, out_dir);

  runtime::SessionOptions session_options;
  session_options.real_time_factor = options.real_time_factor;
  session_options.steps = options.steps;
  if (!options.quiet) show_status(session_options);

  // the live server (docs/live.md): refused before anything starts if it would be open
  // to the network without a token
  const bool live_on = !options.live.empty() || scenario.live.enabled;
  runtime::SessionControl control;
  std::unique_ptr<live::Server> server;
  std::string live_host;
  if (live_on) {
    int code = exit_ok;
    server = make_live_server(scenario, options.live, control, false, live_host, code);
    if (!server) return code;
    session_options.control = &control;
    session_options.start_paused = options.live_paused || scenario.live.start_paused;
  }

  install_signal_handlers();
  std::unique_ptr<runtime::Session> session_ptr;
  try {
    session_ptr = std::make_unique<runtime::Session>(scenario, std::move(endpoints), session_options);
  } catch (const runtime::ConfigError& e) {
    print_config_error(e);
    return exit_usage;
  }
  runtime::Session& session = *session_ptr;

  std::unique_ptr<runtime::Recorder> recorder;
  const std::string recording_path = out_dir + "/recording.mcap";
  if (scenario.recording.enabled || server) {
    recorder = open_recorder(scenario, session, server.get(), recording_path);
    if (!recorder) return exit_usage;
    session.set_recorder(recorder.get());
  }
  if (server && !start_live_server(*server, live_host, session_options.start_paused)) return exit_start_failed;
  runtime::Outcome outcome;
  try {
    outcome = session.run(stop_requested());
  } catch (const std::exception& e) {
    if (!options.quiet) show_status_line("");
    std::cerr << "tether: " << e.what() << '\n';
    return exit_start_failed;
  }
  if (!options.quiet) show_status_line("");

  const bool written = finish_session(options, scenario, session, recorder, server.get(), out_dir, recording_path);
  const int code = exit_code_of(outcome, session);
  // a session that could not leave its files has not passed, whatever else it did
  return written || (code != exit_ok && code != exit_faulted) ? code : exit_recording_failed;
}

}  // namespace tether::cli
