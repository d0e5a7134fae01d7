// SPDX-License-Identifier: Apache-2.0
// Message payload encoders and decoders (firmware_shim/src/messages.c).
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tether/firmware_shim/messages.h"
#include "tether/firmware_shim/payloads.h"

namespace {

using Bytes = std::vector<uint8_t>;

Bytes f32(float v) {
  Bytes b(4);
  tether_put_f32le(b.data(), v);
  return b;
}

tether_device_entry_t entry(uint16_t index, uint8_t kind, const char* name) {
  tether_device_entry_t e{};
  e.index = index;
  e.kind = kind;
  e.direction = tether_kind_direction(kind);
  e.payload_size = tether_kind_payload_size(kind);
  e.name_len = static_cast<uint8_t>(std::strlen(name));
  e.name = name;
  return e;
}

Bytes devices_payload(const std::vector<tether_device_entry_t>& entries) {
  Bytes out(1024);
  tether_devices_writer_t w{};
  tether_devices_writer_init(&w, out.data(), out.size());
  for (const auto& e : entries) tether_devices_writer_add(&w, &e);
  size_t n = 0;
  REQUIRE(tether_devices_writer_finish(&w, &n));
  out.resize(n);
  return out;
}

const tether_slot_t kSlots[] = {{8, TETHER_DIRECTION_SENSOR},
                                {4, TETHER_DIRECTION_SENSOR},
                                {4, TETHER_DIRECTION_ACTUATOR},
                                {4, TETHER_DIRECTION_ACTUATOR}};

}  // namespace

TEST_CASE("message and error code names") {
  CHECK(std::string(tether_msg_name(TETHER_MSG_SENSORS)) == "SENSORS");
  CHECK(std::string(tether_msg_name(0)) == "UNKNOWN");
  CHECK(std::string(tether_error_code_name(TETHER_ERROR_VERSION_MISMATCH)) == "version mismatch");
  CHECK(std::string(tether_error_code_name(200)) == "unknown error");
}

TEST_CASE("HELLO round trip and limits") {
  tether_hello_t h{};
  h.protocol_version = TETHER_PROTOCOL_VERSION;
  h.max_payload = 512;
  h.build_id = 0xCAFEF00Du;
  std::strcpy(h.name, "wall follow");
  uint8_t buf[64];
  size_t n = 0;
  REQUIRE(tether_hello_encode(&h, buf, sizeof buf, &n));
  CHECK(n == TETHER_HELLO_FIXED_SIZE + 11);
  tether_hello_t back{};
  REQUIRE(tether_hello_decode(buf, n, &back));
  CHECK(back.protocol_version == 1);
  CHECK(back.max_payload == 512);
  CHECK(back.build_id == 0xCAFEF00Du);
  CHECK(std::string(back.name) == "wall follow");

  SUBCASE("every truncation and one extra byte are rejected") {
    for (size_t len = 0; len < n; ++len) CHECK_FALSE(tether_hello_decode(buf, len, &back));
    buf[n] = 'x';
    CHECK_FALSE(tether_hello_decode(buf, n + 1, &back));
  }
  SUBCASE("encoder fails for every short buffer") {
    for (size_t cap = 0; cap < n; ++cap) CHECK_FALSE(tether_hello_encode(&h, buf, cap, &n));
  }
  SUBCASE("names: not empty, printable, at most 32") {
    h.name[0] = '\0';
    CHECK_FALSE(tether_hello_encode(&h, buf, sizeof buf, &n));
    std::strcpy(h.name, "tab\there");
    CHECK_FALSE(tether_hello_encode(&h, buf, sizeof buf, &n));
    std::memset(h.name, 'a', TETHER_MAX_FIRMWARE_NAME_LEN);
    h.name[TETHER_MAX_FIRMWARE_NAME_LEN] = '\0';
    CHECK(tether_hello_encode(&h, buf, sizeof buf, &n));
  }
}

TEST_CASE("DEVICES round trip") {
  std::vector<tether_device_entry_t> table = {entry(0, TETHER_KIND_DEPTH, "auv.hull.depth"),
                                              entry(7, TETHER_KIND_GPS, "auv.mast.gps"),
                                              entry(300, TETHER_KIND_THRUSTER, "auv.hull.thruster_left")};
  Bytes p = devices_payload(table);
  tether_devices_reader_t r{};
  uint16_t count = 0;
  REQUIRE(tether_devices_reader_init(&r, p.data(), p.size(), &count));
  CHECK(count == 3);
  for (const auto& want : table) {
    tether_device_entry_t e{};
    REQUIRE(tether_devices_reader_next(&r, &e));
    CHECK(e.index == want.index);
    CHECK(e.kind == want.kind);
    CHECK(e.direction == want.direction);
    CHECK(e.payload_size == want.payload_size);
    CHECK(std::string(e.name, e.name_len) == want.name);
  }
  tether_device_entry_t e{};
  CHECK_FALSE(tether_devices_reader_next(&r, &e));

  SUBCASE("truncations, trailing bytes and a wrong count are rejected") {
    for (size_t len = 0; len < p.size(); ++len) CHECK_FALSE(tether_devices_reader_init(&r, p.data(), len, &count));
    Bytes longer = p;
    longer.push_back(0);
    CHECK_FALSE(tether_devices_reader_init(&r, longer.data(), longer.size(), &count));
    Bytes fewer = p;
    fewer[0] = 2;
    CHECK_FALSE(tether_devices_reader_init(&r, fewer.data(), fewer.size(), &count));
  }
  SUBCASE("an empty table is fine") {
    Bytes empty = devices_payload({});
    CHECK(empty == Bytes{0, 0});
    CHECK(tether_devices_reader_init(&r, empty.data(), empty.size(), &count));
    CHECK(count == 0);
  }
  SUBCASE("duplicate indices are rejected") {
    Bytes dup = devices_payload({entry(4, TETHER_KIND_DEPTH, "a.b.c"), entry(4, TETHER_KIND_COMPASS, "a.b.d")});
    CHECK_FALSE(tether_devices_reader_init(&r, dup.data(), dup.size(), &count));
  }
  SUBCASE("invalid entries are refused by the writer") {
    Bytes out(256);
    tether_devices_writer_t w{};
    auto bad = entry(1, TETHER_KIND_DEPTH, "has space");
    tether_devices_writer_init(&w, out.data(), out.size());
    tether_devices_writer_add(&w, &bad);
    size_t n = 0;
    CHECK_FALSE(tether_devices_writer_finish(&w, &n));
    bad = entry(1, TETHER_KIND_DEPTH, "x");
    bad.direction = 3;
    tether_devices_writer_init(&w, out.data(), out.size());
    tether_devices_writer_add(&w, &bad);
    CHECK_FALSE(tether_devices_writer_finish(&w, &n));
    bad = entry(1, TETHER_KIND_DEPTH, "");
    tether_devices_writer_init(&w, out.data(), out.size());
    tether_devices_writer_add(&w, &bad);
    CHECK_FALSE(tether_devices_writer_finish(&w, &n));
  }
  SUBCASE("writer fails for every short buffer") {
    for (size_t cap = 0; cap < p.size(); ++cap) {
      Bytes out(cap + 1, 0xEE);
      tether_devices_writer_t w{};
      tether_devices_writer_init(&w, out.data(), cap);
      for (const auto& t : table) tether_devices_writer_add(&w, &t);
      size_t n = 0;
      CHECK_FALSE(tether_devices_writer_finish(&w, &n));
      CHECK(out[cap] == 0xEE);
    }
  }
  SUBCASE("unknown kinds pass through") {
    tether_device_entry_t odd{9, 42, TETHER_DIRECTION_SENSOR, 3, 5, "a.b.c"};
    Bytes q = devices_payload({odd});
    REQUIRE(tether_devices_reader_init(&r, q.data(), q.size(), &count));
    REQUIRE(tether_devices_reader_next(&r, &e));
    CHECK(e.kind == 42);
    CHECK(e.payload_size == 3);
  }
}

TEST_CASE("READY round trip") {
  const uint16_t idx[] = {0, 1, 5, 300};
  uint8_t buf[16];
  size_t n = 0;
  REQUIRE(tether_ready_encode(idx, 4, buf, sizeof buf, &n));
  CHECK(n == 9);
  uint16_t back[8];
  uint8_t count = 0;
  REQUIRE(tether_ready_decode(buf, n, back, 8, &count));
  CHECK(count == 4);
  CHECK(back[3] == 300);
  CHECK_FALSE(tether_ready_decode(buf, n, back, 3, &count));  // no room
  for (size_t len = 0; len < n; ++len) CHECK_FALSE(tether_ready_decode(buf, len, back, 8, &count));
  const uint16_t dup[] = {2, 2};
  CHECK_FALSE(tether_ready_encode(dup, 2, buf, sizeof buf, &n));
  const uint8_t dup_wire[] = {2, 2, 0, 2, 0};
  CHECK_FALSE(tether_ready_decode(dup_wire, sizeof dup_wire, back, 8, &count));
  CHECK(tether_ready_encode(nullptr, 0, buf, sizeof buf, &n));
  CHECK(n == 1);
}

TEST_CASE("SENSORS round trip with a no-data reading") {
  Bytes depth(8);
  tether_put_f32le(depth.data(), 2.5f);
  tether_put_f32le(depth.data() + 4, 126325.0f);
  uint8_t buf[64];
  tether_items_writer_t w{};
  tether_sensors_writer_init(&w, buf, sizeof buf, 420000u);
  tether_items_writer_add(&w, 0, depth.data(), 8);
  tether_items_writer_add_no_data(&w, 1);
  size_t n = 0;
  REQUIRE(tether_items_writer_finish(&w, &n));
  CHECK(n == 8 + 9 + 1);
  CHECK(buf[17] == (1 | TETHER_SLOT_FLAG_NO_DATA));

  tether_items_reader_t r{};
  uint64_t t = 0;
  REQUIRE(tether_sensors_reader_init(&r, buf, n, kSlots, 4, &t));
  CHECK(t == 420000u);
  CHECK(tether_items_reader_validate(&r));
  tether_item_t item{};
  REQUIRE(tether_items_reader_next(&r, &item) == 1);
  CHECK(item.slot == 0);
  CHECK_FALSE(item.no_data);
  CHECK(tether_get_f32le(item.data) == 2.5f);
  CHECK(tether_get_f32le(item.data + 4) == 126325.0f);
  REQUIRE(tether_items_reader_next(&r, &item) == 1);
  CHECK(item.slot == 1);
  CHECK(item.no_data);
  CHECK(tether_items_reader_next(&r, &item) == 0);

  SUBCASE("malformed readings") {
    auto bad = [&](Bytes p) {
      tether_items_reader_t rr{};
      uint64_t tt = 0;
      if (!tether_sensors_reader_init(&rr, p.data(), p.size(), kSlots, 4, &tt)) return true;
      return !tether_items_reader_validate(&rr);
    };
    Bytes base(buf, buf + 8);
    CHECK(bad(Bytes(buf, buf + 7)));  // no time
    CHECK_FALSE(bad(base));           // no readings is fine
    Bytes p = base;
    p.push_back(2);  // an actuator slot
    p.insert(p.end(), 4, 0);
    CHECK(bad(p));
    p = base;
    p.push_back(4);  // no such slot
    CHECK(bad(p));
    p = base;
    p.push_back(1);  // truncated data
    p.insert(p.end(), 3, 0);
    CHECK(bad(p));
    p = base;
    p.push_back(1);  // slots out of order
    p.insert(p.end(), 4, 0);
    p.push_back(0);
    p.insert(p.end(), 8, 0);
    CHECK(bad(p));
    p = base;
    p.push_back(0x81);  // the same slot twice
    p.push_back(0x81);
    CHECK(bad(p));
  }
  SUBCASE("writer rules") {
    tether_sensors_writer_init(&w, buf, sizeof buf, 1);
    tether_items_writer_add_no_data(&w, 1);
    tether_items_writer_add_no_data(&w, 0);  // descending
    CHECK_FALSE(tether_items_writer_finish(&w, &n));
    tether_sensors_writer_init(&w, buf, sizeof buf, 1);
    tether_items_writer_add_no_data(&w, TETHER_MAX_SLOTS);
    CHECK_FALSE(tether_items_writer_finish(&w, &n));
    for (size_t cap = 0; cap < 18; ++cap) {
      tether_sensors_writer_init(&w, buf, cap, 1);
      tether_items_writer_add(&w, 0, depth.data(), 8);
      tether_items_writer_add_no_data(&w, 1);
      CHECK_FALSE(tether_items_writer_finish(&w, &n));
    }
  }
}

TEST_CASE("ACTUATE round trip") {
  Bytes left = f32(0.5f), right = f32(-0.25f);
  uint8_t buf[32];
  tether_items_writer_t w{};
  tether_actuate_writer_init(&w, buf, sizeof buf);
  tether_items_writer_add(&w, 2, left.data(), 4);
  tether_items_writer_add(&w, 3, right.data(), 4);
  size_t n = 0;
  REQUIRE(tether_items_writer_finish(&w, &n));
  CHECK(n == 10);
  tether_items_reader_t r{};
  REQUIRE(tether_actuate_reader_init(&r, buf, n, kSlots, 4));
  tether_item_t item{};
  REQUIRE(tether_items_reader_next(&r, &item) == 1);
  CHECK(item.slot == 2);
  CHECK(tether_get_f32le(item.data) == 0.5f);
  REQUIRE(tether_items_reader_next(&r, &item) == 1);
  CHECK(tether_get_f32le(item.data) == -0.25f);
  CHECK(tether_items_reader_next(&r, &item) == 0);

  SUBCASE("no NO_DATA in ACTUATE, no sensor slots") {
    tether_actuate_writer_init(&w, buf, sizeof buf);
    tether_items_writer_add_no_data(&w, 2);
    CHECK_FALSE(tether_items_writer_finish(&w, &n));
    const uint8_t no_data[] = {0x82};
    REQUIRE(tether_actuate_reader_init(&r, no_data, 1, kSlots, 4));
    CHECK_FALSE(tether_items_reader_validate(&r));
    const uint8_t sensor[] = {0x01, 0, 0, 0, 0};
    REQUIRE(tether_actuate_reader_init(&r, sensor, sizeof sensor, kSlots, 4));
    CHECK_FALSE(tether_items_reader_validate(&r));
  }
  SUBCASE("an empty ACTUATE acknowledges the step") {
    REQUIRE(tether_actuate_reader_init(&r, nullptr, 0, kSlots, 4));
    CHECK(tether_items_reader_next(&r, &item) == 0);
  }
}

TEST_CASE("LOG and ERROR") {
  uint8_t buf[512];
  size_t n = 0;
  REQUIRE(tether_log_encode(TETHER_LOG_WARNING, "depth reached", 13, buf, sizeof buf, &n));
  uint8_t level = 9;
  const char* text = nullptr;
  size_t text_len = 0;
  REQUIRE(tether_log_decode(buf, n, &level, &text, &text_len));
  CHECK(level == TETHER_LOG_WARNING);
  CHECK(std::string(text, text_len) == "depth reached");
  std::string long_text(TETHER_MAX_LOG_TEXT + 1, 'x');
  CHECK_FALSE(tether_log_encode(0, long_text.data(), long_text.size(), buf, sizeof buf, &n));
  CHECK(tether_log_encode(0, long_text.data(), TETHER_MAX_LOG_TEXT, buf, sizeof buf, &n));
  CHECK_FALSE(tether_log_encode(3, "x", 1, buf, sizeof buf, &n));
  CHECK_FALSE(tether_log_decode(buf, 0, &level, &text, &text_len));

  tether_error_t e{TETHER_ERROR_UNKNOWN_INDEX, 77, "index 77", 8};
  REQUIRE(tether_error_encode(&e, buf, sizeof buf, &n));
  CHECK(n == 11);
  tether_error_t back{};
  REQUIRE(tether_error_decode(buf, n, &back));
  CHECK(back.code == TETHER_ERROR_UNKNOWN_INDEX);
  CHECK(back.value == 77);
  CHECK(std::string(back.text, back.text_len) == "index 77");
  CHECK_FALSE(tether_error_decode(buf, 2, &back));
  e.code = 0;
  CHECK_FALSE(tether_error_encode(&e, buf, sizeof buf, &n));
}
