// SPDX-License-Identifier: Apache-2.0
#include "tether/physics/workers.hpp"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TETHER_PAUSE() _mm_pause()
#else
#define TETHER_PAUSE() std::this_thread::yield()
#endif

namespace tether::runtime {

namespace {

// a step's parallel parts follow each other within microseconds: a worker spins that long
// for the next one before it sleeps
constexpr int spin_rounds = 2000;

constexpr std::uint64_t generation_of(std::uint64_t t) { return t >> 32; }
constexpr int parts_of(std::uint64_t t) { return static_cast<int>((t >> 16) & 0xFFFF); }
constexpr int next_of(std::uint64_t t) { return static_cast<int>(t & 0xFFFF); }

}  // namespace

WorkerPool::WorkerPool(int threads) : threads_(std::clamp(threads, 1, 0xFFFF)) {
  workers_.reserve(static_cast<std::size_t>(threads_ - 1));
  for (int id = 1; id < threads_; ++id) workers_.emplace_back([this] { work(); });
}

WorkerPool::~WorkerPool() {
  stop_.store(true);
  // a new generation with nothing to claim wakes every worker, which then sees stop_
  ticket_.store((generation_of(ticket_.load()) + 1) << 32);
  { std::lock_guard<std::mutex> lock(m_); }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void WorkerPool::help(std::uint64_t ticket) {
  for (;;) {
    if (next_of(ticket) >= parts_of(ticket)) return;
    // the claim succeeds only while the ticket is unchanged: same job, same next part
    if (!ticket_.compare_exchange_weak(ticket, ticket + 1, std::memory_order_acq_rel, std::memory_order_acquire))
      continue;  // `ticket` now holds the current value: try the next part (or another job's)
    call_(ctx_, next_of(ticket));
    if (done_.fetch_add(1, std::memory_order_seq_cst) + 1 == parts_of(ticket) && caller_waits_.load()) {
      std::lock_guard<std::mutex> lock(m_);  // the caller is in its wait or has not checked yet
      finished_.notify_one();
    }
    ticket = ticket_.load(std::memory_order_acquire);
  }
}

void WorkerPool::dispatch(int parts, Call call, void* ctx) {
  parts = std::clamp(parts, 1, 0xFFFF);
  if (parts == 1 || threads_ == 1) {
    for (int p = 0; p < parts; ++p) call(ctx, p);
    return;
  }
  call_ = call;
  ctx_ = ctx;
  done_.store(0, std::memory_order_relaxed);
  const std::uint64_t ticket =
      ((generation_of(ticket_.load(std::memory_order_relaxed)) + 1) << 32) | (static_cast<std::uint64_t>(parts) << 16);
  ticket_.store(ticket, std::memory_order_seq_cst);  // publishes call_ and ctx_
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    std::lock_guard<std::mutex> lock(m_);  // a sleeper is in its wait or has not checked yet
    wake_.notify_all();
  }
  help(ticket);
  // the caller ran out of parts to claim: wait for those others hold
  for (int spin = 0; done_.load(std::memory_order_acquire) != parts; ++spin) {
    if (spin < spin_rounds) {
      TETHER_PAUSE();
      continue;
    }
    std::unique_lock<std::mutex> lock(m_);
    caller_waits_.store(true);
    finished_.wait(lock, [&] { return done_.load() == parts; });
    caller_waits_.store(false);
    break;
  }
}

void WorkerPool::work() {
  std::uint64_t seen = 0;  // generation 0 has no job: a late-starting worker still joins the first
  for (;;) {
    std::uint64_t now = ticket_.load(std::memory_order_acquire);
    for (int spin = 0; generation_of(now) == generation_of(seen); ++spin) {
      if (spin < spin_rounds) {
        TETHER_PAUSE();
      } else {
        std::unique_lock<std::mutex> lock(m_);
        sleepers_.fetch_add(1);
        wake_.wait(lock, [&] { return generation_of(ticket_.load()) != generation_of(seen); });
        sleepers_.fetch_sub(1);
      }
      now = ticket_.load(std::memory_order_acquire);
    }
    seen = now;
    if (stop_.load(std::memory_order_acquire)) return;
    help(now);
  }
}

}  // namespace tether::runtime
