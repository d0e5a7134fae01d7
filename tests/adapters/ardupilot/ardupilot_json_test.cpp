// SPDX-License-Identifier: Apache-2.0
// ArduPilot's JSON interface on the wire: servo packets in, replies out. Every reply is read
// three ways and must read the same: by nlohmann::json, by a substring reader written here
// the way newer ArduPilot reads vectors (skip to the next digit or '-'), and by the
// stand-in's reader (the sscanf("[%f, %f, %f]") way of older ArduPilot).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#define TETHER_ALLOC_COUNT_NO_OPERATORS
#include "alloc_count.hpp"
#include "tether/ardupilot/ardupilot_json.hpp"
#include "tether/ardupilot_standin/ardupilot_standin.hpp"

using namespace tether::adapters::ardupilot;

namespace {

std::vector<std::uint8_t> packet_bytes(std::uint16_t magic, std::uint16_t rate, std::uint32_t count,
                                       std::size_t channels) {
  std::vector<std::uint8_t> b;
  auto u16 = [&](std::uint16_t v) {
    b.push_back(static_cast<std::uint8_t>(v & 0xFF));
    b.push_back(static_cast<std::uint8_t>(v >> 8));
  };
  u16(magic);
  u16(rate);
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<std::uint8_t>((count >> (8 * i)) & 0xFF));
  for (std::size_t i = 0; i < channels; ++i) u16(static_cast<std::uint16_t>(1000 + 10 * i));
  return b;
}

// ---- a reader as newer ArduPilot reads a reply: written here, independent of the library ----

// the section's first occurrence, then the key's after it, then 2 past the key (`":`)
const char* ap_find(const char* json, const char* section, const char* key) {
  const char* p = std::strstr(json, section);
  if (!p) return nullptr;
  p += std::strlen(section) + 1;
  p = std::strstr(p, key);
  if (!p) return nullptr;
  return p + std::strlen(key) + 2;
}

double ap_scalar(const char* json, const char* section, const char* key) {
  const char* p = ap_find(json, section, key);
  REQUIRE(p != nullptr);
  return std::atof(p);
}

// each element: skip to the next digit or '-', then read a number there
std::vector<double> ap_array(const char* json, const char* section, const char* key, std::size_t n) {
  const char* p = ap_find(json, section, key);
  REQUIRE(p != nullptr);
  std::vector<double> out;
  for (std::size_t i = 0; i < n; ++i) {
    while (*p && *p != '-' && (*p < '0' || *p > '9')) ++p;
    REQUIRE(*p != '\0');
    char* end = nullptr;
    out.push_back(std::strtod(p, &end));
    p = end;
  }
  return out;
}

std::vector<double> json_array(const nlohmann::json& j) { return j.get<std::vector<double>>(); }

std::vector<double> vec(const Vec3& v) { return {v.x(), v.y(), v.z()}; }

// every number in the text is -?digits(.digits)?: no exponent, no NaN/Inf, no '+', no '.5'
bool plain_numbers_only(const std::string& text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c != ':' && c != '[' && c != ',') continue;
    std::size_t j = i + 1;
    if (j < text.size() && (text[j] == '{' || text[j] == '"' || text[j] == '[')) continue;
    if (j < text.size() && text[j] == '-') ++j;
    const std::size_t digits_from = j;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
    if (j == digits_from) return false;
    if (j < text.size() && text[j] == '.') {
      const std::size_t frac_from = ++j;
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
      if (j == frac_from || text[j - 1] == '0') return false;  // trailing zeros are dropped
    }
    if (j >= text.size() || (text[j] != ',' && text[j] != ']' && text[j] != '}')) return false;
  }
  return true;
}

// Encodes `s`, then checks the framing, the number format, and that the three readers read
// the same values, each within half a unit of the 9th decimal of what was encoded.
void check_reply_reads_back(const ReplyState& s) {
  ReplyBuffer out;
  REQUIRE(encode_reply(s, out) == EncodeError::none);
  const std::string text(out.bytes.data(), out.size);
  INFO("reply: " << text);
  REQUIRE(text.size() > 4);
  CHECK(text.front() == '\n');
  CHECK(text.back() == '\n');
  CHECK(text.find('\n', 1) == text.size() - 1);
  CHECK(text.find(' ') == std::string::npos);
  const std::string line = text.substr(1, text.size() - 2);
  CHECK(plain_numbers_only(line));

  const nlohmann::json j = nlohmann::json::parse(line);
  SensorReading r;
  const std::uint32_t fields = read_reply_like_ardupilot(line.c_str(), r);
  CHECK((fields & required_fields) == required_fields);
  const char* c = line.c_str();
  // half a unit of the 9th decimal, and the rounding of reading the decimal back
  auto close = [](double read, double sent) { return std::fabs(read - sent) <= 0.5e-9 + std::fabs(sent) * 5e-16; };

  const double t = j["timestamp"].get<double>();
  CHECK(ap_scalar(c, "", "timestamp") == t);
  CHECK(r.timestamp_s == t);
  CHECK(t == doctest::Approx(static_cast<double>(s.time_ns) * 1e-9).epsilon(1e-15));

  auto same3 = [&](const nlohmann::json& jv, const char* section, const char* key, const Vec3& sent,
                   const Vec3& stand_in) {
    INFO(key);
    const std::vector<double> a = json_array(jv);
    REQUIRE(a.size() == 3);
    CHECK(ap_array(c, section, key, 3) == a);
    CHECK(vec(stand_in) == a);
    for (int i = 0; i < 3; ++i) CHECK(close(a[static_cast<std::size_t>(i)], sent[i]));
  };
  same3(j["imu"]["gyro"], "imu", "gyro", s.gyro_rad_s, r.gyro_rad_s);
  same3(j["imu"]["accel_body"], "imu", "accel_body", s.accel_body_m_s2, r.accel_body_m_s2);
  same3(j["position"], "", "position", s.position_m, r.position_m);
  same3(j["velocity"], "", "velocity", s.velocity_m_s, r.velocity_m_s);

  const std::vector<double> q = json_array(j["quaternion"]);
  REQUIRE(q.size() == 4);
  CHECK(ap_array(c, "", "quaternion", 4) == q);
  CHECK(std::vector<double>(r.quaternion.begin(), r.quaternion.end()) == q);
  const double sent_q[4] = {s.quaternion.w(), s.quaternion.x(), s.quaternion.y(), s.quaternion.z()};
  for (std::size_t i = 0; i < 4; ++i) CHECK(close(q[i], sent_q[i]));
  // `attitude` beside it: the same rotation as roll, pitch, yaw, read as ArduPilot reads it
  const std::vector<double> e = json_array(j["attitude"]);
  REQUIRE(e.size() == 3);
  CHECK(ap_array(c, "", "attitude", 3) == e);
  const Quat back = Quat(Eigen::AngleAxisd(e[2], Vec3::UnitZ()) * Eigen::AngleAxisd(e[1], Vec3::UnitY()) *
                         Eigen::AngleAxisd(e[0], Vec3::UnitX()));
  if (s.quaternion.norm() > 0.5) CHECK(std::abs(back.dot(s.quaternion.normalized())) > 1 - 1e-6);

  for (std::size_t i = 0; i < 6; ++i) {
    const std::string key = "rng_" + std::to_string(i + 1);
    const bool sent = (s.rng_present & (1u << i)) != 0;
    REQUIRE(j.contains(key) == sent);
    CHECK(((fields & (field_rng_1 << i)) != 0) == sent);
    if (!sent) continue;
    CHECK(ap_scalar(c, "", key.c_str()) == j[key].get<double>());
    CHECK(r.rng_m[i] == j[key].get<double>());
    CHECK(close(j[key].get<double>(), s.rng_m[i]));
  }
  REQUIRE(j.contains("velocity_wind") == s.has_wind);
  if (s.has_wind) same3(j["velocity_wind"], "", "velocity_wind", s.velocity_wind_m_s, r.velocity_wind_m_s);
  REQUIRE(j.contains("battery") == s.has_battery);
  if (s.has_battery) {
    CHECK(ap_scalar(c, "battery", "voltage") == j["battery"]["voltage"].get<double>());
    CHECK(ap_scalar(c, "battery", "current") == j["battery"]["current"].get<double>());
    CHECK(r.battery_voltage_v == j["battery"]["voltage"].get<double>());
    CHECK(r.battery_current_a == j["battery"]["current"].get<double>());
  }
}

}  // namespace

TEST_CASE("ardupilot json: 16- and 32-channel servo packets decode and encode the same bytes") {
  for (const std::size_t channels : {std::size_t{16}, std::size_t{32}}) {
    const std::uint16_t magic = channels == 16 ? servo_magic_16 : servo_magic_32;
    const auto bytes = packet_bytes(magic, 1200, 0xA1B2C3D4u, channels);
    REQUIRE(bytes.size() == (channels == 16 ? 40u : 72u));
    ServoPacket p;
    REQUIRE(parse_servo_packet(bytes.data(), bytes.size(), p) == ServoReject::none);
    CHECK(p.channels == channels);
    CHECK(p.frame_rate_hz == 1200);
    CHECK(p.frame_count == 0xA1B2C3D4u);
    for (std::size_t i = 0; i < max_channels; ++i) CHECK(p.pwm_us[i] == (i < channels ? 1000 + 10 * i : 0));
    std::uint8_t again[servo_packet_bytes_32 + 4];
    REQUIRE(encode_servo_packet(p, again, sizeof again) == bytes.size());
    CHECK(std::memcmp(again, bytes.data(), bytes.size()) == 0);
    CHECK(encode_servo_packet(p, again, bytes.size() - 1) == 0);
  }
}

TEST_CASE("ardupilot json: every wrong length and a wrong magic are named, counted rejections") {
  ServoCounters counters;
  for (const std::size_t channels : {std::size_t{16}, std::size_t{32}}) {
    const std::uint16_t magic = channels == 16 ? servo_magic_16 : servo_magic_32;
    auto bytes = packet_bytes(magic, 400, 7, channels);
    const std::size_t right = bytes.size();
    bytes.resize(right + 40, 0x55);
    for (std::size_t size = 0; size <= right + 40; ++size) {
      ServoPacket p;
      p.frame_count = 99;
      const ServoReject r = parse_servo_packet(bytes.data(), size, p);
      counters.count(r);
      INFO("channels " << channels << ", size " << size);
      if (size < 2)
        CHECK(r == ServoReject::bad_magic);
      else if (size < right)
        CHECK(r == ServoReject::short_packet);
      else if (size > right)
        CHECK(r == ServoReject::long_packet);
      else
        CHECK(r == ServoReject::none);
      if (r != ServoReject::none) CHECK(p.frame_count == 99);  // left alone
    }
  }
  // a 16-channel body under the 32-channel magic is short, and the other way long
  auto b16 = packet_bytes(servo_magic_32, 400, 1, 16);
  ServoPacket p;
  CHECK(parse_servo_packet(b16.data(), b16.size(), p) == ServoReject::short_packet);
  auto b32 = packet_bytes(servo_magic_16, 400, 1, 32);
  CHECK(parse_servo_packet(b32.data(), b32.size(), p) == ServoReject::long_packet);
  for (const std::uint16_t magic : {std::uint16_t{0}, std::uint16_t{18457}, std::uint16_t{0x1A48}}) {
    const auto bad = packet_bytes(magic, 400, 1, 16);
    const ServoReject r = parse_servo_packet(bad.data(), bad.size(), p);
    counters.count(r);
    CHECK(r == ServoReject::bad_magic);
  }
  CHECK(parse_servo_packet(nullptr, 40, p) == ServoReject::bad_magic);
  CHECK(counters.accepted == 2);
  CHECK(counters.rejected[static_cast<std::size_t>(ServoReject::bad_magic)] == 2 * 2 + 3);
  CHECK(counters.rejected[static_cast<std::size_t>(ServoReject::short_packet)] == (40 - 2) + (72 - 2));
  CHECK(counters.rejected[static_cast<std::size_t>(ServoReject::long_packet)] == 2 * 40);
  CHECK(counters.rejected_total() == 7 + 108 + 80);
  CHECK(std::string(to_string(ServoReject::short_packet)) == "short_packet");
}

TEST_CASE("ardupilot json: a reply at rest is framed, plain and what ArduPilot's example shows") {
  ReplyState s;
  s.time_ns = 2'500'000'000;
  s.accel_body_m_s2 = {0, 0, -9.81};
  ReplyBuffer out;
  REQUIRE(encode_reply(s, out) == EncodeError::none);
  CHECK(std::string(out.bytes.data(), out.size) ==
        "\n{\"timestamp\":2.5,\"imu\":{\"gyro\":[0,0,0],\"accel_body\":[0,0,-9.81]},\"position\":[0,0,0],"
        "\"velocity\":[0,0,0],\"quaternion\":[1,0,0,0],\"attitude\":[0,0,0]}\n");
  check_reply_reads_back(s);
}

TEST_CASE("ardupilot json: negative, tiny and large values read the same by JSON and by substring") {
  std::mt19937_64 rng(31);
  const double magnitudes[] = {0.0, 1e-12, 4e-10, 5e-10, 6e-10, 1e-9, 1.5e-9, 1e-6, 0.1, 1, 9.81, 123.456789012,
                               1e5, 3.3e7, 999'999'999.999999};
  std::uniform_int_distribution<std::size_t> pick(0, std::size(magnitudes) - 1);
  std::uniform_real_distribution<double> wobble(0.5, 1.0);
  std::bernoulli_distribution coin(0.5);
  auto value = [&] {
    double v = magnitudes[pick(rng)];
    if (coin(rng)) v *= wobble(rng);
    if (v >= reply_max_magnitude) v = 999'999'999.0;
    return coin(rng) ? -v : v;
  };
  auto vec3 = [&] { return Vec3(value(), value(), value()); };
  for (int round = 0; round < 300; ++round) {
    ReplyState s;
    s.time_ns = static_cast<std::int64_t>(rng() % 4'000'000'000'000'000ull);
    s.gyro_rad_s = vec3();
    s.accel_body_m_s2 = vec3();
    s.position_m = vec3();
    s.velocity_m_s = vec3();
    s.quaternion = Quat(value(), value(), value(), value());
    s.rng_present = static_cast<std::uint8_t>(rng() & 0x3F);
    for (double& r : s.rng_m) r = value();
    s.has_wind = coin(rng);
    s.velocity_wind_m_s = vec3();
    s.has_battery = coin(rng);
    s.battery_voltage_v = value();
    s.battery_current_a = value();
    check_reply_reads_back(s);
  }
  // the edges themselves: -0 and values that round to zero are written "0"
  ReplyState s;
  s.gyro_rad_s = {-0.0, -4e-10, 4e-10};
  s.position_m = {-999'999'999.9999999, 999'999'999.9999999, -1e-9};
  check_reply_reads_back(s);
  ReplyBuffer out;
  REQUIRE(encode_reply(s, out) == EncodeError::none);
  CHECK(std::string(out.bytes.data(), out.size).find("\"gyro\":[0,0,0]") != std::string::npos);
}

TEST_CASE("ardupilot json: NaN, infinity, out-of-range values and negative times are refused, not sent") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  auto error_of = [](const ReplyState& s) {
    ReplyBuffer out;
    out.size = 5;
    const EncodeError e = encode_reply(s, out);
    if (e != EncodeError::none) CHECK(out.size == 0);
    return e;
  };
  ReplyState s;
  s.gyro_rad_s.y() = nan;
  CHECK(error_of(s) == EncodeError::non_finite);
  s = ReplyState{};
  s.quaternion.w() = -inf;
  CHECK(error_of(s) == EncodeError::non_finite);
  s = ReplyState{};
  s.rng_present = 1u << 5;
  s.rng_m[5] = inf;
  CHECK(error_of(s) == EncodeError::non_finite);
  s = ReplyState{};
  s.rng_m[5] = inf;  // not present: not written, no error
  CHECK(error_of(s) == EncodeError::none);
  s = ReplyState{};
  s.position_m.x() = 1e9;
  CHECK(error_of(s) == EncodeError::out_of_range);
  s = ReplyState{};
  s.has_battery = true;
  s.battery_current_a = -2e12;
  CHECK(error_of(s) == EncodeError::out_of_range);
  s = ReplyState{};
  s.time_ns = -1;
  CHECK(error_of(s) == EncodeError::out_of_range);
  CHECK(std::string(to_string(EncodeError::non_finite)) == "non_finite");
}

TEST_CASE("ardupilot json: the largest reply fits, and writing replies allocates nothing") {
  ReplyState s;
  s.time_ns = std::numeric_limits<std::int64_t>::max();
  const double big = -999'999'999.123456789;
  s.gyro_rad_s = s.accel_body_m_s2 = s.position_m = s.velocity_m_s = s.velocity_wind_m_s = Vec3(big, big, big);
  s.quaternion = Quat(big, big, big, big);
  s.rng_present = 0x3F;
  s.rng_m.fill(big);
  s.has_wind = s.has_battery = true;
  s.battery_voltage_v = s.battery_current_a = big;
  ReplyBuffer out;
  REQUIRE(encode_reply(s, out) == EncodeError::none);
  CHECK(out.size < max_reply_bytes);

  tether::test::AllocCount count;
  tether::test::arm(count);
  std::size_t total = 0;
  for (int i = 0; i < 1000; ++i) {
    s.time_ns = std::int64_t{i} * 2'500'000;
    s.position_m.x() = i * 0.001;
    total += encode_reply(s, out) == EncodeError::none ? out.size : 0;
  }
  tether::test::disarm();
  CHECK(total > 0);
  CHECK_MESSAGE(count.total == 0, count.describe());
}

TEST_CASE("ardupilot json: the stand-in's reader takes what ArduPilot takes and leaves out what it cannot read") {
  SensorReading r;
  // ArduPilot's own example (with `attitude` instead of the quaternion): quaternion missing
  const char* example =
      "{\"timestamp\":2500,\"imu\":{\"gyro\":[0,0,0],\"accel_body\":[0,0,0]},\"position\":[0,0,0],"
      "\"attitude\":[0,0,0],\"velocity\":[0,0,0]}";
  const std::uint32_t f = read_reply_like_ardupilot(example, r);
  CHECK((f & field_quaternion) == 0);
  CHECK((f | field_quaternion) == required_fields);
  CHECK(r.timestamp_s == 2500);
  // spaces after commas, as sscanf("[%f, %f, %f]") allows; a broken vector is left out
  CHECK(read_reply_like_ardupilot("{\"position\":[1, -2.5,  3e2],\"velocity\":[1,2]}", r) == field_position);
  CHECK(r.position_m == Vec3(1, -2.5, 300));
  // key order: with velocity_wind first, `velocity` is found inside it; the sscanf way then
  // reads nothing, the skip-to-a-digit way reads the wind (the encoder writes velocity first)
  const char* wind_first = "{\"velocity_wind\":[1,2,3],\"velocity\":[4,5,6]}";
  CHECK(read_reply_like_ardupilot(wind_first, r) == field_velocity_wind);
  CHECK(ap_array(wind_first, "", "velocity", 3) == std::vector<double>{1, 2, 3});
  // nothing to find, or a key at the very end of the line
  CHECK(read_reply_like_ardupilot("", r) == 0);
  CHECK(read_reply_like_ardupilot("{\"timestamp", r) == 0);
  CHECK(read_reply_like_ardupilot("imu", r) == 0);
}
