// SPDX-License-Identifier: Apache-2.0
// Link faults on the ardupilot_json link, against the stand-in autopilot (which behaves as
// ArduPilot: it re-sends its frame after a silence and steps only on a reply). A lost reply
// is asked for again and answered again, never stepped twice; duplicates are repeats; a
// disconnect longer than the deadline is misses under the policy. Loopback only.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "tether/ardupilot/ardupilot_endpoint.hpp"
#include "tether/ardupilot_standin/ardupilot_standin.hpp"
#include "tether/endpoints/endpoint_factory.hpp"
#include "tether/loop/session.hpp"
#include "ardupilot_test_util.hpp"

using namespace tether;
using namespace tether::runtime;
namespace ap = tether::adapters::ardupilot;

namespace {

// a UDP relay between the stand-in and the endpoint that loses the reply number `lose`
// (1-based) on its way back: a datagram lost on a real network
class LossyRelay {
 public:
  LossyRelay(std::uint16_t endpoint_port, int lose) : lose_(lose) {
    to_autopilot_ = bound_socket(0);
    to_endpoint_ = bound_socket(0);
    endpoint_.sin_family = AF_INET;
    endpoint_.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    endpoint_.sin_port = htons(endpoint_port);
    thread_ = std::thread([this] { relay(); });
  }
  ~LossyRelay() {
    stop_ = true;
    thread_.join();
    ::close(to_autopilot_);
    ::close(to_endpoint_);
  }
  std::uint16_t port() const {
    sockaddr_in a{};
    socklen_t len = sizeof a;
    ::getsockname(to_autopilot_, reinterpret_cast<sockaddr*>(&a), &len);
    return ntohs(a.sin_port);
  }
  std::atomic<int> lost{0};

 private:
  static int bound_socket(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    return fd;
  }
  void relay() {
    sockaddr_in autopilot{};
    char buf[2048];
    int replies = 0;
    while (!stop_) {
      pollfd p[2] = {{to_autopilot_, POLLIN, 0}, {to_endpoint_, POLLIN, 0}};
      if (::poll(p, 2, 20) <= 0) continue;
      if (p[0].revents & POLLIN) {
        socklen_t len = sizeof autopilot;
        const ssize_t n = ::recvfrom(to_autopilot_, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&autopilot), &len);
        if (n > 0)
          ::sendto(to_endpoint_, buf, static_cast<std::size_t>(n), 0, reinterpret_cast<sockaddr*>(&endpoint_),
                   sizeof endpoint_);
      }
      if (p[1].revents & POLLIN) {
        const ssize_t n = ::recv(to_endpoint_, buf, sizeof buf, 0);
        if (n <= 0) continue;
        if (++replies == lose_) {
          ++lost;
          continue;
        }
        ::sendto(to_autopilot_, buf, static_cast<std::size_t>(n), 0, reinterpret_cast<sockaddr*>(&autopilot),
                 sizeof autopilot);
      }
    }
  }
  int lose_;
  int to_autopilot_ = -1, to_endpoint_ = -1;
  sockaddr_in endpoint_{};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

struct Flown {
  Outcome outcome = Outcome::failed;
  nlohmann::json summary;
  ap::StandInCounters autopilot;
  std::uint32_t frame_count = 0;
  int lost = 0;  // replies the relay lost
};

// 120 steps of 10 ms at rtf 0 with `faults` on endpoint "ap", flown by the stand-in
Flown fly(const std::string& faults, const std::string& deadline_policy = "deadline_ms: 5000", int lose_reply = 0,
          int resend_after_ms = 50) {
  const std::string text = ardupilot_test::one_thruster_world("ardupilot_faults", 120, ", seed: 7") + R"(  - name: ap
    type: ardupilot_json
    vehicle: auv
    )" + deadline_policy + R"(
    port: 0
    connect_timeout_ms: 10000
    channels: [{channel: 1, actuator: thruster}]
faults:
)" + faults;
  const Scenario sc = parse_scenario(text, "ap_faults.yaml");
  ap::FixedPwm law(1600);
  ap::StandInOptions o;
  o.resend_after_ms = resend_after_ms;
  o.recv_timeout_ms = 10;
  std::optional<LossyRelay> relay;
  const ardupilot_test::StandInFlight flight =
      ardupilot_test::fly_with_standin(sc, law, o, [&](std::uint16_t port) -> std::uint16_t {
        if (lose_reply <= 0) return port;
        relay.emplace(port, lose_reply);
        return relay->port();
      });
  Flown out;
  out.outcome = flight.outcome;
  out.summary = flight.summary;
  out.autopilot = flight.autopilot;
  out.frame_count = flight.frame_count;
  if (relay) out.lost = relay->lost;
  return out;
}

}  // namespace

TEST_CASE("ardupilot faults: no fault is no repeat and no miss (the baseline of the cases below)") {
  // the stand-in asks again after 1 s of silence here, not 50 ms: a session held off the CPU
  // for 50 ms (a loaded machine) is not a lost frame
  const Flown f = fly("  - {endpoint: ap, kind: drop, at_step: 1000000}\n", "deadline_ms: 5000", 0, 1000);
  REQUIRE(f.outcome == Outcome::completed);
  const auto& e = f.summary["endpoints"][0];
  CHECK(e["replies"] == 120);
  CHECK(e["misses"] == 0);
  CHECK(e["ardupilot"]["repeats"] == 0);
  CHECK(e["ardupilot"].count("link_faults") == 0);
  CHECK(f.autopilot.resends == 0);
}

TEST_CASE("ardupilot faults: a reply lost on the network is asked for again and answered again, never stepped twice") {
  const Flown f = fly("  - {endpoint: ap, kind: drop, at_step: 1000000}\n", "deadline_ms: 5000", 30);
  REQUIRE(f.outcome == Outcome::completed);
  const auto& e = f.summary["endpoints"][0];
  INFO(e.dump(2));
  CHECK(f.lost == 1);
  CHECK(f.autopilot.resends >= 1);  // ArduPilot's silence: the same frame again
  CHECK(e["ardupilot"]["repeats"].get<int>() >= 1);
  CHECK(e["replies"] == 120);
  CHECK(e["misses"] == 0);
  CHECK(e["ardupilot"]["frames"] == 120);  // one frame, one step: the repeat did not step
  CHECK(e["ardupilot"]["skipped_frames"] == 0);
  CHECK(f.frame_count >= 120);
}

TEST_CASE("ardupilot faults: a dropped reply is a miss under the policy (the step cannot go on), then on") {
  // link faults hold for steps of simulated time, and ArduPilot's step cannot end without a
  // reply: the answers to its re-sends are dropped too until the deadline
  const Flown f = fly("  - {endpoint: ap, kind: drop, direction: out, at_step: 40, duration_steps: 1}\n",
                      "deadline_ms: 150\n    timeout_policy: hold");
  REQUIRE(f.outcome == Outcome::completed);
  const auto& e = f.summary["endpoints"][0];
  INFO(e.dump(2));
  CHECK(e["misses"] == 1);
  CHECK(e["replies"] == 119);
  CHECK(e["ardupilot"]["frames"] == 119);  // never a frame taken twice, none skipped
  CHECK(e["ardupilot"]["skipped_frames"] == 0);
  CHECK(e["ardupilot"]["repeats"].get<int>() >= 1);  // ArduPilot asked again
  CHECK(e["ardupilot"]["link_faults"]["out"]["dropped"].get<int>() >= 1);
  CHECK(f.autopilot.resends >= 1);
}

TEST_CASE("ardupilot faults: duplicated servo packets are repeats, not steps") {
  const Flown f = fly("  - {endpoint: ap, kind: duplicate, direction: in, at_step: 20, duration_steps: 10}\n");
  REQUIRE(f.outcome == Outcome::completed);
  const auto& e = f.summary["endpoints"][0];
  INFO(e.dump(2));
  CHECK(e["replies"] == 120);
  CHECK(e["ardupilot"]["repeats"].get<int>() >= 10);
  CHECK(e["ardupilot"]["link_faults"]["in"]["duplicated"].get<int>() >= 10);
}

TEST_CASE("ardupilot faults: a disconnect longer than the deadline is misses under the policy, then on") {
  const Flown f = fly("  - {endpoint: ap, kind: disconnect, at_step: 30, duration_steps: 3}\n",
                      "deadline_ms: 150\n    timeout_policy: hold");
  REQUIRE(f.outcome == Outcome::completed);
  const auto& e = f.summary["endpoints"][0];
  INFO(e.dump(2));
  CHECK(e["misses"].get<int>() >= 1);
  CHECK(e["replies"].get<int>() + e["misses"].get<int>() == 120);
  CHECK(e["ardupilot"]["frames"].get<int>() >= 100);
  CHECK(f.autopilot.resends >= 1);
}

TEST_CASE("ardupilot faults: corrupted servo packets are counted, never a crash") {
  const Flown f = fly("  - {endpoint: ap, kind: corrupt, direction: in, bits: 3, at_step: 10, duration_steps: 20}\n",
                      "deadline_ms: 150\n    timeout_policy: hold");
  REQUIRE(f.outcome == Outcome::completed);
  const auto& e = f.summary["endpoints"][0];
  INFO(e.dump(2));
  CHECK(e["ardupilot"]["link_faults"]["in"]["corrupted"].get<int>() >= 1);
  CHECK(e["replies"].get<int>() + e["misses"].get<int>() == 120);
}
