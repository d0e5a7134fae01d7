// SPDX-License-Identifier: Apache-2.0
// What both halves of the MCAP reader (mcap_reader.cpp: records, chunks, messages;
// mcap_scan.cpp: checking the file at open) read records with: a bounds-checked cursor,
// the record parsers and the error-message helpers.
#pragma once

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>

#include "tether/recording/mcap_reader.hpp"

namespace tether::runtime::mcap::detail {

using Bytes = std::span<const std::uint8_t>;

[[gnu::format(printf, 1, 2)]] inline std::string format(const char* pattern, ...) {
  char text[512];
  va_list args;
  va_start(args, pattern);
  std::vsnprintf(text, sizeof text, pattern, args);
  va_end(args);
  return text;
}

inline unsigned long long ull(std::uint64_t value) { return static_cast<unsigned long long>(value); }

// strings from a damaged file go into error messages: keep them short and printable
inline std::string printable(std::string_view text) {
  std::string out;
  for (const char c : text.substr(0, 40)) out += (c >= 0x20 && c < 0x7F) ? c : '?';
  if (text.size() > 40) out += "...";
  return out;
}

inline std::string at(const char* what, std::uint64_t offset) { return format("%s at offset %llu", what, ull(offset)); }

inline std::string at(std::uint8_t opcode, std::uint64_t offset) { return at(opcode_name(opcode).c_str(), offset); }

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

inline bool parse_header(Bytes content, Header& out, std::string& why) {
  Cursor c(content);
  if (c.string(out.profile, "profile") && c.string(out.library, "library")) return true;
  why = c.why();
  return false;
}

inline bool parse_schema(Bytes content, Schema& out, std::string& why) {
  Cursor c(content);
  if (c.u16(out.id, "id") && c.string(out.name, "name") && c.string(out.encoding, "encoding") &&
      c.string(out.data, "data")) {
    return true;
  }
  why = c.why();
  return false;
}

inline bool parse_channel(Bytes content, Channel& out, std::string& why) {
  Cursor c(content);
  if (c.u16(out.id, "id") && c.u16(out.schema_id, "schema_id") && c.string(out.topic, "topic") &&
      c.string(out.message_encoding, "message_encoding") && c.string_map(out.metadata, "metadata")) {
    return true;
  }
  why = c.why();
  return false;
}

inline bool parse_message(Bytes content, MessageView& out, std::string& why) {
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

inline bool parse_metadata(Bytes content, Metadata& out, std::string& why) {
  Cursor c(content);
  if (c.string(out.name, "name") && c.string_map(out.entries, "metadata")) return true;
  why = c.why();
  return false;
}

// A pair of closed-range checks that cannot overflow.
inline bool inside(std::uint64_t offset, std::uint64_t length, std::uint64_t size) {
  return offset <= size && length <= size - offset;
}

}  // namespace tether::runtime::mcap::detail
