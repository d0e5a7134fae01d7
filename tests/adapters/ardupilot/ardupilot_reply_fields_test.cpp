// SPDX-License-Identifier: Apache-2.0
// The optional reply fields of the ardupilot_json endpoint: `rangefinders:` puts a range,
// sonar or altimeter device's reading into rng_N, `wind_from_current` the water current
// into velocity_wind (NED); read back the way ArduPilot reads them (the stand-in's parser).
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "tether/ardupilot/ardupilot_endpoint.hpp"
#include "tether/ardupilot_standin/ardupilot_standin.hpp"
#include "tether/endpoints/endpoint_factory.hpp"
#include "tether/loop/session.hpp"
#include "ardupilot_test_util.hpp"

using namespace tether;
using namespace tether::runtime;
namespace ap = tether::adapters::ardupilot;

namespace {

std::string fields_scenario(const std::string& endpoint_extra) {
  return R"(name: ardupilot_fields
world:
  gravity_m_s2: [0, 0, -9.81]
  water: {density_kg_m3: 1000, surface_z_m: 0, current_m_s: [0.3, -0.2, 0]}
  tank: {size_m: [20, 20, 10], floor_z_m: -10}
vehicles:
  - name: auv
    bodies:
      - name: hull
        shape: {type: sphere, radius_m: 0.2}
        mass_kg: 34.3
        initial: {position_m: [0, 0, -4]}
        devices:
          - {name: thruster, kind: thruster}
          - {name: altimeter, kind: altimeter}
          - {name: depth, kind: depth}
          - {name: imu, kind: imu, noise: {offset: 0.05}}
loop: {period_ms: 10, real_time_factor: 0, steps: 50}
endpoints:
  - name: ap
    type: ardupilot_json
    vehicle: auv
    deadline_ms: 5000
    port: 0
    connect_timeout_ms: 10000
    channels: [{channel: 1, actuator: thruster}]
)" + endpoint_extra;
}

}  // namespace

TEST_CASE("ardupilot reply fields: rng_N from an altimeter and velocity_wind from the current, read ArduPilot's way") {
  const Scenario sc = parse_scenario(
      fields_scenario("    rangefinders: [{rng: 2, device: altimeter}]\n    wind_from_current: true\n    imu: imu\n"),
      "f.yaml");
  ap::FixedPwm law(1500);
  ap::StandInOptions o;
  o.recv_timeout_ms = 10;
  const ardupilot_test::StandInFlight flight = ardupilot_test::fly_with_standin(sc, law, o);
  REQUIRE(flight.outcome == Outcome::completed);

  const ap::SensorReading& r = flight.last;
  CHECK((r.fields & ap::field_rng_1) == 0);  // rng_1 is not mapped
  REQUIRE((r.fields & (ap::field_rng_1 << 1)) != 0);
  CHECK(r.rng_m[1] == doctest::Approx(6.0).epsilon(0.02));  // 4 m deep in a 10 m tank: 6 m to the floor
  REQUIRE((r.fields & ap::field_velocity_wind) != 0);
  // east 0.3, north -0.2 (ENU) is north -0.2, east 0.3, down 0 (NED)
  CHECK(r.velocity_wind_m_s.x() == doctest::Approx(-0.2));
  CHECK(r.velocity_wind_m_s.y() == doctest::Approx(0.3));
  CHECK(r.velocity_wind_m_s.z() == doctest::Approx(0.0));
  // the imu device's reading, with its bias (0.05 rad/s on each gyro axis), in FRD
  CHECK(r.gyro_rad_s.x() == doctest::Approx(0.05).epsilon(0.01));
  CHECK(r.gyro_rad_s.y() == doctest::Approx(-0.05).epsilon(0.01));
  CHECK(r.gyro_rad_s.z() == doctest::Approx(-0.05).epsilon(0.01));
}

TEST_CASE("ardupilot reply fields: without them the reply has neither, and mistakes are positioned") {
  auto errors_of = [](const std::string& extra) {
    return tether::ardupilot_test::endpoint_config_errors(fields_scenario(extra), "f.yaml");
  };
  CHECK(errors_of("").empty());
  const std::string all = errors_of(
      "    rangefinders:\n      - {rng: 7, device: altimeter}\n      - {rng: 1, device: depth}\n"
      "      - {rng: 2, device: nothing}\n      - {rng: 3}\n    wind_from_current: maybe\n    imu: depth\n");
  INFO(all);
  CHECK(all.find("endpoints[0].rangefinders[0].rng:") != std::string::npos);
  CHECK(all.find("endpoints[0].rangefinders[1].device: \"auv.hull.depth\" is a depth; a rangefinder is a range, "
                 "sonar or altimeter device") != std::string::npos);
  CHECK(all.find("endpoints[0].rangefinders[2].device: no device \"nothing\" on vehicle \"auv\"") != std::string::npos);
  CHECK(all.find("endpoints[0].rangefinders[3]") != std::string::npos);
  CHECK(all.find("endpoints[0].wind_from_current") != std::string::npos);
  CHECK(all.find("endpoints[0].imu: \"auv.hull.depth\" is a depth; `imu` names an imu device") != std::string::npos);
}

TEST_CASE("ardupilot keys: absurd values (1e308, NaN, wrong types) are refused with their position") {
  auto errors_of = [](const std::string& extra) {
    return tether::ardupilot_test::endpoint_config_errors(fields_scenario(extra), "f.yaml");
  };
  const std::string all = errors_of(
      "    rangefinders: [{rng: 1e308, device: altimeter}]\n    imu: [1, 2]\n"
      "    home_m: [1e308, .nan, 0]\n    mavlink:\n      script:\n        - {at_s: .nan, arm: true}\n"
      "        - {at_s: 1, depth_m: 1e308}\n        - {at_s: 1, heading_deg: .nan}\n"
      "        - {at_s: 1e308, mode: ALT_HOLD}\n        - {at_s: 1, manual: {x: .nan}}\n"
      "        - {at_s: 1, param: {name: PILOT_SPEED, value: .inf}}\n");
  INFO(all);
  CHECK(all.find("endpoints[0].rangefinders[0].rng:") != std::string::npos);
  CHECK(all.find("endpoints[0].imu:") != std::string::npos);
  CHECK(all.find("endpoints[0].home_m") != std::string::npos);
  CHECK(all.find("endpoints[0].mavlink.script[0].at_s:") != std::string::npos);
  CHECK(all.find("endpoints[0].mavlink.script[1].depth_m:") != std::string::npos);
  CHECK(all.find("endpoints[0].mavlink.script[2].heading_deg:") != std::string::npos);
  CHECK(all.find("endpoints[0].mavlink.script[3].at_s:") != std::string::npos);
  CHECK(all.find("endpoints[0].mavlink.script[4].manual.x:") != std::string::npos);
  CHECK(all.find("endpoints[0].mavlink.script[5].param.value:") != std::string::npos);
}
