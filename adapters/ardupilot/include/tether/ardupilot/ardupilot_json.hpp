// SPDX-License-Identifier: Apache-2.0
// ArduPilot's JSON physics interface on the wire (docs/ardupilot.md): the servo packet
// ArduPilot sends (raw little-endian, 16 or 32 channels) and the one-line JSON reply the
// physics side answers with. Both directions are plain functions on caller-owned buffers:
// parsing never throws and never allocates (a rejection is a named, countable reason);
// encoding writes into a fixed buffer with std::to_chars (no heap per reply).
//
// The reply is read by ArduPilot with a substring parser, not a JSON parser (each key found
// with strstr, the value read right after `":`), so the encoder keeps to what such a parser
// reads the same as a JSON parser: no spaces, keys in an order where no key is found inside
// another, numbers in fixed notation (never an exponent, never NaN or Inf).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "tether/physics/math.hpp"

namespace tether::adapters::ardupilot {

using runtime::Quat;
using runtime::Vec3;

// ---- servo packets (ArduPilot -> physics) -------------------------------------------------

/// Magic of a 16-channel servo packet (40 bytes).
inline constexpr std::uint16_t servo_magic_16 = 18458;
/// Magic of a 32-channel servo packet (72 bytes; ArduPilot's SERVO_32_ENABLE = 1).
inline constexpr std::uint16_t servo_magic_32 = 29569;
/// magic u16, frame_rate u16, frame_count u32.
inline constexpr std::size_t servo_header_bytes = 8;
inline constexpr std::size_t max_channels = 32;
inline constexpr std::size_t servo_packet_bytes_16 = servo_header_bytes + 2 * 16;
inline constexpr std::size_t servo_packet_bytes_32 = servo_header_bytes + 2 * max_channels;
static_assert(servo_packet_bytes_16 == 40 && servo_packet_bytes_32 == 72);

/// One servo packet, decoded.
struct ServoPacket {
  std::uint16_t frame_rate_hz = 0;  // ArduPilot's SIM_RATE_HZ
  std::uint32_t frame_count = 0;    // advances only after ArduPilot has parsed a reply
  std::uint8_t channels = 16;       // 16 or 32
  std::array<std::uint16_t, max_channels> pwm_us{};  // channels past `channels` are 0
};

/// Why a datagram is not a servo packet (none: it is one).
enum class ServoReject : std::uint8_t {
  none,
  bad_magic,     // fewer than 2 bytes, or a magic that is neither 18458 nor 29569
  short_packet,  // a known magic, but fewer bytes than its channels need
  long_packet,   // a known magic, but more bytes than its channels need
};
inline constexpr std::size_t servo_reject_kinds = 4;
/// "none", "bad_magic", "short_packet", "long_packet".
const char* to_string(ServoReject reason);

/// Decodes one datagram into `out` (left unchanged unless it returns none).
[[nodiscard]] ServoReject parse_servo_packet(const std::uint8_t* data, std::size_t size, ServoPacket& out);

/// Writes `packet` as ArduPilot does (packet.channels must be 16 or 32). Returns the bytes
/// written: 40 or 72, or 0 when `capacity` is too small or the channel count is neither.
[[nodiscard]] std::size_t encode_servo_packet(const ServoPacket& packet, std::uint8_t* out, std::size_t capacity);

/// Datagrams seen, by outcome.
struct ServoCounters {
  std::uint64_t accepted = 0;
  std::array<std::uint64_t, servo_reject_kinds> rejected{};  // indexed by ServoReject; [none] stays 0

  void count(ServoReject reason) {
    if (reason == ServoReject::none)
      ++accepted;
    else
      ++rejected[static_cast<std::size_t>(reason)];
  }
  std::uint64_t rejected_total() const { return rejected[1] + rejected[2] + rejected[3]; }
};

// ---- replies (physics -> ArduPilot) ------------------------------------------------------

/// What a reply says, already in ArduPilot's frames: earth NED (north, east, down) from
/// home, body FRD (forward, right, down). ardupilot_frames.hpp fills the first six fields
/// from Tether's state.
struct ReplyState {
  std::int64_t time_ns = 0;       // `timestamp`, written in seconds with 9 decimals
  Vec3 gyro_rad_s{0, 0, 0};       // `imu.gyro`, body FRD
  Vec3 accel_body_m_s2{0, 0, 0};  // `imu.accel_body`, specific force, body FRD
  Vec3 position_m{0, 0, 0};       // `position`, NED from home
  Vec3 velocity_m_s{0, 0, 0};     // `velocity`, NED
  Quat quaternion = Quat::Identity();  // `quaternion` [w, x, y, z], body FRD -> earth NED

  std::array<double, 6> rng_m{};  // `rng_1`..`rng_6` where the bit (1 << i) of rng_present is set
  std::uint8_t rng_present = 0;
  bool has_wind = false;
  Vec3 velocity_wind_m_s{0, 0, 0};  // `velocity_wind`, NED
  bool has_battery = false;
  double battery_voltage_v = 0;
  double battery_current_a = 0;
};

/// Decimals written for every number: nanoseconds, nanometres, nanoradians.
inline constexpr int reply_decimals = 9;
/// Magnitudes at or above this are refused (no exponent form is ever written).
inline constexpr double reply_max_magnitude = 1e9;
/// The longest reply: every optional field at the largest magnitude fits with room to spare.
inline constexpr std::size_t max_reply_bytes = 1024;

/// Why a reply was not written (none: it was).
enum class EncodeError : std::uint8_t {
  none,
  non_finite,    // a NaN or an infinity: ArduPilot cannot read it and must not fly on it
  out_of_range,  // |value| >= reply_max_magnitude, or a negative time
  no_room,       // the buffer is too small (cannot happen with max_reply_bytes)
};
/// "none", "non_finite", "out_of_range", "no_room".
const char* to_string(EncodeError error);

/// A reply as it goes on the wire: "\n{...}\n".
struct ReplyBuffer {
  std::array<char, max_reply_bytes> bytes{};
  std::size_t size = 0;
};

/// Writes `state` into `out` as one datagram framed "\n{...}\n". Key order: timestamp, imu
/// {gyro, accel_body}, position, velocity, quaternion, rng_1..6, velocity_wind, battery
/// {voltage, current}. Numbers: fixed notation, at most reply_decimals decimals, trailing
/// zeros dropped, zero written "0". On an error `out.size` is 0 and nothing is to be sent.
[[nodiscard]] EncodeError encode_reply(const ReplyState& state, ReplyBuffer& out);

}  // namespace tether::adapters::ardupilot
