// SPDX-License-Identifier: Apache-2.0
// A session's operator-control state (docs/live.md), one member of Session (op_): the
// requests taken from its SessionControl, the step and run-until requests in progress, the
// world commands waiting for the next step, the forces acting and this step's commands for
// the recording. session_control.cpp works on it; the step reads only `forces`.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tether/loop/control.hpp"
#include "tether/loop/session.hpp"
#include "tether/recording/recording.hpp"

namespace tether::runtime {

struct OperatorControl {
  std::vector<ControlRequest> batch;  // taken from the inbox between steps (capacity reused)
  struct Target {
    bool by_time = false;
    std::uint64_t steps = 0;  // steps_done_ to reach
    std::int64_t time_ns = 0;
    std::function<void(bool, const std::string&)> done;
  };
  std::vector<Target> targets;  // step and run_until requests in progress
  bool paused = false;
  bool shutdown = false;
  std::uint64_t pauses = 0;
  double paused_wall_s = 0;
  std::vector<OperatorCommand> pending;  // accepted, applied at the next step
  std::vector<Session::OperatorForce> forces;
  StepCommands step_commands;  // this step's, for the recording
  std::size_t script_at = 0;   // next of SessionOptions::scripted_commands
  std::uint64_t commands_applied = 0;
  std::uint64_t end_step = 0;  // the step the session ends before (hold_at_end, seek)
};

}  // namespace tether::runtime
