// SPDX-License-Identifier: Apache-2.0
// The stand-in autopilot against a physics side written here on a loopback UDP socket: it
// sends first, blocks for the reply, sends the same frame again when none comes, advances
// only on a reply it can read, and tells a physics reset. Every wait is bounded; nothing
// asserts timing.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tether/ardupilot_standin/ardupilot_standin.hpp"

using namespace tether::adapters::ardupilot;
using Clock = std::chrono::steady_clock;

namespace {

// the physics end: binds 127.0.0.1 on a free port and answers whoever sent
class FakePhysics {
 public:
  FakePhysics() {
    fd_ = ::socket(AF_INET, SOCK_DGRAM, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    port_ = ntohs(a.sin_port);
  }
  ~FakePhysics() { ::close(fd_); }
  std::uint16_t port() const { return port_; }

  // the next servo packet within 10 s (a bound, not an expectation), or nothing
  std::optional<ServoPacket> receive(std::size_t* size = nullptr) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 10'000) <= 0) return std::nullopt;
    std::uint8_t bytes[256];
    socklen_t len = sizeof from_;
    const ssize_t n = ::recvfrom(fd_, bytes, sizeof bytes, 0, reinterpret_cast<sockaddr*>(&from_), &len);
    if (n <= 0) return std::nullopt;
    if (size) *size = static_cast<std::size_t>(n);
    ServoPacket packet;
    if (parse_servo_packet(bytes, static_cast<std::size_t>(n), packet) != ServoReject::none) return std::nullopt;
    return packet;
  }

  void send(const std::string& text) {
    ::sendto(fd_, text.data(), text.size(), 0, reinterpret_cast<const sockaddr*>(&from_), sizeof from_);
  }
  void reply(std::int64_t time_ns, double north_m = 0) {
    ReplyState s;
    s.time_ns = time_ns;
    s.position_m = {north_m, 0, 0};
    s.accel_body_m_s2 = {0, 0, -9.81};
    ReplyBuffer out;
    REQUIRE(encode_reply(s, out) == EncodeError::none);
    send(std::string(out.bytes.data(), out.size));
  }
  std::uint16_t sender_port() const { return ntohs(from_.sin_port); }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
  sockaddr_in from_{};
};

// no re-send unless a test asks for one: a slow machine then cannot add packets
StandInOptions options_for(const FakePhysics& physics) {
  StandInOptions o;
  o.port = physics.port();
  o.resend_after_ms = 60'000;
  return o;
}

// runs `frames` frames of the stand-in on a thread, each given up after 5 s at most
struct Flight {
  Flight(ArduPilotStandIn& a, int frames) {
    thread = std::thread([&a, frames, this] {
      for (int i = 0; i < frames; ++i) results.push_back(a.frame(Clock::now() + std::chrono::seconds(5)));
    });
  }
  ~Flight() {
    if (thread.joinable()) thread.join();
  }
  void land() { thread.join(); }
  std::thread thread;
  std::vector<ArduPilotStandIn::FrameResult> results;
};

}  // namespace

TEST_CASE("ardupilot stand-in: lock-step, one packet per frame, frame_count advancing on each reply") {
  FakePhysics physics;
  FixedPwm law(1500);
  law.set(2, 1700);
  StandInOptions o = options_for(physics);
  o.frame_rate_hz = 400;
  ArduPilotStandIn autopilot(o, law);
  constexpr int frames = 20;
  Flight flight(autopilot, frames);
  for (std::uint32_t k = 0; k < frames; ++k) {
    std::size_t size = 0;
    const auto p = physics.receive(&size);
    REQUIRE(p.has_value());
    CHECK(size == 40);
    CHECK(p->frame_count == k);
    CHECK(p->frame_rate_hz == 400);
    CHECK(p->channels == 16);
    CHECK(p->pwm_us[0] == 1500);
    CHECK(p->pwm_us[2] == 1700);
    CHECK(p->pwm_us[16] == 0);
    physics.reply((k + 1) * 2'500'000, k * 0.5);
  }
  flight.land();
  CHECK(flight.results == std::vector<ArduPilotStandIn::FrameResult>(frames, ArduPilotStandIn::FrameResult::replied));
  CHECK(autopilot.frame_count() == frames);
  CHECK(autopilot.counters.replies == frames);
  CHECK(autopilot.counters.packets_sent == frames);
  CHECK(autopilot.counters.resends == 0);
  CHECK(autopilot.counters.unreadable == 0);
  CHECK(autopilot.last().position_m.x() == 9.5);
  CHECK(autopilot.last().accel_body_m_s2.z() == -9.81);
  CHECK(autopilot.sim_time_s() == doctest::Approx(19 * 0.0025));
  CHECK(physics.sender_port() == autopilot.local_port());
}

TEST_CASE("ardupilot stand-in: without a reply it sends the same frame again, and goes on once answered") {
  FakePhysics physics;
  FixedPwm law;
  StandInOptions o = options_for(physics);
  o.recv_timeout_ms = 5;
  o.resend_after_ms = 20;
  ArduPilotStandIn autopilot(o, law);
  Flight flight(autopilot, 2);
  auto first = physics.receive();
  REQUIRE(first.has_value());
  CHECK(first->frame_count == 0);  // not answered
  std::vector<std::uint32_t> counts;
  std::set<std::uint32_t> answered;
  while (answered.size() < 2) {
    const auto p = physics.receive();
    REQUIRE(p.has_value());
    counts.push_back(p->frame_count);
    // one answer per frame: more re-sends of an answered frame are not answered again
    if (answered.insert(p->frame_count).second) physics.reply((p->frame_count + 1) * 1'000'000);
  }
  flight.land();
  REQUIRE(!counts.empty());
  CHECK(counts.front() == 0);  // the re-send carries the same frame_count
  CHECK(counts.back() == 1);
  CHECK(autopilot.frame_count() == 2);
  CHECK(autopilot.counters.resends >= 1);
  CHECK(autopilot.counters.replies == 2);
}

TEST_CASE("ardupilot stand-in: an unreadable reply does not advance, the same frame goes out again at once") {
  FakePhysics physics;
  FixedPwm law;
  ArduPilotStandIn autopilot(options_for(physics), law);
  Flight flight(autopilot, 1);
  auto p = physics.receive();
  REQUIRE(p.has_value());
  CHECK(p->frame_count == 0);
  // ArduPilot's own example reply: `attitude`, which the stand-in does not read, no quaternion
  physics.send(
      "\n{\"timestamp\":2500,\"imu\":{\"gyro\":[0,0,0],\"accel_body\":[0,0,0]},\"position\":[0,0,0],"
      "\"attitude\":[0,0,0],\"velocity\":[0,0,0]}\n");
  p = physics.receive();
  REQUIRE(p.has_value());
  CHECK(p->frame_count == 0);
  physics.reply(1'000'000);
  flight.land();
  CHECK(autopilot.frame_count() == 1);
  CHECK(autopilot.counters.unreadable == 1);
  CHECK(autopilot.counters.replies == 1);
  CHECK(autopilot.counters.resends == 0);
}

TEST_CASE("ardupilot stand-in: a timestamp going back is a physics reset and its clock does not move") {
  FakePhysics physics;
  FixedPwm law;
  ArduPilotStandIn autopilot(options_for(physics), law);
  Flight flight(autopilot, 4);
  for (const std::int64_t t : {1'000'000'000, 2'000'000'000, 500'000'000, 750'000'000}) {
    REQUIRE(physics.receive().has_value());
    physics.reply(t);
  }
  flight.land();
  CHECK(autopilot.counters.physics_resets == 1);
  CHECK(autopilot.sim_time_s() == doctest::Approx(1.25));
  CHECK(autopilot.frame_count() == 4);
}

TEST_CASE("ardupilot stand-in: 32 channels, a restart from frame 0, and a bounded wait for a silent physics") {
  FakePhysics physics;
  FixedPwm law(1100);
  law.set(31, 1900);
  StandInOptions o = options_for(physics);
  o.channels = 32;
  ArduPilotStandIn autopilot(o, law);
  {
    Flight flight(autopilot, 3);
    for (int k = 0; k < 3; ++k) {
      std::size_t size = 0;
      const auto p = physics.receive(&size);
      REQUIRE(p.has_value());
      CHECK(size == 72);
      CHECK(p->channels == 32);
      CHECK(p->pwm_us[0] == 1100);
      CHECK(p->pwm_us[31] == 1900);
      physics.reply((k + 1) * 1'000'000);
    }
  }
  CHECK(autopilot.frame_count() == 3);
  autopilot.restart();
  CHECK(autopilot.frame_count() == 0);
  {
    Flight flight(autopilot, 1);
    const auto p = physics.receive();
    REQUIRE(p.has_value());
    CHECK(p->frame_count == 0);
    CHECK(physics.sender_port() == autopilot.local_port());
    physics.reply(1'000'000);
  }
  CHECK(autopilot.frame_count() == 1);
  // nobody answers: the frame is given up when told, and frame_count stays
  CHECK(autopilot.frame(Clock::now() + std::chrono::milliseconds(150)) == ArduPilotStandIn::FrameResult::gave_up);
  CHECK(autopilot.frame_count() == 1);
  // options it cannot fly with
  StandInOptions bad = o;
  bad.channels = 8;
  CHECK_THROWS_WITH_AS(ArduPilotStandIn(bad, law), doctest::Contains("16 or 32"), std::runtime_error);
  bad = o;
  bad.host = "localhost";
  CHECK_THROWS_WITH_AS(ArduPilotStandIn(bad, law), doctest::Contains("not an IPv4 address"), std::runtime_error);
}
