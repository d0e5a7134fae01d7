// SPDX-License-Identifier: Apache-2.0
// Fuzz target for the MAVLink 2 streaming decoder and message decoders (adapters/mavlink/src/
// mavlink.cpp, mavlink_messages.cpp): the first input byte picks a chunk size, the rest is a
// byte stream fed to a Decoder in chunks of that size and again all at once. Both must deliver
// the same frames; the counters must account for every byte; every delivered frame is of a
// known message, zero past its length, and written again with encode_frame decodes to the same
// frame; every message decoder's result written again gives back the payload bytes it read.
// Built with the suite's driver (tests/fuzz/fuzz_driver.cpp) or libFuzzer (docs/reliability.md).

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "tether/mavlink/mavlink.hpp"
#include "tether/mavlink/mavlink_messages.hpp"

namespace mav = tether::adapters::mavlink;

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "mavlink_decoder_fuzz: broken invariant: %s\n", what);
    std::abort();
  }
}

bool same_frame(const mav::Frame& a, const mav::Frame& b) {
  return a.header.incompat_flags == b.header.incompat_flags && a.header.compat_flags == b.header.compat_flags &&
         a.header.seq == b.header.seq && a.header.sysid == b.header.sysid && a.header.compid == b.header.compid &&
         a.header.msgid == b.header.msgid && a.payload == b.payload;
}

void check_counters(const mav::Decoder& d) {
  const mav::DecoderCounters& c = d.counters();
  check(c.bytes == c.frame_bytes + c.skipped_bytes + c.garbage_bytes + c.truncated_bytes + d.pending(),
        "every byte is counted once");
  check(d.pending() < mav::max_frame_size, "only the start of one frame is ever pending");
}

// decoded as M and written again, the payload's first max_length bytes come back
template <class M>
void message_round_trip(const mav::Frame& f) {
  const auto m = mav::decode<M>(f);
  if (!m) return;
  std::array<std::uint8_t, mav::max_payload_size> again{};
  mav::encode_payload(*m, again);
  check(std::memcmp(again.data(), f.payload.data(), mav::max_length<M>()) == 0, "a message re-encodes to its bytes");
}

void check_frame(const mav::Frame& f) {
  const mav::MessageInfo* info = mav::find_message(mav::known_messages(), f.header.msgid);
  check(info != nullptr, "a delivered frame is of a known message");
  check((f.header.incompat_flags & mav::incompat_signed) == 0, "a signed frame is never delivered");
  for (std::size_t i = f.length; i < f.payload.size(); ++i) check(f.payload[i] == 0, "the payload is zero past its length");

  // written again (truncated this time) it decodes to the same frame
  std::array<std::uint8_t, mav::max_frame_size> buf{};
  const std::size_t n =
      mav::encode_frame(f.header, info->crc_extra, std::span<const std::uint8_t>(f.payload.data(), f.length), buf);
  check(n > 0 && n <= mav::header_size + f.length + mav::checksum_size, "a delivered frame can be written again");
  mav::Decoder d(mav::known_messages());
  int got = 0;
  d.feed(std::span<const std::uint8_t>(buf.data(), n), [&](const mav::Frame& g) {
    ++got;
    check(same_frame(f, g), "the frame written again reads back the same");
  });
  check(got == 1 && d.pending() == 0 && d.counters().garbage_bytes == 0, "the frame written again is one frame");

  message_round_trip<mav::Heartbeat>(f);
  message_round_trip<mav::SysStatus>(f);
  message_round_trip<mav::SetMode>(f);
  message_round_trip<mav::ParamValue>(f);
  message_round_trip<mav::ParamSet>(f);
  message_round_trip<mav::Attitude>(f);
  message_round_trip<mav::GlobalPositionInt>(f);
  message_round_trip<mav::ManualControl>(f);
  message_round_trip<mav::VfrHud>(f);
  message_round_trip<mav::CommandLong>(f);
  message_round_trip<mav::CommandAck>(f);
  message_round_trip<mav::SetAttitudeTarget>(f);
  message_round_trip<mav::SetPositionTargetLocalNed>(f);
  message_round_trip<mav::SetPositionTargetGlobalInt>(f);
  message_round_trip<mav::StatusText>(f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 64 * 1024) return 0;
  const std::size_t chunk = 1 + data[0] % 64;
  const std::span<const std::uint8_t> stream(data + 1, size - 1);

  std::vector<mav::Frame> whole;
  mav::Decoder a(mav::known_messages());
  a.feed(stream, [&](const mav::Frame& f) { whole.push_back(f); });
  check_counters(a);

  mav::Decoder b(mav::known_messages());
  std::size_t k = 0;
  for (std::size_t i = 0; i < stream.size(); i += chunk) {
    b.feed(stream.subspan(i, std::min(chunk, stream.size() - i)), [&](const mav::Frame& f) {
      check(k < whole.size() && same_frame(f, whole[k]), "chunking does not change the frames");
      ++k;
    });
    check_counters(b);
  }
  check(k == whole.size(), "chunking does not change the number of frames");
  const mav::DecoderCounters& ca = a.counters();
  const mav::DecoderCounters& cb = b.counters();
  check(ca.bad_crc == cb.bad_crc && ca.unknown_msgid == cb.unknown_msgid && ca.signed_frames == cb.signed_frames &&
            ca.bad_flags == cb.bad_flags && ca.garbage_bytes == cb.garbage_bytes && a.pending() == b.pending(),
        "chunking does not change the counters");

  for (const mav::Frame& f : whole) check_frame(f);

  a.finish();
  check(a.pending() == 0, "finish() leaves nothing pending");
  check_counters(a);
  return 0;
}
