// SPDX-License-Identifier: Apache-2.0
// The runtime's side of the Tether wire protocol (docs/protocol.md), without any I/O: bytes
// from the line go in, frames to send come out, and the state says where the session is.
// The serial endpoint drives one of these under its lock; tests drive it by hand.
//
// Framing, messages and payload layouts come from the firmware shim's C headers, the
// single source of truth shared with the firmware.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tether/firmware_shim/frame.h"
#include "tether/firmware_shim/messages.h"
#include "tether/loop/endpoint.hpp"

namespace tether::hal {
class DeviceBank;
}

namespace tether::adapters {

/// One device the endpoint offers the firmware in DEVICES. The wire index is the device's
/// index in the session's device bank, so no separate mapping table is needed.
struct SerialDevice {
  std::uint16_t index = 0;  // bank index = wire index
  std::uint8_t kind = 0;
  std::uint8_t direction = 0;  // TETHER_DIRECTION_*
  std::uint16_t payload_size = 0;
  std::string name;
};

/// What the line and the session did, counted. Decoder counters are widened to 64 bits.
struct SerialCounters {
  std::uint64_t bytes_rx = 0;
  std::uint64_t bytes_tx = 0;
  std::uint64_t frames_rx = 0;  // frames the decoder delivered
  std::uint64_t frames_tx = 0;
  std::uint64_t garbage_bytes = 0;  // bytes of dropped frames
  std::uint64_t crc_errors = 0;
  std::uint64_t cobs_errors = 0;
  std::uint64_t runts = 0;
  std::uint64_t length_errors = 0;
  std::uint64_t oversize = 0;
  std::uint64_t bad_version = 0;
  std::uint64_t unknown_type = 0;
  std::uint64_t malformed = 0;        // CRC-valid frames whose payload did not decode
  std::uint64_t stale = 0;            // ACTUATE for a step before the current one
  std::uint64_t premature = 0;        // ACTUATE that began arriving before its step's SENSORS left
  std::uint64_t duplicate = 0;        // a second ACTUATE for the current step
  std::uint64_t hello_repeats = 0;    // HELLOs after the first, before READY
  std::uint64_t ready_repeats = 0;    // READYs identical to the accepted one
  std::uint64_t unexpected = 0;       // frames the session state does not allow (e.g. an echo)
  std::uint64_t resent = 0;           // SENSORS sent again for the same step
  std::uint64_t logs = 0;             // LOG frames
  std::uint64_t logs_dropped = 0;     // LOG lines dropped because too many were pending
  std::uint64_t logs_suppressed = 0;  // LOG lines over the rate limit (set_log_limit), never shown

  /// Frames the decoder dropped, for EndpointCounters::corrupt (plus malformed).
  std::uint64_t dropped_frames() const {
    return crc_errors + cobs_errors + runts + length_errors + oversize + bad_version + unknown_type;
  }
};

/// The steady clock's now(), as a plain function (SerialProtocol::Clock's default).
inline runtime::SteadyClock::time_point steady_now() { return runtime::SteadyClock::now(); }

class SerialProtocol {
 public:
  enum class Phase : std::uint8_t { wait_hello, wait_ready, running, ended };
  /// Where the LOG rate limit takes the time from (tests substitute their own).
  using Clock = runtime::SteadyClock::time_point (*)();

  /// HELLO's `max_payload` must lie in this range (docs/protocol.md, HELLO); the shim's
  /// TETHER_RX_PAYLOAD_MAX has the same bounds. Outside it the HELLO is malformed.
  static constexpr std::uint16_t min_max_payload = 64;
  static constexpr std::uint16_t max_max_payload = TETHER_PROTOCOL_MAX_PAYLOAD;
  /// The LOG rate limit's defaults: lines per second (wall clock) and burst.
  static constexpr std::uint32_t default_log_lines_per_s = 50;
  static constexpr std::uint32_t default_log_burst = 200;

  /// `table`: the devices offered (indices unique). `name` is the endpoint's, for messages.
  SerialProtocol(std::string name, std::vector<SerialDevice> table);

  /// Firmware LOG lines pass a token bucket: `burst` lines at once, refilled at `per_s`
  /// lines per second of `clock`; lines over it are counted (logs_suppressed) and dropped
  /// before their text is copied. `per_s` 0: no limit.
  void set_log_limit(std::uint32_t per_s, std::uint32_t burst, Clock clock = &steady_now);

  // ---- input -------------------------------------------------------------------------

  /// Feeds bytes from the line; handles every complete frame. Frames to send in answer
  /// (ERROR) are appended to outbox().
  void on_bytes(const std::uint8_t* data, std::size_t size);

  // ---- handshake -----------------------------------------------------------------------

  Phase phase() const { return phase_; }
  bool have_hello() const { return have_hello_; }
  const tether_hello_t& hello() const { return hello_; }
  /// Builds DEVICES into outbox() and moves to wait_ready; on a table too large for the
  /// firmware, builds ERROR(TOO_LARGE) instead and fails. Call once after HELLO.
  void send_devices();
  /// The slots the firmware opened (bank indices in slot order), after READY.
  const std::vector<std::uint16_t>& slot_devices() const { return slot_index_; }
  /// The table offered.
  const std::vector<SerialDevice>& table() const { return table_; }

  // ---- the step ----------------------------------------------------------------------

  /// Builds SENSORS(step) from the bank's current readings into outbox() (and keeps it for
  /// resend()); starts waiting for ACTUATE(step). `bank` may be null: every reading NO_DATA.
  /// Causality (docs/protocol.md, "Which replies are applied"): the bytes fed before this
  /// call came before SENSORS(step) was written, so an ACTUATE whose first byte is among
  /// them cannot answer it: counted `premature`, never applied. The caller feeds what the
  /// line holds first.
  void send_sensors(std::uint32_t step, std::uint64_t sim_time_us, const hal::DeviceBank* bank);
  /// Appends the last SENSORS again (same step id, same bytes).
  void resend();
  /// True once ACTUATE for the current step has been accepted.
  bool reply_ready() const { return reply_ready_; }
  /// The caller took the current step's reply. A reply never taken (it came after the
  /// deadline, before the next SENSORS) is counted stale by the next send_sensors().
  void mark_taken() { reply_taken_ = true; }
  /// The current step's commands (bank index + payload), valid when reply_ready().
  const std::vector<runtime::DeviceCommand>& commands() const { return commands_; }
  /// LOG lines received during the run since the caller last cleared them (they go with the
  /// step's reply); at most 256 are kept.
  std::vector<runtime::LogLine>& logs() { return logs_; }
  /// LOG lines received before the run (during the handshake): nobody collects them with a
  /// reply, the caller logs them itself and clears them; at most 256 are kept.
  std::vector<runtime::LogLine>& other_logs() { return other_logs_; }
  /// Appends STOP(step) to outbox() and ends the session.
  void send_stop(std::uint32_t step);

  // ---- results -------------------------------------------------------------------------

  /// The first fatal problem (ERROR from the firmware, version mismatch, a restart, a
  /// malformed payload); empty while all is well.
  const std::string& failure() const { return failure_; }
  bool failed() const { return !failure_.empty(); }
  /// True once this side queued STOP or ERROR: the firmware was told the session is over.
  bool told_to_end() const { return told_to_end_; }
  /// Bytes waiting to be written to the line; the caller writes and clears them.
  std::vector<std::uint8_t>& outbox() { return outbox_; }
  const SerialCounters& counters() const { return counters_; }
  SerialCounters& counters() { return counters_; }

  /// Appends a frame of this protocol version to outbox(); false if it does not fit.
  bool queue_frame(std::uint8_t type, std::uint32_t step, const std::uint8_t* payload, std::size_t size);
  /// Appends ERROR(code, value, text) to outbox().
  void queue_error(std::uint8_t code, std::uint16_t value, const std::string& text);

 private:
  void on_frame(const tether_frame_t& frame, std::uint64_t began_at);
  void on_hello(const tether_frame_t& frame);
  void on_ready(const tether_frame_t& frame);
  void on_actuate(const tether_frame_t& frame, std::uint64_t began_at);
  void on_log(const tether_frame_t& frame);
  void on_error(const tether_frame_t& frame);
  void fail(std::string message);
  void sync_decoder_counters();
  bool take_log_token();

  std::string name_;
  std::vector<SerialDevice> table_;
  Phase phase_ = Phase::wait_hello;

  std::vector<std::uint8_t> rx_buffer_;
  tether_frame_decoder_t decoder_{};
  tether_frame_counters_t seen_{};  // decoder counters already added to counters_

  bool have_hello_ = false;
  tether_hello_t hello_{};

  std::vector<std::uint16_t> slot_index_;   // bank index per slot
  std::vector<tether_slot_t> slots_;        // size and direction per slot
  std::vector<std::uint8_t> sensor_slots_;  // sensor slots, ascending

  std::uint32_t step_ = 0;
  // causality: offsets in the stream of bytes fed (on_bytes), of where the frame being
  // decoded began and of the stream's end when SENSORS(step_) was built
  std::uint64_t fed_ = 0;
  std::uint64_t frame_began_ = 0;
  std::uint64_t request_at_ = 0;
  bool awaiting_ = false;
  bool reply_ready_ = false;
  bool reply_taken_ = false;
  std::vector<runtime::DeviceCommand> commands_;
  std::vector<runtime::LogLine> logs_;
  std::vector<runtime::LogLine> other_logs_;
  std::uint32_t log_per_s_ = default_log_lines_per_s;
  std::uint32_t log_burst_ = default_log_burst;
  std::int64_t log_credit_ = 0;  // tokens x 1e9
  bool log_bucket_started_ = false;
  runtime::SteadyClock::time_point log_refilled_{};
  Clock log_clock_ = &steady_now;

  std::vector<std::uint8_t> payload_;       // scratch for encoding
  std::vector<std::uint8_t> last_sensors_;  // the last SENSORS frame, for resend
  std::vector<std::uint8_t> outbox_;
  std::string failure_;
  bool told_to_end_ = false;
  SerialCounters counters_;
};

/// Escapes bytes that are not printable ASCII as \xNN (firmware text is untrusted).
std::string printable(const char* text, std::size_t size);

}  // namespace tether::adapters
