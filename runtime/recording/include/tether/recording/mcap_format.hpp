// SPDX-License-Identifier: Apache-2.0
#pragma once
// MCAP format constants and helpers shared by our writer and reader.
// Everything here follows the published MCAP specification (major version 0):
// little-endian integers, strings as uint32 length + bytes, maps as uint32
// byte length + entries, records as <opcode u8><content length u64><content>.

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tether::runtime::mcap {

/// The 8 bytes every MCAP file starts and ends with ("\x89MCAP0\r\n").
inline constexpr std::array<std::uint8_t, 8> kMagic = {0x89, 'M', 'C', 'A', 'P', 0x30, '\r', '\n'};

/// Bytes in front of every record's content: opcode (1) + content length (8).
inline constexpr std::size_t kRecordPrefixBytes = 9;

/// Record opcodes of the MCAP specification.
enum class Opcode : std::uint8_t {
  header = 0x01,
  footer = 0x02,
  schema = 0x03,
  channel = 0x04,
  message = 0x05,
  chunk = 0x06,
  message_index = 0x07,
  chunk_index = 0x08,
  attachment = 0x09,
  attachment_index = 0x0A,
  statistics = 0x0B,
  metadata = 0x0C,
  metadata_index = 0x0D,
  summary_offset = 0x0E,
  data_end = 0x0F,
};

/// Human-readable record name for an opcode ("chunk", "message index", "opcode 0x42").
std::string opcode_name(std::uint8_t opcode);

/// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320) continued from `crc`;
/// start with 0, and crc32(crc32(0, a), b) == crc32(0, a + b).
std::uint32_t crc32(std::uint32_t crc, const void* data, std::size_t size);

/// Appends one byte to `out`.
void put_u8(std::vector<std::uint8_t>& out, std::uint8_t value);
/// Appends a little-endian uint16 to `out`.
void put_u16(std::vector<std::uint8_t>& out, std::uint16_t value);
/// Appends a little-endian uint32 to `out`.
void put_u32(std::vector<std::uint8_t>& out, std::uint32_t value);
/// Appends a little-endian uint64 to `out`.
void put_u64(std::vector<std::uint8_t>& out, std::uint64_t value);
/// Appends raw bytes to `out`.
void put_bytes(std::vector<std::uint8_t>& out, const void* data, std::size_t size);
/// Appends a String: uint32 byte length + bytes (caller ensures size < 2^32).
void put_string(std::vector<std::uint8_t>& out, std::string_view value);
/// Appends a Map<string, string>: uint32 byte length + (key, value) strings.
void put_string_map(std::vector<std::uint8_t>& out, const std::map<std::string, std::string>& map);
/// Appends a Map<uint16, uint64>: uint32 byte length + (key, value) pairs.
void put_u16_u64_map(std::vector<std::uint8_t>& out, const std::map<std::uint16_t, std::uint64_t>& map);

/// Returns the little-endian uint16 at `p` (the caller has checked the bounds).
std::uint16_t get_u16(const std::uint8_t* p);
/// Returns the little-endian uint32 at `p` (the caller has checked the bounds).
std::uint32_t get_u32(const std::uint8_t* p);
/// Returns the little-endian uint64 at `p` (the caller has checked the bounds).
std::uint64_t get_u64(const std::uint8_t* p);

/// Header record contents.
struct Header {
  std::string profile;
  std::string library;
};

/// Schema record contents (id 0 is reserved for "no schema").
struct Schema {
  std::uint16_t id = 0;
  std::string name;
  std::string encoding;
  std::string data;
  bool operator==(const Schema&) const = default;
};

/// Channel record contents.
struct Channel {
  std::uint16_t id = 0;
  std::uint16_t schema_id = 0;
  std::string topic;
  std::string message_encoding;
  std::map<std::string, std::string> metadata;
  bool operator==(const Channel&) const = default;
};

/// Metadata record contents.
struct Metadata {
  std::string name;
  std::map<std::string, std::string> entries;
  bool operator==(const Metadata&) const = default;
};

/// Attachment record contents.
struct Attachment {
  std::uint64_t log_time_ns = 0;
  std::uint64_t create_time_ns = 0;
  std::string name;
  std::string media_type;
  std::string data;
  bool operator==(const Attachment&) const = default;
};

}  // namespace tether::runtime::mcap
