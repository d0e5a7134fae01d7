// SPDX-License-Identifier: Apache-2.0
// The MQTT payloads: what the runtime writes the vehicle reads back, and the other way; broker URIs.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "tether/mqtt/mqtt_messages.hpp"
#include "tether/mqtt/mqtt_socket.hpp"
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

namespace {

// protobuf by hand, as another library would write it: fields in any order, unpacked doubles
struct Pb {
  std::string out;
  void varint(std::uint64_t v) {
    while (v >= 0x80) {
      out.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out.push_back(static_cast<char>(v));
  }
  Pb& u(std::uint32_t field, std::uint64_t v) {
    varint(std::uint64_t{field} << 3);
    varint(v);
    return *this;
  }
  Pb& d(std::uint32_t field, double v) {  // one unpacked element (wire type 1)
    varint((std::uint64_t{field} << 3) | 1);
    char b[8];
    std::memcpy(b, &v, 8);
    out.append(b, 8);
    return *this;
  }
  Pb& s(std::uint32_t field, const std::string& v) {
    varint((std::uint64_t{field} << 3) | 2);
    varint(v.size());
    out += v;
    return *this;
  }
};

}  // namespace

TEST_CASE(
    "mqtt messages: protobuf payloads carry what JSON carries, bit for bit, and are told apart by their first byte") {
  const Scenario sc = parse_scenario(text, "msgs.yaml");
  hal::DeviceBank bank(sc.devices, 1, sc.model.bodies.size());
  const auto actuators = mq::vehicle_actuators(bank, sc.model, 0);
  std::uint8_t cmd[4];
  tether_put_f32le(cmd, -0.75f);
  REQUIRE(bank.command(actuators[0], cmd, 4) == hal::Status::ok);
  std::string json_text, pb_text;
  mq::encode_projected(json_text, "auv", {9, 90'000'000, 10'000'000}, sc.model, sc.initial, 0, &bank, actuators);
  mq::encode_projected(pb_text, "auv", {9, 90'000'000, 10'000'000}, sc.model, sc.initial, 0, &bank, actuators,
                       mq::Payload::protobuf);
  CHECK(mq::payload_of(json_text) == mq::Payload::json);
  CHECK(mq::payload_of(pb_text) == mq::Payload::protobuf);
  CHECK(pb_text.size() < json_text.size());
  mq::Projected a, b;
  std::string reason;
  REQUIRE(mq::parse_projected(json_text, "auv", a, reason) == mq::Reject::none);
  REQUIRE(mq::parse_projected(pb_text, "auv", b, reason) == mq::Reject::none);
  CHECK(b.step == 9);
  CHECK(b.time_ns == 90'000'000);
  CHECK(b.period_ns == 10'000'000);
  REQUIRE(b.commands.size() == 1);
  CHECK(b.commands[0].device == a.commands[0].device);
  CHECK(b.commands[0].values == std::vector<double>{-0.75});
  CHECK(mq::parse_projected(pb_text, "other", b, reason) == mq::Reject::wrong_vehicle);

  Measurement m;
  m.body = 0;
  m.measured_time_ns = -5;  // negative times travel too (two's complement varint)
  m.has_pose = m.has_velocity = m.has_covariance = true;
  m.position_m = Vec3(0.1, -2.0 / 3.0, 1e-300);
  m.orientation = Quat(0.5, 0.5, -0.5, 0.5);
  m.velocity_m_s = Vec3(std::nextafter(1.0, 2.0), 0, -3);
  m.angular_velocity_rad_s = Vec3(0.01, 0.02, 0.03);
  for (int r = 0; r < 6; ++r)
    for (int k = 0; k < 6; ++k) m.pose_covariance(r, k) = (r == k ? 1e-4 : 1e-7) * (r + 1);
  mq::encode_feedback(pb_text, "auv", 42, sc.model, {m}, mq::Payload::protobuf);
  REQUIRE(mq::payload_of(pb_text) == mq::Payload::protobuf);
  mq::Feedback f;
  REQUIRE(mq::parse_feedback(pb_text, "auv", sc.model, 0, f, reason) == mq::Reject::none);
  CHECK(f.step == 42);
  REQUIRE(f.measurements.size() == 1);
  const Measurement& g = f.measurements[0];
  CHECK(g.measured_time_ns == -5);
  CHECK(g.position_m == m.position_m);
  CHECK(g.orientation.coeffs() == m.orientation.normalized().coeffs());
  CHECK(g.velocity_m_s == m.velocity_m_s);
  CHECK(g.angular_velocity_rad_s == m.angular_velocity_rad_s);
  CHECK(g.pose_covariance == m.pose_covariance);
}

TEST_CASE("mqtt messages: protobuf as other libraries write it is read, and bad protobuf is refused with a reason") {
  const Scenario sc = parse_scenario(text, "msgs.yaml");
  mq::Feedback f;
  std::string reason;
  // unpacked doubles, fields out of order, an unknown field, step and time left out (proto3 zeros)
  Pb body;
  body.d(3, 1).d(3, 0).d(3, 0).d(3, 0).s(1, "auv.hull").d(2, 1).d(2, 2).d(2, 3).u(99, 7);
  Pb msg;
  msg.u(1, 1).s(4, body.out).s(2, "auv");
  REQUIRE(mq::parse_feedback(msg.out, "auv", sc.model, 0, f, reason) == mq::Reject::none);
  CHECK(f.step == 0);
  REQUIRE(f.measurements.size() == 1);
  CHECK(f.measurements[0].position_m == Vec3(1, 2, 3));
  CHECK(f.measurements[0].measured_time_ns == 0);

  struct Bad {
    const char* what;
    std::string bytes;
    mq::Reject reject;
  };
  auto with_body = [](const Pb& b, std::uint64_t schema = 1, const std::string& vehicle = "auv") {
    Pb m;
    m.u(1, schema).s(2, vehicle).u(3, 5).s(4, b.out);
    return m.out;
  };
  Pb two_numbers, nan_position, not_unit, foreign, velocity_only, odd_list;
  odd_list.s(1, "auv.hull").s(2, std::string(12, '\0'));
  two_numbers.s(1, "auv.hull").d(2, 1).d(2, 2).d(3, 1).d(3, 0).d(3, 0).d(3, 0);
  nan_position.s(1, "auv.hull").d(2, std::nan("")).d(2, 2).d(2, 3).d(3, 1).d(3, 0).d(3, 0).d(3, 0);
  not_unit.s(1, "auv.hull").d(2, 1).d(2, 2).d(2, 3).d(3, 2).d(3, 0).d(3, 0).d(3, 0);
  foreign.s(1, "other.hull").d(4, 1).d(4, 2).d(4, 3);
  velocity_only.s(1, "auv.hull").d(4, 1).d(4, 2).d(4, 3);
  const std::string good = with_body(velocity_only);
  REQUIRE(mq::parse_feedback(good, "auv", sc.model, 0, f, reason) == mq::Reject::none);
  const Bad bad[] = {
      {"cut short", good.substr(0, good.size() - 3), mq::Reject::not_protobuf},
      {"a length past the end", std::string("\x08\x01\x12\x7f", 4), mq::Reject::not_protobuf},
      {"a string field sent as a number", std::string("\x08\x01\x10\x05", 4), mq::Reject::not_protobuf},
      {"a packed list of 12 bytes", with_body(odd_list), mq::Reject::not_protobuf},
      {"schema 2", with_body(velocity_only, 2), mq::Reject::schema},
      {"no schema", Pb{}.s(2, "auv").s(4, velocity_only.out).out, mq::Reject::not_json},
      {"another vehicle", with_body(velocity_only, 1, "other"), mq::Reject::wrong_vehicle},
      {"no bodies", Pb{}.u(1, 1).s(2, "auv").u(3, 5).out, mq::Reject::bad_field},
      {"a position of two numbers", with_body(two_numbers), mq::Reject::bad_field},
      {"a NaN position", with_body(nan_position), mq::Reject::bad_field},
      {"a quaternion of norm 2", with_body(not_unit), mq::Reject::bad_field},
      {"another vehicle's body", with_body(foreign), mq::Reject::bad_field},
  };
  for (const Bad& b : bad) {
    CAPTURE(std::string(b.what));
    reason.clear();
    CHECK(mq::parse_feedback(b.bytes, "auv", sc.model, 0, f, reason) == b.reject);
    CHECK(!reason.empty());
  }
  // a projected message whose command has five channels, or a period of 0
  mq::Projected p;
  Pb command;
  command.s(1, "auv.hull.thruster").d(2, 1).d(2, 1).d(2, 1).d(2, 1).d(2, 1);
  CHECK(mq::parse_projected(Pb{}.u(1, 1).s(2, "auv").u(5, 10).s(7, command.out).out, "auv", p, reason) ==
        mq::Reject::bad_field);
  CHECK(mq::parse_projected(Pb{}.u(1, 1).s(2, "auv").u(3, 4).out, "auv", p, reason) == mq::Reject::bad_field);
}
