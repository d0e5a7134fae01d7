// SPDX-License-Identifier: Apache-2.0
// The MQTT payloads: what the runtime writes the vehicle reads back, and the other way; broker URIs.
#include <doctest/doctest.h>

#include "tether/adapters/mqtt_messages.hpp"
#include "tether/adapters/mqtt_socket.hpp"
#include "tether/firmware_shim/payloads.h"
#include "tether/hal/device_bank.hpp"
#include "tether/scenario/scenario.hpp"

using namespace tether;
using namespace tether::runtime;
namespace mq = tether::adapters::mqtt;

namespace {

const char* text = R"(name: msgs
world: {gravity_m_s2: [0, 0, -9.81], water: {density_kg_m3: 1000, surface_z_m: 0}}
vehicles:
  - name: auv
    bodies:
      - name: hull
        shape: {type: sphere, radius_m: 0.2}
        mass_kg: 30
        initial: {position_m: [1, 2, -3]}
        devices:
          - {name: thruster, kind: thruster, params: {max_thrust_n: 10}}
          - {name: depth, kind: depth}
  - name: other
    bodies: [{name: hull, shape: {type: sphere, radius_m: 0.2}, mass_kg: 30}]
)";

}  // namespace

TEST_CASE("mqtt messages: projected carries the vehicle's bodies and actuator commands") {
  const Scenario sc = parse_scenario(text, "msgs.yaml");
  hal::DeviceBank bank(sc.devices, 1, sc.model.bodies.size());
  const auto actuators = mq::vehicle_actuators(bank, sc.model, 0);
  REQUIRE(actuators.size() == 1);
  std::uint8_t cmd[4];
  tether_put_f32le(cmd, 0.25f);
  REQUIRE(bank.command(actuators[0], cmd, 4) == hal::Status::ok);
  std::string out;
  mq::encode_projected(out, "auv", {7, 70'000'000, 10'000'000}, sc.model, sc.initial, 0, &bank, actuators);
  CHECK(out.find("other.hull") == std::string::npos);
  mq::Projected p;
  std::string reason;
  REQUIRE(mq::parse_projected(out, "auv", p, reason) == mq::Reject::none);
  CHECK(p.step == 7);
  CHECK(p.time_ns == 70'000'000);
  CHECK(p.period_ns == 10'000'000);
  REQUIRE(p.commands.size() == 1);
  CHECK(p.commands[0].device == "auv.hull.thruster");
  CHECK(p.commands[0].values == std::vector<double>{0.25});
  CHECK(mq::parse_projected(out, "someone_else", p, reason) == mq::Reject::wrong_vehicle);
}

TEST_CASE("mqtt messages: feedback round trip and rejections") {
  const Scenario sc = parse_scenario(text, "msgs.yaml");
  Measurement m;
  m.body = 0;
  m.measured_time_ns = 123;
  m.has_pose = m.has_velocity = m.has_covariance = true;
  m.position_m = Vec3(1, 2, 3);
  m.orientation = Quat(Eigen::AngleAxisd(0.3, Vec3::UnitZ()));
  m.velocity_m_s = Vec3(0.1, 0, 0);
  m.pose_covariance *= 0.01;
  std::string out;
  mq::encode_feedback(out, "auv", 9, sc.model, {m});
  mq::Feedback f;
  std::string reason;
  REQUIRE(mq::parse_feedback(out, "auv", sc.model, 0, f, reason) == mq::Reject::none);
  CHECK(f.step == 9);
  REQUIRE(f.measurements.size() == 1);
  const Measurement& g = f.measurements[0];
  CHECK(g.body == 0);
  CHECK(g.measured_time_ns == 123);
  CHECK(g.position_m.isApprox(m.position_m));
  CHECK(g.orientation.isApprox(m.orientation));
  CHECK(g.pose_covariance.isApprox(m.pose_covariance));

  CHECK(mq::parse_feedback("{", "auv", sc.model, 0, f, reason) == mq::Reject::not_json);
  CHECK(mq::parse_feedback(std::string(100, ' '), "auv", sc.model, 0, f, reason, 50) == mq::Reject::oversize);
  CHECK(mq::parse_feedback(out, "intruder", sc.model, 0, f, reason) == mq::Reject::wrong_vehicle);
  CHECK(mq::parse_feedback(R"({"schema":1,"vehicle":"auv","step":-1,"bodies":[]})", "auv", sc.model, 0, f, reason) ==
        mq::Reject::bad_field);
  // the other vehicle's body
  CHECK(
      mq::parse_feedback(
          R"({"schema":1,"vehicle":"auv","step":1,"bodies":[{"name":"other.hull","measured_time_ns":0,"velocity_m_s":[0,0,0]}]})",
          "auv", sc.model, 0, f, reason) == mq::Reject::bad_field);
  CHECK(reason.find("other.hull") != std::string::npos);
  // not a unit quaternion; NaN cannot be written in JSON, huge numbers are finite
  CHECK(
      mq::parse_feedback(
          R"({"schema":1,"vehicle":"auv","step":1,"bodies":[{"name":"auv.hull","measured_time_ns":0,"position_m":[0,0,0],"orientation_wxyz":[2,0,0,0]}]})",
          "auv", sc.model, 0, f, reason) == mq::Reject::bad_field);
  CHECK(mq::parse_status(mq::encode_status("online", "x")) == "online");
  CHECK(mq::parse_status("garbage").empty());
}

TEST_CASE("mqtt messages: broker URIs") {
  std::string host;
  int port = 0;
  CHECK(mq::split_broker_uri("tcp://127.0.0.1:1884", host, port));
  CHECK(host == "127.0.0.1");
  CHECK(port == 1884);
  CHECK(mq::split_broker_uri("ssl://broker.local", host, port));
  CHECK(port == 8883);
  CHECK(mq::split_broker_uri("tcp://[::1]:1999", host, port));
  CHECK(host == "::1");
  CHECK(port == 1999);
  CHECK_FALSE(mq::split_broker_uri("http://x:1", host, port));
  CHECK_FALSE(mq::split_broker_uri("127.0.0.1:1883", host, port));
  CHECK(mq::set_tcp_nodelay_for_broker("nonsense") == -1);
}
