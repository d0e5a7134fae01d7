// SPDX-License-Identifier: Apache-2.0
// The stand-in autopilot's MAVLink server (adapters/ardupilot/standin/src/ardupilot_mavlink_server.cpp) against a
// ground station written here: a plain TCP socket and the project's codec. Heartbeats, arming
// and modes with their answers, targets, pilot input and parameters reaching the state, garbage
// on the stream, and a second ground station replacing the first. Every wait is bounded.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <numbers>
#include <optional>
#include <string>
#include <thread>

#include "tether/ardupilot_standin/ardupilot_mavlink_server.hpp"
#include "tether/mavlink/mavlink_messages.hpp"

using namespace tether::adapters::ardupilot;
namespace mav = tether::adapters::mavlink;
using Clock = std::chrono::steady_clock;

namespace {

class Gcs {
 public:
  explicit Gcs(std::uint16_t port) : decoder_(mav::known_messages()) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  }
  ~Gcs() { ::close(fd_); }

  template <class M>
  void send(const M& m) {
    std::array<std::uint8_t, mav::max_frame_size> buf{};
    mav::Header h;
    h.seq = seq_++;
    h.sysid = 255;
    h.compid = 190;
    const std::size_t n = mav::encode(m, h, buf);
    REQUIRE(n > 0);
    send_bytes(buf.data(), n);
  }
  void send_bytes(const std::uint8_t* data, std::size_t n) {
    REQUIRE(::send(fd_, data, n, MSG_NOSIGNAL) == static_cast<ssize_t>(n));
  }

  // the first M within 10 s for which `accept` holds; other frames are passed over
  template <class M>
  std::optional<M> wait_for(std::function<bool(const M&)> accept = [](const M&) { return true; }) {
    const auto until = Clock::now() + std::chrono::seconds(10);
    while (Clock::now() < until) {
      while (next_frame()) {
        if (frame_.header.sysid != 1 || frame_.header.compid != 1) continue;
        if (auto m = mav::decode<M>(frame_); m && accept(*m)) return m;
      }
      if (closed_) return std::nullopt;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      std::uint8_t buf[1024];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        closed_ = true;
        continue;
      }
      std::size_t used = 0;
      while (used < static_cast<std::size_t>(n))
        used += decoder_.push(std::span<const std::uint8_t>(buf + used, static_cast<std::size_t>(n) - used));
    }
    return std::nullopt;
  }
  // whether the server closed this connection (within 10 s)
  bool closed_by_server() {
    const auto until = Clock::now() + std::chrono::seconds(10);
    while (!closed_ && Clock::now() < until) wait_for<mav::StatusText>([](const auto&) { return false; });
    return closed_;
  }

 private:
  bool next_frame() { return decoder_.next(frame_); }
  int fd_ = -1;
  std::uint8_t seq_ = 0;
  mav::Decoder decoder_;
  mav::Frame frame_;
  bool closed_ = false;
};

MavlinkServerOptions fast_options() {
  MavlinkServerOptions o;
  o.port = 0;
  o.heartbeat_period_ms = 100;
  o.telemetry_period_ms = 100;
  return o;
}

bool text_is(const mav::StatusText& t, const char* s) { return mav::text(t.text) == s; }

// polls the state until `done` holds (the server applies commands on its own thread)
bool eventually(const std::function<bool()>& done) {
  const auto until = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

}  // namespace

TEST_CASE("ardupilot mavlink server: heartbeat, arm and ALT_HOLD answered as ArduSub does") {
  Autopilot ap(Airframe::vectored);
  MavlinkServer server(ap, fast_options());
  server.start();
  CHECK_FALSE(server.wait_for_gcs(std::chrono::milliseconds(10)));
  Gcs gcs(server.port());
  CHECK(server.wait_for_gcs(std::chrono::seconds(10)));

  const auto hb = gcs.wait_for<mav::Heartbeat>();
  REQUIRE(hb.has_value());
  CHECK(hb->type == mav::mav_type_submarine);
  CHECK(hb->autopilot == mav::mav_autopilot_ardupilotmega);
  CHECK(hb->base_mode == mav::mav_mode_flag_custom_mode_enabled);
  CHECK(hb->custom_mode == 19);
  CHECK(hb->system_status == mav::mav_state_active);
  CHECK(gcs.wait_for<mav::SysStatus>().has_value());

  gcs.send(mav::gcs_heartbeat());
  // during its start-up (5 s of simulated time: no reading yet) arming is refused as ArduSub
  // refuses it before its estimator is healthy: the reason as a PreArm text, FAILED; the
  // AHRS is reported present but not healthy
  gcs.send(mav::arm_disarm(1, 1, true));
  const auto prearm = gcs.wait_for<mav::StatusText>();
  REQUIRE(prearm.has_value());
  CHECK(mav::text(prearm->text) == "PreArm: AHRS not healthy");
  CHECK(prearm->severity == 2);
  const auto refused_arm = gcs.wait_for<mav::CommandAck>();
  REQUIRE(refused_arm.has_value());
  CHECK(refused_arm->command == 400);
  CHECK(refused_arm->result == 4);  // MAV_RESULT_FAILED
  CHECK_FALSE(ap.armed());
  const auto starting = gcs.wait_for<mav::SysStatus>();
  REQUIRE(starting.has_value());
  CHECK((starting->onboard_control_sensors_present & (1u << 21)) != 0);
  CHECK((starting->onboard_control_sensors_health & (1u << 21)) == 0);
  // a reading past the start-up: healthy, and arming is granted
  SensorReading later;
  later.timestamp_s = 5.0;
  ap.publish(&later, 0, 0);
  const auto healthy = gcs.wait_for<mav::SysStatus>(
      [](const auto& st) { return (st.onboard_control_sensors_health & (1u << 21)) != 0; });
  CHECK(healthy.has_value());
  gcs.send(mav::arm_disarm(1, 1, true));
  const auto text = gcs.wait_for<mav::StatusText>();
  REQUIRE(text.has_value());
  CHECK(mav::text(text->text) == "Arming motors");
  CHECK(text->severity == 6);
  const auto arm_ack = gcs.wait_for<mav::CommandAck>();
  REQUIRE(arm_ack.has_value());
  CHECK(arm_ack->command == 400);
  CHECK(arm_ack->result == mav::mav_result_accepted);

  gcs.send(mav::do_set_mode(1, 1, *mav::custom_mode(mav::Vehicle::sub, "ALT_HOLD")));
  const auto mode_ack = gcs.wait_for<mav::CommandAck>();
  REQUIRE(mode_ack.has_value());
  CHECK(mode_ack->command == 176);
  CHECK(mode_ack->result == mav::mav_result_accepted);
  const auto armed_hb = gcs.wait_for<mav::Heartbeat>();
  REQUIRE(armed_hb.has_value());
  CHECK(armed_hb->base_mode == (mav::mav_mode_flag_custom_mode_enabled | mav::mav_mode_flag_safety_armed));
  CHECK(armed_hb->custom_mode == 2);

  // a mode it does not fly: FAILED, a warning, the mode unchanged
  gcs.send(mav::do_set_mode(1, 1, 16));
  const auto refused = gcs.wait_for<mav::StatusText>();
  REQUIRE(refused.has_value());
  CHECK(mav::text(refused->text) == "Flight mode change failed");
  const auto failed = gcs.wait_for<mav::CommandAck>();
  REQUIRE(failed.has_value());
  CHECK(failed->result == 4);
  CHECK(ap.mode() == 2);

  // SET_MODE (the older message) is answered with its message id as the command
  mav::SetMode set_mode;
  set_mode.target_system = 1;
  set_mode.base_mode = mav::mav_mode_flag_custom_mode_enabled;
  set_mode.custom_mode = 0;  // STABILIZE
  gcs.send(set_mode);
  const auto set_mode_ack = gcs.wait_for<mav::CommandAck>([](const auto& a) { return a.command == 11; });
  REQUIRE(set_mode_ack.has_value());
  CHECK(set_mode_ack->result == mav::mav_result_accepted);
  CHECK(ap.mode() == 0);

  // a command for another system is not for it
  gcs.send(mav::arm_disarm(7, 1, false));
  gcs.send(mav::arm_disarm(1, 1, false));
  CHECK(gcs.wait_for<mav::StatusText>([](const auto& t) { return text_is(t, "Disarming motors"); }).has_value());
  CHECK_FALSE(ap.armed());
  CHECK(eventually([&] { return server.counters().ignored >= 1; }));
  server.stop();
}

TEST_CASE("ardupilot mavlink server: targets, pilot input and parameters reach the state") {
  Autopilot ap(Airframe::vectored);
  MavlinkServer server(ap, fast_options());
  server.start();
  Gcs gcs(server.port());
  REQUIRE(gcs.wait_for<mav::Heartbeat>().has_value());

  // in MANUAL, ArduSub takes no depth target; in ALT_HOLD it does
  mav::SetPositionTargetGlobalInt ignored;
  ignored.target_system = 1;
  ignored.coordinate_frame = 6;
  ignored.type_mask = 0xFF8;
  ignored.alt = -7.0F;
  gcs.send(ignored);
  CHECK(eventually([&] { return server.counters().ignored >= 1; }));
  CHECK(ap.snapshot(Clock::now()).depth_seq == 0);
  REQUIRE(ap.set_mode(sub_mode_alt_hold) == Autopilot::ModeChange::changed);

  mav::SetPositionTargetGlobalInt depth;
  depth.target_system = 1;
  depth.coordinate_frame = 6;  // MAV_FRAME_GLOBAL_RELATIVE_ALT_INT
  depth.type_mask = 0xFF8;     // only the position
  depth.alt = -2.5F;           // ArduSub: altitude -2.5 m is a depth of 2.5 m
  gcs.send(depth);
  CHECK(eventually([&] { return ap.snapshot(Clock::now()).depth_seq == 1; }));
  CHECK(ap.snapshot(Clock::now()).depth_target_m == doctest::Approx(2.5));

  // an attitude target with only the body rates ignored goes to GUIDED's angle control:
  // ALT_HOLD does not take it; with throttle ignored as well (0x47) ALT_HOLD does
  mav::SetAttitudeTarget heading;
  heading.target_system = 1;
  heading.type_mask = 7;  // body rates ignored
  const double half = 100.0 * std::numbers::pi / 360.0;
  heading.q = {static_cast<float>(std::cos(half)), 0, 0, static_cast<float>(std::sin(half))};
  gcs.send(heading);
  CHECK(eventually([&] { return server.counters().ignored >= 2; }));
  CHECK(ap.snapshot(Clock::now()).heading_seq == 0);
  heading.type_mask = 0x47;
  gcs.send(heading);
  CHECK(eventually([&] { return ap.snapshot(Clock::now()).kept_attitude; }));
  CHECK(ap.snapshot(Clock::now()).kept_heading_deg == doctest::Approx(100.0).epsilon(1e-4));
  CHECK(ap.snapshot(Clock::now()).heading_seq == 0);
  // in GUIDED the first angle target holds the depth of then (the law takes it: NaN here)
  REQUIRE(ap.set_mode(sub_mode_guided) == Autopilot::ModeChange::changed);
  heading.type_mask = 7;
  gcs.send(heading);
  CHECK(eventually([&] { return ap.snapshot(Clock::now()).heading_seq == 1; }));
  CHECK(std::isnan(ap.snapshot(Clock::now()).depth_target_m));
  CHECK(ap.snapshot(Clock::now()).guided_angle);

  mav::ManualControl sticks;
  sticks.target = 1;
  sticks.x = 300;
  sticks.y = -200;
  sticks.z = 700;
  sticks.r = 100;
  gcs.send(sticks);
  // the pilot timeout runs on the autopilot's (simulated) clock: no reading yet, time 0
  CHECK(eventually([&] { return ap.snapshot(ap.now()).pilot.x == 300; }));
  const auto pilot = ap.snapshot(ap.now()).pilot;
  CHECK(pilot.y == -200);
  CHECK(pilot.z == 700);
  CHECK(pilot.r == 100);

  mav::ParamSet set;
  set.target_system = 1;
  set.target_component = 1;
  mav::set_text(set.param_id, "PSC_POSZ_P");
  set.param_value = 1.25F;
  set.param_type = 9;
  gcs.send(set);
  const auto value = gcs.wait_for<mav::ParamValue>();
  REQUIRE(value.has_value());
  CHECK(mav::text(value->param_id) == "PSC_POSZ_P");
  CHECK(value->param_value == doctest::Approx(1.25));
  CHECK(value->param_count == hold_params().size());
  CHECK(ap.gains().depth_p_per_s == doctest::Approx(1.25));

  // telemetry once the law has a reading: depth as altitude, heading in cdeg
  SensorReading r;
  r.position_m = Vec3(0, 0, 1.5);
  r.quaternion = {std::cos(std::numbers::pi / 4), 0, 0, std::sin(std::numbers::pi / 4)};
  ap.publish(&r, 1.5, 90);
  const auto pos = gcs.wait_for<mav::GlobalPositionInt>();
  REQUIRE(pos.has_value());
  CHECK(pos->relative_alt == -1500);
  CHECK(pos->hdg == 9000);
  server.stop();
}

TEST_CASE("ardupilot mavlink server: garbage on the stream is passed over, later frames still work") {
  Autopilot ap(Airframe::vectored);
  ap.set_startup_s(0);  // armable at once
  MavlinkServer server(ap, fast_options());
  server.start();
  Gcs gcs(server.port());
  REQUIRE(gcs.wait_for<mav::Heartbeat>().has_value());
  std::array<std::uint8_t, 600> junk{};
  std::uint32_t x = 12345;
  for (auto& b : junk) {
    x = x * 1103515245u + 12345u;
    b = static_cast<std::uint8_t>(x >> 16);
  }
  for (std::size_t i = 0; i < junk.size(); i += 37) junk[i] = mav::stx;  // false starts
  gcs.send_bytes(junk.data(), junk.size());
  // a frame cut short, then a whole one
  std::array<std::uint8_t, mav::max_frame_size> buf{};
  const std::size_t n = mav::encode(mav::arm_disarm(1, 1, true), mav::Header{}, buf);
  gcs.send_bytes(buf.data(), n / 2);
  gcs.send(mav::arm_disarm(1, 1, true));
  gcs.send(mav::arm_disarm(1, 1, true));  // one of these two may be eaten by the cut frame
  const auto ack = gcs.wait_for<mav::CommandAck>([](const auto& a) { return a.command == 400; });
  REQUIRE(ack.has_value());
  CHECK(ack->result == mav::mav_result_accepted);
  CHECK(ap.armed());
  CHECK(eventually([&] { return server.counters().garbage_bytes > 0; }));
  server.stop();
}

TEST_CASE("ardupilot mavlink server: a second ground station replaces the first") {
  Autopilot ap(Airframe::rover);
  MavlinkServer server(ap, fast_options());
  server.start();
  Gcs first(server.port());
  const auto hb = first.wait_for<mav::Heartbeat>();
  REQUIRE(hb.has_value());
  CHECK(hb->type == mav::mav_type_ground_rover);
  CHECK(hb->custom_mode == 0);

  Gcs second(server.port());
  REQUIRE(second.wait_for<mav::Heartbeat>().has_value());
  CHECK(first.closed_by_server());
  second.send(mav::do_set_mode(1, 1, *mav::custom_mode(mav::Vehicle::rover, "HOLD")));
  const auto ack = second.wait_for<mav::CommandAck>();
  REQUIRE(ack.has_value());
  CHECK(ack->result == mav::mav_result_accepted);
  CHECK(second.wait_for<mav::Heartbeat>([](const auto& h) { return h.custom_mode == 4; }).has_value());
  const auto c = server.counters();
  CHECK(c.connections == 2);
  CHECK(c.replaced == 1);
  CHECK(server.gcs_connected());
  server.stop();
}
