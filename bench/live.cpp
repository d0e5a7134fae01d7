// SPDX-License-Identifier: Apache-2.0
// What the live server costs the loop (docs/live.md): steps/s of the in-process default
// scenario at rtf 0, every configuration recording to nowhere (Recorder::open_without_file,
// the tap the server reads from), rounds interleaved in one process (best round kept):
//   no server | the server, no client | 4 clients subscribed to everything, reading |
//   1 stalled client (subscribed to everything, never reads) |
//   4 clients again with the rate cap off (live.max_rate_hz: 0, every message to every client)
// Goals: 4 clients cost the loop under 3 %; a stalled client costs it nothing measurable.
// Prints figures only; --quick shortens everything (the test suite smoke-runs it).
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "bench_util.hpp"
#include "example_controllers.hpp"
#include "test_paths.hpp"
#include "tether/endpoints/endpoint_factory.hpp"
#include "tether/live/client.hpp"
#include "tether/live/server.hpp"
#include "tether/loop/session.hpp"
#include "tether/recording/recorder.hpp"
#include "tether/loop/recorder_inputs.hpp"

using namespace tether::runtime;
using tether::bench::Clock;
using tether::bench::seconds_since;
namespace live = tether::live;

namespace {

enum class Setup { no_server, server_alone, four_clients, stalled_client, four_clients_uncapped };
const char* const setup_names[] = {"no server", "server, no client", "4 clients, everything", "1 stalled client",
                                   "4 clients, max_rate_hz 0"};

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Run {
  double loop_s = 0;      // session.run(), wall time
  double loop_cpu_s = 0;  // CPU time of the loop thread during run()
  std::uint64_t received = 0, dropped = 0, rate_limited = 0;
};

void fail(const std::string& why) {
  std::fprintf(stderr, "live: %s\n", why.c_str());
  std::exit(1);
}

// a client that subscribes to every channel and reads until told to stop (or never reads)
struct Reader {
  live::Client client;
  std::thread thread;
  std::atomic<std::uint64_t> frames{0};
};

Run run_once(const Scenario& sc, std::uint64_t steps, Setup setup) {
  SessionControl control;
  SessionOptions options;
  options.steps = steps;
  options.real_time_factor = 0;
  std::unique_ptr<live::Server> server;
  if (setup != Setup::no_server) {
    live::ServerOptions so;
    so.port = 0;
    so.queue_messages = 1024;
    if (setup == Setup::four_clients_uncapped) so.max_rate_hz = 0;
    server = std::make_unique<live::Server>(so, &control);
    options.control = &control;
  }
  Session session(sc, tether::adapters::make_endpoints(sc), options);
  Recorder recorder(sc, recorder_inputs(session));
  if (server) recorder.set_tap(server.get());
  std::string error;
  if (!recorder.open_without_file(&error)) fail(error);
  session.set_recorder(&recorder);
  if (server) server->start();

  std::vector<std::unique_ptr<Reader>> readers;
  const bool four = setup == Setup::four_clients || setup == Setup::four_clients_uncapped;
  const int clients = four ? 4 : setup == Setup::stalled_client ? 1 : 0;
  for (int i = 0; i < clients; ++i) {
    auto r = std::make_unique<Reader>();
    if (!r->client.connect("ws://127.0.0.1:" + std::to_string(server->port()), "", &error)) fail(error);
    for (const auto& ch : r->client.channels()) {
      std::uint32_t sub = 0;
      if (!r->client.subscribe(ch["topic"], sub, &error)) fail(error);
    }
    if (four)
      r->thread = std::thread([rp = r.get()] {
        // until the server closes the connection at the end of the run
        live::Client::Frame f;
        std::string why;
        while (rp->client.next(f, 60, &why)) rp->frames.fetch_add(1, std::memory_order_relaxed);
      });
    readers.push_back(std::move(r));
  }

  std::atomic<bool> stop{false};
  Run run;
  const double cpu0 = thread_cpu_s();
  const auto t0 = Clock::now();
  if (session.run(stop) != Outcome::completed) fail("the session did not complete");
  run.loop_s = seconds_since(t0);
  run.loop_cpu_s = thread_cpu_s() - cpu0;
  if (!recorder.close(session.summary(), &error)) fail(error);
  if (server) {
    const nlohmann::json s = server->summary();
    run.dropped = s["dropped_messages"].get<std::uint64_t>();
    run.rate_limited = s["rate_limited_messages"].get<std::uint64_t>();
  }
  if (server) server->stop();  // closes every connection: the readers end
  for (auto& r : readers) {
    if (r->thread.joinable()) r->thread.join();
    run.received += r->frames.load();
  }
  readers.clear();
  return run;
}

}  // namespace

int main(int argc, char** argv) {
  tether::examples::register_example_controllers();
  const bool quick = tether::bench::quick_mode(argc, argv);
  const Scenario sc = load_scenario(TETHER_SOURCE_DIR + "/config/scenarios/in_process_depth_hold.yaml");
  const std::uint64_t steps = quick ? 1'000 : 20'000;
  const int rounds = quick ? 1 : 5;
  // the controller's and the server's log lines go to stdout; only figures are printed
  std::fflush(stdout);
  const int figures_fd = dup(STDOUT_FILENO);
  const int devnull = open("/dev/null", O_WRONLY);
  dup2(devnull, STDOUT_FILENO);

  constexpr int setups = 5;
  double best_wall[setups], best_cpu[setups];
  Run last[setups];
  std::fill(best_wall, best_wall + setups, 1e300);
  std::fill(best_cpu, best_cpu + setups, 1e300);
  // interleaved rounds, so that a busy moment on the machine hits every setup alike
  for (int round = 0; round < rounds; ++round)
    for (int s = 0; s < setups; ++s) {
      last[s] = run_once(sc, steps, static_cast<Setup>(s));
      best_wall[s] = std::min(best_wall[s], last[s].loop_s);
      best_cpu[s] = std::min(best_cpu[s], last[s].loop_cpu_s);
    }

  std::fflush(stdout);
  dup2(figures_fd, STDOUT_FILENO);
  std::printf(
      "live: scenario %s, %llu steps at rtf 0, recorder without a file in every setup, best of %d rounds, "
      "%u hardware threads\n",
      sc.name.c_str(), static_cast<unsigned long long>(steps), rounds, std::thread::hardware_concurrency());
  std::printf("  %-24s %10s %9s %14s %9s %12s %10s %12s\n", "setup", "steps/s", "vs none", "loop CPU ns/st", "vs none",
              "frames read", "dropped", "rate-capped");
  for (int s = 0; s < setups; ++s)
    std::printf("  %-24s %10.0f %+8.1f%% %14.0f %+8.1f%% %12llu %10llu %12llu\n", setup_names[s],
                static_cast<double>(steps) / best_wall[s], (best_wall[0] / best_wall[s] - 1) * 100,
                best_cpu[s] * 1e9 / static_cast<double>(steps), (best_cpu[s] / best_cpu[0] - 1) * 100,
                static_cast<unsigned long long>(last[s].received), static_cast<unsigned long long>(last[s].dropped),
                static_cast<unsigned long long>(last[s].rate_limited));
  std::printf(
      "  goals: 4 clients cost the loop under 3 %% of steps/s; a stalled client nothing measurable "
      "(rate cap %g messages/s per channel unless max_rate_hz 0)\n",
      tether::live::ServerOptions{}.max_rate_hz);
  return 0;
}
