// SPDX-License-Identifier: Apache-2.0
// Sensor models: what each sensor kind reads from the world, before noise, and how a reading
// becomes its payload (firmware_shim/payloads.h). Pure functions of (spec, world, time).
//
// Channels of a Sample, per kind, in the wire convention (body x forward, y right, z down):
//   range, sonar, altimeter  [distance_m]              flags: hit / echo / valid
//   depth         [depth_m, pressure per metre (Pa/m, no noise)]
//   gyro          [wx, wy, wz] rad/s          accel  [ax, ay, az] m/s^2 (specific force)
//   imu           [wx, wy, wz, ax, ay, az]
//   inclinometer  [roll_rad (right side down +), pitch_rad (nose up +)]
//   compass       [heading_rad (0 = magnetic north, clockwise from above)]
//   dvl           [vx, vy, vz, altitude_m]     flags: velocity valid, altitude valid
//   gps           [east_m, north_m, up_m, v_east_m_s, v_north_m_s (no noise)]
//   contact       [force_n]                   flags: contact
//   tension       [tension_n, fx, fy, fz]     (the force on the device's body, sensor frame)
//   encoder       [position (rad or m), rate]
//   clock         []                           (the sample time is the reading)
#pragma once

#include <array>
#include <cstdint>

#include "tether/hal/device_spec.hpp"
#include "tether/hal/nmea.hpp"
#include "tether/hal/world_view.hpp"

namespace tether::hal {

inline constexpr int max_channels = 6;

/// One reading (or one command, for actuators) as numbers, before it is encoded.
struct Sample {
  std::array<double, max_channels> ch{};
  std::uint8_t flags = 0;
  bool valid = false;  // false: no data (dropout, GPS under water, delay line not yet full)
  std::int64_t time_ns = 0;
};

/// Where a device is in the world at this instant.
struct DevicePose {
  Vec3 position_m;  // world
  Mat3 rotation;    // device frame -> world
  Vec3 lever_m;     // world vector from the body's centre of mass to the device
};

/// The device's world pose from its body's kinematics.
DevicePose device_pose(const Mount& mount, const BodyKinematics& body);

/// Sensor-frame (x forward, y left, z up) vector in the wire convention (y right, z down).
inline Vec3 to_wire(const Vec3& v) { return {v.x(), -v.y(), -v.z()}; }

/// Directions (device frame) of a sonar's rays: the axis, then rays - 1 evenly on the cone.
void sonar_directions(const RayParams& p, Vec3* out);

/// The true reading of sensor `spec` in `view` at `time_ns`. `beam` may hold the sonar's
/// precomputed ray directions (sonar_directions); nullptr computes them.
void measure(const DeviceSpec& spec, const WorldView& view, std::int64_t time_ns, Sample& out,
             const Vec3* beam = nullptr);
/// Restores what noise must not break: ranges inside [min, max] and at max without a hit,
/// velocities zero without bottom lock, headings in [0, 2 pi), depth, force and tension >= 0.
void finish_sample(const DeviceSpec& spec, Sample& s);
/// Writes a valid sample's payload (kind_payload_size bytes of `spec.kind`) into `out`.
void encode_sample(const DeviceSpec& spec, const Sample& s, std::uint8_t* out);
/// UTC in centiseconds of a GPS sample time.
std::int64_t gps_utc_cs(const GpsParams& p, std::int64_t time_ns);
/// The GPS sample's position as latitude, longitude and altitude.
GeoPoint gps_point(const GpsParams& p, const Sample& s);

/// The depth sensor's wire form (KindInfo::wire_form): it samples depth and density * |g|;
/// the wire and the recording carry depth and the absolute pressure from them.
void depth_wire_form(const DeviceSpec& spec, double* ch);

}  // namespace tether::hal
