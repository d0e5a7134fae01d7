// SPDX-License-Identifier: Apache-2.0
// Operator commands' one codec (runtime/recording/src/operator_command.cpp): every kind
// through the recording's bytes and through JSON, exactly; the recording's layout as format
// 2 has always written it; malformed and unknown input refused.
#include <doctest/doctest.h>

#include <bit>
#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include "tether/recording/operator_command.hpp"
#include "tether/recording/protobuf.hpp"
#include "tether/recording/recording.hpp"

using namespace tether::runtime;
using nlohmann::json;

namespace {

const BodyNames bodies{{"auv.hull", 0}, {"auv", 0}, {"rov.frame", 1}};

// one of each kind, with values whose bits a careless conversion would change
std::vector<OperatorCommand> one_of_each() {
  ApplyForce f;
  f.name = "push";
  f.body = 1;
  f.body_frame = true;
  f.force_n = Vec3(0.1, -0.0, 1e-300);
  f.torque_nm = Vec3(0, 0, 2.5);
  f.point_m = Vec3(0.3, 0, -0.1);
  f.duration_s = 1.0 / 3.0;
  return {f,
          RemoveForce{"push"},
          SetParameter{"feedback.blend.alpha", 0.7},
          InjectFault{R"({"device":"auv.hull.depth","kind":"bias","value":-3})"},
          EndpointCommand{"ardusub", "autopilot_target", R"({"depth_m":2.5,"heading_deg":-90})"},
          BackgroundTake{"estimate", true}};
}

std::string bytes_of(const OperatorCommand& c) {
  StepCommands sc;
  sc.step = 42;
  sc.commands = {c};
  std::string out;
  encode_step_commands(sc, out);
  return out;
}

}  // namespace

TEST_CASE("operator commands: every kind survives the recording's bytes exactly, in its place") {
  StepCommands sc;
  sc.step = 1234;
  sc.commands = one_of_each();
  static_assert(std::variant_size_v<OperatorCommand> == 6);  // a new kind: add it to one_of_each
  std::string bytes;
  encode_step_commands(sc, bytes);
  StepCommands back;
  std::string why;
  REQUIRE_MESSAGE(decode_step_commands(bytes, back, &why), why);
  CHECK(back.step == 1234);
  REQUIRE(back.commands.size() == sc.commands.size());
  for (std::size_t i = 0; i < sc.commands.size(); ++i) {
    CHECK(back.commands[i].index() == sc.commands[i].index());
    CHECK(bytes_of(back.commands[i]) == bytes_of(sc.commands[i]));
  }
  const auto& f = std::get<ApplyForce>(back.commands[0]);
  CHECK(std::bit_cast<std::uint64_t>(f.force_n.y()) == std::bit_cast<std::uint64_t>(-0.0));
  CHECK(f.force_n.z() == 1e-300);
  CHECK(f.duration_s == 1.0 / 3.0);
  CHECK(f.body == 1);
  CHECK(f.body_frame);
  CHECK(std::get<InjectFault>(back.commands[3]).entry == std::get<InjectFault>(sc.commands[3]).entry);
  CHECK(std::string(kind_name(back.commands[2])) == "set_parameter");
  const auto& e = std::get<EndpointCommand>(back.commands[4]);
  CHECK(e.endpoint == "ardusub");
  CHECK(e.verb == "autopilot_target");
  CHECK(e.arguments == R"({"depth_m":2.5,"heading_deg":-90})");
  const auto& t = std::get<BackgroundTake>(back.commands[5]);
  CHECK(t.processor == "estimate");
  CHECK(t.taken);
  // deferred and taken are 0 and 1 in the value field; anything else is refused
  OperatorCommandFields fields = to_fields(BackgroundTake{"estimate", false});
  CHECK(fields.kind == 6);
  CHECK(fields.value == 0);
  OperatorCommand read_back;
  REQUIRE(from_fields(fields, read_back));
  CHECK_FALSE(std::get<BackgroundTake>(read_back).taken);
  fields.value = 0.5;
  CHECK_FALSE(from_fields(fields, read_back));
}

TEST_CASE("operator commands: the recording's layout is format 2's, every field written, kind numbers from 1") {
  // remove_force "a" at step 7: kind 2, name, then the fields it does not use at zero, as
  // every Tether that writes format 2 writes them
  const std::string b = bytes_of(RemoveForce{"a"});
  std::string expected;
  expected += "\x1a";  // field 3 (commands), length-delimited
  std::string c;
  c += std::string("\x08\x02", 2);  // kind = 2 (REMOVE_FORCE)
  c += std::string(
      "\x12\x01"
      "a",
      3);                           // name = "a"
  c += std::string("\x18\x00", 2);  // body = 0
  c += std::string("\x20\x00", 2);  // body_frame = false
  const std::string zero_vec3 = std::string("\x09\0\0\0\0\0\0\0\0\x11\0\0\0\0\0\0\0\0\x19\0\0\0\0\0\0\0\0", 27);
  const std::string nested = std::string(1, static_cast<char>(zero_vec3.size())) + zero_vec3;
  c += "\x2a" + nested + "\x32" + nested + "\x3a" + nested;  // force, torque, point
  c += std::string("\x41\0\0\0\0\0\0\0\0", 9);               // duration_s = 0
  c += std::string("\x49\0\0\0\0\0\0\0\0", 9);               // value = 0
  expected += static_cast<char>(c.size()) + c;
  CHECK(b.substr(0, expected.size()) == expected);

  // a kind this build does not know is refused, not misread
  std::string unknown = b;
  unknown[3] = '\x07';
  StepCommands out;
  std::string why;
  CHECK_FALSE(decode_step_commands(unknown, out, &why));
  CHECK_FALSE(why.empty());
}

TEST_CASE("operator commands: JSON, the live services' requests, round-trips every kind") {
  for (const OperatorCommand& c : one_of_each()) {
    const json j = command_to_json(c, bodies);
    OperatorCommand back;
    std::string why;
    REQUIRE_MESSAGE(command_from_json(kind_name(c), j, bodies, back, &why), kind_name(c) << ": " << why);
    CHECK(bytes_of(back) == bytes_of(c));
  }
  // the body by its first name; an unknown one lists the known
  CHECK(command_to_json(one_of_each()[0], bodies)["body"] == "rov.frame");
  OperatorCommand c;
  std::string why;
  CHECK_FALSE(command_from_json("apply_force", json{{"name", "p"}, {"body", "sub"}}, bodies, c, &why));
  CHECK(why == "no body \"sub\" (known: auv.hull, auv, rov.frame)");
  CHECK_FALSE(command_from_json("apply_force", json{{"body", "auv"}}, bodies, c, &why));
  CHECK(why.find("\"name\" is required") == 0);
  CHECK_FALSE(command_from_json("set_parameter", json{{"name", "x"}, {"value", "high"}}, bodies, c, &why));
  CHECK(why == "\"value\" must be a finite number");
  CHECK_FALSE(command_from_json("endpoint_command", json{{"verb", "autopilot_arm"}}, bodies, c, &why));
  CHECK(why.find("\"endpoint\" is required") == 0);
  CHECK_FALSE(command_from_json("background_take", json{{"processor", "estimate"}, {"taken", 1}}, bodies, c, &why));
  CHECK(why == "\"taken\" must be true (taken) or false (deferred)");
  CHECK_FALSE(command_from_json("teleport", json::object(), bodies, c, &why));
  CHECK(why == "unknown operator command \"teleport\"");
}
