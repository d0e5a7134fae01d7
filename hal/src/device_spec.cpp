// SPDX-License-Identifier: Apache-2.0
#include "tether/hal/device_spec.hpp"

#include <array>
#include <cmath>

#include "tether/hal/actuators.hpp"
#include "tether/hal/overloaded.hpp"
#include "tether/hal/sensors.hpp"

namespace tether::hal {

namespace {

// One row per kind, keyed by the wire enum (firmware_shim's payloads.h). No default case:
// -Werror=switch stops the build when payloads.h gains a kind without a row here. Channels
// are what the noise chain sees (see sensors.hpp for their order).
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wswitch"
constexpr KindInfo row(DeviceKind kind) {
  switch (kind) {
    case TETHER_KIND_NONE: break;
    case TETHER_KIND_RANGE: return {"range", false, 1, 1, 1, "m", nullptr, "infrared / PSD range finder, one beam"};
    case TETHER_KIND_SONAR: return {"sonar", false, 1, 1, 1, "m", nullptr, "sonar cone: the nearest echo"};
    case TETHER_KIND_ALTIMETER: return {"altimeter", false, 1, 1, 1, "m", nullptr, "height above the bottom"};
    case TETHER_KIND_DEPTH: return {"depth", false, 2, 1, 1, "m, Pa", nullptr, "depth and pressure"};
    case TETHER_KIND_GYRO: return {"gyro", false, 3, 3, 3, "rad/s", nullptr, "angular rate, body frame"};
    case TETHER_KIND_ACCEL: return {"accel", false, 3, 3, 3, "m/s^2", nullptr, "specific force, body frame"};
    case TETHER_KIND_IMU:
      return {"imu", false, 6, 3, 6, "rad/s, m/s^2", "accel_noise", "gyro and accelerometer in one reading"};
    case TETHER_KIND_INCLINOMETER: return {"inclinometer", false, 2, 2, 2, "rad", nullptr, "roll and pitch"};
    case TETHER_KIND_COMPASS: return {"compass", false, 1, 1, 1, "rad", nullptr, "magnetic heading"};
    case TETHER_KIND_DVL:
      return {"dvl", false, 4, 3, 4, "m/s, m", "altitude_noise", "Doppler velocity log: velocity and altitude"};
    case TETHER_KIND_GPS:
      return {"gps", false, 5, 3, 3, "1e-7 deg, NMEA", nullptr, "position fix and NMEA GGA, at the surface only"};
    case TETHER_KIND_CONTACT: return {"contact", false, 1, 1, 1, "N", nullptr, "bump / contact switch with force"};
    case TETHER_KIND_CLOCK: return {"clock", false, 0, 0, 0, "us", nullptr, "simulation clock"};
    case TETHER_KIND_TENSION:
      return {"tension", false, 4, 4, 4, "N", nullptr, "load cell on a joint or cable end: force and its direction"};
    case TETHER_KIND_ENCODER:
      return {
          "encoder", false, 2, 2, 2, "rad or m, per s", nullptr, "a hinge's angle or a slider's travel, and its rate"};
    case TETHER_KIND_THRUSTER:
      return {"thruster", true, 1, 1, 1, "fraction -1..1", nullptr, "propeller: command to rotor speed to thrust"};
    case TETHER_KIND_DC_MOTOR: return {"dc_motor", true, 1, 1, 1, "V", nullptr, "DC motor driven by armature voltage"};
    case TETHER_KIND_FIN: return {"fin", true, 1, 1, 1, "rad", nullptr, "fin / rudder: lift and drag at an angle"};
    case TETHER_KIND_SERVO: return {"servo", true, 1, 1, 1, "rad", nullptr, "rate-limited servo angle"};
    case TETHER_KIND_WHEEL_DRIVE:
      return {"wheel_drive", true, 2, 2, 2, "fraction -1..1", nullptr, "differential wheel drive"};
  }
  return {};
}
#pragma GCC diagnostic pop

// every value the enum can hold (its range is 0..127: no enumerator above 68)
constexpr int kind_slots = 128;

// what generic code asks of a kind (KindInfo's properties and hooks), beside its row
constexpr void properties(std::array<KindInfo, kind_slots>& t) {
  for (DeviceKind k : {TETHER_KIND_THRUSTER, TETHER_KIND_DC_MOTOR, TETHER_KIND_FIN, TETHER_KIND_SERVO})
    t[static_cast<std::size_t>(k)].one_command = true;
  t[TETHER_KIND_TENSION].reads_joint_loads = true;
  t[TETHER_KIND_ENCODER].reads_joint_coordinates = true;
  t[TETHER_KIND_DEPTH].wire_form = depth_wire_form;
  t[TETHER_KIND_DC_MOTOR].react = dc_motor_react;
}

constexpr std::array<KindInfo, kind_slots> make_table() {
  std::array<KindInfo, kind_slots> t{};
  for (int k = 0; k < kind_slots; ++k) t[static_cast<std::size_t>(k)] = row(static_cast<DeviceKind>(k));
  properties(t);
  return t;
}
constexpr std::array<KindInfo, kind_slots> kinds = make_table();

constexpr bool same(const char* a, const char* b) {
  while (*a && *a == *b) ++a, ++b;
  return *a == *b;
}

// every row is whole (a name, a description, channel groups in order) and no two share a name
constexpr bool rows_are_sound() {
  for (int k = 1; k < kind_slots; ++k) {
    const KindInfo& r = kinds[static_cast<std::size_t>(k)];
    if (same(r.name, "unknown")) continue;
    if (!r.description || !*r.description ||
        !(r.group_a_channels <= r.noisy_channels && r.noisy_channels <= r.channels))
      return false;
    for (int j = 1; j < k; ++j)
      if (same(r.name, kinds[static_cast<std::size_t>(j)].name)) return false;
  }
  return true;
}
static_assert(rows_are_sound(),
              "a device kind row lacks a description, has its channel groups out of order, "
              "or repeats another kind's name");
static_assert(same(kinds[TETHER_KIND_WHEEL_DRIVE].name, "wheel_drive") && kinds[TETHER_KIND_THRUSTER].actuator &&
                  !kinds[TETHER_KIND_CLOCK].actuator,
              "the table is keyed by the enum");

bool fail(std::string* error, const std::string& message) {
  if (error) *error = message;
  return false;
}

bool finite_non_negative(double v) { return std::isfinite(v) && v >= 0; }
bool finite_positive(double v) { return std::isfinite(v) && v > 0; }

bool check_noise(const NoiseSpec& n, const char* key, std::string* error) {
  const std::string k = key;
  if (!std::isfinite(n.offset) || !std::isfinite(n.scale)) return fail(error, k + ": offset and scale must be finite");
  if (!finite_non_negative(n.stddev) || !finite_non_negative(n.uniform) || !finite_non_negative(n.bias_walk_stddev) ||
      !finite_non_negative(n.resolution))
    return fail(error, k + ": stddev, uniform, bias_walk_stddev and resolution must be >= 0");
  if (!(n.dropout >= 0 && n.dropout <= 1)) return fail(error, k + ": dropout must be a probability in [0, 1]");
  if (n.delay_steps > 1000) return fail(error, k + ": delay_steps must be at most 1000");
  return true;
}

}  // namespace

const KindInfo& kind_info(DeviceKind kind) {
  const auto k = static_cast<int>(kind);
  return k >= 0 && k < kind_slots ? kinds[static_cast<std::size_t>(k)] : kinds[0];
}

DeviceKindRegistry& device_kinds() {
  // filled on first use from the table above, in enum order
  static DeviceKindRegistry r = [] {
    DeviceKindRegistry reg("device kind");
    for (int k = 1; k < kind_slots; ++k) {
      const KindInfo& info = kinds[static_cast<std::size_t>(k)];
      if (info.description) reg.add(info.name, static_cast<DeviceKind>(k), info.description);
    }
    return reg;
  }();
  return r;
}

DeviceKind kind_from_name(std::string_view name) {
  const DeviceKind* kind = device_kinds().find(name);
  return kind ? *kind : TETHER_KIND_NONE;
}

DeviceParams default_params(DeviceKind kind) {
  switch (kind) {
    case TETHER_KIND_RANGE: return RayParams{0, 5, 0, 1};
    case TETHER_KIND_SONAR: return RayParams{0, 50, 10, 9};
    case TETHER_KIND_ALTIMETER: return RayParams{0, 50, 0, 1};
    case TETHER_KIND_DVL: return RayParams{0, 30, 0, 1};
    case TETHER_KIND_DEPTH: return DepthParams{};
    case TETHER_KIND_COMPASS: return CompassParams{};
    case TETHER_KIND_GPS: return GpsParams{};
    case TETHER_KIND_CONTACT: return ContactParams{};
    case TETHER_KIND_TENSION: return TensionParams{};
    case TETHER_KIND_ENCODER: return EncoderParams{};
    case TETHER_KIND_THRUSTER: return ThrusterParams{};
    case TETHER_KIND_DC_MOTOR: return DcMotorParams{};
    case TETHER_KIND_FIN: return FinParams{};
    case TETHER_KIND_SERVO: return ServoParams{};
    case TETHER_KIND_WHEEL_DRIVE: return WheelDriveParams{};
    // no parameters
    case TETHER_KIND_NONE:
    case TETHER_KIND_GYRO:
    case TETHER_KIND_ACCEL:
    case TETHER_KIND_IMU:
    case TETHER_KIND_INCLINOMETER:
    case TETHER_KIND_CLOCK: break;
  }
  return std::monostate{};
}

ThrusterParams resolve_thruster(ThrusterParams p) {
  if (p.ct <= 0) p.ct = p.max_thrust_n / (p.max_speed_rad_s * p.max_speed_rad_s);
  if (p.alpha <= 0) p.alpha = 1.0 / (2.0 * p.time_constant_s * p.max_speed_rad_s);
  if (p.beta <= 0) p.beta = p.alpha * p.max_speed_rad_s * p.max_speed_rad_s;
  return p;
}

bool validate_spec(const DeviceSpec& spec, std::string* error) {
  const KindInfo& info = kind_info(spec.kind);
  if (info.channels == 0 && spec.kind != TETHER_KIND_CLOCK) return fail(error, "unknown device kind");
  if (!valid_name_segment(spec.name.vehicle) || !valid_name_segment(spec.name.part) ||
      !valid_name_segment(spec.name.device))
    return fail(error, "\"" + spec.name.full() + "\" is not a valid vehicle.part.device name");
  if (spec.name.full().size() > TETHER_MAX_DEVICE_NAME_LEN)
    return fail(error, "the full name is longer than " + std::to_string(TETHER_MAX_DEVICE_NAME_LEN) + " characters");
  if (spec.body < 0) return fail(error, "no body index");
  if (!spec.mount.position_m.allFinite() || !spec.mount.orientation.coeffs().allFinite() ||
      std::abs(spec.mount.orientation.norm() - 1.0) > 1e-6)
    return fail(error, "mount: position must be finite and orientation a unit quaternion");
  if (!finite_non_negative(spec.rate_hz)) return fail(error, "rate_hz must be >= 0");
  if (info.actuator && spec.rate_hz != 0) return fail(error, "rate_hz applies to sensors only");
  if (!check_noise(spec.noise, "noise", error)) return false;
  if (!check_noise(spec.noise_b, info.noise_b_key ? info.noise_b_key : "noise_b", error)) return false;
  if (spec.kind == TETHER_KIND_CLOCK && !(spec.noise.is_identity() && spec.noise_b.is_identity()))
    return fail(error, "a clock takes no noise");
  if (spec.noise_b.dropout != 0 || spec.noise_b.delay_steps != 0)
    return fail(error, std::string(info.noise_b_key ? info.noise_b_key : "noise_b") +
                           ": dropout and delay_steps belong to the device's `noise`");
  if (!info.noise_b_key && !spec.noise_b.is_identity())
    return fail(error, std::string("a ") + info.name + " has one noise group");

  // the params must be the kind's own type, with sane numbers
  const DeviceParams expected = default_params(spec.kind);
  if (spec.params.index() != expected.index())
    return fail(error, std::string("parameters of the wrong type for a ") + info.name);
  return std::visit(
      overloaded{
          [&](const RayParams& p) {
            if (!finite_non_negative(p.min_range_m) || !finite_positive(p.max_range_m) ||
                p.min_range_m >= p.max_range_m)
              return fail(error, "params: need 0 <= min_range_m < max_range_m");
            if (spec.kind == TETHER_KIND_SONAR &&
                (!(p.beam_width_deg >= 0 && p.beam_width_deg < 180) || p.rays < 1 || p.rays > 64))
              return fail(error, "params: need beam_width_deg in [0, 180) and rays in [1, 64]");
            return true;
          },
          [&](const DepthParams& p) {
            if (!finite_non_negative(p.atmospheric_pa)) return fail(error, "params: atmospheric_pa must be >= 0");
            return true;
          },
          [&](const CompassParams& p) {
            if (!std::isfinite(p.declination_deg)) return fail(error, "params: declination_deg must be finite");
            return true;
          },
          [&](const GpsParams& p) {
            if (!(std::abs(p.datum_lat_deg) <= 89) || !(std::abs(p.datum_lon_deg) <= 180))
              return fail(error, "params: datum_lat_deg must be within +-89 and datum_lon_deg within +-180");
            if (!finite_non_negative(p.surface_tolerance_m) || !std::isfinite(p.datum_alt_m) ||
                !finite_non_negative(p.hdop) || p.hdop >= 100 || p.satellites > 99 || p.utc_start_s < 0)
              return fail(error,
                          "params: surface_tolerance_m >= 0, hdop in [0, 100), satellites <= 99, utc_start after 1970");
            return true;
          },
          [&](const ContactParams& p) {
            if (!finite_non_negative(p.radius_m) || !finite_non_negative(p.min_force_n))
              return fail(error, "params: radius_m and min_force_n must be >= 0");
            return true;
          },
          [&](const ThrusterParams& p) {
            if (!finite_positive(p.max_thrust_n) || !finite_positive(p.max_speed_rad_s) ||
                !finite_positive(p.time_constant_s))
              return fail(error, "params: max_thrust_n, max_speed_rad_s and time_constant_s must be > 0");
            if (!finite_non_negative(p.ct) || !finite_non_negative(p.alpha) || !finite_non_negative(p.beta))
              return fail(error, "params: ct, alpha and beta must be >= 0 (0: derived)");
            if (!(p.dead_band >= 0 && p.dead_band < 1) || !finite_non_negative(p.reverse_ratio) ||
                !std::isfinite(p.reaction_torque_nm_per_n))
              return fail(error, "params: dead_band in [0, 1), reverse_ratio >= 0");
            return true;
          },
          [&](const DcMotorParams& p) {
            if (!finite_positive(p.kt_nm_per_a) || !finite_non_negative(p.ke_v_s_per_rad) ||
                !finite_positive(p.resistance_ohm) || !finite_positive(p.inertia_kg_m2) ||
                !finite_non_negative(p.damping_nm_s_per_rad) || !finite_positive(p.supply_v) ||
                !finite_non_negative(p.ct) || !finite_non_negative(p.cq))
              return fail(error, "params: kt, resistance, inertia and supply must be > 0; ke, damping, ct, cq >= 0");
            return true;
          },
          [&](const FinParams& p) {
            if (!finite_positive(p.area_m2) || !finite_non_negative(p.cl_alpha_per_rad) ||
                !(p.stall_angle_deg > 0 && p.stall_angle_deg <= 90) || !finite_non_negative(p.cd0) ||
                !finite_non_negative(p.cd_alpha) || !(p.max_angle_deg >= 0 && p.max_angle_deg <= 90) ||
                !finite_non_negative(p.rate_deg_s) || !finite_positive(p.air_density_kg_m3))
              return fail(error, "params: area > 0, stall angle in (0, 90], max angle in [0, 90], the rest >= 0");
            return true;
          },
          [&](const ServoParams& p) {
            if (!std::isfinite(p.min_angle_deg) || !std::isfinite(p.max_angle_deg) ||
                p.min_angle_deg > p.max_angle_deg || !finite_positive(p.max_rate_deg_s))
              return fail(error, "params: min_angle_deg <= max_angle_deg and max_rate_deg_s > 0");
            return true;
          },
          [&](const WheelDriveParams& p) {
            if (!finite_positive(p.track_m) || !finite_positive(p.wheel_radius_m) ||
                !finite_positive(p.max_wheel_speed_rad_s) || !finite_positive(p.time_constant_s) ||
                !finite_non_negative(p.friction) || !finite_positive(p.slip_speed_m_s))
              return fail(error, "params: friction >= 0, every other number > 0");
            return true;
          },
          // nothing to check
          [](const std::monostate&) { return true; },
          [](const TensionParams&) { return true; },
          [](const EncoderParams&) { return true; },
      },
      spec.params);
}

}  // namespace tether::hal
