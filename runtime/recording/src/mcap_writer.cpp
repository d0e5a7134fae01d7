// SPDX-License-Identifier: Apache-2.0
#include "tether/recording/mcap_writer.hpp"

#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

namespace tether::runtime::mcap {
namespace {

constexpr std::uint64_t kMaxU32 = std::numeric_limits<std::uint32_t>::max();
constexpr std::size_t kMessageFixedBytes = 2 + 4 + 8 + 8;  // channel, sequence, log time, publish time

std::uint64_t string_map_bytes(const std::map<std::string, std::string>& map) {
  std::uint64_t bytes = 0;
  for (const auto& [key, value] : map) bytes += 8 + key.size() + value.size();
  return bytes;
}

bool fits_u32(std::string_view text) { return text.size() <= kMaxU32; }

}  // namespace

Writer::Writer() = default;

Writer::~Writer() {
  if (file_ != nullptr) {
    std::string ignored;
    (void)close(&ignored);
  }
  if (zstd_ != nullptr) ZSTD_freeCCtx(zstd_);
}

void Writer::fail(std::string message) {
  // the first error is the one worth reading; later ones are usually its echoes
  if (error_.empty()) error_ = std::move(message);
}

bool Writer::usable(const char* what) {
  if (file_ == nullptr) {
    fail(std::string(what) + ": writer is not open");
    return false;
  }
  return !io_failed_;
}

void Writer::reset() {
  error_.clear();
  io_failed_ = false;
  bytes_written_ = 0;
  crc_ = 0;
  schemas_.clear();
  channels_.clear();
  channel_states_.clear();
  chunk_records_.clear();
  chunk_channels_.clear();
  chunk_start_time_ns_ = 0;
  chunk_end_time_ns_ = 0;
  chunk_has_messages_ = false;
  chunk_index_records_.clear();
  chunk_count_ = 0;
  attachment_indexes_.clear();
  metadata_indexes_.clear();
  message_count_ = 0;
  message_start_time_ns_ = 0;
  message_end_time_ns_ = 0;
}

bool Writer::open(const std::string& path, const WriterOptions& options, std::string* error) {
  const auto refuse = [&](std::string message) {
    if (file_ != nullptr) std::fclose(file_);
    file_ = nullptr;
    fail(std::move(message));
    if (error != nullptr) *error = error_;
    return false;
  };
  if (file_ != nullptr) {
    // keep the open file: report without touching it
    if (error != nullptr) *error = "mcap writer: open(" + path + "): already open on " + path_;
    return false;
  }
  reset();
  options_ = options;
  path_ = path;
  if (!fits_u32(options_.profile) || !fits_u32(options_.library)) {
    return refuse("mcap writer: open(" + path + "): header strings too long");
  }
  file_ = std::fopen(path.c_str(), "wb");
  if (file_ == nullptr) return refuse("mcap writer: cannot create " + path + ": " + std::strerror(errno));
  if (options_.compress && zstd_ == nullptr) {
    zstd_ = ZSTD_createCCtx();
    if (zstd_ == nullptr) return refuse("mcap writer: cannot allocate a zstd context");
  }
  // a chunk overshoots its limit by at most one message; reserve the common case once
  chunk_records_.reserve(std::min<std::size_t>(options_.chunk_size_bytes + 4096, std::size_t{64} << 20));
  record_.reserve(4096);

  write_bytes(kMagic.data(), kMagic.size());
  record_.clear();
  put_string(record_, options_.profile);
  put_string(record_, options_.library);
  write_record(Opcode::header, record_);
  if (io_failed_) return refuse(error_);
  return true;
}

void Writer::write_bytes(const void* data, std::size_t size) {
  if (io_failed_ || file_ == nullptr || size == 0) return;
  if (std::fwrite(data, 1, size, file_) != size) {
    io_failed_ = true;
    fail("mcap writer: write to " + path_ + " failed at offset " + std::to_string(bytes_written_) + ": " +
         std::strerror(errno));
    return;
  }
  crc_ = crc32(crc_, data, size);
  bytes_written_ += size;
}

void Writer::write_prefix(Opcode opcode, std::uint64_t content_length) {
  std::uint8_t prefix[kRecordPrefixBytes];
  prefix[0] = static_cast<std::uint8_t>(opcode);
  for (int i = 0; i < 8; ++i) prefix[1 + i] = static_cast<std::uint8_t>(content_length >> (8 * i));
  write_bytes(prefix, sizeof prefix);
}

void Writer::write_record(Opcode opcode, const std::vector<std::uint8_t>& content) {
  write_prefix(opcode, content.size());
  write_bytes(content.data(), content.size());
}

void Writer::encode_schema(const Schema& schema) {
  record_.clear();
  put_u16(record_, schema.id);
  put_string(record_, schema.name);
  put_string(record_, schema.encoding);
  put_string(record_, schema.data);  // uint32 length-prefixed bytes: same layout as a String
}

void Writer::encode_channel(const Channel& channel) {
  record_.clear();
  put_u16(record_, channel.id);
  put_u16(record_, channel.schema_id);
  put_string(record_, channel.topic);
  put_string(record_, channel.message_encoding);
  put_string_map(record_, channel.metadata);
}

std::uint16_t Writer::add_schema(std::string name, std::string encoding, std::string_view data) {
  if (!usable("add_schema")) return 0;
  if (schemas_.size() >= std::numeric_limits<std::uint16_t>::max()) {
    fail("mcap writer: add_schema(" + name + "): too many schemas");
    return 0;
  }
  if (!fits_u32(name) || !fits_u32(encoding) || !fits_u32(data)) {
    fail("mcap writer: add_schema(" + name + "): field longer than 4 GiB");
    return 0;
  }
  Schema schema;
  schema.id = static_cast<std::uint16_t>(schemas_.size() + 1);
  schema.name = std::move(name);
  schema.encoding = std::move(encoding);
  schema.data.assign(data.data(), data.size());
  // straight into the data section, so it precedes every chunk that uses it
  encode_schema(schema);
  write_record(Opcode::schema, record_);
  schemas_.push_back(std::move(schema));
  return schemas_.back().id;
}

std::uint16_t Writer::add_channel(std::uint16_t schema_id, std::string topic, std::string message_encoding,
                                  std::map<std::string, std::string> metadata) {
  if (!usable("add_channel")) return 0;
  if (schema_id > schemas_.size()) {
    fail("mcap writer: add_channel(" + topic + "): unknown schema id " + std::to_string(schema_id));
    return 0;
  }
  if (channels_.size() >= std::numeric_limits<std::uint16_t>::max()) {
    fail("mcap writer: add_channel(" + topic + "): too many channels");
    return 0;
  }
  if (!fits_u32(topic) || !fits_u32(message_encoding) || string_map_bytes(metadata) > kMaxU32) {
    fail("mcap writer: add_channel(" + topic + "): field longer than 4 GiB");
    return 0;
  }
  Channel channel;
  channel.id = static_cast<std::uint16_t>(channels_.size() + 1);
  channel.schema_id = schema_id;
  channel.topic = std::move(topic);
  channel.message_encoding = std::move(message_encoding);
  channel.metadata = std::move(metadata);
  encode_channel(channel);
  write_record(Opcode::channel, record_);
  channels_.push_back(std::move(channel));
  channel_states_.emplace_back();
  return channels_.back().id;
}

void Writer::write(std::uint16_t channel_id, std::uint32_t sequence, std::uint64_t log_time_ns,
                   std::uint64_t publish_time_ns, std::span<const std::byte> data) {
  if (!usable("write")) return;
  if (channel_id == 0 || channel_id > channels_.size()) {
    fail("mcap writer: write: unknown channel id " + std::to_string(channel_id));
    return;
  }
  const std::uint64_t offset = chunk_records_.size();
  put_u8(chunk_records_, static_cast<std::uint8_t>(Opcode::message));
  put_u64(chunk_records_, kMessageFixedBytes + data.size());
  put_u16(chunk_records_, channel_id);
  put_u32(chunk_records_, sequence);
  put_u64(chunk_records_, log_time_ns);
  put_u64(chunk_records_, publish_time_ns);
  put_bytes(chunk_records_, data.data(), data.size());

  ChannelState& state = channel_states_[channel_id - 1U];
  if (state.index.empty()) {
    chunk_channels_.push_back(channel_id);
  } else if (log_time_ns < state.index.back().log_time_ns) {
    state.index_sorted = false;
  }
  state.index.push_back({log_time_ns, offset});
  ++state.message_count;

  if (!chunk_has_messages_) {
    chunk_start_time_ns_ = log_time_ns;
    chunk_end_time_ns_ = log_time_ns;
    chunk_has_messages_ = true;
  } else {
    chunk_start_time_ns_ = std::min(chunk_start_time_ns_, log_time_ns);
    chunk_end_time_ns_ = std::max(chunk_end_time_ns_, log_time_ns);
  }
  if (message_count_ == 0) {
    message_start_time_ns_ = log_time_ns;
    message_end_time_ns_ = log_time_ns;
  } else {
    message_start_time_ns_ = std::min(message_start_time_ns_, log_time_ns);
    message_end_time_ns_ = std::max(message_end_time_ns_, log_time_ns);
  }
  ++message_count_;

  if (chunk_records_.size() >= options_.chunk_size_bytes) flush_chunk();
}

void Writer::write(std::uint16_t channel_id, std::uint32_t sequence, std::uint64_t log_time_ns,
                   std::uint64_t publish_time_ns, std::string_view data) {
  write(channel_id, sequence, log_time_ns, publish_time_ns, std::as_bytes(std::span(data.data(), data.size())));
}

void Writer::add_metadata(std::string name, std::map<std::string, std::string> entries) {
  if (!usable("add_metadata")) return;
  if (!fits_u32(name) || string_map_bytes(entries) > kMaxU32) {
    fail("mcap writer: add_metadata(" + name + "): field longer than 4 GiB");
    return;
  }
  record_.clear();
  put_string(record_, name);
  put_string_map(record_, entries);
  const std::uint64_t offset = bytes_written_;
  write_record(Opcode::metadata, record_);
  metadata_indexes_.push_back({offset, bytes_written_ - offset, std::move(name)});
}

void Writer::add_attachment(std::string name, std::string media_type, std::uint64_t log_time_ns,
                            std::uint64_t create_time_ns, std::string_view data) {
  if (!usable("add_attachment")) return;
  if (!fits_u32(name) || !fits_u32(media_type)) {
    fail("mcap writer: add_attachment(" + name + "): field longer than 4 GiB");
    return;
  }
  record_.clear();
  put_u64(record_, log_time_ns);
  put_u64(record_, create_time_ns);
  put_string(record_, name);
  put_string(record_, media_type);
  put_u64(record_, data.size());
  // the CRC covers every field before it; stream the data instead of copying it
  std::uint32_t crc = crc32(0, record_.data(), record_.size());
  crc = crc32(crc, data.data(), data.size());
  std::uint8_t crc_bytes[4];
  for (int i = 0; i < 4; ++i) crc_bytes[i] = static_cast<std::uint8_t>(crc >> (8 * i));

  const std::uint64_t offset = bytes_written_;
  write_prefix(Opcode::attachment, record_.size() + data.size() + sizeof crc_bytes);
  write_bytes(record_.data(), record_.size());
  write_bytes(data.data(), data.size());
  write_bytes(crc_bytes, sizeof crc_bytes);
  attachment_indexes_.push_back({offset, bytes_written_ - offset, log_time_ns, create_time_ns, data.size(),
                                 std::move(name), std::move(media_type)});
}

void Writer::flush_chunk() {
  if (file_ == nullptr || io_failed_) return;
  if (!chunk_records_.empty()) write_chunk();
  if (!io_failed_ && std::fflush(file_) != 0) {
    io_failed_ = true;
    fail("mcap writer: flush of " + path_ + " failed: " + std::strerror(errno));
  }
}

void Writer::write_chunk() {
  const std::uint64_t uncompressed_size = chunk_records_.size();
  const std::uint32_t uncompressed_crc = crc32(0, chunk_records_.data(), chunk_records_.size());
  const std::uint8_t* payload = chunk_records_.data();
  std::size_t payload_size = chunk_records_.size();
  std::string_view compression;
  if (options_.compress) {
    const std::size_t bound = ZSTD_compressBound(chunk_records_.size());
    if (compressed_.size() < bound) compressed_.resize(bound);
    const std::size_t n = ZSTD_compressCCtx(zstd_, compressed_.data(), compressed_.size(), chunk_records_.data(),
                                            chunk_records_.size(), options_.zstd_level);
    if (ZSTD_isError(n) != 0U) {
      io_failed_ = true;
      fail(std::string("mcap writer: zstd compression failed: ") + ZSTD_getErrorName(n));
      return;
    }
    payload = compressed_.data();
    payload_size = n;
    compression = "zstd";
  }

  ChunkIndex index;
  index.message_start_time_ns = chunk_has_messages_ ? chunk_start_time_ns_ : 0;
  index.message_end_time_ns = chunk_has_messages_ ? chunk_end_time_ns_ : 0;
  index.chunk_start_offset = bytes_written_;
  index.compressed_size = payload_size;
  index.uncompressed_size = uncompressed_size;

  record_.clear();
  put_u64(record_, index.message_start_time_ns);
  put_u64(record_, index.message_end_time_ns);
  put_u64(record_, uncompressed_size);
  put_u32(record_, uncompressed_crc);
  put_string(record_, compression);
  put_u64(record_, payload_size);
  write_prefix(Opcode::chunk, record_.size() + payload_size);
  write_bytes(record_.data(), record_.size());
  write_bytes(payload, payload_size);
  index.chunk_length = bytes_written_ - index.chunk_start_offset;

  // one message index per channel seen in the chunk, right after it
  const std::uint64_t indexes_start = bytes_written_;
  for (const std::uint16_t channel_id : chunk_channels_) {
    ChannelState& state = channel_states_[channel_id - 1U];
    if (!state.index_sorted) {
      std::stable_sort(state.index.begin(), state.index.end(),
                       [](const IndexEntry& a, const IndexEntry& b) { return a.log_time_ns < b.log_time_ns; });
    }
    record_.clear();
    put_u16(record_, channel_id);
    put_u32(record_, static_cast<std::uint32_t>(state.index.size() * 16));
    for (const IndexEntry& entry : state.index) {
      put_u64(record_, entry.log_time_ns);
      put_u64(record_, entry.offset);
    }
    index.message_index_offsets[channel_id] = bytes_written_;
    write_record(Opcode::message_index, record_);
    state.index.clear();
    state.index_sorted = true;
  }
  index.message_index_length = bytes_written_ - indexes_start;
  record_.clear();
  put_u64(record_, index.message_start_time_ns);
  put_u64(record_, index.message_end_time_ns);
  put_u64(record_, index.chunk_start_offset);
  put_u64(record_, index.chunk_length);
  put_u16_u64_map(record_, index.message_index_offsets);
  put_u64(record_, index.message_index_length);
  put_string(record_, compression);
  put_u64(record_, index.compressed_size);
  put_u64(record_, index.uncompressed_size);
  chunk_index_records_.push_back(static_cast<std::uint8_t>(Opcode::chunk_index));
  put_u64(chunk_index_records_, record_.size());
  chunk_index_records_.insert(chunk_index_records_.end(), record_.begin(), record_.end());
  ++chunk_count_;

  chunk_records_.clear();
  chunk_channels_.clear();
  chunk_has_messages_ = false;
}

bool Writer::close(std::string* error) {
  if (file_ == nullptr) {
    if (error != nullptr) *error = "mcap writer: close: writer is not open";
    return false;
  }
  if (!io_failed_) {
    flush_chunk();
    write_summary_and_footer();
  }
  if (std::fclose(file_) != 0 && !io_failed_) {
    io_failed_ = true;
    fail("mcap writer: closing " + path_ + " failed: " + std::strerror(errno));
  }
  file_ = nullptr;
  if (!error_.empty()) {
    if (error != nullptr) *error = error_;
    return false;
  }
  return true;
}

void Writer::write_summary_and_footer() {
  // Data End carries the CRC of every byte before it
  record_.clear();
  put_u32(record_, crc_);
  write_record(Opcode::data_end, record_);
  crc_ = 0;  // from here the running CRC is the summary CRC

  struct Group {
    Opcode opcode;
    std::uint64_t start;
    std::uint64_t length;
  };
  std::vector<Group> groups;
  const auto group = [&](Opcode opcode, const auto& write_group) {
    const std::uint64_t start = bytes_written_;
    write_group();
    if (bytes_written_ > start) groups.push_back({opcode, start, bytes_written_ - start});
  };
  const std::uint64_t summary_start = bytes_written_;

  group(Opcode::schema, [&] {
    for (const Schema& schema : schemas_) {
      encode_schema(schema);
      write_record(Opcode::schema, record_);
    }
  });
  group(Opcode::channel, [&] {
    for (const Channel& channel : channels_) {
      encode_channel(channel);
      write_record(Opcode::channel, record_);
    }
  });
  group(Opcode::statistics, [&] {
    std::map<std::uint16_t, std::uint64_t> counts;
    for (std::size_t i = 0; i < channels_.size(); ++i) counts[channels_[i].id] = channel_states_[i].message_count;
    record_.clear();
    put_u64(record_, message_count_);
    put_u16(record_, static_cast<std::uint16_t>(schemas_.size()));
    put_u32(record_, static_cast<std::uint32_t>(channels_.size()));
    put_u32(record_, static_cast<std::uint32_t>(attachment_indexes_.size()));
    put_u32(record_, static_cast<std::uint32_t>(metadata_indexes_.size()));
    put_u32(record_, chunk_count_);
    put_u64(record_, message_start_time_ns_);
    put_u64(record_, message_end_time_ns_);
    put_u16_u64_map(record_, counts);
    write_record(Opcode::statistics, record_);
  });
  group(Opcode::chunk_index, [&] { write_bytes(chunk_index_records_.data(), chunk_index_records_.size()); });
  group(Opcode::attachment_index, [&] {
    for (const AttachmentIndex& index : attachment_indexes_) {
      record_.clear();
      put_u64(record_, index.offset);
      put_u64(record_, index.length);
      put_u64(record_, index.log_time_ns);
      put_u64(record_, index.create_time_ns);
      put_u64(record_, index.data_size);
      put_string(record_, index.name);
      put_string(record_, index.media_type);
      write_record(Opcode::attachment_index, record_);
    }
  });
  group(Opcode::metadata_index, [&] {
    for (const MetadataIndex& index : metadata_indexes_) {
      record_.clear();
      put_u64(record_, index.offset);
      put_u64(record_, index.length);
      put_string(record_, index.name);
      write_record(Opcode::metadata_index, record_);
    }
  });

  const std::uint64_t summary_offset_start = bytes_written_;
  for (const Group& g : groups) {
    record_.clear();
    put_u8(record_, static_cast<std::uint8_t>(g.opcode));
    put_u64(record_, g.start);
    put_u64(record_, g.length);
    write_record(Opcode::summary_offset, record_);
  }

  // the summary CRC runs through the footer's summary_offset_start field
  write_prefix(Opcode::footer, 8 + 8 + 4);
  record_.clear();
  put_u64(record_, groups.empty() ? 0 : summary_start);
  put_u64(record_, groups.empty() ? 0 : summary_offset_start);
  write_bytes(record_.data(), record_.size());
  record_.clear();
  put_u32(record_, crc_);
  write_bytes(record_.data(), record_.size());
  write_bytes(kMagic.data(), kMagic.size());
}

}  // namespace tether::runtime::mcap
