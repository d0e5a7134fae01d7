// SPDX-License-Identifier: Apache-2.0
#include "tether/recording/mcap_reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <set>
#include <utility>

namespace tether::runtime::mcap {
namespace {

using Bytes = std::span<const std::uint8_t>;

[[gnu::format(printf, 1, 2)]] std::string format(const char* pattern, ...) {
  char text[512];
  va_list args;
  va_start(args, pattern);
  std::vsnprintf(text, sizeof text, pattern, args);
  va_end(args);
  return text;
}

unsigned long long ull(std::uint64_t value) { return static_cast<unsigned long long>(value); }

// strings from a damaged file go into error messages: keep them short and printable
std::string printable(std::string_view text) {
  std::string out;
  for (const char c : text.substr(0, 40)) out += (c >= 0x20 && c < 0x7F) ? c : '?';
  if (text.size() > 40) out += "...";
  return out;
}

std::string at(const char* what, std::uint64_t offset) { return format("%s at offset %llu", what, ull(offset)); }

std::string at(std::uint8_t opcode, std::uint64_t offset) { return at(opcode_name(opcode).c_str(), offset); }

// Bounds-checked little-endian cursor over one record's content. Every read
// names the field, so a failure reads "field 'topic' needs 1000 bytes, 12 left".
class Cursor {
 public:
  explicit Cursor(Bytes data) : data_(data) {}

  std::size_t remaining() const { return data_.size() - pos_; }
  const std::string& why() const { return why_; }

  bool u8(std::uint8_t& out, const char* field) {
    if (!need(1, field)) return false;
    out = data_[pos_];
    pos_ += 1;
    return true;
  }
  bool u16(std::uint16_t& out, const char* field) {
    if (!need(2, field)) return false;
    out = get_u16(data_.data() + pos_);
    pos_ += 2;
    return true;
  }
  bool u32(std::uint32_t& out, const char* field) {
    if (!need(4, field)) return false;
    out = get_u32(data_.data() + pos_);
    pos_ += 4;
    return true;
  }
  bool u64(std::uint64_t& out, const char* field) {
    if (!need(8, field)) return false;
    out = get_u64(data_.data() + pos_);
    pos_ += 8;
    return true;
  }
  bool bytes(std::uint64_t size, Bytes& out, const char* field) {
    if (!need(size, field)) return false;
    out = data_.subspan(pos_, static_cast<std::size_t>(size));
    pos_ += static_cast<std::size_t>(size);
    return true;
  }
  // uint32 length-prefixed bytes (String, schema data, arrays and maps)
  bool prefixed(Bytes& out, const char* field) {
    std::uint32_t size = 0;
    return u32(size, field) && bytes(size, out, field);
  }
  bool string(std::string& out, const char* field) {
    Bytes b;
    if (!prefixed(b, field)) return false;
    out.assign(reinterpret_cast<const char*>(b.data()), b.size());
    return true;
  }
  bool string_view(std::string_view& out, const char* field) {
    Bytes b;
    if (!prefixed(b, field)) return false;
    out = std::string_view(reinterpret_cast<const char*>(b.data()), b.size());
    return true;
  }
  bool rest(Bytes& out) {
    out = data_.subspan(pos_);
    pos_ = data_.size();
    return true;
  }
  bool string_map(std::map<std::string, std::string>& out, const char* field) {
    Bytes b;
    if (!prefixed(b, field)) return false;
    Cursor inner(b);
    while (inner.remaining() > 0) {
      std::string key;
      std::string value;
      if (!inner.string(key, "key") || !inner.string(value, "value")) return inner_failed(inner, field);
      out[std::move(key)] = std::move(value);
    }
    return true;
  }
  bool u16_u64_map(std::map<std::uint16_t, std::uint64_t>& out, const char* field) {
    Bytes b;
    if (!prefixed(b, field)) return false;
    Cursor inner(b);
    while (inner.remaining() > 0) {
      std::uint16_t key = 0;
      std::uint64_t value = 0;
      if (!inner.u16(key, "key") || !inner.u64(value, "value")) return inner_failed(inner, field);
      out[key] = value;
    }
    return true;
  }

 private:
  bool need(std::uint64_t size, const char* field) {
    if (size <= remaining()) return true;
    why_ = format("field '%s' needs %llu bytes, %llu left in the record", field, ull(size), ull(remaining()));
    return false;
  }
  bool inner_failed(const Cursor& inner, const char* field) {
    why_ = std::string("in '") + field + "': " + inner.why();
    return false;
  }

  Bytes data_;
  std::size_t pos_ = 0;
  std::string why_;
};

bool parse_header(Bytes content, Header& out, std::string& why) {
  Cursor c(content);
  if (c.string(out.profile, "profile") && c.string(out.library, "library")) return true;
  why = c.why();
  return false;
}

bool parse_schema(Bytes content, Schema& out, std::string& why) {
  Cursor c(content);
  if (c.u16(out.id, "id") && c.string(out.name, "name") && c.string(out.encoding, "encoding") &&
      c.string(out.data, "data")) {
    return true;
  }
  why = c.why();
  return false;
}

bool parse_channel(Bytes content, Channel& out, std::string& why) {
  Cursor c(content);
  if (c.u16(out.id, "id") && c.u16(out.schema_id, "schema_id") && c.string(out.topic, "topic") &&
      c.string(out.message_encoding, "message_encoding") && c.string_map(out.metadata, "metadata")) {
    return true;
  }
  why = c.why();
  return false;
}

bool parse_message(Bytes content, MessageView& out, std::string& why) {
  Cursor c(content);
  Bytes data;
  if (c.u16(out.channel_id, "channel_id") && c.u32(out.sequence, "sequence") && c.u64(out.log_time_ns, "log_time") &&
      c.u64(out.publish_time_ns, "publish_time") && c.rest(data)) {
    out.data = std::as_bytes(data);
    return true;
  }
  why = c.why();
  return false;
}

bool parse_metadata(Bytes content, Metadata& out, std::string& why) {
  Cursor c(content);
  if (c.string(out.name, "name") && c.string_map(out.entries, "metadata")) return true;
  why = c.why();
  return false;
}

struct Statistics {
  std::uint64_t message_count = 0;
  std::uint16_t schema_count = 0;
  std::uint32_t channel_count = 0;
  std::uint32_t attachment_count = 0;
  std::uint32_t metadata_count = 0;
  std::uint32_t chunk_count = 0;
  std::uint64_t message_start_time_ns = 0;
  std::uint64_t message_end_time_ns = 0;
  std::map<std::uint16_t, std::uint64_t> channel_message_counts;
};

struct ChunkIndex {
  std::uint64_t offset = 0;  // of the chunk index record itself
  std::uint64_t message_start_time_ns = 0;
  std::uint64_t message_end_time_ns = 0;
  std::uint64_t chunk_start_offset = 0;
  std::uint64_t chunk_length = 0;
  std::map<std::uint16_t, std::uint64_t> message_index_offsets;
  std::uint64_t message_index_length = 0;
  std::string compression;
  std::uint64_t compressed_size = 0;
  std::uint64_t uncompressed_size = 0;
};

struct SpanIndex {           // attachment and metadata indexes: where the record is
  std::uint64_t offset = 0;  // of the index record itself
  std::uint64_t target_offset = 0;
  std::uint64_t target_length = 0;
};

// A pair of closed-range checks that cannot overflow.
bool inside(std::uint64_t offset, std::uint64_t length, std::uint64_t size) {
  return offset <= size && length <= size - offset;
}

}  // namespace

Reader::Reader(ReaderOptions options) : options_(options) {}

Reader::~Reader() {
  close();
  if (zstd_ != nullptr) ZSTD_freeDCtx(zstd_);
}

void Reader::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  in_memory_ = false;
  memory_.clear();
  memory_.shrink_to_fit();
  size_ = 0;
  opened_ = false;
  error_.clear();
  header_ = {};
  schemas_.clear();
  channels_.clear();
  metadata_.clear();
  attachments_.clear();
  info_ = {};
  chunks_.clear();
  attachment_spans_.clear();
  metadata_spans_.clear();
  data_start_ = 0;
  data_stop_ = 0;
  scan_record_ = {};
  scan_chunk_ = {};
  iter_record_ = {};
  iter_chunk_ = {};
  iter_pos_ = 0;
  iter_records_ = {};
  iter_chunk_offset_ = 0;
  iter_record_pos_ = 0;
  iter_failed_ = false;
}

bool Reader::open(const std::string& path, std::string* error) {
  close();
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    error_ = "cannot open " + path + ": " + std::strerror(errno);
    if (error != nullptr) *error = error_;
    return false;
  }
  struct stat st {};
  const bool stat_ok = ::fstat(fd_, &st) == 0;
  if (!stat_ok || !S_ISREG(st.st_mode)) {
    const std::string why = stat_ok ? "not a regular file" : std::strerror(errno);
    close();
    error_ = "cannot read " + path + ": " + why;
    if (error != nullptr) *error = error_;
    return false;
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
  if (open_common(error)) return true;
  error_ = path + ": " + error_;
  if (error != nullptr) *error = error_;
  return false;
}

bool Reader::open_memory(std::string bytes, std::string* error) {
  close();
  memory_ = std::move(bytes);
  in_memory_ = true;
  size_ = memory_.size();
  return open_common(error);
}

bool Reader::open_common(std::string* error) {
  info_.file_size_bytes = size_;
  if (!scan()) {
    // keep the message, drop everything else
    std::string message = std::move(error_);
    close();
    error_ = std::move(message);
    if (error != nullptr) *error = error_;
    return false;
  }
  // the scan's scratch can be large (a whole chunk); the iteration has its own
  scan_record_ = {};
  scan_chunk_ = {};
  opened_ = true;
  rewind();
  return true;
}

const Schema* Reader::schema(std::uint16_t id) const {
  const auto it = schemas_.find(id);
  return it == schemas_.end() ? nullptr : &it->second;
}

const Channel* Reader::channel(std::uint16_t id) const {
  const auto it = channels_.find(id);
  return it == channels_.end() ? nullptr : &it->second;
}

bool Reader::fail(std::string message) {
  error_ = std::move(message);
  return false;
}

bool Reader::read_exact(std::uint64_t offset, std::uint8_t* out, std::size_t size) {
  // callers have checked offset + size <= size_
  if (in_memory_) {
    if (size > 0) std::memcpy(out, memory_.data() + offset, size);
    return true;
  }
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd_, out + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;  // the file shrank since open()
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

bool Reader::fetch(std::uint64_t offset, std::uint64_t size, std::vector<std::uint8_t>& scratch, Bytes& out) {
  // memory: a view, no copy; file: read into the caller's reused scratch
  if (in_memory_) {
    out = Bytes(reinterpret_cast<const std::uint8_t*>(memory_.data()) + offset, static_cast<std::size_t>(size));
    return true;
  }
  scratch.resize(static_cast<std::size_t>(size));
  if (!read_exact(offset, scratch.data(), scratch.size())) return false;
  out = Bytes(scratch.data(), scratch.size());
  return true;
}

Reader::Fetch Reader::read_record(std::uint64_t offset, std::vector<std::uint8_t>& scratch, Record& out,
                                  std::string& why) {
  if (offset > size_ || size_ - offset < kRecordPrefixBytes) {
    why = format("record at offset %llu: its 9-byte prefix is cut, %llu bytes left", ull(offset),
                 ull(offset > size_ ? 0 : size_ - offset));
    return Fetch::truncated;
  }
  std::uint8_t prefix[kRecordPrefixBytes];
  if (!read_exact(offset, prefix, sizeof prefix)) {
    why = format("read error at offset %llu: %s", ull(offset), std::strerror(errno));
    return Fetch::failed;
  }
  out.opcode = prefix[0];
  out.offset = offset;
  out.length = get_u64(prefix + 1);
  const std::uint64_t left = size_ - offset - kRecordPrefixBytes;
  if (out.length > left) {
    why = at(out.opcode, offset) +
          format(": record needs %llu content bytes, %llu left in the file", ull(out.length), ull(left));
    return Fetch::truncated;
  }
  if (!fetch(offset + kRecordPrefixBytes, out.length, scratch, out.content)) {
    why = format("read error at offset %llu: %s", ull(offset), std::strerror(errno));
    return Fetch::failed;
  }
  return Fetch::ok;
}

bool Reader::add_schema(const Schema& schema, bool from_summary, std::string& why) {
  if (schema.id == 0) return true;  // reserved; the spec says readers ignore it
  const auto [it, inserted] = schemas_.emplace(schema.id, schema);
  if (!inserted && !(it->second == schema)) {
    why = format("schema %u differs from an earlier schema with the same id", static_cast<unsigned>(schema.id));
    if (from_summary) why += " in the data section";
    return false;
  }
  return true;
}

bool Reader::add_channel(const Channel& channel, bool from_summary, std::string& why) {
  if (!from_summary && channel.schema_id != 0 && schemas_.count(channel.schema_id) == 0) {
    why = format("channel %u refers to schema %u, which was not defined before it", static_cast<unsigned>(channel.id),
                 static_cast<unsigned>(channel.schema_id));
    return false;
  }
  const auto [it, inserted] = channels_.emplace(channel.id, channel);
  if (!inserted && !(it->second == channel)) {
    why = format("channel %u differs from an earlier channel with the same id", static_cast<unsigned>(channel.id));
    if (from_summary) why += " in the data section";
    return false;
  }
  return true;
}

bool Reader::count_message(const MessageView& message, std::string& why) {
  if (channels_.count(message.channel_id) == 0) {
    why = format("message on channel %u, which was not defined before it", static_cast<unsigned>(message.channel_id));
    return false;
  }
  if (info_.message_count == 0) {
    info_.message_start_time_ns = message.log_time_ns;
    info_.message_end_time_ns = message.log_time_ns;
  } else {
    info_.message_start_time_ns = std::min(info_.message_start_time_ns, message.log_time_ns);
    info_.message_end_time_ns = std::max(info_.message_end_time_ns, message.log_time_ns);
  }
  ++info_.message_count;
  ++info_.channel_message_counts[message.channel_id];
  return true;
}

bool Reader::load_chunk(const ChunkHeader& chunk, std::vector<std::uint8_t>& buffer, Bytes& records, bool verify_crc,
                        std::string& why) {
  if (chunk.uncompressed_size > options_.max_chunk_bytes) {
    why = format("uncompressed_size %llu exceeds the reader's limit of %llu bytes", ull(chunk.uncompressed_size),
                 ull(options_.max_chunk_bytes));
    return false;
  }
  if (chunk.compression.empty()) {
    if (chunk.records.size() != chunk.uncompressed_size) {
      why = format("uncompressed chunk holds %llu record bytes but uncompressed_size is %llu",
                   ull(chunk.records.size()), ull(chunk.uncompressed_size));
      return false;
    }
    records = chunk.records;
  } else if (chunk.compression == "zstd") {
    // a single frame states its size: reject a mismatch before allocating
    const unsigned long long frame_size = ZSTD_getFrameContentSize(chunk.records.data(), chunk.records.size());
    if (frame_size == ZSTD_CONTENTSIZE_ERROR) {
      why = "records are not a valid zstd frame";
      return false;
    }
    const std::size_t first_frame_bytes = ZSTD_findFrameCompressedSize(chunk.records.data(), chunk.records.size());
    const bool single_frame = ZSTD_isError(first_frame_bytes) == 0U && first_frame_bytes == chunk.records.size();
    if (single_frame && frame_size != ZSTD_CONTENTSIZE_UNKNOWN && frame_size != chunk.uncompressed_size) {
      why =
          format("zstd frame holds %llu bytes but uncompressed_size is %llu", frame_size, ull(chunk.uncompressed_size));
      return false;
    }
    if (zstd_ == nullptr) zstd_ = ZSTD_createDCtx();
    if (zstd_ == nullptr) {
      why = "cannot allocate a zstd context";
      return false;
    }
    buffer.resize(static_cast<std::size_t>(chunk.uncompressed_size));
    const std::size_t n =
        ZSTD_decompressDCtx(zstd_, buffer.data(), buffer.size(), chunk.records.data(), chunk.records.size());
    if (ZSTD_isError(n) != 0U) {
      why = std::string("zstd decompression failed: ") + ZSTD_getErrorName(n);
      return false;
    }
    if (n != chunk.uncompressed_size) {
      why = format("decompressed to %llu bytes but uncompressed_size is %llu", ull(n), ull(chunk.uncompressed_size));
      return false;
    }
    records = Bytes(buffer.data(), n);
  } else {
    why = "unsupported compression \"" + printable(chunk.compression) + "\"";
    return false;
  }
  if (verify_crc && chunk.uncompressed_crc != 0) {
    const std::uint32_t computed = crc32(0, records.data(), records.size());
    if (computed != chunk.uncompressed_crc) {
      why = format("CRC mismatch (stored 0x%08x, computed 0x%08x)", chunk.uncompressed_crc, computed);
      return false;
    }
  }
  return true;
}

namespace {

bool parse_chunk_header(Bytes content, std::uint64_t& start, std::uint64_t& end, std::uint64_t& uncompressed_size,
                        std::uint32_t& crc, std::string_view& compression, Bytes& records, std::string& why) {
  Cursor c(content);
  std::uint64_t records_size = 0;
  if (c.u64(start, "message_start_time") && c.u64(end, "message_end_time") &&
      c.u64(uncompressed_size, "uncompressed_size") && c.u32(crc, "uncompressed_crc") &&
      c.string_view(compression, "compression") && c.u64(records_size, "records length") &&
      c.bytes(records_size, records, "records")) {
    return true;
  }
  why = c.why();
  return false;
}

}  // namespace

bool Reader::scan_chunk(const Record& record) {
  const std::string where = at(record.opcode, record.offset);
  std::string why;
  ChunkHeader chunk;
  if (!parse_chunk_header(record.content, chunk.message_start_time_ns, chunk.message_end_time_ns,
                          chunk.uncompressed_size, chunk.uncompressed_crc, chunk.compression, chunk.records, why)) {
    return fail(where + ": " + why);
  }
  Bytes records;
  if (!load_chunk(chunk, scan_chunk_, records, options_.verify_crcs, why)) return fail(where + ": " + why);

  // the chunk's records: schemas, channels and messages
  std::size_t p = 0;
  while (p < records.size()) {
    const std::size_t left = records.size() - p;
    if (left < kRecordPrefixBytes) {
      return fail(where + format(": record at chunk offset %llu: its 9-byte prefix is cut, %llu bytes left", ull(p),
                                 ull(left)));
    }
    const std::uint8_t opcode = records[p];
    const std::uint64_t length = get_u64(records.data() + p + 1);
    if (length > left - kRecordPrefixBytes) {
      return fail(where + ": " + opcode_name(opcode) +
                  format(" at chunk offset %llu: needs %llu content bytes, %llu left in the chunk", ull(p), ull(length),
                         ull(left - kRecordPrefixBytes)));
    }
    const Bytes content = records.subspan(p + kRecordPrefixBytes, static_cast<std::size_t>(length));
    const auto inner = [&] { return where + ": " + opcode_name(opcode) + format(" at chunk offset %llu: ", ull(p)); };
    switch (static_cast<Opcode>(opcode)) {
      case Opcode::schema: {
        Schema schema;
        if (!parse_schema(content, schema, why) || !add_schema(schema, false, why)) return fail(inner() + why);
        break;
      }
      case Opcode::channel: {
        Channel channel;
        if (!parse_channel(content, channel, why) || !add_channel(channel, false, why)) return fail(inner() + why);
        break;
      }
      case Opcode::message: {
        MessageView message;
        if (!parse_message(content, message, why)) return fail(inner() + why);
        if (message.log_time_ns < chunk.message_start_time_ns || message.log_time_ns > chunk.message_end_time_ns) {
          return fail(inner() + format("log_time %llu outside the chunk's [%llu, %llu]", ull(message.log_time_ns),
                                       ull(chunk.message_start_time_ns), ull(chunk.message_end_time_ns)));
        }
        if (!count_message(message, why)) return fail(inner() + why);
        break;
      }
      case Opcode::header:
      case Opcode::footer:
      case Opcode::chunk:
      case Opcode::message_index:
      case Opcode::chunk_index:
      case Opcode::attachment:
      case Opcode::attachment_index:
      case Opcode::statistics:
      case Opcode::metadata:
      case Opcode::metadata_index:
      case Opcode::summary_offset:
      case Opcode::data_end: return fail(inner() + "record not allowed inside a chunk");
      default:
        if (opcode == 0) return fail(inner() + "invalid opcode 0");
        break;  // unknown (extension) records are skipped, as the spec asks
    }
    p += kRecordPrefixBytes + static_cast<std::size_t>(length);
  }
  ++info_.chunk_count;
  info_.chunk_compressed_bytes += chunk.records.size();
  info_.chunk_uncompressed_bytes += chunk.uncompressed_size;
  chunks_.push_back({record.offset, kRecordPrefixBytes + record.length, chunk.uncompressed_size});
  return true;
}

bool Reader::scan() {
  if (size_ < kMagic.size()) {
    return fail(format("file is %llu bytes, shorter than the 8-byte MCAP magic", ull(size_)));
  }
  std::array<std::uint8_t, kMagic.size()> magic{};
  if (!read_exact(0, magic.data(), magic.size())) {
    return fail(format("read error at offset 0: %s", std::strerror(errno)));
  }
  if (magic != kMagic) {
    return fail("offset 0: bad magic, not an MCAP file (or not MCAP major version 0)");
  }
  const bool verify = options_.verify_crcs;
  std::uint32_t data_crc = crc32(0, magic.data(), magic.size());
  const auto crc_record = [](std::uint32_t crc, const Record& r) {
    std::uint8_t prefix[kRecordPrefixBytes];
    prefix[0] = r.opcode;
    for (int i = 0; i < 8; ++i) prefix[1 + i] = static_cast<std::uint8_t>(r.length >> (8 * i));
    return crc32(crc32(crc, prefix, sizeof prefix), r.content.data(), r.content.size());
  };

  Record record;
  std::string why;
  std::uint64_t pos = kMagic.size();
  switch (read_record(pos, scan_record_, record, why)) {
    case Fetch::failed: return fail(why);
    case Fetch::truncated: return fail(why + " (the file ends inside its header)");
    case Fetch::ok: break;
  }
  if (record.opcode != static_cast<std::uint8_t>(Opcode::header)) {
    return fail("offset 8: the first record is a " + opcode_name(record.opcode) + ", expected a header");
  }
  if (!parse_header(record.content, header_, why)) return fail(at(record.opcode, pos) + ": " + why);
  if (verify) data_crc = crc_record(data_crc, record);
  pos += kRecordPrefixBytes + record.length;
  data_start_ = pos;

  bool seen_chunk = false;
  for (;;) {
    const Fetch fetched = read_record(pos, scan_record_, record, why);
    if (fetched == Fetch::failed) return fail(why);
    if (fetched == Fetch::truncated) {
      // a recorder killed mid-write: keep what is complete
      info_.truncated = true;
      info_.truncated_at_offset = pos;
      info_.truncation = why;
      data_stop_ = pos;
      return true;
    }
    const auto where = [&] { return at(record.opcode, pos) + ": "; };
    switch (static_cast<Opcode>(record.opcode)) {
      case Opcode::data_end: {
        Cursor c(record.content);
        std::uint32_t stored = 0;
        if (!c.u32(stored, "data_section_crc")) return fail(where() + c.why());
        if (verify && stored != 0 && stored != data_crc) {
          return fail(where() + format("data section CRC mismatch (stored 0x%08x, computed 0x%08x)", stored, data_crc));
        }
        info_.has_data_end = true;
        data_stop_ = pos;
        return scan_summary(pos + kRecordPrefixBytes + record.length);
      }
      case Opcode::footer:
        // no Data End (older writers): the data ends at the footer
        data_stop_ = pos;
        return scan_summary(pos);
      case Opcode::header: return fail(where() + "a second header");
      case Opcode::schema: {
        Schema schema;
        if (!parse_schema(record.content, schema, why) || !add_schema(schema, false, why)) return fail(where() + why);
        break;
      }
      case Opcode::channel: {
        Channel channel;
        if (!parse_channel(record.content, channel, why) || !add_channel(channel, false, why)) {
          return fail(where() + why);
        }
        break;
      }
      case Opcode::message: {
        MessageView message;
        if (!parse_message(record.content, message, why) || !count_message(message, why)) return fail(where() + why);
        break;
      }
      case Opcode::chunk:
        if (!scan_chunk(record)) return false;
        seen_chunk = true;
        break;
      case Opcode::message_index: {
        Cursor c(record.content);
        std::uint16_t channel_id = 0;
        Bytes entries;
        if (!c.u16(channel_id, "channel_id") || !c.prefixed(entries, "records")) return fail(where() + c.why());
        if (!seen_chunk) return fail(where() + "no chunk before it");
        if (entries.size() % 16 != 0) {
          return fail(where() + format("records are %llu bytes, not a multiple of 16", ull(entries.size())));
        }
        if (channels_.count(channel_id) == 0) {
          return fail(where() +
                      format("indexes channel %u, which was not defined before it", static_cast<unsigned>(channel_id)));
        }
        const std::uint64_t chunk_size = chunks_.back().uncompressed_size;
        for (std::size_t i = 0; i < entries.size(); i += 16) {
          const std::uint64_t offset = get_u64(entries.data() + i + 8);
          if (offset >= chunk_size) {
            return fail(where() + format("entry %llu points at offset %llu, past the chunk's %llu bytes", ull(i / 16),
                                         ull(offset), ull(chunk_size)));
          }
        }
        break;
      }
      case Opcode::attachment: {
        Cursor c(record.content);
        Attachment attachment;
        Bytes data;
        std::uint64_t data_size = 0;
        std::uint32_t stored = 0;
        if (!c.u64(attachment.log_time_ns, "log_time") || !c.u64(attachment.create_time_ns, "create_time") ||
            !c.string(attachment.name, "name") || !c.string(attachment.media_type, "media_type") ||
            !c.u64(data_size, "data length") || !c.bytes(data_size, data, "data")) {
          return fail(where() + c.why());
        }
        const std::size_t crc_bytes = record.content.size() - c.remaining();
        if (!c.u32(stored, "crc")) return fail(where() + c.why());
        if (verify && stored != 0) {
          const std::uint32_t computed = crc32(0, record.content.data(), crc_bytes);
          if (computed != stored) {
            return fail(where() + format("attachment \"%s\": CRC mismatch (stored 0x%08x, computed 0x%08x)",
                                         printable(attachment.name).c_str(), stored, computed));
          }
        }
        attachment.data.assign(reinterpret_cast<const char*>(data.data()), data.size());
        attachments_.push_back(std::move(attachment));
        attachment_spans_.emplace_back(pos, kRecordPrefixBytes + record.length);
        break;
      }
      case Opcode::metadata: {
        Metadata metadata;
        if (!parse_metadata(record.content, metadata, why)) return fail(where() + why);
        metadata_.push_back(std::move(metadata));
        metadata_spans_.emplace_back(pos, kRecordPrefixBytes + record.length);
        break;
      }
      case Opcode::chunk_index:
      case Opcode::attachment_index:
      case Opcode::statistics:
      case Opcode::metadata_index:
      case Opcode::summary_offset: return fail(where() + "summary record found in the data section (before Data End)");
      default:
        if (record.opcode == 0) return fail(where() + "invalid opcode 0");
        break;  // unknown (extension) records are skipped
    }
    if (verify) data_crc = crc_record(data_crc, record);
    pos += kRecordPrefixBytes + record.length;
  }
}

bool Reader::scan_summary(std::uint64_t summary_start) {
  const bool verify = options_.verify_crcs;
  std::uint32_t crc = 0;
  std::uint64_t summary_records = 0;
  std::uint64_t first_summary_offset = 0;  // 0: none seen
  bool have_statistics = false;
  Statistics statistics;
  std::uint64_t statistics_offset = 0;
  std::vector<ChunkIndex> chunk_indexes;
  std::vector<SpanIndex> attachment_indexes;
  std::vector<SpanIndex> metadata_indexes;

  Record record;
  std::string why;
  std::uint64_t pos = summary_start;
  for (;;) {
    const Fetch fetched = read_record(pos, scan_record_, record, why);
    if (fetched == Fetch::failed) return fail(why);
    if (fetched == Fetch::truncated) {
      // the data is complete; only the index is lost
      info_.truncated = true;
      info_.truncated_at_offset = pos;
      info_.truncation = why + " (in the summary section)";
      return true;
    }
    const auto where = [&] { return at(record.opcode, pos) + ": "; };
    if (record.opcode == static_cast<std::uint8_t>(Opcode::footer)) break;

    if (verify) {
      std::uint8_t prefix[kRecordPrefixBytes];
      prefix[0] = record.opcode;
      for (int i = 0; i < 8; ++i) prefix[1 + i] = static_cast<std::uint8_t>(record.length >> (8 * i));
      crc = crc32(crc32(crc, prefix, sizeof prefix), record.content.data(), record.content.size());
    }
    if (record.opcode == static_cast<std::uint8_t>(Opcode::summary_offset)) {
      Cursor c(record.content);
      std::uint8_t group_opcode = 0;
      std::uint64_t group_start = 0;
      std::uint64_t group_length = 0;
      if (!c.u8(group_opcode, "group_opcode") || !c.u64(group_start, "group_start") ||
          !c.u64(group_length, "group_length")) {
        return fail(where() + c.why());
      }
      if (group_start < summary_start || !inside(group_start, group_length, pos)) {
        return fail(where() + format("group [%llu, +%llu) lies outside the summary section [%llu, %llu)",
                                     ull(group_start), ull(group_length), ull(summary_start), ull(pos)));
      }
      if (first_summary_offset == 0) first_summary_offset = pos;
      pos += kRecordPrefixBytes + record.length;
      continue;
    }
    if (first_summary_offset != 0) return fail(where() + "summary record after the summary offset section");
    ++summary_records;
    switch (static_cast<Opcode>(record.opcode)) {
      case Opcode::schema: {
        Schema schema;
        if (!parse_schema(record.content, schema, why) || !add_schema(schema, true, why)) return fail(where() + why);
        break;
      }
      case Opcode::channel: {
        Channel channel;
        if (!parse_channel(record.content, channel, why) || !add_channel(channel, true, why)) {
          return fail(where() + why);
        }
        break;
      }
      case Opcode::statistics: {
        if (have_statistics) return fail(where() + "a second statistics record");
        Cursor c(record.content);
        Statistics& s = statistics;
        if (!c.u64(s.message_count, "message_count") || !c.u16(s.schema_count, "schema_count") ||
            !c.u32(s.channel_count, "channel_count") || !c.u32(s.attachment_count, "attachment_count") ||
            !c.u32(s.metadata_count, "metadata_count") || !c.u32(s.chunk_count, "chunk_count") ||
            !c.u64(s.message_start_time_ns, "message_start_time") ||
            !c.u64(s.message_end_time_ns, "message_end_time") ||
            !c.u16_u64_map(s.channel_message_counts, "channel_message_counts")) {
          return fail(where() + c.why());
        }
        have_statistics = true;
        statistics_offset = pos;
        break;
      }
      case Opcode::chunk_index: {
        Cursor c(record.content);
        ChunkIndex ci;
        ci.offset = pos;
        if (!c.u64(ci.message_start_time_ns, "message_start_time") ||
            !c.u64(ci.message_end_time_ns, "message_end_time") || !c.u64(ci.chunk_start_offset, "chunk_start_offset") ||
            !c.u64(ci.chunk_length, "chunk_length") ||
            !c.u16_u64_map(ci.message_index_offsets, "message_index_offsets") ||
            !c.u64(ci.message_index_length, "message_index_length") || !c.string(ci.compression, "compression") ||
            !c.u64(ci.compressed_size, "compressed_size") || !c.u64(ci.uncompressed_size, "uncompressed_size")) {
          return fail(where() + c.why());
        }
        chunk_indexes.push_back(std::move(ci));
        break;
      }
      case Opcode::attachment_index: {
        Cursor c(record.content);
        SpanIndex index;
        index.offset = pos;
        std::uint64_t ignored = 0;
        std::string name;
        std::string media_type;
        if (!c.u64(index.target_offset, "offset") || !c.u64(index.target_length, "length") ||
            !c.u64(ignored, "log_time") || !c.u64(ignored, "create_time") || !c.u64(ignored, "data_size") ||
            !c.string(name, "name") || !c.string(media_type, "media_type")) {
          return fail(where() + c.why());
        }
        attachment_indexes.push_back(index);
        break;
      }
      case Opcode::metadata_index: {
        Cursor c(record.content);
        SpanIndex index;
        index.offset = pos;
        std::string name;
        if (!c.u64(index.target_offset, "offset") || !c.u64(index.target_length, "length") || !c.string(name, "name")) {
          return fail(where() + c.why());
        }
        metadata_indexes.push_back(index);
        break;
      }
      case Opcode::header:
      case Opcode::message:
      case Opcode::chunk:
      case Opcode::message_index:
      case Opcode::attachment:
      case Opcode::metadata:
      case Opcode::data_end: return fail(where() + "record not allowed in the summary section");
      default:
        if (record.opcode == 0) return fail(where() + "invalid opcode 0");
        break;
    }
    pos += kRecordPrefixBytes + record.length;
  }

  // the footer, then the closing magic and nothing else
  const std::uint64_t footer_offset = pos;
  const std::string where = at("footer", footer_offset) + ": ";
  Cursor c(record.content);
  std::uint64_t summary_start_field = 0;
  std::uint64_t summary_offset_start_field = 0;
  std::uint32_t summary_crc = 0;
  if (!c.u64(summary_start_field, "summary_start") || !c.u64(summary_offset_start_field, "summary_offset_start") ||
      !c.u32(summary_crc, "summary_crc")) {
    return fail(where + c.why());
  }
  const std::uint64_t magic_offset = footer_offset + kRecordPrefixBytes + record.length;
  if (size_ - magic_offset < kMagic.size()) {
    info_.truncated = true;
    info_.truncated_at_offset = magic_offset;
    info_.truncation =
        format("closing magic at offset %llu is cut, %llu bytes left", ull(magic_offset), ull(size_ - magic_offset));
    return true;
  }
  std::array<std::uint8_t, kMagic.size()> magic{};
  if (!read_exact(magic_offset, magic.data(), magic.size())) {
    return fail(format("read error at offset %llu: %s", ull(magic_offset), std::strerror(errno)));
  }
  if (magic != kMagic) {
    return fail(format("offset %llu: bad closing magic", ull(magic_offset)));
  }
  if (magic_offset + kMagic.size() != size_) {
    return fail(format("offset %llu: %llu unexpected bytes after the closing magic", ull(magic_offset + kMagic.size()),
                       ull(size_ - magic_offset - kMagic.size())));
  }
  if (verify && summary_crc != 0) {
    std::uint8_t prefix[kRecordPrefixBytes];
    prefix[0] = record.opcode;
    for (int i = 0; i < 8; ++i) prefix[1 + i] = static_cast<std::uint8_t>(record.length >> (8 * i));
    crc = crc32(crc32(crc, prefix, sizeof prefix), record.content.data(), 16);
    if (crc != summary_crc) {
      return fail(where + format("summary CRC mismatch (stored 0x%08x, computed 0x%08x)", summary_crc, crc));
    }
  }
  const std::uint64_t expected_summary_start = summary_records > 0 ? summary_start : 0;
  if (summary_start_field != expected_summary_start && !(summary_records == 0 && summary_start_field == pos)) {
    return fail(where +
                format("summary_start is %llu, expected %llu", ull(summary_start_field), ull(expected_summary_start)));
  }
  if (summary_offset_start_field != first_summary_offset &&
      !(first_summary_offset == 0 && summary_offset_start_field == pos)) {
    return fail(where + format("summary_offset_start is %llu, expected %llu", ull(summary_offset_start_field),
                               ull(first_summary_offset)));
  }
  info_.has_footer = true;

  // the summary must agree with what the data section holds
  if (have_statistics) {
    const Statistics& s = statistics;
    const std::string swhere = at("statistics", statistics_offset) + ": ";
    const auto mismatch = [&](const char* field, std::uint64_t stored, std::uint64_t found) {
      return fail(swhere + format("%s is %llu but the file holds %llu", field, ull(stored), ull(found)));
    };
    if (s.message_count != info_.message_count) return mismatch("message_count", s.message_count, info_.message_count);
    if (s.chunk_count != info_.chunk_count) return mismatch("chunk_count", s.chunk_count, info_.chunk_count);
    if (s.attachment_count != attachments_.size()) {
      return mismatch("attachment_count", s.attachment_count, attachments_.size());
    }
    if (s.metadata_count != metadata_.size()) return mismatch("metadata_count", s.metadata_count, metadata_.size());
    if (s.schema_count != schemas_.size()) return mismatch("schema_count", s.schema_count, schemas_.size());
    if (s.channel_count != channels_.size()) return mismatch("channel_count", s.channel_count, channels_.size());
    if (info_.message_count > 0 && (s.message_start_time_ns != info_.message_start_time_ns ||
                                    s.message_end_time_ns != info_.message_end_time_ns)) {
      return fail(swhere + format("message times [%llu, %llu] but the messages span [%llu, %llu]",
                                  ull(s.message_start_time_ns), ull(s.message_end_time_ns),
                                  ull(info_.message_start_time_ns), ull(info_.message_end_time_ns)));
    }
    if (!s.channel_message_counts.empty()) {
      std::set<std::uint16_t> ids;
      for (const auto& [id, count] : s.channel_message_counts) ids.insert(id);
      for (const auto& [id, count] : info_.channel_message_counts) ids.insert(id);
      for (const std::uint16_t id : ids) {
        const auto stored = s.channel_message_counts.find(id);
        const auto found = info_.channel_message_counts.find(id);
        const std::uint64_t stored_count = stored == s.channel_message_counts.end() ? 0 : stored->second;
        const std::uint64_t found_count = found == info_.channel_message_counts.end() ? 0 : found->second;
        if (stored_count != found_count) {
          return fail(swhere + format("channel %u has %llu messages, the file holds %llu", static_cast<unsigned>(id),
                                      ull(stored_count), ull(found_count)));
        }
      }
    }
  }
  if (!chunk_indexes.empty()) {
    if (chunk_indexes.size() != chunks_.size()) {
      return fail(at("chunk index", chunk_indexes.front().offset) +
                  format(": %llu chunk indexes for %llu chunks", ull(chunk_indexes.size()), ull(chunks_.size())));
    }
    for (const ChunkIndex& ci : chunk_indexes) {
      const auto it = std::find_if(chunks_.begin(), chunks_.end(),
                                   [&](const ChunkSeen& seen) { return seen.offset == ci.chunk_start_offset; });
      if (it == chunks_.end() || it->length != ci.chunk_length || it->uncompressed_size != ci.uncompressed_size) {
        return fail(at("chunk index", ci.offset) + format(": no chunk of %llu bytes at offset %llu",
                                                          ull(ci.chunk_length), ull(ci.chunk_start_offset)));
      }
      for (const auto& [id, offset] : ci.message_index_offsets) {
        if (offset < it->offset + it->length || !inside(offset, kRecordPrefixBytes, data_stop_)) {
          return fail(at("chunk index", ci.offset) +
                      format(": message index of channel %u at offset %llu is outside the data after the chunk",
                             static_cast<unsigned>(id), ull(offset)));
        }
      }
    }
  }
  const auto check_spans = [&](const std::vector<SpanIndex>& indexes,
                               const std::vector<std::pair<std::uint64_t, std::uint64_t>>& spans, const char* what) {
    if (indexes.empty()) return true;
    if (indexes.size() != spans.size()) {
      return fail(at(what, indexes.front().offset) +
                  format(": %llu indexes for %llu records", ull(indexes.size()), ull(spans.size())));
    }
    for (const SpanIndex& index : indexes) {
      if (std::find(spans.begin(), spans.end(), std::make_pair(index.target_offset, index.target_length)) ==
          spans.end()) {
        return fail(at(what, index.offset) + format(": no record of %llu bytes at offset %llu",
                                                    ull(index.target_length), ull(index.target_offset)));
      }
    }
    return true;
  };
  if (!check_spans(attachment_indexes, attachment_spans_, "attachment index")) return false;
  if (!check_spans(metadata_indexes, metadata_spans_, "metadata index")) return false;

  info_.has_summary = summary_records > 0;
  info_.has_statistics = have_statistics;
  return true;
}

bool Reader::iter_fail(std::string message) {
  iter_failed_ = true;
  error_ = std::move(message);
  return false;
}

void Reader::rewind() {
  iter_pos_ = data_start_;
  iter_records_ = {};
  iter_record_pos_ = 0;
  iter_chunk_offset_ = 0;
  iter_failed_ = false;
  if (opened_) error_.clear();
}

bool Reader::next(MessageView& out) {
  if (!opened_ || iter_failed_) return false;
  std::string why;
  for (;;) {
    // messages left in the current chunk
    while (iter_record_pos_ < iter_records_.size()) {
      const std::size_t p = iter_record_pos_;
      const std::size_t left = iter_records_.size() - p;
      const std::uint64_t length = left < kRecordPrefixBytes ? 0 : get_u64(iter_records_.data() + p + 1);
      if (left < kRecordPrefixBytes || length > left - kRecordPrefixBytes) {
        return iter_fail(at("chunk", iter_chunk_offset_) +
                         format(": record at chunk offset %llu is cut (the file changed since open?)", ull(p)));
      }
      const std::uint8_t opcode = iter_records_[p];
      iter_record_pos_ = p + kRecordPrefixBytes + static_cast<std::size_t>(length);
      if (opcode == static_cast<std::uint8_t>(Opcode::message)) {
        if (!parse_message(iter_records_.subspan(p + kRecordPrefixBytes, static_cast<std::size_t>(length)), out, why)) {
          return iter_fail(at("chunk", iter_chunk_offset_) + format(": message at chunk offset %llu: ", ull(p)) + why);
        }
        return true;
      }
    }
    if (iter_pos_ >= data_stop_) return false;

    Record record;
    if (read_record(iter_pos_, iter_record_, record, why) != Fetch::ok) {
      return iter_fail(why + " (the file changed since open?)");
    }
    iter_pos_ += kRecordPrefixBytes + record.length;
    if (record.opcode == static_cast<std::uint8_t>(Opcode::chunk)) {
      ChunkHeader chunk;
      Bytes records;
      // open() checked the CRCs already; bounds are still checked
      if (!parse_chunk_header(record.content, chunk.message_start_time_ns, chunk.message_end_time_ns,
                              chunk.uncompressed_size, chunk.uncompressed_crc, chunk.compression, chunk.records, why) ||
          !load_chunk(chunk, iter_chunk_, records, false, why)) {
        return iter_fail(at(record.opcode, record.offset) + ": " + why);
      }
      iter_records_ = records;
      iter_record_pos_ = 0;
      iter_chunk_offset_ = record.offset;
    } else if (record.opcode == static_cast<std::uint8_t>(Opcode::message)) {
      if (!parse_message(record.content, out, why)) return iter_fail(at(record.opcode, record.offset) + ": " + why);
      return true;
    }
  }
}

}  // namespace tether::runtime::mcap
