// SPDX-License-Identifier: Apache-2.0
// Tether's MAVLink 2 codec against node-mavlink 2.3.0 (tests/mavlink_node/cross.mjs), an
// independent implementation generated from the same XML: Tether writes every message it knows
// (and the arm command), node-mavlink must read them back field for field and write the very
// same bytes; its definitions (CRC_EXTRA, lengths, field order) and mode tables must be ours;
// then node-mavlink writes frames of its own, with noise, an unknown message and a signed frame
// between them, and Tether's decoder must read them field for field and count the rest.
// Skipped when node/npm are not installed (or TETHER_SKIP_NODE_VALIDATION is set); a failed
// npm install fails the test, as the other Node checks do (docs/mavlink.md).
#include <doctest/doctest.h>

#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "mavlink_test_util.hpp"
#include "test_paths.hpp"
#include "tether/mavlink/mavlink.hpp"
#include "tether/mavlink/mavlink_messages.hpp"

namespace mav = tether::adapters::mavlink;
using nlohmann::json;

namespace {

bool node_available() {
  if (std::getenv("TETHER_SKIP_NODE_VALIDATION") != nullptr) return false;
  return std::system("command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1") == 0;
}

// {msgid, name, crc_extra, lengths, fields: [{name, extension, offset}]}
template <class M>
json definition_json() {
  json fields = json::array();
  std::size_t offset = 0;
  std::apply(
      [&](auto... f) {
        auto one = [&](auto g) {
          fields.push_back({{"name", g.name}, {"extension", g.extension}, {"offset", offset}});
          offset += mav::wire_size<mav::detail::field_value_t<decltype(g)>>;
        };
        (one(f), ...);
      },
      M::fields());
  return {{"msgid", M::msgid},
          {"name", M::name},
          {"crc_extra", M::crc_extra},
          {"min_length", mav::min_length<M>()},
          {"max_length", mav::max_length<M>()},
          {"fields", fields}};
}

struct Ours {
  std::vector<std::uint8_t> bytes;
  json frames = json::array();
};

template <class M>
void add_frame(Ours& ours, const M& m, std::uint8_t seq) {
  std::array<std::uint8_t, mav::max_frame_size> buf{};
  mav::Header h;
  h.seq = seq;
  h.sysid = 1;
  h.compid = 1;
  const std::size_t n = mav::encode(m, h, buf);
  REQUIRE(n > 0);
  ours.bytes.insert(ours.bytes.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
  ours.frames.push_back({{"msgid", M::msgid},
                         {"name", M::name},
                         {"seq", seq},
                         {"sysid", 1},
                         {"compid", 1},
                         {"length", buf[1]},
                         {"fields", mav::test::to_json(m)}});
}

void write_file(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// the decoded frame's fields as JSON, through the struct of its msgid
json decoded_fields(const mav::Frame& f) {
  json out;
  mav::test::for_each_message([&](auto m) {
    using M = decltype(m);
    if (f.header.msgid == M::msgid) out = mav::test::to_json(*mav::decode<M>(f));
  });
  return out;
}

}  // namespace

TEST_CASE("mavlink cross-check: node-mavlink reads what Tether writes, and Tether reads what node-mavlink writes") {
  if (!node_available()) {
    MESSAGE("node/npm not found (or TETHER_SKIP_NODE_VALIDATION set): skipping the node-mavlink cross-check");
    return;
  }
  const std::string dir = tether::cli_test::temp_dir("mavlink_cross");

  // every message, twice with different values, and the arm command (a truncated payload)
  Ours ours;
  std::uint8_t seq = 0;
  json messages = json::array();
  mav::test::for_each_message([&](auto m) {
    using M = decltype(m);
    messages.push_back(definition_json<M>());
    add_frame(ours, mav::test::sample<M>(0), seq++);
    add_frame(ours, mav::test::sample<M>(5), seq++);
  });
  add_frame(ours, mav::arm_disarm(1, 1, true), seq++);
  json modes;
  for (const auto& [vehicle, key] : {std::pair{mav::Vehicle::sub, "sub"}, std::pair{mav::Vehicle::rover, "rover"}})
    for (const mav::FlightMode& m : mav::flight_modes(vehicle)) modes[key][m.name] = m.custom_mode;
  write_file(dir + "/ours.bin", std::string(ours.bytes.begin(), ours.bytes.end()));
  write_file(dir + "/ours.json", json{{"messages", messages}, {"frames", ours.frames}, {"modes", modes}}.dump());

  const auto node = tether::cli_test::run("TETHER_BINARY_DIR='" + TETHER_BINARY_DIR + "' bash '" +
                                          TETHER_SOURCE_DIR + "/tests/mavlink_node/run.sh' cross.mjs '" + dir +
                                          "/ours.bin' '" + dir + "/ours.json' '" + dir + "'");
  MESSAGE(node.out);
  REQUIRE(node.exit_code == 0);
  const auto line = node.out.rfind("{\"ok\"");
  REQUIRE(line != std::string::npos);
  const json result = json::parse(node.out.substr(line));
  CHECK(result["ok"] == true);
  CHECK(result["seen"]["our_frames_read"] == ours.frames.size());
  CHECK(result["seen"]["our_frames_identical_to_node"] == ours.frames.size());

  // node-mavlink's frames through Tether's decoder, five bytes at a time
  const std::string theirs = read_file(dir + "/theirs.bin");
  const json expected = json::parse(read_file(dir + "/theirs.json"));
  REQUIRE(!theirs.empty());
  mav::Decoder decoder(mav::known_messages());
  std::vector<mav::Frame> frames;
  const auto* p = reinterpret_cast<const std::uint8_t*>(theirs.data());
  for (std::size_t i = 0; i < theirs.size(); i += 5)
    decoder.feed(std::span<const std::uint8_t>(p + i, std::min<std::size_t>(5, theirs.size() - i)),
                 [&](const mav::Frame& f) { frames.push_back(f); });
  decoder.finish();
  REQUIRE(frames.size() == expected["frames"].size());
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const json& want = expected["frames"][i];
    const mav::Frame& f = frames[i];
    CAPTURE(want["name"].get<std::string>());
    CHECK(f.header.msgid == want["msgid"]);
    CHECK(f.header.seq == want["seq"]);
    CHECK(f.header.sysid == want["sysid"]);
    CHECK(f.header.compid == want["compid"]);
    const json got = decoded_fields(f);
    for (const auto& [name, value] : want["fields"].items()) {
      CAPTURE(name);
      REQUIRE(got.contains(name));
      CHECK(got[name] == value);
    }
  }
  const mav::DecoderCounters& c = decoder.counters();
  CHECK(c.signed_frames == expected["expect"]["signed_frames"]);
  CHECK(c.unknown_msgid == expected["expect"]["unknown_msgid"]);
  CHECK(c.bad_crc == expected["expect"]["bad_crc"]);
  CHECK(c.garbage_bytes == std::string("noise between frames\n").size());
  CHECK(c.truncated == 0);
  std::filesystem::remove_all(dir);
}
