// SPDX-License-Identifier: Apache-2.0
#include "tether/scenario/scenario_devices.hpp"

#include <cmath>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "test_paths.hpp"
#include "tether/hal/device_bank.hpp"

using namespace tether;
using namespace tether::runtime;

namespace {

// parses `text` (a YAML list of devices) as vehicle auv, part hull, body 0
std::vector<hal::DeviceSpec> parse(const std::string& text, std::vector<std::string>* errors = nullptr) {
  const ConfigNode root = load_config_text(text, "devices.yaml");
  std::vector<hal::DeviceSpec> out;
  parse_devices(root, "auv", "hull", 0, out);
  if (errors)
    *errors = root.context().errors;
  else if (!root.context().errors.empty())
    FAIL(root.context().errors.front());
  return out;
}

bool has_error(const std::vector<std::string>& errors, const std::string& part) {
  for (const auto& e : errors)
    if (e.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("parse_devices: every key of a device") {
  const auto specs = parse(R"(
- name: psd_front
  kind: range
  mount: {position_m: [0.6, 0.1, -0.05], orientation_rpy_deg: [0, 0, 90]}
  rate_hz: 20
  params: {min_range_m: 0.1, max_range_m: 4}
  noise: {offset: 0.01, scale: 1.02, stddev: 0.005, uniform: 0.001, bias_walk_stddev: 0.0001,
          resolution: 0.001, dropout: 0.02, delay_steps: 2}
- name: imu
  kind: imu
  noise: {stddev: 0.001}
  accel_noise: {stddev: 0.05, bias_walk_stddev: 0.001}
- name: thruster_left
  kind: thruster
  mount: {position_m: [-0.5, 0.15, 0]}
  params: {model: yoerger, max_thrust_n: 25, max_speed_rad_s: 250, time_constant_s: 0.15, dead_band: 0.02}
)");
  REQUIRE(specs.size() == 3);
  const hal::DeviceSpec& psd = specs[0];
  CHECK(psd.name.full() == "auv.hull.psd_front");
  CHECK(psd.kind == TETHER_KIND_RANGE);
  CHECK(psd.body == 0);
  CHECK(psd.mount.position_m.isApprox(Vec3(0.6, 0.1, -0.05)));
  CHECK((psd.mount.orientation * Vec3::UnitX()).isApprox(Vec3::UnitY(), 1e-12));
  CHECK(psd.rate_hz == 20);
  CHECK(std::get<hal::RayParams>(psd.params).min_range_m == 0.1);
  CHECK(std::get<hal::RayParams>(psd.params).max_range_m == 4);
  CHECK(psd.noise.offset == 0.01);
  CHECK(psd.noise.scale == 1.02);
  CHECK(psd.noise.stddev == 0.005);
  CHECK(psd.noise.uniform == 0.001);
  CHECK(psd.noise.bias_walk_stddev == 0.0001);
  CHECK(psd.noise.resolution == 0.001);
  CHECK(psd.noise.dropout == 0.02);
  CHECK(psd.noise.delay_steps == 2);
  CHECK(specs[1].noise.stddev == 0.001);
  CHECK(specs[1].noise_b.stddev == 0.05);
  CHECK(specs[1].noise_b.bias_walk_stddev == 0.001);
  const auto& t = std::get<hal::ThrusterParams>(specs[2].params);
  CHECK(t.model == hal::RotorModel::yoerger);
  CHECK(t.max_thrust_n == 25);
  CHECK(t.dead_band == 0.02);
  CHECK(t.ct == 0);  // derived later by the bank
}

TEST_CASE("parse_devices: defaults and every kind's params") {
  const auto specs = parse(R"(
- {name: sonar, kind: sonar, params: {beam_width_deg: 12, rays: 13, max_range_m: 30}}
- {name: alt, kind: altimeter}
- {name: depth, kind: depth, params: {atmospheric_pa: 100000}}
- {name: gyro, kind: gyro}
- {name: acc, kind: accel}
- {name: incl, kind: inclinometer}
- {name: compass, kind: compass, params: {declination_deg: -3.5}}
- {name: dvl, kind: dvl, params: {max_range_m: 20}, altitude_noise: {stddev: 0.02}}
- {name: gps, kind: gps, params: {datum_lat_deg: 43.5, datum_lon_deg: -70.25, utc_start: "2024-06-01T12:00:00Z",
                                  satellites: 10, hdop: 1.2, surface_tolerance_m: 0.1, datum_alt_m: 2}}
- {name: bump, kind: contact, params: {radius_m: 0.2, min_force_n: 1}}
- {name: clock, kind: clock}
- {name: motor, kind: dc_motor, params: {kt_nm_per_a: 0.02, ke_v_s_per_rad: 0.02, resistance_ohm: 0.5,
                                         inertia_kg_m2: 0.001, damping_nm_s_per_rad: 0.0001, supply_v: 24,
                                         ct: 0.0001, cq: 0.00001}}
- {name: rudder, kind: fin, params: {area_m2: 0.02, cl_alpha_per_rad: 2.5, stall_angle_deg: 18, cd0: 0.03,
                                     cd_alpha: 0.9, max_angle_deg: 25, rate_deg_s: 60, air_density_kg_m3: 1.2}}
- {name: servo, kind: servo, params: {min_angle_deg: -45, max_angle_deg: 45, max_rate_deg_s: 90}}
- {name: drive, kind: wheel_drive, params: {track_m: 0.4, wheel_radius_m: 0.08, max_wheel_speed_rad_s: 15,
                                            time_constant_s: 0.1, friction: 0.6, slip_speed_m_s: 0.2}}
)");
  REQUIRE(specs.size() == 15);
  CHECK(std::get<hal::RayParams>(specs[0].params).rays == 13);
  CHECK(std::get<hal::RayParams>(specs[1].params).max_range_m == 50);  // default
  CHECK(std::get<hal::DepthParams>(specs[2].params).atmospheric_pa == 100000);
  CHECK(std::get<hal::CompassParams>(specs[6].params).declination_deg == -3.5);
  CHECK(specs[7].noise_b.stddev == 0.02);
  const auto& gps = std::get<hal::GpsParams>(specs[8].params);
  CHECK(gps.utc_start_s == 1'717'243'200);
  CHECK(gps.satellites == 10);
  CHECK(std::get<hal::ContactParams>(specs[9].params).radius_m == 0.2);
  CHECK(std::get<hal::DcMotorParams>(specs[11].params).supply_v == 24);
  CHECK(std::get<hal::FinParams>(specs[12].params).rate_deg_s == 60);
  CHECK(std::get<hal::ServoParams>(specs[13].params).max_rate_deg_s == 90);
  CHECK(std::get<hal::WheelDriveParams>(specs[14].params).track_m == 0.4);
  for (const auto& s : specs) {
    std::string why;
    CHECK_MESSAGE(hal::validate_spec(s, &why), why);
  }
}

TEST_CASE("parse_devices: positioned errors") {
  std::vector<std::string> errors;
  parse(R"(
- name: psd
  kind: laser
- name: depth
  kind: depth
  colour: red
  noise: {stddev: high, dropout: 1.5, delay_steps: -1}
- name: depth
  kind: depth
- name: t
  kind: thruster
  rate_hz: 10
  params: {model: turbo, dead_band: 1}
- name: gyro
  kind: gyro
  params: {range: 4}
- name: "bad name"
  kind: clock
  noise: {stddev: 1}
- kind: range
  params: {min_range_m: 5, max_range_m: 4}
- name: gps
  kind: gps
  params: {utc_start: "2024-02-30T00:00:00"}
- name: imu
  kind: imu
  accel_noise: {delay_steps: 3}
- name: alt
  kind: altimeter
  accel_noise: {stddev: 1}
)",
        &errors);
  CHECK(has_error(errors, "devices.yaml:3:9: [0].kind: expected a device kind, one of range, sonar"));
  CHECK(has_error(errors, "[1].colour: unknown key"));
  CHECK(has_error(errors, "[1].noise.stddev: expected a number >= 0, got \"high\""));
  CHECK(has_error(errors, "[1].noise.dropout: expected a number from 0 to 1"));
  CHECK(has_error(errors, "[1].noise.delay_steps"));
  CHECK(has_error(errors, "[2].name: duplicate device name \"auv.hull.depth\""));
  CHECK(has_error(errors, "[3].rate_hz: rate_hz applies to sensors only"));
  CHECK(has_error(errors, "[3].params.model: expected one of first_order, yoerger"));
  CHECK(has_error(errors, "[3].params.dead_band"));
  CHECK(has_error(errors, "[4].params: a gyro has no parameters"));
  CHECK(has_error(errors, "[5].name: \"bad name\" is not a valid device name"));
  CHECK(has_error(errors, "[5].noise: a clock takes no noise"));
  CHECK(has_error(errors, "[6].name: missing"));
  CHECK(has_error(errors, "[6].params.min_range_m: must be below max_range_m"));
  CHECK(has_error(errors, "[7].params.utc_start: expected a UTC time"));
  CHECK(has_error(errors, "[8].accel_noise: dropout and delay_steps apply to the whole reading"));
  CHECK(has_error(errors, "[9].accel_noise: unknown key"));
}

TEST_CASE("parse_devices: an absent list is empty, a non-list is an error") {
  CHECK(parse("").empty());
  std::vector<std::string> errors;
  parse("{name: psd}", &errors);
  CHECK(has_error(errors, "expected a list"));
}

TEST_CASE("parse_utc_seconds") {
  std::int64_t s = 0;
  CHECK(parse_utc_seconds("1970-01-01T00:00:00Z", s));
  CHECK(s == 0);
  CHECK(parse_utc_seconds("2024-01-01T00:00:01", s));
  CHECK(s == 1'704'067'201);
  CHECK(parse_utc_seconds("2024-02-29 23:59:59Z", s));
  CHECK_FALSE(parse_utc_seconds("2023-02-29T00:00:00Z", s));
  CHECK_FALSE(parse_utc_seconds("2024-1-01T00:00:00Z", s));
  CHECK_FALSE(parse_utc_seconds("1969-12-31T23:59:59Z", s));
  CHECK_FALSE(parse_utc_seconds("2024-01-01T24:00:00Z", s));
  CHECK_FALSE(parse_utc_seconds("", s));
}

TEST_CASE("config/scenarios/auv_sensors.yaml: its devices parse and build a bank") {
  const ConfigNode root = load_config_file(TETHER_SOURCE_DIR + "/config/scenarios/auv_sensors.yaml");
  const ConfigNode hull = root["vehicles"].at(0)["bodies"].at(0);
  std::vector<hal::DeviceSpec> specs;
  parse_devices(hull["devices"], "auv", "hull", 0, specs);
  for (const auto& e : root.context().errors) FAIL(e);
  CHECK(specs.size() == 20);
  int psds = 0, thrusters = 0;
  for (const auto& s : specs) {
    psds += s.kind == TETHER_KIND_RANGE;
    thrusters += s.kind == TETHER_KIND_THRUSTER;
  }
  CHECK(psds == 5);
  CHECK(thrusters == 4);
  const hal::DeviceBank bank(specs, 42, 1);
  CHECK(bank.find("auv.hull.gps") >= 0);
  CHECK(bank.find("auv.hull.thruster_vertical_back") >= 0);
}
