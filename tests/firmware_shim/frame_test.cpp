// SPDX-License-Identifier: Apache-2.0
// CRC, COBS and the frame encoder / streaming decoder (firmware_shim/src/frame.c).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tether/firmware_shim/frame.h"

namespace {

using Bytes = std::vector<uint8_t>;

Bytes cobs(const Bytes& in) {
  Bytes out(TETHER_COBS_MAX_ENCODED(in.size()));
  size_t n = 0;
  REQUIRE(tether_cobs_encode(in.data(), in.size(), out.data(), out.size(), &n));
  out.resize(n);
  return out;
}

Bytes uncobs(const Bytes& in) {
  Bytes out(in.size() + 1);
  size_t n = 0;
  REQUIRE(tether_cobs_decode(in.data(), in.size(), out.data(), out.size(), &n));
  out.resize(n);
  return out;
}

Bytes range(uint8_t first, uint8_t last) {
  Bytes b;
  for (unsigned v = first; v <= last; ++v) b.push_back(static_cast<uint8_t>(v));
  return b;
}

Bytes encode_frame(uint8_t type, uint32_t step, const Bytes& payload, uint8_t version = TETHER_PROTOCOL_VERSION) {
  tether_frame_header_t h{version, type, step, static_cast<uint16_t>(payload.size())};
  Bytes out(TETHER_WIRE_FRAME_MAX(payload.size()));
  size_t n = 0;
  REQUIRE(tether_frame_encode(&h, payload.data(), out.data(), out.size(), &n));
  out.resize(n);
  return out;
}

// feeds bytes one at a time; returns the frames delivered (type, step, payload)
struct Delivered {
  tether_frame_header_t header;
  Bytes payload;
};

std::vector<Delivered> feed(tether_frame_decoder_t& d, const Bytes& wire) {
  std::vector<Delivered> got;
  for (uint8_t b : wire) {
    tether_frame_t f{};
    if (tether_frame_decoder_push(&d, b, &f)) {
      got.push_back({f.header, Bytes(f.payload, f.payload + f.header.payload_len)});
    }
  }
  return got;
}

struct Decoder {
  Bytes buf;
  tether_frame_decoder_t d{};
  explicit Decoder(size_t max_payload = TETHER_PROTOCOL_MAX_PAYLOAD) : buf(TETHER_RAW_FRAME_SIZE(max_payload)) {
    tether_frame_decoder_init(&d, buf.data(), buf.size());
  }
};

}  // namespace

TEST_CASE("crc16 is CRC-16/CCITT-FALSE") {
  const char* check = "123456789";
  CHECK(tether_crc16(reinterpret_cast<const uint8_t*>(check), 9) == TETHER_CRC16_CHECK);
  CHECK(tether_crc16(nullptr, 0) == TETHER_CRC16_INIT);
  // running update over pieces equals one pass
  uint16_t crc = tether_crc16_update(TETHER_CRC16_INIT, reinterpret_cast<const uint8_t*>(check), 4);
  crc = tether_crc16_update(crc, reinterpret_cast<const uint8_t*>(check) + 4, 5);
  CHECK(crc == 0x29B1);
}

TEST_CASE("cobs edge cases") {
  CHECK(cobs({}) == Bytes{0x01});
  CHECK(cobs({0x00}) == Bytes{0x01, 0x01});
  CHECK(cobs(Bytes(5, 0x00)) == Bytes(6, 0x01));
  CHECK(cobs({0x11, 0x22, 0x00, 0x33}) == Bytes{0x03, 0x11, 0x22, 0x02, 0x33});

  SUBCASE("254 non-zero bytes make one full block and nothing after it") {
    Bytes in = range(1, 254);
    Bytes want{0xFF};
    want.insert(want.end(), in.begin(), in.end());
    CHECK(cobs(in) == want);
    CHECK(uncobs(want) == in);
  }
  SUBCASE("255 non-zero bytes") {
    Bytes in = range(1, 255);
    Bytes want{0xFF};
    want.insert(want.end(), in.begin(), in.begin() + 254);
    want.push_back(0x02);
    want.push_back(0xFF);
    CHECK(cobs(in) == want);
    CHECK(uncobs(want) == in);
  }
  SUBCASE("a zero after a full block") {
    Bytes in = range(1, 254);
    in.push_back(0);
    Bytes enc = cobs(in);
    CHECK(enc.size() == 257);
    CHECK(enc[255] == 0x01);
    CHECK(enc[256] == 0x01);
    CHECK(uncobs(enc) == in);
  }
  SUBCASE("round trip of every length up to 1100 in three patterns") {
    std::mt19937 rng(7);
    for (size_t n = 0; n <= 1100; ++n) {
      for (int pattern = 0; pattern < 3; ++pattern) {
        Bytes in(n);
        for (auto& b : in) {
          b = pattern == 0 ? 0 : pattern == 1 ? 0x5A : static_cast<uint8_t>(rng() % 4 == 0 ? 0 : rng());
        }
        Bytes enc = cobs(in);
        CHECK(enc.size() <= TETHER_COBS_MAX_ENCODED(n));
        CHECK(std::find(enc.begin(), enc.end(), 0) == enc.end());
        CHECK(uncobs(enc) == in);
      }
    }
  }
  SUBCASE("encode never writes past a short buffer") {
    Bytes in = range(1, 255);
    in.insert(in.begin() + 100, 0);
    size_t need = cobs(in).size();
    for (size_t cap = 0; cap < need; ++cap) {
      Bytes out(cap + 8, 0xEE);
      size_t n = 99;
      CHECK_FALSE(tether_cobs_encode(in.data(), in.size(), out.data(), cap, &n));
      CHECK(n == 0);
      for (size_t i = cap; i < out.size(); ++i) CHECK(out[i] == 0xEE);
    }
  }
  SUBCASE("decode rejects broken input") {
    Bytes out(16);
    size_t n = 0;
    const Bytes zero_inside{0x03, 0x11, 0x00};
    const Bytes truncated{0x05, 0x11, 0x22};
    const Bytes code_zero{0x00};
    CHECK_FALSE(tether_cobs_decode(zero_inside.data(), zero_inside.size(), out.data(), out.size(), &n));
    CHECK_FALSE(tether_cobs_decode(truncated.data(), truncated.size(), out.data(), out.size(), &n));
    CHECK_FALSE(tether_cobs_decode(code_zero.data(), code_zero.size(), out.data(), out.size(), &n));
    const Bytes fine{0x03, 0x11, 0x22, 0x02, 0x33};
    CHECK_FALSE(tether_cobs_decode(fine.data(), fine.size(), out.data(), 3, &n));  // needs 4
  }
}

TEST_CASE("header layout is little-endian") {
  tether_frame_header_t h{1, TETHER_MSG_SENSORS, 0x04030201u, 0x0605u};
  uint8_t b[TETHER_HEADER_SIZE];
  tether_header_write(&h, b);
  const uint8_t want[] = {0x01, 0x03, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06};
  CHECK(std::memcmp(b, want, sizeof want) == 0);
  tether_frame_header_t back{};
  tether_header_read(b, &back);
  CHECK(back.step_id == h.step_id);
  CHECK(back.payload_len == h.payload_len);
}

TEST_CASE("frame encoder") {
  Bytes payload{0x00, 0x01, 0x00, 0xFF};
  Bytes wire = encode_frame(TETHER_MSG_LOG, 7, payload);
  CHECK(wire.back() == 0x00);
  CHECK(std::count(wire.begin(), wire.end(), 0) == 1);
  Bytes raw = uncobs(Bytes(wire.begin(), wire.end() - 1));
  REQUIRE(raw.size() == TETHER_RAW_FRAME_SIZE(payload.size()));
  CHECK(tether_crc16(raw.data(), raw.size() - 2) == (raw[raw.size() - 2] | (raw[raw.size() - 1] << 8)));

  SUBCASE("fails cleanly for every short buffer") {
    tether_frame_header_t h{1, TETHER_MSG_LOG, 7, 4};
    for (size_t cap = 0; cap < wire.size(); ++cap) {
      Bytes out(cap + 4, 0xEE);
      size_t n = 1;
      CHECK_FALSE(tether_frame_encode(&h, payload.data(), out.data(), cap, &n));
      CHECK(n == 0);
      for (size_t i = cap; i < out.size(); ++i) CHECK(out[i] == 0xEE);
    }
  }
  SUBCASE("the worst case fits TETHER_WIRE_FRAME_MAX") {
    Bytes big(TETHER_PROTOCOL_MAX_PAYLOAD, 0x77);
    Bytes w = encode_frame(TETHER_MSG_SENSORS, 1, big);
    CHECK(w.size() <= TETHER_WIRE_FRAME_MAX(big.size()));
  }
  SUBCASE("rejects payloads over the protocol maximum") {
    Bytes big(TETHER_PROTOCOL_MAX_PAYLOAD + 1, 0x77);
    tether_frame_header_t h{1, TETHER_MSG_SENSORS, 1, static_cast<uint16_t>(big.size())};
    Bytes out(TETHER_WIRE_FRAME_MAX(big.size()));
    size_t n = 0;
    CHECK_FALSE(tether_frame_encode(&h, big.data(), out.data(), out.size(), &n));
  }
}

TEST_CASE("decoder delivers frames fed byte by byte, back to back") {
  Decoder dec;
  Bytes wire;
  for (uint32_t step = 0; step < 50; ++step) {
    Bytes payload(step * 7 % 300, static_cast<uint8_t>(step));
    Bytes w = encode_frame(TETHER_MSG_SENSORS, step, payload);
    wire.insert(wire.end(), w.begin(), w.end());
  }
  auto got = feed(dec.d, wire);
  REQUIRE(got.size() == 50);
  for (uint32_t step = 0; step < 50; ++step) {
    CHECK(got[step].header.step_id == step);
    CHECK(got[step].payload == Bytes(step * 7 % 300, static_cast<uint8_t>(step)));
  }
  CHECK(dec.d.counters.frames_ok == 50);
  CHECK(dec.d.counters.bytes == wire.size());
  CHECK(dec.d.counters.garbage_bytes == 0);
}

TEST_CASE("decoder resynchronizes after garbage") {
  Decoder dec;
  Bytes good = encode_frame(TETHER_MSG_ACTUATE, 3, {1, 2, 3});
  std::mt19937 rng(1);
  for (int trial = 0; trial < 200; ++trial) {
    Bytes wire(rng() % 40);
    for (auto& b : wire) b = static_cast<uint8_t>(rng());
    wire.push_back(0x00);  // a receiver finds the next frame after a delimiter
    wire.insert(wire.end(), good.begin(), good.end());
    auto got = feed(dec.d, wire);
    REQUIRE(got.size() >= 1);
    CHECK(got.back().header.step_id == 3);
    CHECK(got.back().payload == Bytes{1, 2, 3});
  }
  CHECK(dec.d.counters.garbage_bytes > 0);
}

TEST_CASE("decoder drops and counts bad frames") {
  Decoder dec(64);
  auto& c = dec.d.counters;
  Bytes good = encode_frame(TETHER_MSG_LOG, 1, {0, 'h', 'i'});

  SUBCASE("empty frames are filler") {
    CHECK(feed(dec.d, {0, 0, 0}).empty());
    CHECK(c.garbage_bytes == 0);
    CHECK(c.bytes == 3);
  }
  SUBCASE("bad CRC") {
    Bytes raw = uncobs(Bytes(good.begin(), good.end() - 1));
    raw[9] ^= 0x40;
    Bytes wire = cobs(raw);
    wire.push_back(0);
    CHECK(feed(dec.d, wire).empty());
    CHECK(c.crc_errors == 1);
  }
  SUBCASE("oversize, then recovery") {
    Bytes big = encode_frame(TETHER_MSG_LOG, 1, Bytes(65, 'x'));
    CHECK(feed(dec.d, big).empty());
    CHECK(c.oversize == 1);
    CHECK(c.garbage_bytes == big.size());
    CHECK(feed(dec.d, good).size() == 1);
    // exactly the capacity fits
    CHECK(feed(dec.d, encode_frame(TETHER_MSG_LOG, 1, Bytes(64, 'x'))).size() == 1);
  }
  SUBCASE("unknown type") {
    CHECK(feed(dec.d, encode_frame(0, 1, {})).empty());
    CHECK(feed(dec.d, encode_frame(TETHER_MSG_LAST + 1, 1, {})).empty());
    CHECK(feed(dec.d, encode_frame(0xFF, 1, {})).empty());
    CHECK(c.unknown_type == 3);
  }
  SUBCASE("bad version, except HELLO and ERROR") {
    CHECK(feed(dec.d, encode_frame(TETHER_MSG_SENSORS, 1, Bytes(8, 0), 2)).empty());
    CHECK(feed(dec.d, encode_frame(TETHER_MSG_LOG, 1, {0}, 0)).empty());
    CHECK(c.bad_version == 2);
    auto hello = feed(dec.d, encode_frame(TETHER_MSG_HELLO, 0, {2, 0, 0}, 2));
    REQUIRE(hello.size() == 1);
    CHECK(hello[0].header.version == 2);
    CHECK(feed(dec.d, encode_frame(TETHER_MSG_ERROR, 0, {1, 2, 0}, 9)).size() == 1);
    CHECK(c.foreign_version == 2);
  }
  SUBCASE("runt and length mismatch") {
    Bytes runt = cobs({1, 3, 0, 0, 0, 0, 0, 0, 0});
    runt.push_back(0);
    CHECK(feed(dec.d, runt).empty());
    CHECK(c.runts == 1);
    Bytes raw = uncobs(Bytes(good.begin(), good.end() - 1));
    raw[6] = 4;  // payload_len 4, but 3 bytes follow; fix the CRC so only the length is wrong
    uint16_t crc = tether_crc16(raw.data(), raw.size() - 2);
    raw[raw.size() - 2] = static_cast<uint8_t>(crc & 0xFF);
    raw[raw.size() - 1] = static_cast<uint8_t>(crc >> 8);
    Bytes wire = cobs(raw);
    wire.push_back(0);
    CHECK(feed(dec.d, wire).empty());
    CHECK(c.length_errors == 1);
  }
  SUBCASE("stuffing cut short by a delimiter") {
    CHECK(feed(dec.d, {0x05, 0x11, 0x22, 0x00}).empty());
    CHECK(c.cobs_errors == 1);
    CHECK(feed(dec.d, good).size() == 1);
  }
  SUBCASE("a frame cut in half by a lost delimiter is dropped, the next one arrives") {
    Bytes wire(good.begin(), good.begin() + 5);
    wire.push_back(0);
    wire.insert(wire.end(), good.begin(), good.end());
    auto got = feed(dec.d, wire);
    CHECK(got.size() == 1);
    CHECK(c.cobs_errors + c.runts + c.crc_errors == 1);
  }
}

TEST_CASE("decoder reset forgets a partial frame") {
  Decoder dec;
  Bytes good = encode_frame(TETHER_MSG_STOP, 9, {});
  feed(dec.d, Bytes(good.begin(), good.begin() + 4));
  tether_frame_decoder_reset(&dec.d);
  auto got = feed(dec.d, good);
  REQUIRE(got.size() == 1);
  CHECK(got[0].header.step_id == 9);
}

TEST_CASE("decoder with no buffer counts everything as oversize") {
  tether_frame_decoder_t d{};
  tether_frame_decoder_init(&d, nullptr, 100);
  Bytes good = encode_frame(TETHER_MSG_STOP, 9, {});
  CHECK(feed(d, good).empty());
  CHECK(d.counters.oversize == 1);
}
