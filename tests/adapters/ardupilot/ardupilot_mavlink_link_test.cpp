// SPDX-License-Identifier: Apache-2.0
// The ardupilot_json endpoint's MAVLink link: against a fake autopilot inside the test (a
// listening loopback TCP socket and Tether's own codec) — the heartbeat at 1 Hz of simulated
// time, the script's commands at their times with their fields, the autopilot's heartbeat,
// STATUSTEXT and refusals as log lines once per change, garbage counted, a dropped
// connection reported and reconnected; then a whole session whose expectations read the
// lines; then the config mistakes. Loopback only; every wait bounded; nothing asserts timing.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tether/ardupilot/ardupilot_endpoint.hpp"
#include "tether/ardupilot_standin/ardupilot_standin.hpp"
#include "tether/endpoints/endpoint_factory.hpp"
#include "tether/mavlink/mavlink_link.hpp"
#include "tether/loop/session.hpp"
#include "ardupilot_test_util.hpp"

using namespace tether;
using namespace tether::runtime;
namespace mav = tether::adapters::mavlink;
namespace ap = tether::adapters::ardupilot;
using adapters::MavlinkLink;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::int64_t ms_ns = 1'000'000;

// ArduPilot's side of the MAVLink TCP link, by hand
class FakeAutopilot {
 public:
  FakeAutopilot() : decoder_(mav::known_messages()) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int on = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(listen_fd_, 4) == 0);
  }
  ~FakeAutopilot() {
    drop();
    ::close(listen_fd_);
  }
  std::uint16_t port() const {
    sockaddr_in a{};
    socklen_t len = sizeof a;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    return ntohs(a.sin_port);
  }
  // takes the link's connection if one comes within timeout_ms
  bool accept(int timeout_ms = 3000) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return false;
    drop();
    client_ = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    peer_closed_ = false;
    return client_ >= 0;
  }
  void drop() {
    if (client_ >= 0) ::close(client_);
    client_ = -1;
    decoder_ = mav::Decoder(mav::known_messages());
  }
  void send_raw(const void* data, std::size_t size) { ::send(client_, data, size, MSG_NOSIGNAL); }
  template <class M>
  void send(const M& m, std::uint8_t sysid = 1, std::uint8_t compid = 1) {
    std::array<std::uint8_t, mav::max_frame_size> out;
    const std::size_t n = mav::encode(m, mav::Header{.seq = seq_++, .sysid = sysid, .compid = compid}, out);
    REQUIRE(n > 0);
    send_raw(out.data(), n);
  }
  void heartbeat(bool armed, std::uint32_t mode, std::uint8_t sysid = 1) {
    mav::Heartbeat h;
    h.type = mav::mav_type_submarine;
    h.autopilot = mav::mav_autopilot_ardupilotmega;
    h.base_mode = static_cast<std::uint8_t>(mav::mav_mode_flag_custom_mode_enabled |
                                            (armed ? mav::mav_mode_flag_safety_armed : 0));
    h.custom_mode = mode;
    send(h, sysid);
  }
  void statustext(std::uint8_t severity, const std::string& text) {
    mav::StatusText s;
    s.severity = severity;
    mav::set_text(s.text, text);
    send(s);
  }
  // the frames that arrive until `at_least` are there (0: all that come within timeout_ms)
  std::vector<mav::Frame> read(std::size_t at_least, int timeout_ms = 3000) {
    std::vector<mav::Frame> frames;
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    while (Clock::now() < deadline && (at_least == 0 || frames.size() < at_least)) {
      pollfd p{client_, POLLIN, 0};
      if (::poll(&p, 1, 5) <= 0) continue;
      std::uint8_t buf[1024];
      const ssize_t n = ::recv(client_, buf, sizeof buf, 0);
      if (n <= 0) {
        peer_closed_ = true;
        break;
      }
      decoder_.feed(std::span<const std::uint8_t>(buf, static_cast<std::size_t>(n)),
                    [&](const mav::Frame& f) { frames.push_back(f); });
    }
    return frames;
  }
  // read() saw the link close the connection
  bool peer_closed() const { return peer_closed_; }

 private:
  int listen_fd_ = -1;
  int client_ = -1;
  std::uint8_t seq_ = 0;
  bool peer_closed_ = false;
  mav::Decoder decoder_;
};

adapters::MavlinkLinkConfig link_config(const std::string& yaml) {
  const ConfigNode root = load_config_text(yaml, "link.yaml");
  adapters::MavlinkLinkConfig c = adapters::parse_mavlink_config(root, 0);
  std::string errors;
  for (const auto& e : root.context().errors) errors += e + "\n";
  INFO(errors);
  REQUIRE(root.context().errors.empty());
  return c;
}

std::size_t count_msgid(const std::vector<mav::Frame>& frames, std::uint32_t msgid) {
  std::size_t n = 0;
  for (const mav::Frame& f : frames) n += f.header.msgid == msgid ? 1 : 0;
  return n;
}

// steps the link every 10 ms of simulated time up to until_ns (inclusive)
void steps_until(MavlinkLink& link, std::int64_t& t_ns, std::int64_t until_ns) {
  for (; t_ns <= until_ns; t_ns += 10 * ms_ns) link.step(t_ns);
}

// steps and receives until a line containing `text` comes (or 3 s pass): every line seen
std::vector<LogLine> lines_until(MavlinkLink& link, std::int64_t& t_ns, const std::string& text) {
  std::vector<LogLine> lines;
  const auto deadline = Clock::now() + std::chrono::seconds(3);
  while (Clock::now() < deadline) {
    link.step(t_ns);
    t_ns += 10 * ms_ns;
    link.receive(lines);
    for (const LogLine& l : lines)
      if (l.text.find(text) != std::string::npos) return lines;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return lines;
}

std::vector<std::string> texts(const std::vector<LogLine>& lines) {
  std::vector<std::string> out;
  for (const LogLine& l : lines) out.push_back(l.text);
  return out;
}

}  // namespace

// steps and receives every 10 ms of simulated time up to until_ns; the frames the autopilot got
std::vector<mav::Frame> fly_until(MavlinkLink& link, FakeAutopilot& autopilot, std::int64_t& t_ns, std::int64_t until_ns,
                                  std::vector<LogLine>* lines = nullptr) {
  std::vector<LogLine> seen;
  for (; t_ns <= until_ns; t_ns += 10 * ms_ns) {
    link.step(t_ns);
    link.receive(lines ? *lines : seen);
  }
  return autopilot.read(0, 100);
}

// receives (no step) until the link has heard the autopilot say so (or 3 s pass)
void hear(MavlinkLink& link, bool armed, std::uint32_t mode) {
  std::vector<LogLine> lines;
  const auto deadline = Clock::now() + std::chrono::seconds(3);
  while (Clock::now() < deadline && !(link.armed() == armed && link.mode() == mode)) {
    link.receive(lines);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  REQUIRE(link.armed() == armed);
  REQUIRE(link.mode() == mode);
}

std::vector<mav::Frame> only(const std::vector<mav::Frame>& frames, std::uint32_t msgid, int command = -1) {
  std::vector<mav::Frame> out;
  for (const mav::Frame& f : frames) {
    if (f.header.msgid != msgid) continue;
    if (command >= 0) {
      const auto c = mav::decode<mav::CommandLong>(f);
      if (!c || c->command != command) continue;
    }
    out.push_back(f);
  }
  return out;
}

TEST_CASE("mavlink link: a ground station asks until the heartbeat shows it, keeps targets and sticks coming") {
  FakeAutopilot autopilot;
  MavlinkLink link(link_config("address: tcp:127.0.0.1:" + std::to_string(autopilot.port()) + R"(
vehicle: sub
arm_timeout_s: 30
script:
  - {at_s: 3, param: {name: PILOT_SPEED, value: 50}}
  - {at_s: 0.5, arm: true}
  - {at_s: 0.5, mode: ALT_HOLD}
  - {at_s: 1, depth_m: 2}
  - {at_s: 1, heading_deg: 90}
  - {at_s: 2, manual: {x: 100, y: -200, r: 300, buttons: 5}}
)"));
  CHECK(link.config().script.front().kind == adapters::MavlinkAction::Kind::arm);  // sorted by time
  CHECK(link.config().pilot_rate_hz == 10);
  link.set_depth_datum(0.25);  // the vehicle was 0.25 m deep when ArduSub started
  link.connect("test");
  REQUIRE(autopilot.accept());
  CHECK(link.connected());

  // t = 0 .. 0.49 s: one heartbeat (at 0), as a ground station; nothing else before the
  // autopilot has been heard
  std::int64_t t = 0;
  std::vector<mav::Frame> f = fly_until(link, autopilot, t, 490 * ms_ns);
  REQUIRE(f.size() == 1);
  CHECK(f[0].header.sysid == 255);
  CHECK(f[0].header.compid == 190);
  const auto hb = mav::decode<mav::Heartbeat>(f[0]);
  REQUIRE(hb);
  CHECK(hb->type == mav::mav_type_gcs);
  CHECK(hb->autopilot == mav::mav_autopilot_invalid);

  // the autopilot's heartbeat: disarmed in MANUAL. At 0.5 s ALT_HOLD (2) and arming are
  // asked for, and the sticks, centred, start at 10 Hz (ArduSub's throttle 500 is neutral)
  autopilot.heartbeat(false, 19);
  hear(link, false, 19);
  f = fly_until(link, autopilot, t, 500 * ms_ns);
  const auto modes = only(f, mav::CommandLong::msgid, 176);
  REQUIRE(modes.size() == 1);
  CHECK(mav::decode<mav::CommandLong>(modes[0])->param2 == 2.0F);
  const auto arms = only(f, mav::CommandLong::msgid, 400);
  REQUIRE(arms.size() == 1);
  const auto arm = mav::decode<mav::CommandLong>(arms[0]);
  CHECK(arm->param1 == 1.0F);
  CHECK(arm->param2 == 0.0F);
  CHECK(arm->target_system == 1);
  const auto sticks = only(f, mav::ManualControl::msgid);
  REQUIRE(sticks.size() == 1);
  CHECK(mav::decode<mav::ManualControl>(sticks[0])->z == 500);
  CHECK(mav::decode<mav::ManualControl>(sticks[0])->x == 0);

  // t = 1 s: depth 2 m sent as 1.75 m below ArduSub's depth zero (only alt used), heading 90°
  // with throttle ignored (0x47), which ArduSub's ALT_HOLD keeps; nothing asked again yet
  f = fly_until(link, autopilot, t, 1490 * ms_ns);
  CHECK(only(f, mav::CommandLong::msgid).empty());
  CHECK(only(f, mav::ManualControl::msgid).size() == 9);  // 0.6 .. 1.4 s
  const auto depths = only(f, mav::SetPositionTargetGlobalInt::msgid);
  REQUIRE(depths.size() == 1);
  const auto depth = mav::decode<mav::SetPositionTargetGlobalInt>(depths[0]);
  CHECK(depth->alt == -1.75F);
  CHECK(depth->type_mask == 0x0DFB);  // every bit but Z_IGNORE (and FORCE_SET)
  CHECK(depth->coordinate_frame == 6);
  const auto headings = only(f, mav::SetAttitudeTarget::msgid);
  REQUIRE(headings.size() == 1);
  const auto heading = mav::decode<mav::SetAttitudeTarget>(headings[0]);
  CHECK(heading->type_mask == 0x47);  // body rates and throttle ignored
  CHECK(heading->q[0] == doctest::Approx(std::sqrt(0.5)));
  CHECK(heading->q[3] == doctest::Approx(std::sqrt(0.5)));  // yaw +90°: east

  // t = 1.5 s: the heartbeat still shows neither: both asked again
  f = fly_until(link, autopilot, t, 1500 * ms_ns);
  CHECK(only(f, mav::CommandLong::msgid, 176).size() == 1);
  CHECK(only(f, mav::CommandLong::msgid, 400).size() == 1);

  // ALT_HOLD shows and arming is refused with the autopilot's reason: the mode is no longer
  // asked for, arming is, once a second; the sticks given at 2 s are held from then on
  autopilot.heartbeat(false, 2);
  autopilot.statustext(2, "PreArm: AHRS not healthy");
  hear(link, false, 2);
  f = fly_until(link, autopilot, t, 2590 * ms_ns);
  CHECK(only(f, mav::CommandLong::msgid, 176).empty());
  CHECK(only(f, mav::CommandLong::msgid, 400).size() == 1);
  const auto held = only(f, mav::ManualControl::msgid);
  REQUIRE(held.size() >= 5);
  const auto last = mav::decode<mav::ManualControl>(held.back());
  CHECK(last->x == 100);
  CHECK(last->y == -200);
  CHECK(last->z == 500);
  CHECK(last->r == 300);
  CHECK(last->buttons == 5);
  CHECK(only(f, mav::SetPositionTargetGlobalInt::msgid).size() == 1);  // again at 2 s
  CHECK(only(f, mav::SetAttitudeTarget::msgid).size() == 1);

  // armed: asked no more; the parameter goes once at 3 s
  autopilot.heartbeat(true, 2);
  std::vector<LogLine> lines;
  hear(link, true, 2);
  f = fly_until(link, autopilot, t, 4590 * ms_ns, &lines);
  CHECK(only(f, mav::CommandLong::msgid, 400).empty());
  const auto params = only(f, mav::ParamSet::msgid);
  REQUIRE(params.size() == 1);
  const auto param = mav::decode<mav::ParamSet>(params[0]);
  CHECK(mav::text(param->param_id) == "PILOT_SPEED");
  CHECK(param->param_value == 50.0F);
  CHECK(param->param_type == 9);  // REAL32
  bool armed_line = false;
  for (const LogLine& l : lines) armed_line |= l.text == "ground station: armed after 3 requests";
  CHECK(armed_line);
  CHECK(link.failure().empty());
  CHECK(link.counters().bytes_dropped == 0);

  // an operator's disarm is asked for at the next step
  adapters::MavlinkAction disarm;
  disarm.arm = false;
  REQUIRE(link.queue(disarm, nullptr));
  f = fly_until(link, autopilot, t, t);
  const auto off = only(f, mav::CommandLong::msgid, 400);
  REQUIRE(off.size() == 1);
  CHECK(mav::decode<mav::CommandLong>(off[0])->param1 == 0.0F);
  link.close();
  link.close();
}

TEST_CASE("mavlink link: arming not granted within arm_timeout_s is a failure in the autopilot's words") {
  FakeAutopilot autopilot;
  MavlinkLink link(link_config("address: tcp:127.0.0.1:" + std::to_string(autopilot.port()) + R"(
arm_timeout_s: 2
pilot_input_hz: 0
script: [{at_s: 0, arm: true}]
)"));
  link.connect("test");
  REQUIRE(autopilot.accept());
  autopilot.heartbeat(false, 19);
  hear(link, false, 19);
  std::int64_t t = 0;
  std::vector<LogLine> lines;
  std::vector<mav::Frame> f = fly_until(link, autopilot, t, 1000 * ms_ns, &lines);
  // every request is a line of the log (and so of the recording)
  CHECK(texts(lines) == std::vector<std::string>{"ground station: asking to arm (request 1)",
                                                 "ground station: asking to arm (request 2)"});
  autopilot.statustext(2, "PreArm: AHRS not healthy");
  f = fly_until(link, autopilot, t, 1990 * ms_ns);
  CHECK(link.failure().empty());
  f = fly_until(link, autopilot, t, 2100 * ms_ns);
  CHECK(only(f, mav::ManualControl::msgid).empty());  // pilot_input_hz 0: no sticks
  CHECK(link.failure() == "ArduPilot did not arm within 2 s (3 requests); it said: \"PreArm: AHRS not healthy\"");
}

TEST_CASE("mavlink link: the autopilot's heartbeat, STATUSTEXT and refusals are log lines once per change") {
  FakeAutopilot autopilot;
  MavlinkLink link(link_config("address: tcp:127.0.0.1:" + std::to_string(autopilot.port())));
  link.connect("test");
  REQUIRE(autopilot.accept());
  std::int64_t t = 0;

  // another ground station's heartbeat is not the autopilot's; the first autopilot's is:
  // its system becomes the target, its state the first lines
  mav::Heartbeat gcs = mav::gcs_heartbeat();
  autopilot.send(gcs, 200, 190);
  autopilot.heartbeat(false, 19, 3);  // disarmed, MANUAL
  std::vector<LogLine> lines = lines_until(link, t, "mode");
  CHECK(texts(lines) == std::vector<std::string>{"autopilot: disarmed", "autopilot: mode MANUAL"});
  CHECK(lines[0].level == 0);
  CHECK(link.target_system() == 3);
  CHECK(link.armed() == std::optional<bool>(false));

  // the same state again: no line; armed in ALT_HOLD: one line each
  autopilot.heartbeat(false, 19, 3);
  autopilot.heartbeat(true, 2, 3);
  autopilot.heartbeat(true, 2, 3);
  autopilot.statustext(6, "Arming motors");
  lines = lines_until(link, t, "Arming motors");
  CHECK(texts(lines) ==
        std::vector<std::string>{"autopilot: armed", "autopilot: mode ALT_HOLD", "autopilot: Arming motors"});
  CHECK(lines.back().level == 0);
  CHECK(link.mode() == std::optional<std::uint32_t>(2));
  CHECK(link.counters().heartbeats_received == 4);

  // severities, a refused command, a mode without a name, garbage between frames
  const char garbage[] = "not MAVLink at all";
  autopilot.send_raw(garbage, sizeof garbage - 1);
  autopilot.statustext(3, "PreArm: Compass not calibrated");
  autopilot.statustext(4, "Leak detected");
  mav::CommandAck refused;
  refused.command = 400;
  refused.result = 4;
  autopilot.send(refused);
  mav::CommandAck accepted;
  accepted.command = 176;
  autopilot.send(accepted);
  autopilot.heartbeat(true, 99, 3);
  lines = lines_until(link, t, "mode 99");
  REQUIRE(lines.size() == 5);
  CHECK(lines[0].text == "autopilot: PreArm: Compass not calibrated");
  CHECK(lines[0].level == 2);
  CHECK(lines[1].text == "autopilot: Leak detected");
  CHECK(lines[1].level == 1);
  CHECK(lines[2].text == "autopilot: command 400 refused (result 4)");
  CHECK(lines[2].level == 1);
  CHECK(lines[3].text == "autopilot: command 176 accepted");
  CHECK(lines[3].level == 0);
  CHECK(lines[4].text == "autopilot: mode 99");
  CHECK(link.decoder_counters().garbage_bytes == sizeof garbage - 1);
  CHECK(link.connected());
  CHECK(link.counters().acks[0] == 1);
  CHECK(link.counters().acks[4] == 1);

  // a command now goes to the learned target, 3/1 (a mode: arming is what it shows already)
  adapters::MavlinkAction a;
  a.kind = adapters::MavlinkAction::Kind::mode;
  a.custom_mode = 2;
  REQUIRE(link.queue(a, nullptr));
  link.step(t);
  const std::vector<mav::Frame> f = autopilot.read(0, 200);
  bool seen = false;
  for (const mav::Frame& frame : f)
    if (auto c = mav::decode<mav::CommandLong>(frame)) seen = c->target_system == 3 && c->target_component == 1;
  CHECK(seen);

  nlohmann::json summary = nlohmann::json::object();
  link.summarize(summary);
  const auto& m = summary["mavlink"];
  CHECK(m["connected"] == true);
  CHECK(m["armed"] == true);
  CHECK(m["mode"] == "99");
  CHECK(m["statustexts"] == 3);
  CHECK(m["acks"]["accepted"] == 1);
  CHECK(m["acks"]["failed"] == 1);
  CHECK(m["decoder"]["garbage_bytes"] == sizeof garbage - 1);
}

TEST_CASE("mavlink link: a dropped connection is a warning line and the link reconnects without blocking") {
  FakeAutopilot autopilot;
  MavlinkLink link(link_config("address: tcp:127.0.0.1:" + std::to_string(autopilot.port())));
  link.connect("test");
  REQUIRE(autopilot.accept());
  std::int64_t t = 0;
  autopilot.heartbeat(false, 19);
  CHECK(texts(lines_until(link, t, "mode")).size() == 2);

  // the autopilot goes away: one warning, then (the listener still there) a new connection
  autopilot.drop();
  std::vector<LogLine> lines = lines_until(link, t, "link lost");
  REQUIRE(!lines.empty());
  CHECK(lines.back().text == "autopilot: MAVLink link lost");
  CHECK(lines.back().level == 1);
  CHECK(link.counters().links_lost == 1);
  const auto before = Clock::now();
  for (int i = 0; i < 5 && !link.connected(); ++i) link.step(t += 10 * ms_ns);
  CHECK(Clock::now() - before < std::chrono::seconds(1));  // a bound, not a timing claim
  REQUIRE(autopilot.accept());
  lines = lines_until(link, t, "restored");
  REQUIRE(!lines.empty());
  CHECK(lines.back().text == "autopilot: MAVLink link restored");
  CHECK(link.counters().reconnects == 1);
  CHECK(link.connected());
  // the same state on the new connection is no change; heartbeats go on at the next second
  autopilot.heartbeat(false, 19);
  autopilot.statustext(6, "marker");
  lines = lines_until(link, t, "marker");
  CHECK(texts(lines) == std::vector<std::string>{"autopilot: marker"});
  steps_until(link, t, t - t % 1'000'000'000 + 1'000'000'000);
  CHECK(count_msgid(autopilot.read(1), mav::Heartbeat::msgid) == 1);
}

TEST_CASE("mavlink link: no autopilot within connect_timeout_ms is a clear start error") {
  std::uint16_t port = 0;
  {
    FakeAutopilot gone;  // a port nobody listens on once it is closed
    port = gone.port();
  }
  MavlinkLink link(link_config("address: tcp:127.0.0.1:" + std::to_string(port) + "\nconnect_timeout_ms: 200"));
  const std::string expected =
      "endpoint ap: no MAVLink connection to tcp:127.0.0.1:" + std::to_string(port) + " within 200 ms";
  CHECK_THROWS_WITH_AS(link.connect("endpoint ap"), doctest::Contains(expected.c_str()), std::runtime_error);
  CHECK(!link.connected());
  link.step(0);  // closed: nothing, no crash
}

namespace {

std::string scenario_text(std::uint16_t udp_port, const std::string& mavlink, const std::string& expect = "") {
  return ardupilot_test::one_thruster_world("ardupilot-mavlink", 150, "", "", 1) + R"(  - name: ap
    type: ardupilot_json
    vehicle: auv
    deadline_ms: 5000
    port: )" +
         std::to_string(udp_port) +
         R"(
    connect_timeout_ms: 10000
    channels: [{channel: 1, actuator: thruster}]
)" + mavlink +
         expect;
}

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

// ArduPilot for a session: the MAVLink side (a heartbeat every 20 ms of wall time; arm and
// DO_SET_MODE answered as ArduPilot does; every frame it gets kept) and the physics side
// (the stand-in's servo packets), each on a thread until finish()
class FlyingAutopilot {
 public:
  explicit FlyingAutopilot(std::uint16_t udp_port) : law_(1500), servo_(options(udp_port), law_) {
    mavlink_side_ = std::thread([this] { serve(); });
    flying_ = std::thread([this] {
      while (servo_.frame(Clock::now() + std::chrono::seconds(30)) == ap::ArduPilotStandIn::FrameResult::replied) {
      }
    });
  }
  ~FlyingAutopilot() { finish(); }
  std::uint16_t mavlink_port() const { return autopilot_.port(); }
  void finish() {
    servo_.cancel();
    done_ = true;
    if (flying_.joinable()) flying_.join();
    if (mavlink_side_.joinable()) mavlink_side_.join();
  }
  // after finish()
  const std::vector<mav::Frame>& received() const { return received_; }

 private:
  static ap::StandInOptions options(std::uint16_t port) {
    ap::StandInOptions o;
    o.port = port;
    o.resend_after_ms = 200;
    o.recv_timeout_ms = 10;
    return o;
  }
  void serve() {
    if (!autopilot_.accept(10'000)) return;
    bool armed = false;
    std::uint32_t mode = 19;
    while (!done_ && !autopilot_.peer_closed()) {
      autopilot_.heartbeat(armed, mode);
      for (const mav::Frame& f : autopilot_.read(0, 20)) {
        received_.push_back(f);
        const auto c = mav::decode<mav::CommandLong>(f);
        if (!c) continue;
        mav::CommandAck ack;
        ack.command = c->command;
        autopilot_.send(ack);
        if (c->command == 400) {
          armed = c->param1 == 1.0F;
          autopilot_.statustext(6, armed ? "Arming motors" : "Disarming motors");
        }
        if (c->command == 176) mode = static_cast<std::uint32_t>(c->param2);
      }
    }
  }

  FakeAutopilot autopilot_;
  ap::FixedPwm law_;
  ap::ArduPilotStandIn servo_;
  std::atomic<bool> done_{false};
  std::vector<mav::Frame> received_;
  std::thread mavlink_side_;
  std::thread flying_;
};

}  // namespace

TEST_CASE("mavlink link: in a session, ArduPilot's answers are the endpoint's log lines that expectations read") {
  const std::uint16_t udp = free_udp_port();
  FlyingAutopilot autopilot(udp);
  const Scenario sc = parse_scenario(scenario_text(udp, R"(    mavlink:
      address: tcp:127.0.0.1:)" + std::to_string(autopilot.mavlink_port()) +
                                                            R"(
      script:
        - {at_s: 0.1, arm: true, force: true}
        - {at_s: 0.2, mode: alt hold}
expect:
  - {value: endpoints.ap.log, that: 'matches "autopilot: armed"', when: "eventually before 1.2 s"}
  - {value: endpoints.ap.log, that: 'matches "autopilot: mode ALT_HOLD"', when: "eventually before 1.2 s"}
  - {value: endpoints.ap.log, that: 'matches "autopilot: Arming motors"', when: eventually}
)"),
                                     "ap.yaml");
  Session session(sc, adapters::make_endpoints(sc));
  std::atomic<bool> stop{false};
  const Outcome outcome = session.run(stop);
  autopilot.finish();
  REQUIRE(outcome == Outcome::completed);

  const auto s = session.summary();
  INFO(s.dump(2));
  CHECK(session.expectations_passed());
  const auto& m = s["endpoints"][0]["mavlink"];
  CHECK(m["connected"] == false);  // stop() closed it
  CHECK(m["armed"] == true);
  CHECK(m["mode"] == "ALT_HOLD");
  // arm and mode until shown, and the sticks streamed: everything the fake got was counted
  const std::size_t commands = count_msgid(autopilot.received(), mav::CommandLong::msgid);
  const std::size_t sticks = count_msgid(autopilot.received(), mav::ManualControl::msgid);
  CHECK(commands >= 2);
  CHECK(sticks >= 5);
  CHECK(m["commands_sent"].get<std::size_t>() >= commands + sticks);
  CHECK(m["heartbeats_sent"] == 2);  // t = 0 and 1 s of 1.5 s
  CHECK(m["acks"]["accepted"].get<int>() >= 2);
}

TEST_CASE("mavlink link: an operator's autopilot command reaches ArduPilot at the next step, bad ones are refused") {
  const std::uint16_t udp = free_udp_port();
  FlyingAutopilot autopilot(udp);
  const Scenario sc = parse_scenario(
      scenario_text(udp, "    mavlink: {address: 'tcp:127.0.0.1:" + std::to_string(autopilot.mavlink_port()) +
                             "'}\n  - {name: ctl, type: in_process, vehicle: auv, controller: idle}\n"),
      "ap.yaml");
  SessionControl control;
  SessionOptions options;
  options.control = &control;
  Session session(sc, adapters::make_endpoints(sc), options);

  // queued before the run: taken before step 0, answered from the loop
  struct Answer {
    bool ok = false;
    std::string text;
  };
  std::vector<Answer> answers(6);
  auto submit = [&](std::size_t i, const std::string& endpoint, const std::string& verb, const std::string& args) {
    ControlRequest r;
    r.action = ControlRequest::World{EndpointCommand{endpoint, verb, args}};
    r.done = [&answers, i](bool ok, const std::string& text) { answers[i] = {ok, text}; };
    REQUIRE(control.submit(std::move(r)));
  };
  submit(0, "ap", "autopilot_target", R"({"depth_m":3,"heading_deg":180})");
  submit(1, "nosuch", "autopilot_arm", R"({"arm":true})");
  submit(2, "ctl", "autopilot_arm", R"({"arm":true})");
  submit(3, "ap", "autopilot_mode", R"({"mode":"CRUISE"})");
  submit(4, "ap", "autopilot_manual", R"({"x":5000})");
  submit(5, "ap", "autopilot_target", R"({})");
  std::atomic<bool> stop{false};
  const Outcome outcome = session.run(stop);
  autopilot.finish();
  REQUIRE(outcome == Outcome::completed);

  CHECK(answers[0].ok);
  CHECK(answers[0].text.find("\"takes_effect_at_step\":0") != std::string::npos);
  CHECK(!answers[1].ok);
  CHECK(answers[1].text == "no endpoint \"nosuch\" (known: ap, ctl)");
  CHECK(!answers[2].ok);
  CHECK(answers[2].text == "endpoint \"ctl\" (type in_process) takes no operator commands");
  CHECK(!answers[3].ok);
  CHECK(answers[3].text.find("no mode \"CRUISE\" in ArduSub (STABILIZE") == 0);
  CHECK(!answers[4].ok);
  CHECK(answers[4].text == "\"x\" must be a finite number in -1000..1000, got 5000");
  CHECK(!answers[5].ok);
  CHECK(answers[5].text == "give depth_m, heading_deg or both");

  // the accepted one: a depth target of 3 m and a heading of 180°, kept up once a second
  int depth = 0, heading = 0;
  for (const mav::Frame& f : autopilot.received()) {
    if (auto d = mav::decode<mav::SetPositionTargetGlobalInt>(f)) depth += d->alt == -3.0F ? 1 : 100;
    if (auto h = mav::decode<mav::SetAttitudeTarget>(f)) heading += std::abs(h->q[3]) > 0.999F ? 1 : 100;
  }
  CHECK(depth >= 1);
  CHECK(depth < 100);  // none other
  CHECK(heading >= 1);
  CHECK(heading < 100);
  const auto s = session.summary();
  CHECK(s["endpoints"][0]["mavlink"]["commands_sent"].get<int>() >= depth + heading);
  CHECK(s["control"]["operator_commands"] == 1);
}

TEST_CASE("mavlink link: config mistakes in the mavlink section are positioned") {
  auto errors_of = [](const std::string& mavlink) {
    return tether::ardupilot_test::endpoint_config_errors(scenario_text(9002, mavlink), "ap.yaml");
  };
  const std::string all = errors_of(R"(    mavlink:
      address: tcp:localhost:5760
      vehicle: plane
      colour: red
      script:
        - {at_s: 1, dive: true}
        - {at_s: -1, arm: true}
        - {at_s: 1, arm: true, mode: MANUAL}
        - {at_s: 1, mode: CRUISE}
        - {at_s: 1, depth_m: 2, force: true}
        - {at_s: 1, param: {name: A_NAME_LONGER_THAN_16, value: 1}}
        - {at_s: 1, manual: {x: 2000}}
        - {arm: true}
        - {at_s: 1}
)");
  INFO(all);
  CHECK(all.find("ap.yaml:") != std::string::npos);
  CHECK(all.find("endpoints[0].mavlink.address: expected tcp:HOST:PORT (connect), udp:HOST:PORT (send to a board) or "
                 "udpin:HOST:PORT") != std::string::npos);
  CHECK(all.find("endpoints[0].mavlink.vehicle:") != std::string::npos);
  CHECK(all.find("endpoints[0].mavlink.colour: unknown key") != std::string::npos);
  CHECK(all.find("endpoints[0].mavlink.script[0].dive: unknown action \"dive\"") != std::string::npos);
  CHECK(all.find("endpoints[0].mavlink.script[1].at_s: expected a number") != std::string::npos);
  CHECK(all.find("endpoints[0].mavlink.script[2]: one action per entry, got arm and mode") != std::string::npos);
  CHECK(all.find("endpoints[0].mavlink.script[3].mode: no mode \"CRUISE\" in ArduSub") != std::string::npos);
  CHECK(all.find("endpoints[0].mavlink.script[4].force: force goes with arm") != std::string::npos);
  CHECK(all.find("endpoints[0].mavlink.script[5].param.name: a parameter name has at most 16 characters") !=
        std::string::npos);
  CHECK(all.find("endpoints[0].mavlink.script[6].manual.x:") != std::string::npos);
  CHECK(all.find("endpoints[0].mavlink.script[7].at_s:") != std::string::npos);
  CHECK(all.find("endpoints[0].mavlink.script[8]: expected one action") != std::string::npos);

  // the ground station's own keys: misspelt, wrong type, out of range, absurd, NaN; a rover's
  // sticks on the axes ArduRover does not read; udpin needs a real port
  const std::string keys = errors_of(R"(    mavlink:
      address: 'udpin:127.0.0.1:0'
      arm_timout_s: 10
      arm_timeout_s: 1e308
      pilot_input_hz: .nan
)");
  INFO(keys);
  CHECK(keys.find("endpoints[0].mavlink.address: expected tcp:HOST:PORT") != std::string::npos);
  CHECK(keys.find("endpoints[0].mavlink.arm_timout_s: unknown key") != std::string::npos);
  CHECK(keys.find("endpoints[0].mavlink.arm_timeout_s:") != std::string::npos);
  CHECK(keys.find("endpoints[0].mavlink.pilot_input_hz:") != std::string::npos);
  const std::string more = errors_of(R"(    mavlink:
      vehicle: rover
      arm_timeout_s: soon
      pilot_input_hz: -1
      script: [{at_s: 1, manual: {x: 500, z: 200}}, {at_s: 2, manual: {r: -300}}]
)");
  INFO(more);
  CHECK(more.find("endpoints[0].mavlink.arm_timeout_s: expected a number") != std::string::npos);
  CHECK(more.find("endpoints[0].mavlink.pilot_input_hz:") != std::string::npos);
  CHECK(more.find("endpoints[0].mavlink.script[0].manual.x: ArduRover reads MANUAL_CONTROL's y (steering) and z "
                  "(throttle) only; x does nothing") != std::string::npos);
  CHECK(more.find("endpoints[0].mavlink.script[1].manual.r: ArduRover reads") != std::string::npos);
  // and an operator's: refused with the reason, nothing queued
  std::vector<adapters::MavlinkAction> actions;
  std::string why;
  CHECK_FALSE(adapters::operator_actions("autopilot_manual", nlohmann::json{{"x", 500}}, mav::Vehicle::rover,
                                         actions, &why));
  CHECK(why == "ArduRover reads MANUAL_CONTROL's y (steering) and z (throttle) only; x and r do nothing");
  CHECK(actions.empty());
  CHECK(adapters::operator_actions("autopilot_manual", nlohmann::json{{"y", -300}, {"z", 400}}, mav::Vehicle::rover,
                                   actions, &why));
  REQUIRE(actions.size() == 1);
  CHECK(actions[0].manual == std::array<std::int16_t, 4>{0, -300, 400, 0});

  // rover modes are rover's; udp addresses are taken; the default port follows the instance
  CHECK(errors_of("    mavlink: {vehicle: rover, address: 'udp:192.168.2.2:14550', script: [{at_s: 0, mode: "
                  "HOLD}]}\n")
            .empty());
  const Scenario sc = parse_scenario(scenario_text(9002, "    instance: 2\n    mavlink: {}\n"), "ap.yaml");
  adapters::ArduPilotJsonEndpoint ep(sc.endpoints[0], sc);
  REQUIRE(ep.mavlink() != nullptr);
  CHECK(ep.mavlink()->config().address() == "tcp:127.0.0.1:5780");
}

TEST_CASE("mavlink link: udpin listens where MAVProxy's --out sends and answers the sender") {
  // a free UDP port for the link to bind
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  at.sin_port = htons(free_udp_port());
  MavlinkLink link(link_config("address: udpin:127.0.0.1:" + std::to_string(ntohs(at.sin_port)) + R"(
script: [{at_s: 0, mode: ALT_HOLD}]
)"));
  CHECK(link.config().address() == "udpin:127.0.0.1:" + std::to_string(ntohs(at.sin_port)));
  link.connect("test");
  std::int64_t t = 0;
  std::vector<LogLine> lines;
  link.step(t);  // nobody has spoken: the heartbeat has nowhere to go
  CHECK(link.counters().bytes_dropped > 0);

  // "MAVProxy": a UDP socket that forwards the autopilot's heartbeat to the link's port
  const int proxy = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in self{};
  self.sin_family = AF_INET;
  self.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(proxy, reinterpret_cast<sockaddr*>(&self), sizeof self) == 0);
  mav::Heartbeat h;
  h.type = mav::mav_type_submarine;
  h.autopilot = mav::mav_autopilot_ardupilotmega;
  h.base_mode = mav::mav_mode_flag_custom_mode_enabled;
  h.custom_mode = 19;
  std::array<std::uint8_t, mav::max_frame_size> out;
  const std::size_t n = mav::encode(h, mav::Header{.seq = 0, .sysid = 1, .compid = 1}, out);
  REQUIRE(::sendto(proxy, out.data(), n, 0, reinterpret_cast<const sockaddr*>(&at), sizeof at) ==
          static_cast<ssize_t>(n));
  const auto deadline = Clock::now() + std::chrono::seconds(3);
  while (Clock::now() < deadline && !link.mode()) {
    link.receive(lines);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  REQUIRE(link.mode() == 19u);
  // the next step answers the sender: the mode asked for comes back to MAVProxy's socket
  t += 10 * ms_ns;
  link.step(t);
  mav::Decoder decoder(mav::known_messages());
  bool mode_asked = false;
  const auto until = Clock::now() + std::chrono::seconds(3);
  while (Clock::now() < until && !mode_asked) {
    pollfd p{proxy, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    std::uint8_t buf[512];
    const ssize_t got = ::recv(proxy, buf, sizeof buf, 0);
    if (got <= 0) continue;
    decoder.feed(std::span<const std::uint8_t>(buf, static_cast<std::size_t>(got)), [&](const mav::Frame& f) {
      if (auto c = mav::decode<mav::CommandLong>(f)) mode_asked |= c->command == 176 && c->param2 == 2.0F;
    });
  }
  CHECK(mode_asked);
  ::close(proxy);
  link.close();
}
