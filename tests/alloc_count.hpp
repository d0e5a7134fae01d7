// SPDX-License-Identifier: Apache-2.0
// Counts heap allocations made by one thread while armed, and says in which phase of the
// step each happened (the phase name comes from a function the test sets, e.g.
// Session::phase()). Replaces every form of global operator new and delete, so include it
// plainly in exactly one source file of a test program (the others define
// TETHER_ALLOC_COUNT_NO_OPERATORS first).
#pragma once

#include <execinfo.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

namespace tether::test {

struct AllocCount {
  static constexpr int max_phases = 32;
  static constexpr int max_frames = 24;
  struct PhaseCount {
    const char* phase = nullptr;
    std::size_t count = 0;
  };
  // the phase the thread is in; null means "not in the step"
  const char* (*phase_of)(const void* context) = nullptr;
  const void* context = nullptr;
  PhaseCount phases[max_phases]{};
  std::size_t total = 0;
  // the first allocation's call stack, turned into text after disarming
  void* first_frames[max_frames]{};
  int first_depth = 0;
  const char* first_phase = nullptr;

  void record(std::size_t) {
    const char* phase = phase_of ? phase_of(context) : nullptr;
    if (!phase) phase = "outside the step";
    ++total;
    if (total == 1) {
      first_phase = phase;
      first_depth = backtrace(first_frames, max_frames);
    }
    for (PhaseCount& p : phases) {
      if (p.phase == phase || (p.phase && std::strcmp(p.phase, phase) == 0)) {
        ++p.count;
        return;
      }
      if (!p.phase) {
        p.phase = phase;
        p.count = 1;
        return;
      }
    }
  }

  /// "publish: 3, gather: 1" and the first allocation's call stack; empty if none.
  std::string describe() const {
    std::string out;
    for (const PhaseCount& p : phases)
      if (p.phase) out += std::string(out.empty() ? "" : ", ") + p.phase + ": " + std::to_string(p.count);
    if (total && first_depth > 0) {
      out += "\nfirst allocation (phase " + std::string(first_phase) + "):\n";
      char** names = backtrace_symbols(first_frames, first_depth);
      for (int i = 0; names && i < first_depth; ++i) out += std::string("  ") + names[i] + "\n";
      std::free(names);
    }
    return out;
  }
};

// the counter of the thread that armed it (one at a time), and whether it is armed
inline AllocCount* g_alloc_count = nullptr;
inline thread_local bool g_alloc_armed = false;
inline thread_local bool g_alloc_inside = false;  // backtrace() itself may allocate

/// Counts this thread's allocations into `count` until disarm().
inline void arm(AllocCount& count) {
  g_alloc_count = &count;
  g_alloc_armed = true;
}
inline void disarm() { g_alloc_armed = false; }

inline void note_allocation(std::size_t n) {
  if (!g_alloc_armed || g_alloc_inside || !g_alloc_count) return;
  g_alloc_inside = true;
  g_alloc_count->record(n);
  g_alloc_inside = false;
}

inline void* allocate(std::size_t n, std::size_t align) {
  note_allocation(n);
  if (n == 0) n = 1;
  if (align > alignof(std::max_align_t)) {
    void* p = nullptr;
    return posix_memalign(&p, align, n) == 0 ? p : nullptr;
  }
  return std::malloc(n);
}

}  // namespace tether::test

// A second test file of the same program that only arms and disarms defines
// TETHER_ALLOC_COUNT_NO_OPERATORS before including this: the operators are defined once.
#ifndef TETHER_ALLOC_COUNT_NO_OPERATORS
// every replaceable form: with only some replaced, AddressSanitizer sees its own new paired
// with our delete and aborts. GCC cannot see that these news are malloc underneath.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) {
  if (void* p = tether::test::allocate(n, 0)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (void* p = tether::test::allocate(n, 0)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t a) {
  if (void* p = tether::test::allocate(n, static_cast<std::size_t>(a))) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) {
  if (void* p = tether::test::allocate(n, static_cast<std::size_t>(a))) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return tether::test::allocate(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return tether::test::allocate(n, 0); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return tether::test::allocate(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return tether::test::allocate(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
#pragma GCC diagnostic pop
#endif  // TETHER_ALLOC_COUNT_NO_OPERATORS
