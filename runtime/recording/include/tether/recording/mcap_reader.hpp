// SPDX-License-Identifier: Apache-2.0
#pragma once
// MCAP recording reader, written from the published MCAP specification; used
// by `tether replay` and `tether info`.
//
// open() walks the whole file once, front to back, the way a streaming reader
// does: it checks the magic and Header, every record's bounds, each chunk's
// CRC (after zstd decompression), attachment CRCs, the Data End CRC and, if
// present, the summary (its CRC and that it agrees with what was read). A file
// that ends early (a recorder killed mid-write) is not an error: everything up
// to the last complete record is kept and info().truncated says where it
// stopped. Corrupt input yields an error naming the record and its offset,
// never a crash or an out-of-bounds read. next() then replays the messages
// one chunk at a time.

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tether/recording/mcap_format.hpp"

struct ZSTD_DCtx_s;

namespace tether::runtime::mcap {

/// Limits and checks applied by the reader.
struct ReaderOptions {
  std::uint64_t max_chunk_bytes = std::uint64_t{256} << 20;  ///< largest decompressed chunk accepted
  bool verify_crcs = true;  ///< check chunk, attachment, data section and summary CRCs when non-zero
};

/// What open() learned about the file.
struct Info {
  std::uint64_t file_size_bytes = 0;
  std::uint64_t message_count = 0;
  std::map<std::uint16_t, std::uint64_t> channel_message_counts;  ///< channels with >= 1 message
  std::uint32_t chunk_count = 0;
  std::uint64_t message_start_time_ns = 0;  ///< earliest log time (0 if no messages)
  std::uint64_t message_end_time_ns = 0;    ///< latest log time (0 if no messages)
  std::uint64_t chunk_compressed_bytes = 0;
  std::uint64_t chunk_uncompressed_bytes = 0;
  bool has_data_end = false;
  bool has_summary = false;               ///< summary records present and consistent with the data
  bool has_statistics = false;            ///< a Statistics record was in the summary
  bool has_footer = false;                ///< Footer and closing magic present
  bool truncated = false;                 ///< the file ends before its Footer (e.g. the recorder was killed)
  std::uint64_t truncated_at_offset = 0;  ///< first byte that is not part of a complete record
  std::string truncation;                 ///< what was cut, e.g. "chunk at offset 4096 needs 70000 bytes, 1200 left"
};

/// One message; `data` stays valid until the next call to next(), rewind() or close().
struct MessageView {
  std::uint16_t channel_id = 0;
  std::uint32_t sequence = 0;
  std::uint64_t log_time_ns = 0;
  std::uint64_t publish_time_ns = 0;
  std::span<const std::byte> data;
};

/// Reads one MCAP file (or an in-memory copy of one).
class Reader {
 public:
  /// Creates a reader with the given limits.
  explicit Reader(ReaderOptions options = {});
  /// Closes the file if open.
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  /// Opens and validates `path`; returns false with `error` set if it is not a readable MCAP file.
  [[nodiscard]] bool open(const std::string& path, std::string* error);
  /// Same as open() for a file held in memory (tests, fuzzing).
  [[nodiscard]] bool open_memory(std::string bytes, std::string* error);
  /// Releases the file and everything read from it.
  void close();

  /// Returns the Header record.
  const Header& header() const { return header_; }
  /// Returns the schemas by id (from the data section, plus any only in the summary).
  const std::map<std::uint16_t, Schema>& schemas() const { return schemas_; }
  /// Returns the channels by id (from the data section, plus any only in the summary).
  const std::map<std::uint16_t, Channel>& channels() const { return channels_; }
  /// Returns the schema with `id`, or nullptr.
  const Schema* schema(std::uint16_t id) const;
  /// Returns the channel with `id`, or nullptr.
  const Channel* channel(std::uint16_t id) const;
  /// Returns the Metadata records in file order.
  const std::vector<Metadata>& metadata() const { return metadata_; }
  /// Returns the Attachment records in file order (data included).
  const std::vector<Attachment>& attachments() const { return attachments_; }
  /// Returns counts, times and the truncation state found by open().
  const Info& info() const { return info_; }

  /// Reads the next message in file order; returns false at the end or on error (error() says which).
  [[nodiscard]] bool next(MessageView& out);
  /// Restarts next() from the first message.
  void rewind();
  /// Returns the error that stopped open() or next() ("" if none).
  const std::string& error() const { return error_; }

 private:
  enum class Fetch { ok, truncated, failed };
  struct Record {
    std::uint8_t opcode = 0;
    std::uint64_t offset = 0;
    std::uint64_t length = 0;  // content length
    std::span<const std::uint8_t> content;
  };
  struct ChunkHeader {
    std::uint64_t message_start_time_ns = 0;
    std::uint64_t message_end_time_ns = 0;
    std::uint64_t uncompressed_size = 0;
    std::uint32_t uncompressed_crc = 0;
    std::string_view compression;
    std::span<const std::uint8_t> records;  // as stored (maybe compressed)
  };
  struct ChunkSeen {
    std::uint64_t offset;
    std::uint64_t length;  // whole record, prefix included
    std::uint64_t uncompressed_size;
  };

  bool open_common(std::string* error);
  bool scan();
  bool fail(std::string message);
  bool read_exact(std::uint64_t offset, std::uint8_t* out, std::size_t size);
  bool fetch(std::uint64_t offset, std::uint64_t size, std::vector<std::uint8_t>& scratch,
             std::span<const std::uint8_t>& out);
  Fetch read_record(std::uint64_t offset, std::vector<std::uint8_t>& scratch, Record& out, std::string& why);
  bool load_chunk(const ChunkHeader& chunk, std::vector<std::uint8_t>& buffer, std::span<const std::uint8_t>& records,
                  bool verify_crc, std::string& why);
  bool scan_chunk(const Record& record);
  bool scan_message_index(const Record& record, std::uint64_t pos, bool seen_chunk);
  bool scan_attachment(const Record& record, std::uint64_t pos);
  bool scan_summary(std::uint64_t summary_start);
  struct SummaryScan;  // mcap_scan.cpp
  Fetch scan_summary_records(std::uint64_t summary_start, SummaryScan& s, Record& record, std::uint64_t& pos);
  bool scan_summary_record(const Record& record, std::uint64_t pos, SummaryScan& s);
  Fetch scan_footer(std::uint64_t summary_start, const SummaryScan& s, const Record& record, std::uint64_t pos);
  bool check_summary(const SummaryScan& summary);
  bool add_schema(const Schema& schema, bool from_summary, std::string& why);
  bool add_channel(const Channel& channel, bool from_summary, std::string& why);
  bool count_message(const MessageView& message, std::string& why);
  bool iter_fail(std::string message);

  ReaderOptions options_;
  int fd_ = -1;
  bool in_memory_ = false;
  std::string memory_;
  std::uint64_t size_ = 0;
  bool opened_ = false;
  std::string error_;
  ZSTD_DCtx_s* zstd_ = nullptr;

  Header header_;
  std::map<std::uint16_t, Schema> schemas_;
  std::map<std::uint16_t, Channel> channels_;
  std::vector<Metadata> metadata_;
  std::vector<Attachment> attachments_;
  Info info_;
  std::vector<ChunkSeen> chunks_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> attachment_spans_;  // offset, length
  std::vector<std::pair<std::uint64_t, std::uint64_t>> metadata_spans_;
  std::uint64_t data_start_ = 0;  // first record after the Header
  std::uint64_t data_stop_ = 0;   // Data End record, or where the data was cut

  // open() scratch
  std::vector<std::uint8_t> scan_record_;
  std::vector<std::uint8_t> scan_chunk_;

  // next() state: the current top-level position and the chunk being replayed
  std::uint64_t iter_pos_ = 0;
  std::vector<std::uint8_t> iter_record_;
  std::vector<std::uint8_t> iter_chunk_;
  std::span<const std::uint8_t> iter_records_;
  std::uint64_t iter_chunk_offset_ = 0;
  std::size_t iter_record_pos_ = 0;
  bool iter_failed_ = false;
};

}  // namespace tether::runtime::mcap
