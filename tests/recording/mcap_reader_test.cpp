// SPDX-License-Identifier: Apache-2.0
#include "tether/recording/mcap_reader.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "test_paths.hpp"
#include "tether/recording/mcap_writer.hpp"

namespace mcap = tether::runtime::mcap;

namespace {

std::string scratch_path(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(TETHER_BINARY_DIR) / "test_output" / "mcap";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

std::string load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Expected {
  std::uint16_t channel_id;
  std::uint64_t log_time_ns;
  std::string data;
};

// ctest may run test cases in parallel processes: one file name per process
std::string small_recording_path(bool compress) {
  return scratch_path(std::string(compress ? "reader_small_zstd_" : "reader_small_plain_") +
                      std::to_string(::getpid()) + ".mcap");
}

// A small recording: 3 chunks or more, metadata and an attachment in between.
// Returns its bytes; the file is removed unless `keep_file`.
std::string small_recording(bool compress, std::vector<Expected>* messages = nullptr, bool keep_file = false) {
  const std::string path = small_recording_path(compress);
  mcap::WriterOptions options;
  options.compress = compress;
  options.chunk_size_bytes = 150;
  mcap::Writer writer;
  std::string error;
  REQUIRE(writer.open(path, options, &error));
  const std::uint16_t schema = writer.add_schema("pose", "jsonschema", "{}");
  const std::uint16_t a = writer.add_channel(schema, "/a", "json", {{"unit", "m"}});
  const std::uint16_t b = writer.add_channel(0, "/b", "application/octet-stream");
  writer.add_metadata("run", {{"id", "7"}});
  for (std::uint32_t i = 0; i < 12; ++i) {
    const std::uint16_t channel = i % 3 == 0 ? b : a;
    const std::string data = "PAYLOAD" + std::to_string(i);
    writer.write(channel, i, 100 + i, 100 + i, data);
    if (messages != nullptr) messages->push_back({channel, 100 + i, data});
    if (i == 5) writer.add_attachment("notes.txt", "text/plain", 3, 2, "ATTACHED");
  }
  REQUIRE(writer.close(&error));
  std::string bytes = load(path);
  if (!keep_file) std::filesystem::remove(path);
  return bytes;
}

struct TopRecord {
  std::uint8_t opcode;
  std::size_t offset;
  std::uint64_t length;
};

// The top-level records of a well-formed file, to aim corruptions at.
std::vector<TopRecord> top_records(const std::string& bytes) {
  std::vector<TopRecord> out;
  const auto* p = reinterpret_cast<const std::uint8_t*>(bytes.data());
  std::size_t pos = 8;
  while (pos + 9 <= bytes.size() - 8) {
    const std::uint64_t length = mcap::get_u64(p + pos + 1);
    out.push_back({p[pos], pos, length});
    if (p[pos] == 0x02) break;
    pos += 9 + length;
  }
  return out;
}

TopRecord first_record(const std::string& bytes, std::uint8_t opcode) {
  for (const TopRecord& r : top_records(bytes)) {
    if (r.opcode == opcode) return r;
  }
  FAIL("no record with opcode " << static_cast<int>(opcode));
  return {};
}

void put_u64_at(std::string& bytes, std::size_t offset, std::uint64_t value) {
  for (int i = 0; i < 8; ++i)
    bytes[offset + static_cast<std::size_t>(i)] = static_cast<char>((value >> (8 * i)) & 0xFF);
}

std::string hex32(std::uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", v);
  return text;
}

// Opens, iterates everything; returns how many messages came out.
std::size_t read_all(mcap::Reader& reader) {
  mcap::MessageView message;
  std::size_t n = 0;
  while (reader.next(message)) ++n;
  return n;
}

}  // namespace

TEST_CASE("mcap reader rejects what is not an MCAP file, saying why") {
  mcap::Reader reader;
  std::string error;
  CHECK_FALSE(reader.open_memory("", &error));
  CHECK(error.find("shorter than the 8-byte MCAP magic") != std::string::npos);
  CHECK_FALSE(reader.open_memory("hello, world", &error));
  CHECK(error.find("bad magic") != std::string::npos);
  CHECK_FALSE(reader.open_memory(std::string("\x89MCAP0\r\n", 8), &error));
  CHECK(error.find("header") != std::string::npos);
  CHECK_FALSE(reader.open(scratch_path("does-not-exist.mcap"), &error));
  CHECK(error.find("cannot open") != std::string::npos);
  CHECK_FALSE(reader.open(TETHER_BINARY_DIR, &error));
  CHECK(error.find("not a regular file") != std::string::npos);
  mcap::MessageView message;
  CHECK_FALSE(reader.next(message));
}

TEST_CASE("mcap reader: open() on a file and open_memory() agree") {
  std::vector<Expected> expected;
  const std::string bytes = small_recording(true, &expected, true);
  mcap::Reader from_file;
  mcap::Reader from_memory;
  std::string error;
  REQUIRE_MESSAGE(from_file.open(small_recording_path(true), &error), error);
  std::filesystem::remove(small_recording_path(true));  // the open descriptor keeps it readable
  REQUIRE_MESSAGE(from_memory.open_memory(bytes, &error), error);
  for (mcap::Reader* reader : {&from_file, &from_memory}) {
    const mcap::Info& info = reader->info();
    CHECK(info.message_count == expected.size());
    CHECK(info.chunk_count >= 3);
    CHECK(info.channel_message_counts.at(1) == 8);
    CHECK(info.channel_message_counts.at(2) == 4);
    CHECK(info.message_start_time_ns == 100);
    CHECK(info.message_end_time_ns == 111);
    CHECK(info.has_footer);
    CHECK(info.has_summary);
    CHECK_FALSE(info.truncated);
    CHECK(reader->channel(1)->metadata.at("unit") == "m");
    CHECK(reader->attachments().at(0).data == "ATTACHED");
    CHECK(reader->metadata().at(0).entries.at("id") == "7");
    mcap::MessageView message;
    std::size_t i = 0;
    while (reader->next(message)) {
      REQUIRE(i < expected.size());
      CHECK(message.channel_id == expected[i].channel_id);
      CHECK(message.log_time_ns == expected[i].log_time_ns);
      CHECK(std::string(reinterpret_cast<const char*>(message.data.data()), message.data.size()) == expected[i].data);
      ++i;
    }
    CHECK(i == expected.size());
  }
}

TEST_CASE("mcap reader: a file cut at any byte gives an error or the complete chunks before the cut") {
  for (const bool compress : {false, true}) {
    CAPTURE(compress);
    std::vector<Expected> expected;
    const std::string full = small_recording(compress, &expected);
    const std::size_t header_end = 8 + 9 + mcap::get_u64(reinterpret_cast<const std::uint8_t*>(full.data()) + 9);
    std::uint64_t previous_count = 0;
    std::size_t failures = 0;
    std::size_t wrong = 0;
    for (std::size_t cut = 0; cut <= full.size(); ++cut) {
      mcap::Reader reader;
      std::string error;
      const bool opened = reader.open_memory(full.substr(0, cut), &error);
      if (!opened) {
        // only a file without a complete header may be refused
        if (cut >= header_end || error.empty()) ++failures;
        continue;
      }
      const mcap::Info& info = reader.info();
      if (info.truncated != (cut < full.size())) ++wrong;
      if (info.truncated && info.truncated_at_offset > cut) ++wrong;
      if (info.message_count < previous_count) ++wrong;  // a longer prefix never loses messages
      previous_count = info.message_count;
      // the messages read are exactly the first message_count written
      mcap::MessageView message;
      std::size_t n = 0;
      while (reader.next(message)) {
        if (n >= expected.size() || message.log_time_ns != expected[n].log_time_ns) ++wrong;
        ++n;
      }
      if (n != info.message_count || !reader.error().empty()) ++wrong;
    }
    CHECK(failures == 0);
    CHECK(wrong == 0);
    CHECK(previous_count == expected.size());
  }
}

TEST_CASE("mcap reader: every single-byte corruption is reported, never crashes") {
  // run under ASan+UBSan in CI: any out-of-bounds read or overflow fails here
  for (const bool compress : {false, true}) {
    CAPTURE(compress);
    const std::string full = small_recording(compress);
    std::size_t undetected = 0;
    std::size_t opened = 0;
    for (std::size_t offset = 0; offset < full.size(); ++offset) {
      for (const unsigned flip : {0x01U, 0x80U, 0xFFU}) {
        std::string bytes = full;
        bytes[offset] = static_cast<char>(static_cast<unsigned char>(bytes[offset]) ^ flip);
        mcap::Reader reader;
        std::string error;
        if (!reader.open_memory(std::move(bytes), &error)) {
          if (error.empty()) ++undetected;
          continue;
        }
        ++opened;
        (void)read_all(reader);
        // with every byte under some CRC, a file that opens must at least be flagged
        if (!reader.info().truncated) {
          ++undetected;
          MESSAGE("undetected corruption at offset " << offset << " flip " << flip);
        }
      }
    }
    CHECK(undetected == 0);
    MESSAGE(std::string(compress ? "zstd" : "plain")
            << ": " << 3 * full.size() << " corruptions, " << opened << " opened as truncated");
  }
}

TEST_CASE("mcap reader: random multi-byte damage never crashes") {
  const std::string full = small_recording(true);
  std::uint32_t state = 12345;
  const auto next_random = [&] {
    state = state * 1664525U + 1013904223U;
    return state >> 8;
  };
  for (int round = 0; round < 3000; ++round) {
    std::string bytes = full;
    const int damage = 1 + static_cast<int>(next_random() % 8);
    for (int i = 0; i < damage; ++i) bytes[next_random() % bytes.size()] = static_cast<char>(next_random());
    if (round % 3 == 0) bytes.resize(next_random() % bytes.size());
    for (const bool verify : {true, false}) {
      mcap::ReaderOptions options;
      options.verify_crcs = verify;
      options.max_chunk_bytes = 1 << 16;
      mcap::Reader reader(options);
      std::string error;
      if (reader.open_memory(bytes, &error)) {
        (void)read_all(reader);
      } else {
        CHECK_FALSE(error.empty());
      }
    }
  }
}

TEST_CASE("mcap reader: chunk CRC mismatch names the chunk, its offset and both CRCs") {
  std::string bytes = small_recording(false);
  const std::size_t target = bytes.find("PAYLOAD4");
  REQUIRE(target != std::string::npos);
  // the chunk holding PAYLOAD4 is the last chunk starting before it
  TopRecord chunk{};
  for (const TopRecord& r : top_records(bytes)) {
    if (r.opcode == 0x06 && r.offset < target) chunk = r;
  }
  REQUIRE(chunk.opcode == 0x06);
  const std::uint32_t stored =
      mcap::get_u32(reinterpret_cast<const std::uint8_t*>(bytes.data()) + chunk.offset + 9 + 24);
  bytes[target + 7] = 'X';
  const std::size_t records_at = chunk.offset + 9 + 8 + 8 + 8 + 4 + 4 + 8;
  const std::string records = bytes.substr(records_at, chunk.offset + 9 + chunk.length - records_at);
  const std::uint32_t computed = mcap::crc32(0, records.data(), records.size());

  mcap::Reader reader;
  std::string error;
  CHECK_FALSE(reader.open_memory(bytes, &error));
  CHECK(error == "chunk at offset " + std::to_string(chunk.offset) + ": CRC mismatch (stored " + hex32(stored) +
                     ", computed " + hex32(computed) + ")");

  // without CRC checks the damage reaches the caller untouched
  mcap::ReaderOptions options;
  options.verify_crcs = false;
  mcap::Reader lenient(options);
  REQUIRE(lenient.open_memory(bytes, &error));
  mcap::MessageView message;
  bool seen = false;
  while (lenient.next(message)) {
    seen |= std::string(reinterpret_cast<const char*>(message.data.data()), message.data.size()) == "PAYLOADX";
  }
  CHECK(seen);
}

TEST_CASE("mcap reader: attachment, data section and summary CRCs are checked") {
  const std::string good = small_recording(false);
  mcap::Reader reader;
  std::string error;

  std::string bytes = good;
  bytes[bytes.find("ATTACHED")] = 'a';
  CHECK_FALSE(reader.open_memory(bytes, &error));
  CHECK(error.find("attachment at offset " + std::to_string(first_record(good, 0x09).offset) +
                   ": attachment \"notes.txt\": CRC mismatch") != std::string::npos);

  // metadata is covered only by the Data End CRC
  bytes = good;
  bytes[bytes.find("run")] = 'R';
  CHECK_FALSE(reader.open_memory(bytes, &error));
  CHECK(error.find("data end at offset " + std::to_string(first_record(good, 0x0F).offset) +
                   ": data section CRC mismatch (stored 0x") != std::string::npos);

  // the statistics record sits under the summary CRC
  bytes = good;
  const TopRecord statistics = first_record(good, 0x0B);
  bytes[statistics.offset + 9] ^= 1;  // message_count
  CHECK_FALSE(reader.open_memory(bytes, &error));
  CHECK(error.find("footer at offset") != std::string::npos);
  CHECK(error.find("summary CRC mismatch") != std::string::npos);

  // and, CRCs aside, must agree with the data
  mcap::ReaderOptions options;
  options.verify_crcs = false;
  mcap::Reader lenient(options);
  CHECK_FALSE(lenient.open_memory(bytes, &error));
  CHECK(error ==
        "statistics at offset " + std::to_string(statistics.offset) + ": message_count is 13 but the file holds 12");
}

TEST_CASE("mcap reader rejects absurd lengths before allocating") {
  const std::string good = small_recording(false);
  const TopRecord chunk = first_record(good, 0x06);
  mcap::Reader reader;
  std::string error;

  std::string bytes = good;
  put_u64_at(bytes, chunk.offset + 9 + 16, std::uint64_t{1} << 62);  // uncompressed_size
  CHECK_FALSE(reader.open_memory(bytes, &error));
  CHECK(error.find("chunk at offset " + std::to_string(chunk.offset) +
                   ": uncompressed_size 4611686018427387904 "
                   "exceeds the reader's limit") != std::string::npos);

  // a records length past the end of the chunk record
  bytes = good;
  put_u64_at(bytes, chunk.offset + 9 + 32, std::uint64_t{1} << 40);
  CHECK_FALSE(reader.open_memory(bytes, &error));
  CHECK(error.find("field 'records' needs 1099511627776 bytes") != std::string::npos);

  // a record length past the end of the file reads as a cut file, not a crash
  bytes = good;
  put_u64_at(bytes, chunk.offset + 1, ~std::uint64_t{0});
  REQUIRE(reader.open_memory(bytes, &error));
  CHECK(reader.info().truncated);
  CHECK(reader.info().truncated_at_offset == chunk.offset);
  CHECK(reader.info().message_count == 0);

  // a zstd chunk whose frame disagrees with uncompressed_size
  const std::string zstd = small_recording(true);
  const TopRecord zchunk = first_record(zstd, 0x06);
  bytes = zstd;
  const std::uint64_t size =
      mcap::get_u64(reinterpret_cast<const std::uint8_t*>(bytes.data()) + zchunk.offset + 9 + 16);
  put_u64_at(bytes, zchunk.offset + 9 + 16, size + 1);
  CHECK_FALSE(reader.open_memory(bytes, &error));
  CHECK(error.find("zstd frame holds") != std::string::npos);
}

TEST_CASE("mcap reader follows the spec beyond what our writer emits") {
  // messages outside chunks, an unknown extension record, no summary
  std::string f(reinterpret_cast<const char*>(mcap::kMagic.data()), mcap::kMagic.size());
  std::vector<std::uint8_t> r;
  const auto record = [&](std::uint8_t opcode) {
    std::vector<std::uint8_t> out;
    mcap::put_u8(out, opcode);
    mcap::put_u64(out, r.size());
    mcap::put_bytes(out, r.data(), r.size());
    f.append(out.begin(), out.end());
    r.clear();
  };
  mcap::put_string(r, "");
  mcap::put_string(r, "hand");
  record(0x01);
  mcap::put_u16(r, 4);
  mcap::put_u16(r, 0);
  mcap::put_string(r, "/loose");
  mcap::put_string(r, "json");
  mcap::put_string_map(r, {});
  record(0x04);
  mcap::put_string(r, "ignored by readers that do not know opcode 0x80");
  record(0x80);
  mcap::put_u16(r, 4);
  mcap::put_u32(r, 1);
  mcap::put_u64(r, 50);
  mcap::put_u64(r, 49);
  mcap::put_bytes(r, "{}", 2);
  record(0x05);
  mcap::put_u32(r, 0);  // no data section CRC
  record(0x0F);
  mcap::put_u64(r, 0);
  mcap::put_u64(r, 0);
  mcap::put_u32(r, 0);
  record(0x02);
  f.append(reinterpret_cast<const char*>(mcap::kMagic.data()), mcap::kMagic.size());

  mcap::Reader reader;
  std::string error;
  REQUIRE_MESSAGE(reader.open_memory(f, &error), error);
  CHECK(reader.header().library == "hand");
  CHECK(reader.info().has_footer);
  CHECK_FALSE(reader.info().has_summary);
  CHECK(reader.info().chunk_count == 0);
  mcap::MessageView message;
  REQUIRE(reader.next(message));
  CHECK(message.channel_id == 4);
  CHECK(message.publish_time_ns == 49);
  CHECK(message.data.size() == 2);
  CHECK_FALSE(reader.next(message));

  // a message on a channel nobody defined
  std::string bad = f;
  bad[bad.find("{}") - 22] = 5;  // channel_id of the message
  CHECK_FALSE(reader.open_memory(bad, &error));
  CHECK(error.find("message on channel 5, which was not defined before it") != std::string::npos);
}
