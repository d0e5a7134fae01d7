// SPDX-License-Identifier: Apache-2.0
// ArduPilot's JSON physics interface in lock-step against its ceiling, in one run, on
// loopback, both driven by the same stand-in autopilot (ArduPilotStandIn with FixedPwm: it
// sends a servo packet, blocks for the reply, steps on it, as SITL does):
//   1  bare UDP echo: a thread answers each 16-channel servo packet with the same valid
//      reply (the bytes of one encoded state, every time): the ceiling, frames/s
//   2  Tether: a Session at rtf 0 (a six-thruster vehicle, channels 1..6) with a
//      `type: ardupilot_json` endpoint (port 0): frames/s and the ratio to the echo
//      (goals: >= 0.7 of the echo on the 2-core development machine, >= 1,200 frames/s)
//   3  paced at 400 Hz (loop period 2.5 ms, real_time_factor 1) for a few seconds: the
//      session summary's step time, round trip, overruns and misses
// The echo and the session take turns (rounds), so that the machine's noise hits both alike.
// The hull cruises submerged (one physics sub-step a step); --surface starts it crossing the
// water's surface, where every 10 ms step takes five 2 ms sub-steps (docs/physics.md, "Free
// sub-steps"), the case of a ROV waiting at the surface. Each session line prints the sub-steps
// a step and where the hull ended, so that a run that surfaced by accident shows it.
// Figures only: nothing here passes or fails on speed.
// Usage: ardupilot_lockstep [--quick] [--frames N] [--rounds R] [--paced-s S] [--surface]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "bench_util.hpp"
#include "tether/ardupilot/ardupilot_endpoint.hpp"
#include "tether/ardupilot/ardupilot_json.hpp"
#include "tether/ardupilot_standin/ardupilot_standin.hpp"
#include "tether/endpoints/endpoint_factory.hpp"
#include "tether/loop/session.hpp"

using namespace tether;
namespace ap = tether::adapters::ardupilot;
using bench::Clock;

namespace {

bool at_surface = false;  // --surface: the hull starts (and stays) crossing the surface

// a six-thruster ROV (four vectored horizontal, two vertical), slightly buoyant, in a tank;
// ArduSub's channels 1..6 on its thrusters
std::string scenario_text(long steps, double period_ms, double rtf, bool profile) {
  return R"(name: ardupilot_lockstep
world:
  gravity_m_s2: [0, 0, -9.81]
  water: {density_kg_m3: 1025, surface_z_m: 0}
  tank: {size_m: [400, 400, 100], floor_z_m: -100}   # open water for the whole run: the
                                                     # slow push reaches no wall and no floor
vehicles:
  - name: rov
    bodies:
      - name: hull
        shape: {type: box, size_m: [0.45, 0.33, 0.25]}
        mass_kg: 37.5
        centre_of_buoyancy_m: [0, 0, 0.02]
        damping: {linear: [8, 10, 12], quadratic: [15, 20, 25], angular_linear: [1, 1, 1], angular_quadratic: [1, 1, 1]}
        initial: {position_m: [0, 0, )" +
         std::string(at_surface ? "-0.05" : "-2") + R"(]}
        devices:
          - {name: t1, kind: thruster, mount: {position_m: [0.15, -0.1, 0], orientation_rpy_deg: [0, 0, -45]}, params: {max_thrust_n: 40}}
          - {name: t2, kind: thruster, mount: {position_m: [0.15, 0.1, 0], orientation_rpy_deg: [0, 0, 45]}, params: {max_thrust_n: 40}}
          - {name: t3, kind: thruster, mount: {position_m: [-0.15, -0.1, 0], orientation_rpy_deg: [0, 0, 45]}, params: {max_thrust_n: 40}}
          - {name: t4, kind: thruster, mount: {position_m: [-0.15, 0.1, 0], orientation_rpy_deg: [0, 0, -45]}, params: {max_thrust_n: 40}}
          - {name: t5, kind: thruster, mount: {position_m: [0, -0.11, 0], orientation_rpy_deg: [0, -90, 0]}, params: {max_thrust_n: 40}}
          - {name: t6, kind: thruster, mount: {position_m: [0, 0.11, 0], orientation_rpy_deg: [0, -90, 0]}, params: {max_thrust_n: 40}}
loop: {period_ms: )" +
         bench::format("%g", period_ms) + ", real_time_factor: " + bench::format("%g", rtf) +
         ", steps: " + std::to_string(steps) + (profile ? ", profile_phases: true" : "") + R"(, seed: 3}
endpoints:
  - name: ardusub
    type: ardupilot_json
    vehicle: rov
    port: 0
    connect_timeout_ms: 10000
    deadline_ms: 1000
    timeout_policy: block
    channels:
      - {channel: 1, actuator: t1}
      - {channel: 2, actuator: t2}
      - {channel: 3, actuator: t3}
      - {channel: 4, actuator: t4}
      - {channel: 5, actuator: t5}
      - {channel: 6, actuator: t6}
)";
}

// the stand-in's outputs: a slow forward push on the four horizontal thrusters; the vertical
// pair pushes down enough to keep the slightly buoyant hull under (it sinks ~0.13 m/s, 25 m in
// a 20,000-frame round; at 1460 it surfaced within the first round, and from then on every
// step crossed the surface), or, with --surface, holds still
ap::FixedPwm standin_law() {
  ap::FixedPwm law(1500);
  for (std::size_t c = 0; c < 4; ++c) law.set(c, 1560);
  law.set(4, at_surface ? 1500 : 1380);
  law.set(5, at_surface ? 1500 : 1380);
  return law;
}

ap::StandInOptions standin_options(std::uint16_t port, std::uint16_t rate_hz) {
  ap::StandInOptions o;
  o.port = port;
  o.frame_rate_hz = rate_hz;
  o.recv_timeout_ms = 10;  // (only its silence check; a reply wakes it at once)
  return o;
}

// one valid reply, as the endpoint writes it for a moving vehicle (every number with its
// decimals): what the echo sends back every time
std::string fixed_reply() {
  ap::ReplyState r;
  r.time_ns = 123'456'789'012;
  r.gyro_rad_s = {0.012345678, -0.023456789, 0.001234567};
  r.accel_body_m_s2 = {0.123456789, -0.234567891, -9.812345678};
  r.position_m = {12.345678912, -3.456789123, 2.345678912};
  r.velocity_m_s = {0.512345678, -0.043456789, 0.012345678};
  r.quaternion = ap::Quat(0.923879532, 0.012345678, -0.023456789, 0.382683432).normalized();
  ap::ReplyBuffer out;
  if (ap::encode_reply(r, out) != ap::EncodeError::none) throw std::runtime_error("the echo's reply does not encode");
  return std::string(out.bytes.data(), out.size);
}

// the ceiling: a thread that answers every servo packet with the same bytes
class Echo {
 public:
  explicit Echo(std::string reply) : reply_(std::move(reply)) {
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      throw std::runtime_error("echo: cannot bind a loopback UDP port");
    thread_ = std::thread([this] { serve(); });
  }
  ~Echo() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  Echo(const Echo&) = delete;
  Echo& operator=(const Echo&) = delete;
  std::uint16_t port() const {
    sockaddr_in a{};
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    return ntohs(a.sin_port);
  }

 private:
  void serve() {
    std::uint8_t buf[512];
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      sockaddr_in from{};
      socklen_t len = sizeof from;
      const ssize_t n = ::recvfrom(fd_, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
      ap::ServoPacket packet;
      if (n <= 0 || ap::parse_servo_packet(buf, static_cast<std::size_t>(n), packet) != ap::ServoReject::none) continue;
      ::sendto(fd_, reply_.data(), reply_.size(), 0, reinterpret_cast<sockaddr*>(&from), sizeof from);
    }
  }
  std::string reply_;
  int fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

double us(const nlohmann::json& ns) { return ns.get<double>() * 1e-3; }

struct Rate {
  std::uint64_t frames = 0;
  double wall_s = 0;
  double best = 0;  // the best round's frames/s
  void add(std::uint64_t n, double s) {
    frames += n;
    wall_s += s;
    if (s > 0) best = std::max(best, static_cast<double>(n) / s);
  }
  double rate() const { return wall_s > 0 ? static_cast<double>(frames) / wall_s : 0; }
};

// 1: the stand-in against the echo for `frames` frames
void echo_round(Echo& echo, long frames, Rate& r) {
  ap::FixedPwm law = standin_law();
  ap::ArduPilotStandIn autopilot(standin_options(echo.port(), 1200), law);
  const auto t0 = Clock::now();
  long done = 0;
  for (; done < frames; ++done)
    if (autopilot.frame(Clock::now() + std::chrono::seconds(5)) != ap::ArduPilotStandIn::FrameResult::replied) break;
  const double wall = bench::seconds_since(t0);
  r.add(static_cast<std::uint64_t>(done), wall);
  std::printf("    echo     %7ld frames in %6.3f s: %8.0f frames/s  (stand-in re-sends %llu, unreadable %llu)\n", done,
              wall, static_cast<double>(done) / wall, static_cast<unsigned long long>(autopilot.counters.resends),
              static_cast<unsigned long long>(autopilot.counters.unreadable));
}

// 2 and 3: a session against the stand-in; its summary
nlohmann::json session_round(long steps, double period_ms, double rtf, bool profile = false) {
  const runtime::Scenario sc =
      runtime::parse_scenario(scenario_text(steps, period_ms, rtf, profile), "ardupilot_lockstep.yaml");
  auto endpoints = adapters::make_endpoints(sc);
  auto* endpoint = dynamic_cast<adapters::ArduPilotJsonEndpoint*>(endpoints[0].get());
  runtime::Session session(sc, std::move(endpoints));
  std::atomic<bool> stop{false};
  std::thread runner([&] { session.run(stop); });
  std::uint16_t port = 0;
  for (int i = 0; i < 1000 && (port = endpoint->bound_port()) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ap::FixedPwm law = standin_law();
  ap::ArduPilotStandIn autopilot(standin_options(port, static_cast<std::uint16_t>(1000.0 / period_ms)), law);
  std::thread flying([&] {
    while (autopilot.frame(Clock::now() + std::chrono::seconds(30)) == ap::ArduPilotStandIn::FrameResult::replied) {
    }
  });
  runner.join();
  autopilot.cancel();
  flying.join();
  nlohmann::json summary = session.summary();
  summary["standin_resends"] = autopilot.counters.resends;
  summary["final_z_m"] = session.state().bodies[0].position_m.z();
  return summary;
}

void session_rate_round(long steps, Rate& r) {
  const nlohmann::json s = session_round(steps, 10, 0);
  const auto done = s["steps"].get<std::uint64_t>();
  const double wall = s["wall_time_s"].get<double>();
  r.add(done, wall);
  const auto& e = s["endpoints"][0];
  std::printf(
      "    session  %7llu frames in %6.3f s: %8.0f frames/s  (round trip p50 %.0f us, max %.0f us; %s, misses %llu, "
      "repeats %llu, stand-in re-sends %llu; %.2f sub-steps a step, hull at z %.2f m)\n",
      static_cast<unsigned long long>(done), wall, static_cast<double>(done) / wall, us(e["round_trip_ns"]["p50"]),
      us(e["round_trip_ns"]["max"]), s["outcome"].get<std::string>().c_str(), e["misses"].get<unsigned long long>(),
      e["ardupilot"]["repeats"].get<unsigned long long>(), s["standin_resends"].get<unsigned long long>(),
      s["physics_substeps"].get<double>() / static_cast<double>(std::max<std::uint64_t>(done, 1)),
      s["final_z_m"].get<double>());
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = bench::quick_mode(argc, argv);
  long frames = quick ? 300 : 20'000;
  int rounds = quick ? 2 : 3;
  double paced_s = quick ? 0.25 : 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--frames" && i + 1 < argc) {
      frames = std::max(1L, std::atol(argv[++i]));
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--paced-s" && i + 1 < argc) {
      paced_s = std::max(0.01, std::atof(argv[++i]));
    } else if (a == "--surface") {
      at_surface = true;
    } else if (a != "--quick") {
      std::fprintf(stderr, "usage: %s [--quick] [--frames N] [--rounds R] [--paced-s S] [--surface]\n", argv[0]);
      return 2;
    }
  }
  const std::string reply = fixed_reply();
  std::printf(
      "ArduPilot JSON lock-step on loopback, driven by the stand-in autopilot; echo reply %zu B; %u cores; hull %s\n",
      reply.size(), std::thread::hardware_concurrency(), at_surface ? "at the surface" : "submerged");
  // what writing one reply costs the endpoint (the echo sends ready bytes)
  const double encode_s = bench::time_per_iteration(
      [](long n) {
        ap::ReplyState r;
        r.quaternion = ap::Quat(0.923879532, 0.012345678, -0.023456789, 0.382683432).normalized();
        ap::ReplyBuffer out;
        for (long i = 0; i < n; ++i) {
          r.time_ns = 123'456'789'012 + i;
          r.position_m = {12.345678912 + static_cast<double>(i) * 1e-6, -3.456789123, 2.345678912};
          (void)ap::encode_reply(r, out);
        }
      },
      quick ? 0.02 : 0.2);
  std::printf("encode_reply: %.2f us a reply\n", encode_s * 1e6);

  // 1 and 2, taking turns
  std::printf("%d rounds of %ld frames, taking turns (echo, then session at rtf 0):\n", rounds, frames);
  Echo echo(reply);
  Rate echo_rate, session_rate;
  for (int r = 0; r < rounds; ++r) {
    std::printf("  round %d\n", r + 1);
    echo_round(echo, frames, echo_rate);
    session_rate_round(frames, session_rate);
  }
  const double ratio = session_rate.rate() / std::max(echo_rate.rate(), 1e-9);
  std::printf("  bare UDP echo (the ceiling)          %8.0f frames/s (best round %.0f)\n", echo_rate.rate(),
              echo_rate.best);
  std::printf("  Tether session, rtf 0, 6 thrusters   %8.0f frames/s (best round %.0f)\n", session_rate.rate(),
              session_rate.best);
  // the echo's rounds swing most on a shared machine (two threads that only wake each other
  // up): the best rounds are printed beside the totals
  const double best_ratio = session_rate.best / std::max(echo_rate.best, 1e-9);
  std::printf("  ratio session / echo: %.2f over all rounds, %.2f by best rounds (goal >= 0.7)\n", ratio, best_ratio);
  bench::figure("ArduPilot JSON lock-step / bare UDP echo (rtf 0)",
                bench::format("%.2f (%.0f vs %.0f frames/s); best rounds %.2f (%.0f vs %.0f)", ratio,
                              session_rate.rate(), echo_rate.rate(), best_ratio, session_rate.best, echo_rate.best),
                ">= 0.7");
  bench::figure("ArduPilot JSON lock-step frames/s (rtf 0)", bench::format("%.0f", session_rate.rate()), ">= 1200");

  // where a session's step goes (one more round, loop.profile_phases on; not in the rates):
  // gather is the wait for the stand-in's next frame, the rest is Tether's own work
  const nlohmann::json profiled = session_round(frames, 10, 0, true);
  std::printf("  one more session round with loop.profile_phases (%.0f frames/s), mean per step:\n ",
              profiled["steps"].get<double>() / profiled["wall_time_s"].get<double>());
  for (const auto& name : profiled["phase_profile"]["order"]) {
    const auto& p = profiled["phase_profile"]["phases"][name.get<std::string>()];
    std::printf(" %s %.1f us (%.0f%%, max %.0f us)", name.get<std::string>().c_str(), us(p["mean_ns_per_step"]),
                100 * p["share"].get<double>(), us(p["max_ns"]));
  }
  std::printf("\n");

  // 3: paced at 400 Hz
  const long paced_steps = std::max(1L, static_cast<long>(paced_s * 400));
  std::printf("\npaced at 400 Hz (period 2.5 ms, rtf 1), %ld steps (%.2f s):\n", paced_steps, paced_s);
  const nlohmann::json s = session_round(paced_steps, 2.5, 1);
  const auto& st = s["step_time_ns"];
  const auto& rt = s["endpoints"][0]["round_trip_ns"];
  const auto& e = s["endpoints"][0];
  std::printf("  outcome %s, %llu steps, achieved rtf %.3f, overruns %llu, misses %llu, late %llu\n",
              s["outcome"].get<std::string>().c_str(), s["steps"].get<unsigned long long>(),
              s["achieved_real_time_factor"].get<double>(), s["overruns"].get<unsigned long long>(),
              e["misses"].get<unsigned long long>(), e["late"].get<unsigned long long>());
  std::printf("  step time   p50 %8.1f us   p99 %8.1f us   max %8.1f us\n", us(st["p50"]), us(st["p99"]),
              us(st["max"]));
  std::printf("  round trip  p50 %8.1f us   p99 %8.1f us   max %8.1f us  (publish to the frame taken)\n", us(rt["p50"]),
              us(rt["p99"]), us(rt["max"]));
  bench::figure("ArduPilot JSON at 400 Hz: step time p50 / p99 / max",
                bench::format("%.0f / %.0f / %.0f us, %llu overruns", us(st["p50"]), us(st["p99"]), us(st["max"]),
                              s["overruns"].get<unsigned long long>()),
                "p99 < 2500 us (the period)");
  return 0;
}
