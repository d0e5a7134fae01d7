// SPDX-License-Identifier: Apache-2.0
// Firmware in the loop over a serial line: how fast, how steady. All in one run, same machine:
//
//   1  ceiling      raw pty round trips with frames of depth_heading_hold's sizes (34 bytes
//                   out, 32 back), echoed by a forked process; one thread, blocking poll
//   1b firmware     the host firmware driven by the shim protocol from one thread, no I/O
//                   thread: what this firmware and a pty allow
//   2a endpoint     SerialEndpoint publish/gather by hand against the host firmware
//   2  session      a Session at rtf 0 (physics, devices, endpoint) with the host firmware
//   2p phases       one more session round with loop.profile_phases, out of the figures:
//                   publish + gather against the loop's own work per step
//   3  qemu         the same session with the Cortex-M3 build under qemu-system-arm
//   4  real time    1 ms period for --duration s with the host firmware: overruns and
//                   deadline misses, against a bare clock_nanosleep 1 kHz loop (the Pacer
//                   with no work) measured just before it; then again with loop.realtime
//                   (mlockall, SCHED_FIFO 50, the last CPU; refusals are printed), and
//                   spinning (loop.realtime.spin_us 200, the endpoint's busy_poll_us 500)
//
// Usage: serial_lockstep [--quick] [--duration S] [--steps N] [--qemu-steps N]
//                        [--firmware PATH] [--elf PATH]
// Defaults look in the build folder: firmware/host/depth_heading_hold (CMake target
// fw_depth_heading_hold) and firmware/cortex_m3/depth_heading_hold.elf
// (scripts/build_firmware.sh cortex_m3, whose default output is build/firmware).
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_util.hpp"
#include "test_paths.hpp"
#include "tether/process/child_process.hpp"
#include "tether/endpoints/endpoint_factory.hpp"
#include "tether/serial/serial_endpoint.hpp"
#include "tether/serial/serial_port.hpp"
#include "tether/serial/serial_protocol.hpp"
#include "tether/hal/device_bank.hpp"
#include "tether/loop/device_world.hpp"
#include "tether/loop/histogram.hpp"
#include "tether/loop/pacing.hpp"
#include "tether/loop/session.hpp"

using namespace tether;
using Clock = std::chrono::steady_clock;

namespace {

struct Figures {
  std::string name;
  double rate = 0;  // round trips (or steps) per second
  std::uint64_t p50 = 0, p99 = 0, max = 0;
  std::string note;
};

std::uint64_t ns_since(Clock::time_point t0) {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
}

Figures from_histogram(const std::string& name, double rate, const runtime::Histogram& h, std::string note = "") {
  return {name, rate, h.percentile(0.5), h.percentile(0.99), h.max(), std::move(note)};
}

std::vector<std::uint8_t> frame_of_payload(std::uint8_t type, std::size_t payload_size) {
  std::vector<std::uint8_t> payload(payload_size, 0x5A);
  const tether_frame_header_t h{1, type, 7, static_cast<std::uint16_t>(payload_size)};
  std::vector<std::uint8_t> out(TETHER_WIRE_FRAME_MAX(payload_size));
  std::size_t n = 0;
  if (!tether_frame_encode(&h, payload.data(), out.data(), out.size(), &n)) std::abort();
  out.resize(n);
  return out;
}

// waits for a 0x00 on fd (blocking poll); false on error or `timeout_ms` of silence (-1: none)
bool read_until_delimiter(int fd, int timeout_ms = 2000) {
  std::uint8_t buf[256];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return false;
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) {
      if (n < 0 && errno == EAGAIN) continue;
      return false;
    }
    if (std::memchr(buf, 0, static_cast<std::size_t>(n)) != nullptr) return true;
  }
}

void write_all(int fd, const std::vector<std::uint8_t>& b) {
  std::size_t done = 0;
  while (done < b.size()) {
    const ssize_t n = write(fd, b.data() + done, b.size() - done);
    if (n > 0)
      done += static_cast<std::size_t>(n);
    else if (n < 0 && errno != EAGAIN && errno != EINTR)
      return;
  }
}

// 1: raw pty echo, frames of the protocol's per-step sizes, echoed by a forked process
class RawEcho {
 public:
  RawEcho()
      : sensors_(frame_of_payload(TETHER_MSG_SENSORS, 22)),  // 8 time + depth 1+8 + compass 1+4
        actuate_(frame_of_payload(TETHER_MSG_ACTUATE, 20)),  // 4 thrusters x (1+4)
        pair_(adapters::open_pty_pair()) {
    child_ = fork();
    if (child_ == 0) {
      close(pair_.master);
      // no timeout: the other measurements run between this one's rounds, for seconds
      // under load; the destructor kills the echo
      for (;;) {
        if (!read_until_delimiter(pair_.slave, -1)) _exit(0);
        write_all(pair_.slave, actuate_);
      }
    }
  }
  ~RawEcho() {
    kill(child_, SIGKILL);
    waitpid(child_, nullptr, 0);
    close(pair_.master);
    close(pair_.slave);
  }
  void run(long n, runtime::Histogram& h, double& wall) {
    const auto t0 = Clock::now();
    for (long i = 0; i < n; ++i) {
      const auto s = Clock::now();
      write_all(pair_.master, sensors_);
      if (!read_until_delimiter(pair_.master)) {
        ++lost_;
        break;
      }
      h.record(ns_since(s));
    }
    wall += bench::seconds_since(t0);
  }
  std::string note() const {
    return std::to_string(sensors_.size()) + " B out, " + std::to_string(actuate_.size()) + " B back" +
           (lost_ ? ", " + std::to_string(lost_) + " echoes lost (2 s timeouts)" : std::string());
  }

 private:
  std::vector<std::uint8_t> sensors_, actuate_;
  adapters::PtyPair pair_;
  pid_t child_ = -1;
  long lost_ = 0;
};

// the scenario: an AUV with the devices depth_heading_hold opens; `endpoint` is the YAML entry
std::string scenario_text(const std::string& endpoint, long steps, double period_ms, double rtf,
                          const std::string& realtime = "", const std::string& loop_extra = "") {
  return R"(name: serial_lockstep
world:
  water: {density_kg_m3: 1025, surface_z_m: 0}
  tank: {size_m: [400, 20, 8], floor_z_m: -8}
vehicles:
  - name: auv
    bodies:
      - name: hull
        shape: {type: cylinder, radius_m: 0.1, length_m: 1.2}
        mass_kg: 38.64
        centre_of_buoyancy_m: [0, 0, 0.02]
        damping: {linear: [10, 30, 30], quadratic: [20, 80, 80], angular_linear: [2, 6, 6], angular_quadratic: [1, 4, 4]}
        initial: {position_m: [-190, 0, -0.2]}
        devices:
          - {name: depth, kind: depth}
          - {name: compass, kind: compass}
          - {name: thruster_left, kind: thruster, mount: {position_m: [-0.55, 0.14, 0]}}
          - {name: thruster_right, kind: thruster, mount: {position_m: [-0.55, -0.14, 0]}}
          - {name: thruster_vfront, kind: thruster, mount: {position_m: [0.35, 0, 0], orientation_rpy_deg: [0, 90, 0]}}
          - {name: thruster_vrear, kind: thruster, mount: {position_m: [-0.35, 0, 0], orientation_rpy_deg: [0, 90, 0]}}
loop: {period_ms: )" +
         std::to_string(period_ms) + ", real_time_factor: " + std::to_string(rtf) +
         ", steps: " + std::to_string(steps) + (realtime.empty() ? "" : ", realtime: " + realtime) + loop_extra +
         "}\nrecording: {enabled: false}\nendpoints:\n" + endpoint;
}

std::string launch_entry(const std::string& launch, const std::string& policy, double deadline_ms,
                         const std::string& extra = "") {
  char deadline[32];
  std::snprintf(deadline, sizeof deadline, "%g", deadline_ms);
  return "  - {name: fw, type: serial, vehicle: auv, launch: " + launch + ", deadline_ms: " + deadline +
         ", timeout_policy: " + policy + extra + "}\n";
}

// 1b: the host firmware, driven by the protocol code from this thread only
class DirectFirmware {
 public:
  explicit DirectFirmware(const std::string& firmware)
      : scenario_(runtime::parse_scenario(
            scenario_text(launch_entry("{command: ['" + firmware + "']}", "block", 1000), 1, 10, 0), "bench.yaml")),
        pair_(adapters::open_pty_pair()), fw_({{firmware}, {{"TETHER_PORT", pair_.slave_path}}, {}}),
        proto_("fw", adapters::parse_serial_config(scenario_.endpoints[0], scenario_).table) {
    ok_ = pump([&] { return proto_.have_hello(); });
    proto_.send_devices();
    flush();
    ok_ = ok_ && pump([&] { return proto_.phase() == adapters::SerialProtocol::Phase::running; });
  }
  ~DirectFirmware() {
    proto_.send_stop(step_);
    flush();
    fw_.wait_for(std::chrono::seconds(2));
    fw_.terminate(std::chrono::seconds(1));
    close(pair_.master);
    close(pair_.slave);
  }
  void run(long n, runtime::Histogram& h, double& wall) {
    const auto t0 = Clock::now();
    for (long i = 0; i < n && ok_; ++i) {
      ++step_;
      const auto s = Clock::now();
      proto_.send_sensors(step_, static_cast<std::uint64_t>(step_) * 10000, nullptr);
      flush();
      ok_ = pump([&] { return proto_.reply_ready(); });
      if (ok_) h.record(ns_since(s));
    }
    wall += bench::seconds_since(t0);
  }

 private:
  void flush() {
    write_all(pair_.master, proto_.outbox());
    proto_.outbox().clear();
  }
  template <typename F>
  bool pump(F done) {
    std::uint8_t buf[512];
    while (!done()) {
      pollfd p{pair_.master, POLLIN, 0};
      if (poll(&p, 1, 2000) <= 0) return false;
      const ssize_t n = read(pair_.master, buf, sizeof buf);
      if (n > 0) proto_.on_bytes(buf, static_cast<std::size_t>(n));
      if (!proto_.outbox().empty()) flush();
    }
    return true;
  }
  runtime::Scenario scenario_;
  adapters::PtyPair pair_;
  adapters::ChildProcess fw_;
  adapters::SerialProtocol proto_;
  std::uint32_t step_ = 0;
  bool ok_ = false;
};

// 2a: the endpoint alone, publish/gather by hand, readings from a sensed bank
class EndpointOnly {
 public:
  explicit EndpointOnly(const std::string& firmware)
      : scenario_(runtime::parse_scenario(
            scenario_text(launch_entry("{command: ['" + firmware + "']}", "block", 1000), 1, 10, 0), "bench.yaml")),
        endpoints_(adapters::make_endpoints(scenario_)), bank_(scenario_.devices, 1, scenario_.model.bodies.size()),
        view_(scenario_.model) {
    view_.update(scenario_.initial, nullptr, 0.01);
    bank_.sense(view_, 0);
    endpoints_[0]->attach_devices(&bank_);
    endpoints_[0]->start(scenario_.model, scenario_.initial);
  }
  ~EndpointOnly() { endpoints_[0]->stop(); }
  void run(long n, runtime::Histogram& h, double& wall) {
    runtime::Endpoint& ep = *endpoints_[0];
    const auto t0 = Clock::now();
    for (long i = 0; i < n; ++i) {
      ++step_;
      const runtime::StepContext ctx{step_, static_cast<std::int64_t>(step_) * 10'000'000, 10'000'000};
      const auto s = Clock::now();
      if (!ep.publish(ctx, scenario_.initial)) break;
      if (ep.gather(ctx, s + std::chrono::seconds(2), reply_) != runtime::GatherStatus::ready) {
        ++misses_;
        continue;
      }
      h.record(ns_since(s));
    }
    wall += bench::seconds_since(t0);
  }
  long misses() const { return misses_; }

 private:
  runtime::Scenario scenario_;
  std::vector<std::unique_ptr<runtime::Endpoint>> endpoints_;
  hal::DeviceBank bank_;
  runtime::DeviceWorld view_;
  runtime::Reply reply_;
  std::uint64_t step_ = 0;
  long misses_ = 0;
};

// a whole session; `h` gets the time between consecutive step ends (at rtf 0: the lock-step
// period, round trip + physics + devices + loop), `wall` the run's wall time after start
struct SessionRound {
  nlohmann::json summary;
  std::uint64_t steps = 0;
  std::uint64_t misses = 0;
  std::uint64_t intervals_over_2ms = 0;  // step to step
};

SessionRound run_session(const std::string& text, runtime::Histogram& h, double& wall) {
  const runtime::Scenario sc = runtime::parse_scenario(text, "bench.yaml");
  runtime::SessionOptions options;
  Clock::time_point last{};
  std::uint64_t over_2ms = 0;
  options.after_step = [&](const runtime::WorldState&) {
    const auto now = Clock::now();
    if (last != Clock::time_point{}) {
      const auto ns =
          static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - last).count());
      h.record(ns);
      over_2ms += ns > 2'000'000 ? 1 : 0;
    }
    last = now;
    return true;
  };
  runtime::Session session(sc, adapters::make_endpoints(sc), options);
  std::atomic<bool> stop{false};
  session.run(stop);
  SessionRound r;
  r.summary = session.summary();
  r.steps = session.steps_done();
  r.misses = session.endpoint_counters(0).misses;
  r.intervals_over_2ms = over_2ms;
  wall += r.summary["wall_time_s"].get<double>();
  return r;
}

void print_row(const Figures& f) {
  std::printf("  %-28s %10.0f /s   %8.1f %8.1f %9.1f us   %s\n", f.name.c_str(), f.rate,
              static_cast<double>(f.p50) / 1e3, static_cast<double>(f.p99) / 1e3, static_cast<double>(f.max) / 1e3,
              f.note.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = bench::quick_mode(argc, argv);
  double duration_s = quick ? 2 : 60;
  long steps = quick ? 2000 : 20000;
  long qemu_steps = quick ? 500 : 5000;
  std::string firmware = TETHER_BINARY_DIR + "/firmware/host/depth_heading_hold";
  std::string elf = TETHER_BINARY_DIR + "/firmware/cortex_m3/depth_heading_hold.elf";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--duration")
      duration_s = std::stod(next());
    else if (a == "--steps")
      steps = std::stol(next());
    else if (a == "--qemu-steps")
      qemu_steps = std::stol(next());
    else if (a == "--firmware")
      firmware = next();
    else if (a == "--elf")
      elf = next();
    else if (a != "--quick") {
      std::fprintf(stderr,
                   "usage: %s [--quick] [--duration S] [--steps N] [--qemu-steps N] [--firmware PATH] [--elf PATH]\n",
                   argv[0]);
      return 2;
    }
  }
  adapters::set_serial_logs_quiet(true);
  if (!std::filesystem::exists(firmware)) {
    std::fprintf(stderr, "host firmware not found: %s (build the fw_depth_heading_hold target)\n", firmware.c_str());
    return 1;
  }
  std::printf("serial lock-step, depth_heading_hold (34 B SENSORS, 32 B ACTUATE per step); %u cores\n",
              std::thread::hardware_concurrency());
  std::printf("  %-28s %13s   %8s %8s %9s\n", "", "rate", "p50", "p99", "max");

  // the pty measurements take turns in rounds, so a burst of load on this shared machine
  // falls on all of them alike
  const int rounds = quick ? 4 : 10;
  const long per_round = std::max(1L, steps / rounds);
  RawEcho raw;
  DirectFirmware direct(firmware);
  EndpointOnly endpoint(firmware);
  runtime::Histogram h_raw, h_direct, h_endpoint, h_session;
  double w_raw = 0, w_direct = 0, w_endpoint = 0, w_session = 0;
  std::uint64_t session_steps = 0, session_misses = 0;
  // the best round of each, too: on a shared machine a burst of other work lands on some
  // rounds, and one millisecond-long descheduling costs as much as a hundred round trips
  double best_raw = 0, best_direct = 0, best_endpoint = 0, best_session = 0;
  auto best = [](double& best_rate, const runtime::Histogram& h, std::uint64_t count_before, double wall,
                 double wall_before) {
    if (wall > wall_before)
      best_rate = std::max(best_rate, static_cast<double>(h.count() - count_before) / (wall - wall_before));
  };
  for (int r = 0; r < rounds; ++r) {
    std::uint64_t c = h_raw.count();
    double w = w_raw;
    raw.run(per_round, h_raw, w_raw);
    best(best_raw, h_raw, c, w_raw, w);
    c = h_direct.count();
    w = w_direct;
    direct.run(per_round, h_direct, w_direct);
    best(best_direct, h_direct, c, w_direct, w);
    c = h_endpoint.count();
    w = w_endpoint;
    endpoint.run(per_round, h_endpoint, w_endpoint);
    best(best_endpoint, h_endpoint, c, w_endpoint, w);
    w = w_session;
    const SessionRound s =
        run_session(scenario_text(launch_entry("{command: ['" + firmware + "']}", "block", 1000), per_round, 10, 0),
                    h_session, w_session);
    if (w_session > w) best_session = std::max(best_session, static_cast<double>(s.steps) / (w_session - w));
    session_steps += s.steps;
    session_misses += s.misses;
  }
  auto rate = [](const runtime::Histogram& h, double wall, std::uint64_t count = 0) {
    return wall > 0 ? static_cast<double>(count ? count : h.count()) / wall : 0.0;
  };
  const Figures ceiling = from_histogram("1  raw pty echo (ceiling)", rate(h_raw, w_raw), h_raw, raw.note());
  const Figures direct_f = from_histogram("1b firmware, 1 thread", rate(h_direct, w_direct), h_direct,
                                          "shim protocol, no I/O thread, no physics");
  const Figures endpoint_f = from_histogram("2a endpoint publish/gather", rate(h_endpoint, w_endpoint), h_endpoint,
                                            "I/O thread, no physics; " + std::to_string(endpoint.misses()) + " misses");
  const Figures session = from_histogram(
      "2  session rtf 0, host fw", rate(h_session, w_session, session_steps), h_session,
      std::to_string(session_steps) + " steps, " + std::to_string(session_misses) + " misses; times are step to step");
  std::printf("  (%d rounds of %ld round trips each, taking turns)\n", rounds, per_round);
  for (const Figures* f : {&ceiling, &direct_f, &endpoint_f, &session}) print_row(*f);
  Figures qemu{"3  session rtf 0, QEMU fw", 0, 0, 0, 0, "skipped: no " + elf};
  if (std::filesystem::exists(elf) && std::system("command -v qemu-system-arm >/dev/null 2>&1") == 0) {
    runtime::Histogram h_qemu;
    double w_qemu = 0;
    const SessionRound s = run_session(
        scenario_text(launch_entry("{qemu: '" + elf + "'}", "block", 1000), qemu_steps, 10, 0), h_qemu, w_qemu);
    qemu = from_histogram(qemu.name, rate(h_qemu, w_qemu, s.steps), h_qemu,
                          std::to_string(s.steps) + " steps, " + std::to_string(s.misses) + " misses");
  }
  print_row(qemu);
  std::printf("  best round: raw echo %.0f /s, firmware 1 thread %.0f /s, endpoint %.0f /s, session %.0f steps/s\n",
              best_raw, best_direct, best_endpoint, best_session);
  std::printf("  ratio session / raw echo: %.2f by rate, %.2f by best round, %.2f by p50 (goal >= 0.8)\n",
              session.rate / ceiling.rate, best_raw > 0 ? best_session / best_raw : 0.0,
              static_cast<double>(ceiling.p50) / static_cast<double>(std::max<std::uint64_t>(1, session.p50)));
  std::printf("  ratio session / firmware driven from one thread: %.2f by rate, %.2f by p50\n",
              session.rate / direct_f.rate,
              static_cast<double>(direct_f.p50) / static_cast<double>(std::max<std::uint64_t>(1, session.p50)));
  std::printf("  ratio endpoint alone / raw echo: %.2f by rate, %.2f by p50\n", endpoint_f.rate / ceiling.rate,
              static_cast<double>(ceiling.p50) / static_cast<double>(std::max<std::uint64_t>(1, endpoint_f.p50)));
  bench::figure("serial lock-step, session / raw pty echo (rtf 0)",
                bench::format("%.2f (%.0f vs %.0f /s; best rounds %.2f)", session.rate / ceiling.rate, session.rate,
                              ceiling.rate, best_raw > 0 ? best_session / best_raw : 0.0),
                ">= 0.85");

  // 2p: where the session's step goes: one more round with loop.profile_phases (two clock
  // reads a phase, so it is kept out of the figures above): the round trip (publish + gather)
  // against the loop's own work, which is what separates row 2 from row 2a
  {
    runtime::Histogram h_profiled;
    double w_profiled = 0;
    const SessionRound s = run_session(scenario_text(launch_entry("{command: ['" + firmware + "']}", "block", 1000),
                                                     per_round, 10, 0, "", ", profile_phases: true"),
                                       h_profiled, w_profiled);
    const nlohmann::json& phases = s.summary["phase_profile"]["phases"];
    double round_trip = 0, loop_work = 0;
    std::string each;
    for (const auto& [name, p] : phases.items()) {
      const double ns = p.value("mean_ns_per_step", 0.0);
      (name == "publish" || name == "gather" ? round_trip : loop_work) += ns;
      if (ns >= 100) each += bench::format(" %s %.0f", name.c_str(), ns);
    }
    std::printf("  2p session phases, one more round with loop.profile_phases (ns per step):%s\n", each.c_str());
    std::printf("     publish + gather %.1f us, the loop's own work %.1f us (%.0f %% of the step)\n", round_trip / 1e3,
                loop_work / 1e3, round_trip + loop_work > 0 ? 100.0 * loop_work / (round_trip + loop_work) : 0.0);
  }

  // 4: real time, 1 ms period: the bare Pacer first, then the session, each for duration_s
  const long rt_steps = static_cast<long>(duration_s * 1000);
  std::printf("\nreal time, 1 ms period, %.0f s each (bare loop first, then the session)\n", duration_s);
  runtime::Pacer::reduce_timer_slack();
  runtime::Pacer bare;
  runtime::Histogram h_bare;  // wake-up to wake-up, as the session's step to step below
  std::uint64_t bare_over_2ms = 0;
  bare.start(Clock::now(), 1'000'000);
  auto last_wake = Clock::now();
  for (long i = 0; i < rt_steps; ++i) {
    bare.wait_next();
    const std::uint64_t ns = ns_since(last_wake);
    h_bare.record(ns);
    bare_over_2ms += ns > 2'000'000 ? 1 : 0;
    last_wake = Clock::now();
  }
  const runtime::Histogram& late = bare.wake_lateness_ns();
  std::printf(
      "  bare clock_nanosleep loop:  overruns %llu, cycles skipped (> 1 period late) %llu, wake lateness p50 %.1f "
      "p99 %.1f max %.1f us\n",
      static_cast<unsigned long long>(bare.overruns()), static_cast<unsigned long long>(bare.reanchors()),
      static_cast<double>(late.percentile(0.5)) / 1e3, static_cast<double>(late.percentile(0.99)) / 1e3,
      static_cast<double>(late.max()) / 1e3);
  // the session three times: as it is, with loop.realtime (locked memory, SCHED_FIFO 50, the
  // last CPU; a refused option is said and the run goes on without it), and spinning instead
  // of sleeping (the pacer's last 200 us, the line polled for 500 us after each SENSORS)
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const std::string realtime[3] = {
      "", "{lock_memory: true, priority: 50, cpu: " + std::to_string(std::max(0L, cpus - 1)) + "}", "{spin_us: 200}"};
  const std::string endpoint_extra[3] = {"", "", ", busy_poll_us: 500"};
  struct RtRun {
    const char* name;
    runtime::Histogram h;
    SessionRound round;
  };
  RtRun runs[3] = {{"session with host firmware:", {}, {}},
                   {"  the same, loop.realtime:", {}, {}},
                   {"  the same, spinning:", {}, {}}};
  for (int r = 0; r < 3; ++r) {
    double w_rt = 0;
    runs[r].round =
        run_session(scenario_text(launch_entry("{command: ['" + firmware + "']}", "hold", 0.9, endpoint_extra[r]),
                                  rt_steps, 1, 1, realtime[r]),
                    runs[r].h, w_rt);
    const nlohmann::json& summary = runs[r].round.summary;
    const nlohmann::json& e = summary["endpoints"][0];
    const nlohmann::json& rtt = e["round_trip_ns"];
    std::printf(
        "  %s overruns %llu, cycles skipped (> 1 period late) %llu, firmware deadline "
        "(0.9 ms) misses %llu of %ld, late replies counted stale %llu, round trip p50 %.1f p99 %.1f max %.1f us, "
        "step p99 %.1f us\n",
        runs[r].name, static_cast<unsigned long long>(summary["overruns"].get<std::uint64_t>()),
        static_cast<unsigned long long>(summary["reanchors"].get<std::uint64_t>()),
        static_cast<unsigned long long>(e["misses"].get<std::uint64_t>()), rt_steps,
        static_cast<unsigned long long>(e["stale"].get<std::uint64_t>()), rtt["p50"].get<double>() / 1e3,
        rtt["p99"].get<double>() / 1e3, rtt["max"].get<double>() / 1e3,
        summary["step_time_ns"]["p99"].get<double>() / 1e3);
    if (summary.contains("realtime"))
      for (const auto& [option, status] : summary["realtime"].items())
        std::printf("    realtime %s: %s\n", option.c_str(), status.get<std::string>().c_str());
    if (e["serial"].contains("busy_poll"))
      std::printf("    busy_poll_us %lld: %llu of %ld replies taken while polling\n",
                  static_cast<long long>(e["serial"]["busy_poll"]["us"].get<std::int64_t>()),
                  static_cast<unsigned long long>(e["serial"]["busy_poll"]["replies_polled"].get<std::uint64_t>()),
                  rt_steps);
  }
  // the same yardstick for both: the interval between consecutive cycles (1 ms when on time);
  // an interval over 2 ms means at least one cycle's deadline was missed
  auto interval_row = [](const char* name, const runtime::Histogram& h, std::uint64_t over) {
    std::printf("  %-27s cycle-to-cycle p50 %.1f p99 %.1f max %.1f us; intervals > 2 ms: %llu of %llu\n", name,
                static_cast<double>(h.percentile(0.5)) / 1e3, static_cast<double>(h.percentile(0.99)) / 1e3,
                static_cast<double>(h.max()) / 1e3, static_cast<unsigned long long>(over),
                static_cast<unsigned long long>(h.count()));
  };
  interval_row("bare loop:", h_bare, bare_over_2ms);
  for (const RtRun& r : runs) interval_row(r.name, r.h, r.round.intervals_over_2ms);
  for (int r = 0; r < 3; ++r) {
    const nlohmann::json& summary = runs[r].round.summary;
    const std::string which = r == 0 ? "1 kHz" : r == 1 ? "1 kHz, loop.realtime" : "1 kHz, spinning";
    bench::figure(
        which + ": overruns, session vs bare loop",
        bench::format("%llu vs %llu", static_cast<unsigned long long>(summary["overruns"].get<std::uint64_t>()),
                      static_cast<unsigned long long>(bare.overruns())),
        "<= bare");
    bench::figure(which + ": firmware deadline misses",
                  bench::format("%llu of %ld",
                                static_cast<unsigned long long>(summary["endpoints"][0]["misses"].get<std::uint64_t>()),
                                rt_steps),
                  bench::format("<= %ld", std::max(1L, rt_steps / 10000)));
  }
  return 0;
}
