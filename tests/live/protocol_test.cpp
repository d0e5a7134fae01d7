// SPDX-License-Identifier: Apache-2.0
// The byte layouts of foxglove.websocket.v1 and the service requests (docs/live.md).
#include <doctest/doctest.h>

#include <string>

#include "tether/live/protocol.hpp"
#include "tether/live/server.hpp"

using namespace tether;

TEST_CASE("live protocol: message data, time and service frames are little-endian as the spec lays them out") {
  std::string f;
  live::encode_message_data(0x01020304u, 0x1122334455667788ull, "{}", f);
  REQUIRE(f.size() == 15);
  CHECK(f[0] == 0x01);
  CHECK(static_cast<unsigned char>(f[1]) == 0x04);
  CHECK(static_cast<unsigned char>(f[4]) == 0x01);
  CHECK(static_cast<unsigned char>(f[5]) == 0x88);
  CHECK(static_cast<unsigned char>(f[12]) == 0x11);
  CHECK(f.substr(13) == "{}");
  live::MessageData m;
  REQUIRE(live::decode_message_data(f, m));
  CHECK(m.subscription == 0x01020304u);
  CHECK(m.time_ns == 0x1122334455667788ull);
  CHECK(m.payload == "{}");

  live::encode_time(42, f);
  std::uint64_t t = 0;
  REQUIRE(live::decode_time(f, t));
  CHECK(t == 42);

  live::encode_service_call(7, 9, "json", R"({"a":1})", f);
  live::ServiceCall c;
  std::string why;
  REQUIRE(live::decode_service_call(f, c, &why));
  CHECK(c.service == 7);
  CHECK(c.call == 9);
  CHECK(c.encoding == "json");
  CHECK(c.payload == R"({"a":1})");
}

TEST_CASE("live protocol: a cut or lying service call is refused with the reason, never read past its end") {
  std::string f;
  live::encode_service_call(1, 2, "json", "{}", f);
  live::ServiceCall c;
  std::string why;
  for (std::size_t n = 0; n < 13; ++n) CHECK_FALSE(live::decode_service_call(f.substr(0, n), c, &why));
  CHECK(why.find("header") != std::string::npos);
  std::string lying = f.substr(0, 13);
  lying[9] = '\x7f';  // an encoding length far past the end
  CHECK_FALSE(live::decode_service_call(lying, c, &why));
  CHECK(why.find("past the end") != std::string::npos);
}

TEST_CASE("live protocol: service requests become session requests, and bad ones say what is wrong") {
  const std::vector<std::pair<std::string, std::uint32_t>> bodies{{"auv.hull", 0}, {"auv", 0}};
  runtime::ControlRequest r;
  std::string why;
  REQUIRE(live::build_request(*live::find_service("/tether/step"), R"({"steps": 10})", bodies, r, &why));
  CHECK(r.kind == runtime::ControlRequest::Kind::step);
  CHECK(r.steps == 10);
  CHECK_FALSE(live::build_request(*live::find_service("/tether/step"), R"({"steps": 0})", bodies, r, &why));
  CHECK_FALSE(live::build_request(*live::find_service("/tether/step"), R"({"steps": -3})", bodies, r, &why));
  CHECK_FALSE(live::build_request(*live::find_service("/tether/step"), "not json", bodies, r, &why));
  CHECK_FALSE(live::build_request(*live::find_service("/tether/run_until"), "{}", bodies, r, &why));
  REQUIRE(live::build_request(
      *live::find_service("/tether/apply_force"),
      R"({"name":"push","body":"auv","force":[1,2,3],"frame":"body","point":[0.5,0,0],"duration_s":2})", bodies, r,
      &why));
  CHECK(r.kind == runtime::ControlRequest::Kind::world);
  CHECK(r.command.kind == runtime::OperatorCommand::Kind::apply_force);
  CHECK(r.command.body_frame);
  CHECK(r.command.force_n.y() == 2);
  CHECK(r.command.point_m.x() == 0.5);
  CHECK(r.command.duration_s == 2);
  CHECK_FALSE(
      live::build_request(*live::find_service("/tether/apply_force"), R"({"name":"p","body":"rov"})", bodies, r, &why));
  CHECK(why.find("auv.hull") != std::string::npos);  // the message lists the known bodies
  CHECK_FALSE(live::build_request(*live::find_service("/tether/apply_force"),
                                  R"({"name":"p","body":"auv","force":[1,2]})", bodies, r, &why));
  CHECK_FALSE(live::build_request(*live::find_service("/tether/apply_force"),
                                  R"({"name":"p","body":"auv","frame":"sideways"})", bodies, r, &why));
}

TEST_CASE("live server: loopback addresses and --live values") {
  CHECK(live::is_loopback("127.0.0.1"));
  CHECK(live::is_loopback("127.1.2.3"));
  CHECK(live::is_loopback("localhost"));
  CHECK(live::is_loopback("::1"));
  CHECK_FALSE(live::is_loopback("0.0.0.0"));
  CHECK_FALSE(live::is_loopback("192.168.1.5"));
  runtime::LiveConfig config;
  live::ServerOptions o;
  std::string why;
  REQUIRE(live::server_options(config, "9000", o, &why));
  CHECK(o.host == "127.0.0.1");
  CHECK(o.port == 9000);
  REQUIRE(live::server_options(config, "0.0.0.0:9001", o, &why));
  CHECK(o.host == "0.0.0.0");
  CHECK(o.port == 9001);
  CHECK_FALSE(live::server_options(config, "70000", o, &why));
  CHECK_FALSE(live::server_options(config, "host:", o, &why));
  CHECK_FALSE(live::server_options(config, ":80", o, &why));
}
