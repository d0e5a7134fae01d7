// SPDX-License-Identifier: Apache-2.0
#include "tether/mavlink/mavlink.hpp"

#include <algorithm>
#include <cstring>

namespace tether::adapters::mavlink {

std::uint16_t crc_x25(std::span<const std::uint8_t> bytes, std::uint16_t crc) {
  for (const std::uint8_t b : bytes) crc = crc_accumulate(b, crc);
  return crc;
}

const MessageInfo* find_message(std::span<const MessageInfo> table, std::uint32_t msgid) {
  const auto it =
      std::lower_bound(table.begin(), table.end(), msgid, [](const MessageInfo& m, std::uint32_t id) { return m.id < id; });
  return it != table.end() && it->id == msgid ? &*it : nullptr;
}

std::size_t encode_frame(const Header& header, std::uint8_t crc_extra, std::span<const std::uint8_t> payload,
                         std::span<std::uint8_t, max_frame_size> out) {
  if (payload.size() > max_payload_size || header.msgid > max_msgid || (header.incompat_flags & incompat_signed))
    return 0;
  // trailing zeros are not sent; the first byte always is
  std::size_t len = payload.size();
  while (len > 1 && payload[len - 1] == 0) --len;
  out[0] = stx;
  out[1] = static_cast<std::uint8_t>(len);
  out[2] = header.incompat_flags;
  out[3] = header.compat_flags;
  out[4] = header.seq;
  out[5] = header.sysid;
  out[6] = header.compid;
  out[7] = static_cast<std::uint8_t>(header.msgid);
  out[8] = static_cast<std::uint8_t>(header.msgid >> 8);
  out[9] = static_cast<std::uint8_t>(header.msgid >> 16);
  if (len > 0) std::memcpy(out.data() + header_size, payload.data(), len);
  std::uint16_t crc = crc_x25(std::span<const std::uint8_t>(out.data() + 1, header_size - 1 + len));
  crc = crc_accumulate(crc_extra, crc);
  out[header_size + len] = static_cast<std::uint8_t>(crc);
  out[header_size + len + 1] = static_cast<std::uint8_t>(crc >> 8);
  return header_size + len + checksum_size;
}

std::size_t Decoder::push(std::span<const std::uint8_t> bytes) {
  // keep the pending bytes at the front so that a whole frame always fits behind them
  if (begin_ > 0) {
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  const std::size_t n = std::min(bytes.size(), buf_.size() - end_);
  if (n > 0) std::memcpy(buf_.data() + end_, bytes.data(), n);
  end_ += n;
  counters_.bytes += n;
  return n;
}

void Decoder::drop_garbage(std::size_t n) {
  begin_ += n;
  counters_.garbage_bytes += n;
}

bool Decoder::next(Frame& out) {
  for (;;) {
    // up to the next start byte
    const std::uint8_t* const first = buf_.data() + begin_;
    const std::uint8_t* const last = buf_.data() + end_;
    const std::uint8_t* const start = std::find(first, last, stx);
    drop_garbage(static_cast<std::size_t>(start - first));
    const std::uint8_t* const p = start;
    const std::size_t have = end_ - begin_;
    if (have < header_size) return false;

    const std::uint8_t len = p[1];
    const std::uint8_t incompat = p[2];
    if (incompat & ~incompat_signed) {
      // a flag we do not understand: the specification says drop; the 0xFD may be noise too
      ++counters_.bad_flags;
      drop_garbage(1);
      continue;
    }
    const bool is_signed = (incompat & incompat_signed) != 0;
    const std::size_t size = header_size + len + checksum_size + (is_signed ? signature_size : 0);
    if (have < size) return false;

    const std::uint32_t msgid =
        static_cast<std::uint32_t>(p[7]) | static_cast<std::uint32_t>(p[8]) << 8 | static_cast<std::uint32_t>(p[9]) << 16;
    const MessageInfo* const info = find_message(table_, msgid);
    if (info == nullptr) {
      // without its CRC_EXTRA the checksum cannot be checked: trust the length
      ++counters_.unknown_msgid;
      counters_.skipped_bytes += size;
      begin_ += size;
      continue;
    }
    std::uint16_t crc = crc_x25(std::span<const std::uint8_t>(p + 1, header_size - 1 + len));
    crc = crc_accumulate(info->crc_extra, crc);
    const std::uint16_t sent =
        static_cast<std::uint16_t>(p[header_size + len] | static_cast<std::uint16_t>(p[header_size + len + 1]) << 8);
    if (crc != sent) {
      // not a frame after all, or a corrupt one: a real frame may start inside it
      ++counters_.bad_crc;
      drop_garbage(1);
      continue;
    }
    if (is_signed) {
      ++counters_.signed_frames;
      counters_.skipped_bytes += size;
      begin_ += size;
      continue;
    }

    out.header.incompat_flags = incompat;
    out.header.compat_flags = p[3];
    out.header.seq = p[4];
    out.header.sysid = p[5];
    out.header.compid = p[6];
    out.header.msgid = msgid;
    out.length = len;
    // a truncated payload reads as zeros (and a longer one than we know is kept whole)
    if (len > 0) std::memcpy(out.payload.data(), p + header_size, len);
    std::fill(out.payload.begin() + len, out.payload.end(), std::uint8_t{0});
    ++counters_.frames;
    counters_.frame_bytes += size;
    begin_ += size;
    return true;
  }
}

void Decoder::finish() {
  // after next() returned false only the start of a frame can be pending (garbage is dropped as found)
  if (pending() > 0) {
    ++counters_.truncated;
    counters_.truncated_bytes += pending();
  }
  begin_ = end_ = 0;
}

}  // namespace tether::adapters::mavlink
