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

#include "mcap_records.hpp"

namespace tether::runtime::mcap {

using namespace detail;

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
