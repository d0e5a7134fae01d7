// SPDX-License-Identifier: Apache-2.0
// MAVLink 2 framing of our own (docs/mavlink.md), without any I/O: a frame encoder and a
// streaming decoder that takes bytes as they come from a TCP socket and gives whole frames.
// Debian ships no MAVLink library; the layout follows mavlink.io's "Packet Serialization" page.
//
// Frame: 0xFD, len, incompat_flags, compat_flags, seq, sysid, compid, msgid (24 bits, little
// endian), len payload bytes, CRC-16/MCRF4XX over everything after 0xFD plus the message's
// CRC_EXTRA byte, and a 13-byte signature when incompat_flags has bit 0 (signed).
//
// MAVLink 2 only: 0xFE (MAVLink 1) frames are skipped as garbage. Signed frames are never
// delivered: we hold no key and cannot check a signature, so a signed frame whose checksum is
// right is skipped whole (signature included) and counted in `signed_frames`; we never sign.
// The messages themselves (payload layouts, CRC_EXTRA) are in mavlink_messages.hpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace tether::adapters::mavlink {

inline constexpr std::uint8_t stx = 0xFD;  // MAVLink 2's start byte
inline constexpr std::size_t header_size = 10;  // stx .. msgid
inline constexpr std::size_t checksum_size = 2;
inline constexpr std::size_t signature_size = 13;
inline constexpr std::size_t max_payload_size = 255;
inline constexpr std::size_t max_frame_size = header_size + max_payload_size + checksum_size + signature_size;
inline constexpr std::uint8_t incompat_signed = 0x01;  // the only incompat flag MAVLink 2 defines
inline constexpr std::uint32_t max_msgid = 0xFFFFFF;

/// One byte into a running CRC-16/MCRF4XX (X.25: reflected 0x1021, init 0xFFFF, no final xor).
constexpr std::uint16_t crc_accumulate(std::uint8_t byte, std::uint16_t crc) {
  std::uint8_t t = static_cast<std::uint8_t>(byte ^ (crc & 0xFF));
  t = static_cast<std::uint8_t>(t ^ (t << 4));
  return static_cast<std::uint16_t>((crc >> 8) ^ (t << 8) ^ (t << 3) ^ (t >> 4));
}
/// CRC-16/MCRF4XX of bytes, continuing from crc (0xFFFF starts one).
std::uint16_t crc_x25(std::span<const std::uint8_t> bytes, std::uint16_t crc = 0xFFFF);

/// What the framing must know of a message to check and skip it.
struct MessageInfo {
  std::uint32_t id = 0;
  std::uint8_t crc_extra = 0;   // from the XML definition (a CRC of its name and base fields)
  std::uint8_t min_length = 0;  // payload bytes of the base fields
  std::uint8_t max_length = 0;  // with the extension fields
  const char* name = "";
};

/// The entry for msgid in a table sorted by id (mavlink::known_messages() is one), or nullptr.
const MessageInfo* find_message(std::span<const MessageInfo> table, std::uint32_t msgid);

/// A frame's header fields, as sent or as received.
struct Header {
  std::uint8_t incompat_flags = 0;
  std::uint8_t compat_flags = 0;
  std::uint8_t seq = 0;
  std::uint8_t sysid = 0;
  std::uint8_t compid = 0;
  std::uint32_t msgid = 0;
};

/// A frame the decoder delivered: its checksum held and it was not signed. The payload is
/// zero past `length`, so a message decoder reads truncated trailing fields as 0.
struct Frame {
  Header header;
  std::uint8_t length = 0;  // payload bytes on the wire
  std::array<std::uint8_t, max_payload_size> payload{};
};

/// Writes one frame of header.msgid with this payload into out. Trailing zero bytes of the
/// payload are not sent (the first byte always is, as the specification asks). Returns the
/// frame's size, or 0 when it cannot be sent: a payload over 255 bytes, a msgid over 24 bits,
/// or the signed flag set (we cannot sign).
[[nodiscard]] std::size_t encode_frame(const Header& header, std::uint8_t crc_extra,
                                       std::span<const std::uint8_t> payload,
                                       std::span<std::uint8_t, max_frame_size> out);

/// What the decoder saw, counted. Every byte pushed ends in exactly one of frame_bytes,
/// skipped_bytes, garbage_bytes, truncated_bytes, or is still pending().
struct DecoderCounters {
  std::uint64_t bytes = 0;            // pushed
  std::uint64_t frames = 0;           // delivered by next()
  std::uint64_t frame_bytes = 0;      // bytes of delivered frames
  std::uint64_t bad_crc = 0;          // known msgid, wrong checksum: its 0xFD dropped, search resumes after it
  std::uint64_t unknown_msgid = 0;    // msgid not in the table: skipped whole by its length, checksum unchecked
  std::uint64_t signed_frames = 0;    // checksum right but signed: skipped whole with the signature
  std::uint64_t bad_flags = 0;        // incompat flags other than "signed": its 0xFD dropped
  std::uint64_t skipped_bytes = 0;    // bytes of unknown-msgid and signed frames
  std::uint64_t garbage_bytes = 0;    // bytes before a 0xFD and dropped 0xFDs
  std::uint64_t truncated = 0;        // a frame the stream ended inside (finish())
  std::uint64_t truncated_bytes = 0;  // its bytes
};

/// Bytes in, whole frames out. Never allocates; a malformed stream costs bytes, never a crash.
/// After a bad checksum it looks for the next 0xFD one byte on, so a frame that starts inside
/// a corrupt one is still found. Not thread-safe: one per connection.
class Decoder {
 public:
  /// table: the messages to deliver (sorted by id), e.g. mavlink::known_messages(); it must
  /// outlive the decoder.
  explicit Decoder(std::span<const MessageInfo> table) : table_(table) {}

  /// Copies as much of bytes as fits and returns how many it took: all of them, or at least
  /// max_frame_size bytes when next() has returned false since the last push.
  std::size_t push(std::span<const std::uint8_t> bytes);
  /// The next whole frame of what was pushed into out; false when more bytes are needed.
  bool next(Frame& out);
  /// Pushes all of bytes, calling on_frame(const Frame&) for each frame found.
  template <class OnFrame>
  void feed(std::span<const std::uint8_t> bytes, OnFrame&& on_frame) {
    for (;;) {
      while (next(frame_)) on_frame(static_cast<const Frame&>(frame_));
      if (bytes.empty()) return;
      bytes = bytes.subspan(push(bytes));
    }
  }
  /// The stream ended (the connection closed); call it once next() has returned false: a frame
  /// begun and not finished is counted as truncated and dropped, ready for a new stream.
  void finish();
  /// Bytes pushed and not yet delivered, skipped or dropped.
  std::size_t pending() const { return end_ - begin_; }
  const DecoderCounters& counters() const { return counters_; }

 private:
  void drop_garbage(std::size_t n);

  std::span<const MessageInfo> table_;
  std::array<std::uint8_t, 2 * max_frame_size> buf_{};
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
  DecoderCounters counters_;
  Frame frame_;  // feed()'s
};

}  // namespace tether::adapters::mavlink
