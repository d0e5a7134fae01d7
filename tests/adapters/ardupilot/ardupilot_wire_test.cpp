// SPDX-License-Identifier: Apache-2.0
// What the recording shows of the ArduPilot link's wire frames (ardupilot_wire_topics): the
// servo packet decoded, one topic per mapped channel, the JSON reply. Every view writes
// valid JSON or nothing, whatever bytes a frame holds (a recording is input like any other).
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tether/ardupilot/ardupilot_endpoint.hpp"

using namespace tether;
using namespace tether::adapters;
namespace ap = tether::adapters::ardupilot;

namespace {

ArduPilotEndpointConfig mapped(std::initializer_list<std::pair<int, const char*>> channels) {
  ArduPilotEndpointConfig c;
  std::uint16_t device = 0;
  for (const auto& [channel, actuator] : channels) {
    ArduPilotChannel m;
    m.map.channel = channel;
    m.map.actuator = actuator;
    m.device = device++;
    c.channels.push_back(m);
  }
  return c;
}

std::string packet(std::uint8_t channels, std::uint32_t count) {
  ap::ServoPacket p;
  p.channels = channels;
  p.frame_rate_hz = 400;
  p.frame_count = count;
  for (std::size_t i = 0; i < channels; ++i) p.pwm_us[i] = static_cast<std::uint16_t>(1100 + 25 * i);
  std::uint8_t out[128];
  const std::size_t n = ap::encode_servo_packet(p, out, sizeof out);
  REQUIRE(n > 0);
  return std::string(reinterpret_cast<const char*>(out), n);
}

const runtime::WireTopic& topic(const std::vector<runtime::WireTopic>& topics, const std::string& suffix) {
  for (const auto& t : topics)
    if (t.suffix == suffix) return t;
  FAIL("no topic " << suffix);
  throw 0;
}

nlohmann::json render(const runtime::WireTopic& t, std::uint64_t step, const std::string& bytes) {
  std::string out;
  REQUIRE(t.render(step, bytes, out));
  return nlohmann::json::parse(out);
}

}  // namespace

TEST_CASE("ardupilot wire views: the packet, one topic per mapped channel (once each), the reply") {
  const auto topics = ardupilot_wire_topics(mapped({{1, "motor1"}, {3, "motor3"}, {3, "light"}, {20, "aux"}}));
  std::vector<std::string> suffixes;
  for (const auto& t : topics) suffixes.push_back(t.suffix);
  CHECK(suffixes == std::vector<std::string>{"servo", "servo/ch1", "servo/ch3", "servo/ch20", "reply"});
  CHECK_FALSE(topic(topics, "servo").to_peer);
  CHECK(topic(topics, "reply").to_peer);
  for (const auto& t : topics) {
    CHECK(nlohmann::json::accept(t.schema));  // each declares its keys
    CHECK(t.schema_name.rfind("tether.ArduPilot", 0) == 0);
  }

  const nlohmann::json s = render(topic(topics, "servo"), 7, packet(16, 1234));
  CHECK(s["step"] == 7);
  CHECK(s["frame_count"] == 1234);
  CHECK(s["frame_rate_hz"] == 400);
  CHECK(s["channels"] == 16);
  REQUIRE(s["pwm_us"].size() == 16);
  CHECK(s["pwm_us"][0] == 1100);
  CHECK(s["pwm_us"][15] == 1100 + 25 * 15);

  const nlohmann::json c3 = render(topic(topics, "servo/ch3"), 7, packet(16, 1234));
  CHECK(c3["pwm_us"] == 1150);
  CHECK(c3["actuator"] == "motor3");                              // the first mapping of channel 3
  CHECK(c3["command"].get<double>() == doctest::Approx(-0.875));  // (1150 - 1500) / 400

  // channel 20 is in a 32-channel packet only: a 16-channel one has nothing for it
  std::string out = "kept";
  CHECK_FALSE(topic(topics, "servo/ch20").render(7, packet(16, 1), out));
  CHECK(out == "kept");
  CHECK(render(topic(topics, "servo/ch20"), 8, packet(32, 2))["pwm_us"] == 1100 + 25 * 19);
  CHECK(render(topic(topics, "servo"), 8, packet(32, 2))["pwm_us"].size() == 32);
}

TEST_CASE("ardupilot wire views: the reply as the JSON object sent, anything else not shown") {
  const auto topics = ardupilot_wire_topics(mapped({{1, "motor1"}}));
  const runtime::WireTopic& reply = topic(topics, "reply");
  const nlohmann::json r = render(reply, 3, "\n{\"timestamp\":0.0025,\"position\":[0,0,-2]}\n");
  CHECK(r["step"] == 3);
  CHECK(r["reply"]["timestamp"] == 0.0025);
  CHECK(r["reply"]["position"][2] == -2);
  for (const std::string& bad : {std::string(), std::string("\n\n"), std::string("\n{\"timestamp\":\n"),
                                 std::string("[1,2]"), std::string("\n{}x\n"), std::string("{\"a\":1}\0", 8)}) {
    std::string out;
    CHECK_FALSE(reply.render(3, bad, out));
    CHECK(out.empty());
  }
}

TEST_CASE("ardupilot wire views: random bytes give valid JSON or nothing (2,000 frames)") {
  const auto topics = ardupilot_wire_topics(mapped({{1, "motor1"}, {16, "motor16"}, {32, "last"}}));
  std::mt19937 rng(31);
  std::size_t shown = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string bytes;
    // half of them servo packets with random pulses and a damaged length now and then
    if (i % 2 == 0) {
      bytes = packet(i % 4 == 0 ? 32 : 16, static_cast<std::uint32_t>(rng()));
      for (std::size_t b = 8; b < bytes.size(); ++b) bytes[b] = static_cast<char>(rng());
      if (i % 10 == 0) bytes.resize(rng() % bytes.size());
    } else {
      bytes.resize(rng() % 64);
      for (char& c : bytes) c = static_cast<char>(rng());
      if (i % 3 == 0) bytes = "\n{\"k\":\"" + bytes + "\"}\n";
    }
    for (const auto& t : topics) {
      std::string out;
      if (!t.render(static_cast<std::uint64_t>(i), bytes, out)) {
        CHECK(out.empty());
        continue;
      }
      ++shown;
      INFO(t.suffix << ": " << out);
      CHECK(nlohmann::json::accept(out));
    }
  }
  CHECK(shown > 1000);
}
