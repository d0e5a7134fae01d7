// SPDX-License-Identifier: Apache-2.0
// The binary layouts replay depends on: exact round trips, the documented byte positions,
// and malformed input (every prefix, random byte flips, absurd counts) that must give an
// error, never a crash or a read past the end.
#include <doctest/doctest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "tether/recording/json_text.hpp"
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

template <typename T>
T read_at(const std::string& bytes, std::size_t offset) {
  T v;
  std::memcpy(&v, bytes.data() + offset, sizeof v);
  return v;
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

TEST_CASE("the step record layout is the documented one (docs/recording.md)") {
  StepRecord r;
  r.step = 5;
  r.time_ns = 50'000'000;
  r.state_hash = 0x1122334455667788ULL;
  r.step_time_ns = 3300;
  SlotRecord s;
  s.round_trip_ns = 150;
  s.reply.step = 5;
  BodyWrench w;
  w.force_body_n = Vec3(0, 0, -0.1);
  s.reply.wrenches.emplace_back(2, w);
  DeviceCommand c;
  c.device = 9;
  c.size = 4;
  c.bytes = {1, 2, 3, 4};
  s.reply.commands.push_back(c);
  SlotRecord t;
  t.outcome = SlotOutcome::timeout;
  r.slots = {s, t};
  std::string b;
  encode_step(r, b);
  // header: u32 version, u64 step, i64 time, u64 hash, u64 step time, u16 slots = 38 bytes
  CHECK(read_at<std::uint32_t>(b, 0) == recording_format_version);
  CHECK(read_at<std::uint64_t>(b, 4) == 5);
  CHECK(read_at<std::int64_t>(b, 12) == 50'000'000);
  CHECK(read_at<std::uint64_t>(b, 20) == 0x1122334455667788ULL);
  CHECK(read_at<std::uint64_t>(b, 28) == 3300);
  CHECK(read_at<std::uint16_t>(b, 36) == 2);
  // slot 0: u8 outcome, u64 round trip, then the reply
  CHECK(read_at<std::uint8_t>(b, 38) == 0);
  CHECK(read_at<std::uint64_t>(b, 39) == 150);
  CHECK(read_at<std::uint64_t>(b, 47) == 5);  // reply.step
  CHECK(read_at<std::uint32_t>(b, 55) == 1);  // wrenches
  CHECK(read_at<std::uint32_t>(b, 59) == 2);  // body
  // 12 doubles: force_world, torque_world, force_body, torque_body; force_body.z is the 9th
  CHECK(bits(read_at<double>(b, 63 + 8 * 8)) == bits(-0.1));
  CHECK(read_at<std::uint32_t>(b, 159) == 1);  // commands
  CHECK(read_at<std::uint16_t>(b, 163) == 9);  // device
  CHECK(read_at<std::uint8_t>(b, 165) == 4);   // size
  CHECK(read_at<std::uint32_t>(b, 166) == 0x04030201u);
  CHECK(read_at<std::uint32_t>(b, 170) == 0);  // measurements
  // slot 1: a timeout has no reply
  CHECK(read_at<std::uint8_t>(b, 174) == 1);
  CHECK(read_at<std::uint64_t>(b, 175) == 0);
  CHECK(b.size() == 183);
}

TEST_CASE("a measurement with covariance takes 117 + 288 bytes, without 117") {
  Reply r;
  Measurement m;
  m.has_pose = true;
  r.measurements.push_back(m);
  std::string without, with;
  encode_reply(r, without);
  r.measurements[0].has_covariance = true;
  encode_reply(r, with);
  CHECK(without.size() == 8 + 4 + 4 + 4 + 117);
  CHECK(with.size() == without.size() + 36 * 8);
  CHECK(read_at<std::uint8_t>(with, 20 + 4 + 8) == 1 + 4);  // flags: pose | covariance
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
  // the layout starts with the version and the length-prefixed state (20 + 13 * 8 per body)
  CHECK(read_at<std::uint32_t>(bytes, 0) == recording_format_version);
  CHECK(read_at<std::uint32_t>(bytes, 4) == 20 + 2 * 13 * 8);
  CHECK(read_at<std::uint64_t>(bytes, 8) == 250);
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
  CHECK_FALSE(decode_step(step.substr(0, 30), r, &error));
  CHECK(error == "step record is malformed or cut short at byte 28");  // in step_time_ns
  CHECK_FALSE(decode_step(step.substr(0, 60), r, &error));
  CHECK(error == "step record (endpoint count) is malformed or cut short at byte 38");
}

TEST_CASE("trailing bytes, another version and impossible values are refused") {
  std::string step;
  encode_step(sample_step(), step);
  StepRecord r;
  std::string error;
  CHECK_FALSE(decode_step(step + '\0', r, &error));
  CHECK(error.find("trailing bytes") != std::string::npos);

  std::string v2 = step;
  const std::uint32_t two = 2;
  std::memcpy(v2.data(), &two, 4);
  CHECK_FALSE(decode_step(v2, r, &error));
  CHECK(error == "step record of format version 2, this build reads version 1");

  std::string bad_outcome = step;
  bad_outcome[38] = 3;
  CHECK_FALSE(decode_step(bad_outcome, r, &error));

  // a count far beyond what the bytes can hold is refused before anything is allocated
  std::string huge = step.substr(0, 38 + 9 + 8);
  const std::uint32_t many = 0xffffffffu;
  huge.append(reinterpret_cast<const char*>(&many), 4);
  huge.append(100, '\0');
  CHECK_FALSE(decode_step(huge, r, &error));
  std::string slots = step.substr(0, 36);
  const std::uint16_t max_slots = 0xffff;
  slots.append(reinterpret_cast<const char*>(&max_slots), 2);
  CHECK_FALSE(decode_step(slots, r, &error));

  std::string key;
  encode_keyframe(sample_keyframe(), key);
  Keyframe k;
  CHECK_FALSE(decode_keyframe(key + "x", k, &error));
  std::string bad_state = key;
  bad_state[4] = static_cast<char>(bad_state[4] + 1);  // state length off by one
  CHECK_FALSE(decode_keyframe(bad_state, k, &error));
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
  StepRecord rec;
  SlotRecord s;
  s.reply = reply;
  rec.slots.push_back(s);
  std::string bytes;
  encode_step(rec, bytes);
  StepRecord out;
  std::string error;
  REQUIRE(decode_step(bytes, out, &error));
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
