// SPDX-License-Identifier: Apache-2.0
// The runtime's side of the wire protocol, driven by hand: bytes in, frames out, no I/O.
// Firmware frames are built with the shim's own encoders (the same C headers).
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tether/serial/serial_protocol.hpp"
#include "tether/firmware_shim/payloads.h"
#include "tether/hal/device_bank.hpp"

using namespace tether;
using namespace tether::adapters;
using Bytes = std::vector<std::uint8_t>;

namespace {

Bytes wire(std::uint8_t type, std::uint32_t step, const Bytes& payload, std::uint8_t version = 1) {
  const tether_frame_header_t h{version, type, step, static_cast<std::uint16_t>(payload.size())};
  Bytes out(TETHER_WIRE_FRAME_MAX(payload.size()));
  std::size_t n = 0;
  REQUIRE(tether_frame_encode(&h, payload.data(), out.data(), out.size(), &n));
  out.resize(n);
  return out;
}

Bytes hello_payload(const char* name, std::uint16_t max_payload = 1024, std::uint8_t version = 1) {
  tether_hello_t h{};
  h.protocol_version = version;
  h.max_payload = max_payload;
  h.build_id = 0x01020304;
  std::strncpy(h.name, name, sizeof h.name - 1);
  Bytes out(64);
  std::size_t n = 0;
  REQUIRE(tether_hello_encode(&h, out.data(), out.size(), &n));
  out.resize(n);
  if (version != 1) out[0] = version;
  return out;
}

Bytes ready_payload(const std::vector<std::uint16_t>& indices) {
  Bytes out(1 + 2 * indices.size());
  std::size_t n = 0;
  REQUIRE(tether_ready_encode(indices.data(), static_cast<std::uint8_t>(indices.size()), out.data(), out.size(), &n));
  out.resize(n);
  return out;
}

Bytes actuate_payload(const std::vector<std::pair<std::uint8_t, float>>& commands) {
  Bytes out;
  for (auto [slot, v] : commands) {
    out.push_back(slot);
    std::uint8_t f[4];
    tether_put_f32le(f, v);
    out.insert(out.end(), f, f + 4);
  }
  return out;
}

// every frame in `bytes`, decoded with the shim's decoder
std::vector<std::pair<tether_frame_header_t, Bytes>> frames_of(const Bytes& bytes) {
  Bytes buf(TETHER_RAW_FRAME_SIZE(TETHER_PROTOCOL_MAX_PAYLOAD));
  tether_frame_decoder_t d;
  tether_frame_decoder_init(&d, buf.data(), buf.size());
  std::vector<std::pair<tether_frame_header_t, Bytes>> out;
  for (std::uint8_t b : bytes) {
    tether_frame_t f{};
    if (tether_frame_decoder_push(&d, b, &f))
      out.emplace_back(f.header, Bytes(f.payload, f.payload + f.header.payload_len));
  }
  return out;
}

// depth (bank index 3), compass (4), two thrusters (7, 9): indices need not be dense
std::vector<SerialDevice> table() {
  return {{3, TETHER_KIND_DEPTH, TETHER_DIRECTION_SENSOR, TETHER_DEPTH_SIZE, "auv.hull.depth"},
          {4, TETHER_KIND_COMPASS, TETHER_DIRECTION_SENSOR, TETHER_COMPASS_SIZE, "auv.hull.compass"},
          {7, TETHER_KIND_THRUSTER, TETHER_DIRECTION_ACTUATOR, TETHER_THRUSTER_SIZE, "auv.hull.thruster_left"},
          {9, TETHER_KIND_THRUSTER, TETHER_DIRECTION_ACTUATOR, TETHER_THRUSTER_SIZE, "auv.hull.thruster_right"}};
}

void feed(SerialProtocol& p, const Bytes& b) { p.on_bytes(b.data(), b.size()); }

// HELLO -> DEVICES -> READY(depth, left, right): running, slots 0..2
SerialProtocol running_protocol() {
  SerialProtocol p("fw", table());
  feed(p, wire(TETHER_MSG_HELLO, 0, hello_payload("depth_hold")));
  p.send_devices();
  p.outbox().clear();
  feed(p, wire(TETHER_MSG_READY, 0, ready_payload({3, 7, 9})));
  REQUIRE(p.phase() == SerialProtocol::Phase::running);
  return p;
}

}  // namespace

TEST_CASE("serial protocol: HELLO is answered with the device table, READY resolves slots to bank indices") {
  SerialProtocol p("fw", table());
  CHECK(p.phase() == SerialProtocol::Phase::wait_hello);
  Bytes noise = {0x55, 0x13, 0x00};  // a board's boot chatter before the first frame
  feed(p, noise);
  feed(p, wire(TETHER_MSG_HELLO, 0, hello_payload("depth_hold")));
  feed(p, wire(TETHER_MSG_HELLO, 0, hello_payload("depth_hold")));  // repeated before an answer
  REQUIRE(p.have_hello());
  CHECK(std::string(p.hello().name) == "depth_hold");
  CHECK(p.hello().build_id == 0x01020304u);
  CHECK(p.counters().hello_repeats == 1);
  CHECK(p.counters().garbage_bytes == 3);

  p.send_devices();
  CHECK(p.phase() == SerialProtocol::Phase::wait_ready);
  const auto sent = frames_of(p.outbox());
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].first.type == TETHER_MSG_DEVICES);
  tether_devices_reader_t r;
  std::uint16_t count = 0;
  REQUIRE(tether_devices_reader_init(&r, sent[0].second.data(), sent[0].second.size(), &count));
  CHECK(count == 4);
  tether_device_entry_t e;
  REQUIRE(tether_devices_reader_next(&r, &e));
  CHECK(e.index == 3);
  CHECK(std::string(e.name, e.name_len) == "auv.hull.depth");
  p.outbox().clear();

  feed(p, wire(TETHER_MSG_HELLO, 0, hello_payload("depth_hold")));  // still on its way
  feed(p, wire(TETHER_MSG_READY, 0, ready_payload({3, 7, 9})));
  CHECK(p.phase() == SerialProtocol::Phase::running);
  CHECK(p.slot_devices() == std::vector<std::uint16_t>{3, 7, 9});
  CHECK(p.counters().hello_repeats == 2);
  feed(p, wire(TETHER_MSG_READY, 0, ready_payload({3, 7, 9})));  // re-sent until the first SENSORS
  CHECK(p.counters().ready_repeats == 1);
  CHECK(!p.failed());
}

TEST_CASE("serial protocol: SENSORS carries the bank's readings of the opened sensors, NO_DATA otherwise") {
  SerialProtocol p = running_protocol();
  p.send_sensors(42, 420000, nullptr);  // no bank: every opened sensor without data
  auto f = frames_of(p.outbox());
  REQUIRE(f.size() == 1);
  CHECK(f[0].first.type == TETHER_MSG_SENSORS);
  CHECK(f[0].first.step_id == 42u);
  CHECK(f[0].second == Bytes{0xa0, 0x68, 0x06, 0, 0, 0, 0, 0, 0x80});  // 420000 us, slot 0 NO_DATA
  p.outbox().clear();

  // with a bank: the depth sensor at bank index 3 (three thrusters before it)
  std::vector<hal::DeviceSpec> specs;
  for (const char* n : {"a", "b", "c"}) {
    hal::DeviceSpec s;
    s.name = {"x", "y", n};
    s.kind = TETHER_KIND_THRUSTER;
    s.body = 0;
    s.params = hal::default_params(s.kind);
    specs.push_back(s);
  }
  hal::DeviceSpec depth;
  depth.name = {"auv", "hull", "depth"};
  depth.kind = TETHER_KIND_DEPTH;
  depth.body = 0;
  depth.params = hal::default_params(depth.kind);
  specs.push_back(depth);
  hal::DeviceBank bank(specs, 1, 1);
  hal::SimpleWorld world;
  world.bodies.resize(1);
  world.bodies[0].mass_kg = 10;
  world.bodies[0].position_m = hal::Vec3(0, 0, -2.5);
  world.water.present = true;
  bank.sense(world, 10'000'000);
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
  REQUIRE(bank.reading(3, data, size) == hal::Status::ok);
  p.send_sensors(43, 430000, &bank);
  f = frames_of(p.outbox());
  REQUIRE(f.size() == 1);
  REQUIRE(f[0].second.size() == 8 + 1 + TETHER_DEPTH_SIZE);
  CHECK(f[0].second[8] == 0);  // slot 0
  CHECK(std::memcmp(f[0].second.data() + 9, data, TETHER_DEPTH_SIZE) == 0);
}

TEST_CASE("serial protocol: ACTUATE(k) is accepted once - other steps are stale, a second one a duplicate") {
  SerialProtocol p = running_protocol();
  feed(p, wire(TETHER_MSG_ACTUATE, 6, actuate_payload({{1, 0.5f}})));  // before any SENSORS
  CHECK(p.counters().stale == 1);
  p.send_sensors(7, 70000, nullptr);
  feed(p, wire(TETHER_MSG_ACTUATE, 6, actuate_payload({{1, 0.5f}})));  // the previous step, late
  CHECK(p.counters().stale == 2);
  CHECK(!p.reply_ready());
  feed(p, wire(TETHER_MSG_ACTUATE, 7, actuate_payload({{1, 0.25f}, {2, -0.75f}})));
  REQUIRE(p.reply_ready());
  REQUIRE(p.commands().size() == 2);
  CHECK(p.commands()[0].device == 7);  // slot 1 -> bank index 7
  CHECK(p.commands()[1].device == 9);
  CHECK(p.commands()[0].size == 4);
  CHECK(tether_get_f32le(p.commands()[0].bytes.data()) == 0.25f);
  CHECK(tether_get_f32le(p.commands()[1].bytes.data()) == -0.75f);
  feed(p, wire(TETHER_MSG_ACTUATE, 7, actuate_payload({{1, 1.0f}})));  // again: not applied
  CHECK(p.counters().duplicate == 1);
  CHECK(tether_get_f32le(p.commands()[0].bytes.data()) == 0.25f);
  CHECK(!p.failed());
  // step 7's reply was never taken (it came after the deadline): stale when step 8 starts
  p.send_sensors(8, 80000, nullptr);
  CHECK(p.counters().stale == 3);
  feed(p, wire(TETHER_MSG_ACTUATE, 8, {}));
  p.mark_taken();
  p.send_sensors(9, 90000, nullptr);
  CHECK(p.counters().stale == 3);
}

TEST_CASE("serial protocol: an ACTUATE that began arriving before its step's SENSORS is premature, never applied") {
  SerialProtocol p = running_protocol();
  p.send_sensors(7, 70000, nullptr);
  feed(p, wire(TETHER_MSG_ACTUATE, 7, actuate_payload({{1, 0.25f}})));
  REQUIRE(p.reply_ready());
  p.mark_taken();
  // ACTUATE(8) before SENSORS(8) was written: computed from step 7's readings
  feed(p, wire(TETHER_MSG_ACTUATE, 8, actuate_payload({{1, -0.5f}})));
  CHECK(p.counters().premature == 1);
  CHECK(p.counters().stale == 0);
  p.send_sensors(8, 80000, nullptr);
  CHECK(!p.reply_ready());                                             // not when its step comes either
  feed(p, wire(TETHER_MSG_ACTUATE, 8, actuate_payload({{1, 0.5f}})));  // the genuine answer
  REQUIRE(p.reply_ready());
  CHECK(tether_get_f32le(p.commands()[0].bytes.data()) == 0.5f);
  CHECK(p.counters().duplicate == 0);
  p.mark_taken();

  // ACTUATE(9) whose first bytes came before SENSORS(9) left and the rest after
  const Bytes split = wire(TETHER_MSG_ACTUATE, 9, actuate_payload({{1, -0.5f}}));
  const std::size_t half = split.size() / 2;
  feed(p, Bytes(split.begin(), split.begin() + static_cast<std::ptrdiff_t>(half)));
  p.send_sensors(9, 90000, nullptr);
  feed(p, Bytes(split.begin() + static_cast<std::ptrdiff_t>(half), split.end()));
  CHECK(p.counters().premature == 2);
  CHECK(!p.reply_ready());
  feed(p, wire(TETHER_MSG_ACTUATE, 9, actuate_payload({{1, 0.75f}})));
  REQUIRE(p.reply_ready());
  CHECK(tether_get_f32le(p.commands()[0].bytes.data()) == 0.75f);
  p.mark_taken();

  // a delimiter before SENSORS(10), the frame after it: the frame began after the request
  feed(p, Bytes{0x00});
  p.send_sensors(10, 100000, nullptr);
  feed(p, wire(TETHER_MSG_ACTUATE, 10, actuate_payload({{1, 1.0f}})));
  CHECK(p.reply_ready());
  CHECK(p.counters().premature == 2);
  // a re-sent SENSORS moves nothing: an answer to the first one is causal
  p.mark_taken();
  p.send_sensors(11, 110000, nullptr);
  p.resend();
  feed(p, wire(TETHER_MSG_ACTUATE, 11, actuate_payload({{1, 1.0f}})));
  CHECK(p.reply_ready());
  CHECK(p.counters().premature == 2);
  CHECK(p.counters().stale == 0);
}

TEST_CASE("serial protocol: garbage between frames is dropped and counted - the next frame decodes") {
  SerialProtocol p = running_protocol();
  p.send_sensors(1, 0, nullptr);
  Bytes stream = {0x13, 0x37, 0x42, 0x00};  // noise, ended by a delimiter
  Bytes bad = wire(TETHER_MSG_ACTUATE, 1, actuate_payload({{1, 0.5f}}));
  bad[bad.size() - 2] ^= 0x40;  // a flipped CRC bit
  stream.insert(stream.end(), bad.begin(), bad.end());
  const Bytes good = wire(TETHER_MSG_ACTUATE, 1, actuate_payload({{1, 0.5f}}));
  stream.insert(stream.end(), good.begin(), good.end());
  // byte by byte: the decoder must not care how reads split the stream
  for (std::uint8_t b : stream) p.on_bytes(&b, 1);
  CHECK(p.reply_ready());
  CHECK(p.counters().garbage_bytes == 4 + bad.size());
  CHECK(p.counters().dropped_frames() == 2);
  CHECK(p.counters().frames_rx >= 3);
}

TEST_CASE("serial protocol: resend repeats the last SENSORS byte for byte") {
  SerialProtocol p = running_protocol();
  p.send_sensors(5, 50000, nullptr);
  const Bytes first = p.outbox();
  p.outbox().clear();
  p.resend();
  CHECK(p.outbox() == first);
  CHECK(p.counters().resent == 1);
  p.outbox().clear();
  feed(p, wire(TETHER_MSG_ACTUATE, 5, {}));  // an empty ACTUATE acknowledges the step
  CHECK(p.reply_ready());
  CHECK(p.commands().empty());
  p.resend();  // answered: nothing to ask again
  CHECK(p.outbox().empty());
}

TEST_CASE("serial protocol: version mismatch in either direction names both versions") {
  SUBCASE("firmware HELLO speaks version 2") {
    SerialProtocol p("fw", table());
    feed(p, wire(TETHER_MSG_HELLO, 0, hello_payload("future", 1024, 2), 2));
    REQUIRE(p.failed());
    CHECK(p.failure() ==
          "protocol version mismatch: firmware `future` speaks protocol version 2, this runtime "
          "speaks version 1");
    const auto out = frames_of(p.outbox());  // answered with ERROR(VERSION_MISMATCH, 1) in version 1
    REQUIRE(out.size() == 1);
    CHECK(out[0].first.type == TETHER_MSG_ERROR);
    CHECK(out[0].first.version == 1);
    tether_error_t e{};
    REQUIRE(tether_error_decode(out[0].second.data(), out[0].second.size(), &e));
    CHECK(e.code == TETHER_ERROR_VERSION_MISMATCH);
    CHECK(e.value == 1);
    CHECK(std::string(e.text, e.text_len) == "runtime speaks protocol version 1, firmware `future` speaks 2");
    CHECK(p.told_to_end());
  }
  SUBCASE("firmware refuses us with ERROR(VERSION_MISMATCH)") {
    SerialProtocol p("fw", table());
    const std::string text = "firmware speaks 3";
    Bytes payload = {TETHER_ERROR_VERSION_MISMATCH, 3, 0};
    payload.insert(payload.end(), text.begin(), text.end());
    feed(p, wire(TETHER_MSG_ERROR, 0, payload, 3));
    CHECK(p.failure() ==
          "protocol version mismatch: firmware speaks protocol version 3, this runtime speaks "
          "version 1 (firmware says: firmware speaks 3)");
  }
}

TEST_CASE("serial protocol: a table too large, an unknown index, a malformed ACTUATE end the session") {
  SUBCASE("table larger than max_payload") {
    SerialProtocol p("fw", table());
    feed(p, wire(TETHER_MSG_HELLO, 0, hello_payload("tiny", 64)));
    p.send_devices();
    CHECK(p.failure().find("device table needs 105 bytes, firmware `tiny` accepts 64") == 0);
    const auto out = frames_of(p.outbox());
    REQUIRE(out.size() == 1);
    CHECK(out[0].first.type == TETHER_MSG_ERROR);
    CHECK(out[0].second[0] == TETHER_ERROR_TOO_LARGE);
  }
  SUBCASE("READY names an index not in the table") {
    SerialProtocol p("fw", table());
    feed(p, wire(TETHER_MSG_HELLO, 0, hello_payload("fw")));
    p.send_devices();
    p.outbox().clear();
    feed(p, wire(TETHER_MSG_READY, 0, ready_payload({3, 5})));
    CHECK(p.failure() == "firmware `fw` opened device index 5, which is not in the table this endpoint sent");
    const auto out = frames_of(p.outbox());
    REQUIRE(out.size() == 1);
    CHECK(out[0].second[0] == TETHER_ERROR_UNKNOWN_INDEX);
  }
  SUBCASE("ACTUATE naming a sensor slot") {
    SerialProtocol p = running_protocol();
    p.send_sensors(2, 0, nullptr);
    p.outbox().clear();
    feed(p, wire(TETHER_MSG_ACTUATE, 2, actuate_payload({{0, 1.0f}})));
    CHECK(p.failure().find("ACTUATE for step 2") == 0);
    CHECK(p.counters().malformed == 1);
    CHECK(!p.reply_ready());
  }
  SUBCASE("HELLO during the run: the firmware restarted") {
    SerialProtocol p = running_protocol();
    p.send_sensors(9, 0, nullptr);
    feed(p, wire(TETHER_MSG_HELLO, 0, hello_payload("depth_hold")));
    CHECK(p.failure() == "firmware `depth_hold` restarted: it sent HELLO during the run, after step 9");
  }
}

TEST_CASE("serial protocol: LOG lines are kept (escaped) for the next reply - echoes are counted") {
  SerialProtocol p = running_protocol();
  Bytes log = {TETHER_LOG_WARNING, 'h', 'i', 0x07, 0xC3, 0xA9};  // a bell and a UTF-8 "é"
  feed(p, wire(TETHER_MSG_LOG, 0, log));
  REQUIRE(p.logs().size() == 1);
  CHECK(p.logs()[0].level == TETHER_LOG_WARNING);
  CHECK(p.logs()[0].text == "hi\\x07\xC3\xA9");
  feed(p, wire(TETHER_MSG_SENSORS, 1, Bytes(8, 0)));  // our own frame coming back: an echoing line
  CHECK(p.counters().unexpected == 1);
  CHECK(printable("a\xff", 2) == "a\\xff");
}

TEST_CASE("serial protocol: STOP ends the session - nothing after it is acted on") {
  SerialProtocol p = running_protocol();
  p.send_sensors(3, 0, nullptr);
  p.outbox().clear();
  p.send_stop(3);
  const auto out = frames_of(p.outbox());
  REQUIRE(out.size() == 1);
  CHECK(out[0].first.type == TETHER_MSG_STOP);
  CHECK(out[0].first.step_id == 3u);
  CHECK(p.phase() == SerialProtocol::Phase::ended);
  feed(p, wire(TETHER_MSG_ACTUATE, 3, {}));
  CHECK(!p.reply_ready());
}

TEST_CASE("serial protocol: HELLO's max_payload outside 64..2048 is MALFORMED, not TOO_LARGE") {
  struct Case {
    std::uint16_t max_payload;
    bool ok;
  };
  for (const Case c :
       {Case{10, false}, Case{63, false}, Case{64, true}, Case{2048, true}, Case{2049, false}, Case{60000, false}}) {
    CAPTURE(c.max_payload);
    // a table of one depth sensor: DEVICES fits even a 64-byte max_payload
    SerialProtocol p("fw", {{3, TETHER_KIND_DEPTH, TETHER_DIRECTION_SENSOR, TETHER_DEPTH_SIZE, "auv.hull.depth"}});
    feed(p, wire(TETHER_MSG_HELLO, 0, hello_payload("tiny", c.max_payload)));
    if (c.ok) {
      REQUIRE(p.have_hello());
      CHECK(!p.failed());
      CHECK(p.counters().malformed == 0);
      CHECK(p.outbox().empty());
      p.send_devices();
      CHECK(!p.failed());
      CHECK(p.phase() == SerialProtocol::Phase::wait_ready);
      continue;
    }
    CHECK(!p.have_hello());
    REQUIRE(p.failed());
    CHECK(p.phase() == SerialProtocol::Phase::ended);
    CHECK(p.counters().malformed == 1);
    CHECK(p.failure() == "firmware `tiny` sent a malformed HELLO: max_payload " + std::to_string(c.max_payload) +
                             " is outside 64..2048 (the shim's TETHER_RX_PAYLOAD_MAX must lie in that range)");
    const auto out = frames_of(p.outbox());  // answered like any malformed HELLO
    REQUIRE(out.size() == 1);
    CHECK(out[0].first.type == TETHER_MSG_ERROR);
    tether_error_t e{};
    REQUIRE(tether_error_decode(out[0].second.data(), out[0].second.size(), &e));
    CHECK(e.code == TETHER_ERROR_MALFORMED);
    CHECK(e.value == TETHER_MSG_HELLO);
    CHECK(p.told_to_end());
  }
}

namespace {

runtime::SteadyClock::time_point g_log_clock{};
runtime::SteadyClock::time_point log_clock() { return g_log_clock; }

Bytes log_frame(std::uint8_t level, const std::string& text) {
  Bytes payload = {level};
  payload.insert(payload.end(), text.begin(), text.end());
  return wire(TETHER_MSG_LOG, 1, payload);
}

// `count` LOG lines at once; how many were kept for the reply
std::size_t flood(SerialProtocol& p, int count) {
  p.logs().clear();
  Bytes stream;
  for (int i = 0; i < count; ++i) {
    const Bytes f = log_frame(TETHER_LOG_INFO, "line " + std::to_string(i));
    stream.insert(stream.end(), f.begin(), f.end());
  }
  feed(p, stream);
  return p.logs().size();
}

}  // namespace

TEST_CASE("serial protocol: firmware LOG lines pass a token bucket - the rest are counted, never kept") {
  using std::chrono::milliseconds;
  g_log_clock = runtime::SteadyClock::time_point{} + std::chrono::hours(1);
  SUBCASE("defaults: 50 lines/s, burst 200") {
    SerialProtocol p = running_protocol();
    p.set_log_limit(SerialProtocol::default_log_lines_per_s, SerialProtocol::default_log_burst, &log_clock);
    CHECK(flood(p, 4000) == 200);  // the burst, all at one instant
    CHECK(p.logs().front().text == "line 0");
    CHECK(p.logs().back().text == "line 199");
    CHECK(p.counters().logs == 4000);
    CHECK(p.counters().logs_suppressed == 3800);
    CHECK(p.counters().logs_dropped == 0);
    g_log_clock += milliseconds(1000);
    CHECK(flood(p, 100) == 50);  // one second refills 50
    g_log_clock += milliseconds(100);
    CHECK(flood(p, 10) == 5);
    g_log_clock += std::chrono::hours(1);
    CHECK(flood(p, 4000) == 200);  // never more than the burst
    CHECK(p.counters().logs == 8110);
    CHECK(p.counters().logs_suppressed == 3800 + 50 + 5 + 3800);
    CHECK(!p.failed());
  }
  SUBCASE("configured: 1 line/s, burst 3") {
    SerialProtocol p = running_protocol();
    p.set_log_limit(1, 3, &log_clock);
    CHECK(flood(p, 10) == 3);
    g_log_clock += milliseconds(999);
    CHECK(flood(p, 10) == 0);
    g_log_clock += milliseconds(1);
    CHECK(flood(p, 10) == 1);
    CHECK(p.counters().logs_suppressed == 26);
  }
  SUBCASE("0 lines/s: no limit, only the 256 pending lines a reply can take") {
    SerialProtocol p = running_protocol();
    p.set_log_limit(0, 1, &log_clock);
    CHECK(flood(p, 300) == 256);
    CHECK(p.counters().logs_suppressed == 0);
    CHECK(p.counters().logs_dropped == 44);
  }
}

TEST_CASE("serial protocol: LOG lines of the handshake are kept apart from the run's, with their level") {
  SerialProtocol p("fw", table());
  feed(p, wire(TETHER_MSG_HELLO, 0, hello_payload("depth_hold")));
  p.send_devices();
  Bytes stream = log_frame(TETHER_LOG_WARNING, "calibrating");
  const Bytes ready = wire(TETHER_MSG_READY, 0, ready_payload({3, 7, 9}));
  stream.insert(stream.end(), ready.begin(), ready.end());
  const Bytes during = log_frame(TETHER_LOG_ERROR, "sensor fault");
  stream.insert(stream.end(), during.begin(), during.end());
  feed(p, stream);  // one read: a LOG before READY, READY, a LOG in the run
  REQUIRE(p.phase() == SerialProtocol::Phase::running);
  REQUIRE(p.other_logs().size() == 1);
  CHECK(p.other_logs()[0].level == TETHER_LOG_WARNING);
  CHECK(p.other_logs()[0].text == "calibrating");
  REQUIRE(p.logs().size() == 1);
  CHECK(p.logs()[0].level == TETHER_LOG_ERROR);
  CHECK(p.logs()[0].text == "sensor fault");
}
