// SPDX-License-Identifier: Apache-2.0
// The byte layouts of foxglove.websocket.v1 and the service requests (docs/live.md).
#include <doctest/doctest.h>

#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include "tether/live/protocol.hpp"
#include "tether/live/server.hpp"
#include "tether/live/services.hpp"

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

TEST_CASE("live services: requests become session requests through the table, and bad ones say what is wrong") {
  const runtime::BodyNames bodies{{"auv.hull", 0}, {"auv", 0}};
  runtime::ControlRequest r;
  std::string why;
  auto build = [&](const char* service, const char* payload) {
    REQUIRE(live::find_service(service));
    return live::build_request(*live::find_service(service), payload, bodies, r, &why);
  };
  REQUIRE(build("/tether/step", R"({"steps": 10})"));
  REQUIRE(std::holds_alternative<runtime::ControlRequest::Step>(r.action));
  CHECK(std::get<runtime::ControlRequest::Step>(r.action).steps == 10);
  REQUIRE(build("/tether/step", "{}"));
  CHECK(std::get<runtime::ControlRequest::Step>(r.action).steps == 1);
  CHECK_FALSE(build("/tether/step", R"({"steps": 0})"));
  CHECK(why == R"("steps" must be a whole number in 1..1000000000, got 0)");
  CHECK_FALSE(build("/tether/step", R"({"steps": -3})"));
  CHECK_FALSE(build("/tether/step", R"({"steps": 2.5})"));
  CHECK_FALSE(build("/tether/step", "not json"));
  CHECK(why == "the request must be a JSON object");
  // strict: an unknown key and a missing required one are named, every problem at once
  CHECK_FALSE(build("/tether/step", R"({"stpes": 10})"));
  CHECK(why == R"(unknown key "stpes" (known: steps))");
  CHECK_FALSE(build("/tether/status", R"({"verbose": true})"));
  CHECK(why == R"(unknown key "verbose" (this service takes none))");
  CHECK_FALSE(build("/tether/run_until", "{}"));
  CHECK(why.find(R"("time_s" is required)") == 0);
  CHECK_FALSE(build("/tether/set_rtf", R"({"rtf": 2000, "speed": 1})"));
  CHECK(why == R"("rtf" must be a finite number in 0..1000, got 2000; unknown key "speed" (known: rtf))");
  REQUIRE(build("/tether/apply_force",
                R"({"name":"push","body":"auv","force":[1,2,3],"frame":"body","point":[0.5,0,0],"duration_s":2})"));
  REQUIRE(std::holds_alternative<runtime::ControlRequest::World>(r.action));
  const auto& command = std::get<runtime::ControlRequest::World>(r.action).command;
  REQUIRE(std::holds_alternative<runtime::ApplyForce>(command));
  const auto& force = std::get<runtime::ApplyForce>(command);
  CHECK(force.body_frame);
  CHECK(force.force_n.y() == 2);
  CHECK(force.point_m.x() == 0.5);
  CHECK(force.duration_s == 2);
  CHECK_FALSE(build("/tether/apply_force", R"({"name":"p","body":"rov","force":[1,0,0]})"));
  CHECK(why.find("auv.hull") != std::string::npos);  // the message lists the known bodies
  CHECK_FALSE(build("/tether/apply_force", R"({"name":"p","body":"auv","force":[1,2]})"));
  CHECK(why.find(R"("force" must be an array of three finite numbers)") == 0);
  CHECK_FALSE(build("/tether/apply_force", R"({"name":"p","body":"auv","frame":"sideways"})"));
  CHECK(why == R"("frame" must be one of "world", "body", got "sideways")");
  CHECK_FALSE(build("/tether/apply_force", R"({"name":"p","body":"auv","forse":[0,1,0]})"));
  CHECK(why.find(R"(unknown key "forse")") == 0);
  // a force with neither force nor torque would do nothing: refused
  CHECK_FALSE(build("/tether/apply_force", R"({"name":"p","body":"auv"})"));
  CHECK(why == R"("force" or "torque" is required (a force with neither does nothing))");
  REQUIRE(build("/tether/apply_force", R"({"name":"p","body":"auv","torque":[0,0,1]})"));
  CHECK_FALSE(build("/tether/apply_force", R"({"name":"p","body":"auv","force":[1,0,0],"duration_s":2e7})"));
  CHECK(why == R"("duration_s" must be a finite number in 0..10000000, got 20000000.0)");
  // a fault: the keys of a faults: entry; `if:` is known, and refused with the reason
  REQUIRE(build("/tether/inject_fault", R"({"device":"auv.hull.depth","kind":"bias","value":-3})"));
  CHECK(std::holds_alternative<runtime::InjectFault>(std::get<runtime::ControlRequest::World>(r.action).command));
  CHECK_FALSE(build("/tether/inject_fault", R"({"device":"auv.hull.depth","kind":"stuck","if":{}})"));
  CHECK(why.find("`if:` conditions") != std::string::npos);
  CHECK_FALSE(build("/tether/inject_fault", R"({"device":"auv.hull.depth","kind":"wobble"})"));
  CHECK(why.find(R"("kind" must be one of "drop")") == 0);
  // the autopilot services: one EndpointCommand each, the verb and the other keys kept for
  // the endpoint to check; the keys' own types and ranges checked here
  REQUIRE(build("/tether/autopilot_arm", R"({"endpoint":"ap","arm":true,"force":true})"));
  const auto& arm = std::get<runtime::EndpointCommand>(std::get<runtime::ControlRequest::World>(r.action).command);
  CHECK(arm.endpoint == "ap");
  CHECK(arm.verb == "autopilot_arm");
  CHECK(arm.arguments == R"({"arm":true,"force":true})");
  REQUIRE(build("/tether/autopilot_mode", R"({"endpoint":"ap","mode":"alt hold"})"));
  REQUIRE(build("/tether/autopilot_manual", R"({"endpoint":"ap","x":-1000,"z":500,"buttons":3})"));
  REQUIRE(build("/tether/autopilot_target", R"({"endpoint":"ap","depth_m":2.5})"));
  CHECK(std::get<runtime::EndpointCommand>(std::get<runtime::ControlRequest::World>(r.action).command).arguments ==
        R"({"depth_m":2.5})");
  CHECK_FALSE(build("/tether/autopilot_arm", R"({"endpoint":"ap","arm":"yes"})"));
  CHECK(why == R"("arm" must be true or false, got "yes")");
  CHECK_FALSE(build("/tether/autopilot_arm", R"({"arm":true})"));
  CHECK(why.find(R"("endpoint" is required)") == 0);
  CHECK_FALSE(build("/tether/autopilot_manual", R"({"endpoint":"ap","x":1001,"y":0.5})"));
  CHECK(why ==
        R"("x" must be a whole number in -1000..1000, got 1001; "y" must be a whole number in -1000..1000, got 0.5)");
  CHECK_FALSE(build("/tether/autopilot_target", R"({"endpoint":"ap","depth_m":-1,"heading_deg":1e300})"));
  CHECK(why.find(R"("depth_m" must be a finite number in 0..11000, got -1)") == 0);
  CHECK(why.find(R"("heading_deg" must be a finite number in -360..360)") != std::string::npos);
  CHECK_FALSE(build("/tether/autopilot_mode", R"({"endpoint":"ap","mode":"ALT_HOLD","verb":"autopilot_arm"})"));
  CHECK(why.find(R"(unknown key "verb")") == 0);
  // an mcu endpoint's Serial: the endpoint and the text, checked by the endpoint
  REQUIRE(build("/tether/mcu_serial", R"({"endpoint":"uno","text":"0,128,255\n"})"));
  const auto& serial = std::get<runtime::EndpointCommand>(std::get<runtime::ControlRequest::World>(r.action).command);
  CHECK(serial.verb == "serial");
  CHECK(serial.arguments == R"({"text":"0,128,255\n"})");
  CHECK_FALSE(build("/tether/mcu_serial", R"({"endpoint":"uno"})"));
  // a paced session's record of a late refit (BackgroundTake) is the session's own: no
  // service makes one
  CHECK(live::find_service("/tether/background_take") == nullptr);
}

TEST_CASE("live services: the table gives ids in order, refuses a second of a name, and derives the schemas") {
  live::ServiceTable table;
  live::Service s;
  s.name = "/test/a";
  CHECK_FALSE(table.add(s));  // no handler
  s.handler = [](const nlohmann::json&, const live::ServiceContext&, runtime::ControlRequest::Action& out,
                 std::string*) {
    out = runtime::ControlRequest::Status{};
    return true;
  };
  REQUIRE(table.add(s));
  CHECK_FALSE(table.add(s));
  s.name = "/test/b";
  REQUIRE(table.add(s));
  CHECK(table.find("/test/b")->id == 2);
  CHECK(table.find(std::uint32_t{1})->name == "/test/a");
  CHECK(table.find(std::uint32_t{3}) == nullptr);
  // the built-ins keep the ids clients know
  CHECK(live::find_service("/tether/status")->id == 1);
  CHECK(live::find_service("/tether/seek")->id == 10);
  CHECK(live::find_service("/tether/inject_fault")->id == 11);
  const auto schema = nlohmann::json::parse(live::request_schema(*live::find_service("/tether/set_rtf")));
  CHECK(schema["additionalProperties"] == false);
  CHECK(schema["required"] == nlohmann::json::array({"rtf"}));
  CHECK(schema["properties"]["rtf"]["maximum"] == 1000);
  const auto fault = nlohmann::json::parse(live::request_schema(*live::find_service("/tether/inject_fault")));
  CHECK_FALSE(fault["properties"].contains("if"));  // refused keys are not advertised
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
