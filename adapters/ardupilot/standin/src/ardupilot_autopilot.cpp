// SPDX-License-Identifier: Apache-2.0
#include "tether/ardupilot_standin/ardupilot_autopilot.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace tether::adapters::ardupilot {

namespace {

constexpr double deg_per_rad = 180.0 / std::numbers::pi;
// the longest step a hold integrates over: a paused physics must not kick the integrator
constexpr double max_dt_s = 0.1;
// the share of yaw and roll the stabilised modes may use (the rest stays for translation)
constexpr double max_yaw_demand = 0.5;
constexpr double max_roll_demand = 0.3;

// names borrowed from ArduSub where one exists, in this stand-in's own meaning (hold_params())
constexpr ParamInfo params_table[] = {
    {"PSC_POSZ_P", &HoldGains::depth_p_per_s, 1, 0, 10},
    {"PILOT_SPEED", &HoldGains::vertical_speed_max_m_s, 100, 5, 500},  // cm/s
    {"PSC_VELZ_P", &HoldGains::vertical_speed_p, 1, 0, 10},
    {"PSC_VELZ_I", &HoldGains::vertical_speed_i, 1, 0, 10},
    {"PSC_VELZ_IMAX", &HoldGains::vertical_speed_imax, 1, 0, 1},
    {"ATC_ANG_YAW_P", &HoldGains::heading_p_per_s, 1, 0, 10},
    {"ATC_RATE_Y_MAX", &HoldGains::yaw_rate_max_rad_s, deg_per_rad, 1, 720},  // deg/s
    {"ATC_RAT_YAW_P", &HoldGains::yaw_rate_p, 1, 0, 10},
    {"ATC_ANG_RLL_P", &HoldGains::roll_p, 1, 0, 10},
    {"ATC_RAT_RLL_P", &HoldGains::roll_rate_d, 1, 0, 10},
    {"RC_OVERRIDE_TIME", &HoldGains::override_time_s, 1, -1, 120},
    {"JS_GAIN", &HoldGains::js_gain, 1, 0.25, 1},
};

double stick(std::int16_t v) { return std::clamp(static_cast<double>(v) / 1000.0, -1.0, 1.0); }
// z: 0..1000 with 500 neutral, as ArduSub's throttle
double throttle_stick(std::int16_t z) { return std::clamp((static_cast<double>(z) - 500.0) / 500.0, -1.0, 1.0); }
bool centred(std::int16_t v) { return std::abs(static_cast<int>(v)) <= pilot_dead_zone; }

// a heading into 0..360 degrees
double fold_degrees(double heading) {
  heading = std::fmod(heading, 360.0);
  return heading < 0 ? heading + 360.0 : heading;
}

void fill(std::span<std::uint16_t> pwm_us, std::uint16_t us) {
  for (std::uint16_t& p : pwm_us) p = us;
}

}  // namespace

std::span<const ParamInfo> hold_params() { return params_table; }

// ---- the shared state ---------------------------------------------------------------------

Autopilot::Autopilot(Airframe airframe) : airframe_(airframe) {
  state_.mode = airframe == Airframe::rover ? rover_mode_manual : sub_mode_manual;
  // ArduSub sets neutral overrides at boot (radio.cpp, Sub::init_rc_in); they lapse like any
  if (airframe == Airframe::vectored) {
    have_pilot_ = true;
    pilot_at_ = sim_clock(0);
  }
}

mavlink::Vehicle Autopilot::vehicle() const {
  return airframe_ == Airframe::rover ? mavlink::Vehicle::rover : mavlink::Vehicle::sub;
}

bool Autopilot::set_armed(bool armed) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (state_.armed == armed) return false;
  state_.armed = armed;
  ++state_.epoch;
  return true;
}

bool Autopilot::armed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_.armed;
}

bool Autopilot::flies(std::uint32_t custom_mode) const {
  if (airframe_ == Airframe::rover) return custom_mode == rover_mode_manual || custom_mode == rover_mode_hold;
  return custom_mode == sub_mode_manual || custom_mode == sub_mode_stabilize || custom_mode == sub_mode_alt_hold ||
         custom_mode == sub_mode_guided;
}

Autopilot::ModeChange Autopilot::set_mode(std::uint32_t custom_mode) {
  if (!flies(custom_mode)) return ModeChange::refused;
  std::lock_guard<std::mutex> lock(mutex_);
  // as ArduPilot: asking for the mode it is in changes nothing (the targets stay)
  if (state_.mode == custom_mode) return ModeChange::unchanged;
  state_.mode = custom_mode;
  state_.guided_angle = false;
  ++state_.epoch;
  return ModeChange::changed;
}

std::uint32_t Autopilot::mode() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_.mode;
}

void Autopilot::set_pilot(const PilotInput& pilot, std::chrono::steady_clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  state_.pilot = pilot;
  pilot_at_ = now;
  have_pilot_ = true;
}

bool Autopilot::set_depth_target(double depth_m) {
  if (!std::isfinite(depth_m)) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  if (airframe_ == Airframe::vectored && state_.mode != sub_mode_alt_hold && state_.mode != sub_mode_guided)
    return false;
  state_.depth_target_m = depth_m;
  state_.depth_epoch = state_.epoch;
  ++state_.depth_seq;
  return true;
}

bool Autopilot::attitude_target(double heading, bool throttle_ignored) {
  if (!std::isfinite(heading)) return false;
  const double now_s = sim_time_s();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (throttle_ignored) {
      // kept whatever the mode; ALT_HOLD reads it while it is fresh
      state_.kept_attitude = true;
      state_.kept_heading_deg = fold_degrees(heading);
      state_.kept_at_s = now_s;
      return state_.mode == sub_mode_alt_hold;
    }
    // GUIDED's angle control: only in GUIDED; its first target holds the depth of then
    if (state_.mode != sub_mode_guided) return false;
    if (!state_.guided_angle) {
      state_.guided_angle = true;
      state_.depth_target_m = std::nan("");  // the law takes the depth it is at
      state_.depth_epoch = state_.epoch;
      ++state_.depth_seq;
    }
  }
  set_heading_target(heading);
  return true;
}

double Autopilot::sim_time_s() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return telemetry_.have_reading ? telemetry_.reading.timestamp_s : 0.0;
}

void Autopilot::set_heading_target(double heading) {
  if (!std::isfinite(heading)) return;
  heading = fold_degrees(heading);
  std::lock_guard<std::mutex> lock(mutex_);
  state_.heading_target_deg = heading;
  state_.heading_epoch = state_.epoch;
  ++state_.heading_seq;
}

std::optional<std::size_t> Autopilot::set_param(std::string_view name, double value) {
  for (std::size_t i = 0; i < std::size(params_table); ++i) {
    const ParamInfo& p = params_table[i];
    if (name != p.name) continue;
    if (!std::isfinite(value) || value < p.min || value > p.max) return std::nullopt;
    std::lock_guard<std::mutex> lock(mutex_);
    state_.gains.*(p.member) = value / p.wire_per_unit;
    return i;
  }
  return std::nullopt;
}

double Autopilot::param(std::size_t index) const {
  const ParamInfo& p = params_table[index];
  std::lock_guard<std::mutex> lock(mutex_);
  return state_.gains.*(p.member) * p.wire_per_unit;
}

HoldGains Autopilot::gains() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_.gains;
}

AutopilotSnapshot Autopilot::snapshot(std::chrono::steady_clock::time_point now) const {
  std::lock_guard<std::mutex> lock(mutex_);
  AutopilotSnapshot s = state_;
  // MANUAL_CONTROL as RC overrides, until RC_OVERRIDE_TIME lapses (-1: never; 0: overrides
  // off); then SITL's receiver
  const double lapse_s = state_.gains.override_time_s;
  const bool fresh =
      have_pilot_ && lapse_s != 0 && (lapse_s < 0 || std::chrono::duration<double>(now - pilot_at_).count() <= lapse_s);
  if (fresh) {
    s.stick_gain = airframe_ == Airframe::vectored ? state_.gains.js_gain : 1.0;
  } else {
    s.pilot = airframe_ == Airframe::vectored ? sub_receiver : rover_receiver;
    s.stick_gain = 1.0;
  }
  return s;
}

void Autopilot::publish(const SensorReading* reading, double depth_target_m, double heading_target_deg) {
  std::lock_guard<std::mutex> lock(mutex_);
  telemetry_.have_reading = reading != nullptr;
  if (reading != nullptr) telemetry_.reading = *reading;
  telemetry_.depth_target_m = depth_target_m;
  telemetry_.heading_target_deg = heading_target_deg;
}

std::chrono::steady_clock::time_point Autopilot::now() const { return sim_clock(sim_time_s()); }

AutopilotTelemetry Autopilot::telemetry() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return telemetry_;
}

// ---- the vectored frame ---------------------------------------------------------------------

std::array<double, vectored_motors> mix_vectored(const Demand& d) {
  std::array<double, vectored_motors> out{};
  for (std::size_t i = 0; i < vectored_motors; ++i) {
    const auto& f = vectored_factors[i];
    out[i] = d.roll * f[0] + d.yaw * f[2] + d.throttle * f[3] + d.forward * f[4] + d.lateral * f[5];
  }
  // each motor clipped on its own, as ArduSub's vectored frame does (no normalisation:
  // AP_Motors6DOF::output_armed_stabilizing_vectored)
  for (double& o : out) o = std::clamp(o, -1.0, 1.0);
  return out;
}

std::uint16_t output_to_pwm(double output) {
  if (!std::isfinite(output)) return 1500;
  return static_cast<std::uint16_t>(std::lround(1500.0 + 400.0 * std::clamp(output, -1.0, 1.0)));
}

double heading_deg(const std::array<double, 4>& q) {
  const double w = q[0], x = q[1], y = q[2], z = q[3];
  double h = std::atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z)) * deg_per_rad;
  if (h < 0) h += 360.0;
  return h;
}

double roll_rad(const std::array<double, 4>& q) {
  const double w = q[0], x = q[1], y = q[2], z = q[3];
  return std::atan2(2.0 * (w * x + y * z), 1.0 - 2.0 * (x * x + y * y));
}

double heading_error_deg(double a, double b) {
  double e = std::fmod(a - b, 360.0);
  if (e > 180.0) e -= 360.0;
  if (e < -180.0) e += 360.0;
  return e;
}

// a new epoch (mode change, arming, disarming) takes the vehicle's depth and heading as the
// targets; a target command given in the current epoch replaces them (once: by its sequence)
void SubHoldLaw::take_commands(const AutopilotSnapshot& s, double depth_m, double heading) {
  if (s.epoch != epoch_) {
    epoch_ = s.epoch;
    depth_target_m_ = depth_m;
    heading_target_deg_ = heading;
    pilot_heading_deg_ = heading;
    speed_integral_ = 0;
  }
  if (!s.armed) pilot_heading_deg_ = heading;  // ArduSub, disarmed: the heading it has
  if (s.depth_seq != depth_seq_) {
    depth_seq_ = s.depth_seq;
    if (s.depth_epoch == s.epoch) depth_target_m_ = std::isnan(s.depth_target_m) ? depth_m : s.depth_target_m;
  }
  if (s.heading_seq != heading_seq_) {
    heading_seq_ = s.heading_seq;
    if (s.heading_epoch == s.epoch) heading_target_deg_ = s.heading_target_deg;
  }
}

// depth: error -> vertical speed target (limited) -> PI on the speed -> throttle. The throttle
// stick off centre asks for a speed itself, and the target follows the vehicle meanwhile.
double SubHoldLaw::hold_depth(const AutopilotSnapshot& s, const SensorReading& r, double dt_s) {
  const HoldGains& g = s.gains;
  const double depth_m = r.position_m.z();
  const double down_speed_m_s = r.velocity_m_s.z();
  double target_speed = 0;
  if (!centred(static_cast<std::int16_t>(s.pilot.z - 500))) {
    target_speed = -throttle_stick(s.pilot.z) * s.stick_gain * g.vertical_speed_max_m_s;
    depth_target_m_ = depth_m;
  } else {
    target_speed =
        std::clamp(g.depth_p_per_s * (depth_target_m_ - depth_m), -g.vertical_speed_max_m_s, g.vertical_speed_max_m_s);
  }
  const double speed_error = target_speed - down_speed_m_s;
  speed_integral_ = std::clamp(speed_integral_ + g.vertical_speed_i * speed_error * dt_s, -g.vertical_speed_imax,
                               g.vertical_speed_imax);
  const double down = g.vertical_speed_p * speed_error + speed_integral_;
  return std::clamp(-down, -1.0, 1.0);  // throttle is up
}

// ALT_HOLD's heading (mode_althold.cpp, run_pre): a kept attitude target younger than
// alt_hold_attitude_timeout_s, the pilot's sticks then ignored; otherwise the heading of the
// mode's entry or the pilot's last yaw, to which the vehicle turns back once a target lapses.
// true while a target is flown.
bool SubHoldLaw::alt_hold_target(const AutopilotSnapshot& s, double now_s) {
  if (s.kept_attitude && now_s - s.kept_at_s < alt_hold_attitude_timeout_s) {
    heading_target_deg_ = s.kept_heading_deg;
    return true;
  }
  heading_target_deg_ = pilot_heading_deg_;
  return false;
}

// heading: error -> yaw rate target (limited) -> P on the rate -> yaw. The yaw stick off
// centre yaws directly, and the target follows the vehicle meanwhile.
double SubHoldLaw::hold_heading(const AutopilotSnapshot& s, const SensorReading& r, double heading,
                                bool sticks_ignored) {
  const HoldGains& g = s.gains;
  if (!sticks_ignored && !centred(s.pilot.r)) {
    heading_target_deg_ = heading;
    pilot_heading_deg_ = heading;
    return stick(s.pilot.r) * s.stick_gain;
  }
  const double error_rad = heading_error_deg(heading_target_deg_, heading) / deg_per_rad;
  const double target_rate = std::clamp(g.heading_p_per_s * error_rad, -g.yaw_rate_max_rad_s, g.yaw_rate_max_rad_s);
  return std::clamp(g.yaw_rate_p * (target_rate - r.gyro_rad_s.z()), -max_yaw_demand, max_yaw_demand);
}

void SubHoldLaw::outputs(const SensorReading* last, std::uint32_t frame_count, std::span<std::uint16_t> pwm_us) {
  (void)frame_count;
  fill(pwm_us, 1500);
  demand_ = Demand{};
  const AutopilotSnapshot s = autopilot_.snapshot(last != nullptr ? sim_clock(last->timestamp_s) : autopilot_.now());
  if (last == nullptr) {
    autopilot_.publish(nullptr, depth_target_m_, heading_target_deg_);
    return;
  }
  // ArduSub's depth is its barometer's, zeroed at boot (system.cpp, barometer.calibrate):
  // depth counts from where the vehicle was at the first reading
  if (!have_boot_depth_) {
    have_boot_depth_ = true;
    boot_depth_m_ = last->position_m.z();
  }
  SensorReading r = *last;
  r.position_m.z() -= boot_depth_m_;
  double dt_s = 0;
  if (have_time_ && r.timestamp_s > last_time_s_) dt_s = std::min(r.timestamp_s - last_time_s_, max_dt_s);
  have_time_ = true;
  last_time_s_ = r.timestamp_s;

  const double heading = heading_deg(r.quaternion);
  take_commands(s, r.position_m.z(), heading);
  if (s.armed) {
    demand_.forward = stick(s.pilot.x) * s.stick_gain;
    demand_.lateral = stick(s.pilot.y) * s.stick_gain;
    if (s.mode == sub_mode_manual) {
      demand_.throttle = throttle_stick(s.pilot.z) * s.stick_gain;
      demand_.yaw = stick(s.pilot.r) * s.stick_gain;
    } else {
      const bool target = s.mode == sub_mode_alt_hold && alt_hold_target(s, r.timestamp_s);
      demand_.yaw = hold_heading(s, r, heading, target);
      demand_.roll = std::clamp(-s.gains.roll_p * roll_rad(r.quaternion) - s.gains.roll_rate_d * r.gyro_rad_s.x(),
                                -max_roll_demand, max_roll_demand);
      if (s.mode == sub_mode_alt_hold || s.mode == sub_mode_guided)
        demand_.throttle = hold_depth(s, r, dt_s);
      else
        demand_.throttle = throttle_stick(s.pilot.z) * s.stick_gain;
    }
    const auto motors = mix_vectored(demand_);
    for (std::size_t i = 0; i < motors.size() && i < pwm_us.size(); ++i) pwm_us[i] = output_to_pwm(motors[i]);
  }
  autopilot_.publish(last, depth_target_m_, heading_target_deg_);
}

void RoverLaw::outputs(const SensorReading* last, std::uint32_t frame_count, std::span<std::uint16_t> pwm_us) {
  (void)frame_count;
  fill(pwm_us, 1500);
  const AutopilotSnapshot s = autopilot_.snapshot(last != nullptr ? sim_clock(last->timestamp_s) : autopilot_.now());
  autopilot_.publish(last, 0, 0);
  if (!s.armed || s.mode != rover_mode_manual || pwm_us.size() < 3) return;
  // ArduRover: MANUAL_CONTROL y steers and z drives, both -1000..1000 with 0 centred
  // (GCS_MAVLink_Rover.cpp, handle_manual_control_axes)
  const double throttle = stick(s.pilot.z);
  const double steering = stick(s.pilot.y);
  double left = throttle + steering;
  double right = throttle - steering;
  const double peak = std::max({1.0, std::abs(left), std::abs(right)});
  left /= peak;
  right /= peak;
  pwm_us[0] = output_to_pwm(left);
  pwm_us[2] = output_to_pwm(right);
}

}  // namespace tether::adapters::ardupilot
