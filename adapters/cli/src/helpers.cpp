// SPDX-License-Identifier: Apache-2.0
#include "helpers.hpp"

#include <csignal>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "tether/loop/recorder_inputs.hpp"

namespace tether::cli {

namespace {

std::atomic<bool> g_stop{false};

extern "C" void on_signal(int) { g_stop.store(true); }

}  // namespace

const std::atomic<bool>& stop_requested() { return g_stop; }

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGXFSZ, SIG_IGN);
}

void print_config_error(const runtime::ConfigError& e) {
  for (const auto& line : e.errors()) std::cerr << line << '\n';
  std::cerr << e.count() << (e.count() == 1 ? " error" : " errors") << '\n';
}

std::string recording_path(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return (std::filesystem::path(path) / "recording.mcap").string();
  return path;
}

std::unique_ptr<runtime::Recorder> make_recorder(const runtime::Scenario& scenario, const runtime::Session& session) {
  return std::make_unique<runtime::Recorder>(scenario, runtime::recorder_inputs(session));
}

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

}  // namespace tether::cli
