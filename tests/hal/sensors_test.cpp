// SPDX-License-Identifier: Apache-2.0
#include "tether/hal/sensors.hpp"

#include <cmath>
#include <string>

#include <doctest/doctest.h>

#include "hal_test_util.hpp"
#include "tether/hal/nmea.hpp"

using namespace tether::hal;
using namespace tether::hal::test;

namespace {

Sample read(const DeviceSpec& spec, const WorldView& w, std::int64_t t = 0) {
  Sample s;
  measure(spec, w, t, s);
  if (s.valid) finish_sample(spec, s);
  return s;
}

float f32_at(const std::uint8_t* p, std::size_t offset) { return tether_get_f32le(p + offset); }

}  // namespace

TEST_CASE("range: distance to a wall at a known distance and angle") {
  SimpleWorld w = make_world();
  w.add_tank(10, 5, -8);  // wall_x_max at x = 10
  w.bodies[0].position_m = Vec3(6, 0, -1);
  DeviceSpec s = make_spec(TETHER_KIND_RANGE, "psd_front");
  std::get<RayParams>(s.params).max_range_m = 20;
  s.mount.position_m = Vec3(0.5, 0, 0);

  SUBCASE("straight ahead") {
    const Sample r = read(s, w);
    CHECK(r.flags == TETHER_RANGE_FLAG_HIT);
    CHECK(r.ch[0] == doctest::Approx(3.5));
  }
  SUBCASE("the body yawed 40 degrees: the beam meets the wall obliquely") {
    w.bodies[0].orientation = rpy(0, 0, 40 * deg);
    // the mount point moves with the body: x = 6 + 0.5 cos 40
    const double x0 = 6 + 0.5 * std::cos(40 * deg);
    CHECK(read(s, w).ch[0] == doctest::Approx((10 - x0) / std::cos(40 * deg)));
  }
  SUBCASE("the sensor mounted at 25 degrees to starboard (a negative yaw)") {
    s.mount.orientation = rpy(0, 0, -25 * deg);
    CHECK(read(s, w).ch[0] == doctest::Approx(3.5 / std::cos(25 * deg)));
  }
  SUBCASE("nothing within range: max range and no hit flag") {
    std::get<RayParams>(s.params).max_range_m = 2;
    const Sample r = read(s, w);
    CHECK(r.flags == 0);
    CHECK(r.ch[0] == 2.0);
  }
  SUBCASE("payload: distance f32 and flags") {
    std::uint8_t p[TETHER_RANGE_SIZE];
    encode_sample(s, read(s, w), p);
    CHECK(f32_at(p, TETHER_RANGE_OFFSET_DISTANCE_M) == doctest::Approx(3.5));
    CHECK(p[TETHER_RANGE_OFFSET_FLAGS] == TETHER_RANGE_FLAG_HIT);
  }
}

TEST_CASE("sonar: the nearest echo within the cone") {
  SimpleWorld w = make_world();
  w.planes.push_back({Vec3(0, 0, 1), -1.0});  // floor 1 m below the sensor
  DeviceSpec s = make_spec(TETHER_KIND_SONAR, "sonar");
  auto& p = std::get<RayParams>(s.params);
  p.beam_width_deg = 20;
  p.rays = 9;
  // the axis is horizontal and misses the floor; the lowest edge ray is 10 degrees down
  const Sample r = read(s, w);
  CHECK(r.flags == TETHER_SONAR_FLAG_ECHO);
  CHECK(r.ch[0] == doctest::Approx(1.0 / std::sin(10 * deg)));
  p.rays = 1;  // only the axis: no echo
  CHECK(read(s, w).flags == 0);
}

TEST_CASE("altimeter: height above the floor, along the sensor's -z") {
  SimpleWorld w = make_world();
  w.add_tank(10, 5, -8);
  w.bodies[0].position_m = Vec3(0, 0, -3);
  DeviceSpec s = make_spec(TETHER_KIND_ALTIMETER, "alt");
  s.mount.position_m = Vec3(0, 0, -0.1);
  CHECK(read(s, w).ch[0] == doctest::Approx(4.9));
  CHECK(read(s, w).flags == TETHER_ALTIMETER_FLAG_VALID);
  w.bodies[0].orientation = rpy(20 * deg, 0, 0);  // rolled: the slant range is longer
  CHECK(read(s, w).ch[0] == doctest::Approx((5 - 0.1 * std::cos(20 * deg)) / std::cos(20 * deg)));
}

TEST_CASE("depth: metres below the surface and absolute pressure") {
  SimpleWorld w = make_world();
  w.water.present = true;
  w.water.density_kg_m3 = 1025;
  w.water.surface_z_m = 0.5;
  w.bodies[0].position_m = Vec3(1, 2, -2.0);
  DeviceSpec s = make_spec(TETHER_KIND_DEPTH, "depth");
  s.mount.position_m = Vec3(0, 0, 0.1);
  const Sample r = read(s, w);
  CHECK(r.ch[0] == doctest::Approx(2.4));
  std::uint8_t p[TETHER_DEPTH_SIZE];
  encode_sample(s, r, p);
  CHECK(f32_at(p, TETHER_DEPTH_OFFSET_DEPTH_M) == doctest::Approx(2.4));
  CHECK(f32_at(p, TETHER_DEPTH_OFFSET_PRESSURE_PA) == doctest::Approx(101325 + 1025 * 9.81 * 2.4));
  SUBCASE("above the water: 0 m and the atmosphere") {
    w.bodies[0].position_m.z() = 3;
    encode_sample(s, read(s, w), p);
    CHECK(f32_at(p, TETHER_DEPTH_OFFSET_DEPTH_M) == 0.0f);
    CHECK(f32_at(p, TETHER_DEPTH_OFFSET_PRESSURE_PA) == 101325.0f);
  }
}

TEST_CASE("gyro: body rates in the sensor frame, wire convention (y right, z down)") {
  SimpleWorld w = make_world();
  w.bodies[0].orientation = rpy(0, 0, 1.0);
  // a yaw rate (world z up) of 0.5 rad/s and a roll rate about the body's x axis
  const Vec3 body_x = w.bodies[0].orientation * Vec3::UnitX();
  w.bodies[0].angular_velocity_rad_s = Vec3(0, 0, 0.5) + 0.2 * body_x;
  DeviceSpec s = make_spec(TETHER_KIND_GYRO, "gyro");
  const Sample r = read(s, w);
  CHECK(r.ch[0] == doctest::Approx(0.2));
  CHECK(r.ch[1] == doctest::Approx(0).scale(1));
  CHECK(r.ch[2] == doctest::Approx(-0.5));  // turning left is negative yaw rate about z down
}

TEST_CASE("accelerometer: specific force") {
  SimpleWorld w = make_world();
  DeviceSpec s = make_spec(TETHER_KIND_ACCEL, "accel");
  SUBCASE("level at rest: +g up, i.e. (0, 0, -9.81) in the wire's z-down frame") {
    const Sample r = read(s, w);
    CHECK(r.ch[0] == doctest::Approx(0).scale(1));
    CHECK(r.ch[1] == doctest::Approx(0).scale(1));
    CHECK(r.ch[2] == doctest::Approx(-9.81));
    std::uint8_t p[TETHER_ACCEL_SIZE];
    encode_sample(s, r, p);
    CHECK(f32_at(p, TETHER_ACCEL_OFFSET_AZ) == doctest::Approx(-9.81));
  }
  SUBCASE("in free fall it reads zero") {
    w.bodies[0].linear_acceleration_m_s2 = w.gravity_m_s2;
    CHECK(Vec3(read(s, w).ch[0], read(s, w).ch[1], read(s, w).ch[2]).norm() == doctest::Approx(0).scale(1));
  }
  SUBCASE("rolled 90 degrees right side down: gravity's reaction along the sensor's y") {
    w.bodies[0].orientation = rpy(90 * deg, 0, 0);  // left side up
    const Sample r = read(s, w);
    // up is along the body's +y (left), which is -y on the wire
    CHECK(r.ch[1] == doctest::Approx(-9.81));
    CHECK(r.ch[2] == doctest::Approx(0).scale(1));
  }
  SUBCASE("at a lever arm on a spinning body: centripetal acceleration") {
    w.bodies[0].angular_velocity_rad_s = Vec3(0, 0, 2.0);
    s.mount.position_m = Vec3(0.5, 0, 0);
    const Sample r = read(s, w);
    CHECK(r.ch[0] == doctest::Approx(-4.0 * 0.5));
  }
  SUBCASE("imu: gyro and accelerometer in one reading") {
    DeviceSpec imu = make_spec(TETHER_KIND_IMU, "imu");
    w.bodies[0].angular_velocity_rad_s = Vec3(0.1, 0, 0);
    const Sample r = read(imu, w);
    CHECK(r.ch[0] == doctest::Approx(0.1));
    CHECK(r.ch[5] == doctest::Approx(-9.81));
    std::uint8_t p[TETHER_IMU_SIZE];
    encode_sample(imu, r, p);
    CHECK(f32_at(p, TETHER_IMU_OFFSET_GYRO) == doctest::Approx(0.1));
    CHECK(f32_at(p, TETHER_IMU_OFFSET_ACCEL + 8) == doctest::Approx(-9.81));
  }
}

TEST_CASE("inclinometer: roll right side down and pitch nose up are positive") {
  SimpleWorld w = make_world();
  DeviceSpec s = make_spec(TETHER_KIND_INCLINOMETER, "incl");
  // the runtime's z-up frame: +roll lifts the left side, +pitch lowers the nose
  w.bodies[0].orientation = rpy(0.2, 0.1, 2.0);
  const Sample r = read(s, w);
  CHECK(r.ch[0] == doctest::Approx(0.2));
  CHECK(r.ch[1] == doctest::Approx(-0.1));
}

TEST_CASE("compass: heading after a known yaw, with declination") {
  SimpleWorld w = make_world();
  DeviceSpec s = make_spec(TETHER_KIND_COMPASS, "compass");
  auto heading = [&](double yaw) {
    w.bodies[0].orientation = rpy(0, 0, yaw);
    return read(s, w).ch[0];
  };
  CHECK(heading(0) == doctest::Approx(pi / 2));           // x east: heading 90°
  CHECK(heading(pi / 2) == doctest::Approx(0).scale(1));  // x north
  CHECK(heading(pi) == doctest::Approx(3 * pi / 2));      // x west
  CHECK(heading(-pi / 2) == doctest::Approx(pi));         // x south
  CHECK(heading(60 * deg) == doctest::Approx(30 * deg));
  std::get<CompassParams>(s.params).declination_deg = 10;  // magnetic north 10° east of true
  CHECK(heading(60 * deg) == doctest::Approx(20 * deg));
  CHECK(heading(pi / 2) == doctest::Approx(350 * deg));  // wrapped into [0, 2 pi)
}

TEST_CASE("dvl: velocity over ground in the sensor frame, and altitude") {
  SimpleWorld w = make_world();
  w.add_tank(10, 5, -8);
  w.bodies[0].position_m = Vec3(0, 0, -5);
  w.bodies[0].orientation = rpy(0, 0, pi / 2);             // facing north
  w.bodies[0].linear_velocity_m_s = Vec3(0.1, 1.0, -0.2);  // north 1 m/s, a little east, sinking
  DeviceSpec s = make_spec(TETHER_KIND_DVL, "dvl");
  const Sample r = read(s, w);
  CHECK(r.flags == (TETHER_DVL_FLAG_VELOCITY_VALID | TETHER_DVL_FLAG_ALTITUDE_VALID));
  CHECK(r.ch[0] == doctest::Approx(1.0));  // forward
  CHECK(r.ch[1] == doctest::Approx(0.1));  // east is to starboard when facing north
  CHECK(r.ch[2] == doctest::Approx(0.2));  // sinking is +z down
  CHECK(r.ch[3] == doctest::Approx(3.0));
  SUBCASE("no bottom lock beyond the range: no velocity, max range") {
    std::get<RayParams>(s.params).max_range_m = 2;
    const Sample n = read(s, w);
    CHECK(n.flags == 0);
    CHECK(n.ch[0] == 0);
    CHECK(n.ch[3] == 2.0);
  }
}

TEST_CASE("gps: a fix only at the surface, latitude, longitude and a valid GGA") {
  SimpleWorld w = make_world();
  w.water.present = true;
  DeviceSpec s = make_spec(TETHER_KIND_GPS, "gps");
  auto& p = std::get<GpsParams>(s.params);
  p.datum_lat_deg = 43.0;
  p.datum_lon_deg = -70.0;
  p.utc_start_s = days_from_civil(2024, 6, 1) * 86400 + 10 * 3600;
  s.mount.position_m = Vec3(0, 0, 0.2);
  w.bodies[0].position_m = Vec3(100, 200, -0.2);  // antenna at z = 0
  const Sample r = read(s, w, 90'500'000'000);    // 90.5 s after the start
  REQUIRE(r.valid);
  std::uint8_t payload[TETHER_GPS_SIZE];
  encode_sample(s, r, payload);
  CHECK(payload[TETHER_GPS_OFFSET_FLAGS] == TETHER_GPS_FLAG_FIX);
  const GeoPoint g = local_to_geodetic(43, -70, 0, 100, 200, 0);
  CHECK(tether_get_i32le(payload + TETHER_GPS_OFFSET_LAT_E7) == std::llround(g.lat_deg * 1e7));
  CHECK(tether_get_i32le(payload + TETHER_GPS_OFFSET_LON_E7) == std::llround(g.lon_deg * 1e7));
  CHECK(g.lat_deg > 43.0);
  CHECK(g.lon_deg > -70.0);
  const std::size_t len = payload[TETHER_GPS_OFFSET_NMEA_LEN];
  const std::string gga(reinterpret_cast<const char*>(payload + TETHER_GPS_OFFSET_NMEA), len);
  CHECK(gga.rfind("$GPGGA,100130.50,43", 0) == 0);
  CHECK(nmea_checksum_ok(gga));
  for (std::size_t i = TETHER_GPS_OFFSET_NMEA + len; i < TETHER_GPS_SIZE; ++i) REQUIRE(payload[i] == 0);
  SUBCASE("under water: no fix") {
    w.bodies[0].position_m.z() = -0.5;
    CHECK_FALSE(read(s, w).valid);
  }
  SUBCASE("within the surface tolerance: still a fix") {
    w.bodies[0].position_m.z() = -0.24;
    CHECK(read(s, w).valid);
  }
}

TEST_CASE("contact: fires on contacts that involve the body") {
  SimpleWorld w = make_world(2);
  DeviceSpec s = make_spec(TETHER_KIND_CONTACT, "bump");
  s.mount.position_m = Vec3(0.5, 0, 0);
  CHECK(read(s, w).flags == 0);
  w.contacts.push_back({1, -1, Vec3(3, 0, 0), Vec3(0, 0, 1), 7.0});  // another body
  CHECK(read(s, w).flags == 0);
  w.contacts.push_back({-1, 0, Vec3(0.5, 0.05, 0), Vec3(-1, 0, 0), 12.5});
  Sample r = read(s, w);
  CHECK(r.flags == TETHER_CONTACT_FLAG_CONTACT);
  CHECK(r.ch[0] == 12.5);
  SUBCASE("a bump switch with a zone: contacts elsewhere on the hull do not count") {
    std::get<ContactParams>(s.params).radius_m = 0.1;
    w.contacts.back().point_m = Vec3(-0.5, 0, 0);
    CHECK(read(s, w).flags == 0);
  }
  SUBCASE("below the force threshold: no contact") {
    std::get<ContactParams>(s.params).min_force_n = 20;
    CHECK(read(s, w).flags == 0);
    CHECK(read(s, w).ch[0] == 0);  // the payload says 0 N when not touching
  }
}

TEST_CASE("tension: the force a joint pulls the device's body with, in the sensor frame") {
  SimpleWorld w = make_world(2);
  DeviceSpec s = make_spec(TETHER_KIND_TENSION, "load");
  CHECK_FALSE(read(s, w).valid);  // no joint named: no data
  std::get<TensionParams>(s.params).joint = 1;
  CHECK_FALSE(read(s, w).valid);  // the step reported no joint loads
  w.joint_loads.push_back({1, -1, Vec3(0, 0, 5)});
  w.joint_loads.push_back({0, 1, Vec3(-30, 0, 40)});  // on body 0 (side a): 50 N back and up
  Sample r = read(s, w);
  REQUIRE(r.valid);
  CHECK(r.ch[0] == doctest::Approx(50));
  // the wire frame: x forward, y right, z down
  CHECK(r.ch[1] == doctest::Approx(-30));
  CHECK(r.ch[2] == doctest::Approx(0));
  CHECK(r.ch[3] == doctest::Approx(-40));
  SUBCASE("on the other side of the joint: the opposite force") {
    s.body = 1;
    r = read(s, w);
    CHECK(r.ch[0] == doctest::Approx(50));
    CHECK(r.ch[1] == doctest::Approx(30));
    CHECK(r.ch[3] == doctest::Approx(40));
  }
  SUBCASE("a body turned 90 degrees left: the pull toward world -x is to the sensor's left") {
    w.bodies[0].orientation = Quat(Eigen::AngleAxisd(std::acos(-1.0) / 2, Vec3::UnitZ()));
    r = read(s, w);
    CHECK(r.ch[0] == doctest::Approx(50));
    CHECK(r.ch[1] == doctest::Approx(0).epsilon(1e-12));
    CHECK(r.ch[2] == doctest::Approx(-30));  // world -x is the body's +y (left): wire y (right) < 0
  }
  SUBCASE("the payload") {
    std::uint8_t p[TETHER_TENSION_SIZE];
    encode_sample(s, r, p);
    CHECK(f32_at(p, TETHER_TENSION_OFFSET_TENSION_N) == doctest::Approx(50));
    CHECK(f32_at(p, TETHER_TENSION_OFFSET_FX) == doctest::Approx(-30));
    CHECK(f32_at(p, TETHER_TENSION_OFFSET_FZ) == doctest::Approx(-40));
  }
  SUBCASE("noise below zero never gives a negative tension") {
    Sample n = r;
    n.ch[0] = -0.2;
    finish_sample(s, n);
    CHECK(n.ch[0] == 0);
  }
}

TEST_CASE("encoder: a joint's coordinate and rate, as the runtime reports them") {
  SimpleWorld w = make_world(1);
  DeviceSpec s = make_spec(TETHER_KIND_ENCODER, "odometer");
  CHECK_FALSE(read(s, w).valid);  // no joint named
  std::get<EncoderParams>(s.params).joint = 1;
  CHECK_FALSE(read(s, w).valid);  // no joint motion reported
  w.joint_motion.push_back({0.1, 0.2});
  w.joint_motion.push_back({-2.5, 4.0});
  const Sample r = read(s, w);
  REQUIRE(r.valid);
  CHECK(r.ch[0] == -2.5);
  CHECK(r.ch[1] == 4.0);
  std::uint8_t p[TETHER_ENCODER_SIZE];
  encode_sample(s, r, p);
  CHECK(f32_at(p, TETHER_ENCODER_OFFSET_POSITION) == doctest::Approx(-2.5));
  CHECK(f32_at(p, TETHER_ENCODER_OFFSET_RATE) == doctest::Approx(4.0));
}

TEST_CASE("clock: the sample time in microseconds") {
  SimpleWorld w = make_world();
  DeviceSpec s = make_spec(TETHER_KIND_CLOCK, "clock");
  std::uint8_t p[TETHER_CLOCK_SIZE];
  encode_sample(s, read(s, w, 1'234'567'890), p);
  CHECK(tether_get_u64le(p) == 1'234'567u);
}

TEST_CASE("a spec whose body is not in the view reads no data") {
  SimpleWorld w = make_world(1);
  CHECK_FALSE(read(make_spec(TETHER_KIND_DEPTH, "depth", 3), w).valid);
}
