// SPDX-License-Identifier: Apache-2.0
#pragma once
// MCAP recording writer, written from the published MCAP specification.
//
// File layout produced:
//   Magic, Header, then the data section: Schema and Channel records as they
//   are added, Metadata and Attachment records, and Chunks (zstd or
//   uncompressed) of Message records each followed by its Message Index
//   records; on close a Data End (data section CRC), the summary (Schemas,
//   Channels, Statistics, Chunk Indexes, Attachment Indexes, Metadata
//   Indexes), Summary Offsets, Footer (summary CRC) and the closing Magic.
//
// Crash safety: schemas and channels go to the file before any chunk that
// uses them, and flush_chunk() hands everything to the OS, so a process killed
// after flush_chunk() leaves a file whose complete chunks a streaming reader
// can still decode. The writer is not meant for the real-time step: a
// recorder thread calls it. Per message it copies into a reused chunk buffer.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tether/recording/mcap_format.hpp"

struct ZSTD_CCtx_s;

namespace tether::runtime::mcap {

/// What the writer puts into the file and how it chunks it.
struct WriterOptions {
  std::string profile;                     ///< Header profile ("" or an "x-..." custom profile)
  std::string library = "tether";          ///< Header library string
  bool compress = true;                    ///< zstd chunks when true, uncompressed ("") chunks otherwise
  int zstd_level = 1;                      ///< zstd compression level
  std::size_t chunk_size_bytes = 1 << 20;  ///< a chunk is written once its records reach this size
};

/// Writes one MCAP file. Not thread-safe: one recorder thread owns it.
/// Errors latch: the first one is kept (error()), close() reports it.
class Writer {
 public:
  /// Creates a closed writer; open() starts a file.
  Writer();
  /// Closes the file if still open (the error, if any, is dropped).
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  /// Creates/truncates `path` and writes the magic and Header; false with `error` set on failure.
  [[nodiscard]] bool open(const std::string& path, const WriterOptions& options, std::string* error);

  /// Registers a schema and writes its record; returns its id (1, 2, ...) or 0 on error.
  std::uint16_t add_schema(std::string name, std::string encoding, std::string_view data);

  /// Registers a channel (schema_id 0 = no schema) and writes its record; returns its id (1, 2, ...) or 0 on error.
  std::uint16_t add_channel(std::uint16_t schema_id, std::string topic, std::string message_encoding,
                            std::map<std::string, std::string> metadata = {});

  /// Appends a message to the open chunk; writes the chunk once it reaches chunk_size_bytes.
  void write(std::uint16_t channel_id, std::uint32_t sequence, std::uint64_t log_time_ns, std::uint64_t publish_time_ns,
             std::span<const std::byte> data);
  /// Same, with the payload as a string_view.
  void write(std::uint16_t channel_id, std::uint32_t sequence, std::uint64_t log_time_ns, std::uint64_t publish_time_ns,
             std::string_view data);

  /// Writes a Metadata record (name + key/value map) to the data section.
  void add_metadata(std::string name, std::map<std::string, std::string> entries);

  /// Writes an Attachment record (with its CRC) to the data section.
  void add_attachment(std::string name, std::string media_type, std::uint64_t log_time_ns, std::uint64_t create_time_ns,
                      std::string_view data);

  /// Writes the open chunk (if any) and its message indexes, then flushes the
  /// stdio buffer to the OS (no fsync): a SIGKILL after this loses nothing written so far.
  void flush_chunk();

  /// Writes the last chunk, Data End, summary, summary offsets, footer and magic, closes the file;
  /// false with `error` set if anything failed since open().
  [[nodiscard]] bool close(std::string* error);

  /// Returns true between a successful open() and close().
  bool is_open() const { return file_ != nullptr; }
  /// Returns true while no error has happened.
  bool ok() const { return error_.empty(); }
  /// Returns the first error ("" if none).
  const std::string& error() const { return error_; }
  /// Returns the bytes handed to the file so far (the open chunk's buffered records not included).
  std::uint64_t bytes_written() const { return bytes_written_; }
  /// Returns the size of the records buffered in the open chunk.
  std::size_t open_chunk_bytes() const { return chunk_records_.size(); }

 private:
  struct IndexEntry {
    std::uint64_t log_time_ns;
    std::uint64_t offset;
  };
  struct ChannelState {
    std::vector<IndexEntry> index;  // entries in the open chunk, cleared (not freed) per chunk
    std::uint64_t message_count = 0;
    bool index_sorted = true;
  };
  struct ChunkIndex {
    std::uint64_t message_start_time_ns;
    std::uint64_t message_end_time_ns;
    std::uint64_t chunk_start_offset;
    std::uint64_t chunk_length;
    std::map<std::uint16_t, std::uint64_t> message_index_offsets;
    std::uint64_t message_index_length;
    std::uint64_t compressed_size;
    std::uint64_t uncompressed_size;
  };
  struct AttachmentIndex {
    std::uint64_t offset;
    std::uint64_t length;
    std::uint64_t log_time_ns;
    std::uint64_t create_time_ns;
    std::uint64_t data_size;
    std::string name;
    std::string media_type;
  };
  struct MetadataIndex {
    std::uint64_t offset;
    std::uint64_t length;
    std::string name;
  };

  void fail(std::string message);
  bool usable(const char* what);
  void write_bytes(const void* data, std::size_t size);
  void write_prefix(Opcode opcode, std::uint64_t content_length);
  void write_record(Opcode opcode, const std::vector<std::uint8_t>& content);
  void encode_schema(const Schema& schema);
  void encode_channel(const Channel& channel);
  void write_chunk();
  void write_summary_and_footer();
  void reset();

  std::FILE* file_ = nullptr;
  WriterOptions options_;
  std::string path_;
  std::string error_;
  bool io_failed_ = false;
  std::uint64_t bytes_written_ = 0;
  std::uint32_t crc_ = 0;  // running CRC: data section until Data End, then summary

  std::vector<Schema> schemas_;    // index = id - 1
  std::vector<Channel> channels_;  // index = id - 1
  std::vector<ChannelState> channel_states_;

  // open chunk
  std::vector<std::uint8_t> chunk_records_;
  std::vector<std::uint16_t> chunk_channels_;  // channels with messages in the open chunk, in first-use order
  std::uint64_t chunk_start_time_ns_ = 0;
  std::uint64_t chunk_end_time_ns_ = 0;
  bool chunk_has_messages_ = false;

  // reused scratch buffers
  std::vector<std::uint8_t> record_;
  std::vector<std::uint8_t> compressed_;
  ZSTD_CCtx_s* zstd_ = nullptr;

  // summary
  // every chunk's Chunk Index record (prefix and content) as the summary will hold it, encoded
  // when the chunk is written: ~10 bytes per channel in it rather than a map node each (the
  // summary is kept until close, so its size per chunk is what a long recording's writer
  // grows by: docs/reliability.md, "Long trials")
  std::vector<std::uint8_t> chunk_index_records_;
  std::uint32_t chunk_count_ = 0;
  std::vector<AttachmentIndex> attachment_indexes_;
  std::vector<MetadataIndex> metadata_indexes_;
  std::uint64_t message_count_ = 0;
  std::uint64_t message_start_time_ns_ = 0;
  std::uint64_t message_end_time_ns_ = 0;
};

}  // namespace tether::runtime::mcap
