// SPDX-License-Identifier: Apache-2.0
#include "tether/hal/device_spec.hpp"

#include <string>

#include <doctest/doctest.h>

#include "hal_test_util.hpp"

using namespace tether::hal;
using namespace tether::hal::test;

TEST_CASE("kinds: names, channels and payload sizes agree with payloads.h") {
  for (int k = 0; k < 128; ++k) {
    const auto kind = static_cast<DeviceKind>(k);
    const KindInfo& info = kind_info(kind);
    const std::uint16_t size = tether_kind_payload_size(static_cast<std::uint8_t>(k));
    if (size == 0) {
      CHECK(std::string(info.name) == "unknown");
      continue;
    }
    INFO(info.name);
    CHECK(std::string(info.name) == tether_kind_name(static_cast<std::uint8_t>(k)));
    CHECK(kind_from_name(info.name) == kind);
    CHECK(info.actuator == (tether_kind_direction(static_cast<std::uint8_t>(k)) == TETHER_DIRECTION_ACTUATOR));
    CHECK(info.group_a_channels <= info.noisy_channels);
    CHECK(info.noisy_channels <= info.channels);
    CHECK((info.noise_b_key != nullptr) == (info.noisy_channels > info.group_a_channels));
    std::string why;
    CHECK_MESSAGE(validate_spec(make_spec(kind, "dev"), &why), why);
    // the properties generic code asks instead of naming a kind fit the kind
    if (info.one_command) CHECK((info.actuator && info.channels == 1));
    if (info.reads_joint_loads || info.reads_joint_coordinates || info.wire_form) CHECK_FALSE(info.actuator);
    if (info.react) CHECK(info.actuator);
  }
  CHECK(kind_from_name("laser") == TETHER_KIND_NONE);
  // the kinds the session, the recorder, the device bank and the ArduPilot endpoint used to
  // name, as properties now
  CHECK(kind_info(TETHER_KIND_TENSION).reads_joint_loads);
  CHECK(kind_info(TETHER_KIND_ENCODER).reads_joint_coordinates);
  CHECK((kind_info(TETHER_KIND_DEPTH).wire_form != nullptr));
  CHECK((kind_info(TETHER_KIND_DC_MOTOR).react != nullptr));
  int one_command = 0;
  for (DeviceKind k : {TETHER_KIND_THRUSTER, TETHER_KIND_DC_MOTOR, TETHER_KIND_FIN, TETHER_KIND_SERVO})
    one_command += kind_info(k).one_command ? 1 : 0;
  CHECK(one_command == 4);
  CHECK_FALSE(kind_info(TETHER_KIND_WHEEL_DRIVE).one_command);
}

TEST_CASE("validate_spec: what it refuses") {
  std::string why;
  DeviceSpec s = make_spec(TETHER_KIND_RANGE, "psd");
  s.name.device = "bad name";
  CHECK_FALSE(validate_spec(s, &why));
  s = make_spec(TETHER_KIND_RANGE, "psd");
  std::get<RayParams>(s.params).min_range_m = 10;
  CHECK_FALSE(validate_spec(s, &why));
  CHECK(why.find("min_range_m") != std::string::npos);
  s = make_spec(TETHER_KIND_RANGE, "psd");
  s.params = ThrusterParams{};
  CHECK_FALSE(validate_spec(s, &why));
  s = make_spec(TETHER_KIND_THRUSTER, "t");
  s.rate_hz = 10;
  CHECK_FALSE(validate_spec(s, &why));
  s = make_spec(TETHER_KIND_CLOCK, "clock");
  s.noise.stddev = 1;
  CHECK_FALSE(validate_spec(s, &why));
  s = make_spec(TETHER_KIND_DEPTH, "depth");
  s.noise_b.stddev = 1;  // a depth sensor has one noise group
  CHECK_FALSE(validate_spec(s, &why));
  s = make_spec(TETHER_KIND_IMU, "imu");
  s.noise_b.stddev = 1;
  CHECK(validate_spec(s, &why));
  s.noise_b.delay_steps = 1;  // delay belongs to the device's first noise
  CHECK_FALSE(validate_spec(s, &why));
  s = make_spec(TETHER_KIND_DEPTH, "depth");
  s.mount.orientation = Quat(2, 0, 0, 0);
  CHECK_FALSE(validate_spec(s, &why));
  s = make_spec(TETHER_KIND_DEPTH, "depth", -1);
  CHECK_FALSE(validate_spec(s, &why));
}

TEST_CASE("resolve_thruster: derived coefficients") {
  ThrusterParams p;
  p.max_thrust_n = 40;
  p.max_speed_rad_s = 200;
  p.time_constant_s = 0.25;
  const ThrusterParams r = resolve_thruster(p);
  CHECK(r.ct == doctest::Approx(40.0 / 40000.0));
  CHECK(r.alpha == doctest::Approx(1.0 / (2 * 0.25 * 200)));
  CHECK(r.beta == doctest::Approx(r.alpha * 40000));
  p.ct = 1e-3;
  CHECK(resolve_thruster(p).ct == 1e-3);
}
