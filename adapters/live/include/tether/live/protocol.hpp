// SPDX-License-Identifier: Apache-2.0
// The byte layouts of foxglove.websocket.v1 that Tether uses (binary ops, little-endian;
// docs/live.md). No sockets here: the server and the client share it, the tests check it.
// The services themselves are a table: tether/live/services.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tether::live {

/// Server op 0x01: u32 subscription, u64 time (ns), payload.
void encode_message_data(std::uint32_t subscription, std::uint64_t time_ns, std::string_view payload, std::string& out);
/// Server op 0x02: u64 time (ns).
void encode_time(std::uint64_t time_ns, std::string& out);
/// Server op 0x03: u32 service, u32 call, u32 encoding length, encoding, payload.
void encode_service_response(std::uint32_t service, std::uint32_t call, std::string_view encoding,
                             std::string_view payload, std::string& out);
/// Client op 0x02, the same layout.
void encode_service_call(std::uint32_t service, std::uint32_t call, std::string_view encoding, std::string_view payload,
                         std::string& out);

struct ServiceCall {
  std::uint32_t service = 0;
  std::uint32_t call = 0;
  std::string encoding;
  std::string payload;
};
/// Client op 0x02 (or server op 0x03 with `opcode` 3); false with the reason if cut short.
bool decode_service_call(std::string_view frame, ServiceCall& out, std::string* why, std::uint8_t opcode = 0x02);

/// Server op 0x01 as a client reads it.
struct MessageData {
  std::uint32_t subscription = 0;
  std::uint64_t time_ns = 0;
  std::string_view payload;
};
bool decode_message_data(std::string_view frame, MessageData& out);
bool decode_time(std::string_view frame, std::uint64_t& time_ns);

}  // namespace tether::live
