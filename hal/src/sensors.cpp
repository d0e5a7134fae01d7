// SPDX-License-Identifier: Apache-2.0
#include "tether/hal/sensors.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

namespace tether::hal {

namespace {

constexpr double two_pi = 2.0 * std::numbers::pi;
constexpr double deg = std::numbers::pi / 180.0;

// nearest hit of one ray; `distance` keeps the best so far
void cast(const WorldView& view, const Vec3& origin, const Vec3& dir, double max_range, int body, bool& hit,
          double& distance) {
  const RayHit h = view.ray_cast(origin, dir, max_range, body);
  if (h.hit && h.distance_m <= max_range && h.distance_m < distance) {
    hit = true;
    distance = h.distance_m;
  }
}

void put_vec(std::uint8_t* out, const Sample& s, int first) {
  for (int i = 0; i < 3; ++i)
    tether_put_f32le(out + 4 * i, static_cast<float>(s.ch[static_cast<std::size_t>(first + i)]));
}

double wrap_two_pi(double a) {
  a = std::fmod(a, two_pi);
  if (a < 0) a += two_pi;
  if (a >= two_pi) a = 0;  // -tiny + 2 pi rounds to 2 pi
  return a;
}

}  // namespace

DevicePose device_pose(const Mount& mount, const BodyKinematics& body) {
  // one quaternion product and one conversion: cheaper than two matrices and their product
  DevicePose p;
  p.lever_m = body.orientation * mount.position_m;
  p.position_m = body.position_m + p.lever_m;
  p.rotation = (body.orientation * mount.orientation).toRotationMatrix();
  return p;
}

void sonar_directions(const RayParams& p, Vec3* out) {
  const double half = 0.5 * p.beam_width_deg * deg;
  out[0] = Vec3::UnitX();
  const std::uint32_t ring = p.rays > 0 ? p.rays - 1 : 0;
  for (std::uint32_t k = 0; k < ring; ++k) {
    const double phi = two_pi * static_cast<double>(k) / static_cast<double>(ring);
    out[k + 1] = Vec3(std::cos(half), std::sin(half) * std::cos(phi), std::sin(half) * std::sin(phi));
  }
}

namespace {

// range and altimeter: one ray along the mount's x (range) or -z (altimeter)
void measure_ray(const DeviceSpec& spec, const WorldView& view, const DevicePose& pose, Sample& out) {
  const Mat3& r = pose.rotation;
  const auto& p = std::get<RayParams>(spec.params);
  const Vec3 dir = spec.kind == TETHER_KIND_RANGE ? Vec3(r.col(0)) : Vec3(-r.col(2));
  bool hit = false;
  double d = p.max_range_m;
  cast(view, pose.position_m, dir, p.max_range_m, spec.body, hit, d);
  out.ch[0] = d;
  if (hit) out.flags = spec.kind == TETHER_KIND_RANGE ? TETHER_RANGE_FLAG_HIT : TETHER_ALTIMETER_FLAG_VALID;
}

// a sonar: the nearest echo of its beam's rays
void measure_sonar(const DeviceSpec& spec, const WorldView& view, const DevicePose& pose, Sample& out,
                   const Vec3* beam) {
  const Mat3& r = pose.rotation;
  const auto& p = std::get<RayParams>(spec.params);
  Vec3 local[64];
  if (!beam) {
    sonar_directions(p, local);
    beam = local;
  }
  bool hit = false;
  double d = p.max_range_m;
  for (std::uint32_t k = 0; k < p.rays; ++k) cast(view, pose.position_m, r * beam[k], p.max_range_m, spec.body, hit, d);
  out.ch[0] = d;
  if (hit) out.flags = TETHER_SONAR_FLAG_ECHO;
}

// gyro, accelerometer, IMU: rates, then specific force at the mount point
void measure_inertial(const DeviceSpec& spec, const WorldView& view, const BodyKinematics& b, const DevicePose& pose,
                      Sample& out) {
  const Mat3& r = pose.rotation;
  const Vec3& w = b.angular_velocity_rad_s;
  int at = 0;
  if (spec.kind != TETHER_KIND_ACCEL) {
    const Vec3 g = to_wire(r.transpose() * w);
    for (int i = 0; i < 3; ++i) out.ch[static_cast<std::size_t>(i)] = g[i];
    at = 3;
  }
  if (spec.kind != TETHER_KIND_GYRO) {
    // acceleration of the mount point (rigid body), minus gravity: what a proof mass feels
    const Vec3& l = pose.lever_m;
    const Vec3 a = b.linear_acceleration_m_s2 + b.angular_acceleration_rad_s2.cross(l) + w.cross(w.cross(l));
    const Vec3 f = to_wire(r.transpose() * (a - view.gravity_m_s2));
    for (int i = 0; i < 3; ++i) out.ch[static_cast<std::size_t>(at + i)] = f[i];
  }
}

// a DVL: velocity at the mount in its frame, and the altitude over the bottom
void measure_dvl(const DeviceSpec& spec, const WorldView& view, const BodyKinematics& b, const DevicePose& pose,
                 Sample& out) {
  const Mat3& r = pose.rotation;
  const auto& p = std::get<RayParams>(spec.params);
  const Vec3 v = b.linear_velocity_m_s + b.angular_velocity_rad_s.cross(pose.lever_m);
  const Vec3 vw = to_wire(r.transpose() * v);
  bool hit = false;
  double d = p.max_range_m;
  cast(view, pose.position_m, -r.col(2), p.max_range_m, spec.body, hit, d);
  for (int i = 0; i < 3; ++i) out.ch[static_cast<std::size_t>(i)] = vw[i];
  out.ch[3] = d;
  // bottom lock: velocity over ground needs the bottom in range
  if (hit) out.flags = TETHER_DVL_FLAG_VELOCITY_VALID | TETHER_DVL_FLAG_ALTITUDE_VALID;
}

// a GPS: position and horizontal velocity, a fix only at the surface
void measure_gps(const DeviceSpec& spec, const WorldView& view, const BodyKinematics& b, const DevicePose& pose,
                 Sample& out) {
  const auto& p = std::get<GpsParams>(spec.params);
  const Vec3 v = b.linear_velocity_m_s + b.angular_velocity_rad_s.cross(pose.lever_m);
  out.valid = !view.water.present || pose.position_m.z() >= view.water.surface_z_m - p.surface_tolerance_m;
  out.ch[0] = pose.position_m.x();
  out.ch[1] = pose.position_m.y();
  out.ch[2] = pose.position_m.z();
  out.ch[3] = v.x();
  out.ch[4] = v.y();
  if (out.valid) out.flags = TETHER_GPS_FLAG_FIX;
}

// a contact sensor: the contact force on its body near it
void measure_contact(const DeviceSpec& spec, const WorldView& view, const DevicePose& pose, Sample& out) {
  const auto& p = std::get<ContactParams>(spec.params);
  double force = 0;
  int count = 0;
  for (const Contact& c : view.contacts) {
    if (c.body_a != spec.body && c.body_b != spec.body) continue;
    if (p.radius_m > 0 && (c.point_m - pose.position_m).norm() > p.radius_m) continue;
    force += c.force_n;
    ++count;
  }
  out.ch[0] = force;
  if (count > 0 && force >= p.min_force_n) out.flags = TETHER_CONTACT_FLAG_CONTACT;
}

// an encoder: its joint's coordinate and rate
void measure_encoder(const DeviceSpec& spec, const WorldView& view, Sample& out) {
  const auto& p = std::get<EncoderParams>(spec.params);
  if (p.joint < 0 || static_cast<std::size_t>(p.joint) >= view.joint_motion.size()) {
    out.valid = false;  // the runtime reported no joint motion
    return;
  }
  const JointMotion& m = view.joint_motion[static_cast<std::size_t>(p.joint)];
  out.ch[0] = m.position;
  out.ch[1] = m.rate;
}

// a load cell: the force its joint carries on the device's side
void measure_tension(const DeviceSpec& spec, const WorldView& view, const DevicePose& pose, Sample& out) {
  const Mat3& r = pose.rotation;
  const auto& p = std::get<TensionParams>(spec.params);
  if (p.joint < 0 || static_cast<std::size_t>(p.joint) >= view.joint_loads.size()) {
    out.valid = false;  // the step reported no joint loads
    return;
  }
  const JointLoad& load = view.joint_loads[static_cast<std::size_t>(p.joint)];
  // the force on the device's own side of the joint (the scenario mounts it on one)
  const Vec3 f = load.body_b == spec.body ? Vec3(-load.force_n) : load.force_n;
  const Vec3 w = to_wire(r.transpose() * f);
  out.ch[0] = f.norm();
  out.ch[1] = w.x();
  out.ch[2] = w.y();
  out.ch[3] = w.z();
}

}  // namespace

void measure(const DeviceSpec& spec, const WorldView& view, std::int64_t time_ns, Sample& out, const Vec3* beam) {
  out = Sample{};
  out.time_ns = time_ns;
  out.valid = true;
  if (spec.kind == TETHER_KIND_CLOCK) return;
  if (spec.body < 0 || static_cast<std::size_t>(spec.body) >= view.bodies.size()) {
    out.valid = false;  // a view that does not match the bank: no data rather than a crash
    return;
  }
  const BodyKinematics& b = view.bodies[static_cast<std::size_t>(spec.body)];
  const DevicePose pose = device_pose(spec.mount, b);
  const Mat3& r = pose.rotation;

  switch (spec.kind) {
    case TETHER_KIND_RANGE:
    case TETHER_KIND_ALTIMETER: {
      measure_ray(spec, view, pose, out);
      return;
    }
    case TETHER_KIND_SONAR: {
      measure_sonar(spec, view, pose, out, beam);
      return;
    }
    case TETHER_KIND_DEPTH: {
      if (view.water.present) {
        out.ch[0] = view.water.surface_z_m - pose.position_m.z();
        out.ch[1] = view.water.density_kg_m3 * view.gravity_m_s2.norm();
      }
      return;
    }
    case TETHER_KIND_GYRO:
    case TETHER_KIND_ACCEL:
    case TETHER_KIND_IMU: {
      measure_inertial(spec, view, b, pose, out);
      return;
    }
    case TETHER_KIND_INCLINOMETER: {
      out.ch[0] = std::atan2(r(2, 1), r(2, 2));               // left side up = right side down
      out.ch[1] = std::asin(std::clamp(r(2, 0), -1.0, 1.0));  // nose up
      return;
    }
    case TETHER_KIND_COMPASS: {
      const auto& p = std::get<CompassParams>(spec.params);
      // the x axis's east and north components; true heading, then magnetic
      out.ch[0] = std::atan2(r(0, 0), r(1, 0)) - p.declination_deg * deg;
      return;
    }
    case TETHER_KIND_DVL: {
      measure_dvl(spec, view, b, pose, out);
      return;
    }
    case TETHER_KIND_GPS: {
      measure_gps(spec, view, b, pose, out);
      return;
    }
    case TETHER_KIND_CONTACT: {
      measure_contact(spec, view, pose, out);
      return;
    }
    case TETHER_KIND_ENCODER: {
      measure_encoder(spec, view, out);
      return;
    }
    case TETHER_KIND_TENSION: {
      measure_tension(spec, view, pose, out);
      return;
    }
    // not a sensor (the clock returned above): no reading
    case TETHER_KIND_NONE:
    case TETHER_KIND_CLOCK:
    case TETHER_KIND_THRUSTER:
    case TETHER_KIND_DC_MOTOR:
    case TETHER_KIND_FIN:
    case TETHER_KIND_SERVO:
    case TETHER_KIND_WHEEL_DRIVE: break;
  }
  // every sensor returned in its case: no reading for the rest (and a value outside the enum)
  out.valid = false;
}

void finish_sample(const DeviceSpec& spec, Sample& s) {
  switch (spec.kind) {
    case TETHER_KIND_RANGE:
    case TETHER_KIND_SONAR:
    case TETHER_KIND_ALTIMETER: {
      const auto& p = std::get<RayParams>(spec.params);
      s.ch[0] = s.flags != 0 ? std::clamp(s.ch[0], p.min_range_m, p.max_range_m) : p.max_range_m;
      break;
    }
    case TETHER_KIND_DEPTH: s.ch[0] = std::max(0.0, s.ch[0]); break;
    case TETHER_KIND_COMPASS: s.ch[0] = wrap_two_pi(s.ch[0]); break;
    case TETHER_KIND_DVL: {
      const auto& p = std::get<RayParams>(spec.params);
      if (!(s.flags & TETHER_DVL_FLAG_VELOCITY_VALID)) s.ch[0] = s.ch[1] = s.ch[2] = 0;
      s.ch[3] = (s.flags & TETHER_DVL_FLAG_ALTITUDE_VALID) ? std::clamp(s.ch[3], 0.0, p.max_range_m) : p.max_range_m;
      break;
    }
    case TETHER_KIND_CONTACT: s.ch[0] = (s.flags & TETHER_CONTACT_FLAG_CONTACT) ? std::max(0.0, s.ch[0]) : 0.0; break;
    case TETHER_KIND_TENSION: s.ch[0] = std::max(0.0, s.ch[0]); break;
    // nothing to bound
    case TETHER_KIND_NONE:
    case TETHER_KIND_GYRO:
    case TETHER_KIND_ACCEL:
    case TETHER_KIND_IMU:
    case TETHER_KIND_INCLINOMETER:
    case TETHER_KIND_GPS:
    case TETHER_KIND_CLOCK:
    case TETHER_KIND_ENCODER:
    case TETHER_KIND_THRUSTER:
    case TETHER_KIND_DC_MOTOR:
    case TETHER_KIND_FIN:
    case TETHER_KIND_SERVO:
    case TETHER_KIND_WHEEL_DRIVE: break;
  }
}

std::int64_t gps_utc_cs(const GpsParams& p, std::int64_t time_ns) {
  const std::int64_t cs = time_ns >= 0 ? time_ns / 10'000'000 : -((-time_ns + 9'999'999) / 10'000'000);
  return p.utc_start_s * 100 + cs;
}

GeoPoint gps_point(const GpsParams& p, const Sample& s) {
  return local_to_geodetic(p.datum_lat_deg, p.datum_lon_deg, p.datum_alt_m, s.ch[0], s.ch[1], s.ch[2]);
}

void encode_sample(const DeviceSpec& spec, const Sample& s, std::uint8_t* out) {
  auto f32 = [&](std::size_t offset, double v) { tether_put_f32le(out + offset, static_cast<float>(v)); };
  switch (spec.kind) {
    case TETHER_KIND_RANGE:
      f32(TETHER_RANGE_OFFSET_DISTANCE_M, s.ch[0]);
      out[TETHER_RANGE_OFFSET_FLAGS] = s.flags;
      break;
    case TETHER_KIND_SONAR:
      f32(TETHER_SONAR_OFFSET_DISTANCE_M, s.ch[0]);
      out[TETHER_SONAR_OFFSET_FLAGS] = s.flags;
      break;
    case TETHER_KIND_ALTIMETER:
      f32(TETHER_ALTIMETER_OFFSET_ALTITUDE_M, s.ch[0]);
      out[TETHER_ALTIMETER_OFFSET_FLAGS] = s.flags;
      break;
    case TETHER_KIND_DEPTH: {
      const auto& p = std::get<DepthParams>(spec.params);
      f32(TETHER_DEPTH_OFFSET_DEPTH_M, s.ch[0]);
      f32(TETHER_DEPTH_OFFSET_PRESSURE_PA, p.atmospheric_pa + s.ch[1] * s.ch[0]);
      break;
    }
    case TETHER_KIND_GYRO: put_vec(out + TETHER_GYRO_OFFSET_WX, s, 0); break;
    case TETHER_KIND_ACCEL: put_vec(out + TETHER_ACCEL_OFFSET_AX, s, 0); break;
    case TETHER_KIND_IMU:
      put_vec(out + TETHER_IMU_OFFSET_GYRO, s, 0);
      put_vec(out + TETHER_IMU_OFFSET_ACCEL, s, 3);
      break;
    case TETHER_KIND_INCLINOMETER:
      f32(TETHER_INCLINOMETER_OFFSET_ROLL_RAD, s.ch[0]);
      f32(TETHER_INCLINOMETER_OFFSET_PITCH_RAD, s.ch[1]);
      break;
    case TETHER_KIND_COMPASS: {
      // a heading just below 2 pi can round up to 2 pi in binary32; keep [0, 2 pi)
      float h = static_cast<float>(s.ch[0]);
      if (h >= static_cast<float>(two_pi)) h = 0.0f;
      tether_put_f32le(out + TETHER_COMPASS_OFFSET_HEADING_RAD, h);
      break;
    }
    case TETHER_KIND_DVL:
      put_vec(out + TETHER_DVL_OFFSET_VX, s, 0);
      f32(TETHER_DVL_OFFSET_ALTITUDE_M, s.ch[3]);
      out[TETHER_DVL_OFFSET_FLAGS] = s.flags;
      break;
    case TETHER_KIND_GPS: {
      const auto& p = std::get<GpsParams>(spec.params);
      const GeoPoint g = gps_point(p, s);
      std::memset(out, 0, TETHER_GPS_SIZE);
      out[TETHER_GPS_OFFSET_FLAGS] = s.flags;
      tether_put_i32le(out + TETHER_GPS_OFFSET_LAT_E7, static_cast<std::int32_t>(std::llround(g.lat_deg * 1e7)));
      tether_put_i32le(out + TETHER_GPS_OFFSET_LON_E7, static_cast<std::int32_t>(std::llround(g.lon_deg * 1e7)));
      char* text = reinterpret_cast<char*>(out + TETHER_GPS_OFFSET_NMEA);
      const std::size_t n =
          format_gga(text, TETHER_GPS_NMEA_CAPACITY, gps_utc_cs(p, s.time_ns), g, p.satellites, p.hdop);
      out[TETHER_GPS_OFFSET_NMEA_LEN] = static_cast<std::uint8_t>(n);
      break;
    }
    case TETHER_KIND_CONTACT:
      out[TETHER_CONTACT_OFFSET_FLAGS] = s.flags;
      f32(TETHER_CONTACT_OFFSET_FORCE_N, s.ch[0]);
      break;
    case TETHER_KIND_ENCODER:
      f32(TETHER_ENCODER_OFFSET_POSITION, s.ch[0]);
      f32(TETHER_ENCODER_OFFSET_RATE, s.ch[1]);
      break;
    case TETHER_KIND_TENSION:
      f32(TETHER_TENSION_OFFSET_TENSION_N, s.ch[0]);
      f32(TETHER_TENSION_OFFSET_FX, s.ch[1]);
      f32(TETHER_TENSION_OFFSET_FY, s.ch[2]);
      f32(TETHER_TENSION_OFFSET_FZ, s.ch[3]);
      break;
    case TETHER_KIND_CLOCK:
      tether_put_u64le(out + TETHER_CLOCK_OFFSET_TIME_US,
                       s.time_ns > 0 ? static_cast<std::uint64_t>(s.time_ns / 1000) : 0u);
      break;
    // no sensor payload
    case TETHER_KIND_NONE:
    case TETHER_KIND_THRUSTER:
    case TETHER_KIND_DC_MOTOR:
    case TETHER_KIND_FIN:
    case TETHER_KIND_SERVO:
    case TETHER_KIND_WHEEL_DRIVE: break;
  }
}

void depth_wire_form(const DeviceSpec& spec, double* ch) {
  ch[1] = std::get<DepthParams>(spec.params).atmospheric_pa + ch[1] * ch[0];
}

}  // namespace tether::hal
