// SPDX-License-Identifier: Apache-2.0
// The autopilot inside the stand-in `tether-ardupilot` (docs/ardupilot.md, "The stand-in
// autopilot"): a small state that a ground station changes over MAVLink (armed, mode, pilot
// input, depth and heading targets, a few gains) and the control laws that turn it into servo
// outputs each ArduPilot frame, as ArduSub (and minimally ArduRover) would be seen from outside.
// It is a stand-in for tests and CI where ArduPilot cannot be built, not ArduPilot: the control
// is a plain cascaded P/PI, written here from the protocol's and the frame's published facts.
//
// Two threads meet here: the MAVLink server writes the state, the UDP lock-step thread runs the
// law. One mutex guards the state; the law takes one snapshot per frame (a copy of a few dozen
// bytes), so neither side ever waits for long.
#pragma once

#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>

#include "tether/ardupilot_standin/ardupilot_standin.hpp"
#include "tether/mavlink/mavlink_messages.hpp"

namespace tether::adapters::ardupilot {

/// The airframes the stand-in flies: ArduSub's BlueROV2 "vectored" frame, or a skid-steered rover.
enum class Airframe : std::uint8_t { vectored, rover };

/// ArduSub's mode numbers (SUB_MODE in ardupilotmega.xml) and ArduRover's that the stand-in flies.
inline constexpr std::uint32_t sub_mode_stabilize = 0;
inline constexpr std::uint32_t sub_mode_alt_hold = 2;
inline constexpr std::uint32_t sub_mode_guided = 4;
inline constexpr std::uint32_t sub_mode_manual = 19;
inline constexpr std::uint32_t rover_mode_manual = 0;
inline constexpr std::uint32_t rover_mode_hold = 4;

/// MANUAL_CONTROL as ArduSub reads it: x forward, y right, r yaw right in -1000..1000; z the
/// throttle in 0..1000 with 500 neutral (above 500 up). Default: sticks centred.
struct PilotInput {
  std::int16_t x = 0;
  std::int16_t y = 0;
  std::int16_t z = 500;
  std::int16_t r = 0;
};
/// Without a MANUAL_CONTROL for this long (RC_OVERRIDE_TIME, default 3 s: RC_Channels_VarInfo.h)
/// ArduPilot's RC overrides lapse and it reads SITL's simulated receiver, whose channels sit at
/// SITL_State::init's values: RC3 (throttle) 1000, RC5 (forward) 1800, RC6 (lateral) 1000.
/// ArduSub's own pilot-input failsafe is compiled out in SITL (failsafe.cpp).
inline constexpr std::chrono::milliseconds pilot_timeout{3000};
/// SITL's receiver in MANUAL_CONTROL's terms at full gain: ArduSub forward 0.75, lateral full
/// left, throttle full down; ArduRover steering centred, throttle full reverse.
inline constexpr PilotInput sub_receiver{750, -1000, 0, 0};
inline constexpr PilotInput rover_receiver{0, 0, -1000, 0};
/// Simulated seconds after the first reply before the stand-in's "estimator" is healthy and
/// arming is allowed (ArduSub refuses with "PreArm: AHRS not healthy" until its EKF is:
/// AP_Arming_Sub::ins_checks); `--startup-s` changes it.
inline constexpr double default_startup_s = 5.0;
inline constexpr const char* text_prearm_ahrs = "PreArm: AHRS not healthy";

/// The autopilot's clock as SITL's is: simulated time, the replies' timestamps, as a
/// time_point (so that the pilot timeout holds in simulated seconds, at any speed).
inline std::chrono::steady_clock::time_point sim_clock(double timestamp_s) {
  return std::chrono::steady_clock::time_point(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(std::isfinite(timestamp_s) ? timestamp_s : 0.0)));
}
/// Stick travel (of 1000) around centre that counts as centred.
inline constexpr int pilot_dead_zone = 50;

/// The gains of the holds, as named parameters (PARAM_SET) and with their defaults. Chosen for a
/// ~11.5 kg, near-neutrally-buoyant BlueROV2-like vehicle whose thrusters give ~±40 N at full
/// command: in the test's heave model a dive from 0 to 2 m is within 5 cm after ~6 s and peaks
/// 4 cm past the target (docs/ardupilot.md).
struct HoldGains {
  double depth_p_per_s = 0.8;           // PSC_POSZ_P: depth error (m) -> vertical speed target (m/s)
  double vertical_speed_max_m_s = 0.5;  // PILOT_SPEED (cm/s on the wire): hold and pilot climb/descent limit
  double vertical_speed_p = 0.5;        // PSC_VELZ_P: speed error (m/s) -> throttle (-1..1)
  double vertical_speed_i = 0.1;        // PSC_VELZ_I: integral of the speed error -> throttle
  double vertical_speed_imax = 0.3;     // PSC_VELZ_IMAX: |the integral's share of throttle| at most
  double heading_p_per_s = 1.0;         // ATC_ANG_YAW_P: heading error (rad) -> yaw rate target (rad/s)
  double yaw_rate_max_rad_s = 1.0;      // ATC_RATE_Y_MAX (deg/s on the wire): yaw rate target limit
  double yaw_rate_p = 0.15;             // ATC_RAT_YAW_P: yaw rate error (rad/s) -> yaw (-1..1)
  double roll_p = 0.5;                  // ATC_ANG_RLL_P: roll (rad) -> roll demand, levelling
  double roll_rate_d = 0.1;             // ATC_RAT_RLL_P: roll rate (rad/s) -> roll demand, damping
  double override_time_s = 3.0;         // RC_OVERRIDE_TIME: MANUAL_CONTROL lapses after this (-1 never, 0 ignored)
  double js_gain = 0.5;                 // JS_GAIN: ArduSub's joystick gain, full stick = this share of a channel
};

/// One named parameter: its name on the wire, the member it sets, the factor from the wire's
/// unit to the member's, and its allowed range (in the wire's unit).
struct ParamInfo {
  const char* name;
  double HoldGains::*member;
  double wire_per_unit;
  double min;
  double max;
};
/// The parameters PARAM_SET can write, in index order.
std::span<const ParamInfo> hold_params();

/// What the law needs of the state for one frame.
struct AutopilotSnapshot {
  bool armed = false;
  std::uint32_t mode = 0;
  PilotInput pilot;           // the receiver's (sub_receiver, rover_receiver) once the overrides lapsed
  double stick_gain = 1.0;    // what a full stick of `pilot` is of a channel: JS_GAIN for overrides
  bool guided_angle = false;  // GUIDED flying an attitude target (depth then by climb rate 0)
  // bumps on every mode change, arming and disarming: the law then takes the current depth and
  // heading as its targets (as ArduSub does on entering a hold mode)
  std::uint32_t epoch = 0;
  std::uint32_t depth_seq = 0;    // bumps on every depth target command
  std::uint32_t depth_epoch = 0;  // the epoch the latest depth command was given in
  double depth_target_m = 0;
  std::uint32_t heading_seq = 0;
  std::uint32_t heading_epoch = 0;
  double heading_target_deg = 0;
  // ALT_HOLD's attitude target (SET_ATTITUDE_TARGET with throttle ignored), kept whatever the
  // mode, as ArduSub's set_attitude_target_no_gps: its heading and the autopilot time it came
  bool kept_attitude = false;
  double kept_heading_deg = 0;
  double kept_at_s = 0;
  HoldGains gains;
};

/// How long ALT_HOLD flies a kept attitude target after it came (ArduSub mode_althold.cpp,
/// run_pre: `tnow - set_attitude_target_no_gps.last_message_ms < 5000`).
inline constexpr double alt_hold_attitude_timeout_s = 5.0;

/// What the law last flew on, for the MAVLink telemetry and for tests.
struct AutopilotTelemetry {
  bool have_reading = false;
  SensorReading reading;
  double depth_target_m = 0;
  double heading_target_deg = 0;
};

/// The shared state. Every member function locks; all are thread-safe.
class Autopilot {
 public:
  /// Starts disarmed in MANUAL (ArduSub 19, ArduRover 0) with the default gains.
  explicit Autopilot(Airframe airframe);

  Airframe airframe() const { return airframe_; }
  /// The vehicle whose mode numbers apply (sub for vectored, rover for rover).
  mavlink::Vehicle vehicle() const;

  /// Arms or disarms; true when that changed the state.
  bool set_armed(bool armed);
  bool armed() const;

  enum class ModeChange : std::uint8_t { changed, unchanged, refused };
  /// Changes the mode to a custom_mode number. `refused`: not a mode this stand-in flies
  /// (sub: MANUAL, STABILIZE, ALT_HOLD, GUIDED; rover: MANUAL, HOLD), the state is unchanged.
  ModeChange set_mode(std::uint32_t custom_mode);
  std::uint32_t mode() const;
  /// Whether the stand-in flies this mode number on its airframe.
  bool flies(std::uint32_t custom_mode) const;

  /// A MANUAL_CONTROL's sticks, received at `now` (steady clock).
  void set_pilot(const PilotInput& pilot, std::chrono::steady_clock::time_point now);
  /// The depth to hold (m below the depth zero, positive down), from now on in the current
  /// mode. As ArduSub's SET_POSITION_TARGET_GLOBAL_INT: taken in ALT_HOLD and GUIDED only;
  /// false (ignored) in any other mode.
  bool set_depth_target(double depth_m);
  /// The heading to hold (deg, 0 north, clockwise), from now on in the current mode (GUIDED's
  /// angle target; STABILIZE takes it too, for tests).
  void set_heading_target(double heading_deg);
  /// A SET_ATTITUDE_TARGET's heading, as ArduSub takes it (GCS_MAVLink_Sub.cpp): with
  /// throttle ignored (`throttle_ignored`, type_mask bit 6) it is kept, whatever the mode,
  /// with the autopilot's time (sim_time_s), and ALT_HOLD flies it for
  /// alt_hold_attitude_timeout_s after it came, then the heading of the mode's entry or of the
  /// pilot's last yaw (mode_althold.cpp, last_pilot_heading); otherwise GUIDED's angle
  /// control, acted on only in GUIDED, whose first target resets the depth target to the depth
  /// then (GUIDED's own 1 s timeout levels roll and pitch and keeps the heading: nothing the
  /// stand-in flies changes). false when the current mode does not fly it now.
  bool attitude_target(double heading_deg, bool throttle_ignored);
  /// Whether arming is allowed: the start-up has passed by the latest reading's time.
  bool ready() const { return sim_time_s() >= startup_s_; }
  /// The latest published reading's timestamp (0 before the first): the autopilot's clock.
  double sim_time_s() const;
  void set_startup_s(double s) { startup_s_ = s; }
  double startup_s() const { return startup_s_; }

  /// Sets the parameter `name` (a value in its wire unit). Returns its index in hold_params()
  /// and stores the value it now has, or nothing for an unknown name or a value out of range
  /// or not finite.
  std::optional<std::size_t> set_param(std::string_view name, double value);
  /// The value of parameter `index` in its wire unit.
  double param(std::size_t index) const;
  HoldGains gains() const;

  /// The state for one frame of the law, the pilot judged fresh or not at `now`.
  AutopilotSnapshot snapshot(std::chrono::steady_clock::time_point now) const;
  /// sim_clock() of the latest reading published (0 before the first): when MAVLink input
  /// arrives, by the autopilot's clock.
  std::chrono::steady_clock::time_point now() const;

  /// The law's latest reading and targets (called by the law each frame).
  void publish(const SensorReading* reading, double depth_target_m, double heading_target_deg);
  AutopilotTelemetry telemetry() const;

 private:
  const Airframe airframe_;
  mutable std::mutex mutex_;
  AutopilotSnapshot state_;
  std::chrono::steady_clock::time_point pilot_at_{};
  bool have_pilot_ = false;
  double startup_s_ = default_startup_s;
  AutopilotTelemetry telemetry_;
};

// ---- the vectored frame ---------------------------------------------------------------------

/// What the law asks of the hull, each in -1..1 of full authority (body frame): forward, lateral
/// (right), throttle (up), yaw (nose right), roll (right side down).
struct Demand {
  double forward = 0;
  double lateral = 0;
  double throttle = 0;
  double yaw = 0;
  double roll = 0;
};

/// The factors of ArduSub's vectored frame (SUB_FRAME_VECTORED), per motor 1..6, in the order
/// roll, pitch, yaw, throttle, forward, lateral. Motors 1-4 are horizontal at 45°: 1 front
/// right, 2 front left, 3 rear right, 4 rear left; 5 and 6 vertical (5 right, 6 left).
///
///   motor  roll  pitch  yaw  throttle  forward  lateral
///     1      0     0    +1      0        -1       +1
///     2      0     0    -1      0        -1       -1
///     3      0     0    -1      0        +1       +1
///     4      0     0    +1      0        +1       -1
///     5     +1     0     0     -1         0        0
///     6     -1     0     0     -1         0        0
///
/// So a positive command pushes motor 1 along (-1, +1, 0)/√2 in body FRD, motor 2 along
/// (-1, -1, 0)/√2, motor 3 along (+1, +1, 0)/√2, motor 4 along (+1, -1, 0)/√2, and motors 5 and
/// 6 down (+z): a physics model of the vehicle mounts its thrusters so.
inline constexpr std::size_t vectored_motors = 6;
inline constexpr std::array<std::array<double, 6>, vectored_motors> vectored_factors = {{
    {0, 0, +1, 0, -1, +1},
    {0, 0, -1, 0, -1, -1},
    {0, 0, -1, 0, +1, +1},
    {0, 0, +1, 0, +1, -1},
    {+1, 0, 0, -1, 0, 0},
    {-1, 0, 0, -1, 0, 0},
}};

/// Each motor's output in -1..1: the demands through the table, each motor clipped to -1..1
/// on its own, as ArduSub's vectored frame does (AP_Motors6DOF::output_armed_stabilizing_vectored:
/// no normalisation; only the vectored_6dof frame normalises). A saturated demand so bends the
/// push, as it does in ArduSub.
std::array<double, vectored_motors> mix_vectored(const Demand& demand);

/// A motor output in -1..1 as a pulse: 1500 ± 400 µs (1100..1900), clamped, rounded.
std::uint16_t output_to_pwm(double output);

/// Heading (deg, 0..360, 0 north, clockwise) of a body FRD -> NED quaternion [w, x, y, z].
double heading_deg(const std::array<double, 4>& q);
/// Roll (rad, right side down positive) of the same quaternion.
double roll_rad(const std::array<double, 4>& q);
/// a - b folded into -180..180 degrees.
double heading_error_deg(double a, double b);

/// ArduSub-like control of the vectored frame. Disarmed: every channel 1500 µs. MANUAL: the
/// pilot's sticks mixed directly. STABILIZE: the sticks plus heading hold while the yaw stick is
/// centred, and roll levelling. ALT_HOLD and GUIDED: STABILIZE plus depth hold (the throttle
/// stick, off centre, moves the depth at up to PILOT_SPEED and the target follows the vehicle).
/// ALT_HOLD's heading is a kept attitude target while it is fresh (the yaw stick ignored), else
/// the heading of the mode's entry or of the yaw stick's last use (Autopilot::attitude_target;
/// ArduSub's 250 ms settling after a yaw input is not modelled).
/// Channels 1-6 carry motors 1-6; any others stay at 1500.
class SubHoldLaw final : public ControlLaw {
 public:
  explicit SubHoldLaw(Autopilot& autopilot) : autopilot_(autopilot) {}
  void outputs(const SensorReading* last, std::uint32_t frame_count, std::span<std::uint16_t> pwm_us) override;

  /// The targets it holds now, and the demand of the last frame.
  double depth_target_m() const { return depth_target_m_; }
  double heading_target_deg() const { return heading_target_deg_; }
  const Demand& last_demand() const { return demand_; }

 private:
  void take_commands(const AutopilotSnapshot& s, double depth_m, double heading);
  double hold_depth(const AutopilotSnapshot& s, const SensorReading& r, double dt_s);
  double hold_heading(const AutopilotSnapshot& s, const SensorReading& r, double heading, bool sticks_ignored);
  bool alt_hold_target(const AutopilotSnapshot& s, double now_s);

  Autopilot& autopilot_;
  std::uint32_t epoch_ = ~0u;
  std::uint32_t depth_seq_ = 0;
  std::uint32_t heading_seq_ = 0;
  double depth_target_m_ = 0;
  double heading_target_deg_ = 0;
  double pilot_heading_deg_ = 0;  // ArduSub's last_pilot_heading: the mode's entry, the last yaw stick
  double speed_integral_ = 0;     // the integral's share of throttle
  bool have_time_ = false;
  double last_time_s_ = 0;
  bool have_boot_depth_ = false;
  double boot_depth_m_ = 0;  // the first reading's depth: the depth zero
  Demand demand_;
};

/// ArduRover-like skid steering: channel 1 the left side, channel 3 the right, each 1100..1900
/// µs with 1500 stop. MANUAL: throttle from MANUAL_CONTROL x, steering from r (right positive:
/// left side faster); disarmed, HOLD or any other mode: stop. Other channels stay at 1500.
class RoverLaw final : public ControlLaw {
 public:
  explicit RoverLaw(Autopilot& autopilot) : autopilot_(autopilot) {}
  void outputs(const SensorReading* last, std::uint32_t frame_count, std::span<std::uint16_t> pwm_us) override;

 private:
  Autopilot& autopilot_;
};

}  // namespace tether::adapters::ardupilot
