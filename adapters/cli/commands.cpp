// SPDX-License-Identifier: Apache-2.0
#include "commands.hpp"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <unistd.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "tether/adapters/endpoint_factory.hpp"
#include "tether/runtime/scenario.hpp"
#include "tether/runtime/session.hpp"

namespace tether::cli {

namespace {

std::atomic<bool> g_stop{false};

extern "C" void on_signal(int) { g_stop.store(true); }

void install_signal_handlers() {
  struct sigaction sa{};
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

void print_summary_text(const nlohmann::json& s, std::ostream& out) {
  char line[512];
  std::snprintf(line, sizeof line, "session \"%s\" %s: %llu of %llu steps, %.3f s sim time in %.3f s wall (real-time factor %.2f achieved",
                s["scenario"].get<std::string>().c_str(), s["outcome"].get<std::string>().c_str(),
                static_cast<unsigned long long>(s["steps"].get<std::uint64_t>()),
                static_cast<unsigned long long>(s["steps_planned"].get<std::uint64_t>()),
                s["sim_time_s"].get<double>(), s["wall_time_s"].get<double>(),
                s["achieved_real_time_factor"].get<double>());
  out << line;
  if (s["real_time_factor"].get<double>() > 0)
    out << ", target " << s["real_time_factor"].get<double>();
  out << ")\n";
  if (s.contains("reason")) out << "  aborted: " << s["reason"].get<std::string>() << '\n';
  const auto& st = s["step_time_ns"];
  out << "  step time p50 " << us(st["p50"].get<double>()) << ", p99 " << us(st["p99"].get<double>())
      << ", max " << us(st["max"].get<double>()) << "; overruns " << s["overruns"].get<std::uint64_t>()
      << "; physics sub-steps " << s["physics_substeps"].get<std::uint64_t>() << '\n';
  for (const auto& e : s["endpoints"]) {
    out << "  endpoint " << e["name"].get<std::string>() << " (" << e["type"].get<std::string>()
        << ", policy " << e["policy"].get<std::string>() << ", deadline " << e["deadline_ms"].get<double>()
        << " ms): replies " << e["replies"] << ", misses " << e["misses"] << ", late " << e["late"]
        << ", stale " << e["stale"] << ", corrupt " << e["corrupt"] << ", faults " << e["faults"]
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
  for (const auto& v : s["vehicles"]) {
    const auto& p = v["position_m"];
    std::snprintf(line, sizeof line, "  vehicle %s: position (%.3f, %.3f, %.3f) m, heading %.1f°",
                  v["name"].get<std::string>().c_str(), p[0].get<double>(), p[1].get<double>(),
                  p[2].get<double>(), v["heading_deg"].get<double>());
    out << line;
    if (v.contains("depth_m")) {
      std::snprintf(line, sizeof line, ", depth %.4f m", v["depth_m"].get<double>());
      out << line;
    }
    out << '\n';
  }
  char hash[32];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(s["state_hash"].get<std::uint64_t>()));
  out << "  final state hash " << hash << '\n';
}

}  // namespace

int check_command(const CheckOptions& options) {
  try {
    const runtime::Scenario scenario = runtime::load_scenario(options.scenario);
    const auto endpoints = adapters::make_endpoints(scenario);
    const auto processors = runtime::make_feedback_processors(scenario);
    std::cout << options.scenario << ": ok (" << scenario.model.vehicles.size() << " vehicles, "
              << scenario.model.bodies.size() << " bodies, " << scenario.model.statics.size()
              << " static bodies, " << endpoints.size() << " endpoints, " << processors.size()
              << " feedback processors, " << scenario.loop.steps
              << " steps of " << static_cast<double>(scenario.loop.period_ns) * 1e-6 << " ms)\n";
    return exit_ok;
  } catch (const runtime::ConfigError& e) {
    print_config_error(e);
    return exit_usage;
  }
}

int run_command(const RunOptions& options) {
  runtime::Scenario scenario;
  std::vector<std::unique_ptr<runtime::Endpoint>> endpoints;
  try {
    scenario = runtime::load_scenario(options.scenario);
    endpoints = adapters::make_endpoints(scenario);
  } catch (const runtime::ConfigError& e) {
    print_config_error(e);
    return exit_usage;
  }

  const std::string out_dir = options.out_dir.empty() ? default_out_dir(scenario.name) : options.out_dir;
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) {
    std::cerr << "tether: cannot create the session folder " << out_dir << ": " << ec.message() << '\n';
    return exit_usage;
  }

  runtime::SessionOptions session_options;
  session_options.real_time_factor = options.real_time_factor;
  session_options.steps = options.steps;
  const bool tty = isatty(STDERR_FILENO) != 0;
  if (!options.quiet) {
    // a terminal gets one line rewritten in place; a log file gets a line every 5 s
    session_options.status_interval_s = tty ? 0.25 : 5.0;
    session_options.on_status = [tty](const runtime::LiveStatus& s) {
      std::fprintf(stderr, "%sstep %llu/%llu  t=%.2f s  rtf %.2f  step p99 %.1f µs  misses %llu%s",
                   tty ? "\r\033[K" : "", static_cast<unsigned long long>(s.step),
                   static_cast<unsigned long long>(s.steps_total), s.sim_time_s, s.achieved_rtf,
                   static_cast<double>(s.step_p99_ns) / 1000.0, static_cast<unsigned long long>(s.misses),
                   tty ? "" : "\n");
      std::fflush(stderr);
    };
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
  runtime::Outcome outcome;
  try {
    outcome = session.run(g_stop);
  } catch (const std::exception& e) {
    if (tty && !options.quiet) std::fputs("\r\033[K", stderr);
    std::cerr << "tether: " << e.what() << '\n';
    return exit_start_failed;
  }
  if (tty && !options.quiet) std::fputs("\r\033[K", stderr);

  const nlohmann::json summary = session.summary();
  const std::string summary_path = out_dir + "/summary.json";
  {
    std::ofstream f(summary_path);
    f << summary.dump(2) << '\n';
    if (!f) std::cerr << "tether: could not write " << summary_path << '\n';
  }
  if (options.json) {
    std::cout << summary.dump(2) << '\n';
  } else {
    print_summary_text(summary, std::cout);
    std::cout << "  summary: " << summary_path << '\n';
  }
  switch (outcome) {
    case runtime::Outcome::completed: return exit_ok;
    case runtime::Outcome::stopped: return exit_stopped;
    case runtime::Outcome::aborted: return exit_aborted;
  }
  return exit_aborted;
}

}  // namespace tether::cli
