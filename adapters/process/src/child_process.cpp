// SPDX-License-Identifier: Apache-2.0
#include "tether/process/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <thread>

extern char** environ;

namespace tether::adapters {

namespace {

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

std::string shell_quote(const std::string& arg) {
  const auto plain = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("_-./=:,+@%").find(c) != std::string_view::npos;
  };
  if (!arg.empty() && std::all_of(arg.begin(), arg.end(), plain)) return arg;
  std::string q = "'";
  for (char c : arg) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

ChildProcess::ChildProcess(const LaunchSpec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty()) throw std::runtime_error("no program to launch");
  for (const auto& a : spec.argv) command_line_ += (command_line_.empty() ? "" : " ") + shell_quote(a);

  // everything the child needs is prepared before fork: after it, only async-signal-safe calls
  std::vector<std::string> env_store;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string key = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& [k, v] : spec.env) replaced = replaced || k == key;
    if (!replaced) env_store.push_back(entry);
  }
  for (const auto& [k, v] : spec.env) env_store.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_store(spec.argv);
  std::vector<char*> argv;
  for (auto& a : argv_store) argv.push_back(a.data());
  argv.push_back(nullptr);

  int out[2] = {-1, -1}, err[2] = {-1, -1}, exec_err[2] = {-1, -1};
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 || pipe2(exec_err, O_CLOEXEC) != 0) {
    const int e = errno;
    for (int* p : {out, err, exec_err}) {
      close_fd(p[0]);
      close_fd(p[1]);
    }
    throw std::runtime_error("cannot create pipes for " + spec.argv[0] + ": " + std::strerror(e));
  }
  const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = getpid();
  const char* cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();

  const pid_t pid = fork();
  if (pid == 0) {
    // the child: own process group, dies with the runtime, clean signal state
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    int rc = 0;
    if (cwd != nullptr && chdir(cwd) != 0) rc = errno;
    if (rc == 0) {
      execvpe(argv[0], argv.data(), envp.data());
      rc = errno;
    }
    ssize_t ignored = write(exec_err[1], &rc, sizeof rc);
    (void)ignored;
    _exit(127);
  }
  const int fork_errno = errno;
  if (devnull >= 0) ::close(devnull);
  close_fd(out[1]);
  close_fd(err[1]);
  close_fd(exec_err[1]);
  if (pid < 0) {
    close_fd(out[0]);
    close_fd(err[0]);
    close_fd(exec_err[0]);
    throw std::runtime_error("cannot start " + spec.argv[0] + ": fork: " + std::strerror(fork_errno));
  }
  pid_ = pid;
  setpgid(pid, pid);  // also from this side: no race with a kill() of the group below

  // the exec-error pipe closes on a successful exec; otherwise it carries errno
  int child_errno = 0;
  ssize_t n;
  do {
    n = read(exec_err[0], &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  close_fd(exec_err[0]);
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    waitpid(pid, nullptr, 0);
    pid_ = -1;
    close_fd(out[0]);
    close_fd(err[0]);
    throw std::runtime_error("cannot run " + spec.argv[0] + (cwd ? " in " + spec.cwd : std::string()) + ": " +
                             std::strerror(child_errno));
  }
  out_fd_ = out[0];
  err_fd_ = err[0];
  for (int fd : {out_fd_, err_fd_}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
#ifdef SYS_pidfd_open
  pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd_ >= 0) fcntl(pidfd_, F_SETFD, FD_CLOEXEC);
#endif
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !status()) terminate(std::chrono::milliseconds(2000));
  close_fd(out_fd_);
  close_fd(err_fd_);
  close_fd(pidfd_);
}

int ChildProcess::take_stdout() {
  const int fd = out_fd_;
  out_fd_ = -1;
  return fd;
}

int ChildProcess::take_stderr() {
  const int fd = err_fd_;
  err_fd_ = -1;
  return fd;
}

std::optional<int> ChildProcess::try_wait() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (status_ || pid_ <= 0) return status_;
  int st = 0;
  const pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r == pid_) status_ = st;
  return status_;
}

std::optional<int> ChildProcess::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

std::optional<int> ChildProcess::wait_for(std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto st = try_wait()) return st;
    if (std::chrono::steady_clock::now() >= until) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

int ChildProcess::terminate(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return 0;
  if (auto st = try_wait()) return *st;
  kill(-pid_, SIGTERM);
  kill(pid_, SIGTERM);
  if (auto st = wait_for(grace)) {
    kill(-pid_, SIGKILL);  // anything the program left behind in its group
    return *st;
  }
  kill(-pid_, SIGKILL);
  kill(pid_, SIGKILL);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!status_) {
    int st = 0;
    if (waitpid(pid_, &st, 0) == pid_)
      status_ = st;
    else
      status_ = 0;
  }
  return *status_;
}

std::string ChildProcess::describe_status(int st) {
  if (WIFEXITED(st)) return "exited with status " + std::to_string(WEXITSTATUS(st));
  if (WIFSIGNALED(st)) {
    const int sig = WTERMSIG(st);
    const char* name = sigabbrev_np(sig);
    return "was killed by signal " + std::to_string(sig) + (name ? std::string(" (SIG") + name + ")" : std::string());
  }
  return "ended with wait status " + std::to_string(st);
}

}  // namespace tether::adapters
