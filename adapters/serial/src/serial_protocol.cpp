// SPDX-License-Identifier: Apache-2.0
#include "tether/serial/serial_protocol.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "tether/firmware_shim/payloads.h"
#include "tether/hal/device_bank.hpp"

namespace tether::adapters {

namespace {

constexpr std::size_t max_pending_logs = 256;
constexpr std::uint32_t runtime_version = TETHER_PROTOCOL_VERSION;

std::string quoted_name(const char* name) { return std::string("`") + name + "`"; }

// length of a valid UTF-8 sequence starting at s[i], or 0
std::size_t utf8_length(const unsigned char* s, std::size_t i, std::size_t size) {
  const unsigned char c = s[i];
  std::size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
  if (n == 0 || i + n > size) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((s[i + k] & 0xC0) != 0x80) return 0;
  return n;
}

}  // namespace

std::string printable(const char* text, std::size_t size) {
  std::string out;
  out.reserve(size);
  const auto* s = reinterpret_cast<const unsigned char*>(text);
  for (std::size_t i = 0; i < size;) {
    const unsigned char c = s[i];
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    if (c >= 0x80) {
      if (const std::size_t n = utf8_length(s, i, size)) {
        out.append(text + i, n);
        i += n;
        continue;
      }
    }
    char esc[8];
    std::snprintf(esc, sizeof esc, "\\x%02x", c);
    out += esc;
    ++i;
  }
  return out;
}

SerialProtocol::SerialProtocol(std::string name, std::vector<SerialDevice> table)
    : name_(std::move(name)), table_(std::move(table)) {
  rx_buffer_.resize(TETHER_RAW_FRAME_SIZE(TETHER_PROTOCOL_MAX_PAYLOAD));
  tether_frame_decoder_init(&decoder_, rx_buffer_.data(), rx_buffer_.size());
  payload_.resize(TETHER_PROTOCOL_MAX_PAYLOAD);
  outbox_.reserve(2 * TETHER_WIRE_FRAME_MAX(TETHER_PROTOCOL_MAX_PAYLOAD));
  logs_.reserve(16);
}

void SerialProtocol::set_log_limit(std::uint32_t per_s, std::uint32_t burst, Clock clock) {
  log_per_s_ = per_s;
  log_burst_ = burst > 0 ? burst : 1;
  log_clock_ = clock;
  log_bucket_started_ = false;
}

// One token per LOG line; the bucket starts full and refills continuously. Integer credit
// in token-nanoseconds (a token is 1e9), so no rounding ever loses or invents a line.
bool SerialProtocol::take_log_token() {
  if (log_per_s_ == 0) return true;
  constexpr std::int64_t token = 1'000'000'000;
  const std::int64_t full = static_cast<std::int64_t>(log_burst_) * token;
  const auto now = log_clock_();
  if (!log_bucket_started_) {
    log_bucket_started_ = true;
    log_credit_ = full;
    log_refilled_ = now;
  } else if (now > log_refilled_) {
    // time beyond what refills the whole bucket adds nothing (and cannot overflow)
    const std::int64_t elapsed_ns = std::min<std::int64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(now - log_refilled_).count(), full / log_per_s_ + 1);
    log_credit_ = std::min(full, log_credit_ + elapsed_ns * static_cast<std::int64_t>(log_per_s_));
    log_refilled_ = now;
  }
  if (log_credit_ < token) return false;
  log_credit_ -= token;
  return true;
}

void SerialProtocol::on_bytes(const std::uint8_t* data, std::size_t size) {
  counters_.bytes_rx += size;
  for (std::size_t i = 0; i < size; ++i) {
    tether_frame_t frame{};
    if (tether_frame_decoder_push(&decoder_, data[i], &frame)) on_frame(frame, frame_began_);
    ++fed_;
    if (data[i] == 0) frame_began_ = fed_;  // a delimiter: the next frame begins after it
  }
  sync_decoder_counters();
}

// the shim's counters are 32-bit and wrap; add the differences to our 64-bit ones
void SerialProtocol::sync_decoder_counters() {
  const tether_frame_counters_t& c = decoder_.counters;
  auto add = [](std::uint64_t& total, std::uint32_t now, std::uint32_t& seen) {
    total += static_cast<std::uint32_t>(now - seen);
    seen = now;
  };
  add(counters_.garbage_bytes, c.garbage_bytes, seen_.garbage_bytes);
  add(counters_.crc_errors, c.crc_errors, seen_.crc_errors);
  add(counters_.cobs_errors, c.cobs_errors, seen_.cobs_errors);
  add(counters_.runts, c.runts, seen_.runts);
  add(counters_.length_errors, c.length_errors, seen_.length_errors);
  add(counters_.oversize, c.oversize, seen_.oversize);
  add(counters_.bad_version, c.bad_version, seen_.bad_version);
  add(counters_.unknown_type, c.unknown_type, seen_.unknown_type);
}

void SerialProtocol::fail(std::string message) {
  if (failure_.empty()) failure_ = std::move(message);
  phase_ = Phase::ended;
}

bool SerialProtocol::queue_frame(std::uint8_t type, std::uint32_t step, const std::uint8_t* payload, std::size_t size) {
  if (size > TETHER_PROTOCOL_MAX_PAYLOAD) return false;
  const tether_frame_header_t header{static_cast<std::uint8_t>(TETHER_PROTOCOL_VERSION), type, step,
                                     static_cast<std::uint16_t>(size)};
  const std::size_t at = outbox_.size();
  outbox_.resize(at + TETHER_WIRE_FRAME_MAX(size));
  std::size_t n = 0;
  if (!tether_frame_encode(&header, payload, outbox_.data() + at, outbox_.size() - at, &n)) {
    outbox_.resize(at);
    return false;
  }
  outbox_.resize(at + n);
  ++counters_.frames_tx;
  return true;
}

void SerialProtocol::queue_error(std::uint8_t code, std::uint16_t value, const std::string& text) {
  const tether_error_t e{code, value, text.data(), std::min<std::size_t>(text.size(), TETHER_MAX_ERROR_TEXT)};
  std::uint8_t buf[TETHER_ERROR_FIXED_SIZE + TETHER_MAX_ERROR_TEXT];
  std::size_t n = 0;
  if (tether_error_encode(&e, buf, sizeof buf, &n) && queue_frame(TETHER_MSG_ERROR, step_, buf, n)) told_to_end_ = true;
}

void SerialProtocol::on_frame(const tether_frame_t& f, std::uint64_t began_at) {
  ++counters_.frames_rx;
  if (phase_ == Phase::ended) return;  // after STOP or a failure nothing is acted on
  switch (f.header.type) {
    case TETHER_MSG_HELLO: on_hello(f); break;
    case TETHER_MSG_READY: on_ready(f); break;
    case TETHER_MSG_ACTUATE: on_actuate(f, began_at); break;
    case TETHER_MSG_LOG: on_log(f); break;
    case TETHER_MSG_ERROR: on_error(f); break;
    default: ++counters_.unexpected; break;  // DEVICES, SENSORS, STOP: our own frames echoed?
  }
}

void SerialProtocol::on_hello(const tether_frame_t& f) {
  const std::uint8_t* p = f.payload;
  const std::size_t len = f.header.payload_len;
  const unsigned spoken = len >= 1 ? p[0] : f.header.version;
  if (f.header.version != TETHER_PROTOCOL_VERSION || spoken != TETHER_PROTOCOL_VERSION) {
    // the HELLO prefix never changes: the version byte, then (in v1) the name at offset 8
    std::string fw = "(unnamed)";
    if (len >= TETHER_HELLO_FIXED_SIZE && p[7] > 0 && TETHER_HELLO_FIXED_SIZE + p[7] <= len)
      fw = printable(reinterpret_cast<const char*>(p + TETHER_HELLO_FIXED_SIZE), p[7]);
    const unsigned theirs = f.header.version != TETHER_PROTOCOL_VERSION ? f.header.version : spoken;
    queue_error(TETHER_ERROR_VERSION_MISMATCH, static_cast<std::uint16_t>(runtime_version),
                "runtime speaks protocol version " + std::to_string(runtime_version) + ", firmware `" + fw +
                    "` speaks " + std::to_string(theirs));
    fail("protocol version mismatch: firmware `" + fw + "` speaks protocol version " + std::to_string(theirs) +
         ", this runtime speaks version " + std::to_string(runtime_version));
    return;
  }
  tether_hello_t hello{};
  if (!tether_hello_decode(p, len, &hello)) {
    ++counters_.malformed;
    queue_error(TETHER_ERROR_MALFORMED, TETHER_MSG_HELLO, "HELLO does not decode");
    fail("the firmware's HELLO does not decode (CRC-valid but malformed payload)");
    return;
  }
  if (hello.max_payload < min_max_payload || hello.max_payload > max_max_payload) {
    // a field out of range is a malformed payload like any other (docs/protocol.md, Payloads)
    const std::string range = std::to_string(min_max_payload) + ".." + std::to_string(max_max_payload);
    ++counters_.malformed;
    queue_error(TETHER_ERROR_MALFORMED, TETHER_MSG_HELLO,
                "HELLO max_payload " + std::to_string(hello.max_payload) + " is outside " + range);
    fail("firmware " + quoted_name(hello.name) + " sent a malformed HELLO: max_payload " +
         std::to_string(hello.max_payload) + " is outside " + range +
         " (the shim's TETHER_RX_PAYLOAD_MAX must lie in that range)");
    return;
  }
  if (phase_ == Phase::running) {
    fail("firmware " + quoted_name(hello.name) + " restarted: it sent HELLO during the run, after step " +
         std::to_string(step_));
    return;
  }
  if (have_hello_) {
    ++counters_.hello_repeats;  // re-sent while our answer was on its way
    return;
  }
  have_hello_ = true;
  hello_ = hello;
}

void SerialProtocol::send_devices() {
  std::size_t needed = TETHER_DEVICES_FIXED_SIZE;
  for (const SerialDevice& d : table_) needed += TETHER_DEVICE_ENTRY_FIXED_SIZE + d.name.size();
  const std::size_t limit = std::min<std::size_t>(hello_.max_payload, TETHER_PROTOCOL_MAX_PAYLOAD);
  if (needed > limit) {
    queue_error(TETHER_ERROR_TOO_LARGE, static_cast<std::uint16_t>(std::min<std::size_t>(needed, 0xFFFF)),
                "device table needs " + std::to_string(needed) + " bytes");
    fail("device table needs " + std::to_string(needed) + " bytes, firmware " + quoted_name(hello_.name) + " accepts " +
         std::to_string(hello_.max_payload) +
         ": give the endpoint fewer devices (key `devices`) or build the firmware with a larger "
         "TETHER_RX_PAYLOAD_MAX");
    return;
  }
  tether_devices_writer_t w;
  tether_devices_writer_init(&w, payload_.data(), payload_.size());
  for (const SerialDevice& d : table_) {
    const tether_device_entry_t e{
        d.index, d.kind, d.direction, d.payload_size, static_cast<std::uint8_t>(d.name.size()), d.name.c_str()};
    tether_devices_writer_add(&w, &e);
  }
  std::size_t len = 0;
  if (!tether_devices_writer_finish(&w, &len) || !queue_frame(TETHER_MSG_DEVICES, 0, payload_.data(), len)) {
    fail("cannot encode the device table (a device name or payload size the protocol does not allow)");
    return;
  }
  phase_ = Phase::wait_ready;
}

void SerialProtocol::on_ready(const tether_frame_t& f) {
  std::uint16_t indices[TETHER_MAX_SLOTS];
  std::uint8_t count = 0;
  if (phase_ == Phase::wait_hello) {
    ++counters_.unexpected;  // READY of a session we did not open (a board left waiting)
    return;
  }
  if (!tether_ready_decode(f.payload, f.header.payload_len, indices, TETHER_MAX_SLOTS, &count)) {
    ++counters_.malformed;
    queue_error(TETHER_ERROR_MALFORMED, TETHER_MSG_READY, "READY does not decode");
    fail("the firmware's READY does not decode");
    return;
  }
  if (phase_ == Phase::running) {
    if (count == slot_index_.size() && std::equal(indices, indices + count, slot_index_.begin())) {
      ++counters_.ready_repeats;  // re-sent until the first SENSORS arrives
      return;
    }
    queue_error(TETHER_ERROR_UNEXPECTED, TETHER_MSG_READY, "a different READY during the run");
    fail("firmware " + quoted_name(hello_.name) + " sent a different READY during the run");
    return;
  }
  slot_index_.clear();
  slots_.clear();
  sensor_slots_.clear();
  std::size_t sensors_size = TETHER_SENSORS_FIXED_SIZE;
  std::size_t actuators = 0;
  for (std::uint8_t s = 0; s < count; ++s) {
    const auto it =
        std::find_if(table_.begin(), table_.end(), [&](const SerialDevice& d) { return d.index == indices[s]; });
    if (it == table_.end()) {
      queue_error(TETHER_ERROR_UNKNOWN_INDEX, indices[s], "READY names a device index not in the table");
      fail("firmware " + quoted_name(hello_.name) + " opened device index " + std::to_string(indices[s]) +
           ", which is not in the table this endpoint sent");
      return;
    }
    if (it->direction == TETHER_DIRECTION_ACTUATOR && it->payload_size > runtime::DeviceCommand::max_bytes) {
      queue_error(TETHER_ERROR_DEVICE_MISMATCH, indices[s], "actuator payload too large for the runtime");
      fail("firmware opened " + it->name + ", whose " + std::to_string(it->payload_size) +
           "-byte command is larger than the runtime carries (" + std::to_string(runtime::DeviceCommand::max_bytes) +
           ")");
      return;
    }
    slot_index_.push_back(it->index);
    slots_.push_back(tether_slot_t{it->payload_size, it->direction});
    if (it->direction == TETHER_DIRECTION_SENSOR) {
      sensor_slots_.push_back(s);
      sensors_size += 1u + it->payload_size;
    } else {
      ++actuators;
    }
  }
  if (sensors_size > hello_.max_payload) {
    queue_error(TETHER_ERROR_TOO_LARGE, hello_.max_payload, "SENSORS would exceed max_payload");
    fail("SENSORS for the devices firmware " + quoted_name(hello_.name) + " opened needs " +
         std::to_string(sensors_size) + " bytes, it accepts " + std::to_string(hello_.max_payload));
    return;
  }
  commands_.reserve(actuators);
  last_sensors_.reserve(TETHER_WIRE_FRAME_MAX(sensors_size));
  phase_ = Phase::running;
}

void SerialProtocol::send_sensors(std::uint32_t step, std::uint64_t sim_time_us, const hal::DeviceBank* bank) {
  if (reply_ready_ && !reply_taken_) ++counters_.stale;  // arrived after its deadline, never applied
  step_ = step;
  request_at_ = fed_;
  awaiting_ = true;
  reply_ready_ = false;
  reply_taken_ = false;
  commands_.clear();
  if (phase_ != Phase::running) return;
  tether_items_writer_t w;
  tether_sensors_writer_init(&w, payload_.data(), hello_.max_payload, sim_time_us);
  for (const std::uint8_t slot : sensor_slots_) {
    const std::uint16_t index = slot_index_[slot];
    const std::uint8_t* data = nullptr;
    std::size_t size = 0;
    if (bank != nullptr && index < bank->size() && bank->reading(index, data, size) == hal::Status::ok &&
        size == slots_[slot].size) {
      tether_items_writer_add(&w, slot, data, slots_[slot].size);
    } else {
      tether_items_writer_add_no_data(&w, slot);
    }
  }
  std::size_t len = 0;
  if (!tether_items_writer_finish(&w, &len)) {
    fail("cannot encode SENSORS for step " + std::to_string(step));
    return;
  }
  const std::size_t at = outbox_.size();
  if (!queue_frame(TETHER_MSG_SENSORS, step, payload_.data(), len)) {
    fail("cannot encode SENSORS for step " + std::to_string(step));
    return;
  }
  last_sensors_.assign(outbox_.begin() + static_cast<std::ptrdiff_t>(at), outbox_.end());
}

void SerialProtocol::resend() {
  if (phase_ != Phase::running || !awaiting_ || reply_ready_ || last_sensors_.empty()) return;
  outbox_.insert(outbox_.end(), last_sensors_.begin(), last_sensors_.end());
  ++counters_.frames_tx;
  ++counters_.resent;
}

void SerialProtocol::on_actuate(const tether_frame_t& f, std::uint64_t began_at) {
  if (phase_ != Phase::running) {
    ++counters_.unexpected;
    return;
  }
  // A reply for a step whose SENSORS has not been written (a later step id), or one for this
  // step that had begun to arrive before its SENSORS left, was computed from older readings:
  // never applied, also not when its step comes (docs/protocol.md, "Which replies are applied")
  const auto ahead = static_cast<std::int32_t>(f.header.step_id - step_);
  if (awaiting_ && (ahead > 0 || (ahead == 0 && began_at < request_at_))) {
    ++counters_.premature;
    return;
  }
  if (!awaiting_ || ahead != 0) {
    ++counters_.stale;
    return;
  }
  if (reply_ready_) {
    ++counters_.duplicate;
    return;
  }
  tether_items_reader_t reader;
  if (!tether_actuate_reader_init(&reader, f.payload, f.header.payload_len, slots_.data(),
                                  static_cast<std::uint8_t>(slots_.size())) ||
      !tether_items_reader_validate(&reader)) {
    ++counters_.malformed;
    queue_error(TETHER_ERROR_MALFORMED, TETHER_MSG_ACTUATE, "ACTUATE does not match the opened devices");
    fail("ACTUATE for step " + std::to_string(step_) + " from firmware " + quoted_name(hello_.name) +
         " does not match the devices it opened");
    return;
  }
  tether_item_t item;
  commands_.clear();
  while (tether_items_reader_next(&reader, &item) == 1) {
    runtime::DeviceCommand c;
    c.device = slot_index_[item.slot];
    c.size = static_cast<std::uint8_t>(item.size);
    std::memcpy(c.bytes.data(), item.data, item.size);
    commands_.push_back(c);
  }
  reply_ready_ = true;
}

void SerialProtocol::on_log(const tether_frame_t& f) {
  std::uint8_t level = 0;
  const char* text = nullptr;
  std::size_t text_len = 0;
  if (!tether_log_decode(f.payload, f.header.payload_len, &level, &text, &text_len)) {
    ++counters_.malformed;  // a log line is not worth ending the session for
    return;
  }
  ++counters_.logs;
  if (!take_log_token()) {
    ++counters_.logs_suppressed;  // over the rate limit: dropped before its text is copied
    return;
  }
  std::vector<runtime::LogLine>& pending = phase_ == Phase::running ? logs_ : other_logs_;
  if (pending.size() >= max_pending_logs) {
    ++counters_.logs_dropped;
    return;
  }
  pending.push_back(runtime::LogLine{level, printable(text, text_len)});
}

void SerialProtocol::on_error(const tether_frame_t& f) {
  tether_error_t e{};
  if (!tether_error_decode(f.payload, f.header.payload_len, &e)) {
    ++counters_.malformed;
    fail("firmware sent an ERROR that does not decode");
    return;
  }
  const std::string text = printable(e.text, e.text_len);
  if (e.code == TETHER_ERROR_VERSION_MISMATCH || f.header.version != TETHER_PROTOCOL_VERSION) {
    const unsigned theirs = e.code == TETHER_ERROR_VERSION_MISMATCH ? e.value : f.header.version;
    fail("protocol version mismatch: firmware speaks protocol version " + std::to_string(theirs) +
         ", this runtime speaks version " + std::to_string(runtime_version) + " (firmware says: " + text + ")");
    return;
  }
  fail(std::string("firmware ended the session with ERROR ") + tether_error_code_name(e.code) + " (value " +
       std::to_string(e.value) + ")" + (text.empty() ? "" : ": " + text));
}

void SerialProtocol::send_stop(std::uint32_t step) {
  if (phase_ == Phase::running && queue_frame(TETHER_MSG_STOP, step, nullptr, 0)) told_to_end_ = true;
  phase_ = Phase::ended;
  awaiting_ = false;
}

}  // namespace tether::adapters
