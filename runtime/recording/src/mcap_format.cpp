// SPDX-License-Identifier: Apache-2.0
#include "tether/recording/mcap_format.hpp"

#include <cstdio>

namespace tether::runtime::mcap {
namespace {

// slicing-by-8 tables, built at compile time: table[0] is the classic
// byte-at-a-time table, table[k] advances a byte through k more zero bytes
constexpr std::array<std::array<std::uint32_t, 256>, 8> make_crc_tables() {
  std::array<std::array<std::uint32_t, 256>, 8> tables{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) {
      c = (c & 1U) != 0 ? 0xEDB88320U ^ (c >> 1) : c >> 1;
    }
    tables[0][i] = c;
  }
  for (std::size_t k = 1; k < 8; ++k) {
    for (std::size_t i = 0; i < 256; ++i) {
      const std::uint32_t prev = tables[k - 1][i];
      tables[k][i] = (prev >> 8) ^ tables[0][prev & 0xFFU];
    }
  }
  return tables;
}

constexpr std::array<std::array<std::uint32_t, 256>, 8> kCrcTables = make_crc_tables();

}  // namespace

std::string opcode_name(std::uint8_t opcode) {
  switch (static_cast<Opcode>(opcode)) {
    case Opcode::header: return "header";
    case Opcode::footer: return "footer";
    case Opcode::schema: return "schema";
    case Opcode::channel: return "channel";
    case Opcode::message: return "message";
    case Opcode::chunk: return "chunk";
    case Opcode::message_index: return "message index";
    case Opcode::chunk_index: return "chunk index";
    case Opcode::attachment: return "attachment";
    case Opcode::attachment_index: return "attachment index";
    case Opcode::statistics: return "statistics";
    case Opcode::metadata: return "metadata";
    case Opcode::metadata_index: return "metadata index";
    case Opcode::summary_offset: return "summary offset";
    case Opcode::data_end: return "data end";
  }
  char text[32];
  std::snprintf(text, sizeof text, "opcode 0x%02x", static_cast<unsigned>(opcode));
  return text;
}

std::uint32_t crc32(std::uint32_t crc, const void* data, std::size_t size) {
  // the stored value is the finalised (inverted) register, so chaining works
  std::uint32_t c = ~crc;
  const auto* p = static_cast<const std::uint8_t*>(data);
  const auto& t = kCrcTables;
  // eight bytes per step (the writer and reader CRC every byte they touch)
  while (size >= 8) {
    const std::uint32_t one = get_u32(p) ^ c;
    const std::uint32_t two = get_u32(p + 4);
    c = t[7][one & 0xFFU] ^ t[6][(one >> 8) & 0xFFU] ^ t[5][(one >> 16) & 0xFFU] ^ t[4][one >> 24] ^ t[3][two & 0xFFU] ^
        t[2][(two >> 8) & 0xFFU] ^ t[1][(two >> 16) & 0xFFU] ^ t[0][two >> 24];
    p += 8;
    size -= 8;
  }
  for (std::size_t i = 0; i < size; ++i) {
    c = t[0][(c ^ p[i]) & 0xFFU] ^ (c >> 8);
  }
  return ~c;
}

void put_u8(std::vector<std::uint8_t>& out, std::uint8_t value) { out.push_back(value); }

void put_u16(std::vector<std::uint8_t>& out, std::uint16_t value) {
  out.push_back(static_cast<std::uint8_t>(value));
  out.push_back(static_cast<std::uint8_t>(value >> 8));
}

void put_u32(std::vector<std::uint8_t>& out, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}

void put_u64(std::vector<std::uint8_t>& out, std::uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}

void put_bytes(std::vector<std::uint8_t>& out, const void* data, std::size_t size) {
  if (size == 0) return;
  const auto* p = static_cast<const std::uint8_t*>(data);
  out.insert(out.end(), p, p + size);
}

void put_string(std::vector<std::uint8_t>& out, std::string_view value) {
  put_u32(out, static_cast<std::uint32_t>(value.size()));
  put_bytes(out, value.data(), value.size());
}

void put_string_map(std::vector<std::uint8_t>& out, const std::map<std::string, std::string>& map) {
  // the byte length comes first, so write a placeholder and patch it
  const std::size_t length_at = out.size();
  put_u32(out, 0);
  for (const auto& [key, value] : map) {
    put_string(out, key);
    put_string(out, value);
  }
  const auto length = static_cast<std::uint32_t>(out.size() - length_at - 4);
  for (int i = 0; i < 4; ++i)
    out[length_at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(length >> (8 * i));
}

void put_u16_u64_map(std::vector<std::uint8_t>& out, const std::map<std::uint16_t, std::uint64_t>& map) {
  put_u32(out, static_cast<std::uint32_t>(map.size() * 10));
  for (const auto& [key, value] : map) {
    put_u16(out, key);
    put_u64(out, value);
  }
}

std::uint16_t get_u16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }

std::uint32_t get_u32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

std::uint64_t get_u64(const std::uint8_t* p) {
  return static_cast<std::uint64_t>(get_u32(p)) | (static_cast<std::uint64_t>(get_u32(p + 4)) << 32);
}

}  // namespace tether::runtime::mcap
