// SPDX-License-Identifier: Apache-2.0
// A program an endpoint launches (`launch:` of the MQTT and ArduPilot endpoints): the
// ChildProcess, and a thread that forwards its stdout and stderr to the log line by line,
// keeping the last lines for the messages that say why it ended. The serial endpoint reads
// its program's output on its own I/O thread instead (it also looks for a pty's name there).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "tether/process/child_process.hpp"

namespace tether::adapters {

class LaunchedProgram {
 public:
  /// Starts the program; `label` prefixes its output lines in the log ("[label] line").
  /// `on_exit` (optional) is called from the output thread once both pipes have closed,
  /// that is when the program has ended (or closed its output). Throws std::runtime_error
  /// when it cannot be started.
  LaunchedProgram(const LaunchSpec& spec, std::string label, std::function<void()> on_exit = {});
  /// Terminates it (grace 2 s) if still running and joins the output thread.
  ~LaunchedProgram();
  LaunchedProgram(const LaunchedProgram&) = delete;
  LaunchedProgram& operator=(const LaunchedProgram&) = delete;

  ChildProcess& child() { return *child_; }
  const std::string& command_line() const { return child_->command_line(); }
  /// Both of its pipes closed: it ended (or closed its output).
  bool exited() const { return exited_; }
  /// Waits up to `timeout` for exited().
  bool wait_exited(std::chrono::milliseconds timeout);
  /// "\n  | line" for each of its last lines (at most 10), or "".
  std::string tail_text() const;
  /// "exited with status 1" once reaped (try_wait), else "closed its output".
  std::string describe_end();
  /// SIGTERM to its group, SIGKILL after `grace`; reaps it, joins the output thread and
  /// returns the wait status. Safe to call twice (the second returns the first's status).
  int stop(std::chrono::milliseconds grace);

 private:
  void forward_output(int out_fd, int err_fd);

  std::unique_ptr<ChildProcess> child_;
  std::string label_;
  std::function<void()> on_exit_;
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::string> tail_;
  std::atomic<bool> exited_{false};
  std::thread output_;
  bool stopped_ = false;
  int status_ = 0;
};

}  // namespace tether::adapters
