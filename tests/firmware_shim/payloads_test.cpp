// SPDX-License-Identifier: Apache-2.0
// Device payload layouts and little-endian helpers (payloads.h), compiled as C++.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "tether/firmware_shim/payloads.h"

TEST_CASE("little-endian helpers") {
  uint8_t b[8] = {};
  tether_put_u16le(b, 0xBEEF);
  CHECK(b[0] == 0xEF);
  CHECK(b[1] == 0xBE);
  CHECK(tether_get_u16le(b) == 0xBEEF);
  tether_put_u32le(b, 0x01020304u);
  CHECK(b[0] == 0x04);
  CHECK(b[3] == 0x01);
  CHECK(tether_get_u32le(b) == 0x01020304u);
  tether_put_u64le(b, 0x0102030405060708ull);
  CHECK(b[0] == 0x08);
  CHECK(b[7] == 0x01);
  CHECK(tether_get_u64le(b) == 0x0102030405060708ull);
  for (int32_t v :
       {0, 1, -1, 123456789, -123456789, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()}) {
    tether_put_i32le(b, v);
    CHECK(tether_get_i32le(b) == v);
  }
  tether_put_i32le(b, -2);
  CHECK(b[0] == 0xFE);
  CHECK(b[3] == 0xFF);
}

TEST_CASE("floats are IEEE-754 binary32, little-endian, at any offset") {
  uint8_t b[9] = {};
  tether_put_f32le(b + 1, 1.0f);
  CHECK(b[1] == 0x00);
  CHECK(b[2] == 0x00);
  CHECK(b[3] == 0x80);
  CHECK(b[4] == 0x3F);
  for (float v : {0.0f, -0.0f, 1.5f, -3.25e-7f, 6.5e30f, std::numeric_limits<float>::infinity()}) {
    tether_put_f32le(b + 3, v);
    float back = tether_get_f32le(b + 3);
    CHECK(std::memcmp(&back, &v, 4) == 0);
  }
  tether_put_f32le(b, std::nanf(""));
  CHECK(std::isnan(tether_get_f32le(b)));
}

TEST_CASE("every kind has a size, a direction and a name") {
  struct Kind {
    uint8_t kind;
    uint16_t size;
    uint8_t direction;
    const char* name;
  };
  const Kind kinds[] = {
      {TETHER_KIND_RANGE, 5, TETHER_DIRECTION_SENSOR, "range"},
      {TETHER_KIND_SONAR, 5, TETHER_DIRECTION_SENSOR, "sonar"},
      {TETHER_KIND_ALTIMETER, 5, TETHER_DIRECTION_SENSOR, "altimeter"},
      {TETHER_KIND_DEPTH, 8, TETHER_DIRECTION_SENSOR, "depth"},
      {TETHER_KIND_GYRO, 12, TETHER_DIRECTION_SENSOR, "gyro"},
      {TETHER_KIND_ACCEL, 12, TETHER_DIRECTION_SENSOR, "accel"},
      {TETHER_KIND_IMU, 24, TETHER_DIRECTION_SENSOR, "imu"},
      {TETHER_KIND_INCLINOMETER, 8, TETHER_DIRECTION_SENSOR, "inclinometer"},
      {TETHER_KIND_COMPASS, 4, TETHER_DIRECTION_SENSOR, "compass"},
      {TETHER_KIND_DVL, 17, TETHER_DIRECTION_SENSOR, "dvl"},
      {TETHER_KIND_GPS, 92, TETHER_DIRECTION_SENSOR, "gps"},
      {TETHER_KIND_CONTACT, 5, TETHER_DIRECTION_SENSOR, "contact"},
      {TETHER_KIND_CLOCK, 8, TETHER_DIRECTION_SENSOR, "clock"},
      {TETHER_KIND_TENSION, 16, TETHER_DIRECTION_SENSOR, "tension"},
      {TETHER_KIND_ENCODER, 8, TETHER_DIRECTION_SENSOR, "encoder"},
      {TETHER_KIND_THRUSTER, 4, TETHER_DIRECTION_ACTUATOR, "thruster"},
      {TETHER_KIND_DC_MOTOR, 4, TETHER_DIRECTION_ACTUATOR, "dc_motor"},
      {TETHER_KIND_FIN, 4, TETHER_DIRECTION_ACTUATOR, "fin"},
      {TETHER_KIND_SERVO, 4, TETHER_DIRECTION_ACTUATOR, "servo"},
      {TETHER_KIND_WHEEL_DRIVE, 8, TETHER_DIRECTION_ACTUATOR, "wheel_drive"},
  };
  for (const auto& k : kinds) {
    CAPTURE(k.name);
    CHECK(tether_kind_payload_size(k.kind) == k.size);
    CHECK(tether_kind_direction(k.kind) == k.direction);
    CHECK(std::string(tether_kind_name(k.kind)) == k.name);
    CHECK(k.size <= TETHER_KIND_MAX_SIZE);
  }
  CHECK(tether_kind_payload_size(TETHER_KIND_NONE) == 0);
  CHECK(tether_kind_direction(16) == 0);
  CHECK(std::string(tether_kind_name(200)) == "unknown");
}

TEST_CASE("a GPS reading built field by field") {
  uint8_t gps[TETHER_GPS_SIZE] = {};
  const char* nmea = "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47";
  gps[TETHER_GPS_OFFSET_FLAGS] = TETHER_GPS_FLAG_FIX;
  tether_put_i32le(gps + TETHER_GPS_OFFSET_LAT_E7, 481173000);
  tether_put_i32le(gps + TETHER_GPS_OFFSET_LON_E7, -115166667);
  gps[TETHER_GPS_OFFSET_NMEA_LEN] = static_cast<uint8_t>(std::strlen(nmea));
  std::memcpy(gps + TETHER_GPS_OFFSET_NMEA, nmea, std::strlen(nmea));
  CHECK(std::strlen(nmea) <= TETHER_GPS_NMEA_CAPACITY);
  CHECK(tether_get_i32le(gps + TETHER_GPS_OFFSET_LAT_E7) == 481173000);
  CHECK(tether_get_i32le(gps + TETHER_GPS_OFFSET_LON_E7) == -115166667);
  CHECK(std::string(reinterpret_cast<const char*>(gps + TETHER_GPS_OFFSET_NMEA), gps[TETHER_GPS_OFFSET_NMEA_LEN]) ==
        nmea);
}
