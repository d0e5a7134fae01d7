// SPDX-License-Identifier: Apache-2.0
// Where a step's time goes: wall time per phase of the loop (docs/performance.md). Off by
// default (`loop.profile_phases`): a mark is then one branch.
#pragma once

#include <array>
#include <cstdint>
#include <ctime>

#include <nlohmann/json_fwd.hpp>

namespace tether::runtime {

/// The phases of one loop iteration, in order (docs/architecture.md, "One step"); `loop` is the
/// loop's own bookkeeping between steps (operator requests, counters).
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
    if (!on_) return;
    const std::int64_t now = now_ns();
    if (current_ != Phase::count) {
      const auto i = static_cast<std::size_t>(current_);
      const auto ns = static_cast<std::uint64_t>(now - since_ns_);
      total_ns_[i] += ns;
      ++entries_[i];
      if (ns > max_ns_[i]) max_ns_[i] = ns;
    }
    current_ = next;
    since_ns_ = now;
  }
  /// Ends the phase in progress without starting another.
  void stop() { mark(Phase::count); }

  /// {"steps": n, "phases": {name: {"mean_ns_per_step", "max_ns", "share"}}}, phases that ran.
  nlohmann::json summary(std::uint64_t steps) const;

 private:
  static std::int64_t now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  }

  bool on_ = false;
  Phase current_ = Phase::count;
  std::int64_t since_ns_ = 0;
  static constexpr std::size_t n_ = static_cast<std::size_t>(Phase::count);
  std::array<std::uint64_t, n_> total_ns_{};
  std::array<std::uint64_t, n_> entries_{};
  std::array<std::uint64_t, n_> max_ns_{};
};

}  // namespace tether::runtime
