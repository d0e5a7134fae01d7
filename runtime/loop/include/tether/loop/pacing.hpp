// SPDX-License-Identifier: Apache-2.0
// Keeps the loop on the wall clock with absolute deadlines (next += period; sleep_until),
// counting overruns instead of pretending they do not happen.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "tether/loop/histogram.hpp"

namespace tether::runtime {

class Pacer {
 public:
  using Clock = std::chrono::steady_clock;

  /// Starts the schedule at `now`; a wall period of 0 means "do not pace". `spin_ns` > 0
  /// (`loop.realtime.spin_us`): each wait sleeps until that long before its deadline and
  /// spins on the clock for the rest, trading a core's time for the sleep's wake-up latency.
  void start(Clock::time_point now, std::int64_t wall_period_ns, std::int64_t spin_ns = 0);
  /// A step ended at `now`: the time to sleep until, or nullopt to go on at once (not
  /// paced, or late). A step that ends after its deadline is an overrun; one that ends more
  /// than a whole period late re-anchors the schedule at `now` (missed slots are skipped,
  /// not made up in a burst, so the participants never see a rush of steps). Reads no clock.
  [[nodiscard]] std::optional<Clock::time_point> after_step(Clock::time_point now);
  /// The sleep until `deadline` (from after_step) ended at `now`: records how late it woke.
  void woke(Clock::time_point deadline, Clock::time_point now);
  /// after_step, then the wait (sleeping, and spinning its end where start() was told to)
  /// with the steady clock, recording how late it woke: what the session does.
  void wait_next();
  /// Lowers this thread's timer slack so sleeps end closer to the deadline (Linux).
  static void reduce_timer_slack();

  std::uint64_t overruns() const { return overruns_; }
  std::uint64_t reanchors() const { return reanchors_; }
  /// Waits whose sleep ended before the deadline and spun the rest (spin_ns > 0 only).
  std::uint64_t spun() const { return spun_; }
  /// How late each sleep woke, in ns.
  const Histogram& wake_lateness_ns() const { return wake_lateness_ns_; }

 private:
  void wait_until(Clock::time_point deadline);

  Clock::time_point next_{};
  std::int64_t wall_period_ns_ = 0;
  std::int64_t spin_ns_ = 0;
  std::uint64_t overruns_ = 0;
  std::uint64_t spun_ = 0;
  std::uint64_t reanchors_ = 0;
  Histogram wake_lateness_ns_;
};

/// Sleeps until an absolute steady_clock time with clock_nanosleep(TIMER_ABSTIME).
void sleep_until(Pacer::Clock::time_point deadline);

}  // namespace tether::runtime
