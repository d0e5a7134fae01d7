// SPDX-License-Identifier: Apache-2.0
// The shared test vectors (firmware_shim/test_vectors/vectors.txt) from C++:
// the same checks as vectors_c.c plus field values, and that docs/protocol.md
// quotes the file verbatim.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "test_paths.hpp"
#include "tether/firmware_shim/frame.h"
#include "tether/firmware_shim/messages.h"
#include "tether/firmware_shim/payloads.h"

#ifndef TETHER_SOURCE_DIR
#error "TETHER_SOURCE_DIR must name the source tree"
#endif

namespace {

using Bytes = std::vector<uint8_t>;

struct Vector {
  std::string name;
  std::map<std::string, std::string> fields;
  bool has(const std::string& k) const { return fields.count(k) != 0; }
  const std::string& at(const std::string& k) const { return fields.at(k); }
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot open " << path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// "3a", "00*10", "01..fe"
Bytes parse_bytes(const std::string& text) {
  Bytes out;
  std::istringstream in(text);
  std::string tok;
  while (in >> tok) {
    auto star = tok.find('*');
    auto dots = tok.find("..");
    if (star != std::string::npos) {
      auto v = static_cast<uint8_t>(std::stoul(tok.substr(0, star), nullptr, 16));
      out.insert(out.end(), std::stoul(tok.substr(star + 1)), v);
    } else if (dots != std::string::npos) {
      unsigned a = static_cast<unsigned>(std::stoul(tok.substr(0, dots), nullptr, 16));
      unsigned b = static_cast<unsigned>(std::stoul(tok.substr(dots + 2), nullptr, 16));
      for (unsigned v = a; v <= b; ++v) out.push_back(static_cast<uint8_t>(v));
    } else {
      out.push_back(static_cast<uint8_t>(std::stoul(tok, nullptr, 16)));
    }
  }
  return out;
}

std::vector<Vector> load_vectors(const std::string& text) {
  std::vector<Vector> vectors;
  std::istringstream in(text);
  std::string line;
  bool open = false;
  while (std::getline(in, line)) {
    if (line.empty()) {
      open = false;
      continue;
    }
    if (line[0] == '#') continue;
    if (line.rfind("vector ", 0) == 0) {
      vectors.push_back({line.substr(7), {}});
      open = true;
      continue;
    }
    auto eq = line.find(" =");
    REQUIRE_MESSAGE((open && eq != std::string::npos), "bad line: " << line);
    std::string value = line.substr(eq + 2);
    if (!value.empty() && value[0] == ' ') value.erase(0, 1);
    vectors.back().fields[line.substr(0, eq)] = value;
  }
  return vectors;
}

const std::string kVectorsPath = TETHER_SOURCE_DIR + "/firmware_shim/test_vectors/vectors.txt";

std::vector<Vector> vectors() {
  static const std::vector<Vector> v = load_vectors(read_file(kVectorsPath));
  return v;
}

const Vector& find(const std::string& name) {
  static std::vector<Vector> all = vectors();
  for (const auto& v : all) {
    if (v.name == name) return v;
  }
  FAIL("no vector " << name);
  return all.front();
}

uint8_t type_of(const std::string& name) {
  for (unsigned t = TETHER_MSG_FIRST; t <= TETHER_MSG_LAST; ++t) {
    if (name == tether_msg_name(static_cast<uint8_t>(t))) return static_cast<uint8_t>(t);
  }
  return 0;
}

struct Decoded {
  int frames = 0;
  tether_frame_header_t header{};
  Bytes payload;
  tether_frame_counters_t counters{};
};

Decoded decode(const Bytes& wire) {
  static Bytes buf(TETHER_RAW_FRAME_SIZE(TETHER_PROTOCOL_MAX_PAYLOAD));
  tether_frame_decoder_t d{};
  tether_frame_decoder_init(&d, buf.data(), buf.size());
  Decoded out;
  for (uint8_t b : wire) {
    tether_frame_t f{};
    if (tether_frame_decoder_push(&d, b, &f)) {
      ++out.frames;
      out.header = f.header;
      out.payload.assign(f.payload, f.payload + f.header.payload_len);
    }
  }
  out.counters = d.counters;
  return out;
}

uint32_t counter(const tether_frame_counters_t& c, const std::string& name) {
  const std::map<std::string, uint32_t> m = {{"crc_errors", c.crc_errors},
                                             {"cobs_errors", c.cobs_errors},
                                             {"runts", c.runts},
                                             {"length_errors", c.length_errors},
                                             {"bad_version", c.bad_version},
                                             {"unknown_type", c.unknown_type},
                                             {"oversize", c.oversize}};
  auto it = m.find(name);
  REQUIRE_MESSAGE(it != m.end(), "unknown counter " << name);
  return it->second;
}

}  // namespace

TEST_CASE("vectors: CRC, COBS and frames agree with the shim") {
  auto all = vectors();
  REQUIRE(all.size() >= 25);
  for (const auto& v : all) {
    CAPTURE(v.name);
    if (v.has("crc")) {
      Bytes data = parse_bytes(v.at("data"));
      CHECK(tether_crc16(data.data(), data.size()) == std::stoul(v.at("crc"), nullptr, 16));
    } else if (v.has("cobs")) {
      Bytes data = parse_bytes(v.at("data"));
      Bytes want = parse_bytes(v.at("cobs"));
      Bytes out(TETHER_COBS_MAX_ENCODED(data.size()));
      size_t n = 0;
      REQUIRE(tether_cobs_encode(data.data(), data.size(), out.data(), out.size(), &n));
      out.resize(n);
      CHECK(out == want);
      Bytes back(data.size() + 1);
      REQUIRE(tether_cobs_decode(want.data(), want.size(), back.data(), back.size(), &n));
      back.resize(n);
      CHECK(back == data);
    } else {
      REQUIRE(v.has("wire"));
      Bytes wire = parse_bytes(v.at("wire"));
      Decoded d = decode(wire);
      const std::string& expect = v.at("expect");
      if (expect == "frame" || expect == "foreign") {
        Bytes payload = parse_bytes(v.at("payload"));
        REQUIRE(d.frames == 1);
        CHECK(d.header.type == type_of(v.at("type")));
        CHECK(d.header.version == std::stoul(v.at("version")));
        CHECK(d.header.step_id == std::stoul(v.at("step")));
        CHECK(d.payload == payload);
        CHECK(d.counters.foreign_version == (expect == "foreign" ? 1u : 0u));
        tether_frame_header_t h{d.header.version, d.header.type, d.header.step_id,
                                static_cast<uint16_t>(payload.size())};
        Bytes out(TETHER_WIRE_FRAME_MAX(payload.size()));
        size_t n = 0;
        REQUIRE(tether_frame_encode(&h, payload.data(), out.data(), out.size(), &n));
        out.resize(n);
        CHECK(out == wire);
      } else {
        CHECK(d.frames == 0);
        CHECK(counter(d.counters, expect) == 1);
        CHECK(d.counters.garbage_bytes == wire.size());
      }
    }
  }
}

TEST_CASE("vectors: message fields") {
  SUBCASE("hello") {
    Bytes p = parse_bytes(find("hello").at("payload"));
    tether_hello_t h{};
    REQUIRE(tether_hello_decode(p.data(), p.size(), &h));
    CHECK(h.protocol_version == 1);
    CHECK(h.max_payload == 1024);
    CHECK(h.build_id == 0x01020304u);
    CHECK(std::string(h.name) == "depth_hold");
  }
  SUBCASE("devices") {
    Bytes p = parse_bytes(find("devices").at("payload"));
    tether_devices_reader_t r{};
    uint16_t count = 0;
    REQUIRE(tether_devices_reader_init(&r, p.data(), p.size(), &count));
    REQUIRE(count == 4);
    const struct {
      uint16_t index;
      uint8_t kind;
      const char* name;
    } want[] = {{0, TETHER_KIND_DEPTH, "auv.hull.depth"},
                {1, TETHER_KIND_COMPASS, "auv.hull.compass"},
                {5, TETHER_KIND_THRUSTER, "auv.hull.thruster_left"},
                {6, TETHER_KIND_THRUSTER, "auv.hull.thruster_right"}};
    for (const auto& w : want) {
      tether_device_entry_t e{};
      REQUIRE(tether_devices_reader_next(&r, &e));
      CHECK(e.index == w.index);
      CHECK(e.kind == w.kind);
      CHECK(e.direction == tether_kind_direction(w.kind));
      CHECK(e.payload_size == tether_kind_payload_size(w.kind));
      CHECK(std::string(e.name, e.name_len) == w.name);
    }
  }
  SUBCASE("ready") {
    Bytes p = parse_bytes(find("ready").at("payload"));
    uint16_t idx[8];
    uint8_t count = 0;
    REQUIRE(tether_ready_decode(p.data(), p.size(), idx, 8, &count));
    REQUIRE(count == 4);
    CHECK(idx[0] == 0);
    CHECK(idx[1] == 1);
    CHECK(idx[2] == 5);
    CHECK(idx[3] == 6);
  }
  const tether_slot_t slots[] = {{8, TETHER_DIRECTION_SENSOR},
                                 {4, TETHER_DIRECTION_SENSOR},
                                 {4, TETHER_DIRECTION_ACTUATOR},
                                 {4, TETHER_DIRECTION_ACTUATOR}};
  SUBCASE("sensors") {
    CHECK(find("sensors").at("slots") == "s8 s4 a4 a4");
    Bytes p = parse_bytes(find("sensors").at("payload"));
    tether_items_reader_t r{};
    uint64_t t = 0;
    REQUIRE(tether_sensors_reader_init(&r, p.data(), p.size(), slots, 4, &t));
    CHECK(t == 420000u);
    tether_item_t item{};
    REQUIRE(tether_items_reader_next(&r, &item) == 1);
    CHECK(item.slot == 0);
    CHECK(tether_get_f32le(item.data + TETHER_DEPTH_OFFSET_DEPTH_M) == 2.5f);
    CHECK(tether_get_f32le(item.data + TETHER_DEPTH_OFFSET_PRESSURE_PA) == 126325.0f);
    REQUIRE(tether_items_reader_next(&r, &item) == 1);
    CHECK(item.slot == 1);
    CHECK(item.no_data);
    CHECK(tether_items_reader_next(&r, &item) == 0);
  }
  SUBCASE("sensors_full") {
    Bytes p = parse_bytes(find("sensors_full").at("payload"));
    tether_items_reader_t r{};
    uint64_t t = 0;
    REQUIRE(tether_sensors_reader_init(&r, p.data(), p.size(), slots, 4, &t));
    CHECK(t == 430000u);
    tether_item_t item{};
    REQUIRE(tether_items_reader_next(&r, &item) == 1);
    CHECK(tether_get_f32le(item.data) == 2.25f);
    CHECK(tether_get_f32le(item.data + 4) == 123800.0f);
    REQUIRE(tether_items_reader_next(&r, &item) == 1);
    CHECK(tether_get_f32le(item.data + TETHER_COMPASS_OFFSET_HEADING_RAD) == 1.5f);
  }
  SUBCASE("actuate") {
    Bytes p = parse_bytes(find("actuate").at("payload"));
    tether_items_reader_t r{};
    REQUIRE(tether_actuate_reader_init(&r, p.data(), p.size(), slots, 4));
    tether_item_t item{};
    REQUIRE(tether_items_reader_next(&r, &item) == 1);
    CHECK(item.slot == 2);
    CHECK(tether_get_f32le(item.data) == 0.5f);
    REQUIRE(tether_items_reader_next(&r, &item) == 1);
    CHECK(item.slot == 3);
    CHECK(tether_get_f32le(item.data) == -0.25f);
    CHECK(parse_bytes(find("actuate_empty").at("payload")).empty());
  }
  SUBCASE("log, error, stop") {
    Bytes p = parse_bytes(find("log").at("payload"));
    uint8_t level = 0;
    const char* text = nullptr;
    size_t len = 0;
    REQUIRE(tether_log_decode(p.data(), p.size(), &level, &text, &len));
    CHECK(level == TETHER_LOG_WARNING);
    CHECK(std::string(text, len) == "depth reached");
    p = parse_bytes(find("error").at("payload"));
    tether_error_t e{};
    REQUIRE(tether_error_decode(p.data(), p.size(), &e));
    CHECK(e.code == TETHER_ERROR_VERSION_MISMATCH);
    CHECK(e.value == 1);
    CHECK(find("stop").at("step") == "100");
  }
}

TEST_CASE("docs/protocol.md quotes the vectors file verbatim") {
  std::string doc = read_file(TETHER_SOURCE_DIR + "/docs/protocol.md");
  std::string file = read_file(kVectorsPath);
  CHECK_MESSAGE(doc.find(file) != std::string::npos,
                "docs/protocol.md is stale: run python3 tests/firmware_shim/gen_vectors.py");
}
