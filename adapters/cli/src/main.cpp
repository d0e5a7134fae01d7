// SPDX-License-Identifier: Apache-2.0
// The tether command line. Option parsing lives in this one translation unit (CLI11 is
// heavy to compile); each command is in its own file (run_command.cpp, replay_command.cpp, ...).
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
#include <iostream>

#include "commands.hpp"
#include "tether/process/cli_numbers.hpp"

namespace {

using namespace tether::cli;

// what a number option expects and what it got (not CLI11's 309-digit bound)
using tether::adapters::non_negative_number;
using tether::adapters::positive_number;

// the exit codes, in --help
void add_footer(CLI::App& app) {
  app.footer(
      "Exit codes:\n"
      "  0    success (run: every planned step completed; check: the scenario is valid;\n"
      "       replay: replayed, verified, and new firmware within --tolerance)\n"
      "  1    the session was aborted (a timeout policy `abort`, an endpoint fault under\n"
      "       `block`, or a numerical fault in the physics); replay: a state differed from\n"
      "       the recording, or the new firmware's commands diverged (or it failed mid-run)\n"
      "  2    bad usage, an invalid scenario (errors are printed with file:line:column), an\n"
      "       unreadable recording, a bad --firmware spec or an endpoint the recording lacks\n"
      "  3    an endpoint could not start (port, broker or firmware launch failed); no step ran\n"
      "  4    run: the session failed at step k: a feedback processor, a device or the loop\n"
      "       threw mid-step (the message names who, the step and why); the recording is\n"
      "       closed with its summary. An endpoint that throws is that endpoint's fault and\n"
      "       its timeout policy decides (exit 1 under `abort` or `block`)\n"
      "  5    run: every step ran, but an endpoint faulted on the way (its firmware died, its\n"
      "       line closed) and its policy `hold` or `safe` carried the session on; the\n"
      "       outcome is `completed_with_faults` and the summary's `reason` names it\n"
      "  6    run: the session ran, but an expectation of the scenario's `expect:` failed\n"
      "       (the summary lists each with PASS/FAIL, its worst value and first failing step)\n"
      "  130  stopped by SIGINT/SIGTERM after a clean step (the summary is still printed)\n"
      "test: 0 every run passed; 6 a run failed (an expectation, an outcome, a run that could not\n"
      "       start); 2 an invalid campaign file (file:line:column) or options, slices that do not\n"
      "       merge; 130 interrupted (the results so far are written)");
}

CLI::App* add_run(CLI::App& app, RunOptions& run) {
  auto* run_cmd = app.add_subcommand("run", "Run a scenario in lock-step with its endpoints");
  run_cmd->add_option("scenario", run.scenario, "Scenario file (YAML)")->required();
  run_cmd->add_option("--rtf", run.real_time_factor, "Real-time factor: 1 = wall-clock time, 0 = as fast as possible")
      ->check(CLI::Range(0.0, 1000.0));
  run_cmd->add_option("--steps", run.steps, "Number of steps (overrides loop.steps)");
  run_cmd
      ->add_option("--set", run.overrides,
                   "PATH=VALUE: override a scenario key (loop.seed=7, vehicles[0].bodies[0].mass_kg=12.5, "
                   "endpoints.firmware.deadline_ms=5); validated like the file, recorded in the session")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  run_cmd
      ->add_option("--set-file", run.set_files,
                   "FILE: the PATH=VALUE overrides listed under `set:` in FILE (a `tether identify` fit), "
                   "applied before --set")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(CLI::ExistingFile);
  run_cmd->add_option("--out", run.out_dir, "Session folder for the summary (default runs/<scenario>-<time>)");
  run_cmd->add_flag("--overwrite", run.overwrite, "Replace an earlier session in the --out folder (else refused)");
  run_cmd
      ->add_option("--report-assets", run.report_assets,
                   "The report loads its charting library from this folder, relative to the report (a campaign's "
                   "runs share ../assets), instead of carrying a copy")
      ->type_name("URL");
  run_cmd->add_flag("--quiet,-q", run.quiet,
                    "No status line; only warnings and errors on the terminal (the session's tether.log keeps all)");
  run_cmd->add_option("--log-level", run.log_level,
                      "trace, debug, info (default), warn, error or off: the terminal and <session>/tether.log");
  run_cmd->add_flag("--json", run.json, "Print the summary as JSON on stdout");
  run_cmd->add_option("--live", run.live,
                      "[HOST:]PORT: serve the session over foxglove.websocket.v1 (Foxglove, tether ctl); "
                      "127.0.0.1 unless HOST is given, which then needs a token (docs/live.md)");
  run_cmd->add_flag("--paused", run.live_paused, "With --live: start paused; a client resumes or steps it");
  return run_cmd;
}

CLI::App* add_ctl(CLI::App& app, CtlOptions& ctl) {
  auto* ctl_cmd = app.add_subcommand(
      "ctl",
      "Steer a live session: status | pause | resume | step N | run-until T | rtf R | seek STEP | "
      "force NAME BODY FX FY FZ [frame=world|body] [torque=X,Y,Z] [point=X,Y,Z] [duration=S] | unforce NAME | "
      "fault KEY=VALUE... | param get [NAME...] | param set NAME VALUE | watch TOPIC | topics | shutdown");
  ctl_cmd->add_option("--url", ctl.url, "ws://HOST:PORT of the session (default ws://127.0.0.1:8765)");
  ctl_cmd->add_option("--token", ctl.token, "The session's token (default: TETHER_LIVE_TOKEN)");
  ctl_cmd->add_flag("--json", ctl.json, "Print answers and watched messages as JSON lines");
  ctl_cmd->add_option("--timeout", ctl.timeout_s, "Seconds to wait for an answer (default 60)");
  ctl_cmd->add_option("--count", ctl.count, "watch: stop after this many messages");
  ctl_cmd->add_option("command", ctl.args, "The command and its arguments")->required()->allow_extra_args();
  ctl_cmd->positionals_at_end(false);
  ctl_cmd->footer(
      "Exit codes (ctl's own):\n"
      "  0  the session answered and did it (watch: the session ended or --count was reached)\n"
      "  1  the session refused it (the reason is printed: a value out of range, an unknown body,\n"
      "     a parameter set outside its range), or no answer came within --timeout\n"
      "  2  bad usage: an unknown command, missing or malformed words, a request the service's keys\n"
      "     refuse (checked before connecting), or watch of a topic the session does not offer\n"
      "  3  no session at --url (refused, wrong token, not a foxglove.websocket.v1 server)");
  return ctl_cmd;
}

CLI::App* add_replay(CLI::App& app, ReplayOptions& replay) {
  auto* replay_cmd = app.add_subcommand("replay", "Re-run a recording without hardware");
  replay_cmd->add_option("recording", replay.recording, "Recording (.mcap) or session folder")->required();
  replay_cmd->add_flag("--verify", replay.verify, "Compare every replayed state with the recorded one, bit for bit");
  replay_cmd->add_option("--from-step", replay.from_step, "Start at the nearest keyframe at or before this step");
  replay_cmd->add_option("--rtf", replay.real_time_factor, "Real-time factor (default 0: as fast as possible)")
      ->check(CLI::Range(0.0, 1000.0));
  replay_cmd
      ->add_option("--firmware", replay.firmware,
                   "ENDPOINT=LAUNCH: run new firmware in place of the recorded serial endpoint, fed the "
                   "recorded sensor readings, and compare its commands with the recorded ones. LAUNCH is a "
                   "host build (path [args]) or qemu:IMAGE.elf. Repeatable")
      ->type_name("ENDPOINT=LAUNCH")
      ->allow_extra_args(false);  // one spec per --firmware: a recording after it stays positional
  replay_cmd->add_flag("--closed-loop", replay.closed_loop,
                       "With --firmware: the new firmware's commands drive the world (default: open loop, the world "
                       "follows the recording and the commands are only compared)");
  replay_cmd
      ->add_option("--tolerance", replay.tolerance,
                   "With --firmware: a command differing by more than this is a divergence (default 1e-6)")
      ->check(non_negative_number());
  replay_cmd->add_flag("--quiet,-q", replay.quiet, "No progress bar");
  replay_cmd->add_flag("--json", replay.json, "Print the result as JSON");
  replay_cmd->add_option("--live", replay.live,
                         "[HOST:]PORT: serve the replay over foxglove.websocket.v1 with playback control (pause, "
                         "step, speed, seek); plays at real time unless --rtf says otherwise (docs/live.md)");
  replay_cmd->add_flag("--paused", replay.live_paused, "With --live: start paused");
  return replay_cmd;
}

CLI::App* add_info(CLI::App& app, InfoOptions& info) {
  auto* info_cmd = app.add_subcommand("info", "Describe a recording");
  info_cmd->add_option("recording", info.recording, "Recording (.mcap) or session folder")->required();
  info_cmd->add_flag("--json", info.json, "Print as JSON");

  return info_cmd;
}

CLI::App* add_report(CLI::App& app, ReportOptions& report) {
  auto* report_cmd = app.add_subcommand("report", "Write a self-contained HTML report of a recording");
  report_cmd->add_option("recording", report.recording, "Recording (.mcap) or session folder")->required();
  report_cmd->add_option("compare", report.compare,
                         "A second recording or session folder: compared with the first, their series overlaid");
  report_cmd->add_option("-o,--output", report.output, "HTML file to write (default: the recording's name with .html)");

  return report_cmd;
}

CLI::App* add_devices(CLI::App& app, DevicesOptions& devices) {
  auto* devices_cmd =
      app.add_subcommand("devices", "List a scenario's devices (name, kind, direction, payload, rate, units, noise)");
  devices_cmd->add_option("scenario", devices.scenario, "Scenario file (YAML)")->required();
  devices_cmd->add_flag("--json", devices.json, "Print as JSON");

  return devices_cmd;
}

CLI::App* add_check(CLI::App& app, CheckOptions& check) {
  auto* check_cmd = app.add_subcommand("check", "Validate a scenario file and its endpoints");
  check_cmd->add_option("scenario", check.scenario, "Scenario file (YAML)")->required();
  check_cmd->add_option("--set", check.overrides, "PATH=VALUE: override a scenario key, as `run --set`")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  return check_cmd;
}

CLI::App* add_test(CLI::App& app, TestOptions& test) {
  auto* test_cmd = app.add_subcommand(
      "test",
      "Run a test campaign (scenarios x seeds x overrides x fault sets x firmware builds, firmware-regression "
      "replays) in worker processes; write junit.xml, index.html and campaign.json (docs/campaigns.md)");
  test_cmd->add_option("campaign", test.campaign, "Campaign file (YAML)");
  test_cmd->add_option("-j,--jobs", test.jobs, "Runs at a time (default: the number of cores)")
      ->check(CLI::Range(1, 4096));
  test_cmd->add_option("--out", test.out_dir, "Output folder (default runs/<campaign>-<time>)");
  test_cmd
      ->add_option("--set", test.overrides,
                   "PATH=VALUE: override a scenario key in every run (as `run --set`), after the campaign's own")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  test_cmd
      ->add_option("--campaign-set", test.campaign_overrides,
                   "PATH=VALUE: override a key of the campaign file (seeds={first: 1, count: 3})")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  test_cmd->add_option("--shard", test.shard,
                       "K/N: run only the K-th of N slices (the runs whose index i has i mod N = K-1)");
  test_cmd
      ->add_option("--merge", test.merge,
                   "DIR...: merge the output folders of a campaign's slices into one junit.xml and index.html "
                   "(in --out); no campaign file")
      ->expected(1, -1);
  test_cmd->add_flag("--list", test.list, "Print the runs (index and name; with --shard, the slice's) and run nothing");
  test_cmd->add_flag("--quiet,-q", test.quiet, "No line per finished run (the table at the end stays)");
  return test_cmd;
}

CLI::App* add_identify(CLI::App& app, IdentifyOptions& o) {
  auto* cmd = app.add_subcommand("identify",
                                 "Fit a vehicle's model (thrust gain, drags, buoyancy, current, thruster lag, added "
                                 "mass, measurement delay) to recorded trials; validate it open loop");
  cmd->add_option("recordings", o.recordings, "Recordings (or session folders) of trials of one vehicle")
      ->required()
      ->expected(1, -1);
  cmd->add_option("-o,--output", o.output, "Write the fit here (YAML: `set:` overrides for tether run --set-file)");
  cmd->add_option("--report", o.report,
                  "Write the fit's page here (HTML: the predictions against the held-out data, the estimates)");
  cmd->add_option("--vehicle", o.vehicle, "The vehicle to fit (default: the one the recordings measured)");
  cmd->add_option("--validate", o.validate, "A recording to predict open loop with the fit (not fitted)");
  cmd->add_option("--holdout", o.holdout, "Keep the last FRACTION of the first trial out of the fit and predict it");
  cmd->add_option("--horizon", o.horizon_s, "Seconds of each open-loop prediction (default 10)")
      ->check(CLI::Range(0.01, 3600.0));
  cmd->add_option("--window-steps", o.window_steps, "Steps each fitted window replays (default 50)")
      ->check(CLI::Range(5, 10000));
  cmd->add_option("--max-delay-steps", o.max_delay_steps, "Measurement delays tried: 0 to this (default 3)")
      ->check(CLI::Range(0, 100));
  cmd->add_option("--position-stddev", o.position_stddev_m, "The measured positions' noise, m (default 0.005)")
      ->check(positive_number());
  cmd->add_option("--velocity-stddev", o.velocity_stddev_m_s, "The measured velocities' noise, m/s (default 0.01)")
      ->check(positive_number());
  cmd->add_option("--orientation-stddev", o.orientation_stddev_rad,
                  "The measured orientations' noise, rad (default 0.01; 0: not compared, no yaw drag fitted)")
      ->check(non_negative_number());
  cmd->add_flag("--no-lag", o.no_lag, "Do not fit a thruster lag");
  cmd->add_option("--threads", o.threads, "Threads for the solver (default 2)")->check(CLI::Range(1, 256));
  return cmd;
}

CLI::App* add_kinds(CLI::App& app, KindsOptions& kinds) {
  auto* kinds_cmd = app.add_subcommand("kinds",
                                       "List every extension point (feedback processors, endpoint types, "
                                       "controllers, device kinds) and what is registered under it");
  kinds_cmd->add_flag("--json", kinds.json, "Print as JSON");
  return kinds_cmd;
}

CLI::App* add_init(CLI::App& app, InitOptions& init) {
  auto* cmd = app.add_subcommand("init",
                                 "Make a scenario folder of your own: a copy of a shipped scenario, the example "
                                 "firmware's source and how to build it; it runs from anywhere");
  cmd->add_option("name", init.name, "The folder to make (it must not exist, or be empty)")->required();
  cmd->add_option("--from", init.from, "The shipped scenario to copy (its name in config/scenarios/)")
      ->capture_default_str();
  return cmd;
}

// the version, and where this tether takes its helpers and shipped files from
std::string version_text() {
  const auto shipped = shipped_dir();
  const char* helpers = std::getenv("TETHER_BUILD_DIR");
  return std::string("tether " TETHER_VERSION " (package tether ") + TETHER_VERSION + ")\n" +
         "helpers and firmware: " + (helpers != nullptr ? helpers : "?") + "\n" +
         "shipped scenarios: " + (shipped ? (*shipped / "config" / "scenarios").string() : std::string("not found"));
}

// each command's --help: one example and where the exit codes are (not the whole block,
// which `tether --help` has)
void add_example(CLI::App* cmd, const std::string& example) {
  cmd->footer("Example:\n  " + example + "\nExit codes: tether --help");
}

// `tether bogus`: name the unknown command and the known ones (CLI11 would only say that a
// subcommand is required)
bool unknown_command(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return false;
  std::string known;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name() == argv[1]) return false;
    known += (known.empty() ? "" : ", ") + sub->get_name();
  }
  std::cerr << "tether: unknown command \"" << argv[1] << "\" (the commands: " << known
            << "; tether --help says what each does)\n";
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tether::cli;
  CLI::App app{"tether: a hardware-in-the-loop lock-step runtime"};
  app.require_subcommand(1);
  default_helper_dir();
  app.set_version_flag("--version", version_text);  // looked up only when asked
  add_footer(app);
  RunOptions run;
  CtlOptions ctl;
  ReplayOptions replay;
  InfoOptions info;
  ReportOptions report;
  DevicesOptions devices;
  CheckOptions check;
  TestOptions test;
  KindsOptions kinds;
  IdentifyOptions identify;
  InitOptions init;
  auto* run_cmd = add_run(app, run);
  auto* ctl_cmd = add_ctl(app, ctl);
  auto* replay_cmd = add_replay(app, replay);
  auto* info_cmd = add_info(app, info);
  auto* report_cmd = add_report(app, report);
  auto* devices_cmd = add_devices(app, devices);
  auto* check_cmd = add_check(app, check);
  auto* test_cmd = add_test(app, test);
  auto* kinds_cmd = add_kinds(app, kinds);
  auto* identify_cmd = add_identify(app, identify);
  auto* init_cmd = add_init(app, init);
  auto* ports_cmd = app.add_subcommand("ports", "List serial ports (libserialport); pseudo-terminals are not listed");
  add_example(run_cmd, "tether run config/scenarios/default.yaml --rtf 1 --set loop.seed=7");
  add_example(replay_cmd, "tether replay runs/default-20261127-101500 --verify");
  add_example(info_cmd, "tether info runs/default-20261127-101500/recording.mcap");
  add_example(report_cmd, "tether report runs/default-20261127-101500 -o report.html");
  add_example(devices_cmd, "tether devices config/scenarios/auv_sensors.yaml");
  add_example(check_cmd, "tether check config/scenarios/car.yaml --set loop.steps=100");
  add_example(test_cmd, "tether test config/campaigns/depth_hold.yaml -j 2 --out runs/depth-hold");
  add_example(kinds_cmd, "tether kinds --json");
  add_example(identify_cmd, "tether identify runs/tank_identify-20261127-101500 --holdout 0.25 -o fit.yaml");
  add_example(ports_cmd, "tether ports");
  add_example(init_cmd, "tether init my_rov && tether run my_rov/my_rov.yaml");
  ctl_cmd->footer("Example:\n  tether ctl --url ws://127.0.0.1:8765 force push auv 0 30 0 duration=2\n" +
                  ctl_cmd->get_footer());

  log_to_stderr();
  register_extensions();
  if (unknown_command(app, argc, argv)) return 2;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  if (*run_cmd) return run_command(run);
  if (*ctl_cmd) return ctl_command(ctl);
  if (*ports_cmd) return ports_command();
  if (*kinds_cmd) return kinds_command(kinds);
  if (*init_cmd) return init_command(init);
  if (*check_cmd) return check_command(check);
  if (*test_cmd) return test_command(test);
  if (*devices_cmd) return devices_command(devices);
  if (*identify_cmd) return identify_command(identify);
  // a session folder stands for the recording in it
  if (*replay_cmd) {
    replay.recording = recording_path(replay.recording);
    return replay_command(replay);
  }
  if (*info_cmd) {
    info.recording = recording_path(info.recording);
    return info_command(info);
  }
  if (*report_cmd) {
    report.recording = recording_path(report.recording);
    if (!report.compare.empty()) report.compare = recording_path(report.compare);
    return report_command(report);
  }
  return 2;
}
