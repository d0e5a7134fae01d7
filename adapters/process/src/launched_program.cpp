// SPDX-License-Identifier: Apache-2.0
#include "tether/process/launched_program.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include <spdlog/spdlog.h>

namespace tether::adapters {

LaunchedProgram::LaunchedProgram(const LaunchSpec& spec, std::string label, std::function<void()> on_exit)
    : child_(std::make_unique<ChildProcess>(spec)), label_(std::move(label)), on_exit_(std::move(on_exit)) {
  const int out_fd = child_->take_stdout();
  const int err_fd = child_->take_stderr();
  output_ = std::thread([this, out_fd, err_fd] { forward_output(out_fd, err_fd); });
}

LaunchedProgram::~LaunchedProgram() { stop(std::chrono::milliseconds(2000)); }

// the program's output, line by line, to the log until both pipes close
void LaunchedProgram::forward_output(int out_fd, int err_fd) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string partial[2];
  int open = 2;
  char buf[1024];
  const auto line_done = [&](std::string& line) {
    spdlog::info("[{}] {}", label_, line);
    std::lock_guard<std::mutex> lock(m_);
    tail_.push_back(std::move(line));
    if (tail_.size() > 10) tail_.pop_front();
    line.clear();
  };
  while (open > 0) {
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (!partial[i].empty()) line_done(partial[i]);
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
        continue;
      }
      for (ssize_t k = 0; k < n; ++k) {
        if (buf[k] == '\n')
          line_done(partial[i]);
        else if (buf[k] != '\r' && partial[i].size() < 2000)
          partial[i] += buf[k];
      }
    }
  }
  for (const pollfd& p : fds)
    if (p.fd >= 0) ::close(p.fd);
  {
    std::lock_guard<std::mutex> lock(m_);
    exited_ = true;
  }
  cv_.notify_all();
  if (on_exit_) on_exit_();
}

bool LaunchedProgram::wait_exited(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(m_);
  return cv_.wait_for(lock, timeout, [&] { return exited_.load(); });
}

std::string LaunchedProgram::tail_text() const {
  std::lock_guard<std::mutex> lock(m_);
  std::string text;
  for (const std::string& l : tail_) text += "\n  | " + l;
  return text;
}

std::string LaunchedProgram::describe_end() {
  const auto st = child_->try_wait();
  return st ? ChildProcess::describe_status(*st) : std::string("closed its output");
}

int LaunchedProgram::stop(std::chrono::milliseconds grace) {
  if (stopped_) return status_;
  stopped_ = true;
  status_ = child_->terminate(grace);
  if (output_.joinable()) output_.join();
  return status_;
}

}  // namespace tether::adapters
