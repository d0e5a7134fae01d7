// SPDX-License-Identifier: Apache-2.0
// tether-ardupilot: a stand-in for ArduSub (and minimally ArduRover) SITL as seen from outside
// (docs/ardupilot.md, "The stand-in autopilot"), for tests and CI where ArduPilot cannot be
// built. It is not ArduPilot. On the JSON physics side it is ArduPilotStandIn (servo packets
// over UDP in lock-step); on the MAVLink side a TCP server at 5760 + 10 * instance. As SITL
// started directly, it sends no servo packet until a ground station has connected (unless
// --no-wait-for-gcs), and it runs until SIGTERM or SIGINT, or for --duration-s of simulated time.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "tether/ardupilot_standin/ardupilot_autopilot.hpp"
#include "tether/ardupilot_standin/ardupilot_mavlink_server.hpp"
#include "tether/ardupilot_standin/ardupilot_standin.hpp"
#include "tether/process/cli_numbers.hpp"

namespace ap = tether::adapters::ardupilot;

namespace {

struct Options {
  std::string physics = "127.0.0.1:9002";
  int instance = 0;
  int mavlink_port = ap::mavlink_base_port;
  std::string frame = "vectored";
  int channels = 16;
  int rate_hz = 1200;
  bool wait_for_gcs = true;
  std::optional<double> duration_s;
  double startup_s = ap::default_startup_s;
};

// what the signal handler may touch: lock-free atomics only
std::atomic<bool> stop_requested{false};
std::atomic<ap::ArduPilotStandIn*> running_standin{nullptr};
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<ap::ArduPilotStandIn*>::is_always_lock_free);

extern "C" void on_stop_signal(int) {
  stop_requested.store(true);
  if (ap::ArduPilotStandIn* s = running_standin.load()) s->cancel();
}

void add_options(CLI::App& app, Options& o) {
  app.add_option("--physics", o.physics, "where the JSON physics listens, HOST:PORT (ArduPilot's 9002)")
      ->capture_default_str();
  app.add_option("-I,--instance", o.instance, "SITL instance: adds 10 * N to the physics and MAVLink ports")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  app.add_option("--mavlink-port", o.mavlink_port, "TCP port of the MAVLink server before the instance's (0: any)")
      ->check(CLI::Range(0, 65000))
      ->capture_default_str();
  app.add_option("--frame", o.frame, "airframe: vectored (ArduSub BlueROV2) or rover (skid steering)")
      ->check(CLI::IsMember({"vectored", "rover"}))
      ->capture_default_str();
  app.add_option("--channels", o.channels, "servo channels per packet")
      ->check(CLI::IsMember({16, 32}))
      ->capture_default_str();
  app.add_option("--rate", o.rate_hz, "frame_rate announced in each packet (SIM_RATE_HZ)")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str();
  app.add_flag("!--no-wait-for-gcs", o.wait_for_gcs, "send servo packets without waiting for a ground station");
  app.add_option("--startup-s", o.startup_s,
                 "simulated seconds before arming is allowed (ArduSub: until its estimator is healthy)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--duration-s", o.duration_s, "exit after this much simulated time (default: run until a signal)")
      ->check(tether::adapters::positive_number());
}

// "host:port" -> host and port; false when it does not read
bool split_host_port(const std::string& s, std::string& host, std::uint16_t& port) {
  const auto colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  try {
    std::size_t used = 0;
    const int p = std::stoi(s.substr(colon + 1), &used);
    if (used != s.size() - colon - 1 || p < 1 || p > 65535) return false;
    host = s.substr(0, colon);
    port = static_cast<std::uint16_t>(p);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

void install_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

// as SITL: nothing goes to the physics before a ground station is there; false when stopped first
bool wait_for_gcs(ap::MavlinkServer& server) {
  std::fprintf(stderr, "Waiting for connection ....\n");
  while (!stop_requested.load())
    if (server.wait_for_gcs(std::chrono::milliseconds(100))) return true;
  return false;
}

void run_frames(ap::ArduPilotStandIn& standin, const Options& o) {
  using Clock = std::chrono::steady_clock;
  while (!stop_requested.load()) {
    // ArduPilot waits for its physics for ever; the signal handler's cancel() ends the wait
    if (standin.frame(Clock::now() + std::chrono::hours(24 * 365)) != ap::ArduPilotStandIn::FrameResult::replied)
      continue;
    if (o.duration_s && standin.sim_time_s() >= *o.duration_s) break;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tether-ardupilot: a stand-in for ArduSub/ArduRover SITL (JSON physics + MAVLink); not ArduPilot"};
  Options o;
  add_options(app, o);
  CLI11_PARSE(app, argc, argv);

  ap::StandInOptions so;
  if (!split_host_port(o.physics, so.host, so.port) || so.port + 10 * o.instance > 65535) {
    std::fprintf(stderr, "tether-ardupilot: --physics %s: expected HOST:PORT\n", o.physics.c_str());
    return 2;
  }
  so.port = static_cast<std::uint16_t>(so.port + 10 * o.instance);
  so.channels = static_cast<std::uint8_t>(o.channels);
  so.frame_rate_hz = static_cast<std::uint16_t>(o.rate_hz);
  ap::MavlinkServerOptions mo;
  mo.port = static_cast<std::uint16_t>(o.mavlink_port == 0 ? 0 : o.mavlink_port + 10 * o.instance);

  install_signals();
  ap::Autopilot autopilot(o.frame == "rover" ? ap::Airframe::rover : ap::Airframe::vectored);
  autopilot.set_startup_s(o.startup_s);
  std::unique_ptr<ap::ControlLaw> law;
  if (autopilot.airframe() == ap::Airframe::rover)
    law = std::make_unique<ap::RoverLaw>(autopilot);
  else
    law = std::make_unique<ap::SubHoldLaw>(autopilot);
  std::unique_ptr<ap::MavlinkServer> server;
  std::unique_ptr<ap::ArduPilotStandIn> standin;
  try {
    server = std::make_unique<ap::MavlinkServer>(autopilot, mo);
    standin = std::make_unique<ap::ArduPilotStandIn>(so, *law);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tether-ardupilot: %s\n", e.what());
    return 2;
  }
  // the server's thread must not take the signals: the handler then always runs on this thread,
  // which is also the one that ends the stand-in
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  server->start();
  pthread_sigmask(SIG_UNBLOCK, &stop_signals, nullptr);
  std::fprintf(stderr, "Serial port 0 on TCP port %u\n", static_cast<unsigned>(server->port()));
  running_standin.store(standin.get());
  if (stop_requested.load()) standin->cancel();  // a signal before the pointer was there

  if (!o.wait_for_gcs || wait_for_gcs(*server)) run_frames(*standin, o);

  running_standin.store(nullptr);
  server->stop();
  const auto& c = standin->counters;
  const auto m = server->counters();
  std::fprintf(stderr,
               "tether-ardupilot: %u frames, %llu resends, %llu replies, %llu unreadable, %.3f s simulated; "
               "MAVLink: %llu connections, %llu frames in (%llu ignored), %llu out\n",
               standin->frame_count(), static_cast<unsigned long long>(c.resends),
               static_cast<unsigned long long>(c.replies), static_cast<unsigned long long>(c.unreadable),
               standin->sim_time_s(), static_cast<unsigned long long>(m.connections),
               static_cast<unsigned long long>(m.frames_in), static_cast<unsigned long long>(m.ignored),
               static_cast<unsigned long long>(m.frames_out));
  return 0;
}
