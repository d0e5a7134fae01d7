// SPDX-License-Identifier: Apache-2.0
#include "tether/loop/pacing.hpp"

#include <cerrno>
#include <ctime>

#include <sys/prctl.h>

namespace tether::runtime {

// libstdc++'s steady_clock is CLOCK_MONOTONIC, so its epoch matches clock_nanosleep's
void sleep_until(Pacer::Clock::time_point deadline) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.time_since_epoch()).count();
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(ns % 1'000'000'000);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

void Pacer::reduce_timer_slack() { prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL); }

void Pacer::start(Clock::time_point now, std::int64_t wall_period_ns, std::int64_t spin_ns) {
  wall_period_ns_ = wall_period_ns;
  spin_ns_ = spin_ns > 0 ? spin_ns : 0;
  next_ = now + std::chrono::nanoseconds(wall_period_ns);
}

std::optional<Pacer::Clock::time_point> Pacer::after_step(Clock::time_point now) {
  if (wall_period_ns_ <= 0) return std::nullopt;
  const auto period = std::chrono::nanoseconds(wall_period_ns_);
  if (now > next_) {
    ++overruns_;
    if (now - next_ > period) {
      ++reanchors_;
      next_ = now + period;
      return std::nullopt;
    }
    next_ += period;
    return std::nullopt;
  }
  const Clock::time_point deadline = next_;
  next_ += period;
  return deadline;
}

void Pacer::woke(Clock::time_point deadline, Clock::time_point now) {
  const auto late = std::chrono::duration_cast<std::chrono::nanoseconds>(now - deadline).count();
  wake_lateness_ns_.record(static_cast<std::uint64_t>(late > 0 ? late : 0));
}

void Pacer::wait_until(Clock::time_point deadline) {
  if (spin_ns_ > 0) {
    sleep_until(deadline - std::chrono::nanoseconds(spin_ns_));
    Clock::time_point now = Clock::now();
    if (now < deadline) {
      ++spun_;
      while (now < deadline) now = Clock::now();
    }
    woke(deadline, now);
    return;
  }
  sleep_until(deadline);
  woke(deadline, Clock::now());
}

void Pacer::wait_next() {
  if (const auto deadline = after_step(Clock::now())) wait_until(*deadline);
}

}  // namespace tether::runtime
