// SPDX-License-Identifier: Apache-2.0
// The firmware-facing session API (firmware_shim/src/tether.c) against a fake
// runtime behind a test-double port: scripted replies, idle lines, garbage,
// and a port that fails on the Nth call.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "tether/firmware_shim/messages.h"
#include "tether/firmware_shim/port.h"
#include "tether/firmware_shim/tether.h"

namespace {

using Bytes = std::vector<uint8_t>;

struct Frame {
  tether_frame_header_t header;
  Bytes payload;
};

Bytes wire_frame(uint8_t type, uint32_t step, const Bytes& payload, uint8_t version = TETHER_PROTOCOL_VERSION) {
  tether_frame_header_t h{version, type, step, static_cast<uint16_t>(payload.size())};
  Bytes out(TETHER_WIRE_FRAME_MAX(payload.size()));
  size_t n = 0;
  REQUIRE(tether_frame_encode(&h, payload.data(), out.data(), out.size(), &n));
  out.resize(n);
  return out;
}

struct Device {
  uint16_t index;
  uint8_t kind;
  std::string name;
};

const std::vector<Device> kTable = {{0, TETHER_KIND_DEPTH, "auv.hull.depth"},
                                    {1, TETHER_KIND_COMPASS, "auv.hull.compass"},
                                    {2, TETHER_KIND_RANGE, "auv.hull.psd_front"},
                                    {5, TETHER_KIND_THRUSTER, "auv.hull.thruster_left"},
                                    {6, TETHER_KIND_THRUSTER, "auv.hull.thruster_right"},
                                    {9, TETHER_KIND_GPS, "auv.mast.gps"}};

Bytes devices_payload(const std::vector<Device>& table, bool honest_sizes = true) {
  Bytes out(4096);
  tether_devices_writer_t w{};
  tether_devices_writer_init(&w, out.data(), out.size());
  for (const auto& d : table) {
    tether_device_entry_t e{d.index,
                            d.kind,
                            tether_kind_direction(d.kind),
                            static_cast<uint16_t>(honest_sizes ? tether_kind_payload_size(d.kind) : 3),
                            static_cast<uint8_t>(d.name.size()),
                            d.name.c_str()};
    tether_devices_writer_add(&w, &e);
  }
  size_t n = 0;
  REQUIRE(tether_devices_writer_finish(&w, &n));
  out.resize(n);
  return out;
}

// The runtime side of the line, scripted. Replies are queued from inside the
// firmware's port_write, so everything runs on one thread, deterministically.
struct FakeRuntime {
  // line state
  std::deque<uint8_t> to_firmware;
  Bytes rx_buf = Bytes(TETHER_RAW_FRAME_SIZE(TETHER_PROTOCOL_MAX_PAYLOAD));
  tether_frame_decoder_t decoder{};
  std::vector<Frame> frames;  // everything the firmware sent
  std::vector<std::string> diags;
  int reads = 0, writes = 0, idle_reads = 0, consecutive_idle = 0;
  int fail_read_at = -1, fail_write_at = -1;  // 1-based call that fails
  int idle_limit = 20;                        // then the port gives up, so a bug cannot hang the test
  size_t chunk = 255;

  // script
  std::vector<Device> table = kTable;
  int hellos_to_ignore = 0;
  int readies_to_ignore = 0;
  bool answer_hello_twice = false;
  uint32_t first_step = 1;
  uint32_t last_step = 5;  // ACTUATE(last_step) is answered with STOP
  uint32_t step_increment = 1;
  int repeat_sensors_at = -1;  // step whose SENSORS is sent twice (the ACTUATE "got lost")
  std::function<void(uint32_t, const std::vector<uint16_t>&, tether_items_writer_t&)> readings;
  std::function<bool(const Frame&)> intercept;  // return true to swallow a frame

  std::vector<uint16_t> opened;  // READY indices
  uint32_t sent_step = 0;

  FakeRuntime() {
    tether_frame_decoder_init(&decoder, rx_buf.data(), rx_buf.size());
    readings = [this](uint32_t step, const std::vector<uint16_t>& idx, tether_items_writer_t& w) {
      for (size_t slot = 0; slot < idx.size(); ++slot) {
        const Device& d = device(idx[slot]);
        if (tether_kind_direction(d.kind) != TETHER_DIRECTION_SENSOR) continue;
        if (d.kind == TETHER_KIND_COMPASS && step % 2 == 1) {
          tether_items_writer_add_no_data(&w, static_cast<uint8_t>(slot));
          continue;
        }
        Bytes data(tether_kind_payload_size(d.kind), 0);
        tether_put_f32le(data.data(), 0.5f * static_cast<float>(step) + static_cast<float>(slot));
        tether_items_writer_add(&w, static_cast<uint8_t>(slot), data.data(), static_cast<uint16_t>(data.size()));
      }
    };
  }

  const Device& device(uint16_t index) const {
    for (const auto& d : table) {
      if (d.index == index) return d;
    }
    FAIL("no device " << index);
    return table.front();
  }

  void send(const Bytes& bytes) { to_firmware.insert(to_firmware.end(), bytes.begin(), bytes.end()); }
  void send(uint8_t type, uint32_t step, const Bytes& payload, uint8_t version = TETHER_PROTOCOL_VERSION) {
    send(wire_frame(type, step, payload, version));
  }

  void send_sensors(uint32_t step) {
    Bytes out(4096);
    tether_items_writer_t w{};
    tether_sensors_writer_init(&w, out.data(), out.size(), static_cast<uint64_t>(step) * 10000u);
    readings(step, opened, w);
    size_t n = 0;
    REQUIRE(tether_items_writer_finish(&w, &n));
    out.resize(n);
    send(TETHER_MSG_SENSORS, step, out);
    sent_step = step;
  }

  void on_frame(const Frame& f) {
    frames.push_back(f);
    if (intercept && intercept(f)) return;
    switch (f.header.type) {
      case TETHER_MSG_HELLO:
        if (hellos_to_ignore > 0) {
          --hellos_to_ignore;
          return;
        }
        send(TETHER_MSG_DEVICES, 0, devices_payload(table));
        if (answer_hello_twice) send(TETHER_MSG_DEVICES, 0, devices_payload(table));
        break;
      case TETHER_MSG_READY: {
        if (readies_to_ignore > 0) {
          --readies_to_ignore;
          return;
        }
        uint16_t idx[TETHER_MAX_SLOTS];
        uint8_t count = 0;
        REQUIRE(tether_ready_decode(f.payload.data(), f.payload.size(), idx, TETHER_MAX_SLOTS, &count));
        opened.assign(idx, idx + count);
        send_sensors(first_step);
        break;
      }
      case TETHER_MSG_ACTUATE:
        if (f.header.step_id != sent_step) return;  // stale: counted by a real runtime, ignored here
        if (static_cast<int>(f.header.step_id) == repeat_sensors_at) {
          repeat_sensors_at = -1;
          send_sensors(f.header.step_id);
          return;
        }
        if (f.header.step_id >= last_step) {
          send(TETHER_MSG_STOP, f.header.step_id, {});
        } else {
          send_sensors(f.header.step_id + step_increment);
        }
        break;
      default: break;
    }
  }

  std::vector<Frame> of_type(uint8_t type) const {
    std::vector<Frame> out;
    for (const auto& f : frames) {
      if (f.header.type == type) out.push_back(f);
    }
    return out;
  }

  // port side
  int read(uint8_t* buf, size_t max) {
    ++reads;
    if (reads == fail_read_at) return -1;
    if (to_firmware.empty()) {
      ++idle_reads;
      if (++consecutive_idle > idle_limit) return -1;
      return 0;
    }
    consecutive_idle = 0;
    size_t n = std::min({max, chunk, to_firmware.size()});
    for (size_t i = 0; i < n; ++i) {
      buf[i] = to_firmware.front();
      to_firmware.pop_front();
    }
    return static_cast<int>(n);
  }

  int write(const uint8_t* buf, size_t len) {
    ++writes;
    if (writes == fail_write_at) return -1;
    for (size_t i = 0; i < len; ++i) {
      tether_frame_t f{};
      if (tether_frame_decoder_push(&decoder, buf[i], &f)) {
        on_frame({f.header, Bytes(f.payload, f.payload + f.header.payload_len)});
      }
    }
    return 0;
  }
};

FakeRuntime* g_line = nullptr;

// installs a fresh fake runtime for one test
struct Line : FakeRuntime {
  Line() { g_line = this; }
  ~Line() { g_line = nullptr; }
};

float reading_f32(int handle, size_t size) {
  Bytes b(size);
  REQUIRE(tether_get(handle, b.data(), b.size()) == TETHER_OK);
  return tether_get_f32le(b.data());
}

int set_thruster(int handle, float u) {
  uint8_t b[TETHER_THRUSTER_SIZE];
  tether_put_f32le(b, u);
  return tether_set(handle, b, sizeof b);
}

}  // namespace

extern "C" int tether_port_read(uint8_t* buf, size_t max) {
  REQUIRE(g_line != nullptr);
  return g_line->read(buf, max);
}

extern "C" int tether_port_write(const uint8_t* buf, size_t len) {
  REQUIRE(g_line != nullptr);
  return g_line->write(buf, len);
}

extern "C" void tether_port_diag(const char* text) {
  if (g_line != nullptr) g_line->diags.emplace_back(text);
}

TEST_CASE("session: HELLO, DEVICES, READY, steps, STOP") {
  Line line;
  REQUIRE(tether_init("depth_hold", 0x01020304u) == TETHER_OK);
  auto hellos = line.of_type(TETHER_MSG_HELLO);
  REQUIRE(hellos.size() == 1);
  tether_hello_t h{};
  REQUIRE(tether_hello_decode(hellos[0].payload.data(), hellos[0].payload.size(), &h));
  CHECK(std::string(h.name) == "depth_hold");
  CHECK(h.build_id == 0x01020304u);
  CHECK(h.max_payload == TETHER_RX_PAYLOAD_MAX);
  CHECK(h.protocol_version == TETHER_PROTOCOL_VERSION);

  const int depth = tether_open("auv.hull.depth");
  const int compass = tether_open("auv.hull.compass");
  const int left = tether_open("auv.hull.thruster_left");
  const int right = tether_open("auv.hull.thruster_right");
  CHECK(depth == 0);
  CHECK(compass == 1);
  CHECK(left == 2);
  CHECK(right == 3);
  CHECK(tether_open("auv.hull.depth") == depth);  // same handle again
  CHECK(tether_open("auv.hull.nope") == TETHER_E_UNKNOWN_DEVICE);
  CHECK(tether_open("auv.hull.dept") == TETHER_E_UNKNOWN_DEVICE);
  CHECK(tether_open("") == TETHER_E_UNKNOWN_DEVICE);

  uint8_t raw[TETHER_DEPTH_SIZE];
  CHECK(tether_get(depth, raw, sizeof raw) == TETHER_E_NOT_READY);  // no step yet
  CHECK(tether_step_done() == TETHER_E_NOT_READY);
  CHECK(set_thruster(left, 0.25f) == TETHER_OK);  // an initial command is fine

  for (uint32_t step = 1; step <= 5; ++step) {
    CAPTURE(step);
    REQUIRE(tether_step_wait() == TETHER_OK);
    CHECK(tether_step_id() == step);
    CHECK(tether_time_us() == step * 10000u);
    CHECK(reading_f32(depth, TETHER_DEPTH_SIZE) == 0.5f * static_cast<float>(step));
    uint8_t heading[TETHER_COMPASS_SIZE] = {0xEE, 0xEE, 0xEE, 0xEE};
    if (step % 2 == 1) {
      CHECK(tether_get(compass, heading, sizeof heading) == TETHER_E_NO_DATA);
      CHECK(heading[0] == 0xEE);  // untouched
    } else {
      CHECK(reading_f32(compass, TETHER_COMPASS_SIZE) == 0.5f * static_cast<float>(step) + 1.0f);
    }
    if (step == 3) CHECK(set_thruster(right, -0.5f) == TETHER_OK);
  }
  CHECK(tether_step_wait() == TETHER_E_STOPPED);
  CHECK(tether_step_wait() == TETHER_E_STOPPED);
  CHECK(tether_get(depth, raw, sizeof raw) == TETHER_E_STOPPED);
  CHECK(set_thruster(left, 0.0f) == TETHER_E_STOPPED);

  auto ready = line.of_type(TETHER_MSG_READY);
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].payload == Bytes{4, 0, 0, 1, 0, 5, 0, 6, 0});

  // ACTUATE(k) answers SENSORS(k); the left command rides along every step,
  // the right one from step 3 on
  auto acts = line.of_type(TETHER_MSG_ACTUATE);
  REQUIRE(acts.size() == 5);
  const tether_slot_t slots[] = {{8, TETHER_DIRECTION_SENSOR},
                                 {4, TETHER_DIRECTION_SENSOR},
                                 {4, TETHER_DIRECTION_ACTUATOR},
                                 {4, TETHER_DIRECTION_ACTUATOR}};
  for (uint32_t k = 1; k <= 5; ++k) {
    CAPTURE(k);
    const Frame& a = acts[k - 1];
    CHECK(a.header.step_id == k);
    tether_items_reader_t r{};
    REQUIRE(tether_actuate_reader_init(&r, a.payload.data(), a.payload.size(), slots, 4));
    tether_item_t item{};
    REQUIRE(tether_items_reader_next(&r, &item) == 1);
    CHECK(item.slot == 2);
    CHECK(tether_get_f32le(item.data) == 0.25f);
    if (k >= 3) {
      REQUIRE(tether_items_reader_next(&r, &item) == 1);
      CHECK(item.slot == 3);
      CHECK(tether_get_f32le(item.data) == -0.5f);
    }
    CHECK(tether_items_reader_next(&r, &item) == 0);
  }
  CHECK(line.diags.size() == 1);  // "session stopped by the runtime"
  const tether_counters_t* c = tether_counters();
  CHECK(c->rx.frames_ok == 7);  // DEVICES, 5 SENSORS, STOP
  CHECK(c->step_gaps == 0);
  CHECK(c->unexpected == 0);
  CHECK(c->frames_sent == 7);  // HELLO, READY, 5 ACTUATE
}

TEST_CASE("API misuse returns codes, never crashes") {
  Line line;
  uint8_t buf[TETHER_DEPTH_SIZE] = {};
  SUBCASE("before tether_init") {
    // tether_init forgets the previous session first, even when it fails
    REQUIRE(tether_init(nullptr, 0) == TETHER_E_ARGUMENT);
    CHECK(tether_open("auv.hull.depth") == TETHER_E_NOT_READY);
    CHECK(tether_get(0, buf, sizeof buf) == TETHER_E_NOT_READY);
    CHECK(tether_set(0, buf, 4) == TETHER_E_NOT_READY);
    CHECK(tether_step_wait() == TETHER_E_NOT_READY);
    CHECK(tether_step_done() == TETHER_E_NOT_READY);
    CHECK(tether_time_us() == 0);
  }
  SUBCASE("bad names for tether_init") {
    CHECK(tether_init(nullptr, 1) == TETHER_E_ARGUMENT);
    CHECK(tether_init("", 1) == TETHER_E_ARGUMENT);
    CHECK(tether_init(std::string(33, 'a').c_str(), 1) == TETHER_E_ARGUMENT);
    CHECK(tether_init("bad\nname", 1) == TETHER_E_ARGUMENT);
    CHECK(line.frames.empty());
  }
  SUBCASE("handles, directions and sizes") {
    REQUIRE(tether_init("fw", 1) == TETHER_OK);
    const int depth = tether_open("auv.hull.depth");
    const int left = tether_open("auv.hull.thruster_left");
    CHECK(tether_open(nullptr) == TETHER_E_ARGUMENT);
    REQUIRE(tether_step_wait() == TETHER_OK);
    CHECK(tether_get(left, buf, 4) == TETHER_E_INVALID_OPERATION);
    CHECK(tether_set(depth, buf, sizeof buf) == TETHER_E_INVALID_OPERATION);
    CHECK(tether_get(depth, buf, 4) == TETHER_E_SIZE_MISMATCH);
    CHECK(tether_set(left, buf, 8) == TETHER_E_SIZE_MISMATCH);
    CHECK(tether_get(depth, nullptr, sizeof buf) == TETHER_E_ARGUMENT);
    CHECK(tether_set(left, nullptr, 4) == TETHER_E_ARGUMENT);
    CHECK(tether_get(-1, buf, sizeof buf) == TETHER_E_INVALID_HANDLE);
    CHECK(tether_get(2, buf, sizeof buf) == TETHER_E_INVALID_HANDLE);
    CHECK(tether_set(TETHER_E_UNKNOWN_DEVICE, buf, 4) == TETHER_E_INVALID_HANDLE);
    CHECK(tether_open("auv.hull.compass") == TETHER_E_INVALID_OPERATION);  // after the first step
    CHECK(tether_get(depth, buf, sizeof buf) == TETHER_OK);
  }
  SUBCASE("status texts") {
    CHECK(std::string(tether_status_text(TETHER_E_NO_DATA)) == "no data this step");
    CHECK(std::string(tether_status_text(TETHER_OK)) == "ok");
    CHECK(std::string(tether_status_text(-99)) == "unknown status");
  }
}

TEST_CASE("version mismatch: the runtime refuses HELLO") {
  Line line;
  line.intercept = [&](const Frame& f) {
    if (f.header.type != TETHER_MSG_HELLO) return false;
    Bytes p(128);
    tether_error_t e{TETHER_ERROR_VERSION_MISMATCH, 2, "runtime speaks protocol version 2", 33};
    size_t n = 0;
    REQUIRE(tether_error_encode(&e, p.data(), p.size(), &n));
    p.resize(n);
    line.send(TETHER_MSG_ERROR, 0, p, 2);  // sent in the runtime's own version
    return true;
  };
  CHECK(tether_init("fw", 1) == TETHER_E_VERSION);
  CHECK(tether_error_code() == TETHER_ERROR_VERSION_MISMATCH);
  CHECK(std::string(tether_error_text()) == "runtime speaks protocol version 2");
  REQUIRE(line.diags.size() == 1);
  CHECK(line.diags[0] ==
        "tether: protocol version mismatch: firmware speaks 1, runtime 2: runtime speaks protocol version 2");
  CHECK(tether_open("auv.hull.depth") == TETHER_E_VERSION);
  CHECK(tether_step_wait() == TETHER_E_VERSION);
  CHECK(tether_counters()->rx.foreign_version == 1);
}

TEST_CASE("an ERROR during the run ends the session") {
  Line line;
  line.intercept = [&](const Frame& f) {
    if (f.header.type != TETHER_MSG_ACTUATE || f.header.step_id != 2) return false;
    Bytes p(64);
    tether_error_t e{TETHER_ERROR_UNEXPECTED, 4, "late", 4};
    size_t n = 0;
    REQUIRE(tether_error_encode(&e, p.data(), p.size(), &n));
    p.resize(n);
    line.send(TETHER_MSG_ERROR, 2, p);
    return true;
  };
  REQUIRE(tether_init("fw", 1) == TETHER_OK);
  REQUIRE(tether_open("auv.hull.depth") == 0);
  CHECK(tether_step_wait() == TETHER_OK);
  CHECK(tether_step_wait() == TETHER_OK);
  CHECK(tether_step_wait() == TETHER_E_REJECTED);
  CHECK(tether_error_code() == TETHER_ERROR_UNEXPECTED);
  REQUIRE(line.diags.size() == 1);
  CHECK(line.diags[0] == "tether: runtime ended the session (unexpected message): late");
}

TEST_CASE("HELLO and READY are re-sent while nobody answers") {
  Line line;
  line.hellos_to_ignore = 3;
  line.readies_to_ignore = 2;
  REQUIRE(tether_init("fw", 1) == TETHER_OK);
  CHECK(tether_counters()->hello_sent == 4);
  REQUIRE(tether_open("auv.hull.depth") == 0);
  REQUIRE(tether_step_wait() == TETHER_OK);
  CHECK(tether_counters()->ready_sent == 3);
  CHECK(line.of_type(TETHER_MSG_HELLO).size() == 4);
}

TEST_CASE("a second DEVICES (answer to a re-sent HELLO) is ignored") {
  Line line;
  line.answer_hello_twice = true;
  REQUIRE(tether_init("fw", 1) == TETHER_OK);
  REQUIRE(tether_open("auv.hull.depth") == 0);
  REQUIRE(tether_step_wait() == TETHER_OK);
  CHECK(tether_step_id() == 1);
  CHECK(tether_counters()->unexpected == 1);
}

TEST_CASE("a repeated SENSORS(k) is answered with ACTUATE(k) again, not a new step") {
  Line line;
  line.repeat_sensors_at = 2;
  REQUIRE(tether_init("fw", 1) == TETHER_OK);
  const int left = tether_open("auv.hull.thruster_left");
  REQUIRE(left >= 0);
  REQUIRE(set_thruster(left, 0.75f) == TETHER_OK);
  std::vector<uint32_t> steps;
  while (tether_step_wait() == TETHER_OK) steps.push_back(tether_step_id());
  CHECK(steps == std::vector<uint32_t>{1, 2, 3, 4, 5});
  CHECK(tether_counters()->actuate_resent == 1);
  std::vector<uint32_t> acted;
  for (const auto& f : line.of_type(TETHER_MSG_ACTUATE)) acted.push_back(f.header.step_id);
  CHECK(acted == std::vector<uint32_t>{1, 2, 2, 3, 4, 5});
}

TEST_CASE("step gaps are counted") {
  Line line;
  line.step_increment = 3;
  line.last_step = 10;
  REQUIRE(tether_init("fw", 1) == TETHER_OK);
  std::vector<uint32_t> steps;
  while (tether_step_wait() == TETHER_OK) steps.push_back(tether_step_id());
  CHECK(steps == std::vector<uint32_t>{1, 4, 7, 10});
  CHECK(tether_counters()->step_gaps == 3);
}

TEST_CASE("garbage and corrupt frames on the line are skipped") {
  Line line;
  line.chunk = 3;                                  // frames split across reads
  line.send(Bytes{0x13, 0x37, 0xFF, 0x00, 0x42});  // boot noise before anything
  line.intercept = [&](const Frame& f) {
    if (f.header.type != TETHER_MSG_ACTUATE || f.header.step_id != 2) return false;
    Bytes bad = wire_frame(TETHER_MSG_SENSORS, 3, Bytes(8, 0));
    bad[bad.size() - 3] ^= 0x10;  // corrupt, then the real one
    line.send(bad);
    line.send(Bytes{0xAA, 0xBB, 0x00});
    line.send_sensors(3);
    return true;
  };
  REQUIRE(tether_init("fw", 1) == TETHER_OK);
  const int depth = tether_open("auv.hull.depth");
  std::vector<uint32_t> steps;
  while (tether_step_wait() == TETHER_OK) {
    steps.push_back(tether_step_id());
    CHECK(reading_f32(depth, TETHER_DEPTH_SIZE) == 0.5f * static_cast<float>(tether_step_id()));
  }
  CHECK(steps == std::vector<uint32_t>{1, 2, 3, 4, 5});
  const tether_counters_t* c = tether_counters();
  CHECK(c->rx.crc_errors + c->rx.cobs_errors + c->rx.runts >= 2);
  CHECK(c->rx.garbage_bytes > 0);
}

TEST_CASE("SENSORS that do not match the opened devices end the session") {
  Line line;
  line.readings = [](uint32_t, const std::vector<uint16_t>&, tether_items_writer_t& w) {
    uint8_t cmd[4] = {};
    tether_items_writer_add(&w, 1, cmd, 4);  // slot 1 is a thruster
  };
  REQUIRE(tether_init("fw", 1) == TETHER_OK);
  REQUIRE(tether_open("auv.hull.depth") == 0);
  REQUIRE(tether_open("auv.hull.thruster_left") == 1);
  CHECK(tether_step_wait() == TETHER_E_PROTOCOL);
  auto errors = line.of_type(TETHER_MSG_ERROR);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].payload[0] == TETHER_ERROR_MALFORMED);
  CHECK(errors[0].payload[1] == TETHER_MSG_SENSORS);
}

TEST_CASE("an undecodable device table ends the session") {
  Line line;
  line.intercept = [&](const Frame& f) {
    if (f.header.type != TETHER_MSG_HELLO) return false;
    line.send(TETHER_MSG_DEVICES, 0, Bytes{1, 0, 0});  // one entry promised, none there
    return true;
  };
  CHECK(tether_init("fw", 1) == TETHER_E_PROTOCOL);
  CHECK(line.of_type(TETHER_MSG_ERROR).size() == 1);
}

TEST_CASE("a table that disagrees with the shim about a kind's size") {
  Line line;
  line.intercept = [&](const Frame& f) {
    if (f.header.type != TETHER_MSG_HELLO) return false;
    line.send(TETHER_MSG_DEVICES, 0, devices_payload(kTable, false));
    return true;
  };
  REQUIRE(tether_init("fw", 1) == TETHER_OK);
  CHECK(tether_open("auv.hull.depth") == TETHER_E_SIZE_MISMATCH);
}

TEST_CASE("tether_step_done sends ACTUATE at once, and only once") {
  Line line;
  line.last_step = 2;
  REQUIRE(tether_init("fw", 1) == TETHER_OK);
  const int left = tether_open("auv.hull.thruster_left");
  REQUIRE(tether_step_wait() == TETHER_OK);
  REQUIRE(set_thruster(left, 1.0f) == TETHER_OK);
  CHECK(line.of_type(TETHER_MSG_ACTUATE).empty());
  CHECK(tether_step_done() == TETHER_OK);
  CHECK(line.of_type(TETHER_MSG_ACTUATE).size() == 1);
  CHECK(tether_step_done() == TETHER_OK);
  CHECK(line.of_type(TETHER_MSG_ACTUATE).size() == 1);
  REQUIRE(tether_step_wait() == TETHER_OK);
  CHECK(line.of_type(TETHER_MSG_ACTUATE).size() == 1);
  CHECK(tether_step_id() == 2);
  CHECK(tether_step_wait() == TETHER_E_STOPPED);
  CHECK(line.of_type(TETHER_MSG_ACTUATE).size() == 2);
}

TEST_CASE("LOG text is sent with the step id and cut to fit") {
  Line line;
  CHECK(tether_log("before the session") == TETHER_OK);
  REQUIRE(tether_init("fw", 1) == TETHER_OK);
  REQUIRE(tether_step_wait() == TETHER_OK);
  CHECK(tether_log_level(TETHER_LOG_WARNING, "hello") == TETHER_OK);
  CHECK(tether_log(std::string(500, 'x').c_str()) == TETHER_OK);
  CHECK(tether_log(nullptr) == TETHER_E_ARGUMENT);
  CHECK(tether_log_level(7, "x") == TETHER_E_ARGUMENT);
  auto logs = line.of_type(TETHER_MSG_LOG);
  REQUIRE(logs.size() == 3);
  CHECK(logs[1].header.step_id == 1);
  CHECK(logs[1].payload == Bytes{TETHER_LOG_WARNING, 'h', 'e', 'l', 'l', 'o'});
  CHECK(logs[2].payload.size() == 1 + TETHER_MAX_LOG_TEXT);
}

TEST_CASE("limits: more devices than TETHER_MAX_OPEN") {
  Line line;
  line.table.clear();
  std::vector<std::string> names;
  for (uint16_t i = 0; i < TETHER_MAX_OPEN + 1; ++i) {
    line.table.push_back({i, TETHER_KIND_FIN, "auv.tail.fin_" + std::to_string(i)});
  }
  REQUIRE(tether_init("fw", 1) == TETHER_OK);
  for (uint16_t i = 0; i < TETHER_MAX_OPEN; ++i) {
    CHECK(tether_open(("auv.tail.fin_" + std::to_string(i)).c_str()) == i);
  }
  CHECK(tether_open(("auv.tail.fin_" + std::to_string(TETHER_MAX_OPEN)).c_str()) == TETHER_E_LIMIT);
}

TEST_CASE("a port that fails on the Nth call: the failing call says so, a retry continues") {
  // one full session without failures, to know how many calls there are
  int total_reads = 0, total_writes = 0;
  {
    Line line;
    line.chunk = 7;
    REQUIRE(tether_init("fw", 1) == TETHER_OK);
    REQUIRE(tether_open("auv.hull.depth") == 0);
    REQUIRE(tether_open("auv.hull.thruster_left") == 1);
    while (tether_step_wait() == TETHER_OK) REQUIRE(set_thruster(1, 0.5f) == TETHER_OK);
    total_reads = line.reads;
    total_writes = line.writes;
  }
  REQUIRE(total_writes == 7);
  for (int n = 1; n <= total_reads + total_writes; ++n) {
    CAPTURE(n);
    Line line;
    line.chunk = 7;
    if (n <= total_reads) {
      line.fail_read_at = n;
    } else {
      line.fail_write_at = n - total_reads;
    }
    int io_errors = 0;
    int rc;
    while ((rc = tether_init("fw", 1)) == TETHER_E_IO) ++io_errors;
    REQUIRE(rc == TETHER_OK);
    REQUIRE(tether_open("auv.hull.depth") == 0);
    REQUIRE(tether_open("auv.hull.thruster_left") == 1);
    std::vector<uint32_t> steps;
    for (;;) {
      rc = tether_step_wait();
      if (rc == TETHER_E_IO) {
        ++io_errors;
        // a failed read may have overwritten the readings: they are gone; a failed
        // write (READY, ACTUATE) happened before anything was received
        uint8_t b[TETHER_DEPTH_SIZE];
        int got = tether_get(0, b, sizeof b);
        if (n <= total_reads) {
          CHECK(got == TETHER_E_NOT_READY);
        } else {
          CHECK((got == TETHER_OK || got == TETHER_E_NOT_READY));
        }
        continue;
      }
      if (rc != TETHER_OK) break;
      steps.push_back(tether_step_id());
      REQUIRE(set_thruster(1, 0.5f) == TETHER_OK);
    }
    CHECK(rc == TETHER_E_STOPPED);
    CHECK(io_errors == 1);
    CHECK(steps == std::vector<uint32_t>{1, 2, 3, 4, 5});
    // every step was acknowledged at least once, in order
    std::vector<uint32_t> acted;
    for (const auto& f : line.of_type(TETHER_MSG_ACTUATE)) {
      if (acted.empty() || acted.back() != f.header.step_id) acted.push_back(f.header.step_id);
    }
    CHECK(acted == std::vector<uint32_t>{1, 2, 3, 4, 5});
  }
}
