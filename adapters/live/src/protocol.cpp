// SPDX-License-Identifier: Apache-2.0
#include "tether/live/protocol.hpp"

#include <cstring>

namespace tether::live {

namespace {

void put32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
std::uint32_t get32(std::string_view b, std::size_t at) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<std::size_t>(i)]);
  return v;
}
std::uint64_t get64(std::string_view b, std::size_t at) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<std::size_t>(i)]);
  return v;
}

void encode_call(std::uint8_t op, std::uint32_t service, std::uint32_t call, std::string_view encoding,
                 std::string_view payload, std::string& out) {
  out.clear();
  out.reserve(13 + encoding.size() + payload.size());
  out.push_back(static_cast<char>(op));
  put32(out, service);
  put32(out, call);
  put32(out, static_cast<std::uint32_t>(encoding.size()));
  out.append(encoding);
  out.append(payload);
}

}  // namespace

void encode_message_data(std::uint32_t subscription, std::uint64_t time_ns, std::string_view payload,
                         std::string& out) {
  out.clear();
  out.reserve(13 + payload.size());
  out.push_back(0x01);
  put32(out, subscription);
  put64(out, time_ns);
  out.append(payload);
}

void encode_time(std::uint64_t time_ns, std::string& out) {
  out.clear();
  out.push_back(0x02);
  put64(out, time_ns);
}

void encode_service_response(std::uint32_t service, std::uint32_t call, std::string_view encoding,
                             std::string_view payload, std::string& out) {
  encode_call(0x03, service, call, encoding, payload, out);
}

void encode_service_call(std::uint32_t service, std::uint32_t call, std::string_view encoding, std::string_view payload,
                         std::string& out) {
  encode_call(0x02, service, call, encoding, payload, out);
}

bool decode_service_call(std::string_view f, ServiceCall& out, std::string* why, std::uint8_t opcode) {
  auto fail = [why](const char* text) {
    if (why) *why = text;
    return false;
  };
  if (f.size() < 13) return fail("shorter than its 13-byte header (opcode, service, call, encoding length)");
  if (static_cast<std::uint8_t>(f[0]) != opcode) return fail("wrong opcode");
  out.service = get32(f, 1);
  out.call = get32(f, 5);
  const std::uint32_t n = get32(f, 9);
  if (n > f.size() - 13) return fail("its encoding length runs past the end of the frame");
  out.encoding.assign(f.substr(13, n));
  out.payload.assign(f.substr(13 + n));
  return true;
}

bool decode_message_data(std::string_view f, MessageData& out) {
  if (f.size() < 13 || f[0] != 0x01) return false;
  out.subscription = get32(f, 1);
  out.time_ns = get64(f, 5);
  out.payload = f.substr(13);
  return true;
}

bool decode_time(std::string_view f, std::uint64_t& time_ns) {
  if (f.size() != 9 || f[0] != 0x02) return false;
  time_ns = get64(f, 1);
  return true;
}

}  // namespace tether::live
