// SPDX-License-Identifier: Apache-2.0
// `tether replay RECORDING`: a recording re-run without hardware (--verify: bit for bit), new
// firmware against a recorded session (--firmware ENDPOINT=LAUNCH, docs/recording.md), or a
// recording served live with playback control (--live, docs/live.md).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "helpers.hpp"
#include "tether/serial/firmware_regression.hpp"
#include "tether/live/server.hpp"
#include "tether/loop/replay_endpoint.hpp"
#include "tether/loop/session.hpp"
#include "tether/recording/json_text.hpp"
#include "tether/recording/recorder.hpp"
#include "tether/recording/replay.hpp"

namespace tether::cli {

namespace {

void progress(std::uint64_t done, std::uint64_t total) {
  const int width = 40;
  const int filled = total ? static_cast<int>(width * done / total) : width;
  std::fprintf(stderr, "\r\033[Kreplay [%.*s%*s] %llu/%llu", filled, "########################################",
               width - filled, "", static_cast<unsigned long long>(done), static_cast<unsigned long long>(total));
  std::fflush(stderr);
}

// the --firmware specs and the options that do not go together: exit_ok, or exit_usage with
// the reason on stderr (bad usage is reported before anything is read or launched)
int parse_replay_options(const ReplayOptions& options, std::vector<adapters::FirmwareSpec>& specs) {
  for (const std::string& text : options.firmware) {
    adapters::FirmwareSpec spec;
    std::string why;
    if (!adapters::parse_firmware_spec(text, spec, &why)) {
      std::cerr << "tether: " << why << '\n';
      return exit_usage;
    }
    for (const auto& other : specs)
      if (other.endpoint == spec.endpoint) {
        std::cerr << "tether: --firmware names endpoint \"" << spec.endpoint << "\" twice\n";
        return exit_usage;
      }
    specs.push_back(std::move(spec));
  }
  const bool regression = !specs.empty();
  if (options.closed_loop && !regression) {
    std::cerr << "tether: --closed-loop goes with --firmware ENDPOINT=LAUNCH\n";
    return exit_usage;
  }
  if (regression && options.from_step) {
    std::cerr << "tether: --firmware replays from the recording's first step (new firmware starts from reset; "
                 "its state cannot be restored from a keyframe)\n";
    return exit_usage;
  }
  const bool live_on = !options.live.empty();
  if (live_on && regression) {
    std::cerr << "tether: --live plays a recording back; it does not go with --firmware\n";
    return exit_usage;
  }
  if (options.closed_loop && options.verify) {
    std::cerr << "tether: --verify cannot hold in closed loop: the new firmware's commands change the world\n";
    return exit_usage;
  }
  return exit_ok;
}

// the steps to replay, [first, end), and the keyframe to start from (null: the recording's
// start): exit_ok, or exit_usage with the reason on stderr
int find_start(const ReplayOptions& options, const runtime::Recording& rec, bool regression, std::uint64_t& first,
               std::uint64_t& end, const runtime::Keyframe*& start) {
  if (rec.steps.empty()) {
    std::cerr << "tether: " << options.recording << ": the recording has no steps\n";
    return exit_usage;
  }
  first = rec.steps.front().step;
  end = rec.steps.back().step + 1;
  start = nullptr;
  if (options.from_step && *options.from_step >= end) {
    std::cerr << "tether: --from-step " << *options.from_step << ": " << options.recording << " has steps " << first
              << " .. " << end - 1 << '\n';
    return exit_usage;
  }
  if (options.from_step) {
    auto it = rec.keyframes.upper_bound(*options.from_step);
    if (it == rec.keyframes.begin()) {
      std::cerr << "tether: no keyframe at or before step " << *options.from_step << '\n';
      return exit_usage;
    }
    --it;
    start = &it->second;
    first = it->first;
  }
  if (regression && first != rec.scenario.initial.step) {
    std::cerr << "tether: " << options.recording << " starts at step " << first
              << ", not at the session's start: new firmware starts from reset and cannot join mid-session\n";
    return exit_usage;
  }
  return exit_ok;
}

// the new firmware where --firmware names an endpoint, the recorded replies everywhere else:
// exit_ok, or exit_usage with the reason on stderr
int make_replay_endpoints(const ReplayOptions& options, const runtime::Recording& rec,
                          const std::vector<adapters::FirmwareSpec>& specs, adapters::RegressionMode mode,
                          std::vector<std::unique_ptr<runtime::Endpoint>>& endpoints,
                          std::vector<adapters::RegressionEndpoint*>& regressions, std::vector<std::string>& launches) {
  for (const auto& spec : specs) {
    const bool known = std::any_of(rec.scenario.endpoints.begin(), rec.scenario.endpoints.end(),
                                   [&](const auto& e) { return e.name == spec.endpoint; });
    if (!known) {
      std::string names;
      for (const auto& e : rec.scenario.endpoints) names += (names.empty() ? "" : ", ") + e.name;
      std::cerr << "tether: --firmware " << spec.endpoint << "=...: " << options.recording << " has no endpoint \""
                << spec.endpoint << "\" (its endpoints: " << (names.empty() ? "none" : names) << ")\n";
      return exit_usage;
    }
  }
  for (std::size_t i = 0; i < rec.scenario.endpoints.size(); ++i) {
    const auto spec = std::find_if(specs.begin(), specs.end(),
                                   [&](const auto& s) { return s.endpoint == rec.scenario.endpoints[i].name; });
    if (spec == specs.end()) {
      endpoints.push_back(std::make_unique<runtime::ReplayEndpoint>(rec.scenario.endpoints[i], rec, i));
      continue;
    }
    try {
      auto ep = adapters::make_regression_endpoint(rec, *spec, mode, options.tolerance);
      regressions.push_back(ep.get());
      launches.push_back(spec->launch);
      endpoints.push_back(std::move(ep));
    } catch (const std::invalid_argument& e) {
      std::cerr << "tether: " << e.what() << '\n';
      return exit_usage;
    }
  }
  return exit_ok;
}

// what a finished replay did, for its result
struct ReplayDone {
  const ReplayOptions& options;
  const runtime::Recording& rec;
  const runtime::Session& session;
  runtime::Outcome outcome;
  std::uint64_t first = 0;
  double wall = 0;
  bool verify = false;
  bool regression = false;
  std::uint64_t verified = 0;
  const std::optional<runtime::Divergence>& divergence;
  const std::vector<adapters::RegressionEndpoint*>& regressions;
  const std::vector<std::string>& launches;
  std::uint64_t steps_planned = 0;
};

// the scenario's expectations judged again on the replayed states: the verdicts, and
// whether they agree with the recording's (compared only for a whole replay from its start)
nlohmann::json judge_expectations(const ReplayDone& d, std::string& text) {
  const nlohmann::json now = d.session.summary();
  if (!now.contains("expectations")) return nullptr;
  std::size_t passed = 0, failed = 0, skipped = 0;
  for (const auto& x : now["expectations"]) {
    passed += x["verdict"] == "PASS";
    failed += x["verdict"] == "FAIL";
    skipped += x["verdict"] == "SKIPPED";
  }
  nlohmann::json out{{"verdict", now.value("verdict", "")}, {"expectations", now["expectations"]}};
  text = "expectations: " + std::to_string(passed) + " of " + std::to_string(now["expectations"].size()) + " passed, " +
         std::to_string(failed) + " failed, " + std::to_string(skipped) + " skipped on the " +
         (d.regression ? "new build's run" : "replayed states");
  const bool whole = d.first == 0 && d.session.steps_done() == d.steps_planned;
  const nlohmann::json* then =
      d.rec.summary && d.rec.summary->contains("expectations") ? &(*d.rec.summary)["expectations"] : nullptr;
  if (!then || !whole || then->size() != now["expectations"].size()) {
    text += then ? "; not compared with the recording's (a partial replay)" : "; the recording has no verdicts";
    return out;
  }
  nlohmann::json differences = nlohmann::json::array();
  for (std::size_t i = 0; i < then->size(); ++i)
    if ((*then)[i]["verdict"] != now["expectations"][i]["verdict"])
      differences.push_back({{"name", now["expectations"][i]["name"]},
                             {"recorded", (*then)[i]["verdict"]},
                             {"now", now["expectations"][i]["verdict"]}});
  out["agree_with_recording"] = differences.empty();
  out["differences"] = differences;
  if (differences.empty()) {
    text += "; the same verdicts as the recording";
  } else {
    text += "; differ from the recording:";
    for (const auto& x : differences)
      text += " \"" + x["name"].get<std::string>() + "\" " + x["recorded"].get<std::string>() + " then, " +
              x["now"].get<std::string>() + " now;";
    text.pop_back();
  }
  return out;
}

// the result as JSON (--json) or text; true when a new firmware's commands diverged
bool print_replay_result(const ReplayDone& d) {
  const runtime::Session& session = d.session;
  const double sim =
      static_cast<double>(session.steps_done()) * static_cast<double>(d.rec.scenario.loop.period_ns) * 1e-9;
  char final_hash[24];  // hex, as the summary's state_hash (JSON numbers this large get rounded)
  std::snprintf(final_hash, sizeof final_hash, "%016llx",
                static_cast<unsigned long long>(runtime::hash_state(session.state())));
  nlohmann::json result{{"recording", d.options.recording},
                        {"from_step", d.first},
                        {"steps", session.steps_done()},
                        {"wall_time_s", d.wall},
                        {"speed_x_real_time", d.wall > 0 ? sim / d.wall : 0.0},
                        {"final_state_hash", final_hash},
                        {"outcome", runtime::to_string(d.outcome)}};
  if (d.verify) {
    result["verified_steps"] = d.verified;
    result["identical"] = !d.divergence.has_value();
    if (d.divergence) result["first_divergence"] = d.divergence->describe();
  }
  bool commands_diverged = false;
  if (d.regression) {
    result["firmware_regression"] = nlohmann::json::array();
    for (std::size_t i = 0; i < d.regressions.size(); ++i) {
      const adapters::RegressionEndpoint& r = *d.regressions[i];
      nlohmann::json j = r.comparison().to_json();
      j["endpoint"] = r.name();
      j["mode"] = adapters::to_string(r.mode());
      j["launch"] = d.launches[i];
      j["recorded_firmware"] = r.recorded_firmware();
      j["new_firmware"] = r.new_firmware_description();
      result["firmware_regression"].push_back(std::move(j));
      commands_diverged = commands_diverged || r.comparison().diverged();
    }
    // a replay stopped early (a state differed, SIGINT) compared only part of the recording
    result["complete"] = session.steps_done() == d.steps_planned;
  }
  std::string judged;
  const nlohmann::json expectations = judge_expectations(d, judged);
  if (!expectations.is_null()) result["expectations"] = expectations;
  if (d.options.json) {
    std::cout << runtime::json_text(result, 2) << '\n';
    return commands_diverged;
  }
  std::printf("replayed %llu steps from step %llu in %.3f s (%.0fx real time), final state hash %016llx\n",
              static_cast<unsigned long long>(session.steps_done()), static_cast<unsigned long long>(d.first), d.wall,
              d.wall > 0 ? sim / d.wall : 0.0, static_cast<unsigned long long>(runtime::hash_state(session.state())));
  if (d.verify) {
    if (d.divergence)
      std::printf("verify: FAILED, first divergence at %s\n", d.divergence->describe().c_str());
    else if (d.regression && !d.options.verify)
      std::printf(
          "verify: all %llu replayed states are bit-identical to the recording (the new firmware got "
          "the readings the recorded one got)\n",
          static_cast<unsigned long long>(d.verified));
    else
      std::printf("verify: all %llu replayed states are bit-identical to the recording\n",
                  static_cast<unsigned long long>(d.verified));
  }
  if (!judged.empty()) std::printf("%s\n", judged.c_str());
  for (std::size_t i = 0; i < d.regressions.size(); ++i)
    std::fputs(adapters::regression_report_text(*d.regressions[i], d.launches[i]).c_str(), stdout);
  return commands_diverged;
}

}  // namespace

int replay_command(const ReplayOptions& options) {
  std::vector<adapters::FirmwareSpec> specs;
  if (const int code = parse_replay_options(options, specs); code != exit_ok) return code;
  const bool regression = !specs.empty();
  const auto mode = options.closed_loop ? adapters::RegressionMode::closed_loop : adapters::RegressionMode::open_loop;
  const bool live_on = !options.live.empty();

  runtime::Recording rec;
  std::string error;
  if (!runtime::load_recording(options.recording, rec, &error)) {
    std::cerr << "tether: " << error << '\n';
    return exit_usage;
  }
  std::uint64_t first = 0, end = 0;
  const runtime::Keyframe* start = nullptr;
  if (const int code = find_start(options, rec, regression, first, end, start); code != exit_ok) return code;
  std::vector<std::unique_ptr<runtime::Endpoint>> endpoints;
  std::vector<adapters::RegressionEndpoint*> regressions;
  std::vector<std::string> launches;
  if (const int code = make_replay_endpoints(options, rec, specs, mode, endpoints, regressions, launches);
      code != exit_ok)
    return code;
  // open loop: the world must follow the recording, or the new firmware is not getting the
  // readings the recorded one got; every state is checked
  const bool verify = options.verify || (regression && mode == adapters::RegressionMode::open_loop);

  runtime::SessionOptions so;
  so.real_time_factor = options.real_time_factor.value_or(live_on ? 1.0 : 0.0);
  so.steps = end - first;
  so.scripted_commands = &rec.commands;  // a live session's forces and gains, at their steps
  // served live (docs/live.md): paced, steered by clients, seeks from keyframes, and held
  // at the last step until a client shuts it down
  runtime::SessionControl control;
  std::unique_ptr<live::Server> server;
  std::string live_host;
  if (live_on) {
    int code = exit_ok;
    server = make_live_server(rec.scenario, options.live, control, true, live_host, code);
    if (!server) return code;
    so.control = &control;
    so.start_paused = options.live_paused;
    so.keyframes = &rec.keyframes;
    so.hold_at_end = true;
  }
  std::optional<runtime::Divergence> divergence;
  std::uint64_t verified = 0;
  const bool bar = !options.quiet && isatty(STDERR_FILENO);
  auto last_bar = std::chrono::steady_clock::now();
  so.after_step = [&](const runtime::WorldState& s) {
    if (verify) {
      divergence = runtime::compare_state(rec, s);
      if (divergence) return false;
      ++verified;
    }
    if (bar && std::chrono::steady_clock::now() - last_bar > std::chrono::milliseconds(100)) {
      last_bar = std::chrono::steady_clock::now();
      progress(s.step - first, end - first);
    }
    return true;
  };
  std::unique_ptr<runtime::Session> session;
  try {
    session = std::make_unique<runtime::Session>(rec.scenario, std::move(endpoints), so);
  } catch (const runtime::ConfigError& e) {
    print_config_error(e);
    return exit_usage;
  }
  if (start && !session->restore(*start, &error)) {
    std::cerr << "tether: cannot start from the keyframe at step " << first << ": " << error << '\n';
    return exit_usage;
  }
  // the server publishes what a recorder (keeping no file) writes of the replayed steps:
  // the recording's channels, as a live session has them
  std::unique_ptr<runtime::Recorder> recorder;
  if (server) {
    recorder = make_recorder(rec.scenario, *session);
    recorder->set_tap(server.get());
    if (!recorder->open_without_file(&error)) {
      std::cerr << "tether: " << error << '\n';
      return exit_usage;
    }
    session->set_recorder(recorder.get());
    if (!start_live_server(*server, live_host, so.start_paused)) return exit_start_failed;
  }
  install_signal_handlers();
  const auto t0 = std::chrono::steady_clock::now();
  runtime::Outcome outcome;
  try {
    outcome = session->run(stop_requested());
  } catch (const std::exception& e) {
    if (bar) std::fputs("\r\033[K", stderr);
    std::cerr << "tether: " << e.what() << '\n';
    return exit_start_failed;
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (recorder) {
    (void)recorder->close(session->summary(), &error);  // the clients get the summary; no file
    session->set_recorder(nullptr);                     // the session's summary is asked for again below
    recorder.reset();
  }
  if (server) server->stop();
  if (bar) {
    progress(session->steps_done(), end - first);
    std::fputs("\n", stderr);
  }
  const bool commands_diverged = print_replay_result({options, rec, *session, outcome, first, wall, verify, regression,
                                                      verified, divergence, regressions, launches, end - first});
  if (divergence || commands_diverged || outcome == runtime::Outcome::aborted || outcome == runtime::Outcome::failed)
    return exit_aborted;
  if (outcome == runtime::Outcome::stopped && stop_requested().load()) return exit_stopped;
  return exit_ok;
}

}  // namespace tether::cli
