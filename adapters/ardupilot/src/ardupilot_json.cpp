// SPDX-License-Identifier: Apache-2.0
#include "tether/ardupilot/ardupilot_json.hpp"

#include <charconv>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string_view>

namespace tether::adapters::ardupilot {

const char* to_string(ServoReject reason) {
  switch (reason) {
    case ServoReject::none:
      return "none";
    case ServoReject::bad_magic:
      return "bad_magic";
    case ServoReject::short_packet:
      return "short_packet";
    case ServoReject::long_packet:
      return "long_packet";
  }
  return "?";
}

const char* to_string(EncodeError error) {
  switch (error) {
    case EncodeError::none:
      return "none";
    case EncodeError::non_finite:
      return "non_finite";
    case EncodeError::out_of_range:
      return "out_of_range";
    case EncodeError::no_room:
      return "no_room";
  }
  return "?";
}

namespace {

// little-endian reads and writes, byte by byte: no alignment or host order assumed
std::uint16_t get_u16(const std::uint8_t* p) {
  return static_cast<std::uint16_t>(p[0] | (static_cast<unsigned>(p[1]) << 8));
}
std::uint32_t get_u32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}
void put_u16(std::uint8_t* p, std::uint16_t v) {
  p[0] = static_cast<std::uint8_t>(v & 0xFF);
  p[1] = static_cast<std::uint8_t>(v >> 8);
}
void put_u32(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>((v >> (8 * i)) & 0xFF);
}

}  // namespace

ServoReject parse_servo_packet(const std::uint8_t* data, std::size_t size, ServoPacket& out) {
  if (data == nullptr || size < 2) return ServoReject::bad_magic;
  const std::uint16_t magic = get_u16(data);
  std::size_t channels = 0;
  if (magic == servo_magic_16)
    channels = 16;
  else if (magic == servo_magic_32)
    channels = 32;
  else
    return ServoReject::bad_magic;
  const std::size_t need = servo_header_bytes + 2 * channels;
  if (size < need) return ServoReject::short_packet;
  if (size > need) return ServoReject::long_packet;
  out.frame_rate_hz = get_u16(data + 2);
  out.frame_count = get_u32(data + 4);
  out.channels = static_cast<std::uint8_t>(channels);
  out.pwm_us.fill(0);
  for (std::size_t i = 0; i < channels; ++i) out.pwm_us[i] = get_u16(data + servo_header_bytes + 2 * i);
  return ServoReject::none;
}

std::size_t encode_servo_packet(const ServoPacket& packet, std::uint8_t* out, std::size_t capacity) {
  if (packet.channels != 16 && packet.channels != 32) return 0;
  const std::size_t need = servo_header_bytes + 2 * std::size_t{packet.channels};
  if (out == nullptr || capacity < need) return 0;
  put_u16(out, packet.channels == 16 ? servo_magic_16 : servo_magic_32);
  put_u16(out + 2, packet.frame_rate_hz);
  put_u32(out + 4, packet.frame_count);
  for (std::size_t i = 0; i < packet.channels; ++i) put_u16(out + servo_header_bytes + 2 * i, packet.pwm_us[i]);
  return need;
}

namespace {

// Appends text and numbers to a fixed buffer; the first error wins and sticks.
class Writer {
 public:
  Writer(char* begin, char* end) : begin_(begin), p_(begin), end_(end) {}

  void text(std::string_view s) {
    if (error_ != EncodeError::none) return;
    if (static_cast<std::size_t>(end_ - p_) < s.size()) {
      error_ = EncodeError::no_room;
      return;
    }
    std::memcpy(p_, s.data(), s.size());
    p_ += s.size();
  }

  // Fixed notation with reply_decimals decimals, trailing zeros and a bare '.' dropped, and
  // "-0" written "0": what strtod, sscanf("%f"), a skip-to-digit-or-minus reader and a JSON
  // parser all read as the same value. Never an exponent, never NaN or Inf.
  void number(double v) {
    if (error_ != EncodeError::none) return;
    if (!std::isfinite(v)) {
      error_ = EncodeError::non_finite;
      return;
    }
    if (std::fabs(v) >= reply_max_magnitude) {
      error_ = EncodeError::out_of_range;
      return;
    }
    char digits[48];
    const auto r = std::to_chars(digits, digits + sizeof digits, v, std::chars_format::fixed, reply_decimals);
    if (r.ec != std::errc{}) {
      error_ = EncodeError::no_room;
      return;
    }
    text(trimmed(digits, r.ptr));
  }

  // nanoseconds as seconds, exactly: the integer part, then up to 9 decimals
  void seconds(std::int64_t ns) {
    if (error_ != EncodeError::none) return;
    if (ns < 0) {
      error_ = EncodeError::out_of_range;
      return;
    }
    char digits[48];
    auto r = std::to_chars(digits, digits + 24, ns / 1'000'000'000);
    char* p = r.ptr;
    *p++ = '.';
    std::int64_t frac = ns % 1'000'000'000;
    for (int i = 8; i >= 0; --i) {
      p[i] = static_cast<char>('0' + frac % 10);
      frac /= 10;
    }
    text(trimmed(digits, p + 9));
  }

  void vector(const Vec3& v) {
    text("[");
    number(v.x());
    text(",");
    number(v.y());
    text(",");
    number(v.z());
    text("]");
  }

  EncodeError error() const { return error_; }
  std::size_t size() const { return static_cast<std::size_t>(p_ - begin_); }

 private:
  static std::string_view trimmed(char* begin, char* end) {
    if (std::memchr(begin, '.', static_cast<std::size_t>(end - begin)) != nullptr) {
      while (end[-1] == '0') --end;
      if (end[-1] == '.') --end;
    }
    if (end - begin == 2 && begin[0] == '-' && begin[1] == '0') ++begin;  // "-0" -> "0"
    return {begin, static_cast<std::size_t>(end - begin)};
  }

  char* begin_;
  char* p_;
  char* end_;
  EncodeError error_ = EncodeError::none;
};

}  // namespace

EncodeError encode_reply(const ReplyState& s, ReplyBuffer& out) {
  Writer w(out.bytes.data(), out.bytes.data() + out.bytes.size());
  // ArduPilot finds each key as the first occurrence of its name after the section's:
  // `velocity` must come before `velocity_wind`, and no other key contains "timestamp",
  // "imu", "gyro", "accel_body", "position", "quaternion", "attitude" or "rng_N"
  w.text("\n{\"timestamp\":");
  w.seconds(s.time_ns);
  w.text(",\"imu\":{\"gyro\":");
  w.vector(s.gyro_rad_s);
  w.text(",\"accel_body\":");
  w.vector(s.accel_body_m_s2);
  w.text("},\"position\":");
  w.vector(s.position_m);
  w.text(",\"velocity\":");
  w.vector(s.velocity_m_s);
  w.text(",\"quaternion\":[");
  w.number(s.quaternion.w());
  w.text(",");
  w.number(s.quaternion.x());
  w.text(",");
  w.number(s.quaternion.y());
  w.text(",");
  w.number(s.quaternion.z());
  // the same attitude as Euler angles (roll, pitch, yaw; rad, FRD -> NED): ArduPilot takes
  // the quaternion when both come, and master between PR #31543 and PR #33342 copies
  // rng_N only from a reply that has `attitude` (SIM_JSON.cpp, recv_fdm)
  const double qn = s.quaternion.norm();
  const double scale = qn > 0 && std::isfinite(qn) ? 1.0 / qn : 1.0;
  const double qw = s.quaternion.w() * scale, qx = s.quaternion.x() * scale, qy = s.quaternion.y() * scale,
               qz = s.quaternion.z() * scale;
  w.text("],\"attitude\":[");
  w.number(std::atan2(2.0 * (qw * qx + qy * qz), 1.0 - 2.0 * (qx * qx + qy * qy)));
  w.text(",");
  w.number(std::asin(std::clamp(2.0 * (qw * qy - qz * qx), -1.0, 1.0)));
  w.text(",");
  w.number(std::atan2(2.0 * (qw * qz + qx * qy), 1.0 - 2.0 * (qy * qy + qz * qz)));
  w.text("]");
  static constexpr const char* rng_keys[6] = {",\"rng_1\":", ",\"rng_2\":", ",\"rng_3\":",
                                              ",\"rng_4\":", ",\"rng_5\":", ",\"rng_6\":"};
  for (std::size_t i = 0; i < 6; ++i) {
    if ((s.rng_present & (1u << i)) == 0) continue;
    w.text(rng_keys[i]);
    w.number(s.rng_m[i]);
  }
  if (s.has_wind) {
    w.text(",\"velocity_wind\":");
    w.vector(s.velocity_wind_m_s);
  }
  if (s.has_battery) {
    w.text(",\"battery\":{\"voltage\":");
    w.number(s.battery_voltage_v);
    w.text(",\"current\":");
    w.number(s.battery_current_a);
    w.text("}");
  }
  w.text("}\n");
  out.size = w.error() == EncodeError::none ? w.size() : 0;
  return w.error();
}

}  // namespace tether::adapters::ardupilot
