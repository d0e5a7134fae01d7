// SPDX-License-Identifier: Apache-2.0
// A fixed team of threads for the physics step. The step splits its work into parts whose
// results never depend on how many parts there are (docs/physics.md, "Threads"), so a world
// gives the same bits at any thread count.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace tether::runtime {

class WorkerPool {
 public:
  /// `threads` in all, the calling thread included (so threads - 1 are started); at least 1.
  explicit WorkerPool(int threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int threads() const { return threads_; }

  /// Calls fn(part) once for every part in [0, parts) and returns when all have finished.
  /// Parts are claimed in order by whichever thread is free, the caller included, so a
  /// worker the system has not scheduled delays nothing: fn must not depend on the thread.
  template <class F>
  void run(int parts, F&& fn) {
    auto call = [](void* ctx, int part) { (*static_cast<std::remove_reference_t<F>*>(ctx))(part); };
    dispatch(parts, call, const_cast<void*>(static_cast<const void*>(&fn)));
  }

 private:
  using Call = void (*)(void*, int);
  void dispatch(int parts, Call call, void* ctx);
  void work();
  // claims and runs parts of the job in `ticket_` until none is left; false if it was not
  // the job of generation `generation` (a newer one, or none)
  void help(std::uint64_t ticket);

  int threads_ = 1;
  std::vector<std::thread> workers_;
  Call call_ = nullptr;
  void* ctx_ = nullptr;
  // generation (32 bits) | parts (16) | next part to claim (16): one word, so a claim is
  // one compare-and-swap that cannot take a part of another job
  std::atomic<std::uint64_t> ticket_{0};
  std::atomic<int> done_{0};               // parts of the current job finished
  std::atomic<int> sleepers_{0};           // workers asleep on wake_
  std::atomic<bool> caller_waits_{false};  // the caller asleep on finished_
  std::atomic<bool> stop_{false};
  std::mutex m_;  // only for sleeping: claims and counts are lock-free
  std::condition_variable wake_, finished_;
};

/// The half-open range [begin, end) of part `part` when `count` items are cut into `parts`
/// nearly equal, contiguous pieces in order.
inline void part_range(std::size_t count, int parts, int part, std::size_t& begin, std::size_t& end) {
  begin = count * static_cast<std::size_t>(part) / static_cast<std::size_t>(parts);
  end = count * static_cast<std::size_t>(part + 1) / static_cast<std::size_t>(parts);
}

}  // namespace tether::runtime
