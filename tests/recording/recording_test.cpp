// SPDX-License-Identifier: Apache-2.0
// The protobuf messages replay depends on: exact round trips, the wire bytes the protobuf
// rules give, and malformed input (every prefix, random byte flips, absurd lengths) that
// must give an error, never a crash or a read past the end.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>

#include "test_paths.hpp"
#include "tether/recording/json_text.hpp"
#include "tether/recording/protobuf.hpp"
#include "tether/recording/recording.hpp"
#include "tether/scenario/scenario.hpp"

using namespace tether::runtime;

namespace {

std::uint64_t bits(double v) { return std::bit_cast<std::uint64_t>(v); }

// doubles whose bit patterns a careless text or float conversion would change
const double odd[] = {0.1,
                      -0.0,
                      1.0 / 3.0,
                      std::numeric_limits<double>::denorm_min(),
                      -std::numeric_limits<double>::denorm_min(),
                      DBL_MIN,
                      DBL_MAX,
                      -DBL_MAX,
                      std::nextafter(1.0, 2.0),
                      std::nextafter(0.0, -1.0),
                      std::numeric_limits<double>::infinity(),
                      -std::numeric_limits<double>::infinity(),
                      6.02214076e23,
                      -1e-300,
                      123456789.123456789,
                      std::bit_cast<double>(std::uint64_t{0x3ff0000000000001}),
                      std::bit_cast<double>(std::uint64_t{0x000fffffffffffff})};
constexpr std::size_t n_odd = sizeof odd / sizeof odd[0];

double odd_at(std::size_t i) { return odd[i % n_odd]; }

Vec3 odd_vec(std::size_t& i) {
  const double a = odd_at(i++), b = odd_at(i++), c = odd_at(i++);
  return {a, b, c};
}

BodyWrench odd_wrench(std::size_t& i) {
  BodyWrench w;
  w.force_world_n = odd_vec(i);
  w.torque_world_nm = odd_vec(i);
  w.force_body_n = odd_vec(i);
  w.torque_body_nm = odd_vec(i);
  return w;
}

Measurement odd_measurement(std::size_t& i, bool covariance) {
  Measurement m;
  m.body = static_cast<std::uint32_t>(i % 3);
  m.measured_time_ns = -1234567890123LL + static_cast<std::int64_t>(i);
  m.has_pose = true;
  m.has_velocity = i % 2 == 0;
  m.has_covariance = covariance;
  m.position_m = odd_vec(i);
  m.orientation = Quat(odd_at(i), odd_at(i + 1), odd_at(i + 2), odd_at(i + 3));
  i += 4;
  m.velocity_m_s = odd_vec(i);
  m.angular_velocity_rad_s = odd_vec(i);
  for (int k = 0; k < 36; ++k) m.pose_covariance.data()[k] = odd_at(i++);
  return m;
}

Reply odd_reply(std::size_t seed, bool with_covariance) {
  std::size_t i = seed;
  Reply r;
  r.step = 0xfedcba9876543210ULL + seed;
  r.wrenches.emplace_back(0, odd_wrench(i));
  r.wrenches.emplace_back(7, odd_wrench(i));
  DeviceCommand c;
  c.device = 0xbeef;
  c.size = 4;
  const float f = 0.75f;
  std::memcpy(c.bytes.data(), &f, 4);
  r.commands.push_back(c);
  DeviceCommand full;
  full.device = 3;
  full.size = DeviceCommand::max_bytes;
  for (std::size_t b = 0; b < full.bytes.size(); ++b) full.bytes[b] = static_cast<std::uint8_t>(0xf0 + b);
  r.commands.push_back(full);
  r.measurements.push_back(odd_measurement(i, with_covariance));
  r.measurements.push_back(odd_measurement(i, !with_covariance));
  // wire frames: binary with zero bytes and high bits, text, and an empty one
  r.add_wire(false, std::string("\x3a\x48\x00\x00\xff\x80\n", 7));
  r.add_wire(true, "\n{\"timestamp\":1.5}\n");
  r.add_wire(false, std::string());
  return r;
}

void check_same(const Vec3& a, const Vec3& b) {
  for (int k = 0; k < 3; ++k) CHECK(bits(a[k]) == bits(b[k]));
}

void check_same(const BodyWrench& a, const BodyWrench& b) {
  check_same(a.force_world_n, b.force_world_n);
  check_same(a.torque_world_nm, b.torque_world_nm);
  check_same(a.force_body_n, b.force_body_n);
  check_same(a.torque_body_nm, b.torque_body_nm);
}

void check_same(const Reply& a, const Reply& b) {
  CHECK(a.step == b.step);
  REQUIRE(a.wrenches.size() == b.wrenches.size());
  for (std::size_t i = 0; i < a.wrenches.size(); ++i) {
    CHECK(a.wrenches[i].first == b.wrenches[i].first);
    check_same(a.wrenches[i].second, b.wrenches[i].second);
  }
  REQUIRE(a.commands.size() == b.commands.size());
  for (std::size_t i = 0; i < a.commands.size(); ++i) {
    CHECK(a.commands[i].device == b.commands[i].device);
    CHECK(a.commands[i].size == b.commands[i].size);
    CHECK(std::memcmp(a.commands[i].bytes.data(), b.commands[i].bytes.data(), a.commands[i].size) == 0);
  }
  REQUIRE(a.wire.size() == b.wire.size());
  for (std::size_t i = 0; i < a.wire.size(); ++i) {
    CHECK(a.wire[i].to_peer == b.wire[i].to_peer);
    CHECK(a.wire_frame(a.wire[i]) == b.wire_frame(b.wire[i]));
  }
  REQUIRE(a.measurements.size() == b.measurements.size());
  for (std::size_t i = 0; i < a.measurements.size(); ++i) {
    const Measurement &x = a.measurements[i], &y = b.measurements[i];
    CHECK(x.body == y.body);
    CHECK(x.measured_time_ns == y.measured_time_ns);
    CHECK(x.has_pose == y.has_pose);
    CHECK(x.has_velocity == y.has_velocity);
    CHECK(x.has_covariance == y.has_covariance);
    check_same(x.position_m, y.position_m);
    CHECK(bits(x.orientation.w()) == bits(y.orientation.w()));
    CHECK(bits(x.orientation.x()) == bits(y.orientation.x()));
    CHECK(bits(x.orientation.y()) == bits(y.orientation.y()));
    CHECK(bits(x.orientation.z()) == bits(y.orientation.z()));
    check_same(x.velocity_m_s, y.velocity_m_s);
    check_same(x.angular_velocity_rad_s, y.angular_velocity_rad_s);
    if (x.has_covariance)
      for (int k = 0; k < 36; ++k) CHECK(bits(x.pose_covariance.data()[k]) == bits(y.pose_covariance.data()[k]));
  }
}

StepRecord sample_step() {
  StepRecord r;
  r.step = 0x0102030405060708ULL;
  r.time_ns = -42;
  r.state_hash = 0xcbf29ce484222325ULL;
  r.step_time_ns = 987654321;
  SlotRecord fresh;
  fresh.outcome = SlotOutcome::fresh;
  fresh.round_trip_ns = 1234;
  fresh.reply = odd_reply(1, true);
  SlotRecord timeout;
  timeout.outcome = SlotOutcome::timeout;
  SlotRecord fault;
  fault.outcome = SlotOutcome::fault;
  fault.round_trip_ns = 7;
  SlotRecord empty;  // fresh, but the endpoint asked for nothing
  empty.round_trip_ns = 1;
  r.slots = {fresh, timeout, fault, empty};
  return r;
}

WorldState sample_state(std::size_t bodies) {
  WorldState s;
  s.step = 250;
  s.time_ns = 2'500'000'000;
  std::size_t i = 5;
  for (std::size_t b = 0; b < bodies; ++b) {
    BodyState bs;
    bs.position_m = odd_vec(i);
    bs.orientation = Quat(odd_at(i), odd_at(i + 1), odd_at(i + 2), odd_at(i + 3));
    i += 4;
    bs.linear_momentum = odd_vec(i);
    bs.angular_momentum = odd_vec(i);
    s.bodies.push_back(bs);
  }
  return s;
}

Keyframe sample_keyframe() {
  Keyframe k;
  k.state = sample_state(2);
  std::size_t i = 11;
  k.held_inputs.wrenches = {odd_wrench(i), odd_wrench(i)};
  k.last_replies = {odd_reply(2, false), Reply{}, odd_reply(3, true)};
  k.model_params = std::string("\x00\x01params\xff", 9);
  k.processor_state = {"", std::string("\x00kalman\x00", 8), "estimator"};
  k.devices = std::string(
      "\x01"
      "bank\x00\xfe",
      7);
  return k;
}

void check_same(const WorldState& a, const WorldState& b) {
  CHECK(a.step == b.step);
  CHECK(a.time_ns == b.time_ns);
  REQUIRE(a.bodies.size() == b.bodies.size());
  CHECK(hash_state(a) == hash_state(b));
  for (std::size_t i = 0; i < a.bodies.size(); ++i) {
    check_same(a.bodies[i].position_m, b.bodies[i].position_m);
    CHECK(bits(a.bodies[i].orientation.w()) == bits(b.bodies[i].orientation.w()));
    CHECK(bits(a.bodies[i].orientation.z()) == bits(b.bodies[i].orientation.z()));
    check_same(a.bodies[i].linear_momentum, b.bodies[i].linear_momentum);
    check_same(a.bodies[i].angular_momentum, b.bodies[i].angular_momentum);
  }
}

// a step record with one fresh slot holding `reply`, encoded
std::string one_slot_step(const Reply& reply) {
  StepRecord rec;
  SlotRecord slot;
  slot.reply = reply;
  rec.slots.push_back(slot);
  std::string bytes;
  encode_step(rec, bytes);
  return bytes;
}

}  // namespace

TEST_CASE("a step record round-trips exactly, odd doubles and all") {
  const StepRecord in = sample_step();
  std::string bytes;
  encode_step(in, bytes);
  StepRecord out;
  std::string error;
  REQUIRE(decode_step(bytes, out, &error));
  CHECK(error.empty());
  CHECK(out.step == in.step);
  CHECK(out.time_ns == in.time_ns);
  CHECK(out.state_hash == in.state_hash);
  CHECK(out.step_time_ns == in.step_time_ns);
  REQUIRE(out.slots.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(out.slots[i].outcome == in.slots[i].outcome);
    CHECK(out.slots[i].round_trip_ns == in.slots[i].round_trip_ns);
  }
  check_same(out.slots[0].reply, in.slots[0].reply);
  CHECK(out.slots[1].reply.wrenches.empty());
  CHECK(out.slots[2].reply.measurements.empty());
  CHECK(out.slots[3].reply.wrenches.empty());

  // decoding into a record that held something else leaves nothing behind
  StepRecord again = sample_step();
  again.slots.resize(9);
  REQUIRE(decode_step(bytes, again, nullptr));
  CHECK(again.slots.size() == 4);
  std::string re;
  encode_step(again, re);
  CHECK(re == bytes);
}

TEST_CASE("the step record is the protobuf message docs/recording.proto describes") {
  StepRecord r;
  r.step = 5;
  r.time_ns = 50'000'000;
  r.state_hash = 0x1122334455667788ULL;
  r.step_time_ns = 3300;
  std::string b;
  encode_step(r, b);
  // written by hand from the protobuf encoding rules: field 2 varint 5, field 3 varint
  // 50000000, field 4 fixed64, field 5 varint 3300, field 1 (format_version, last) varint 2
  const std::string want(
      "\x10\x05"
      "\x18\x80\xe1\xeb\x17"
      "\x21\x88\x77\x66\x55\x44\x33\x22\x11"
      "\x28\xe4\x19"
      "\x08\x02",
      21);
  CHECK(b == want);

  // a fresh slot: field 6, a Slot with outcome, round trip and its Reply
  SlotRecord s;
  s.round_trip_ns = 150;
  s.reply.step = 5;
  BodyWrench w;
  w.force_body_n = Vec3(0, 0, -0.1);
  s.reply.wrenches.emplace_back(2, w);
  SlotRecord t;
  t.outcome = SlotOutcome::timeout;
  r.slots = {s, t};
  b.clear();
  encode_step(r, b);
  pb::Reader top(b);
  std::uint32_t field;
  pb::Wire wire;
  std::vector<std::string_view> slots;
  while (top.next(field, wire)) {
    if (field == 6) {
      REQUIRE(wire == pb::Wire::len);
      REQUIRE(top.len(slots.emplace_back()));
    } else {
      REQUIRE(top.skip(wire));
    }
  }
  REQUIRE(slots.size() == 2);
  // the timeout slot: outcome 1 (SLOT_TIMEOUT), round trip 0, no reply
  CHECK(slots[1] == std::string_view("\x08\x01\x10\x00", 4));
  // the fresh slot: outcome 0, round trip 150 (varint 96 01), then field 3: the reply
  CHECK(slots[0].substr(0, 5) == std::string_view("\x08\x00\x10\x96\x01", 5));
  CHECK(slots[0][5] == '\x1a');
  // the reply: step 5, then a Wrench (field 2) whose force_body_n.z (field 4, then z = field 3)
  // holds -0.1's bit pattern
  const std::string_view reply = slots[0].substr(7);
  CHECK(reply.substr(0, 2) == std::string_view("\x08\x05", 2));
  double z = -0.1;
  const std::string zbits(reinterpret_cast<const char*>(&z), 8);
  CHECK(std::string(reply).find(std::string("\x22\x1b", 2)) != std::string::npos);
  CHECK(std::string(reply).find("\x19" + zbits) != std::string::npos);
}

TEST_CASE("a measurement takes 133 bytes, with covariance 424: every field is written") {
  Reply r;
  Measurement m;
  m.has_pose = true;
  r.measurements.push_back(m);
  std::string without, with;
  encode_reply(r, without);
  r.measurements[0].has_covariance = true;
  encode_reply(r, with);
  // step (2 bytes), the measurement's tag and two-byte length, 133 bytes of fields
  CHECK(without.size() == 2 + 1 + 2 + 133);
  // the covariance as a packed double field: tag, two-byte length, 36 doubles
  CHECK(with.size() == without.size() + 1 + 2 + 36 * 8);
  StepRecord rec;
  REQUIRE(decode_step(one_slot_step(r), rec, nullptr));
  CHECK(rec.slots[0].reply.measurements[0].has_covariance);
}

TEST_CASE("a wire frame is Reply field 5: a WireFrame with to_peer and its bytes, as written") {
  Reply r;
  r.step = 1;
  r.add_wire(true, "ab");
  r.add_wire(false, std::string("\0", 1));
  std::string b;
  encode_reply(r, b);
  // step 1; field 5 (len) of 6 bytes: to_peer (field 1 varint 1), bytes (field 2) "ab";
  // field 5 of 5 bytes: to_peer 0 (every field is written, zeros included), bytes "\0"
  const std::string want(
      "\x08\x01"
      "\x2a\x06\x08\x01\x12\x02"
      "ab"
      "\x2a\x05\x08\x00\x12\x01\x00",
      17);
  CHECK(b == want);
  StepRecord back;
  REQUIRE(decode_step(one_slot_step(r), back, nullptr));
  REQUIRE(back.slots.size() == 1);
  REQUIRE(back.slots[0].reply.wire.size() == 2);
  CHECK(back.slots[0].reply.wire[0].to_peer);
  CHECK(back.slots[0].reply.wire_frame(back.slots[0].reply.wire[0]) == "ab");
  CHECK_FALSE(back.slots[0].reply.wire[1].to_peer);
  // by hand: a step whose one fresh slot's reply has a WireFrame with or without bytes (a
  // WireFrame without its bytes field is refused, and the step record that holds it too)
  const auto step_with = [](std::string_view frame) {
    std::string reply = std::string("\x08\x01\x2a", 3) + static_cast<char>(frame.size()) + std::string(frame);
    std::string slot = std::string("\x08\x00\x10\x00\x1a", 5) + static_cast<char>(reply.size()) + reply;
    return std::string("\x32", 1) + static_cast<char>(slot.size()) + slot + std::string("\x10\x00\x18\x00\x21", 5) +
           std::string(8, '\0') + std::string("\x28\x00\x08\x02", 4);
  };
  std::string error;
  CHECK(decode_step(step_with(std::string("\x08\x01\x12\x00", 4)), back, &error));
  CHECK(back.slots.at(0).reply.wire.at(0).size == 0);
  CHECK_FALSE(decode_step(step_with(std::string("\x08\x01", 2)), back, &error));
  CHECK(!error.empty());
}

TEST_CASE("a world state round-trips exactly and its fields are required") {
  const WorldState s = sample_state(3);
  std::string bytes;
  encode_state(s, bytes);
  WorldState back;
  back.bodies.resize(7);
  std::string error;
  REQUIRE(decode_state(bytes, back, &error));
  check_same(back, s);
  // the last field is time_ns (field 2): without it the record is refused
  const std::string no_time = bytes.substr(0, bytes.size() - 6);  // tag + 5-byte varint of 2.5e9
  CHECK_FALSE(decode_state(no_time, back, &error));
  CHECK(error == "state record is cut short or lacks a field it must have");
  CHECK_FALSE(decode_state("abc", back, &error));
  CHECK(error.find("state record is malformed") == 0);
}

TEST_CASE("fields a newer writer adds are skipped, and a covariance written unpacked is read") {
  StepRecord r;
  r.step = 9;
  SlotRecord s;
  s.reply.step = 9;
  Measurement m;
  m.has_covariance = true;
  for (int k = 0; k < 36; ++k) m.pose_covariance.data()[k] = k + 0.5;
  s.reply.measurements.push_back(m);
  r.slots.push_back(s);
  std::string bytes;
  encode_step(r, bytes);
  // unknown fields of every wire type in front
  std::string extra;
  pb::Writer w(extra);
  w.u64(15, 77);
  w.f64(16, 1.5);
  w.bytes(17, "later");
  extra += std::string("\xad\x01\x01\x02\x03\x04", 6);  // field 21, 32-bit
  StepRecord back;
  std::string error;
  REQUIRE_MESSAGE(decode_step(extra + bytes, back, &error), error);
  CHECK(back.step == 9);
  REQUIRE(back.slots.size() == 1);
  CHECK(back.slots[0].reply.measurements[0].pose_covariance.data()[35] == 35.5);

  // the covariance as 36 separate fixed64 fields, as a parser must accept for a packed field
  Reply one;
  one.step = 1;
  std::string reply_bytes;
  pb::Writer rw(reply_bytes);
  rw.u64(1, 1);
  std::string meas;
  pb::Writer mw(meas);
  mw.u64(1, 0);
  mw.i64(2, 0);
  mw.boolean(3, false);
  mw.boolean(4, false);
  mw.vec3(5, Vec3::Zero());
  mw.quat(6, Quat::Identity());
  mw.vec3(7, Vec3::Zero());
  mw.vec3(8, Vec3::Zero());
  for (int k = 0; k < 36; ++k) mw.f64(9, -k);
  rw.bytes(4, meas);
  std::string step_bytes;
  pb::Writer sw(step_bytes);
  std::string slot;
  pb::Writer slw(slot);
  slw.u64(1, 0);
  slw.u64(2, 0);
  slw.bytes(3, reply_bytes);
  sw.bytes(6, slot);
  sw.u64(2, 1);
  sw.i64(3, 0);
  sw.fixed64(4, 0);
  sw.u64(5, 0);
  sw.u64(1, recording_format_version);
  REQUIRE_MESSAGE(decode_step(step_bytes, back, &error), error);
  const Measurement& got = back.slots[0].reply.measurements[0];
  CHECK(got.has_covariance);
  CHECK(got.pose_covariance.data()[35] == -35.0);
}

TEST_CASE("the protobuf reader refuses overlong varints, field 0 and lengths past the end") {
  std::uint64_t v;
  pb::Reader ten(std::string_view("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10));
  CHECK(ten.varint(v));
  CHECK(v == ~std::uint64_t{0});
  pb::Reader eleven(std::string_view("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 10));
  CHECK_FALSE(eleven.varint(v));
  pb::Reader endless(std::string_view("\xff\xff\xff", 3));
  CHECK_FALSE(endless.varint(v));
  std::uint32_t field;
  pb::Wire wire;
  pb::Reader zero(std::string_view("\x00\x01", 2));
  CHECK_FALSE(zero.next(field, wire));
  CHECK(zero.failed());
  pb::Reader group(std::string_view("\x0b", 1));  // wire type 3 (groups) is not used
  CHECK_FALSE(group.next(field, wire));
  std::string_view s;
  pb::Reader past(std::string_view("\x12\x05\x01\x02", 4));
  REQUIRE(past.next(field, wire));
  CHECK_FALSE(past.len(s));
  pb::Reader clean(std::string_view(""));
  CHECK_FALSE(clean.next(field, wire));
  CHECK_FALSE(clean.failed());
}

TEST_CASE("docs/recording.proto is the descriptor's text, and the descriptor names every message") {
  std::ifstream in(TETHER_SOURCE_DIR + "/docs/recording.proto", std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "docs/recording.proto is missing");
  const std::string committed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK_MESSAGE(committed == pb::proto_text(),
                "docs/recording.proto differs from the descriptor: write pb::proto_text() into it");
  // FileDescriptorSet { file: FileDescriptorProto { name, package, message_type..., enum_type..., syntax } }
  const std::string& set = pb::descriptor_set();
  pb::Reader r(set);
  std::uint32_t field;
  pb::Wire wire;
  REQUIRE(r.next(field, wire));
  CHECK(field == 1);
  std::string_view file;
  REQUIRE(r.len(file));
  pb::Reader fr(file);
  std::vector<std::string> names;
  std::vector<std::pair<std::string, std::string>> json_names;  // every field: name, json_name
  std::string package, syntax;
  while (fr.next(field, wire)) {
    std::string_view v;
    REQUIRE(fr.len(v));
    if (field == 2) package = v;
    if (field == 12) syntax = v;
    if (field == 4 || field == 5) {
      pb::Reader mr(v);
      std::uint32_t f2;
      pb::Wire w2;
      REQUIRE(mr.next(f2, w2));
      std::string_view name;
      REQUIRE(mr.len(name));
      names.emplace_back(name);
      // DescriptorProto.field (2): FieldDescriptorProto { name 1, ..., json_name 10 }
      while (field == 4 && mr.next(f2, w2)) {
        std::string_view body;
        if (w2 != pb::Wire::len) {
          std::uint64_t ignored;
          REQUIRE(mr.varint(ignored));
          continue;
        }
        REQUIRE(mr.len(body));
        if (f2 != 2) continue;
        pb::Reader fd(body);
        std::uint32_t f3;
        pb::Wire w3;
        std::string field_name, json_name;
        while (fd.next(f3, w3)) {
          if (w3 != pb::Wire::len) {
            std::uint64_t ignored;
            REQUIRE(fd.varint(ignored));
            continue;
          }
          std::string_view text;
          REQUIRE(fd.len(text));
          if (f3 == 1) field_name = text;
          if (f3 == 10) json_name = text;
        }
        json_names.emplace_back(field_name, json_name);
      }
    }
  }
  // json_name as protoc writes it (lowerCamelCase), which tools reading the JSON form use
  REQUIRE(json_names.size() > 20);
  for (const auto& [n, j] : json_names) {
    std::string camel;
    bool up = false;
    for (char c : n) {
      if (c == '_') {
        up = true;
        continue;
      }
      camel += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
      up = false;
    }
    CHECK_MESSAGE(j == camel, n);
  }
  CHECK(std::find(json_names.begin(), json_names.end(),
                  std::make_pair(std::string("position_m"), std::string("positionM"))) != json_names.end());
  CHECK(package == "tether");
  CHECK(syntax == "proto3");
  for (const char* n : {"StepRecord", "WorldState", "Keyframe", "StepCommands", "SafeReplies", "Reply", "Measurement",
                        "Wrench", "SlotOutcome", "CommandKind"})
    CHECK_MESSAGE(std::find(names.begin(), names.end(), n) != names.end(), n);
}

TEST_CASE("a keyframe round-trips exactly") {
  const Keyframe in = sample_keyframe();
  std::string bytes;
  encode_keyframe(in, bytes);
  Keyframe out;
  std::string error;
  REQUIRE(decode_keyframe(bytes, out, &error));
  check_same(out.state, in.state);
  REQUIRE(out.held_inputs.wrenches.size() == 2);
  check_same(out.held_inputs.wrenches[1], in.held_inputs.wrenches[1]);
  REQUIRE(out.last_replies.size() == 3);
  check_same(out.last_replies[0], in.last_replies[0]);
  check_same(out.last_replies[1], in.last_replies[1]);
  check_same(out.last_replies[2], in.last_replies[2]);
  CHECK(out.model_params == in.model_params);
  CHECK(out.processor_state == in.processor_state);
  CHECK(out.devices == in.devices);
  CHECK(out.faults.empty());
  Keyframe with_faults = in;
  with_faults.faults = std::string(
      "\x00"
      "faults\x01",
      8);
  bytes.clear();
  encode_keyframe(with_faults, bytes);
  REQUIRE(decode_keyframe(bytes, out, &error));
  CHECK(out.faults == with_faults.faults);
  // decoding again into the same keyframe leaves nothing of the last one behind
  REQUIRE(decode_keyframe(bytes, out, &error));
  CHECK(out.processor_state.size() == 3);
  CHECK(out.last_replies.size() == 3);
}

TEST_CASE("model parameters round-trip and a changed mass rescales the inertia") {
  const Scenario sc = parse_scenario(R"(name: p
world: {gravity_m_s2: [0, 0, -9.81], water: {density_kg_m3: 1025, surface_z_m: 0, current_m_s: [0.1, 0, 0]}}
vehicles:
  - name: v
    bodies:
      - {name: a, shape: {type: sphere, radius_m: 0.2}, mass_kg: 30}
      - {name: b, shape: {type: box, size_m: [1, 0.5, 0.3]}, mass_kg: 12}
loop: {period_ms: 10, steps: 1}
endpoints: []
)",
                                     "p.yaml");
  WorldModel changed = sc.model;
  changed.water.density_kg_m3 = 1000.0 + 1.0 / 3.0;
  changed.bodies[1].volume_m3 = odd[0];
  changed.bodies[1].damping.quadratic = Vec3(odd[2], odd[3], odd[5]);
  std::string bytes = serialize_model_params(changed);
  // the mass goes through restore's own path (it rescales the inertia)
  const std::size_t mass1_offset = 8 + 24 + 4 + (8 + 8 + 24 * 5);
  const double new_mass = 24.0;
  std::memcpy(bytes.data() + mass1_offset, &new_mass, 8);

  WorldModel m = sc.model;
  std::string error;
  REQUIRE(restore_model_params(bytes, m, &error));
  CHECK(bits(m.water.density_kg_m3) == bits(changed.water.density_kg_m3));
  CHECK(bits(m.bodies[1].volume_m3) == bits(odd[0]));
  check_same(m.bodies[1].damping.quadratic, changed.bodies[1].damping.quadratic);
  CHECK(m.bodies[1].mass_kg == 24.0);
  CHECK(m.bodies[1].inv_mass == doctest::Approx(1.0 / 24.0));
  CHECK(m.bodies[1].inertia_body(0, 0) == doctest::Approx(sc.model.bodies[1].inertia_body(0, 0) * 2.0));
  CHECK(m.bodies[0].mass_kg == 30.0);

  SUBCASE("another scenario's parameters are refused") {
    WorldModel one = sc.model;
    one.bodies.pop_back();
    CHECK_FALSE(restore_model_params(bytes, one, &error));
    CHECK(error == "model parameters for 2 bodies, the scenario has 1");
  }
  SUBCASE("every prefix is refused") {
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      WorldModel w = sc.model;
      CHECK_FALSE(restore_model_params(std::string_view(bytes).substr(0, n), w, nullptr));
    }
  }
}

TEST_CASE("every prefix of a step record or keyframe is an error, with the offset") {
  std::string step;
  encode_step(sample_step(), step);
  std::string key;
  encode_keyframe(sample_keyframe(), key);
  StepRecord r;
  Keyframe k;
  for (std::size_t n = 0; n < step.size(); ++n) {
    std::string error;
    const std::string cut = step.substr(0, n);  // its own buffer: ASan sees any over-read
    CHECK_FALSE(decode_step(cut, r, &error));
    CHECK(!error.empty());
  }
  for (std::size_t n = 0; n < key.size(); ++n) {
    std::string error;
    const std::string cut = key.substr(0, n);
    CHECK_FALSE(decode_keyframe(cut, k, &error));
    CHECK(!error.empty());
  }
  std::string error;
  // inside the first slot's length: the slot claims more bytes than there are
  CHECK_FALSE(decode_step(step.substr(0, 30), r, &error));
  CHECK(error.find("step record is malformed or cut short at byte ") == 0);
  // at a field boundary (the version, written last, is gone)
  CHECK_FALSE(decode_step(step.substr(0, step.size() - 2), r, &error));
  CHECK(error == "step record is cut short or lacks a field it must have");
}

TEST_CASE("trailing bytes, another version and impossible values are refused") {
  std::string step;
  encode_step(sample_step(), step);
  StepRecord r;
  std::string error;
  CHECK_FALSE(decode_step(step + '\0', r, &error));  // field 0 does not exist
  CHECK(error.find("malformed") != std::string::npos);

  std::string v3 = step;
  REQUIRE(v3[v3.size() - 2] == '\x08');
  v3.back() = 3;
  CHECK_FALSE(decode_step(v3, r, &error));
  CHECK(error == "step record of format version 3, this build reads version 2");

  // an outcome past SLOT_FAULT, a timeout slot with a reply, a fresh one without
  auto with_slot = [](auto&& fill) {
    std::string slot, out;
    pb::Writer sw(slot);
    fill(sw);
    pb::Writer w(out);
    w.bytes(6, slot);
    w.u64(2, 0);
    w.i64(3, 0);
    w.fixed64(4, 0);
    w.u64(5, 0);
    w.u64(1, recording_format_version);
    return out;
  };
  CHECK_FALSE(decode_step(with_slot([](pb::Writer& w) {
                            w.u64(1, 3);
                            w.u64(2, 0);
                          }),
                          r, &error));
  CHECK_FALSE(decode_step(with_slot([](pb::Writer& w) {
                            w.u64(1, 1);
                            w.u64(2, 0);
                            w.bytes(3, std::string("\x08\x00", 2));
                          }),
                          r, &error));
  CHECK_FALSE(decode_step(with_slot([](pb::Writer& w) {
                            w.u64(1, 0);
                            w.u64(2, 0);
                          }),
                          r, &error));
  REQUIRE(decode_step(with_slot([](pb::Writer& w) {
                        w.u64(1, 0);
                        w.u64(2, 0);
                        w.bytes(3, std::string("\x08\x00", 2));
                      }),
                      r, &error));
  // a field of the wrong wire type (step as fixed64)
  std::string wrong;
  pb::Writer ww(wrong);
  ww.fixed64(2, 5);
  CHECK_FALSE(decode_step(wrong, r, &error));
  // a length far beyond the bytes is refused before anything is read or allocated
  CHECK_FALSE(decode_step(std::string("\x32\xff\xff\xff\xff\x0f\x00", 7), r, &error));

  std::string key;
  encode_keyframe(sample_keyframe(), key);
  Keyframe k;
  CHECK_FALSE(decode_keyframe(key + "x", k, &error));
  // a held wrench out of body order
  Keyframe shuffled = sample_keyframe();
  std::string bad;
  pb::Writer bw(bad);
  bw.u64(1, recording_format_version);
  std::string wrench;
  pb::Writer wr(wrench);
  wr.u64(1, 1);  // body 1 first
  for (std::uint32_t f = 2; f <= 5; ++f) wr.vec3(f, Vec3::Zero());
  bw.bytes(3, wrench);
  bw.bytes(5, "");
  bw.bytes(7, "");
  std::string state;
  encode_state(shuffled.state, state);
  bw.bytes(2, state);
  CHECK_FALSE(decode_keyframe(bad, k, &error));
}

TEST_CASE("random byte flips never crash the decoders") {
  std::string step;
  encode_step(sample_step(), step);
  std::string key;
  encode_keyframe(sample_keyframe(), key);
  std::mt19937_64 rng(20240611);
  StepRecord r;
  Keyframe k;
  int step_ok = 0, key_ok = 0;
  for (int round = 0; round < 3000; ++round) {
    for (std::string* original : {&step, &key}) {
      std::string b = *original;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) b[rng() % b.size()] ^= static_cast<char>(1u << (rng() % 8));
      std::string error;
      if (original == &step) {
        if (decode_step(b, r, &error)) {
          ++step_ok;
          std::string re;  // what decoded must encode again without trouble
          encode_step(r, re);
        } else {
          CHECK(!error.empty());
        }
      } else {
        if (decode_keyframe(b, k, &error))
          ++key_ok;
        else
          CHECK(!error.empty());
      }
    }
  }
  // flips inside doubles decode fine; flips in counts and lengths do not
  CHECK(step_ok > 0);
  CHECK(key_ok > 0);
}

TEST_CASE("a device command claiming more than 16 bytes is clamped, not written broken") {
  Reply reply;
  DeviceCommand c;
  c.device = 1;
  c.size = 200;
  reply.commands.push_back(c);
  StepRecord out;
  std::string error;
  REQUIRE(decode_step(one_slot_step(reply), out, &error));
  REQUIRE(out.slots[0].reply.commands.size() == 1);
  CHECK(out.slots[0].reply.commands[0].size == DeviceCommand::max_bytes);
}

TEST_CASE("json_text: a string that is not UTF-8 is written with U+FFFD, never thrown") {
  // nlohmann::json's plain dump() throws on it: on the recorder's thread that ended the
  // process (SIGABRT) and left a recording with no steps
  const nlohmann::json j = {{"name", std::string("fw\xff\xfe-1")}, {"ok", "\xc3\xa9"}};
  CHECK_THROWS(j.dump());
  const std::string text = json_text(j);
  CHECK(text == "{\"name\":\"fw\xef\xbf\xbd\xef\xbf\xbd-1\",\"ok\":\"\xc3\xa9\"}");
  CHECK(nlohmann::json::parse(text)["name"] == "fw\xef\xbf\xbd\xef\xbf\xbd-1");
}
