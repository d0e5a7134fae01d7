// SPDX-License-Identifier: Apache-2.0
// The ardupilot_json endpoint in a Session against the stand-in autopilot, where things go
// wrong: ArduPilot falls silent (its socket closed) under each timeout policy, 32 servo
// channels, and hostile datagrams from another socket while it flies. The hostile ones are
// sent between steps (after_step), while the stand-in waits for its reply: every one of them
// is in the endpoint's queue before the stand-in's next frame, so the counts are exact.
// Loopback only; every wait bounded; nothing asserts timing.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tether/ardupilot/ardupilot_endpoint.hpp"
#include "tether/ardupilot_standin/ardupilot_standin.hpp"
#include "tether/endpoints/endpoint_factory.hpp"
#include "tether/firmware_shim/payloads.h"
#include "tether/loop/session.hpp"
#include "ardupilot_test_util.hpp"

using namespace tether;
using namespace tether::runtime;
namespace ap = tether::adapters::ardupilot;
using Clock = std::chrono::steady_clock;

namespace {

// one thruster on a sphere in zero gravity, `steps` of 10 ms at rtf 0; `endpoint` adds keys
// to the endpoint "ap" (its policy, deadline, channels)
std::string scenario_text(int steps, const std::string& endpoint) {
  return ardupilot_test::one_thruster_world("ardupilot_policies", steps, ", seed: 7") + R"(  - name: ap
    type: ardupilot_json
    vehicle: auv
    port: 0
    connect_timeout_ms: 10000
)" + endpoint;
}

struct Flown {
  Outcome outcome = Outcome::failed;
  nlohmann::json summary;  // the session's
  nlohmann::json ap;       // summary.endpoints[0]
  std::string reason;      // the session's abort_reason()
  std::uint64_t steps_done = 0;
  float thruster = -99;           // the thruster's command as last set (its command bytes)
  double x_m = 0;                 // the hull's position east
  std::uint32_t frame_count = 0;  // the stand-in's, when it stopped
  std::uint16_t autopilot_port = 0;
};

struct FlightPlan {
  std::string text;                 // the scenario
  ap::StandInOptions autopilot;     // port filled in
  std::uint16_t pwm_us = 1600;      // every channel (FixedPwm)
  int channel = 0, channel_us = 0;  // one channel (0-based) set apart, when channel_us > 0
  int frames = 0;                   // the stand-in goes silent after this many frames (0: never)
  int stop_after_silence_ms = 0;    // then the test sets the stop flag after this long (0: never)
  std::function<void(adapters::ArduPilotJsonEndpoint&, std::uint64_t step)> between_steps;
};

// runs the session in a thread against the stand-in (in another): it flies `frames` frames
// and is destroyed (ArduPilot gone, its socket closed), or flies until the session ends
Flown fly(FlightPlan plan) {
  const Scenario sc = parse_scenario(plan.text, "ap_policies.yaml");
  auto endpoints = adapters::make_endpoints(sc);
  auto* endpoint = dynamic_cast<adapters::ArduPilotJsonEndpoint*>(endpoints[0].get());
  REQUIRE(endpoint != nullptr);
  SessionOptions options;
  std::uint64_t step = 0;
  if (plan.between_steps)
    options.after_step = [&](const WorldState&) {
      plan.between_steps(*endpoint, step++);
      return true;
    };
  Session session(sc, std::move(endpoints), options);
  std::atomic<bool> stop{false};
  Flown out;
  std::thread runner([&] { out.outcome = session.run(stop); });
  std::uint16_t port = 0;
  for (int i = 0; i < 1000 && (port = endpoint->bound_port()) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(port != 0);

  ap::FixedPwm law(plan.pwm_us);
  if (plan.channel_us > 0) law.set(static_cast<std::size_t>(plan.channel), static_cast<std::uint16_t>(plan.channel_us));
  plan.autopilot.port = port;
  std::optional<ap::ArduPilotStandIn> autopilot;
  autopilot.emplace(plan.autopilot, law);
  out.autopilot_port = autopilot->local_port();
  std::thread flying([&] {
    for (int n = 0; plan.frames == 0 || n < plan.frames; ++n)
      if (autopilot->frame(Clock::now() + std::chrono::seconds(20)) != ap::ArduPilotStandIn::FrameResult::replied)
        break;
    out.frame_count = autopilot->frame_count();
    if (plan.frames > 0) autopilot.reset();  // ArduPilot gone: its socket closed
  });
  if (plan.frames > 0) {
    flying.join();
    if (plan.stop_after_silence_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(plan.stop_after_silence_ms));
      stop = true;
    }
    runner.join();
  } else {
    runner.join();
    autopilot->cancel();
    flying.join();
  }
  out.summary = session.summary();
  out.ap = out.summary["endpoints"][0];
  out.reason = session.abort_reason();
  out.steps_done = session.steps_done();
  out.x_m = session.state().bodies[0].position_m.x();
  const int thruster = session.devices().find("auv.hull.thruster");
  REQUIRE(thruster >= 0);
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
  (void)session.devices().reading(static_cast<std::size_t>(thruster), data, size);
  REQUIRE(size >= 4);
  out.thruster = tether_get_f32le(data);
  return out;
}

FlightPlan silent_after(int frames, int steps, const std::string& policy, int deadline_ms) {
  FlightPlan plan;
  plan.text =
      scenario_text(steps, "    deadline_ms: " + std::to_string(deadline_ms) + "\n    timeout_policy: " + policy +
                               "\n    channels: [{channel: 1, actuator: thruster}]\n");
  plan.autopilot.resend_after_ms = 50;
  plan.autopilot.recv_timeout_ms = 10;
  plan.frames = frames;
  return plan;
}

// A socket that is not ArduPilot, on the endpoint's port
class Stranger {
 public:
  Stranger() {
    fd_ = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  }
  ~Stranger() { ::close(fd_); }
  Stranger(const Stranger&) = delete;
  Stranger& operator=(const Stranger&) = delete;
  void send(std::uint16_t port, const std::vector<std::uint8_t>& bytes) {
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::sendto(fd_, bytes.data(), bytes.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
  }
  // every datagram it was sent (waits up to `wait_ms` for the first)
  std::vector<std::string> received(int wait_ms) {
    std::vector<std::string> all;
    char buf[2048];
    for (pollfd p{fd_, POLLIN, 0}; ::poll(&p, 1, all.empty() ? wait_ms : 0) > 0;) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n < 0) break;
      all.emplace_back(buf, static_cast<std::size_t>(n));
    }
    return all;
  }

 private:
  int fd_ = -1;
};

std::vector<std::uint8_t> servo_bytes(std::uint32_t frame_count, std::uint8_t channels = 16) {
  ap::ServoPacket p;
  p.frame_rate_hz = 400;
  p.frame_count = frame_count;
  p.channels = channels;
  p.pwm_us.fill(1900);
  std::vector<std::uint8_t> bytes(ap::servo_packet_bytes_32);
  bytes.resize(ap::encode_servo_packet(p, bytes.data(), bytes.size()));
  return bytes;
}

}  // namespace

TEST_CASE("ardupilot policies: ArduPilot silent, block: the run waits without stepping until stopped") {
  FlightPlan plan = silent_after(12, 30, "block", 100);
  plan.stop_after_silence_ms = 400;  // a few deadline slices of waiting
  const Flown f = fly(plan);
  INFO(f.summary.dump(2));
  // frame 0 is start()'s; frames 1..11 are steps 0..10; step 11 waits for frame 12
  CHECK(f.frame_count == 12);
  CHECK(f.outcome == Outcome::stopped);
  CHECK(f.summary["outcome"] == "stopped");
  CHECK(f.steps_done == 11);
  CHECK(f.summary["steps"] == 11);
  CHECK(f.ap["replies"] == 11);
  CHECK(f.ap["ardupilot"]["frames"] == 11);
  CHECK(f.ap["misses"] == 0);  // stopped while waiting: not a miss
  CHECK(f.ap["late"] == 0);
  CHECK(f.reason.empty());
}

TEST_CASE("ardupilot policies: ArduPilot silent, hold: misses counted, the run completes on the last commands") {
  const Flown f = fly(silent_after(12, 24, "hold", 150));
  INFO(f.summary.dump(2));
  CHECK(f.outcome == Outcome::completed);  // a miss is not a fault: the run is `completed`
  CHECK(f.summary["outcome"] == "completed");
  CHECK(f.steps_done == 24);
  CHECK(f.ap["replies"] == 11);
  CHECK(f.ap["misses"] == 13);
  CHECK(f.ap["faults"] == 0);
  CHECK(f.ap["ardupilot"]["frames"] == 11);
  CHECK(f.thruster == doctest::Approx(0.25));  // 1600 us held: (1600 - 1500) / 400
  CHECK(f.x_m > 0);
}

TEST_CASE("ardupilot policies: ArduPilot silent, safe: misses counted, the thruster at its stop command") {
  const Flown f = fly(silent_after(12, 24, "safe", 150));
  INFO(f.summary.dump(2));
  CHECK(f.outcome == Outcome::completed);
  CHECK(f.steps_done == 24);
  CHECK(f.ap["replies"] == 11);
  CHECK(f.ap["misses"] == 13);
  CHECK(f.thruster == 0.0f);
}

TEST_CASE("ardupilot policies: ArduPilot silent, abort: the run ends aborted at the first miss, naming the endpoint") {
  const Flown f = fly(silent_after(12, 30, "abort", 150));
  INFO(f.summary.dump(2));
  CHECK(f.outcome == Outcome::aborted);
  CHECK(f.summary["outcome"] == "aborted");
  CHECK(f.steps_done == 11);
  CHECK(f.ap["misses"] == 1);
  CHECK(f.ap["replies"] == 11);
  CHECK(f.reason == "endpoint \"ap\" missed its deadline at step 11; policy abort stopped the session");
  CHECK(f.summary["reason"] == f.reason);
}

TEST_CASE("ardupilot policies: 32 channels through a session: channel 32 drives the thruster") {
  FlightPlan plan;
  plan.text = scenario_text(30, "    deadline_ms: 5000\n    channels: [{channel: 32, actuator: thruster}]\n");
  plan.autopilot.channels = 32;
  plan.pwm_us = 1100;  // every other channel full reverse
  plan.channel = 31;
  plan.channel_us = 1900;
  Flown f = fly(plan);
  INFO(f.summary.dump(2));
  CHECK(f.outcome == Outcome::completed);
  CHECK(f.ap["replies"] == 30);
  CHECK(f.ap["ardupilot"]["packets"]["accepted"].get<int>() >= 31);
  CHECK(f.ap["corrupt"] == 0);
  CHECK(f.thruster == 1.0f);
  CHECK(f.x_m > 0);  // pushed east (the body's +x), not back

  // the same map against 16 channels: channel 32 is not in the packet, so it reads 0 (stop)
  plan.autopilot.channels = 16;
  plan.channel = 15;
  f = fly(plan);
  CHECK(f.outcome == Outcome::completed);
  CHECK(f.thruster == 0.0f);
  CHECK(std::abs(f.x_m) < 1e-9);
}

TEST_CASE("ardupilot policies: hostile datagrams mid-session are counted, a stranger is ignored, not followed") {
  Stranger stranger;
  FlightPlan plan;
  plan.text = scenario_text(40, "    deadline_ms: 5000\n    channels: [{channel: 1, actuator: thruster}]\n");
  plan.autopilot.resend_after_ms = 5000;  // no re-send in between: the counts below are exact
  plan.between_steps = [&](adapters::ArduPilotJsonEndpoint& ep, std::uint64_t step) {
    const std::uint16_t port = ep.bound_port();
    if (step == 10) {
      std::vector<std::uint8_t> wrong_magic = servo_bytes(1000);
      wrong_magic[0] = 0x34;
      wrong_magic[1] = 0x12;
      stranger.send(port, wrong_magic);  // bad_magic
      stranger.send(port, {});           // bad_magic (under 2 bytes)
      stranger.send(port, {0x1a});       // bad_magic
      std::vector<std::uint8_t> short_one = servo_bytes(1000);
      short_one.resize(20);
      stranger.send(port, short_one);  // short_packet
      std::vector<std::uint8_t> short32 = servo_bytes(1000, 32);
      short32.resize(ap::servo_packet_bytes_16);  // a 32-channel magic with 16 channels' bytes
      stranger.send(port, short32);               // short_packet
      std::vector<std::uint8_t> long_one = servo_bytes(1000);
      long_one.resize(700, 0x55);     // past the endpoint's 512-byte buffer
      stranger.send(port, long_one);  // long_packet
      std::mt19937 rng(11);
      for (int i = 0; i < 5; ++i) {
        std::vector<std::uint8_t> noise(static_cast<std::size_t>(3 + i * 37));
        for (auto& b : noise) b = static_cast<std::uint8_t>(rng());
        noise[0] = 0xff;             // never one of the two magics
        stranger.send(port, noise);  // bad_magic
      }
    }
    if (step == 20) {
      // a valid-looking packet from another address, not at frame 0: not ArduPilot restarting
      // (docs/ardupilot.md, "another sender")
      stranger.send(port, servo_bytes(7));
    }
  };
  const Flown f = fly(plan);
  INFO(f.summary.dump(2));
  REQUIRE(f.outcome == Outcome::completed);
  CHECK(f.steps_done == 40);
  CHECK(f.ap["replies"] == 40);
  CHECK(f.ap["misses"] == 0);
  const auto& a = f.ap["ardupilot"];
  CHECK(a["packets"]["bad_magic"] == 8);
  CHECK(a["packets"]["short_packet"] == 2);
  CHECK(a["packets"]["long_packet"] == 1);
  CHECK(f.ap["corrupt"] == 11);
  // the stranger was counted and ignored: never answered, never followed
  CHECK(a["foreign_packets"] == 1);
  CHECK(a["restarts"] == 0);
  CHECK(a["frames"] == 40);
  CHECK(a["skipped_frames"] == 0);
  CHECK(a["peer"] == "127.0.0.1:" + std::to_string(f.autopilot_port));
  CHECK(stranger.received(500).empty());
  CHECK(f.frame_count == 40);
  CHECK(f.thruster == doctest::Approx(0.25));
}
