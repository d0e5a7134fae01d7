// SPDX-License-Identifier: Apache-2.0
#include "commands.hpp"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>

#include <unistd.h>

#include <nlohmann/json.hpp>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "tether/recording/json_text.hpp"
#include "tether/adapters/endpoint_factory.hpp"
#include "tether/adapters/firmware_regression.hpp"
#include "tether/adapters/launch_check.hpp"
#include "tether/adapters/mqtt_endpoint.hpp"
#include "tether/adapters/serial_endpoint.hpp"
#include "tether/adapters/serial_port.hpp"
#include "tether/hal/device_table.hpp"
#include "tether/live/server.hpp"
#include "tether/recording/recorder.hpp"
#include "tether/loop/recorder_inputs.hpp"
#include "tether/loop/replay_endpoint.hpp"
#include "tether/report/report.hpp"
#include "tether/scenario/scenario.hpp"
#include "tether/loop/session.hpp"

namespace tether::cli {

namespace {

// the terminal: stderr, with the status line (if one is shown) cleared before a log line
// and drawn again after it
std::mutex g_console_mutex;
std::string g_status_line;  // under g_console_mutex
bool g_status_tty = false;

class ConsoleSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  ConsoleSink() : inner_(std::make_shared<spdlog::sinks::stderr_color_sink_mt>()) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::lock_guard lock(g_console_mutex);
    const bool redraw = g_status_tty && !g_status_line.empty();
    if (redraw) std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
    inner_->log(msg);
    inner_->flush();
    if (redraw) {
      std::fputs(g_status_line.c_str(), stderr);
      std::fflush(stderr);
    }
  }
  void flush_() override { inner_->flush(); }

 private:
  std::shared_ptr<spdlog::sinks::stderr_color_sink_mt> inner_;
};

std::shared_ptr<ConsoleSink> g_console;
spdlog::level::level_enum g_level = spdlog::level::info;

void update_logger_level() {
  auto level = spdlog::level::off;
  for (const auto& s : spdlog::default_logger()->sinks()) level = std::min(level, s->level());
  spdlog::default_logger()->set_level(level);
}

}  // namespace

void log_to_stderr() {
  g_console = std::make_shared<ConsoleSink>();
  g_console->set_level(g_level);
  auto logger = std::make_shared<spdlog::logger>("", g_console);
  logger->set_level(g_level);
  spdlog::set_default_logger(std::move(logger));
  g_status_tty = isatty(STDERR_FILENO) != 0;
}

bool set_log_level(const std::string& level) {
  const auto l = spdlog::level::from_str(level);
  if (l == spdlog::level::off && level != "off") return false;
  g_level = l;
  for (const auto& s : spdlog::default_logger()->sinks()) s->set_level(l);
  update_logger_level();
  return true;
}

bool log_to_file(const std::string& path, std::string* error) {
  try {
    auto file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, true);
    file->set_level(g_level);
    spdlog::default_logger()->sinks().push_back(std::move(file));
    update_logger_level();
    return true;
  } catch (const spdlog::spdlog_ex& e) {
    if (error) *error = e.what();
    return false;
  }
}

void quiet_console() {
  if (g_console) g_console->set_level(std::max(g_level, spdlog::level::warn));
  update_logger_level();
}

void show_status_line(const std::string& line) {
  std::lock_guard lock(g_console_mutex);
  g_status_line = g_status_tty ? line : std::string();
  if (g_status_tty)
    std::fputs(("\r\033[K" + line).c_str(), stderr);
  else if (!line.empty())
    std::fputs((line + "\n").c_str(), stderr);
  std::fflush(stderr);
}

namespace {

std::atomic<bool> g_stop{false};

extern "C" void on_signal(int) { g_stop.store(true); }

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

void print_config_error(const runtime::ConfigError& e) {
  for (const auto& line : e.errors()) std::cerr << line << '\n';
  std::cerr << e.errors().size() << (e.errors().size() == 1 ? " error" : " errors") << '\n';
}

std::string us(double ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f µs", ns / 1000.0);
  return buf;
}

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

// an estimator's parameters, one per line: value, sigma, whether the data identified it and,
// when an in-process stand-in knows it, the hidden truth beside it (docs/feedback.md)
void print_estimates(std::ostream& out, const nlohmann::json& f, const nlohmann::json& s) {
  char line[256];
  if (f.value("misfit", false)) {
    std::snprintf(line, sizeof line,
                  "    model misfit: the residuals are %.3g times the stated noise (with their correlation): the "
                  "estimates are the best fit of a model that cannot represent the vehicle, none is identified\n",
                  f.value("noise_scale", 0.0));
    out << line;
  }
  // the truth, from a stand_in endpoint's summary: the vehicle's first body
  const nlohmann::json* truth = nullptr;
  const std::string vehicle = f.value("vehicle", "") + ".";
  if (s.contains("endpoints"))
    for (const auto& e : s["endpoints"])
      if (e.contains("hidden_truth") && e["hidden_truth"].is_object())
        for (const auto& [body, values] : e["hidden_truth"].items())
          if (!truth && body.rfind(vehicle, 0) == 0) truth = &values;
  const auto& sd = f.contains("stddev") ? f["stddev"] : nlohmann::json();
  const auto& id = f.contains("identified") ? f["identified"] : nlohmann::json();
  for (const auto& [key, value] : f["estimates"].items()) {
    if (!value.is_number()) continue;
    std::snprintf(line, sizeof line, "    %-20s %10.4g", key.c_str(), value.get<double>());
    out << line;
    const bool has_sd = sd.is_object() && sd.contains(key) && sd[key].is_number();
    if (has_sd) {
      std::snprintf(line, sizeof line, " ± %-9.2g", sd[key].get<double>());
      out << line;
    }
    if (id.is_object() && id.contains(key) && id[key].is_boolean())
      out << (id[key].get<bool>() ? "  identified" : "  not identified");
    if (truth && truth->contains(key) && (*truth)[key].is_number()) {
      const double t = (*truth)[key].get<double>();
      std::snprintf(line, sizeof line, "  (hidden truth %.4g", t);
      out << line;
      if (has_sd && sd[key].get<double>() > 0) {
        std::snprintf(line, sizeof line, ", %+.1f sigma", (value.get<double>() - t) / sd[key].get<double>());
        out << line;
      }
      out << ')';
    }
    out << '\n';
  }
}

void print_summary_text(const nlohmann::json& s, std::ostream& out) {
  char line[512];
  std::snprintf(line, sizeof line,
                "session \"%s\" %s: %llu of %llu steps, %.3f s sim time in %.3f s wall (real-time factor %.2f achieved",
                s["scenario"].get<std::string>().c_str(), s["outcome"].get<std::string>().c_str(),
                static_cast<unsigned long long>(s["steps"].get<std::uint64_t>()),
                static_cast<unsigned long long>(s["steps_planned"].get<std::uint64_t>()), s["sim_time_s"].get<double>(),
                s["wall_time_s"].get<double>(), s["achieved_real_time_factor"].get<double>());
  out << line;
  if (s["real_time_factor"].get<double>() > 0) out << ", target " << s["real_time_factor"].get<double>();
  out << ")\n";
  if (s.contains("reason"))  // "aborted: ..." or "failed: ..."
    out << "  " << s["outcome"].get<std::string>() << ": " << s["reason"].get<std::string>() << '\n';
  if (s.contains("recording") && s["recording"].value("dropped_items", 0) > 0)
    out << "  warning: the recorder dropped " << s["recording"]["dropped_items"]
        << " items (queue full); replay of this recording will stop at the first gap\n";
  const auto& st = s["step_time_ns"];
  out << "  step time p50 " << us(st["p50"].get<double>()) << ", p99 " << us(st["p99"].get<double>()) << ", max "
      << us(st["max"].get<double>()) << "; overruns " << s["overruns"].get<std::uint64_t>() << "; physics sub-steps "
      << s["physics_substeps"].get<std::uint64_t>();
  if (s.value("physics_threads", 1) > 1) out << " on " << s["physics_threads"].get<int>() << " threads";
  out << '\n';
  for (const auto& e : s["endpoints"]) {
    out << "  endpoint " << e["name"].get<std::string>() << " (" << e["type"].get<std::string>() << ", policy "
        << e["policy"].get<std::string>() << ", deadline " << e["deadline_ms"].get<double>() << " ms): replies "
        << e["replies"] << ", misses " << e["misses"] << ", late " << e["late"] << ", stale " << e["stale"]
        << ", corrupt " << e["corrupt"] << ", faults " << e["faults"]
        << (e.value("implausible", 0) > 0 ? ", implausible " + std::to_string(e["implausible"].get<std::uint64_t>())
                                          : "")
        << "; round trip p50 " << us(e["round_trip_ns"]["p50"].get<double>()) << ", p99 "
        << us(e["round_trip_ns"]["p99"].get<double>()) << '\n';
    if (e.contains("fault")) out << "    fault: " << e["fault"].get<std::string>() << '\n';
    if (e.contains("depth_error_m")) {
      std::snprintf(line, sizeof line, "    depth hold: target %.3f m, final %.4f m, final depth error %+.4f m\n",
                    e["target_depth_m"].get<double>(), e["final_depth_m"].get<double>(),
                    e["depth_error_m"].get<double>());
      out << line;
    }
  }
  if (s.contains("devices") && s["devices"].value("invalid_commands", 0) > 0)
    out << "  devices: " << s["devices"]["invalid_commands"] << " actuator commands refused, of them "
        << s["devices"].value("nonfinite_commands", 0) << " NaN/Inf (the previous command stayed; see the events)\n";
  if (s.contains("faults"))
    for (const auto& f : s["faults"]) {
      const auto& acts = f["activations"];
      out << "  fault " << f["name"].get<std::string>() << ": active " << f["active_steps"].get<std::uint64_t>()
          << " steps in " << f["activation_count"].get<std::uint64_t>() << " activation"
          << (f["activation_count"] == 1 ? "" : "s");
      if (!acts.empty()) {
        std::snprintf(line, sizeof line, ", first at step %llu (t = %.3f s)",
                      acts[0]["start_step"].get<unsigned long long>(), acts[0]["start_s"].get<double>());
        out << line;
      }
      out << '\n';
    }
  if (s.contains("expectations")) {
    std::size_t failed = 0, skipped = 0;
    for (const auto& x : s["expectations"]) {
      failed += x["verdict"] == "FAIL";
      skipped += x["verdict"] == "SKIPPED";
    }
    out << "  expectations: " << s["expectations"].size() - failed - skipped << " of " << s["expectations"].size()
        << " passed" << (skipped ? ", " + std::to_string(skipped) + " skipped (the run ended before their window)" : "")
        << (failed ? " - FAIL" : "") << '\n';
    for (const auto& x : s["expectations"]) {
      out << "    " << x["verdict"].get<std::string>() << "  " << x["name"].get<std::string>();
      if (x.contains("worst") && !x["worst"].is_null()) {
        std::snprintf(line, sizeof line, "; %s %.4g",
                      x["when"].get<std::string>().rfind("eventually", 0) == 0 ? "closest" : "worst",
                      x["worst"].get<double>());
        out << line;
      }
      if (!x["first_failing_step"].is_null()) {
        std::snprintf(line, sizeof line, "; first failing at step %llu (t = %.3f s)",
                      x["first_failing_step"].get<unsigned long long>(), x["first_failing_time_s"].get<double>());
        out << line;
      }
      if (x.contains("reason")) out << "; " << x["reason"].get<std::string>();
      out << '\n';
    }
  }
  for (const auto& v : s["vehicles"]) {
    const auto& p = v["position_m"];
    std::snprintf(line, sizeof line, "  vehicle %s: position (%.3f, %.3f, %.3f) m, heading %.1f° (compass)",
                  v["name"].get<std::string>().c_str(), p[0].get<double>(), p[1].get<double>(), p[2].get<double>(),
                  v["heading_deg"].get<double>());
    out << line;
    if (v.contains("depth_m")) {
      std::snprintf(line, sizeof line, ", depth %.4f m", v["depth_m"].get<double>());
      out << line;
    }
    out << '\n';
  }
  // the scenario's goals: each vehicle's final depth and heading against them
  if (s.contains("goals"))
    for (const auto& g : s["goals"]) {
      out << "  goal " << g["vehicle"].get<std::string>() << ":";
      if (g.contains("depth_error_m")) {
        std::snprintf(line, sizeof line, " depth target %.3f m, final %.4f m, final depth error %+.4f m",
                      g["target_depth_m"].get<double>(), g["final_depth_m"].get<double>(),
                      g["depth_error_m"].get<double>());
        out << line << (g.contains("heading_error_deg") ? ";" : "");
      }
      if (g.contains("heading_error_deg")) {
        std::snprintf(line, sizeof line, " heading target %.1f°, final %.1f°, error %+.1f°",
                      g["target_heading_deg"].get<double>(), g["final_heading_deg"].get<double>(),
                      g["heading_error_deg"].get<double>());
        out << line;
      }
      out << '\n';
    }
  // loop.realtime: what the system granted the loop thread
  if (s.contains("realtime") && s["realtime"].is_object())
    for (const auto& [option, status] : s["realtime"].items())
      out << "  realtime " << option << ": " << (status.is_string() ? status.get<std::string>() : status.dump())
          << '\n';
  // feedback processors: what they did and, for estimators, what they learned
  if (s.contains("feedback"))
    for (const auto& f : s["feedback"]) {
      out << "  feedback " << f.value("name", "?") << " (" << f.value("type", "?") << ", " << f.value("phase", "?")
          << ", vehicle " << f.value("vehicle", "?") << ")";
      if (f.contains("updates")) out << ": updates " << f["updates"];
      if (f.contains("rejected")) out << ", rejected " << f["rejected"];
      if (f.contains("mean_nis") && f["mean_nis"].is_number()) {
        std::snprintf(line, sizeof line, ", mean NIS %.2f", f["mean_nis"].get<double>());
        out << line;
      }
      out << '\n';
      if (f.contains("estimates") && f["estimates"].is_object()) print_estimates(out, f, s);
    }
  // loop.profile_phases: where a step's wall time went, phase by phase
  if (s.contains("phase_profile")) {
    const auto& p = s["phase_profile"];
    out << "  phases (wall time per step, loop.profile_phases):\n";
    for (const auto& name : p["order"]) {
      const auto& ph = p["phases"][name.get<std::string>()];
      std::snprintf(line, sizeof line, "    %-10s %10.0f ns %6.1f %%   max %9.0f ns\n", name.get<std::string>().c_str(),
                    ph["mean_ns_per_step"].get<double>(), 100 * ph["share"].get<double>(),
                    static_cast<double>(ph["max_ns"].get<std::uint64_t>()));
      out << line;
    }
  }
  if (s.contains("state_hash")) out << "  final state hash " << s["state_hash"].get<std::string>() << '\n';
}

// the live server of `tether run --live` and `tether replay --live` (docs/live.md), not
// started yet; null with `exit_code` set when it must not start (a bad --live value, a
// non-loopback address without a token: refused before anything starts)
std::unique_ptr<live::Server> make_live_server(const runtime::Scenario& scenario, const std::string& option,
                                               runtime::SessionControl& control, bool replay, std::string& host,
                                               int& exit_code) {
  live::ServerOptions so;
  std::string why;
  if (!live::server_options(scenario.live, option, so, &why)) {
    std::cerr << "tether: " << why << '\n';
    exit_code = exit_usage;
    return nullptr;
  }
  if (!live::is_loopback(so.host) && so.token.empty()) {
    std::cerr << "tether: the live server would listen on " << so.host
              << ", which is not a loopback address: set live.token in the scenario or TETHER_LIVE_TOKEN in "
                 "the environment (clients present it), or leave the host out to serve 127.0.0.1 only\n";
    exit_code = exit_usage;
    return nullptr;
  }
  so.name = std::string(replay ? "tether replay: " : "tether: ") + scenario.name;
  so.replay = replay;
  host = so.host.find(':') != std::string::npos ? "[" + so.host + "]" : so.host;
  auto server = std::make_unique<live::Server>(so, &control);
  std::vector<std::pair<std::string, std::uint32_t>> bodies;
  for (std::size_t b = 0; b < scenario.model.bodies.size(); ++b)
    bodies.emplace_back(scenario.model.bodies[b].name, static_cast<std::uint32_t>(b));
  for (const auto& v : scenario.model.vehicles)
    bodies.emplace_back(v.name, static_cast<std::uint32_t>(v.bodies.front()));
  server->set_bodies(std::move(bodies));
  return server;
}

// starts it and prints the address a client connects to (a port of 0: the one the system chose)
bool start_live_server(live::Server& server, const std::string& host, bool paused) {
  try {
    server.start();
  } catch (const std::exception& e) {
    std::cerr << "tether: " << e.what() << '\n';
    return false;
  }
  std::cerr << "live: ws://" << host << ":" << server.port()
            << (paused ? " (paused: a client resumes or steps it)" : "") << '\n';
  return true;
}

}  // namespace

int devices_command(const DevicesOptions& options) {
  try {
    const runtime::Scenario scenario = runtime::load_scenario(options.scenario);
    const hal::DeviceBank bank(scenario.devices, scenario.loop.seed, scenario.model.bodies.size());
    if (options.json)
      std::cout << runtime::json_text(hal::device_table_json(bank), 2) << '\n';
    else
      std::cout << hal::device_table_text(bank);
    return exit_ok;
  } catch (const runtime::ConfigError& e) {
    print_config_error(e);
    return exit_usage;
  } catch (const std::invalid_argument& e) {
    std::cerr << options.scenario << ": " << e.what() << '\n';
    return exit_usage;
  }
}

int check_command(const CheckOptions& options) {
  try {
    const runtime::Scenario scenario = runtime::load_scenario(options.scenario, options.overrides);
    const auto endpoints = adapters::make_endpoints(scenario);
    const auto processors = runtime::make_feedback_processors(scenario);
    const auto missing = adapters::launch_problems(endpoints);  // each endpoint type checks its own launch
    if (!missing.empty()) {
      for (const auto& m : missing) std::cerr << options.scenario << ": " << m << '\n';
      return exit_usage;
    }
    std::cout << options.scenario << ": ok (" << scenario.model.vehicles.size() << " vehicles, "
              << scenario.model.bodies.size() << " bodies, " << scenario.model.statics.size() << " static bodies, "
              << endpoints.size() << " endpoints, " << processors.size() << " feedback processors, "
              << scenario.loop.steps << " steps of " << static_cast<double>(scenario.loop.period_ns) * 1e-6 << " ms)\n";
    return exit_ok;
  } catch (const runtime::ConfigError& e) {
    print_config_error(e);
    return exit_usage;
  }
}

int run_command(const RunOptions& options) {
  if (!set_log_level(options.log_level)) {
    std::cerr << "tether: --log-level " << options.log_level << ": expected trace, debug, info, warn, error or off\n";
    return exit_usage;
  }
  if (options.quiet) quiet_console();
  runtime::Scenario scenario;
  std::vector<std::unique_ptr<runtime::Endpoint>> endpoints;
  try {
    scenario = runtime::load_scenario(options.scenario, options.overrides);
    endpoints = adapters::make_endpoints(scenario);
  } catch (const runtime::ConfigError& e) {
    print_config_error(e);
    return exit_usage;
  }

  const std::string out_dir = options.out_dir.empty() ? default_out_dir(scenario.name) : options.out_dir;
  std::error_code ec;
  // an earlier session's files are never replaced silently
  if (!options.overwrite)
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

  runtime::SessionOptions session_options;
  session_options.real_time_factor = options.real_time_factor;
  session_options.steps = options.steps;
  const bool tty = isatty(STDERR_FILENO) != 0;
  if (!options.quiet) {
    // a terminal gets one line rewritten in place; a log file gets a line every 5 s
    session_options.status_interval_s = tty ? 0.25 : 5.0;
    session_options.on_status = [](const runtime::LiveStatus& s) {
      char line[256];
      std::snprintf(line, sizeof line, "step %llu/%llu  t=%.2f s  rtf %.2f  step p99 %.1f µs  misses %llu",
                    static_cast<unsigned long long>(s.step), static_cast<unsigned long long>(s.steps_total),
                    s.sim_time_s, s.achieved_rtf, static_cast<double>(s.step_p99_ns) / 1000.0,
                    static_cast<unsigned long long>(s.misses));
      show_status_line(line);
    };
  }

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
    recorder = std::make_unique<runtime::Recorder>(scenario, runtime::recorder_inputs(session));
    // (unpaced, the session makes the recorder wait rather than drop: Session::set_recorder)
    if (server) recorder->set_tap(server.get());
    std::string error;
    const bool opened =
        scenario.recording.enabled ? recorder->open(recording_path, &error) : recorder->open_without_file(&error);
    if (!opened) {
      std::cerr << "tether: cannot record to " << recording_path << ": " << error << '\n';
      return exit_usage;
    }
    session.set_recorder(recorder.get());
  }
  if (server && !start_live_server(*server, live_host, session_options.start_paused)) return exit_start_failed;
  runtime::Outcome outcome;
  try {
    outcome = session.run(g_stop);
  } catch (const std::exception& e) {
    if (!options.quiet) show_status_line("");
    std::cerr << "tether: " << e.what() << '\n';
    return exit_start_failed;
  }
  if (!options.quiet) show_status_line("");

  nlohmann::json summary = session.summary();
  if (server) summary["live"] = server->summary();
  if (recorder && !scenario.recording.enabled) {
    std::string error;
    (void)recorder->close(summary, &error);  // the live clients get the summary; no file
    recorder.reset();
  }
  if (recorder) {
    std::string error;
    if (!recorder->close(summary, &error)) std::cerr << "tether: the recording may be incomplete: " << error << '\n';
    summary["recording"]["dropped_items"] = recorder->dropped();
  }
  // after the recorder has handed the summary to the clients
  if (server) server->stop();
  // the report reads the closed recording, as `tether report` would
  const std::string report_path = out_dir + "/report.html";
  bool report_written = false;
  if (recorder) {
    std::string error;
    report_written = runtime::write_report(recording_path, report_path, &error);
    if (!report_written) std::cerr << "tether: could not write the report: " << error << '\n';
  }
  const std::string summary_path = out_dir + "/summary.json";
  {
    std::ofstream f(summary_path);
    f << runtime::json_text(summary, 2) << '\n';
    if (!f) std::cerr << "tether: could not write " << summary_path << '\n';
  }
  if (options.json) {
    std::cout << runtime::json_text(summary, 2) << '\n';
  } else {
    print_summary_text(summary, std::cout);
    if (recorder) std::cout << "  recording: " << recording_path << '\n';
    if (report_written) std::cout << "  report: " << report_path << '\n';
    std::cout << "  summary: " << summary_path << '\n';
  }
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
  }
  return exit_aborted;
}

}  // namespace tether::cli

namespace tether::cli {

namespace {

void progress(std::uint64_t done, std::uint64_t total) {
  const int width = 40;
  const int filled = total ? static_cast<int>(width * done / total) : width;
  std::fprintf(stderr, "\r\033[Kreplay [%.*s%*s] %llu/%llu", filled, "########################################",
               width - filled, "", static_cast<unsigned long long>(done), static_cast<unsigned long long>(total));
  std::fflush(stderr);
}

}  // namespace

int replay_command(const ReplayOptions& options) {
  // the --firmware specs first: bad usage is reported before anything is read or launched
  std::vector<adapters::FirmwareSpec> specs;
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
  const auto mode = options.closed_loop ? adapters::RegressionMode::closed_loop : adapters::RegressionMode::open_loop;
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

  runtime::Recording rec;
  std::string error;
  if (!runtime::load_recording(options.recording, rec, &error)) {
    std::cerr << "tether: " << error << '\n';
    return exit_usage;
  }
  if (rec.steps.empty()) {
    std::cerr << "tether: " << options.recording << ": the recording has no steps\n";
    return exit_usage;
  }
  std::uint64_t first = rec.steps.front().step;
  const std::uint64_t end = rec.steps.back().step + 1;
  const runtime::Keyframe* start = nullptr;
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
  std::vector<std::unique_ptr<runtime::Endpoint>> endpoints;
  std::vector<adapters::RegressionEndpoint*> regressions;
  std::vector<std::string> launches;
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
    recorder = std::make_unique<runtime::Recorder>(rec.scenario, runtime::recorder_inputs(*session));
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
    outcome = session->run(g_stop);
  } catch (const std::exception& e) {
    if (bar) std::fputs("\r\033[K", stderr);
    std::cerr << "tether: " << e.what() << '\n';
    return exit_start_failed;
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (recorder) {
    (void)recorder->close(session->summary(), &error);  // the clients get the summary; no file
    recorder.reset();
  }
  if (server) server->stop();
  if (bar) {
    progress(session->steps_done(), end - first);
    std::fputs("\n", stderr);
  }
  const double sim =
      static_cast<double>(session->steps_done()) * static_cast<double>(rec.scenario.loop.period_ns) * 1e-9;
  char final_hash[24];  // hex, as the summary's state_hash (JSON numbers this large get rounded)
  std::snprintf(final_hash, sizeof final_hash, "%016llx",
                static_cast<unsigned long long>(runtime::hash_state(session->state())));
  nlohmann::json result{{"recording", options.recording},
                        {"from_step", first},
                        {"steps", session->steps_done()},
                        {"wall_time_s", wall},
                        {"speed_x_real_time", wall > 0 ? sim / wall : 0.0},
                        {"final_state_hash", final_hash},
                        {"outcome", runtime::to_string(outcome)}};
  if (verify) {
    result["verified_steps"] = verified;
    result["identical"] = !divergence.has_value();
    if (divergence) result["first_divergence"] = divergence->describe();
  }
  bool commands_diverged = false;
  if (regression) {
    result["firmware_regression"] = nlohmann::json::array();
    for (std::size_t i = 0; i < regressions.size(); ++i) {
      const adapters::RegressionEndpoint& r = *regressions[i];
      nlohmann::json j = r.comparison().to_json();
      j["endpoint"] = r.name();
      j["mode"] = adapters::to_string(r.mode());
      j["launch"] = launches[i];
      j["recorded_firmware"] = r.recorded_firmware();
      j["new_firmware"] = r.new_firmware_description();
      result["firmware_regression"].push_back(std::move(j));
      commands_diverged = commands_diverged || r.comparison().diverged();
    }
    // a replay stopped early (a state differed, SIGINT) compared only part of the recording
    result["complete"] = session->steps_done() == end - first;
  }
  if (options.json) {
    std::cout << runtime::json_text(result, 2) << '\n';
  } else {
    std::printf("replayed %llu steps from step %llu in %.3f s (%.0fx real time), final state hash %016llx\n",
                static_cast<unsigned long long>(session->steps_done()), static_cast<unsigned long long>(first), wall,
                wall > 0 ? sim / wall : 0.0, static_cast<unsigned long long>(runtime::hash_state(session->state())));
    if (verify) {
      if (divergence)
        std::printf("verify: FAILED, first divergence at %s\n", divergence->describe().c_str());
      else if (regression && !options.verify)
        std::printf(
            "verify: all %llu replayed states are bit-identical to the recording (the new firmware got "
            "the readings the recorded one got)\n",
            static_cast<unsigned long long>(verified));
      else
        std::printf("verify: all %llu replayed states are bit-identical to the recording\n",
                    static_cast<unsigned long long>(verified));
    }
    for (std::size_t i = 0; i < regressions.size(); ++i)
      std::fputs(adapters::regression_report_text(*regressions[i], launches[i]).c_str(), stdout);
  }
  if (divergence || commands_diverged || outcome == runtime::Outcome::aborted || outcome == runtime::Outcome::failed)
    return exit_aborted;
  if (outcome == runtime::Outcome::stopped && g_stop.load()) return exit_stopped;
  return exit_ok;
}

std::string recording_path(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return (std::filesystem::path(path) / "recording.mcap").string();
  return path;
}

int info_command(const InfoOptions& options) {
  runtime::Recording rec;
  std::string error;
  if (!runtime::load_recording(options.recording, rec, &error)) {
    std::cerr << "tether: " << error << '\n';
    return exit_usage;
  }
  nlohmann::json j;
  j["recording"] = options.recording;
  j["scenario"] = rec.scenario.name;
  j["file_size_bytes"] = rec.file_size_bytes;
  j["steps"] = rec.steps.size();
  j["first_step"] = rec.steps.empty() ? 0 : rec.steps.front().step;
  j["duration_s"] = static_cast<double>(rec.steps.size()) * static_cast<double>(rec.scenario.loop.period_ns) * 1e-9;
  j["period_ms"] = static_cast<double>(rec.scenario.loop.period_ns) * 1e-6;
  j["keyframes"] = rec.keyframes.size();
  j["complete"] = !rec.truncated && rec.summary.has_value();
  if (rec.truncated) j["truncation"] = rec.truncation;
  j["endpoints"] = nlohmann::json::array();
  for (const auto& e : rec.scenario.endpoints)
    j["endpoints"].push_back({{"name", e.name}, {"type", e.type}, {"policy", runtime::to_string(e.policy)}});
  if (rec.summary) {
    j["outcome"] = (*rec.summary)["outcome"];
    j["counters"] = nlohmann::json::object();
    for (const auto& e : (*rec.summary)["endpoints"])
      j["counters"][e["name"].get<std::string>()] = {{"replies", e["replies"]}, {"misses", e["misses"]},
                                                     {"late", e["late"]},       {"stale", e["stale"]},
                                                     {"corrupt", e["corrupt"]}, {"faults", e["faults"]}};
  }
  j["events"] = rec.events.size();
  j["log_time_s"] = {static_cast<double>(rec.first_log_time_ns) * 1e-9,
                     static_cast<double>(rec.last_log_time_ns) * 1e-9};
  j["channels"] = nlohmann::json::array();
  for (const auto& [topic, stats] : rec.channels) {
    const auto& f = rec.channel_formats.at(topic);
    j["channels"].push_back({{"topic", topic},
                             {"messages", stats.first},
                             {"bytes", stats.second},
                             {"encoding", f.encoding},
                             {"schema", f.schema},
                             {"schema_encoding", f.schema_encoding}});
  }
  if (options.json) {
    std::cout << runtime::json_text(j, 2) << '\n';
    return exit_ok;
  }
  std::printf("recording   %s (%.1f kB)%s\n", options.recording.c_str(), static_cast<double>(rec.file_size_bytes) / 1e3,
              rec.truncated ? "  TRUNCATED (the session did not finish)" : "");
  if (rec.truncated) std::printf("            %s\n", rec.truncation.c_str());
  std::printf("scenario    %s\n", rec.scenario.name.c_str());
  std::printf("steps       %zu from step %llu, %.3f s at %.3g ms; %zu keyframes\n", rec.steps.size(),
              static_cast<unsigned long long>(j["first_step"].get<std::uint64_t>()), j["duration_s"].get<double>(),
              j["period_ms"].get<double>(), rec.keyframes.size());
  if (rec.summary) std::printf("outcome     %s\n", (*rec.summary)["outcome"].get<std::string>().c_str());
  for (const auto& e : rec.scenario.endpoints) {
    std::printf("endpoint    %s (%s, policy %s)", e.name.c_str(), e.type.c_str(), runtime::to_string(e.policy));
    if (j.contains("counters") && j["counters"].contains(e.name)) {
      const auto& c = j["counters"][e.name];
      std::printf(": replies %llu, misses %llu, late %llu, stale %llu, corrupt %llu, faults %llu",
                  c["replies"].get<unsigned long long>(), c["misses"].get<unsigned long long>(),
                  c["late"].get<unsigned long long>(), c["stale"].get<unsigned long long>(),
                  c["corrupt"].get<unsigned long long>(), c["faults"].get<unsigned long long>());
    }
    std::printf("\n");
  }
  std::printf("log time    %.3f .. %.3f s (simulation time)\n", j["log_time_s"][0].get<double>(),
              j["log_time_s"][1].get<double>());
  std::printf("events      %zu\nchannels    %zu\n", rec.events.size(), rec.channels.size());
  // the columns as wide as their longest entry, so every row lines up
  auto schema_of = [&](const std::string& topic) {
    const auto& f = rec.channel_formats.at(topic);
    return f.schema.empty() ? std::string("-")
                            : f.schema + (f.schema_encoding.empty() ? "" : " (" + f.schema_encoding + ")");
  };
  int wt = 5, we = 8, ws = 6;
  for (const auto& [topic, stats] : rec.channels) {
    wt = std::max(wt, static_cast<int>(topic.size()));
    we = std::max(we, static_cast<int>(rec.channel_formats.at(topic).encoding.size()));
    ws = std::max(ws, static_cast<int>(schema_of(topic).size()));
  }
  std::printf("  %-*s %-*s %-*s %9s %12s\n", wt, "topic", we, "encoding", ws, "schema", "messages", "bytes");
  for (const auto& [topic, stats] : rec.channels)
    std::printf("  %-*s %-*s %-*s %9llu %12llu\n", wt, topic.c_str(), we,
                rec.channel_formats.at(topic).encoding.c_str(), ws, schema_of(topic).c_str(),
                static_cast<unsigned long long>(stats.first), static_cast<unsigned long long>(stats.second));
  return exit_ok;
}

int report_command(const ReportOptions& options) {
  std::string output = options.output;
  if (output.empty()) {
    std::filesystem::path p(options.recording);
    p.replace_extension(".html");
    output = p.string();
  }
  std::string error;
  runtime::ReportOptions report;
  report.compare = options.compare;
  if (!runtime::write_report(options.recording, output, &error, report)) {
    std::cerr << "tether: " << error << '\n';
    return exit_usage;
  }
  std::cout << "report: " << output << '\n';
  return exit_ok;
}

}  // namespace tether::cli

namespace tether::cli {

int ports_command() {
  std::cout << adapters::list_ports_text();
  return exit_ok;
}

}  // namespace tether::cli
