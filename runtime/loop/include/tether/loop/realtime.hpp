// SPDX-License-Identifier: Apache-2.0
// `loop.realtime` applied to the loop thread for the length of a session: locked memory,
// SCHED_FIFO at a priority, a CPU of its own (docs/scenario.md, `loop.realtime`). What the system refuses
// is said, with what to grant, and the session runs on without it.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tether/scenario/scenario.hpp"

namespace tether::runtime {

class RealtimeGuard {
 public:
  /// Applies `config` to the calling thread; each refusal is logged as a warning.
  explicit RealtimeGuard(const RealtimeConfig& config);
  /// Gives back what was applied: the thread's former policy and CPUs, the memory unlocked.
  ~RealtimeGuard();
  RealtimeGuard(const RealtimeGuard&) = delete;
  RealtimeGuard& operator=(const RealtimeGuard&) = delete;

  /// Per requested option (lock_memory, priority, cpu), "applied" or "refused: <why>; <what to
  /// grant>" (the summary's `realtime`).
  std::vector<std::pair<std::string, std::string>> status() const;

 private:
  struct Saved;
  RealtimeConfig config_;
  std::string lock_memory_, priority_, cpu_;
  std::unique_ptr<Saved> saved_;
};

}  // namespace tether::runtime
