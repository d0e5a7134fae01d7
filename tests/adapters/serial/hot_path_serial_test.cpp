// SPDX-License-Identifier: Apache-2.0
// The hot path with firmware in the loop: the host build of depth_heading_hold on a
// pseudo-terminal, 10,000 counted steps after a 300-step warm-up, no heap allocation on
// the loop thread (the endpoint's reader thread is not the step). And the MAVLink codec's
// promise (docs/mavlink.md): encoding and decoding frames allocates nothing. (One file of a
// test program may replace operator new: the adapters' allocation tests live here.)
#include "alloc_count.hpp"

#include <doctest/doctest.h>

#include <array>
#include <vector>

#include "serial_test_util.hpp"
#include "tether/mavlink/mavlink_messages.hpp"

using namespace tether::adapters;
using namespace tether::adapters::test;
using tether::runtime::Outcome;
using tether::runtime::Session;
using tether::runtime::SessionOptions;
using tether::runtime::WorldState;

namespace {

const char* session_phase(const void* session) {
  const char* p = static_cast<const Session*>(session)->phase();
  return p ? p : "between steps";
}

}  // namespace

TEST_CASE("serial: a session with the host firmware on a pty allocates nothing per step after warm-up") {
  constexpr std::uint64_t warm_up = 300, counted = 10'000;
  tether::test::AllocCount count;
  const Session* session = nullptr;
  // a firmware LOG line is an event, not a step: its text is one allocation (the example
  // firmware logs once, "target depth reached", about 3 s in: near the end of the warm-up)
  std::uint64_t logs_before = 0, logs_counted = 0;
  SessionRun* run_ptr = nullptr;
  SessionOptions options;
  options.after_step = [&](const WorldState& s) {
    if (s.step == warm_up) {
      logs_before = run_ptr->endpoint().serial_counters().logs;
      count.phase_of = &session_phase;
      count.context = session;
      tether::test::arm(count);
    } else if (s.step == warm_up + counted) {
      tether::test::disarm();
      logs_counted = run_ptr->endpoint().serial_counters().logs - logs_before;
    }
    return true;
  };
  SessionRun run(auv_scenario("  - name: fw\n    type: serial\n    vehicle: auv\n    launch: {command: ['" +
                                  host_firmware() + "']}\n    deadline_ms: 2000\n    timeout_policy: block\n",
                              static_cast<int>(warm_up + counted + 5)),
                 options);
  session = run.session.get();
  run_ptr = &run;
  REQUIRE(run.run() == Outcome::completed);
  tether::test::disarm();
  INFO(count.describe());
  // nothing allocates in a step but a LOG line's text, once per line
  CHECK(logs_counted <= 1);
  CHECK(count.total <= logs_counted);
  CHECK(run.counters().replies + run.counters().late == warm_up + counted + 5);
}

TEST_CASE("mavlink: encoding and decoding frames allocates nothing") {
  namespace mav = tether::adapters::mavlink;
  // a stream of frames with garbage, a corrupt frame and an unknown message among them
  std::vector<std::uint8_t> stream;
  std::array<std::uint8_t, mav::max_frame_size> buf{};
  mav::Header h{.seq = 0, .sysid = 1, .compid = 1};
  for (int i = 0; i < 50; ++i) {
    mav::GlobalPositionInt g;
    g.lat = i;
    h.seq = static_cast<std::uint8_t>(i);
    const std::size_t n = i % 5 == 0 ? mav::encode(mav::gcs_heartbeat(), h, buf) : mav::encode(g, h, buf);
    stream.insert(stream.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
    if (i == 10) stream.insert(stream.end(), {'x', 0xFD, 3, 0, 0});
    if (i == 20) stream[stream.size() - 3] ^= 1;
  }
  mav::Decoder decoder(mav::known_messages());
  tether::test::AllocCount count;
  tether::test::arm(count);
  std::size_t frames = 0;
  std::int64_t lat_sum = 0;
  for (int round = 0; round < 20; ++round) {
    for (std::size_t i = 0; i < stream.size(); i += 7)
      decoder.feed(std::span<const std::uint8_t>(stream.data() + i, std::min<std::size_t>(7, stream.size() - i)),
                   [&](const mav::Frame& f) {
                     ++frames;
                     if (const auto g = mav::decode<mav::GlobalPositionInt>(f)) lat_sum += g->lat;
                   });
    mav::ManualControl mc;
    mc.z = 500;
    if (mav::encode(mc, h, buf) == 0) break;
  }
  tether::test::disarm();
  INFO(count.describe());
  CHECK(count.total == 0);
  CHECK(frames > 900);
  CHECK(lat_sum > 0);
  CHECK(decoder.counters().bad_crc >= 20);
}
