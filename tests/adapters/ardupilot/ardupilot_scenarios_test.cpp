// SPDX-License-Identifier: Apache-2.0
// The shipped ArduPilot scenarios as a user runs them: `tether run` launches the stand-in
// autopilot `tether-ardupilot`, arms it and sets its mode and targets over MAVLink, and the
// run passes its expectations; `tether replay --verify` reproduces it bit for bit without
// any autopilot; the 20-seed campaign with link faults passes. The BlueROV2 run uses the
// scenario's own ports (9002, 5760) as ArduPilot's defaults: nothing else in the suite
// binds them.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <random>
#include <thread>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "test_paths.hpp"
#include "tether/recording/mcap_reader.hpp"
#include "tether/recording/replay.hpp"

using namespace tether::cli_test;

namespace {

const std::string scenarios = TETHER_SOURCE_DIR + "/config/scenarios";

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// the JSON messages of the topics under `prefix`, by topic, keyed by their "step"
std::map<std::string, std::map<std::uint64_t, nlohmann::json>> wire_messages(const std::string& path,
                                                                             const std::string& prefix) {
  namespace mcap = tether::runtime::mcap;
  mcap::Reader reader;
  std::string error;
  REQUIRE_MESSAGE(reader.open(path, &error), error);
  std::map<std::string, std::map<std::uint64_t, nlohmann::json>> out;
  mcap::MessageView m;
  while (reader.next(m)) {
    const mcap::Channel* c = reader.channel(m.channel_id);
    if (c == nullptr || c->topic.rfind(prefix, 0) != 0 || c->topic == prefix) continue;
    const nlohmann::json j =
        nlohmann::json::parse(std::string(reinterpret_cast<const char*>(m.data.data()), m.data.size()));
    out[c->topic][j.at("step").get<std::uint64_t>()] = j;
  }
  CHECK(reader.error().empty());
  return out;
}

}  // namespace

TEST_CASE(
    "ardupilot scenarios: ardusub_bluerov2 is armed over MAVLink, holds 2 m and heading 45, replays bit for bit") {
  const std::string dir = temp_dir("ardusub_bluerov2");
  const Result r = run(tether_fw + " run " + scenarios + "/ardusub_bluerov2.yaml --rtf 0 --quiet --out " + dir);
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json summary = read_json(dir + "/summary.json");
  CHECK(summary["verdict"] == "pass");
  const auto& e = summary["endpoints"][0];
  CHECK(e["type"] == "ardupilot_json");
  CHECK(e["misses"] == 0);
  CHECK(e["ardupilot"]["frames"] == 32000);
  CHECK(e["ardupilot"]["frame_rate_hz"] == 800);
  CHECK(e["mavlink"]["armed"] == true);
  CHECK(e["mavlink"]["mode"] == "ALT_HOLD");
  CHECK(contains(e["ardupilot"]["program"]["command"].get<std::string>(), "tether-ardupilot"));

  // every step's servo packet and reply are in the step record (wire frames), and on
  // Foxglove topics: the packet, one per mapped channel, the reply
  tether::runtime::Recording rec;
  std::string error;
  REQUIRE_MESSAGE(tether::runtime::load_recording(dir + "/recording.mcap", rec, &error), error);
  REQUIRE(rec.steps.size() == 32000);
  const tether::runtime::StepRecord& late = rec.steps[12000];
  REQUIRE(late.slots.size() == 1);
  REQUIRE(late.slots[0].reply.wire.size() == 2);
  const tether::runtime::Reply& wired = late.slots[0].reply;
  const std::string packet(wired.wire_frame(wired.wire[0]));
  CHECK_FALSE(late.slots[0].reply.wire[0].to_peer);
  REQUIRE(packet.size() == 40);  // 16 channels: magic 18458, rate, count, 16 pulses
  CHECK(static_cast<unsigned char>(packet[0]) == (18458 & 0xff));
  CHECK(static_cast<unsigned char>(packet[1]) == (18458 >> 8));
  CHECK(late.slots[0].reply.wire[1].to_peer);
  const nlohmann::json sent = nlohmann::json::parse(wired.wire_frame(wired.wire[1]));
  // step k's reply is the projected state at t_{k+1} (1.25 ms steps)
  CHECK(sent.at("timestamp").get<double>() == doctest::Approx(12001 * 0.00125));

  const auto topics = wire_messages(dir + "/recording.mcap", "/endpoints/ardusub");
  for (const char* t :
       {"servo", "servo/ch1", "servo/ch2", "servo/ch3", "servo/ch4", "servo/ch5", "servo/ch6", "reply"}) {
    INFO(t);
    REQUIRE(topics.count(std::string("/endpoints/ardusub/") + t) == 1);
    CHECK(topics.at(std::string("/endpoints/ardusub/") + t).size() == 32000);
  }
  CHECK(topics.count("/endpoints/ardusub/servo/ch7") == 0);  // not mapped
  const nlohmann::json& servo = topics.at("/endpoints/ardusub/servo").at(12000);
  CHECK(servo["channels"] == 16);
  CHECK(servo["frame_rate_hz"] == 800);
  // channel c's pulse is at byte 8 + 2 (c - 1), little-endian: channel 5's
  CHECK(servo["pwm_us"][4] == (static_cast<unsigned char>(packet[16]) | static_cast<unsigned char>(packet[17]) << 8));
  for (int c = 1; c <= 6; ++c) {
    const nlohmann::json& ch = topics.at("/endpoints/ardusub/servo/ch" + std::to_string(c)).at(12000);
    CHECK(ch["pwm_us"] == servo["pwm_us"][c - 1]);
    CHECK(ch["actuator"] == "motor" + std::to_string(c));
    // ArduSub's 1100..1500..1900 map: the command the motor got
    const double pwm = ch["pwm_us"].get<double>();
    CHECK(ch["command"].get<double>() == doctest::Approx(pwm == 0 ? 0.0 : (pwm - 1500) / 400).epsilon(1e-9));
  }
  CHECK(topics.at("/endpoints/ardusub/reply").at(12000)["reply"] == sent);

  // the autopilot's words are in the recording's log (events), and the replay needs no autopilot
  const Result v = run(tether_exe + " replay " + dir + "/recording.mcap --verify --quiet");
  INFO(v.out);
  CHECK(v.exit_code == 0);
  CHECK(contains(v.out, "verify: all 32000 replayed states are bit-identical to the recording"));
}

TEST_CASE("ardupilot scenarios: hostile datagrams all through a run are ignored and the run replays bit for bit") {
  // a UDP port free a moment ago for the endpoint, so the hostile sender knows where to aim
  const int probe = ::socket(AF_INET, SOCK_DGRAM, 0);
  REQUIRE(probe >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  REQUIRE(::bind(probe, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::getsockname(probe, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  ::close(probe);
  const int port = ntohs(a.sin_port);

  // garbage, wrong magic, short packets, and well-formed frames from a stranger, always frame
  // 1,000,000: never 0 (frame 0 from a new port is a restarted ArduPilot, docs/ardupilot.md),
  // never "the next frame". Should one come before the stand-in's first packet, the endpoint
  // takes the stranger for ArduPilot (nothing tells them apart) and follows the stand-in's
  // frame 0 as a restart: at most one restart, and no step on the stranger's frames.
  std::atomic<bool> done{false};
  std::atomic<int> sent{0};
  std::thread hostile([&] {
    const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    std::mt19937 rng(7);
    for (int i = 0; !done.load(); ++i) {
      std::string d;
      switch (i % 4) {
        case 0: d.resize(rng() % 120); break;
        case 1:
          d.assign(40, '\0');
          d[0] = 0x1b;
          break;  // magic 0x001b
        case 2:
          d.assign(39, '\0');
          d[0] = 0x1a;
          d[1] = 0x48;
          break;  // 16-channel magic, one byte short
        case 3:
          d.assign(40, '\0');
          d[0] = 0x1a;
          d[1] = 0x48;
          d[4] = 0x40;
          d[5] = 0x42;
          d[6] = 0x0f;
          break;
      }
      if (i % 4 == 0)
        for (char& c : d) c = static_cast<char>(rng());
      for (std::size_t b = 8; i % 4 == 3 && b < d.size(); ++b) d[b] = static_cast<char>(rng());
      if (::sendto(fd, d.data(), d.size(), 0, reinterpret_cast<const sockaddr*>(&a), sizeof a) >= 0) ++sent;
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    ::close(fd);
  });
  const std::string dir = temp_dir("ardusub_hostile");
  const Result r = run(tether_fw + " run " + scenarios +
                       "/ardusub_bluerov2.yaml --rtf 0 --quiet --set endpoints.ardusub.port=" + std::to_string(port) +
                       " --set 'endpoints.ardusub.mavlink.address=tcp:127.0.0.1:0' --out " + dir);
  done = true;
  hostile.join();
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json summary = read_json(dir + "/summary.json");
  CHECK(summary["verdict"] == "pass");
  const auto& ap = summary["endpoints"][0]["ardupilot"];
  INFO(ap.dump());
  CHECK(ap["frames"] == 32000);
  CHECK(ap["restarts"].get<int>() <= 1);
  CHECK(sent.load() > 100);
  // whatever of it arrived during the run (the endpoint is bound once the run starts)
  CHECK(ap["foreign_packets"].get<int>() + ap["packets"]["bad_magic"].get<int>() +
            ap["packets"]["short_packet"].get<int>() >
        0);

  const Result v = run(tether_exe + " replay " + dir + "/recording.mcap --verify --quiet");
  INFO(v.out);
  CHECK(v.exit_code == 0);
  CHECK(contains(v.out, "verify: all 32000 replayed states are bit-identical to the recording"));
}

TEST_CASE("ardupilot scenarios: ardurover_skid is armed, put in MANUAL and driven by pilot input") {
  const std::string dir = temp_dir("ardurover_skid");
  const Result r =
      run(tether_fw + " run " + scenarios +
          "/ardurover_skid.yaml --rtf 0 --quiet --set endpoints.ardurover.port=0"
          " --set endpoints.ardurover.instance=0 --set 'endpoints.ardurover.mavlink.address=tcp:127.0.0.1:0'"
          " --out " +
          dir);
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json summary = read_json(dir + "/summary.json");
  CHECK(summary["verdict"] == "pass");
  CHECK(summary["endpoints"][0]["mavlink"]["mode"] == "MANUAL");
}

TEST_CASE("ardupilot scenarios: the 20-seed campaign on a lossy link passes") {
  // one run at a time: the suite runs beside it, and the serial campaigns' deadlines are tight
  const std::string dir = temp_dir("ardusub_link_faults");
  const Result r = run(tether_fw + " test " + TETHER_SOURCE_DIR +
                       "/config/campaigns/ardusub_link_faults.yaml -j 1 --quiet --out " + dir);
  INFO(r.out);
  CHECK(r.exit_code == 0);
  const nlohmann::json c = read_json(dir + "/campaign.json");
  CHECK(c["total_runs"] == 20);
  int passed = 0;
  for (const auto& run : c["runs"]) passed += run["verdict"] == "pass" ? 1 : 0;
  CHECK(passed == 20);
}
