// SPDX-License-Identifier: Apache-2.0
// The last K world states, for rewind and for state_at(t) ("Simulator Architecture",
// notes, 2024, §4.1): a ring of
// WorldState copies that reuses its memory, so pushing does not allocate once warmed up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tether/physics/world_state.hpp"

namespace tether::runtime {

class StateStore {
 public:
  /// Keeps at most `capacity` states (at least 1).
  explicit StateStore(std::size_t capacity = 256);

  std::size_t capacity() const { return slots_.size(); }
  std::size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  void clear() { count_ = 0; }
  /// Gives every slot room for `bodies` bodies now, so push() never allocates.
  void reserve_bodies(std::size_t bodies) {
    for (WorldState& s : slots_) s.bodies.reserve(bodies);
  }

  /// Stores a copy of `state` as the newest, dropping the oldest when full. States must come
  /// in increasing step order; one whose step is not after the newest first drops every stored
  /// state from that step on (re-advancing after a rewind replaces the old future).
  void push(const WorldState& state);

  /// Oldest / newest stored state, or nullptr when empty.
  const WorldState* oldest() const;
  const WorldState* newest() const;
  /// The stored state of loop step `step`, or nullptr.
  const WorldState* at_step(std::uint64_t step) const;

  /// The state at time_ns: a stored state when one has that time, otherwise interpolated
  /// between the two stored states around it (position and momenta linearly, orientation by
  /// slerp; step is the earlier state's). False if time_ns is outside the stored span or the
  /// two states hold different numbers of bodies.
  bool state_at(std::int64_t time_ns, WorldState& out) const;

  /// Makes `step` the newest stored state (later ones are dropped) and copies it to `out`;
  /// false (nothing changed) if that step is not stored. Advancing `out` with the same inputs
  /// reproduces the dropped states bit for bit.
  bool rewind(std::uint64_t step, WorldState& out);

 private:
  const WorldState& slot(std::size_t i) const { return slots_[(first_ + i) % slots_.size()]; }
  // index (0 = oldest) of the newest stored state with step <= `step`, or -1
  std::ptrdiff_t find_step(std::uint64_t step) const;

  std::vector<WorldState> slots_;
  std::size_t first_ = 0;  // ring position of the oldest
  std::size_t count_ = 0;
};

}  // namespace tether::runtime
