// SPDX-License-Identifier: Apache-2.0
// Fuzz target for ArduPilot's JSON interface (adapters/ardupilot/src/ardupilot_json.cpp and the
// stand-in's reply reader, adapters/ardupilot/standin/src/ardupilot_standin.cpp). The input is used three ways:
//   - as one UDP datagram to parse_servo_packet: an accepted packet is 40 or 72 bytes, and
//     encode_servo_packet writes exactly the input again; a rejection is the one the size
//     and magic call for;
//   - as a reply line (NUL-terminated copy) to read_reply_like_ardupilot: no crash, no read
//     past the line, only known field bits;
//   - as the bits of a reply's numbers (8 bytes per double, the time from the first 8):
//     encode_reply refuses exactly the non-finite and out-of-range values, and what it writes
//     is framed, fits, and reads back through read_reply_like_ardupilot with every required
//     field within half a unit of the 9th decimal.
// Built with the suite's driver (tests/fuzz/fuzz_driver.cpp) or libFuzzer (docs/reliability.md).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tether/ardupilot/ardupilot_json.hpp"
#include "tether/ardupilot_standin/ardupilot_standin.hpp"

namespace ap = tether::adapters::ardupilot;

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "ardupilot_json_fuzz: broken invariant: %s\n", what);
    std::abort();
  }
}

void servo(const std::uint8_t* data, std::size_t size) {
  ap::ServoPacket p;
  const ap::ServoReject r = ap::parse_servo_packet(data, size, p);
  const std::uint16_t magic = size >= 2 ? static_cast<std::uint16_t>(data[0] | (data[1] << 8)) : 0;
  const std::size_t want = magic == ap::servo_magic_16   ? ap::servo_packet_bytes_16
                           : magic == ap::servo_magic_32 ? ap::servo_packet_bytes_32
                                                         : 0;
  if (want == 0) {
    check(r == ap::ServoReject::bad_magic, "an unknown magic is bad_magic");
    return;
  }
  check(r == (size < want ? ap::ServoReject::short_packet
              : size > want ? ap::ServoReject::long_packet
                            : ap::ServoReject::none),
        "a known magic is judged by its length");
  if (r != ap::ServoReject::none) return;
  check(p.channels == (want == ap::servo_packet_bytes_16 ? 16 : 32), "channels follow the magic");
  for (std::size_t i = p.channels; i < ap::max_channels; ++i) check(p.pwm_us[i] == 0, "unused channels are 0");
  std::uint8_t again[ap::servo_packet_bytes_32];
  check(ap::encode_servo_packet(p, again, sizeof again) == size && std::memcmp(again, data, size) == 0,
        "an accepted packet encodes to the same bytes");
}

void reply_line(const std::uint8_t* data, std::size_t size) {
  // exactly the line's bytes and its NUL, so that AddressSanitizer sees a read past the end
  std::vector<char> line(data, data + size);
  line.push_back('\0');
  ap::SensorReading r;
  const std::uint32_t fields = ap::read_reply_like_ardupilot(line.data(), r);
  check((fields & ~0x7FFFu) == 0, "only known field bits");
  check(fields == r.fields, "the result is the reading's fields");
}

double take(const std::uint8_t*& p, const std::uint8_t* end) {
  double v = 0;
  if (end - p >= 8) {
    std::memcpy(&v, p, 8);
    p += 8;
  }
  return v;
}

bool encodable(double v) { return std::isfinite(v) && std::fabs(v) < ap::reply_max_magnitude; }

bool close(double read, double sent) { return std::fabs(read - sent) <= 0.5e-9 + std::fabs(sent) * 5e-16; }

void reply(const std::uint8_t* data, std::size_t size) {
  if (size < 8) return;
  const std::uint8_t* p = data;
  const std::uint8_t* end = data + size;
  ap::ReplyState s;
  std::int64_t t = 0;
  std::memcpy(&t, p, 8);
  p += 8;
  s.time_ns = t;
  std::vector<double*> values = {&s.gyro_rad_s.x(),      &s.gyro_rad_s.y(),      &s.gyro_rad_s.z(),
                                 &s.accel_body_m_s2.x(), &s.accel_body_m_s2.y(), &s.accel_body_m_s2.z(),
                                 &s.position_m.x(),      &s.position_m.y(),      &s.position_m.z(),
                                 &s.velocity_m_s.x(),    &s.velocity_m_s.y(),    &s.velocity_m_s.z(),
                                 &s.quaternion.w(),      &s.quaternion.x(),      &s.quaternion.y(),
                                 &s.quaternion.z()};
  for (double* v : values) *v = take(p, end);
  s.rng_present = static_cast<std::uint8_t>(size & 0x3F);
  s.has_wind = (size & 0x40) != 0;
  s.has_battery = (size & 0x80) != 0;
  for (double& v : s.rng_m) v = take(p, end);
  s.battery_voltage_v = take(p, end);
  bool all_ok = t >= 0;
  for (double* v : values) all_ok = all_ok && encodable(*v);
  for (std::size_t i = 0; i < 6; ++i)
    if (s.rng_present & (1u << i)) all_ok = all_ok && encodable(s.rng_m[i]);
  if (s.has_battery) all_ok = all_ok && encodable(s.battery_voltage_v);

  ap::ReplyBuffer out;
  const ap::EncodeError e = ap::encode_reply(s, out);
  check(e != ap::EncodeError::no_room, "a reply always fits");
  check((e == ap::EncodeError::none) == all_ok, "refused exactly when a value cannot be written");
  if (e != ap::EncodeError::none) {
    check(out.size == 0, "nothing to send after a refusal");
    return;
  }
  check(out.size >= 4 && out.bytes[0] == '\n' && out.bytes[out.size - 1] == '\n', "framed by newlines");
  std::vector<char> line(out.bytes.data() + 1, out.bytes.data() + out.size - 1);
  for (char c : line) check(c != '\n' && c != ' ', "one line, no spaces");
  // every number is -?digits(.digits)?: no exponent, no '+', no NaN or Inf
  for (std::size_t i = 0; i + 1 < line.size(); ++i) {
    if (line[i] != ':' && line[i] != '[' && line[i] != ',') continue;
    std::size_t j = i + 1;
    if (line[j] == '{' || line[j] == '"' || line[j] == '[') continue;
    for (; j < line.size() && line[j] != ',' && line[j] != ']' && line[j] != '}'; ++j)
      check((line[j] >= '0' && line[j] <= '9') || line[j] == '.' || line[j] == '-', "plain numbers only");
  }
  line.push_back('\0');
  ap::SensorReading r;
  const std::uint32_t fields = ap::read_reply_like_ardupilot(line.data(), r);
  check((fields & ap::required_fields) == ap::required_fields, "every required field reads back");
  check(std::fabs(r.timestamp_s - static_cast<double>(s.time_ns) * 1e-9) <= 1e-15 * r.timestamp_s + 1e-18,
        "the time reads back");
  for (int i = 0; i < 3; ++i) {
    check(close(r.gyro_rad_s[i], s.gyro_rad_s[i]) && close(r.accel_body_m_s2[i], s.accel_body_m_s2[i]) &&
              close(r.position_m[i], s.position_m[i]) && close(r.velocity_m_s[i], s.velocity_m_s[i]),
          "vectors read back");
  }
  check(close(r.quaternion[0], s.quaternion.w()) && close(r.quaternion[1], s.quaternion.x()) &&
            close(r.quaternion[2], s.quaternion.y()) && close(r.quaternion[3], s.quaternion.z()),
        "the quaternion reads back");
  for (std::size_t i = 0; i < 6; ++i)
    if (s.rng_present & (1u << i)) check(close(r.rng_m[i], s.rng_m[i]), "a range reads back");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 64 * 1024) return 0;
  servo(data, size);
  reply_line(data, size);
  reply(data, size);
  return 0;
}
