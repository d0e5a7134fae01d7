// SPDX-License-Identifier: Apache-2.0
// The ardupilot_json endpoint: driven by hand from a loopback socket that plays ArduPilot
// (repeats, a restart on a new port, a jump, garbage), then in a real Session against the
// stand-in autopilot. Loopback only; every wait bounded; nothing asserts timing.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#define TETHER_ALLOC_COUNT_NO_OPERATORS
#include "alloc_count.hpp"
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

// a free loopback UDP port (bound, read, released)
std::uint16_t free_udp_port() {
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

std::string scenario_text(std::uint16_t port, const std::string& extra = "", int steps = 100) {
  return ardupilot_test::one_thruster_world("ardupilot", steps, "", "          - {name: depth, kind: depth}\n") +
         R"(  - name: ap
    type: ardupilot_json
    vehicle: auv
    deadline_ms: 5000
    port: )" +
         std::to_string(port) +
         R"(
    connect_timeout_ms: 10000
    channels: [{channel: 1, actuator: thruster}]
)" + extra;
}

// ArduPilot by hand: a socket that sends servo packets and reads replies
class FakeArduPilot {
 public:
  explicit FakeArduPilot(std::uint16_t port) : port_(port) {
    fd_ = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  }
  ~FakeArduPilot() { ::close(fd_); }
  void send_raw(const void* data, std::size_t size) {
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port_);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::sendto(fd_, data, size, 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
  }
  void send(std::uint32_t frame, std::uint16_t pwm1 = 1500) {
    ap::ServoPacket p;
    p.frame_rate_hz = 400;
    p.frame_count = frame;
    p.pwm_us.fill(1500);
    p.pwm_us[0] = pwm1;
    std::uint8_t bytes[ap::servo_packet_bytes_32];
    const std::size_t n = ap::encode_servo_packet(p, bytes, sizeof bytes);
    send_raw(bytes, n);
  }
  // the next reply within 5 s (a bound), or ""
  std::string receive() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) return {};
    char buf[2048];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
  }
  bool nothing_waiting() {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, 0) == 0;
  }

 private:
  int fd_ = -1;
  std::uint16_t port_;
};

float command_value(const DeviceCommand& c) {
  float v = 0;
  std::memcpy(&v, c.bytes.data(), 4);  // little-endian host
  return v;
}

// start() waits for ArduPilot's first packet: "ArduPilot" sends `frame` until it is heard
void start_against(adapters::ArduPilotJsonEndpoint& ep, const Scenario& sc, FakeArduPilot& apm, std::uint32_t frame) {
  auto started = std::async(std::launch::async, [&] { ep.start(sc.model, sc.initial); });
  const auto give_up = Clock::now() + std::chrono::seconds(10);
  while (started.wait_for(std::chrono::milliseconds(5)) != std::future_status::ready && Clock::now() < give_up)
    apm.send(frame);
  REQUIRE(started.wait_for(std::chrono::seconds(0)) == std::future_status::ready);
  started.get();
}

}  // namespace

TEST_CASE("ardupilot endpoint: repeats answered again, a restart followed, a jump counted, garbage counted") {
  const std::uint16_t port = free_udp_port();
  const Scenario sc = parse_scenario(scenario_text(port), "ap.yaml");
  adapters::ArduPilotJsonEndpoint ep(sc.endpoints[0], sc);
  REQUIRE(ep.config().channels.size() == 1);
  const std::uint16_t thruster = ep.config().channels[0].device;
  CHECK(sc.devices[thruster].name.full() == "auv.hull.thruster");

  // start() waits for ArduPilot's first packet; "ArduPilot" sends frame 5 until it is heard
  FakeArduPilot apm(port);
  start_against(ep, sc, apm, 5);
  CHECK(ep.bound_port() == port);
  // frame 5 sent more than once is a repeat: answered (nothing yet to answer with), no step
  Reply reply;
  StepContext ctx{0, 0, 10'000'000};
  CHECK(ep.gather(ctx, Clock::now() + std::chrono::milliseconds(50), reply) == GatherStatus::timeout);
  const auto repeats0 = ep.link_counters().repeats;

  // step 0: the reply for the projected state, then frame 6 (after one more repeat of 5)
  REQUIRE(ep.publish(ctx, sc.initial));
  const std::string first = apm.receive();
  REQUIRE(first.size() > 2);
  CHECK(first.front() == '\n');
  const auto j = nlohmann::json::parse(first.substr(1, first.size() - 2));
  CHECK(j["timestamp"] == 0);
  CHECK(j["imu"]["accel_body"] == nlohmann::json::array({0, 0, 0}));  // zero gravity
  apm.send(5);
  apm.send(6, 1900);
  REQUIRE(ep.gather(ctx, Clock::now() + std::chrono::seconds(5), reply) == GatherStatus::ready);
  CHECK(reply.step == 0);
  REQUIRE(reply.commands.size() == 1);
  CHECK(reply.commands[0].device == thruster);
  CHECK(reply.commands[0].size == 4);
  CHECK(command_value(reply.commands[0]) == 1.0f);
  CHECK(ep.link_counters().repeats == repeats0 + 1);
  CHECK(apm.receive() == first);  // the repeat got the same reply
  ep.emit(ctx, sc.initial);

  // step 1: ArduPilot restarts on a new port at frame 0: it gets the state, then frame 1 counts
  ctx = {1, 10'000'000, 10'000'000};
  WorldState s1 = sc.initial;
  s1.time_ns = 20'000'000;
  REQUIRE(ep.publish(ctx, s1));
  CHECK(apm.receive().find("\"timestamp\":0.02,") != std::string::npos);
  FakeArduPilot restarted(port);
  restarted.send(0);
  restarted.send(1, 1100);
  REQUIRE(ep.gather(ctx, Clock::now() + std::chrono::seconds(5), reply) == GatherStatus::ready);
  CHECK(command_value(reply.commands[0]) == -1.0f);
  CHECK(ep.link_counters().restarts == 1);
  CHECK(restarted.receive().find("\"timestamp\":0.02,") != std::string::npos);  // followed to its port
  ep.emit(ctx, s1);

  // step 2: a jump from 1 to 4 (the replies of two misses read) skips 2 frames and is taken;
  // a jump far ahead (a damaged count) is ignored once, believed when it comes again
  ctx = {2, 20'000'000, 10'000'000};
  REQUIRE(ep.publish(ctx, s1));
  CHECK(!restarted.receive().empty());
  CHECK(apm.nothing_waiting());  // the old port hears nothing more
  restarted.send(1'000'004);
  CHECK(ep.gather(ctx, Clock::now() + std::chrono::milliseconds(100), reply) == GatherStatus::timeout);
  CHECK(ep.link_counters().off_sequence == 1);
  restarted.send(4);
  REQUIRE(ep.gather(ctx, Clock::now() + std::chrono::seconds(5), reply) == GatherStatus::ready);
  CHECK(ep.link_counters().resyncs == 0);
  CHECK(ep.link_counters().skipped_frames == 2);
  CHECK(command_value(reply.commands[0]) == 0.0f);

  // garbage: counted by reason, never a step
  const char junk[10] = "not servo";
  restarted.send_raw(junk, sizeof junk);
  std::uint8_t short32[40] = {0x81, 0x73};  // 29569, little-endian, but only 40 bytes
  restarted.send_raw(short32, sizeof short32);
  CHECK(ep.gather(ctx, Clock::now() + std::chrono::milliseconds(100), reply) == GatherStatus::timeout);
  const auto& packets = ep.link_counters().packets;
  CHECK(packets.rejected[static_cast<std::size_t>(ap::ServoReject::bad_magic)] == 1);
  CHECK(packets.rejected[static_cast<std::size_t>(ap::ServoReject::short_packet)] == 1);
  CHECK(ep.link_counts().corrupt == 2);
  CHECK(ep.link_counts().stale == ep.link_counters().repeats + ep.link_counters().off_sequence);

  // steady steps allocate nothing in publish, gather or emit
  tether::test::AllocCount count;
  std::uint32_t frame = 4;
  for (std::uint64_t k = 3; k < 203; ++k) {
    ctx = {k, static_cast<std::int64_t>(k) * 10'000'000, 10'000'000};
    s1.time_ns = ctx.time_ns + ctx.period_ns;
    tether::test::arm(count);
    const bool sent = ep.publish(ctx, s1);
    tether::test::disarm();
    REQUIRE(sent);
    REQUIRE(!restarted.receive().empty());
    restarted.send(++frame, static_cast<std::uint16_t>(1500 + k));
    tether::test::arm(count);
    const GatherStatus st = ep.gather(ctx, Clock::now() + std::chrono::seconds(5), reply);
    ep.emit(ctx, s1);
    tether::test::disarm();
    REQUIRE(st == GatherStatus::ready);
  }
  CHECK_MESSAGE(count.total == 0, count.describe());
  CHECK(ep.link_counters().frames == 3 + 200);

  Reply safe;
  ep.safe_reply(safe);
  REQUIRE(safe.commands.size() == 1);
  CHECK(command_value(safe.commands[0]) == 0.0f);
  nlohmann::json summary = nlohmann::json::object();
  ep.summarize(summary);
  CHECK(summary["ardupilot"]["frames"] == 203);
  CHECK(summary["ardupilot"]["restarts"] == 1);
  CHECK(summary["ardupilot"]["packets"]["bad_magic"] == 1);
  CHECK(summary["ardupilot"]["frame_rate_hz"] == 400);
  ep.stop();
  ep.stop();
}

TEST_CASE("ardupilot endpoint: one reply per frame: none after a missed step, a repeat gets the bytes it lost") {
  const std::uint16_t port = free_udp_port();
  const Scenario sc = parse_scenario(scenario_text(port), "ap.yaml");
  // without timeout_policy the type's default: block, so the world does not run ahead
  CHECK(sc.endpoints[0].policy == TimeoutPolicy::block);
  adapters::ArduPilotJsonEndpoint ep(sc.endpoints[0], sc);
  FakeArduPilot apm(port);
  start_against(ep, sc, apm, 0);
  Reply reply;
  // frame 0 asked many times before the first publish: answered once, by it
  CHECK(ep.gather({0, 0, 10'000'000}, Clock::now() + std::chrono::milliseconds(20), reply) == GatherStatus::timeout);
  CHECK(apm.nothing_waiting());
  WorldState s = sc.initial;
  REQUIRE(ep.publish({0, 0, 10'000'000}, s));
  CHECK(!apm.receive().empty());
  CHECK(apm.nothing_waiting());
  apm.send(1);
  REQUIRE(ep.gather({0, 0, 10'000'000}, Clock::now() + std::chrono::seconds(5), reply) == GatherStatus::ready);

  // step 1 answers frame 1; ArduPilot stays silent: a missed step, and step 2's publish sends
  // nothing (frame 1 has its answer; an unasked one would put ArduPilot a frame behind)
  s.time_ns = 20'000'000;
  REQUIRE(ep.publish({1, 10'000'000, 10'000'000}, s));
  const std::string answer1 = apm.receive();
  REQUIRE(answer1.find("\"timestamp\":0.02,") != std::string::npos);
  CHECK(ep.gather({1, 10'000'000, 10'000'000}, Clock::now() + std::chrono::milliseconds(20), reply) ==
        GatherStatus::timeout);
  for (std::uint64_t k = 2; k < 6; ++k) {
    s.time_ns = static_cast<std::int64_t>(k + 1) * 10'000'000;
    REQUIRE(ep.publish({k, s.time_ns - 10'000'000, 10'000'000}, s));
    CHECK(apm.nothing_waiting());
    CHECK(ep.gather({k, s.time_ns - 10'000'000, 10'000'000}, Clock::now() + std::chrono::milliseconds(5), reply) ==
          GatherStatus::timeout);
  }
  // the answer was lost on the way: ArduPilot sends frame 1 again after its second of silence
  // and gets the very bytes it lost (not the world as it is now), and no step is taken
  apm.send(1);
  CHECK(ep.gather({6, 60'000'000, 10'000'000}, Clock::now() + std::chrono::milliseconds(200), reply) ==
        GatherStatus::timeout);
  CHECK(apm.receive() == answer1);
  CHECK(apm.nothing_waiting());
  CHECK(ep.link_counters().repeats == 1);
  // frame 2 is the next step; the next publish answers it with the state as it is now
  apm.send(2, 1900);
  REQUIRE(ep.gather({6, 60'000'000, 10'000'000}, Clock::now() + std::chrono::seconds(5), reply) ==
          GatherStatus::ready);
  CHECK(command_value(reply.commands[0]) == 1.0f);
  s.time_ns = 70'000'000;
  REQUIRE(ep.publish({7, 70'000'000, 10'000'000}, s));
  CHECK(apm.receive().find("\"timestamp\":0.07,") != std::string::npos);
  CHECK(apm.nothing_waiting());
  CHECK(ep.link_counters().replies_sent == 4);  // frames 0, 1, 1 again, 2
  CHECK(ep.link_counters().frames == 2);
  ep.stop();
}

TEST_CASE("ardupilot endpoint: an old frame is ignored, frame 0 again is a restart, a stranger is ignored") {
  const std::uint16_t port = free_udp_port();
  const Scenario sc = parse_scenario(scenario_text(port), "ap.yaml");
  adapters::ArduPilotJsonEndpoint ep(sc.endpoints[0], sc);
  FakeArduPilot apm(port);
  start_against(ep, sc, apm, 10);
  Reply reply;
  StepContext ctx{0, 0, 10'000'000};
  REQUIRE(ep.publish(ctx, sc.initial));
  while (!apm.nothing_waiting()) apm.receive();

  // an old frame from ArduPilot's port (late on the network), and a stranger's frame 50:
  // both counted and ignored (not answered), then frame 11 is the step
  apm.send(7);
  FakeArduPilot stranger(port);
  stranger.send(50);
  apm.send(11, 1900);
  REQUIRE(ep.gather(ctx, Clock::now() + std::chrono::seconds(5), reply) == GatherStatus::ready);
  CHECK(command_value(reply.commands[0]) == 1.0f);
  CHECK(ep.link_counters().off_sequence == 1);
  CHECK(ep.link_counters().foreign_packets == 1);
  CHECK(ep.link_counters().restarts == 0);
  CHECK(ep.link_counts().stale == 2);
  CHECK(apm.nothing_waiting());
  CHECK(stranger.nothing_waiting());

  // a count far ahead twice in a row: ArduPilot insists on it, so it is believed and followed
  ctx = {1, 10'000'000, 10'000'000};
  REQUIRE(ep.publish(ctx, sc.initial));
  CHECK(!apm.receive().empty());
  apm.send(500'000);
  apm.send(500'000, 1100);
  REQUIRE(ep.gather(ctx, Clock::now() + std::chrono::seconds(5), reply) == GatherStatus::ready);
  CHECK(command_value(reply.commands[0]) == -1.0f);
  CHECK(ep.link_counters().off_sequence == 2);
  CHECK(ep.link_counters().resyncs == 1);

  // ArduPilot restarted on the same port (a board after a reset): frame 0 is followed and
  // answered, frame 1 is the next step
  ctx = {2, 20'000'000, 10'000'000};
  REQUIRE(ep.publish(ctx, sc.initial));
  CHECK(!apm.receive().empty());
  apm.send(0);
  apm.send(1, 1900);
  REQUIRE(ep.gather(ctx, Clock::now() + std::chrono::seconds(5), reply) == GatherStatus::ready);
  CHECK(command_value(reply.commands[0]) == 1.0f);
  CHECK(ep.link_counters().restarts == 1);
  CHECK(!apm.receive().empty());  // frame 0 was given the state
  ep.stop();
}

TEST_CASE("ardupilot endpoint: a session flies the vehicle on the stand-in autopilot's thrust, in lock-step") {
  const std::uint16_t port = free_udp_port();
  const Scenario sc = parse_scenario(scenario_text(port), "ap.yaml");
  Session session(sc, adapters::make_endpoints(sc));

  // the stand-in: full thrust on channel 1 (the thruster pushes along the body's x: east)
  ap::FixedPwm law(1500);
  law.set(0, 1900);
  ap::StandInOptions o;
  o.port = port;
  o.resend_after_ms = 200;  // until the endpoint is bound
  o.recv_timeout_ms = 10;
  ap::ArduPilotStandIn autopilot(o, law);
  std::thread flying([&] {
    while (autopilot.frame(Clock::now() + std::chrono::seconds(30)) == ap::ArduPilotStandIn::FrameResult::replied) {
    }
  });
  std::atomic<bool> stop{false};
  const Outcome outcome = session.run(stop);
  autopilot.cancel();
  flying.join();
  REQUIRE(outcome == Outcome::completed);

  const auto s = session.summary();
  const auto& e = s["endpoints"][0];
  CHECK(e["type"] == "ardupilot_json");
  CHECK(e["replies"] == 100);
  CHECK(e["misses"] == 0);
  CHECK(e["ardupilot"]["frames"] == 100);
  CHECK(autopilot.counters.replies >= 100);

  // Tether: pushed east (+x), nothing else
  const BodyState& b = session.state().bodies[0];
  CHECK(b.position_m.x() > 0.01);
  CHECK(std::abs(b.position_m.y()) < 1e-6);
  CHECK(std::abs(b.position_m.z()) < 1e-6);
  // ArduPilot, in its frames: east, nose east (yaw 90), accelerating forward, nothing down
  const ap::SensorReading& r = autopilot.last();
  CHECK(r.position_m.y() > 0.01);
  CHECK(std::abs(r.position_m.x()) < 1e-6);
  CHECK(std::abs(r.position_m.z()) < 1e-6);
  CHECK(r.velocity_m_s.y() > 0);
  CHECK(r.accel_body_m_s2.x() > 0);
  CHECK(std::abs(r.accel_body_m_s2.z()) < 1e-6);
  CHECK(r.quaternion[0] == doctest::Approx(std::sqrt(0.5)));
  CHECK(r.quaternion[3] == doctest::Approx(std::sqrt(0.5)));
  CHECK(r.timestamp_s > 0.9);
}

TEST_CASE("ardupilot endpoint: config mistakes are positioned and no ArduPilot is a clear start error") {
  auto errors_of = [](const std::string& endpoint_extra) {
    return tether::ardupilot_test::endpoint_config_errors(scenario_text(9002, endpoint_extra), "ap.yaml");
  };
  // a second endpoint with its own mistakes
  const std::string all = errors_of(R"(  - name: ap2
    type: ardupilot_json
    vehicle: auv
    host: localhost
    port: 65530
    instance: 1
    body: tail
    colour: red
    channels:
      - {channel: 1, actuator: nothing}
      - {channel: 2, actuator: depth}
)");
  INFO(all);
  CHECK(all.find("endpoints[1].host: expected an IPv4 address, got \"localhost\"") != std::string::npos);
  CHECK(all.find("endpoints[1].instance: port 65530 + 10 * instance is past 65535") != std::string::npos);
  CHECK(all.find("endpoints[1].body: no body \"tail\" in vehicle \"auv\"") != std::string::npos);
  CHECK(all.find("endpoints[1].colour: unknown key") != std::string::npos);
  CHECK(all.find("endpoints[1].channels[0].actuator: no device \"nothing\" on vehicle \"auv\"") != std::string::npos);
  CHECK(all.find("endpoints[1].channels[1].actuator: \"auv.hull.depth\" is a depth; a channel drives an actuator of "
                 "one command (thruster, dc_motor, fin, servo)") != std::string::npos);
  CHECK(errors_of("").empty());

  // nobody sends: start() says where it listened and how to start ArduPilot
  const std::uint16_t port = free_udp_port();
  std::string text = scenario_text(port);
  text.replace(text.find("connect_timeout_ms: 10000"), 25, "connect_timeout_ms: 100");
  const Scenario sc = parse_scenario(text, "ap.yaml");
  adapters::ArduPilotJsonEndpoint ep(sc.endpoints[0], sc);
  const std::string expected = "no servo packet from ArduPilot on UDP 127.0.0.1:" + std::to_string(port) +
                               " within 100 ms (start it with --model JSON:127.0.0.1";
  CHECK_THROWS_WITH_AS(ep.start(sc.model, sc.initial), doctest::Contains(expected.c_str()), std::runtime_error);
}
