// SPDX-License-Identifier: Apache-2.0
// Reader::scan: what open() checks of a whole file, the data section record by record, then
// the summary section and footer against what the data holds (docs/recording.md).
#include "tether/recording/mcap_reader.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <utility>

#include "mcap_records.hpp"

namespace tether::runtime::mcap {

using namespace detail;

namespace {

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
}  // namespace

// a message index in the data section: after a chunk, for a known channel, its entries
// inside that chunk
bool Reader::scan_message_index(const Record& record, std::uint64_t pos, bool seen_chunk) {
  const auto where = [&] { return at(record.opcode, pos) + ": "; };
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
  return true;
}

// an attachment in the data section: kept, with its CRC checked
bool Reader::scan_attachment(const Record& record, std::uint64_t pos) {
  const auto where = [&] { return at(record.opcode, pos) + ": "; };
  const bool verify = options_.verify_crcs;
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
      case Opcode::message_index:
        if (!scan_message_index(record, pos, seen_chunk)) return false;
        break;
      case Opcode::attachment:
        if (!scan_attachment(record, pos)) return false;
        break;
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

// what the summary section holds, gathered record by record, then checked against the data
struct Reader::SummaryScan {
  std::uint32_t crc = 0;  // of the summary section so far
  std::uint64_t records = 0;
  std::uint64_t first_summary_offset = 0;  // 0: none seen
  bool have_statistics = false;
  Statistics statistics;
  std::uint64_t statistics_offset = 0;
  std::vector<ChunkIndex> chunk_indexes;
  std::vector<SpanIndex> attachment_indexes;
  std::vector<SpanIndex> metadata_indexes;
};

bool Reader::scan_summary(std::uint64_t summary_start) {
  SummaryScan s;
  Record record;
  std::uint64_t pos = summary_start;
  // failed: fail() said why; truncated: the data is complete, only the index is lost
  switch (scan_summary_records(summary_start, s, record, pos)) {
    case Fetch::failed: return false;
    case Fetch::truncated: return true;
    case Fetch::ok: break;
  }
  switch (scan_footer(summary_start, s, record, pos)) {
    case Fetch::failed: return false;
    case Fetch::truncated: return true;
    case Fetch::ok: break;
  }
  info_.has_footer = true;
  if (!check_summary(s)) return false;
  info_.has_summary = s.records > 0;
  info_.has_statistics = s.have_statistics;
  return true;
}

// the summary section's records up to the footer (`record` and `pos` are then the footer's)
Reader::Fetch Reader::scan_summary_records(std::uint64_t summary_start, SummaryScan& s, Record& record,
                                           std::uint64_t& pos) {
  const bool verify = options_.verify_crcs;
  std::string why;
  for (;;) {
    const Fetch fetched = read_record(pos, scan_record_, record, why);
    if (fetched == Fetch::failed) {
      fail(why);
      return Fetch::failed;
    }
    if (fetched == Fetch::truncated) {
      // the data is complete; only the index is lost
      info_.truncated = true;
      info_.truncated_at_offset = pos;
      info_.truncation = why + " (in the summary section)";
      return Fetch::truncated;
    }
    const auto where = [&] { return at(record.opcode, pos) + ": "; };
    if (record.opcode == static_cast<std::uint8_t>(Opcode::footer)) return Fetch::ok;

    if (verify) {
      std::uint8_t prefix[kRecordPrefixBytes];
      prefix[0] = record.opcode;
      for (int i = 0; i < 8; ++i) prefix[1 + i] = static_cast<std::uint8_t>(record.length >> (8 * i));
      s.crc = crc32(crc32(s.crc, prefix, sizeof prefix), record.content.data(), record.content.size());
    }
    if (record.opcode == static_cast<std::uint8_t>(Opcode::summary_offset)) {
      Cursor c(record.content);
      std::uint8_t group_opcode = 0;
      std::uint64_t group_start = 0;
      std::uint64_t group_length = 0;
      if (!c.u8(group_opcode, "group_opcode") || !c.u64(group_start, "group_start") ||
          !c.u64(group_length, "group_length")) {
        fail(where() + c.why());
        return Fetch::failed;
      }
      if (group_start < summary_start || !inside(group_start, group_length, pos)) {
        fail(where() + format("group [%llu, +%llu) lies outside the summary section [%llu, %llu)", ull(group_start),
                              ull(group_length), ull(summary_start), ull(pos)));
        return Fetch::failed;
      }
      if (s.first_summary_offset == 0) s.first_summary_offset = pos;
      pos += kRecordPrefixBytes + record.length;
      continue;
    }
    if (s.first_summary_offset != 0) {
      fail(where() + "summary record after the summary offset section");
      return Fetch::failed;
    }
    ++s.records;
    if (!scan_summary_record(record, pos, s)) return Fetch::failed;
    pos += kRecordPrefixBytes + record.length;
  }
}

// one record of the summary section (not a summary offset), at `pos`
bool Reader::scan_summary_record(const Record& record, std::uint64_t pos, SummaryScan& s) {
  const auto where = [&] { return at(record.opcode, pos) + ": "; };
  std::string why;
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
      if (s.have_statistics) return fail(where() + "a second statistics record");
      Cursor c(record.content);
      Statistics& st = s.statistics;
      if (!c.u64(st.message_count, "message_count") || !c.u16(st.schema_count, "schema_count") ||
          !c.u32(st.channel_count, "channel_count") || !c.u32(st.attachment_count, "attachment_count") ||
          !c.u32(st.metadata_count, "metadata_count") || !c.u32(st.chunk_count, "chunk_count") ||
          !c.u64(st.message_start_time_ns, "message_start_time") ||
          !c.u64(st.message_end_time_ns, "message_end_time") ||
          !c.u16_u64_map(st.channel_message_counts, "channel_message_counts")) {
        return fail(where() + c.why());
      }
      s.have_statistics = true;
      s.statistics_offset = pos;
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
      s.chunk_indexes.push_back(std::move(ci));
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
      s.attachment_indexes.push_back(index);
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
      s.metadata_indexes.push_back(index);
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
  return true;
}

// the footer at `pos`, then the closing magic and nothing else
Reader::Fetch Reader::scan_footer(std::uint64_t summary_start, const SummaryScan& s, const Record& record,
                                  std::uint64_t pos) {
  const auto failed = [&](std::string message) {
    fail(std::move(message));
    return Fetch::failed;
  };
  const std::uint64_t footer_offset = pos;
  const std::string where = at("footer", footer_offset) + ": ";
  Cursor c(record.content);
  std::uint64_t summary_start_field = 0;
  std::uint64_t summary_offset_start_field = 0;
  std::uint32_t summary_crc = 0;
  if (!c.u64(summary_start_field, "summary_start") || !c.u64(summary_offset_start_field, "summary_offset_start") ||
      !c.u32(summary_crc, "summary_crc")) {
    return failed(where + c.why());
  }
  const std::uint64_t magic_offset = footer_offset + kRecordPrefixBytes + record.length;
  if (size_ - magic_offset < kMagic.size()) {
    info_.truncated = true;
    info_.truncated_at_offset = magic_offset;
    info_.truncation =
        format("closing magic at offset %llu is cut, %llu bytes left", ull(magic_offset), ull(size_ - magic_offset));
    return Fetch::truncated;
  }
  std::array<std::uint8_t, kMagic.size()> magic{};
  if (!read_exact(magic_offset, magic.data(), magic.size())) {
    return failed(format("read error at offset %llu: %s", ull(magic_offset), std::strerror(errno)));
  }
  if (magic != kMagic) {
    return failed(format("offset %llu: bad closing magic", ull(magic_offset)));
  }
  if (magic_offset + kMagic.size() != size_) {
    return failed(format("offset %llu: %llu unexpected bytes after the closing magic",
                         ull(magic_offset + kMagic.size()), ull(size_ - magic_offset - kMagic.size())));
  }
  if (options_.verify_crcs && summary_crc != 0) {
    std::uint8_t prefix[kRecordPrefixBytes];
    prefix[0] = record.opcode;
    for (int i = 0; i < 8; ++i) prefix[1 + i] = static_cast<std::uint8_t>(record.length >> (8 * i));
    const std::uint32_t crc = crc32(crc32(s.crc, prefix, sizeof prefix), record.content.data(), 16);
    if (crc != summary_crc) {
      return failed(where + format("summary CRC mismatch (stored 0x%08x, computed 0x%08x)", summary_crc, crc));
    }
  }
  const std::uint64_t expected_summary_start = s.records > 0 ? summary_start : 0;
  if (summary_start_field != expected_summary_start && !(s.records == 0 && summary_start_field == pos)) {
    return failed(
        where + format("summary_start is %llu, expected %llu", ull(summary_start_field), ull(expected_summary_start)));
  }
  if (summary_offset_start_field != s.first_summary_offset &&
      !(s.first_summary_offset == 0 && summary_offset_start_field == pos)) {
    return failed(where + format("summary_offset_start is %llu, expected %llu", ull(summary_offset_start_field),
                                 ull(s.first_summary_offset)));
  }
  return Fetch::ok;
}

// the summary must agree with what the data section holds
bool Reader::check_summary(const SummaryScan& summary) {
  if (summary.have_statistics) {
    const Statistics& s = summary.statistics;
    const std::string swhere = at("statistics", summary.statistics_offset) + ": ";
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
  if (!summary.chunk_indexes.empty()) {
    if (summary.chunk_indexes.size() != chunks_.size()) {
      return fail(
          at("chunk index", summary.chunk_indexes.front().offset) +
          format(": %llu chunk indexes for %llu chunks", ull(summary.chunk_indexes.size()), ull(chunks_.size())));
    }
    for (const ChunkIndex& ci : summary.chunk_indexes) {
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
  if (!check_spans(summary.attachment_indexes, attachment_spans_, "attachment index")) return false;
  return check_spans(summary.metadata_indexes, metadata_spans_, "metadata index");
}

}  // namespace tether::runtime::mcap
