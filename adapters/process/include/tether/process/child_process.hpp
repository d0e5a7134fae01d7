// SPDX-License-Identifier: Apache-2.0
// A program the runtime launches and supervises: host-built firmware, QEMU, a simulator
// bridge. It runs in its own process group with stdin from /dev/null and its stdout and
// stderr on pipes the caller reads; it gets SIGTERM if the runtime dies; terminate() stops
// it (SIGTERM to the group, SIGKILL after a grace period) and reaps it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tether::adapters {

/// What to run.
struct LaunchSpec {
  std::vector<std::string> argv;                         // argv[0] is looked up in PATH
  std::vector<std::pair<std::string, std::string>> env;  // added to (or replacing in) the environment
  std::string cwd;                                       // empty: the runtime's
};

/// `arg` as one word of a POSIX shell command line: as it is when it holds only letters,
/// digits and `_-./=:,+@%`, else in single quotes ("--set 'x=[1, 2]'").
std::string shell_quote(const std::string& arg);

class ChildProcess {
 public:
  /// Starts the program. Throws std::runtime_error if it cannot be started (not found, not
  /// executable: the exec error is reported back from the child before this returns).
  explicit ChildProcess(const LaunchSpec& spec);
  /// Terminates (grace 2 s) and reaps the child if it still runs.
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  /// The command line, for messages ("qemu-system-arm -M lm3s6965evb ...").
  const std::string& command_line() const { return command_line_; }
  /// Read ends of the child's stdout and stderr (non-blocking, close-on-exec); -1 once taken.
  int stdout_fd() const { return out_fd_; }
  int stderr_fd() const { return err_fd_; }
  /// Hands a pipe's descriptor to the caller, who closes it.
  int take_stdout();
  int take_stderr();
  /// A descriptor that becomes readable when the child exits (pidfd), or -1 if the kernel
  /// has none; the caller then polls try_wait(). Owned by this object.
  int exit_fd() const { return pidfd_; }

  /// Reaps the child if it has exited; its wait status, or nothing while it runs.
  /// Thread-safe.
  std::optional<int> try_wait();
  /// Waits up to `timeout` for the child to exit; its wait status or nothing.
  std::optional<int> wait_for(std::chrono::milliseconds timeout);
  /// SIGTERM to the process group, SIGKILL after `grace`, then reaps. Returns the wait status.
  int terminate(std::chrono::milliseconds grace);
  /// The wait status once reaped.
  std::optional<int> status() const;

  /// "exited with status 1", "was killed by signal 9 (SIGKILL)".
  static std::string describe_status(int wait_status);

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  int pidfd_ = -1;
  std::string command_line_;
  mutable std::mutex mutex_;
  std::optional<int> status_;
};

}  // namespace tether::adapters
