// SPDX-License-Identifier: Apache-2.0
// A stand-in for ArduPilot's JSON physics backend (docs/ardupilot.md, "The stand-in"), for
// tests and CI where ArduPilot itself cannot be built. It does on the wire what ArduPilot's
// SITL does: sends a servo packet to the physics over UDP first, blocks for the reply, sends
// the same packet again after a second without one, advances frame_count only after a reply
// it could read, and reads replies ArduPilot's way (a substring parser, not a JSON parser).
// What it puts on its servo outputs is a pluggable ControlLaw; FixedPwm holds them still.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <span>
#include <string>

#include "tether/ardupilot/ardupilot_json.hpp"
#include "tether/physics/math.hpp"

namespace tether::adapters::ardupilot {

/// The fields of a reply, as bits of SensorReading::fields.
enum ReplyField : std::uint32_t {
  field_timestamp = 1u << 0,
  field_gyro = 1u << 1,
  field_accel_body = 1u << 2,
  field_position = 1u << 3,
  field_velocity = 1u << 4,
  field_quaternion = 1u << 5,
  field_rng_1 = 1u << 6,  // .. field_rng_1 << 5 for rng_6
  field_velocity_wind = 1u << 12,
  field_battery_voltage = 1u << 13,
  field_battery_current = 1u << 14,
};
/// Without all of these ArduPilot does not take a reply (it needs `attitude` or
/// `quaternion`; Tether always sends the quaternion).
inline constexpr std::uint32_t required_fields =
    field_timestamp | field_gyro | field_accel_body | field_position | field_velocity | field_quaternion;

/// What a reply says, as ArduPilot reads it (its frames: NED, FRD).
struct SensorReading {
  double timestamp_s = 0;
  Vec3 gyro_rad_s{0, 0, 0};
  Vec3 accel_body_m_s2{0, 0, 0};
  Vec3 position_m{0, 0, 0};
  Vec3 velocity_m_s{0, 0, 0};
  std::array<double, 4> quaternion{1, 0, 0, 0};  // w, x, y, z
  std::array<double, 6> rng_m{};
  Vec3 velocity_wind_m_s{0, 0, 0};
  double battery_voltage_v = 0;
  double battery_current_a = 0;
  std::uint32_t fields = 0;  // ReplyField bits of the fields found and read
};

/// Reads one reply line (NUL-terminated, framing newlines removed) the way ArduPilot's SITL
/// does: a section and then a key found by substring, the value read just past the key's
/// closing `":`, vectors as "[a, b, c]" (any spaces). A key it does not find, or whose
/// value does not read, is left out of `fields`. Returns `out.fields`.
std::uint32_t read_reply_like_ardupilot(const char* line, SensorReading& out);

/// What the stand-in autopilot puts on its servo outputs each frame.
class ControlLaw {
 public:
  virtual ~ControlLaw() = default;
  /// Fills `pwm_us` (16 or 32 channels) for frame `frame_count`; `last` is the latest reply
  /// read, nullptr before the first.
  virtual void outputs(const SensorReading* last, std::uint32_t frame_count, std::span<std::uint16_t> pwm_us) = 0;
};

/// Every channel at a fixed pulse width (default 1500 µs, a reversible thruster's stop).
class FixedPwm final : public ControlLaw {
 public:
  explicit FixedPwm(std::uint16_t all_us = 1500) { pwm_us_.fill(all_us); }
  void set(std::size_t channel_index, std::uint16_t us) { pwm_us_.at(channel_index) = us; }
  void outputs(const SensorReading* last, std::uint32_t frame_count, std::span<std::uint16_t> pwm_us) override;

 private:
  std::array<std::uint16_t, max_channels> pwm_us_{};
};

struct StandInOptions {
  std::string host = "127.0.0.1";   // where the physics listens
  std::uint16_t port = 9002;        // ArduPilot: 9002 + 10 * instance
  std::uint8_t channels = 16;       // 16 or 32 (SERVO_32_ENABLE)
  std::uint16_t frame_rate_hz = 1200;  // sent as frame_rate until the replies' timestamps give one
  std::int64_t recv_timeout_ms = 100;   // one wait for a datagram (ArduPilot: 100)
  std::int64_t resend_after_ms = 1000;  // nothing for this long: the same packet again (ArduPilot: ~1000)
};

struct StandInCounters {
  std::uint64_t packets_sent = 0;       // every servo packet, re-sends included
  std::uint64_t resends = 0;            // the same packet again after resend_after_ms of silence
  std::uint64_t replies = 0;            // replies read (each advanced frame_count)
  std::uint64_t unreadable = 0;         // datagrams without a complete line or a required field
  std::uint64_t physics_resets = 0;     // a timestamp lower than the one before (ArduPilot: dt = 0)
  std::uint64_t buffer_overflows = 0;   // input with no line end for a whole receive buffer
};

class ArduPilotStandIn {
 public:
  /// Opens its UDP socket (any local port, as ArduPilot). Throws std::runtime_error when
  /// the options are wrong or the socket cannot be opened.
  ArduPilotStandIn(StandInOptions options, ControlLaw& law);
  ~ArduPilotStandIn();
  ArduPilotStandIn(const ArduPilotStandIn&) = delete;
  ArduPilotStandIn& operator=(const ArduPilotStandIn&) = delete;

  enum class FrameResult : std::uint8_t { replied, gave_up };
  /// One ArduPilot frame: the law's outputs sent as packet `frame_count()`, then a blocking
  /// wait for the reply, the same packet again after resend_after_ms of silence or at once
  /// after an unreadable reply. `replied`: a reply was read and frame_count() advanced.
  /// `gave_up`: `give_up_at` passed first (ArduPilot itself would wait on).
  FrameResult frame(std::chrono::steady_clock::time_point give_up_at);

  /// As ArduPilot restarting: frame_count back to 0 and a new socket (a new local port).
  void restart();
  /// From any thread: frame() gives up now (within recv_timeout_ms) and at once from then on.
  void cancel() { cancelled_ = true; }

  std::uint32_t frame_count() const { return frame_count_; }
  /// The latest reply read; fields == 0 before the first.
  const SensorReading& last() const { return last_; }
  /// ArduPilot's clock: the sum of the timestamps' increases.
  double sim_time_s() const { return sim_time_s_; }
  /// The local UDP port its packets come from.
  std::uint16_t local_port() const;
  const StandInOptions& options() const { return options_; }

  StandInCounters counters;

 private:
  void open_socket();
  void send_packet();
  // a complete, readable line in the receive buffer: true and `last_` updated
  bool take_line();

  StandInOptions options_;
  ControlLaw& law_;
  int fd_ = -1;
  std::uint32_t frame_count_ = 0;
  ServoPacket packet_;
  SensorReading last_;
  bool have_timestamp_ = false;
  double sim_time_s_ = 0;
  std::uint16_t frame_rate_hz_ = 0;  // 1 / the replies' time step, as SITL adopts it (0: the option's)
  std::array<char, 8192> buffer_{};
  std::size_t buffered_ = 0;
  std::atomic<bool> cancelled_{false};
};

}  // namespace tether::adapters::ardupilot
