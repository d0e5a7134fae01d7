// SPDX-License-Identifier: Apache-2.0
#include "tether/recording/mcap_writer.hpp"

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "test_paths.hpp"
#include "tether/recording/foxglove_schemas.hpp"
#include "tether/recording/mcap_reader.hpp"
#include "tether/recording/protobuf.hpp"
#include "tether/recording/recording.hpp"

namespace mcap = tether::runtime::mcap;

namespace {

std::string output_path(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(TETHER_BINARY_DIR) / "test_output" / "mcap";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Expected bytes, spelled out field by field as the spec lays them out.
struct Bytes {
  std::string b;
  Bytes& u8(unsigned v) {
    b += static_cast<char>(v);
    return *this;
  }
  Bytes& u16(std::uint16_t v) { return u8(v & 0xFF).u8(v >> 8); }
  Bytes& u32(std::uint32_t v) {
    for (int i = 0; i < 4; ++i) u8((v >> (8 * i)) & 0xFF);
    return *this;
  }
  Bytes& u64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) u8(static_cast<unsigned>((v >> (8 * i)) & 0xFF));
    return *this;
  }
  Bytes& raw(const std::string& s) {
    b += s;
    return *this;
  }
  Bytes& str(const std::string& s) { return u32(static_cast<std::uint32_t>(s.size())).raw(s); }
  Bytes& magic() { return u8(0x89).raw("MCAP").u8(0x30).raw("\r\n"); }
  Bytes& record(unsigned opcode, const Bytes& content) { return u8(opcode).u64(content.b.size()).raw(content.b); }
};

std::uint32_t crc_of(const std::string& s) { return mcap::crc32(0, s.data(), s.size()); }

// Where the first difference is, so a layout failure reads as an offset.
void check_same_bytes(const std::string& actual, const std::string& expected) {
  CHECK(actual.size() == expected.size());
  const std::size_t n = std::min(actual.size(), expected.size());
  std::size_t first = n;
  for (std::size_t i = 0; i < n; ++i) {
    if (actual[i] != expected[i]) {
      first = i;
      break;
    }
  }
  INFO("first differing byte at offset " << first);
  CHECK(first == n);
}

bool node_available() {
  if (std::getenv("TETHER_SKIP_NODE_VALIDATION") != nullptr) return false;
  return std::system("command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1") == 0;
}

int run_node_validation(const std::string& args) {
  const std::string command = std::string("TETHER_BINARY_DIR='") + TETHER_BINARY_DIR + "' bash '" +
                              TETHER_SOURCE_DIR + "/tests/mcap_validate/run.sh' " + args;
  MESSAGE("running " << command);
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

struct SentMessage {
  std::uint16_t channel_id;
  std::uint32_t sequence;
  std::uint64_t log_time_ns;
  std::uint64_t publish_time_ns;
  std::string data;
};

// A recording with several schemas, many channels, chunks, metadata and attachments.
std::vector<SentMessage> write_sample(const std::string& path, bool compress, std::size_t chunk_size_bytes,
                                      int message_count) {
  mcap::WriterOptions options;
  options.profile = "x-tether";
  options.compress = compress;
  options.chunk_size_bytes = chunk_size_bytes;
  mcap::Writer writer;
  std::string error;
  REQUIRE(writer.open(path, options, &error));
  const std::uint16_t s_state = writer.add_schema("tether.State", "jsonschema", R"({"type":"object"})");
  const std::uint16_t s_reply = writer.add_schema("tether.Reply", "jsonschema", R"({"type":"array"})");
  writer.add_metadata("scenario", {{"file", "scenario.yaml"}, {"seed", "42"}});
  std::vector<std::uint16_t> channels;
  for (int i = 0; i < 24; ++i) {
    const std::uint16_t schema = i % 3 == 0 ? 0 : (i % 3 == 1 ? s_state : s_reply);
    channels.push_back(writer.add_channel(schema, "/vehicle" + std::to_string(i % 4) + "/topic" + std::to_string(i),
                                          schema == 0 ? "application/octet-stream" : "json",
                                          {{"index", std::to_string(i)}}));
  }
  writer.add_attachment("scenario.yaml", "text/yaml", 5, 1, "world:\n  gravity: 9.81\n");
  std::vector<SentMessage> sent;
  for (int i = 0; i < message_count; ++i) {
    const std::uint16_t channel = channels[static_cast<std::size_t>(i * 7 % 24)];
    std::string payload =
        "{\"step\":" + std::to_string(i) + ",\"pad\":\"" + std::string(static_cast<std::size_t>(i % 97), 'x') + "\"}";
    const std::uint64_t t = 1'000'000'000ULL + static_cast<std::uint64_t>(i) * 1'000'000ULL;
    writer.write(channel, static_cast<std::uint32_t>(i), t, t - 5, payload);
    sent.push_back({channel, static_cast<std::uint32_t>(i), t, t - 5, std::move(payload)});
    if (i == message_count / 2) writer.add_metadata("halfway", {{"step", std::to_string(i)}});
  }
  writer.add_attachment("empty.bin", "application/octet-stream", 7, 0, "");
  REQUIRE(writer.close(&error));
  return sent;
}

}  // namespace

TEST_CASE("mcap crc32 is the IEEE CRC-32 and chains") {
  CHECK(mcap::crc32(0, "123456789", 9) == 0xCBF43926U);
  CHECK(mcap::crc32(0, "", 0) == 0U);
  CHECK(mcap::crc32(mcap::crc32(0, "1234", 4), "56789", 5) == 0xCBF43926U);
}

TEST_CASE("mcap writer lays out every record as the spec says, byte by byte") {
  const std::string path = output_path("layout.mcap");
  mcap::WriterOptions options;
  options.profile = "x-test";
  options.library = "lib";
  options.compress = false;
  mcap::Writer writer;
  std::string error;
  REQUIRE(writer.open(path, options, &error));
  CHECK(writer.add_schema("S", "jsonschema", "{}") == 1);
  CHECK(writer.add_channel(1, "/t", "json", {{"k", "v"}}) == 1);
  writer.write(1, 7, 100, 90, std::string_view("hi"));
  writer.flush_chunk();

  // magic, header, schema, channel, one uncompressed chunk and its message index
  Bytes header;
  header.str("x-test").str("lib");
  Bytes schema;
  schema.u16(1).str("S").str("jsonschema").str("{}");
  Bytes channel;
  channel.u16(1).u16(1).str("/t").str("json").u32(10).str("k").str("v");
  Bytes message;
  message.u16(1).u32(7).u64(100).u64(90).raw("hi");
  Bytes records;
  records.record(0x05, message);
  Bytes chunk;
  chunk.u64(100).u64(100).u64(records.b.size()).u32(crc_of(records.b)).str("").u64(records.b.size()).raw(records.b);
  Bytes index;
  index.u16(1).u32(16).u64(100).u64(0);

  Bytes file;
  file.magic().record(0x01, header).record(0x03, schema).record(0x04, channel);
  const std::uint64_t chunk_offset = file.b.size();
  file.record(0x06, chunk);
  const std::uint64_t chunk_length = file.b.size() - chunk_offset;
  const std::uint64_t index_offset = file.b.size();
  file.record(0x07, index);
  const std::uint64_t index_length = file.b.size() - index_offset;

  CHECK(header.b.size() == 17);
  CHECK(schema.b.size() == 27);
  CHECK(channel.b.size() == 32);
  CHECK(message.b.size() == 24);
  CHECK(writer.bytes_written() == file.b.size());
  // flush_chunk() put it all on disk already
  check_same_bytes(slurp(path), file.b);

  REQUIRE(writer.close(&error));

  // Data End, then the summary: schemas, channels, statistics, chunk indexes
  file.record(0x0F, Bytes().u32(crc_of(file.b)));
  const std::uint64_t summary_start = file.b.size();
  Bytes summary;
  summary.record(0x03, schema);
  const std::uint64_t channels_start = summary_start + summary.b.size();
  summary.record(0x04, channel);
  const std::uint64_t statistics_start = summary_start + summary.b.size();
  Bytes statistics;
  statistics.u64(1).u16(1).u32(1).u32(0).u32(0).u32(1).u64(100).u64(100).u32(10).u16(1).u64(1);
  summary.record(0x0B, statistics);
  const std::uint64_t chunk_indexes_start = summary_start + summary.b.size();
  Bytes chunk_index;
  chunk_index.u64(100)
      .u64(100)
      .u64(chunk_offset)
      .u64(chunk_length)
      .u32(10)
      .u16(1)
      .u64(index_offset)
      .u64(index_length)
      .str("")
      .u64(records.b.size())
      .u64(records.b.size());
  summary.record(0x08, chunk_index);
  const std::uint64_t summary_offset_start = summary_start + summary.b.size();
  Bytes offsets;
  offsets.record(0x0E, Bytes().u8(0x03).u64(summary_start).u64(channels_start - summary_start));
  offsets.record(0x0E, Bytes().u8(0x04).u64(channels_start).u64(statistics_start - channels_start));
  offsets.record(0x0E, Bytes().u8(0x0B).u64(statistics_start).u64(chunk_indexes_start - statistics_start));
  offsets.record(0x0E, Bytes().u8(0x08).u64(chunk_indexes_start).u64(summary_offset_start - chunk_indexes_start));
  Bytes footer_head;
  footer_head.u8(0x02).u64(20).u64(summary_start).u64(summary_offset_start);
  const std::string summary_crc_input = summary.b + offsets.b + footer_head.b;
  file.raw(summary.b).raw(offsets.b).raw(footer_head.b).u32(crc_of(summary_crc_input)).magic();

  CHECK(statistics.b.size() == 56);
  CHECK(chunk_index.b.size() == 74);
  check_same_bytes(slurp(path), file.b);
}

TEST_CASE("mcap writer: zstd chunk decompresses to the same records and CRC") {
  const std::string path = output_path("layout_zstd.mcap");
  mcap::WriterOptions options;
  options.compress = true;
  mcap::Writer writer;
  std::string error;
  REQUIRE(writer.open(path, options, &error));
  const std::uint16_t channel = writer.add_channel(0, "/raw", "application/octet-stream");
  CHECK(channel == 1);
  for (std::uint32_t i = 0; i < 50; ++i) writer.write(channel, i, 1000 + i, 1000 + i, std::string(64, 'a'));
  REQUIRE(writer.close(&error));

  const std::string bytes = slurp(path);
  // header(""/"tether") then channel: find the chunk by walking the records
  std::size_t pos = 8;
  while (pos + 9 <= bytes.size() && static_cast<unsigned char>(bytes[pos]) != 0x06) {
    pos += 9 + mcap::get_u64(reinterpret_cast<const std::uint8_t*>(bytes.data()) + pos + 1);
  }
  REQUIRE(pos + 9 <= bytes.size());
  const auto* p = reinterpret_cast<const std::uint8_t*>(bytes.data()) + pos + 9;
  CHECK(mcap::get_u64(p) == 1000);      // message_start_time
  CHECK(mcap::get_u64(p + 8) == 1049);  // message_end_time
  const std::uint64_t uncompressed_size = mcap::get_u64(p + 16);
  const std::uint32_t crc = mcap::get_u32(p + 24);
  CHECK(mcap::get_u32(p + 28) == 4);
  CHECK(std::string(reinterpret_cast<const char*>(p + 32), 4) == "zstd");
  const std::uint64_t compressed_size = mcap::get_u64(p + 36);
  CHECK(compressed_size < uncompressed_size);
  CHECK(uncompressed_size == 50 * (9 + 22 + 64));
  std::string records(uncompressed_size, '\0');
  const std::size_t n = ZSTD_decompress(records.data(), records.size(), p + 44, compressed_size);
  REQUIRE(ZSTD_isError(n) == 0U);
  CHECK(n == uncompressed_size);
  CHECK(crc_of(records) == crc);
  CHECK(static_cast<unsigned char>(records[0]) == 0x05);
}

TEST_CASE("mcap writer: metadata and attachment records") {
  const std::string path = output_path("layout_attachment.mcap");
  mcap::WriterOptions options;
  options.library = "";
  mcap::Writer writer;
  std::string error;
  REQUIRE(writer.open(path, options, &error));
  writer.add_metadata("run", {{"a", "1"}, {"b", "22"}});
  writer.add_attachment("cal.txt", "text/plain", 11, 3, "abc");
  REQUIRE(writer.close(&error));

  Bytes metadata;
  metadata.str("run").u32(4 + 1 + 4 + 1 + 4 + 1 + 4 + 2).str("a").str("1").str("b").str("22");
  Bytes attachment;
  attachment.u64(11).u64(3).str("cal.txt").str("text/plain").u64(3).raw("abc");
  attachment.u32(crc_of(attachment.b));
  Bytes expected;
  expected.magic().record(0x01, Bytes().str("").str("")).record(0x0C, metadata).record(0x09, attachment);
  const std::string bytes = slurp(path);
  REQUIRE(bytes.size() > expected.b.size());
  check_same_bytes(bytes.substr(0, expected.b.size()), expected.b);
}

TEST_CASE("mcap writer reports misuse and I/O errors") {
  mcap::Writer writer;
  std::string error;
  CHECK_FALSE(writer.open("/nonexistent-dir/x.mcap", {}, &error));
  CHECK(error.find("/nonexistent-dir/x.mcap") != std::string::npos);

  REQUIRE(writer.open(output_path("misuse.mcap"), {}, &error));
  CHECK(writer.add_channel(9, "/t", "json") == 0);  // unknown schema
  const std::uint16_t channel = writer.add_channel(0, "/t", "json");
  writer.write(static_cast<std::uint16_t>(channel + 1), 0, 1, 1, std::string_view("x"));
  CHECK_FALSE(writer.ok());
  CHECK_FALSE(writer.close(&error));
  CHECK(error.find("unknown schema id 9") != std::string::npos);  // the first error wins

  // the file itself is still complete and readable
  mcap::Reader reader;
  CHECK(reader.open(output_path("misuse.mcap"), &error));
  CHECK(reader.info().has_footer);
}

TEST_CASE("mcap writer -> reader round trip, compressed and uncompressed, many chunks") {
  for (const bool compress : {true, false}) {
    CAPTURE(compress);
    const std::string path = output_path(compress ? "roundtrip_zstd.mcap" : "roundtrip_plain.mcap");
    const std::vector<SentMessage> sent = write_sample(path, compress, 16 * 1024, 3000);

    mcap::Reader reader;
    std::string error;
    REQUIRE_MESSAGE(reader.open(path, &error), error);
    const mcap::Info& info = reader.info();
    CHECK(reader.header().profile == "x-tether");
    CHECK(reader.header().library == "tether");
    CHECK(info.message_count == sent.size());
    CHECK(info.chunk_count > 5);
    CHECK(info.has_data_end);
    CHECK(info.has_summary);
    CHECK(info.has_statistics);
    CHECK(info.has_footer);
    CHECK_FALSE(info.truncated);
    CHECK(info.message_start_time_ns == sent.front().log_time_ns);
    CHECK(info.message_end_time_ns == sent.back().log_time_ns);
    CHECK(info.channel_message_counts.size() == 24);
    CHECK(info.file_size_bytes == std::filesystem::file_size(path));
    if (compress) CHECK(info.chunk_compressed_bytes < info.chunk_uncompressed_bytes);
    if (!compress) CHECK(info.chunk_compressed_bytes == info.chunk_uncompressed_bytes);

    REQUIRE(reader.schemas().size() == 2);
    CHECK(reader.schema(1)->name == "tether.State");
    CHECK(reader.schema(2)->data == R"({"type":"array"})");
    REQUIRE(reader.channels().size() == 24);
    CHECK(reader.channel(1)->schema_id == 0);
    CHECK(reader.channel(2)->schema_id == 1);
    CHECK(reader.channel(24)->topic == "/vehicle3/topic23");
    CHECK(reader.channel(24)->metadata.at("index") == "23");
    REQUIRE(reader.metadata().size() == 2);
    CHECK(reader.metadata()[0].name == "scenario");
    CHECK(reader.metadata()[0].entries.at("seed") == "42");
    CHECK(reader.metadata()[1].name == "halfway");
    REQUIRE(reader.attachments().size() == 2);
    CHECK(reader.attachments()[0].name == "scenario.yaml");
    CHECK(reader.attachments()[0].data == "world:\n  gravity: 9.81\n");
    CHECK(reader.attachments()[0].log_time_ns == 5);
    CHECK(reader.attachments()[0].create_time_ns == 1);
    CHECK(reader.attachments()[1].data.empty());

    mcap::MessageView message;
    std::size_t i = 0;
    std::size_t mismatches = 0;
    while (reader.next(message)) {
      REQUIRE(i < sent.size());
      const SentMessage& s = sent[i++];
      const std::string data(reinterpret_cast<const char*>(message.data.data()), message.data.size());
      if (message.channel_id != s.channel_id || message.sequence != s.sequence ||
          message.log_time_ns != s.log_time_ns || message.publish_time_ns != s.publish_time_ns || data != s.data) {
        ++mismatches;
      }
    }
    CHECK(reader.error().empty());
    CHECK(i == sent.size());
    CHECK(mismatches == 0);

    // rewind() replays the same messages
    reader.rewind();
    std::size_t again = 0;
    while (reader.next(message)) ++again;
    CHECK(again == sent.size());
  }
}

TEST_CASE("mcap writer: a SIGKILLed recorder leaves every flushed chunk readable") {
  const std::string path = output_path("killed.mcap");
  constexpr int kFlushed = 700;
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // the recorder: flush once, keep writing, then die without a footer
    mcap::WriterOptions options;
    options.chunk_size_bytes = 1 << 24;  // no automatic flush after the explicit one
    mcap::Writer writer;
    std::string error;
    if (!writer.open(path, options, &error)) ::_exit(1);
    const std::uint16_t schema = writer.add_schema("s", "jsonschema", "{}");
    const std::uint16_t channel = writer.add_channel(schema, "/state", "json");
    for (int i = 0; i < kFlushed; ++i)
      writer.write(channel, static_cast<std::uint32_t>(i), 10 + i, 10 + i, "{\"x\":1}");
    writer.flush_chunk();
    const std::uint16_t late = writer.add_channel(schema, "/late", "json");
    for (int i = 0; i < 5000; ++i) writer.write(late, static_cast<std::uint32_t>(i), 10000 + i, 10000 + i, "{\"y\":2}");
    ::raise(SIGKILL);
    ::_exit(2);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);

  mcap::Reader reader;
  std::string error;
  REQUIRE_MESSAGE(reader.open(path, &error), error);
  CHECK(reader.info().truncated);
  CHECK_FALSE(reader.info().has_footer);
  CHECK(reader.info().message_count == kFlushed);
  CHECK(reader.info().chunk_count == 1);
  mcap::MessageView message;
  int n = 0;
  while (reader.next(message)) ++n;
  CHECK(n == kFlushed);

  if (node_available()) {
    CHECK(run_node_validation("--truncated --expect-messages=" + std::to_string(kFlushed) + " '" + path + "'") == 0);
  }
}

TEST_CASE("mcap writer output is accepted by the reference @mcap/core readers") {
  if (!node_available()) {
    MESSAGE("node/npm not found (or TETHER_SKIP_NODE_VALIDATION set): skipping @mcap/core validation");
    return;
  }
  const std::string zstd_path = output_path("node_zstd.mcap");
  const std::string plain_path = output_path("node_plain.mcap");
  const std::string empty_path = output_path("node_empty.mcap");
  write_sample(zstd_path, true, 8 * 1024, 2000);
  write_sample(plain_path, false, 8 * 1024, 2000);
  {
    mcap::Writer writer;
    std::string error;
    REQUIRE(writer.open(empty_path, {}, &error));
    REQUIRE(writer.close(&error));
  }
  CHECK(run_node_validation("'" + zstd_path + "' '" + plain_path + "'") == 0);
  CHECK(run_node_validation("--expect-messages=0 '" + empty_path + "'") == 0);

  // cut in the middle of the last chunk: the stream reader still reads the earlier ones
  const std::string full = slurp(zstd_path);
  mcap::Reader reader;
  std::string error;
  REQUIRE(reader.open(zstd_path, &error));
  const std::string cut_path = output_path("node_cut.mcap");
  {
    // back from the Data End to the middle of the chunk before it
    std::size_t pos = 8;
    std::size_t last_chunk = 0;
    const auto* p = reinterpret_cast<const std::uint8_t*>(full.data());
    while (pos + 9 <= full.size() && p[pos] != 0x0F) {
      if (p[pos] == 0x06) last_chunk = pos;
      pos += 9 + mcap::get_u64(p + pos + 1);
    }
    REQUIRE(last_chunk > 0);
    std::ofstream(cut_path, std::ios::binary) << full.substr(0, last_chunk + 100);
  }
  mcap::Reader cut;
  REQUIRE(cut.open(cut_path, &error));
  CHECK(cut.info().truncated);
  CHECK(cut.info().message_count > 0);
  CHECK(cut.info().message_count < reader.info().message_count);
  CHECK(run_node_validation("--truncated --expect-messages=" + std::to_string(cut.info().message_count) + " '" +
                            cut_path + "'") == 0);
}

TEST_CASE("the Foxglove check decodes every channel as Foxglove would, and refuses what it could not show") {
  if (!node_available()) {
    MESSAGE("node/npm not found (or TETHER_SKIP_NODE_VALIDATION set): skipping the Foxglove check");
    return;
  }
  using namespace tether::runtime;
  const std::string pose_ok = R"({"timestamp":{"sec":1,"nsec":0},"frame_id":"world","pose":{"position":)"
                              R"({"x":1,"y":2,"z":3},"orientation":{"x":0,"y":0,"z":0,"w":1}}})";
  WorldState state;
  state.step = 3;
  state.bodies.resize(1);
  std::string state_bytes;
  encode_state(state, state_bytes);
  // one file per case: a schema for the pose channel, the pose message, the protobuf message
  auto write = [&](const std::string& name, const std::string& pose_schema, const std::string& pose,
                   const std::string& binary_encoding, const std::string& binary,
                   const std::string& schema_encoding = "protobuf") {
    const std::string path = output_path("foxglove_" + name + ".mcap");
    mcap::Writer w;
    std::string error;
    REQUIRE(w.open(path, {}, &error));
    const auto ps = w.add_schema("foxglove.PoseInFrame", "jsonschema", pose_schema);
    const auto pc = w.add_channel(ps, "/pose", "json");
    const auto bs = schema_encoding == "protobuf" ? w.add_schema("tether.WorldState", "protobuf", pb::descriptor_set())
                                                  : w.add_schema("tether.WorldState", schema_encoding, "our layout");
    const auto bc = w.add_channel(bs, "/tether/state", binary_encoding);
    w.write(pc, 0, 10, 10, pose);
    w.write(bc, 1, 10, 10, binary);
    REQUIRE(w.close(&error));
    return "--foxglove '" + path + "'";
  };
  const std::string official(foxglove_schema("foxglove.PoseInFrame"));
  REQUIRE_FALSE(official.empty());
  CHECK(run_node_validation(write("ok", official, pose_ok, "protobuf", state_bytes)) == 0);
  // a PoseInFrame without its pose fails the official schema
  CHECK(run_node_validation(write("no_pose", official, R"({"timestamp":{"sec":1,"nsec":0},"frame_id":"world"})",
                                  "protobuf", state_bytes)) == 1);
  // a trimmed copy of the schema is not the published one
  CHECK(run_node_validation(write("trimmed", R"({"title":"foxglove.PoseInFrame","type":"object"})", pose_ok, "protobuf",
                                  state_bytes)) == 1);
  // an encoding of our own, as recordings before format 2 had, and a schema with data but no
  // encoding (the MCAP specification says a schema without an encoding has no data)
  CHECK(run_node_validation(write("own_encoding", official, pose_ok, "x-tether-binary", state_bytes, "x-tether")) == 1);
  CHECK(run_node_validation(write("no_schema_encoding", official, pose_ok, "protobuf", state_bytes, "")) == 1);
  // protobuf bytes that do not decode (a length past the end)
  CHECK(run_node_validation(write("bad_protobuf", official, pose_ok, "protobuf", std::string("\x1a\x7f\x01", 3))) == 1);
}
