// SPDX-License-Identifier: Apache-2.0
#include "tether/physics/state_store.hpp"

#include <algorithm>

namespace tether::runtime {

StateStore::StateStore(std::size_t capacity) : slots_(std::max<std::size_t>(1, capacity)) {}

std::ptrdiff_t StateStore::find_step(std::uint64_t step) const {
  // steps increase through the ring: binary search
  std::size_t lo = 0, hi = count_;
  while (lo < hi) {
    const std::size_t mid = (lo + hi) / 2;
    if (slot(mid).step <= step)
      lo = mid + 1;
    else
      hi = mid;
  }
  return static_cast<std::ptrdiff_t>(lo) - 1;
}

void StateStore::push(const WorldState& state) {
  if (count_ > 0 && state.step <= newest()->step) {
    // a new future: forget the stored states from this step on
    count_ = state.step == 0 ? 0 : static_cast<std::size_t>(find_step(state.step - 1) + 1);
  }
  if (count_ == slots_.size()) {
    first_ = (first_ + 1) % slots_.size();
    --count_;
  }
  WorldState& dst = slots_[(first_ + count_) % slots_.size()];
  dst.step = state.step;
  dst.time_ns = state.time_ns;
  dst.bodies.assign(state.bodies.begin(), state.bodies.end());  // reuses the slot's capacity
  ++count_;
}

const WorldState* StateStore::oldest() const { return count_ ? &slot(0) : nullptr; }
const WorldState* StateStore::newest() const { return count_ ? &slot(count_ - 1) : nullptr; }

const WorldState* StateStore::at_step(std::uint64_t step) const {
  const std::ptrdiff_t i = find_step(step);
  if (i < 0 || slot(static_cast<std::size_t>(i)).step != step) return nullptr;
  return &slot(static_cast<std::size_t>(i));
}

bool StateStore::state_at(std::int64_t time_ns, WorldState& out) const {
  if (count_ == 0 || time_ns < slot(0).time_ns || time_ns > slot(count_ - 1).time_ns) return false;
  // the last stored state at or before time_ns
  std::size_t lo = 0, hi = count_;
  while (lo < hi) {
    const std::size_t mid = (lo + hi) / 2;
    if (slot(mid).time_ns <= time_ns)
      lo = mid + 1;
    else
      hi = mid;
  }
  const WorldState& a = slot(lo - 1);
  if (a.time_ns == time_ns || lo == count_) {
    out.step = a.step;
    out.time_ns = a.time_ns;
    out.bodies.assign(a.bodies.begin(), a.bodies.end());
    return a.time_ns == time_ns;
  }
  const WorldState& b = slot(lo);
  if (a.bodies.size() != b.bodies.size()) return false;
  const double f = static_cast<double>(time_ns - a.time_ns) / static_cast<double>(b.time_ns - a.time_ns);
  out.step = a.step;
  out.time_ns = time_ns;
  out.bodies.resize(a.bodies.size());
  for (std::size_t i = 0; i < a.bodies.size(); ++i) {
    const BodyState& p = a.bodies[i];
    const BodyState& q = b.bodies[i];
    BodyState& o = out.bodies[i];
    o.position_m = p.position_m + f * (q.position_m - p.position_m);
    o.orientation = p.orientation.slerp(f, q.orientation).normalized();
    o.linear_momentum = p.linear_momentum + f * (q.linear_momentum - p.linear_momentum);
    o.angular_momentum = p.angular_momentum + f * (q.angular_momentum - p.angular_momentum);
  }
  return true;
}

bool StateStore::rewind(std::uint64_t step, WorldState& out) {
  const std::ptrdiff_t i = find_step(step);
  if (i < 0 || slot(static_cast<std::size_t>(i)).step != step) return false;
  count_ = static_cast<std::size_t>(i) + 1;
  const WorldState& s = slot(static_cast<std::size_t>(i));
  out.step = s.step;
  out.time_ns = s.time_ns;
  out.bodies.assign(s.bodies.begin(), s.bodies.end());
  return true;
}

}  // namespace tether::runtime
