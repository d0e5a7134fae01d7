// SPDX-License-Identifier: Apache-2.0
// What a scenario says about one device: its name, kind, where it is mounted, how often it
// samples, its kind-specific parameters and its noise. Plain data, built at configure time
// (runtime/scenario_devices.hpp parses it from YAML) and handed to a DeviceBank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>

#include "tether/firmware_shim/payloads.h"
#include "tether/hal/device_name.hpp"
#include "tether/hal/noise.hpp"
#include "tether/hal/registry.hpp"
#include "tether/hal/world_view.hpp"

namespace tether::hal {

using DeviceKind = tether_device_kind_t;

/// Where a device sits on its body: a point relative to the centre of mass and a rotation
/// from the device frame to the body frame. Device axes: a ray sensor looks along +x, a
/// downward sensor (altimeter, DVL) along -z, a thruster pushes along +x, a fin hinges about
/// +z, a wheel axle runs along y.
struct Mount {
  Vec3 position_m{0, 0, 0};
  Quat orientation = Quat::Identity();
};

/// range, sonar, altimeter, dvl: the beam. Sonar casts `rays` rays in a cone (one on the
/// axis, the rest evenly on the cone's edge) and reports the nearest echo.
struct RayParams {
  double min_range_m = 0;
  double max_range_m = 5;
  double beam_width_deg = 10;  // sonar: full cone angle
  std::uint32_t rays = 9;      // sonar
};

/// depth: pressure = atmospheric + density * |g| * depth.
struct DepthParams {
  double atmospheric_pa = 101325;
};

/// compass: reports magnetic heading = true heading - declination (east declination > 0).
struct CompassParams {
  double declination_deg = 0;
};

/// gps: local metres (x east, y north) around a datum become latitude and longitude; a fix
/// only while the antenna is no deeper than surface_tolerance_m (always without water).
struct GpsParams {
  double datum_lat_deg = 0;
  double datum_lon_deg = 0;
  double datum_alt_m = 0;  // altitude of the water surface / world z = 0
  double surface_tolerance_m = 0.05;
  std::int64_t utc_start_s = 1'704'067'200;  // UTC of simulation time 0 (2024-01-01T00:00:00Z)
  std::uint32_t satellites = 8;
  double hdop = 0.9;
};

/// contact: contacts of the body within radius_m of the mount point (0: anywhere on the body)
/// whose summed force is at least min_force_n.
struct ContactParams {
  double radius_m = 0;
  double min_force_n = 0;
};

/// tension: a load cell on one joint of the device's body (a cable's end is a joint): the
/// force that joint pulls the body with. `joint` indexes WorldView::joint_loads (the runtime's
/// joint order; -1 or past the list: no data); the scenario resolves it from the joint's name.
struct TensionParams {
  int joint = -1;
  std::string joint_name;  // for messages and `tether devices`
};

/// encoder: a hinge's angle or a slider's travel and its rate; `joint` indexes
/// WorldView::joint_motion (-1 or past the list: no data), resolved by the scenario.
struct EncoderParams {
  int joint = -1;
  std::string joint_name;  // for messages and `tether devices`
};

enum class RotorModel : std::uint8_t { first_order, yoerger };

/// thruster: command u in [-1, 1] -> rotor speed Omega -> thrust Ct * Omega * |Omega| along +x.
///   first_order:  tau dOmega/dt = u * max_speed - Omega
///   yoerger:      dOmega/dt = beta * u - alpha * Omega * |Omega|
/// Unset coefficients (0) are derived: ct = max_thrust / max_speed^2; alpha = 1 / (2 tau
/// max_speed) (same small-signal time constant at full speed); beta = alpha * max_speed^2.
struct ThrusterParams {
  RotorModel model = RotorModel::first_order;
  double max_thrust_n = 10;
  double max_speed_rad_s = 300;
  double time_constant_s = 0.1;
  double ct = 0;                        // N/(rad/s)^2
  double alpha = 0;                     // 1/rad
  double beta = 0;                      // rad/s^2 per unit command
  double dead_band = 0;                 // |u| below this gives u = 0
  double reverse_ratio = 1;             // thrust in reverse relative to forward at the same speed
  double reaction_torque_nm_per_n = 0;  // propeller torque about -x per newton of thrust
};

/// dc_motor: armature model T = K_T (V - K_E w) / R on a rotor J dw/dt = T - b w - cq w|w|;
/// the body feels -(T - b w) about +x and, with a propeller (ct > 0), thrust ct w|w| along +x.
struct DcMotorParams {
  double kt_nm_per_a = 0.05;
  double ke_v_s_per_rad = 0.05;
  double resistance_ohm = 1.0;
  double inertia_kg_m2 = 1e-4;
  double damping_nm_s_per_rad = 1e-5;
  double supply_v = 12;
  double ct = 0;  // N/(rad/s)^2, 0: no propeller
  double cq = 0;  // N m/(rad/s)^2, propeller load torque
  /// The body the shaft turns (a wheel or an arm on a hinge about the mount's +x), or -1: the
  /// rotor is the motor's own (a propeller). With a driven body, the rotor speed is that body's
  /// turning relative to the motor's about the shaft, and the armature torque acts on it (the
  /// motor's body feels the reaction); inertia, damping, ct and cq are then not used.
  int driven_body = -1;
};

/// fin / rudder: a plate hinged about +z, chord along +x at zero deflection. Lift and drag
/// from the flow in the x-y plane of the mount: CL = cl_alpha * a (held at the stall angle
/// beyond it), CD = cd0 + cd_alpha * sin^2 a, force q * area * C with q = rho U^2 / 2.
struct FinParams {
  double area_m2 = 0.01;
  double cl_alpha_per_rad = 3.0;
  double stall_angle_deg = 20;
  double cd0 = 0.02;
  double cd_alpha = 1.0;
  double max_angle_deg = 30;
  double rate_deg_s = 0;  // deflection rate limit; 0: the fin is where it is commanded
  double air_density_kg_m3 = 1.225;
};

/// servo: a rate-limited position (no force of its own; a fin has its own rate limit).
struct ServoParams {
  double min_angle_deg = -90;
  double max_angle_deg = 90;
  double max_rate_deg_s = 60;
};

/// wheel_drive: two wheels at +-track/2 along the mount's y axis; wheel speeds follow the
/// commands with a first-order lag; where a wheel touches the ground (a ray from its hub
/// finds ground within its radius) a slip force pushes it, limited by friction * load.
struct WheelDriveParams {
  double track_m = 0.3;
  double wheel_radius_m = 0.05;
  double max_wheel_speed_rad_s = 20;
  double time_constant_s = 0.05;
  double friction = 0.8;
  double slip_speed_m_s = 0.1;  // slip at which the force reaches friction * load
};

using DeviceParams =
    std::variant<std::monostate, RayParams, DepthParams, CompassParams, GpsParams, ContactParams, ThrusterParams,
                 DcMotorParams, FinParams, ServoParams, WheelDriveParams, TensionParams, EncoderParams>;

/// One device of a scenario.
struct DeviceSpec {
  DeviceName name;
  DeviceKind kind = TETHER_KIND_NONE;
  int body = -1;  // index into the world's bodies
  Mount mount;
  /// Samples per second; 0 = every loop step. A slower sensor holds its last sample (value
  /// and status) between samples; DeviceBank::fresh() tells whether a sample is new.
  double rate_hz = 0;
  DeviceParams params;
  NoiseSpec noise;    // first channel group (see kind_info)
  NoiseSpec noise_b;  // second group: imu accelerometer, dvl altitude
};

/// Static facts about a kind: its channels, noise groups, units.
struct Wrench;

struct KindInfo {
  const char* name = "unknown";
  bool actuator = false;
  int channels = 0;          // values the noise chain sees (wire convention)
  int group_a_channels = 0;  // channels [0, group_a) use DeviceSpec::noise
  int noisy_channels = 0;    // channels [group_a, noisy) use noise_b; the rest none
  const char* units = "";
  const char* noise_b_key = nullptr;  // scenario key of noise_b, if the kind has one
  const char* description = nullptr;  // one line, for `tether kinds` (null: not a kind)
  // what generic code asks of a kind instead of naming it (set in the kind table,
  // hal/src/device_spec.cpp)
  bool one_command = false;              // an actuator of one f32 command (an autopilot output drives it)
  bool reads_joint_loads = false;        // reads the joints' loads (the physics computes them only then)
  bool reads_joint_coordinates = false;  // reads the joints' coordinates
  /// Turns a reading's channels into what the wire and the recording carry, in place (null:
  /// as sampled).
  void (*wire_form)(const DeviceSpec& spec, double* ch) = nullptr;
  /// Adds an actuator's reaction on a body other than its own to `per_body` (null: none).
  /// `x` is its state (ActuatorState::x), `view` the bodies' poses.
  void (*react)(const DeviceSpec& spec, const double* x, const WorldView& view, Wrench* per_body,
                std::size_t bodies) = nullptr;
};

/// Facts about `kind` (a KindInfo named "unknown" with zero channels for an unknown kind).
const KindInfo& kind_info(DeviceKind kind);
/// The device kinds by name (one per row of the kind table in hal/src/device_spec.cpp),
/// for `tether kinds` and scenario errors. A device kind is compiled in (its payload is part
/// of the wire protocol): this registry is read-only in practice (docs/extending.md).
using DeviceKindRegistry = Registry<DeviceKind>;
DeviceKindRegistry& device_kinds();

/// The kind of that lower-case name ("range", "thruster", ...), or TETHER_KIND_NONE.
DeviceKind kind_from_name(std::string_view name);
/// The parameter set a kind starts from (before the scenario's params override it).
DeviceParams default_params(DeviceKind kind);
/// Derives the unset thruster coefficients (ct, alpha, beta) from the others.
ThrusterParams resolve_thruster(ThrusterParams p);
/// Checks a spec for consistency (kind known, params of the right type, numbers in range);
/// false and a reason in `error` if not.
bool validate_spec(const DeviceSpec& spec, std::string* error);

}  // namespace tether::hal
