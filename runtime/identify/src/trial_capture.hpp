// SPDX-License-Identifier: Apache-2.0
// Capturing a trial step by step, as the session runs it: reading a recording back
// (load_trial replays it with a capture at the head of the processors) and the online refit
// (the `estimate` processor captures as it goes) fill a Trial the same way.
#pragma once

#include <cstdint>
#include <vector>

#include "tether/identify/identify.hpp"
#include "tether/feedback/feedback.hpp"

namespace tether::hal {
class DeviceBank;
}

namespace tether::identify {

class TrialCapture {
 public:
  /// Attaches to `trial` (nullptr: detaches), whose body is set, from step `first`; with the
  /// session's devices the body's thrusters are captured too (their rotors' state now is taken
  /// as the first step's start).
  void attach(Trial* trial, std::uint64_t first, const hal::DeviceBank* bank);
  /// Step k = ctx.step: the twin's S_k, the body's input as gathered (nullptr: none), and this
  /// step's reply, which measures S_{k+1} (as the `estimate` processor takes it).
  void capture(const runtime::FeedbackContext& ctx, const runtime::WorldState& state, const runtime::BodyWrench* input);
  /// Forgets the oldest `n` steps (the trial then starts n steps later). Their twin states'
  /// storage is kept for the next steps: a capture whose history is full allocates nothing.
  void drop_front(std::size_t n);
  int body() const { return trial_ ? trial_->body : -1; }
  std::uint64_t first() const { return first_; }

 private:
  Trial* trial_ = nullptr;
  std::uint64_t first_ = 0;
  const hal::DeviceBank* bank_ = nullptr;
  std::vector<std::size_t> thrusters_;  // their indices in the bank
  std::vector<double> speed_end_;       // each rotor's speed at the end of the last step captured
  // the twin's dropped steps, their storage kept for the steps captured next
  std::vector<std::vector<runtime::BodyState>> spare_;
};

/// After the capture: the samples trimmed to the twin's steps (+ the last measurement), the
/// twin's thrust over each step computed again (the bank does not keep it: the same function on
/// the same speed and command gives the same number, so a fit that re-runs the rotors
/// unchanged adds exactly nothing to the recorded input), the measured samples counted.
void finish_capture(Trial& trial);

}  // namespace tether::identify
