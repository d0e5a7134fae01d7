// SPDX-License-Identifier: Apache-2.0
#include "tether/loop/control.hpp"

#include <chrono>

namespace tether::runtime {

bool SessionControl::submit(ControlRequest request, std::string* why) {
  {
    std::lock_guard lock(mutex_);
    if (closed_) {
      if (why) *why = "the session has ended";
      return false;
    }
    if (queue_.size() >= capacity_) {
      if (why) *why = "too many requests queued (" + std::to_string(capacity_) + "); try again";
      return false;
    }
    queue_.push_back(std::move(request));
    pending_.store(true, std::memory_order_release);
  }
  wake_.notify_one();
  return true;
}

bool SessionControl::try_take(std::vector<ControlRequest>& out) {
  out.clear();
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return false;
  out.swap(queue_);
  pending_.store(false, std::memory_order_release);
  return !out.empty();
}

void SessionControl::wait(int ms) {
  std::unique_lock lock(mutex_);
  wake_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return !queue_.empty() || closed_; });
}

void SessionControl::close(const std::string& why) {
  std::vector<ControlRequest> left;
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    left.swap(queue_);
    pending_.store(false, std::memory_order_release);
  }
  wake_.notify_all();
  for (auto& r : left)
    if (r.done) r.done(false, why);
}

bool SessionControl::closed() const {
  std::lock_guard lock(mutex_);
  return closed_;
}

}  // namespace tether::runtime
