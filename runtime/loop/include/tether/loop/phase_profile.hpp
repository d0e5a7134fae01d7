// SPDX-License-Identifier: Apache-2.0
// The phase of the loop in progress, and where a step's time goes: wall time per phase
// (docs/performance.md). The timing is off by default (`loop.profile_phases`): a mark is
// then a store and one branch.
#pragma once

#include <array>
#include <cstdint>
#include <ctime>

#include <nlohmann/json_fwd.hpp>

namespace tether::runtime {

/// The phases of one loop iteration, in order: docs/architecture.md's "One step" lists them
/// so (tests/loop/phase_order_test.cpp checks both); `loop` is the loop's own bookkeeping
/// between steps (operator requests, counters).
enum class Phase : std::uint8_t {
  loop,
  keyframe,
  faults,
  project,
  sense,
  identify,
  publish,
  gather,
  pre,
  advance,
  post,
  expect,
  emit,
  record,
  after_step,
  pace,
  status,
  count
};

const char* to_string(Phase phase);

class PhaseProfile {
 public:
  void enable(bool on) { on_ = on; }
  bool enabled() const { return on_; }

  /// Ends the phase in progress (its time since the last mark) and starts `next`.
  void mark(Phase next) {
    if (on_) account(next);
    current_ = next;
  }
  /// Ends the phase in progress without starting another.
  void stop() { mark(Phase::count); }
  /// The phase in progress (Phase::count: none, outside a run).
  Phase current() const { return current_; }
  /// True if, while enabled, phase `to` was entered right after phase `from`.
  bool followed(Phase from, Phase to) const {
    return (next_seen_[static_cast<std::size_t>(from)] >> static_cast<unsigned>(to)) & 1u;
  }

  /// {"steps": n, "phases": {name: {"mean_ns_per_step", "max_ns", "share"}}}, phases that ran.
  nlohmann::json summary(std::uint64_t steps) const;

 private:
  static std::int64_t now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  }

  void account(Phase next) {  // the phase in progress ends now
    const std::int64_t now = now_ns();
    if (current_ != Phase::count) {
      const auto i = static_cast<std::size_t>(current_);
      const auto ns = static_cast<std::uint64_t>(now - since_ns_);
      total_ns_[i] += ns;
      ++entries_[i];
      if (ns > max_ns_[i]) max_ns_[i] = ns;
      next_seen_[i] |= 1u << static_cast<unsigned>(next);
    }
    since_ns_ = now;
  }

  bool on_ = false;
  Phase current_ = Phase::count;
  std::int64_t since_ns_ = 0;
  static constexpr std::size_t n_ = static_cast<std::size_t>(Phase::count);
  static_assert(n_ < 32, "next_seen_ holds a bit per phase and one for count");
  std::array<std::uint64_t, n_> total_ns_{};
  std::array<std::uint64_t, n_> entries_{};
  std::array<std::uint64_t, n_> max_ns_{};
  std::array<std::uint32_t, n_> next_seen_{};  // per phase: a bit per phase that followed it
};

}  // namespace tether::runtime
