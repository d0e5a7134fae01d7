// SPDX-License-Identifier: Apache-2.0
// MQTT lock-step against its ceiling, in one run, through one local mosquitto:
//   1  bare Paho ping-pong: two Paho async clients in two processes, one echoes what the other sends
//      (the projected message's size one way, the feedback's the other), QoS 1 and 0,
//      with and without TCP_NODELAY on Paho's sockets: the ceiling
//   2  Tether: a Session at rtf 0 with the in-process depth/heading law and the stand-in
//      vehicle program (tether-vehicle) on MQTT, policy block: the lock-step rate
// Prints rates, p50/p99 round trips and the ratio lock-step / ceiling (goal >= 0.8).
// Usage: mqtt_lockstep [--quick] [--steps N]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>

#include <mqtt/async_client.h>
#include <nlohmann/json.hpp>

#include "../tests/adapters/mosquitto_util.hpp"
#include "bench_util.hpp"
#include "example_controllers.hpp"
#include "test_paths.hpp"
#include "tether/process/child_process.hpp"
#include "tether/endpoints/endpoint_factory.hpp"
#include "tether/mqtt/mqtt_endpoint.hpp"
#include "tether/mqtt/mqtt_messages.hpp"
#include "tether/mqtt/mqtt_socket.hpp"
#include "tether/hal/device_bank.hpp"
#include "tether/loop/histogram.hpp"
#include "tether/loop/session.hpp"

using namespace tether;
using bench::Clock;

namespace {

struct Figures {
  std::string name;
  double rate = 0;
  double p50_us = 0, p99_us = 0;
  std::uint64_t count = 0;
  double wall_s = 0;
  runtime::Histogram h;  // ping-pong: round trips; session: step to step

  // adds a round's samples and recomputes the figures over all rounds
  void add(std::uint64_t n, double wall) {
    count += n;
    wall_s += wall;
    rate = wall_s > 0 ? static_cast<double>(count) / wall_s : 0;
    p50_us = static_cast<double>(h.percentile(0.5)) * 1e-3;
    p99_us = static_cast<double>(h.percentile(0.99)) * 1e-3;
  }
};

void print(const Figures& f) {
  std::printf("  %-40s %9.0f /s   p50 %8.1f us   p99 %8.1f us   (%llu)\n", f.name.c_str(), f.rate, f.p50_us, f.p99_us,
              static_cast<unsigned long long>(f.count));
}

std::string scenario_text(const std::string& broker, const std::string& session, bool nodelay, long steps,
                          const std::string& vehicle_flags, const std::string& payload = "json") {
  return R"(name: mqtt_lockstep
world:
  gravity_m_s2: [0, 0, -9.81]
  water: {density_kg_m3: 1025, surface_z_m: 0}
  tank: {size_m: [80, 20, 8], floor_z_m: -8}
vehicles:
  - name: auv
    bodies:
      - name: hull
        shape: {type: cylinder, radius_m: 0.1, length_m: 1.2}
        mass_kg: 38.0
        centre_of_buoyancy_m: [0, 0, 0.02]
        damping: {linear: [10, 30, 30], quadratic: [20, 80, 80], angular_linear: [2, 6, 6], angular_quadratic: [1, 4, 4]}
        initial: {position_m: [-35, 0, -0.2]}
        devices:
          - {name: depth, kind: depth}
          - {name: compass, kind: compass}
          - {name: thruster_left, kind: thruster, mount: {position_m: [-0.55, 0.14, 0]}, params: {max_thrust_n: 20}}
          - {name: thruster_right, kind: thruster, mount: {position_m: [-0.55, -0.14, 0]}, params: {max_thrust_n: 20}}
          - {name: thruster_vfront, kind: thruster, mount: {position_m: [0.35, 0, 0], orientation_rpy_deg: [0, 90, 0]}, params: {max_thrust_n: 15}}
          - {name: thruster_vrear, kind: thruster, mount: {position_m: [-0.35, 0, 0], orientation_rpy_deg: [0, 90, 0]}, params: {max_thrust_n: 15}}
loop: {period_ms: 10, real_time_factor: 0, steps: )" +
         std::to_string(steps) + R"(, seed: 3}
recording: {enabled: false}
endpoints:
  - {name: controller, type: in_process, vehicle: auv, controller: depth_heading_hold, deadline_ms: 5}
  - name: tank
    type: mqtt
    vehicle: auv
    broker: )" +
         broker + R"(
    session: )" +
         session + R"(
    tcp_nodelay: )" +
         (nodelay ? "true" : "false") + R"(
    publish_actual: false
    payload: )" +
         payload + R"(
    deadline_ms: 5000
    timeout_policy: block
    launch:
      command: [")" +
         TETHER_BINARY_DIR +
         R"(/tether-vehicle", "--scenario", "{scenario}", "--broker", "{broker}", "--session", "{session}", "--quiet")" +
         vehicle_flags + R"(]
)";
}

// the sizes of a projected and a feedback message of that scenario
void message_sizes(const runtime::Scenario& sc, std::size_t& projected, std::size_t& feedback,
                   adapters::mqtt::Payload format) {
  hal::DeviceBank bank(sc.devices, 1, sc.model.bodies.size());
  const auto actuators = adapters::mqtt::vehicle_actuators(bank, sc.model, 0);
  std::string out;
  adapters::mqtt::encode_projected(out, "auv", {12345, 123450000000, 10000000}, sc.model, sc.initial, 0, &bank,
                                   actuators, format);
  projected = out.size();
  runtime::Measurement m;
  m.has_pose = m.has_velocity = m.has_covariance = true;
  m.measured_time_ns = 123460000000;
  adapters::mqtt::encode_feedback(out, "auv", 12345, sc.model, {m}, format);
  feedback = out.size();
}

// the codec alone: one round trip's messages (projected written and read, feedback written and
// read) in microseconds, the best of five runs of 2,000
double codec_us(const runtime::Scenario& sc, adapters::mqtt::Payload format) {
  namespace mq = adapters::mqtt;
  hal::DeviceBank bank(sc.devices, 1, sc.model.bodies.size());
  const auto actuators = mq::vehicle_actuators(bank, sc.model, 0);
  runtime::Measurement m;
  m.has_pose = m.has_velocity = m.has_covariance = true;
  m.measured_time_ns = 123460000000;
  m.position_m = runtime::Vec3(-34.98765432, 0.0123456789, -2.00123456);
  std::string out;
  mq::Projected p;
  mq::Feedback f;
  std::string reason;
  double best = 1e300;
  for (int run = 0; run < 5; ++run) {
    const auto t0 = Clock::now();
    for (int i = 0; i < 2000; ++i) {
      mq::encode_projected(out, "auv", {12345, 123450000000, 10000000}, sc.model, sc.initial, 0, &bank, actuators,
                           format);
      if (mq::parse_projected(out, "auv", p, reason) != mq::Reject::none) std::abort();
      mq::encode_feedback(out, "auv", 12345, sc.model, {m}, format);
      if (mq::parse_feedback(out, "auv", sc.model, 0, f, reason) != mq::Reject::none) std::abort();
    }
    best = std::min(best, bench::seconds_since(t0) / 2000 * 1e6);
  }
  return best;
}

// --pong URI QOS BYTES: the echo side of the ping-pong, in its own process (Paho C runs
// every client of a process on the same two threads: both ends in one process would share them)
int run_ponger(const std::string& uri, int qos, std::size_t back, bool nodelay) {
  ::mqtt::async_client ponger(uri, "bench-pong", static_cast<::mqtt::iclient_persistence*>(nullptr));
  const std::string pong_payload(back, 'q');
  ponger.set_message_callback([&](::mqtt::const_message_ptr) {
    ponger.publish("bench/pong", pong_payload.data(), pong_payload.size(), qos, false);
  });
  ::mqtt::connect_options opts;
  opts.set_clean_session(true);
  ponger.connect(opts)->wait();
  if (nodelay) adapters::mqtt::set_tcp_nodelay_for_broker(uri);
  ponger.subscribe("bench/ping", qos)->wait();
  std::printf("ready\n");
  std::fflush(stdout);
  char c;
  while (::read(0, &c, 1) > 0) {
  }  // until the parent closes our stdin
  ponger.disconnect()->wait();
  return 0;
}

// one client publishes `forward` bytes, the other (another process) answers each with `back` bytes
void ping_pong(const char* self, const std::string& uri, int qos, bool nodelay, std::size_t forward, std::size_t back,
               long count, double max_s, Figures& f) {
  adapters::LaunchSpec spec;
  spec.argv = {self, "--pong", uri, std::to_string(qos), std::to_string(back), nodelay ? "1" : "0"};
  int to_child[2];
  if (::pipe(to_child) != 0) throw std::runtime_error("pipe");
  // the child reads its stdin from the pipe: ChildProcess gives it /dev/null, so run it by hand
  std::fflush(nullptr);
  int from_child[2];
  if (::pipe(from_child) != 0) throw std::runtime_error("pipe");
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(to_child[0], 0);
    ::dup2(from_child[1], 1);
    ::close(to_child[1]);
    ::close(from_child[0]);
    std::vector<char*> argv;
    for (auto& a : spec.argv) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(self, argv.data());
    std::_Exit(127);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  char ready[8] = {};
  if (::read(from_child[0], ready, 6) <= 0) throw std::runtime_error("the ponger did not start");

  ::mqtt::async_client pinger(uri, "bench-ping", static_cast<::mqtt::iclient_persistence*>(nullptr));
  const std::string ping_payload(forward, 'p');
  std::mutex m;
  std::condition_variable cv;
  std::uint64_t pongs = 0;
  pinger.set_message_callback([&](::mqtt::const_message_ptr) {
    std::lock_guard<std::mutex> lock(m);
    ++pongs;
    cv.notify_all();
  });
  ::mqtt::connect_options opts;
  opts.set_clean_session(true);
  pinger.connect(opts)->wait();
  if (nodelay) adapters::mqtt::set_tcp_nodelay_for_broker(uri);
  pinger.subscribe("bench/pong", qos)->wait();

  runtime::Histogram& h = f.h;
  const auto t0 = Clock::now();
  long done = 0;
  for (; done < count && bench::seconds_since(t0) < max_s; ++done) {
    const auto start = Clock::now();
    pinger.publish("bench/ping", ping_payload.data(), ping_payload.size(), qos, false);
    std::unique_lock<std::mutex> lock(m);
    if (!cv.wait_for(lock, std::chrono::seconds(5), [&] { return pongs > static_cast<std::uint64_t>(done); })) break;
    h.record(
        static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count()));
  }
  const double wall = bench::seconds_since(t0);
  pinger.disconnect()->wait();
  ::close(to_child[1]);
  ::close(from_child[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  f.add(static_cast<std::uint64_t>(done), wall);
}

// one session; `f` gets its step-to-step times, `round_trip` the endpoint's last figures
void lock_step(const std::string& broker, bool nodelay, long steps, const std::string& session, Figures& f,
               Figures* round_trip, std::size_t& errors, const std::string& payload = "json") {
  const std::string text = scenario_text(broker, session, nodelay, steps,
                                         nodelay ? std::string() : std::string(", \"--no-nodelay\""), payload);
  char tmpl[] = "/tmp/tether-bench-mqtt-XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp");
  const std::string path = std::string(tmpl) + "/scenario.yaml";
  std::ofstream(path) << text;
  const runtime::Scenario sc = runtime::load_scenario(path);
  runtime::SessionOptions options;
  Clock::time_point last{};
  options.after_step = [&](const runtime::WorldState&) {
    const auto now = Clock::now();
    if (last != Clock::time_point{})
      f.h.record(static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - last).count()));
    last = now;
    return true;
  };
  runtime::Session session_run(sc, adapters::make_endpoints(sc), options);
  std::atomic<bool> stop{false};
  session_run.run(stop);
  const nlohmann::json s = session_run.summary();
  std::filesystem::remove_all(tmpl);
  const runtime::Endpoint& ep = *session_run.endpoints()[1];
  const runtime::EndpointCounters& counters = session_run.endpoint_counters(1);
  f.add(session_run.steps_done(), s["wall_time_s"].get<double>());
  if (round_trip) {
    round_trip->count += session_run.steps_done();
    round_trip->p50_us = static_cast<double>(counters.round_trip_ns.percentile(0.5)) * 1e-3;
    round_trip->p99_us = static_cast<double>(counters.round_trip_ns.percentile(0.99)) * 1e-3;
  }
  errors += counters.misses + ep.link_counts().stale + ep.link_counts().corrupt;
}

}  // namespace

int main(int argc, char** argv) {
  tether::examples::register_example_controllers();  // the in-process depth_heading_hold
  if (argc == 6 && std::string(argv[1]) == "--pong")
    return run_ponger(argv[2], std::atoi(argv[3]), static_cast<std::size_t>(std::atol(argv[4])), argv[5][0] == '1');
  const bool quick = bench::quick_mode(argc, argv);
  long steps = quick ? 300 : 5000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--steps" && i + 1 < argc) {
      steps = std::atol(argv[++i]);
    } else if (a != "--quick") {
      std::fprintf(stderr, "usage: %s [--quick] [--steps N]\n", argv[0]);
      return 2;
    }
  }
  adapters::set_mqtt_logs_quiet(true);
  test::Mosquitto broker;
  std::size_t projected = 0, feedback = 0, projected_pb = 0, feedback_pb = 0;
  {
    const runtime::Scenario sc = runtime::parse_scenario(scenario_text(broker.uri(), "x", true, 1, ""), "sizes.yaml");
    message_sizes(sc, projected, feedback, adapters::mqtt::Payload::json);
    message_sizes(sc, projected_pb, feedback_pb, adapters::mqtt::Payload::protobuf);
    const double json_us = codec_us(sc, adapters::mqtt::Payload::json);
    const double pb_us = codec_us(sc, adapters::mqtt::Payload::protobuf);
    std::printf("codec, one round trip's messages written and read: JSON %.1f us, protobuf %.1f us (%.2f)\n", json_us,
                pb_us, pb_us / json_us);
  }
  std::printf(
      "MQTT lock-step through a local mosquitto (%s); projected %zu B, feedback %zu B (protobuf: %zu B, "
      "%zu B); %u cores\n",
      broker.uri().c_str(), projected, feedback, projected_pb, feedback_pb, std::thread::hardware_concurrency());

  // the ceiling and the session take turns, so that the machine's noise hits both alike
  const int rounds = quick ? 2 : 5;
  const long per_round = std::max(1L, steps / rounds);
  Figures q1, q0, ls, rt, q1p, lsp;
  q1p.name = "ping-pong QoS 1, protobuf sizes";
  lsp.name = "session, payload: protobuf";
  q1.name = "ping-pong QoS 1";
  q0.name = "ping-pong QoS 0";
  ls.name = "session (step to step)";
  rt.name = "session round trip (last round)";
  std::size_t errors = 0;
  for (int r = 0; r < rounds; ++r) {
    ping_pong(argv[0], broker.uri(), 1, true, projected, feedback, per_round, quick ? 1 : 10, q1);
    ping_pong(argv[0], broker.uri(), 0, true, projected, feedback, per_round, quick ? 1 : 10, q0);
    lock_step(broker.uri(), true, per_round, "bench" + std::to_string(r), ls, &rt, errors);
    ping_pong(argv[0], broker.uri(), 1, true, projected_pb, feedback_pb, per_round, quick ? 1 : 10, q1p);
    lock_step(broker.uri(), true, per_round, "bench-pb" + std::to_string(r), lsp, nullptr, errors, "protobuf");
  }
  std::printf("TCP_NODELAY on client and broker sockets (%d rounds of %ld, taking turns):\n", rounds, per_round);
  std::printf(" bare Paho ping-pong between two processes (the ceiling)\n");
  print(q1);
  print(q0);
  std::printf(" Tether lock-step, rtf 0, QoS 1: in-process controller + stand-in vehicle process\n");
  print(ls);
  std::printf("  %-40s %12s   p50 %8.1f us   p99 %8.1f us\n", rt.name.c_str(), "", rt.p50_us, rt.p99_us);
  std::printf(" the same with protobuf payloads (docs/mqtt.md, \"Payloads\"):\n");
  print(q1p);
  print(lsp);
  if (errors) std::printf("  (%zu misses/stale/corrupt)\n", errors);

  std::printf("Nagle's algorithm left on (Paho's default):\n");
  Figures q1n, lsn;
  q1n.name = "ping-pong QoS 1";
  lsn.name = "session (step to step)";
  ping_pong(argv[0], broker.uri(), 1, false, projected, feedback, quick ? 5 : 50, quick ? 1 : 5, q1n);
  lock_step(broker.uri(), false, quick ? 5 : 50, "bench-nagle", lsn, nullptr, errors);
  print(q1n);
  print(lsn);

  // the broker's sockets matter too: mosquitto's own set_tcp_nodelay off
  test::Mosquitto::Options nagle_broker;
  nagle_broker.broker_nodelay = false;
  test::Mosquitto broker_nagle(nagle_broker);
  std::printf("mosquitto with set_tcp_nodelay false (clients still TCP_NODELAY):\n");
  Figures bq1, bls;
  bq1.name = "ping-pong QoS 1";
  bls.name = "session (step to step)";
  ping_pong(argv[0], broker_nagle.uri(), 1, true, projected, feedback, quick ? 5 : 50, quick ? 1 : 5, bq1);
  lock_step(broker_nagle.uri(), true, quick ? 5 : 50, "bench-broker-nagle", bls, nullptr, errors);
  print(bq1);
  print(bls);

  std::printf("ratio lock-step / QoS 1 ping-pong: %.2f by rate, %.2f by p50 (goal >= 0.8)\n", ls.rate / q1.rate,
              q1.p50_us / std::max(ls.p50_us, 1e-9));
  std::printf("TCP_NODELAY gain: ping-pong x%.0f, lock-step x%.0f\n", q1.rate / std::max(q1n.rate, 1e-9),
              ls.rate / std::max(lsn.rate, 1e-9));
  std::printf("ratio with protobuf payloads: %.2f by rate, %.2f by p50; protobuf session / JSON session %.2f\n",
              lsp.rate / q1p.rate, q1p.p50_us / std::max(lsp.p50_us, 1e-9), lsp.rate / std::max(ls.rate, 1e-9));
  bench::figure("MQTT lock-step QoS 1 / Paho QoS 1 ping-pong (rtf 0)",
                bench::format("%.2f (%.0f vs %.0f /s)", ls.rate / q1.rate, ls.rate, q1.rate), ">= 0.85");
  bench::figure("MQTT lock-step QoS 1 / Paho QoS 1 ping-pong, payload: protobuf (rtf 0)",
                bench::format("%.2f (%.0f vs %.0f /s)", lsp.rate / q1p.rate, lsp.rate, q1p.rate), ">= 0.85");
  return 0;
}
