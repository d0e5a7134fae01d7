// SPDX-License-Identifier: Apache-2.0
// Steering a running session from another thread (the live server, tests): pause, resume,
// step, run to a time, change the real-time factor, push the world, set a gain, stop.
// Requests queue in a bounded inbox; the loop takes them between steps without waiting
// (a try-lock), so a client can never hold up a step. Requests that change the world are
// applied in phase 4 ("pre") of a step and recorded with it (docs/live.md).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "tether/recording/operator_command.hpp"

namespace tether::runtime {

/// One request to the session: what it asks (one struct per kind in `Action`, handled by a
/// std::visit the compiler checks) and who hears the answer. `done` is called exactly once,
/// on the loop thread (or on the caller's, when the request is refused or the session has
/// ended): it must not block.
struct ControlRequest {
  struct Status {};  // answer with the session's state (JSON)
  struct Pause {};   // stop stepping after the step in progress
  struct Resume {};  // step again, paced
  struct Step {      // run `steps` steps, then pause; answered when they are done
    std::uint64_t steps = 1;
  };
  struct RunUntil {  // run until the simulation time reaches `time_s`, then pause
    double time_s = 0;
  };
  struct SetRtf {  // the real-time factor from the next step (0 = as fast as possible)
    double rtf = 1;
  };
  struct World {  // applied and recorded at the next step (a force, a gain, a fault)
    OperatorCommand command;
  };
  struct Parameters {};  // answer with the tunable parameters and their values (JSON)
  struct Shutdown {};    // end the session after the step in progress (outcome stopped)
  struct Seek {          // replay (SessionOptions::keyframes): go to `step` from the nearest keyframe, paused
    std::uint64_t step = 0;
  };
  using Action = std::variant<Status, Pause, Resume, Step, RunUntil, SetRtf, World, Parameters, Shutdown, Seek>;

  Action action;
  /// ok, and a text: an error message, or the answer (JSON text) when ok.
  std::function<void(bool ok, const std::string& text)> done;
};

/// The inbox between the threads that steer a session and its loop.
class SessionControl {
 public:
  explicit SessionControl(std::size_t capacity = 256) : capacity_(capacity) {}

  /// Any thread. False (and `done` is not called) when the inbox is full or the session
  /// has ended; `why` says which.
  bool submit(ControlRequest request, std::string* why = nullptr);

  /// Loop thread: moves the queued requests into `out` (cleared first) if the lock is free
  /// right now; never waits for it.
  bool try_take(std::vector<ControlRequest>& out);
  /// Loop thread: waits up to `ms` for a request (while paused).
  void wait(int ms);
  /// Cheap check for the loop: anything queued?
  bool pending() const { return pending_.load(std::memory_order_acquire); }
  /// The session has ended: later submits are refused; requests still queued are answered
  /// with `why`.
  void close(const std::string& why);
  bool closed() const;

 private:
  std::size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<ControlRequest> queue_;
  std::atomic<bool> pending_{false};
  bool closed_ = false;
};

}  // namespace tether::runtime
