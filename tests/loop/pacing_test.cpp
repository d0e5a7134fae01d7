// SPDX-License-Identifier: Apache-2.0
// The pacer with time moved by hand: it reads no clock, so every case is exact.
#include "tether/loop/pacing.hpp"

#include <doctest/doctest.h>

using namespace tether::runtime;
using namespace std::chrono_literals;

namespace {
const Pacer::Clock::time_point t0{1s};
}

TEST_CASE("pacer: on-time steps sleep until absolute deadlines one period apart") {
  Pacer p;
  p.start(t0, 10'000'000);
  auto d = p.after_step(t0 + 3ms);
  REQUIRE(d);
  CHECK(*d == t0 + 10ms);
  p.woke(*d, t0 + 10ms + 50us);
  d = p.after_step(t0 + 14ms);  // the next deadline does not drift with the late wake
  REQUIRE(d);
  CHECK(*d == t0 + 20ms);
  CHECK(p.overruns() == 0);
  CHECK(p.wake_lateness_ns().count() == 1);
  CHECK(p.wake_lateness_ns().max() >= 50'000);
}

TEST_CASE("pacer: a late step is an overrun and the next deadline stays on the schedule") {
  Pacer p;
  p.start(t0, 10'000'000);
  CHECK_FALSE(p.after_step(t0 + 15ms));  // 5 ms late: go on at once
  CHECK(p.overruns() == 1);
  CHECK(p.reanchors() == 0);
  const auto d = p.after_step(t0 + 16ms);
  REQUIRE(d);
  CHECK(*d == t0 + 20ms);
}

TEST_CASE("pacer: more than a period late re-anchors instead of rushing through missed slots") {
  Pacer p;
  p.start(t0, 10'000'000);
  CHECK_FALSE(p.after_step(t0 + 35ms));  // 25 ms late
  CHECK(p.overruns() == 1);
  CHECK(p.reanchors() == 1);
  const auto d = p.after_step(t0 + 36ms);
  REQUIRE(d);
  CHECK(*d == t0 + 45ms);  // one period after the late step, not t0 + 20 ms
}

TEST_CASE("pacer: a wall period of 0 never sleeps and counts nothing") {
  Pacer p;
  p.start(t0, 0);
  CHECK_FALSE(p.after_step(t0 + 1h));
  CHECK(p.overruns() == 0);
}
