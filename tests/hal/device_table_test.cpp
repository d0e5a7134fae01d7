// SPDX-License-Identifier: Apache-2.0
#include "tether/hal/device_table.hpp"

#include <sstream>
#include <string>

#include <doctest/doctest.h>

#include "hal_test_util.hpp"

using namespace tether::hal;
using namespace tether::hal::test;

TEST_CASE("device table: text columns and JSON rows") {
  DeviceSpec depth = make_spec(TETHER_KIND_DEPTH, "depth");
  depth.noise.stddev = 0.01;
  depth.noise.dropout = 0.05;
  depth.rate_hz = 20;
  DeviceSpec imu = make_spec(TETHER_KIND_IMU, "imu");
  imu.noise_b.bias_walk_stddev = 0.001;
  DeviceSpec thr = make_spec(TETHER_KIND_THRUSTER, "thruster_left");
  thr.mount.position_m = Vec3(-0.5, 0.1, 0);
  thr.mount.orientation = rpy(0, 0, 10 * deg);
  const DeviceBank bank({depth, imu, thr}, 1, 1);

  const std::string text = device_table_text(bank);
  std::istringstream lines(text);
  std::string header, row0, row1, row2;
  std::getline(lines, header);
  std::getline(lines, row0);
  std::getline(lines, row1);
  std::getline(lines, row2);
  CHECK(header.rfind("#  name", 0) == 0);
  CHECK(header.find("direction") != std::string::npos);
  CHECK(row0.find("auv.hull.depth") != std::string::npos);
  CHECK(row0.find("20 Hz") != std::string::npos);
  CHECK(row0.find("stddev=0.01 dropout=0.05") != std::string::npos);
  CHECK(row1.find("accel.bias_walk=0.001") != std::string::npos);
  CHECK(row2.find("actuator") != std::string::npos);
  CHECK(row2.find("every step") != std::string::npos);
  // columns line up: every row's kind starts where the header's does
  CHECK(row0.find(" depth ") + 1 == header.find("kind"));

  const nlohmann::json j = device_table_json(bank);
  REQUIRE(j.is_array());
  REQUIRE(j.size() == 3);
  CHECK(j[0]["name"] == "auv.hull.depth");
  CHECK(j[0]["kind"] == "depth");
  CHECK(j[0]["kind_id"] == TETHER_KIND_DEPTH);
  CHECK(j[0]["payload_size"] == TETHER_DEPTH_SIZE);
  CHECK(j[0]["rate_hz"] == 20.0);
  CHECK(j[0]["noise"]["dropout"] == 0.05);
  CHECK(j[1].contains("accel_noise"));
  CHECK(j[2]["direction"] == "actuator");
  CHECK(j[2]["params"]["max_thrust_n"] == 10.0);
  CHECK(j[2]["mount"]["orientation_rpy_deg"][2].get<double>() == doctest::Approx(10.0));
  CHECK(j[2]["mount"]["position_m"][0] == -0.5);
  CHECK(noise_summary(make_spec(TETHER_KIND_RANGE, "r")) == "none");
}
