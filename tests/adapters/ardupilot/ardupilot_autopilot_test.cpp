// SPDX-License-Identifier: Apache-2.0
// The stand-in autopilot's state and laws (adapters/ardupilot/standin/src/ardupilot_autopilot.cpp): the vectored
// frame's table, stop when disarmed, depth hold against a 1-D heave model written here, heading
// hold's direction, skid steering; and the `tether-ardupilot` program itself against a UDP
// physics that answers every packet. Every wait is bounded; nothing asserts timing.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include "test_paths.hpp"
#include "tether/ardupilot_standin/ardupilot_autopilot.hpp"
#include "tether/ardupilot/ardupilot_json.hpp"
#include "tether/process/child_process.hpp"

using namespace tether::adapters::ardupilot;
using Clock = std::chrono::steady_clock;

namespace {

std::array<double, 4> yaw_quaternion(double heading) {
  const double half = heading * std::numbers::pi / 360.0;
  return {std::cos(half), 0, 0, std::sin(half)};
}

SensorReading reading(double t_s, double depth_m = 0, double heading = 0) {
  SensorReading r;
  r.timestamp_s = t_s;
  r.position_m = Vec3(0, 0, depth_m);
  r.quaternion = yaw_quaternion(heading);
  r.accel_body_m_s2 = Vec3(0, 0, -9.81);
  r.fields = required_fields;
  return r;
}

std::vector<std::uint16_t> run_law(ControlLaw& law, const SensorReading* r, std::size_t channels = 16) {
  std::vector<std::uint16_t> pwm(channels, 0);
  law.outputs(r, 0, pwm);
  return pwm;
}

// 1-D heave of a BlueROV2-like hull: 11.5 kg plus ~8 kg of added mass, a net buoyancy (N, up),
// linear and quadratic drag, motors 5 and 6 giving 40 N each at full command (positive down)
// through a first-order lag of 50 ms. Returns the depth each 1/400 s for `seconds`.
std::vector<double> dive(SubHoldLaw& law, double seconds, double buoyancy_up_n = 1.0) {
  constexpr double dt = 1.0 / 400.0, mass_kg = 19.5, lag_s = 0.05;
  constexpr double linear_drag = 5.0, quadratic_drag = 20.0, thrust_n = 40.0;
  double depth = 0, speed = 0, force = 0;
  std::vector<double> depths;
  for (double t = 0; t < seconds; t += dt) {
    SensorReading r = reading(t, depth);
    r.velocity_m_s = Vec3(0, 0, speed);
    const auto pwm = run_law(law, &r);
    const double command_n = thrust_n * ((pwm[4] - 1500) + (pwm[5] - 1500)) / 400.0;
    force += (command_n - force) * dt / lag_s;
    const double drag = linear_drag * speed + quadratic_drag * speed * std::abs(speed);
    speed += (force - buoyancy_up_n - drag) / mass_kg * dt;
    depth += speed * dt;
    depths.push_back(depth);
  }
  return depths;
}

}  // namespace

TEST_CASE("ardupilot autopilot: the vectored frame's table gives each motor ArduSub's sign") {
  auto pwm_of = [](Demand d) {
    std::array<std::uint16_t, vectored_motors> p{};
    const auto out = mix_vectored(d);
    for (std::size_t i = 0; i < p.size(); ++i) p[i] = output_to_pwm(out[i]);
    return p;
  };
  using P = std::array<std::uint16_t, vectored_motors>;
  CHECK(pwm_of({.forward = 1}) == P{1100, 1100, 1900, 1900, 1500, 1500});
  CHECK(pwm_of({.lateral = 1}) == P{1900, 1100, 1900, 1100, 1500, 1500});
  CHECK(pwm_of({.yaw = 1}) == P{1900, 1100, 1100, 1900, 1500, 1500});
  CHECK(pwm_of({.throttle = 1}) == P{1500, 1500, 1500, 1500, 1100, 1100});  // up: 5 and 6 pull up
  CHECK(pwm_of({.throttle = -0.5}) == P{1500, 1500, 1500, 1500, 1700, 1700});
  CHECK(pwm_of({.roll = 1}) == P{1500, 1500, 1500, 1500, 1900, 1100});
  // over full command each motor is clipped on its own (ArduSub's vectored frame), not the
  // group scaled: forward 1 and lateral 0.5 give motors -0.5, -1.5 -> -1, 1.5 -> 1, 0.5
  CHECK(pwm_of({.forward = 1, .yaw = 1}) == P{1500, 1100, 1500, 1900, 1500, 1500});
  CHECK(pwm_of({.forward = 1, .lateral = 0.5}) == P{1300, 1100, 1900, 1700, 1500, 1500});
  CHECK(output_to_pwm(2.0) == 1900);
  CHECK(output_to_pwm(-7.0) == 1100);
  CHECK(output_to_pwm(std::nan("")) == 1500);
}

TEST_CASE("ardupilot autopilot: disarmed, every channel is 1500 whatever the mode and sticks") {
  for (const std::uint32_t mode : {sub_mode_manual, sub_mode_stabilize, sub_mode_alt_hold, sub_mode_guided}) {
    Autopilot ap(Airframe::vectored);
    SubHoldLaw law(ap);
    REQUIRE(ap.set_mode(mode) != Autopilot::ModeChange::refused);
    ap.set_pilot({1000, -1000, 1000, 1000}, Clock::now());
    ap.set_depth_target(5);
    const SensorReading r = reading(1.0, 0.5, 30);
    CHECK(run_law(law, &r, 32) == std::vector<std::uint16_t>(32, 1500));
    CHECK(run_law(law, nullptr, 16) == std::vector<std::uint16_t>(16, 1500));
  }
  Autopilot rover(Airframe::rover);
  RoverLaw rover_law(rover);
  rover.set_pilot({1000, 0, 500, 0}, Clock::now());
  CHECK(run_law(rover_law, nullptr) == std::vector<std::uint16_t>(16, 1500));
}

TEST_CASE("ardupilot autopilot: modes start in MANUAL disarmed and only the flown ones are taken") {
  Autopilot sub(Airframe::vectored);
  CHECK(sub.mode() == 19);
  CHECK_FALSE(sub.armed());
  CHECK(sub.set_mode(2) == Autopilot::ModeChange::changed);
  CHECK(sub.set_mode(2) == Autopilot::ModeChange::unchanged);
  CHECK(sub.set_mode(16) == Autopilot::ModeChange::refused);  // POSHOLD: not in this stand-in
  CHECK(sub.set_mode(12345) == Autopilot::ModeChange::refused);
  CHECK(sub.mode() == 2);
  CHECK(sub.set_armed(true));
  CHECK_FALSE(sub.set_armed(true));
  Autopilot rover(Airframe::rover);
  CHECK(rover.mode() == 0);
  CHECK(rover.set_mode(4) == Autopilot::ModeChange::changed);
  CHECK(rover.set_mode(2) == Autopilot::ModeChange::refused);
}

TEST_CASE("ardupilot autopilot: MANUAL mixes the pilot's sticks directly") {
  Autopilot ap(Airframe::vectored);
  SubHoldLaw law(ap);
  ap.set_armed(true);
  const SensorReading r = reading(1.0, 1.0, 45);
  // half forward at ArduSub's default joystick gain (JS_GAIN 0.5): a quarter of the channel
  ap.set_pilot({500, 0, 500, 0}, Clock::now());
  CHECK(run_law(law, &r) == std::vector<std::uint16_t>{1400, 1400, 1600, 1600, 1500, 1500, 1500, 1500, 1500, 1500, 1500,
                                                       1500, 1500, 1500, 1500, 1500});
  ap.set_pilot({0, 0, 1000, 0}, Clock::now());  // full up: half the channel
  auto pwm = run_law(law, &r);
  CHECK(pwm[4] == 1300);
  CHECK(pwm[5] == 1300);
  REQUIRE(ap.set_param("JS_GAIN", 1.0));
  pwm = run_law(law, &r);
  CHECK(pwm[4] == 1100);
  CHECK(pwm[5] == 1100);
  // sticks older than RC_OVERRIDE_TIME (3 s of simulated time, the readings') lapse, and
  // SITL's receiver is read: forward 0.75, full left, full down (SITL_State::init's RC values)
  ap.set_pilot({0, 0, 500, 0}, sim_clock(r.timestamp_s) - pilot_timeout - std::chrono::seconds(1));
  pwm = run_law(law, &r);
  CHECK(law.last_demand().forward == doctest::Approx(0.75));
  CHECK(law.last_demand().lateral == doctest::Approx(-1.0));
  CHECK(law.last_demand().throttle == doctest::Approx(-1.0));
  CHECK(pwm[4] == 1900);  // down
  // RC_OVERRIDE_TIME -1: the overrides never lapse
  REQUIRE(ap.set_param("RC_OVERRIDE_TIME", -1));
  run_law(law, &r);
  CHECK(law.last_demand().throttle == doctest::Approx(0.0));
  // and with none ever given, ArduSub's neutral overrides of its boot lapse 3 s in
  Autopilot fresh(Airframe::vectored);
  SubHoldLaw fresh_law(fresh);
  fresh.set_armed(true);
  SensorReading early = reading(2.9, 0, 0);
  run_law(fresh_law, &early);
  CHECK(fresh_law.last_demand().throttle == doctest::Approx(0.0));
  early.timestamp_s = 3.1;
  run_law(fresh_law, &early);
  CHECK(fresh_law.last_demand().throttle == doctest::Approx(-1.0));
}

TEST_CASE("ardupilot autopilot: ALT_HOLD takes a BlueROV2-like hull to 2 m and holds it") {
  Autopilot ap(Airframe::vectored);
  SubHoldLaw law(ap);
  REQUIRE(ap.set_mode(sub_mode_alt_hold) == Autopilot::ModeChange::changed);
  REQUIRE(ap.set_armed(true));
  REQUIRE(ap.set_param("RC_OVERRIDE_TIME", -1));  // no ground station streams sticks here
  CHECK(ap.set_depth_target(2.0));                // after arming: commands given before are replaced by the depth then
  const std::vector<double> depths = dive(law, 40.0);
  CHECK(law.depth_target_m() == doctest::Approx(2.0));
  const double peak = *std::max_element(depths.begin(), depths.end());
  // settled: the last time it was more than 5 cm away
  std::size_t last_out = 0;
  for (std::size_t i = 0; i < depths.size(); ++i)
    if (std::abs(depths[i] - 2.0) > 0.05) last_out = i;
  const double settle_s = static_cast<double>(last_out + 1) / 400.0;
  MESSAGE("depth 0 -> 2 m: within 5 cm from " << settle_s << " s, peak " << peak << " m, at 20 s " << depths[8000]
                                              << " m, at 40 s " << depths.back() << " m");
  CHECK(settle_s < 20.0);
  CHECK(peak < 2.2);
  CHECK(depths.back() == doctest::Approx(2.0).epsilon(0.01));

  // a hull 3 N light or 3 N heavy gets there too: the integral takes the difference
  for (const double buoyancy_n : {3.0, -3.0}) {
    CAPTURE(buoyancy_n);
    SubHoldLaw other(ap);
    ap.set_depth_target(2.0);
    const std::vector<double> d = dive(other, 40.0, buoyancy_n);
    CHECK(*std::max_element(d.begin(), d.end()) < 2.2);
    CHECK(d[8000] == doctest::Approx(2.0).epsilon(0.025));
    CHECK(d.back() == doctest::Approx(2.0).epsilon(0.01));
  }

  // the throttle stick off centre moves the depth; released, the new depth is held
  SubHoldLaw again(ap);
  SensorReading r = reading(99.0, 0.0);  // its boot: the depth zero
  run_law(again, &r);
  ap.set_depth_target(2.0);
  ap.set_pilot({0, 0, 1000, 0}, Clock::now());
  r = reading(100.0, 2.0);
  auto pwm = run_law(again, &r);
  CHECK(pwm[4] < 1500);  // climbing
  CHECK(again.depth_target_m() == doctest::Approx(2.0));
}

TEST_CASE("ardupilot autopilot: a depth target given before the hold mode is replaced by the depth then") {
  Autopilot ap(Airframe::vectored);
  SubHoldLaw law(ap);
  ap.set_armed(true);
  SensorReading r = reading(0.5, 0.0, 0);  // the first reading: the depth zero
  run_law(law, &r);
  CHECK_FALSE(ap.set_depth_target(3.0));  // in MANUAL: ignored, as ArduSub does
  REQUIRE(ap.set_mode(sub_mode_guided) == Autopilot::ModeChange::changed);
  r = reading(1.0, 0.7, 0);
  run_law(law, &r);
  CHECK(law.depth_target_m() == doctest::Approx(0.7));
  ap.set_depth_target(1.5);
  r.timestamp_s = 1.01;
  run_law(law, &r);
  CHECK(law.depth_target_m() == doctest::Approx(1.5));
  // a disarm and an arm start a new epoch: the depth then is the target again
  ap.set_armed(false);
  ap.set_armed(true);
  r.timestamp_s = 1.02;
  run_law(law, &r);
  CHECK(law.depth_target_m() == doctest::Approx(0.7));
}

TEST_CASE("ardupilot autopilot: heading hold turns back toward the target from either side") {
  for (const double yawed : {+10.0, -10.0}) {
    CAPTURE(yawed);
    for (const std::uint32_t mode : {sub_mode_stabilize, sub_mode_alt_hold}) {
      Autopilot ap(Airframe::vectored);
      SubHoldLaw law(ap);
      REQUIRE(ap.set_mode(mode) == Autopilot::ModeChange::changed);
      REQUIRE(ap.set_armed(true));
      SensorReading r = reading(1.0, 0, 0);
      run_law(law, &r);  // the heading on arming (north) is the target
      CHECK(law.heading_target_deg() == doctest::Approx(0.0));
      r = reading(1.01, 0, yawed);
      const auto pwm = run_law(law, &r);
      // yawed right (+10°): yaw left, so motors 1 and 4 below 1500, 2 and 3 above; and mirrored
      const double sign = yawed > 0 ? -1.0 : 1.0;
      CHECK(law.last_demand().yaw * sign > 0);
      CHECK((pwm[0] - 1500) * sign > 0);
      CHECK((pwm[1] - 1500) * sign < 0);
      CHECK((pwm[2] - 1500) * sign < 0);
      CHECK((pwm[3] - 1500) * sign > 0);
    }
  }
  // a heading command across north: from 350° to 10° is 20° to the right
  Autopilot ap(Airframe::vectored);
  SubHoldLaw law(ap);
  ap.set_mode(sub_mode_alt_hold);
  ap.set_armed(true);
  CHECK(ap.attitude_target(10, true));  // ALT_HOLD's kept target (throttle ignored)
  SensorReading r = reading(1.0, 0, 350);
  run_law(law, &r);
  CHECK(ap.attitude_target(370, true));  // the same, folded
  r.timestamp_s = 1.01;
  run_law(law, &r);
  CHECK(law.heading_target_deg() == doctest::Approx(10.0));
  CHECK(law.last_demand().yaw > 0);
  CHECK(heading_error_deg(10, 350) == doctest::Approx(20.0));
  CHECK(heading_deg(yaw_quaternion(-90)) == doctest::Approx(270.0));
}

TEST_CASE("ardupilot autopilot: ALT_HOLD flies a kept heading for 5 s, then turns back to its entry heading") {
  Autopilot ap(Airframe::vectored);
  SubHoldLaw law(ap);
  REQUIRE(ap.set_param("RC_OVERRIDE_TIME", -1).has_value());  // the sticks below never lapse
  REQUIRE(ap.set_mode(sub_mode_alt_hold) == Autopilot::ModeChange::changed);
  REQUIRE(ap.set_armed(true));
  SensorReading r = reading(1.0, 0, 0);  // entered and armed heading north
  run_law(law, &r);
  CHECK(law.heading_target_deg() == doctest::Approx(0.0));
  // a target kept in MANUAL is not flown there, but it is kept (ArduSub stores it in any mode)
  REQUIRE(ap.set_mode(sub_mode_manual) == Autopilot::ModeChange::changed);
  CHECK_FALSE(ap.attitude_target(45, true));
  CHECK(ap.snapshot(ap.now()).kept_attitude);
  REQUIRE(ap.set_mode(sub_mode_alt_hold) == Autopilot::ModeChange::changed);
  r = reading(1.01, 0, 0);
  run_law(law, &r);
  CHECK(law.heading_target_deg() == doctest::Approx(45.0));  // 0.01 s old: flown
  // a new one at t = 1.01 s; the vehicle has turned to it by t = 5 s
  CHECK(ap.attitude_target(90, true));
  r = reading(6.0, 0, 90);
  run_law(law, &r);
  CHECK(law.heading_target_deg() == doctest::Approx(90.0));  // 4.99 s old
  // the yaw stick is ignored while a target is flown
  PilotInput yaw_right;
  yaw_right.r = 800;
  ap.set_pilot(yaw_right, ap.now());
  r = reading(6.005, 0, 90);
  run_law(law, &r);
  CHECK(law.heading_target_deg() == doctest::Approx(90.0));
  CHECK(std::abs(law.last_demand().yaw) < 0.05);
  ap.set_pilot(PilotInput{}, ap.now());
  // 5 s after it came the target lapses: back to the heading ALT_HOLD was entered with
  r = reading(6.02, 0, 90);
  run_law(law, &r);
  CHECK(law.heading_target_deg() == doctest::Approx(0.0));
  CHECK(law.last_demand().yaw < 0);  // at 90, turning left toward north
  // sent again, it is flown again; re-sent within 5 s it never lapses
  for (double t = 6.5; t < 20.0; t += 1.0) {
    r = reading(t, 0, 90);
    run_law(law, &r);  // the reading first: the target takes the autopilot's time of then
    CHECK(ap.attitude_target(90, true));
    r = reading(t + 0.99, 0, 90);
    run_law(law, &r);
    CHECK(law.heading_target_deg() == doctest::Approx(90.0));
  }
  // with no target, the yaw stick sets the heading that is held after it
  r = reading(30.0, 0, 90);
  run_law(law, &r);
  CHECK(law.heading_target_deg() == doctest::Approx(0.0));
  ap.set_pilot(yaw_right, ap.now());
  r = reading(30.01, 0, 120);
  run_law(law, &r);
  CHECK(law.last_demand().yaw > 0);
  ap.set_pilot(PilotInput{}, ap.now());
  r = reading(30.02, 0, 125);
  run_law(law, &r);
  CHECK(law.heading_target_deg() == doctest::Approx(120.0));
}

TEST_CASE("ardupilot autopilot: the rover law skid-steers on channels 1 and 3 in MANUAL and stops in HOLD") {
  Autopilot ap(Airframe::rover);
  RoverLaw law(ap);
  ap.set_armed(true);
  const SensorReading r = reading(1.0);
  // ArduRover: z the throttle, y the steering (x and r do nothing)
  ap.set_pilot({1000, 0, 500, 1000}, Clock::now());
  auto pwm = run_law(law, &r);
  CHECK(pwm[0] == 1700);
  CHECK(pwm[2] == 1700);
  CHECK(pwm[1] == 1500);
  ap.set_pilot({0, 500, 0, 0}, Clock::now());  // turn right on the spot
  pwm = run_law(law, &r);
  CHECK(pwm[0] == 1700);
  CHECK(pwm[2] == 1300);
  ap.set_pilot({0, 1000, 1000, 0}, Clock::now());  // over full: scaled, the right side stops
  pwm = run_law(law, &r);
  CHECK(pwm[0] == 1900);
  CHECK(pwm[2] == 1500);
  // no pilot input for RC_OVERRIDE_TIME: SITL's receiver, whose throttle sits at 1000 µs,
  // full reverse on a rover (SITL_State::init)
  ap.set_pilot({0, 0, 0, 0}, sim_clock(r.timestamp_s) - pilot_timeout - std::chrono::seconds(1));
  pwm = run_law(law, &r);
  CHECK(pwm[0] == 1100);
  CHECK(pwm[2] == 1100);
  REQUIRE(ap.set_mode(rover_mode_hold) == Autopilot::ModeChange::changed);
  CHECK(run_law(law, &r) == std::vector<std::uint16_t>(16, 1500));
}

TEST_CASE("ardupilot autopilot: parameters are set by name within their ranges") {
  Autopilot ap(Airframe::vectored);
  const auto i = ap.set_param("PSC_POSZ_P", 1.5);
  REQUIRE(i.has_value());
  CHECK(std::string(hold_params()[*i].name) == "PSC_POSZ_P");
  CHECK(ap.param(*i) == doctest::Approx(1.5));
  CHECK(ap.gains().depth_p_per_s == doctest::Approx(1.5));
  const auto speed = ap.set_param("PILOT_SPEED", 30);  // cm/s on the wire
  REQUIRE(speed.has_value());
  CHECK(ap.gains().vertical_speed_max_m_s == doctest::Approx(0.3));
  CHECK(ap.param(*speed) == doctest::Approx(30));
  CHECK_FALSE(ap.set_param("PSC_POSZ_P", -1).has_value());
  CHECK_FALSE(ap.set_param("PSC_POSZ_P", std::nan("")).has_value());
  CHECK_FALSE(ap.set_param("NO_SUCH_PARAM", 1).has_value());
  CHECK(ap.gains().depth_p_per_s == doctest::Approx(1.5));
}

// ---- the program --------------------------------------------------------------------------

namespace {

// a physics end on 127.0.0.1 that answers every servo packet with a valid reply
class EchoPhysics {
 public:
  EchoPhysics() {
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
  ~EchoPhysics() { ::close(fd_); }
  std::uint16_t port() const { return port_; }

  // the next servo packet within `timeout_ms`, answered; nothing when none came
  std::optional<ServoPacket> answer_one(int timeout_ms) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return std::nullopt;
    std::uint8_t bytes[256];
    sockaddr_in from{};
    socklen_t len = sizeof from;
    const ssize_t n = ::recvfrom(fd_, bytes, sizeof bytes, 0, reinterpret_cast<sockaddr*>(&from), &len);
    ServoPacket packet;
    if (n <= 0 || parse_servo_packet(bytes, static_cast<std::size_t>(n), packet) != ServoReject::none)
      return std::nullopt;
    ReplyState s;
    s.time_ns = static_cast<std::int64_t>(packet.frame_count + 1) * 1'000'000'000 / 1200;
    s.accel_body_m_s2 = {0, 0, -9.81};
    ReplyBuffer out;
    REQUIRE(encode_reply(s, out) == EncodeError::none);
    ::sendto(fd_, out.bytes.data(), out.size, 0, reinterpret_cast<const sockaddr*>(&from), len);
    return packet;
  }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

std::string read_all(int fd, int timeout_ms) {
  std::string text;
  const auto until = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (Clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char buf[512];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  return text;
}

tether::adapters::LaunchSpec standin_spec(std::uint16_t physics_port, std::vector<std::string> extra) {
  tether::adapters::LaunchSpec spec;
  spec.argv = {TETHER_BINARY_DIR + "/tether-ardupilot", "--physics", "127.0.0.1:" + std::to_string(physics_port),
               "--mavlink-port", "0"};
  spec.argv.insert(spec.argv.end(), extra.begin(), extra.end());
  return spec;
}

}  // namespace

TEST_CASE("ardupilot autopilot: tether-ardupilot runs frames against a physics until SIGTERM and exits 0") {
  EchoPhysics physics;
  tether::adapters::ChildProcess child(standin_spec(physics.port(), {"--no-wait-for-gcs"}));
  std::uint32_t first = 0, last = 0;
  int answered = 0;
  for (int i = 0; i < 400; ++i) {
    const auto p = physics.answer_one(10'000);
    REQUIRE(p.has_value());
    if (answered++ == 0) first = p->frame_count;
    last = p->frame_count;
    CHECK(p->frame_rate_hz == 1200);
    CHECK(p->pwm_us[0] == 1500);  // disarmed
  }
  CHECK(first == 0);
  CHECK(last >= 399);
  REQUIRE(::kill(child.pid(), SIGTERM) == 0);
  const auto status = child.wait_for(std::chrono::seconds(10));
  REQUIRE(status.has_value());
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 0);
  const std::string err = read_all(child.stderr_fd(), 1000);
  CHECK(err.find("Serial port 0 on TCP port ") != std::string::npos);
  CHECK(err.find("Waiting for connection") == std::string::npos);
  CHECK(err.find("tether-ardupilot: ") != std::string::npos);
  CHECK(err.find(" frames, ") != std::string::npos);
}

TEST_CASE("ardupilot autopilot: tether-ardupilot waits for a ground station, then runs for --duration-s") {
  EchoPhysics physics;
  tether::adapters::ChildProcess child(standin_spec(physics.port(), {"--duration-s", "0.25", "--channels", "32"}));
  // it says where it listens and waits there: no packet comes meanwhile
  std::string err;
  const auto until = Clock::now() + std::chrono::seconds(10);
  while (err.find("Waiting for connection") == std::string::npos && Clock::now() < until)
    err += read_all(child.stderr_fd(), 100);
  REQUIRE(err.find("Waiting for connection") != std::string::npos);
  const auto at = err.find("Serial port 0 on TCP port ");
  REQUIRE(at != std::string::npos);
  const int mavlink_port = std::stoi(err.substr(at + 26));
  CHECK_FALSE(physics.answer_one(300).has_value());
  // a ground station connects: packets start, and it ends by itself after 0.25 s simulated
  const int gcs = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(mavlink_port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(gcs, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  int answered = 0;
  while (physics.answer_one(answered == 0 ? 10'000 : 1'000)) ++answered;
  CHECK(answered >= 300);
  CHECK(answered <= 302);
  const auto status = child.wait_for(std::chrono::seconds(10));
  REQUIRE(status.has_value());
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 0);
  ::close(gcs);
}

TEST_CASE("ardupilot autopilot: tether-ardupilot refuses a bad number and says what it expects") {
  for (const char* bad : {"-1", "0", "abc", "nan"}) {
    INFO(bad);
    tether::adapters::ChildProcess child(standin_spec(9, {"--duration-s", bad}));
    const auto status = child.wait_for(std::chrono::seconds(10));
    REQUIRE(status.has_value());
    CHECK(WIFEXITED(*status));
    CHECK(WEXITSTATUS(*status) != 0);
    const std::string err = read_all(child.stderr_fd(), 1000);
    CHECK(err.find(std::string("--duration-s: expects a number > 0, not \"") + bad + "\"") != std::string::npos);
    CHECK(err.size() < 300);  // not CLI11's bound with all 309 digits
  }
}
