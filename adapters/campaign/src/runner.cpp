// SPDX-License-Identifier: Apache-2.0
#include "tether/campaign/runner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>

#include "tether/process/child_process.hpp"

namespace tether::campaign {

namespace fs = std::filesystem;
using adapters::ChildProcess;
using adapters::LaunchSpec;

namespace {

using Clock = std::chrono::steady_clock;

// signals reach the loop through a pipe, so poll() wakes for them without a race
int g_signal_pipe[2] = {-1, -1};
volatile sig_atomic_t g_signal = 0;
volatile sig_atomic_t g_signals = 0;

extern "C" void on_campaign_signal(int sig) {
  const int saved = errno;
  g_signal = sig;
  g_signals = g_signals + 1;
  const char c = 1;
  ssize_t ignored = write(g_signal_pipe[1], &c, 1);
  (void)ignored;
  errno = saved;
}

// while alive: SIGINT and SIGTERM go to on_campaign_signal; the old handlers come back after
class SignalScope {
 public:
  SignalScope() {
    if (pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("cannot create a pipe");
    g_signal = 0;
    g_signals = 0;
    struct sigaction sa {};
    sa.sa_handler = on_campaign_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~SignalScope() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    ::close(g_signal_pipe[0]);
    ::close(g_signal_pipe[1]);
    g_signal_pipe[0] = g_signal_pipe[1] = -1;
  }
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

constexpr std::size_t tail_bytes = 16 * 1024;

struct Worker {
  PlannedRun plan;
  std::string folder;
  std::unique_ptr<ChildProcess> child;
  int out_fd = -1;
  int err_fd = -1;
  std::ofstream log;     // output.txt: what the run printed
  std::ofstream result;  // a replay's stdout: replay.json (its --json result)
  std::string tail;      // the last tail_bytes of what it printed, for the failure's reason
  Clock::time_point started;
  std::optional<Clock::time_point> kill_at;
  bool timed_out = false;
  bool stopped = false;
};

// reads what is there; false at end of file
bool drain(int& fd, Worker& w, bool is_stdout) {
  char buf[8192];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      if (is_stdout && w.plan.replay) {
        w.result.write(buf, n);
      } else {
        w.log.write(buf, n);
        w.tail.append(buf, static_cast<std::size_t>(n));
        if (w.tail.size() > 2 * tail_bytes) w.tail.erase(0, w.tail.size() - tail_bytes);
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    ::close(fd);  // end of file or an error: nothing more comes
    fd = -1;
    return false;
  }
}

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// a worker running `plan`; null when it could not be started, with its result in `failed`
std::unique_ptr<Worker> start_worker(const PlannedRun& plan, const RunnerOptions& options,
                                     std::optional<RunResult>& failed) {
  auto w = std::make_unique<Worker>();
  w->plan = plan;
  w->folder = (fs::path(options.out_dir) / plan.folder).string();
  w->started = Clock::now();
  RunEnd end;
  std::error_code ec;
  fs::create_directories(w->folder, ec);
  if (ec) {
    end.start_error = "cannot create " + w->folder + ": " + ec.message();
    failed = judge_run(plan, end, w->folder);
    return nullptr;
  }
  w->log.open(fs::path(w->folder) / "output.txt", std::ios::binary | std::ios::trunc);
  if (plan.replay) w->result.open(fs::path(w->folder) / "replay.json", std::ios::binary | std::ios::trunc);
  LaunchSpec spec;
  spec.argv.push_back(options.program);
  spec.argv.insert(spec.argv.end(), plan.args.begin(), plan.args.end());
  if (!plan.replay) {
    spec.argv.push_back("--out");
    spec.argv.push_back(w->folder);
    spec.argv.push_back("--overwrite");  // the campaign owns its run folders (a rerun into the same --out)
    if (!options.report_assets.empty()) {
      spec.argv.push_back("--report-assets");
      spec.argv.push_back(options.report_assets);
    }
  }
  try {
    w->child = std::make_unique<ChildProcess>(spec);
  } catch (const std::exception& e) {
    w->log.close();
    end.start_error = e.what();
    end.duration_s = std::chrono::duration<double>(Clock::now() - w->started).count();
    failed = judge_run(plan, end, w->folder);
    return nullptr;
  }
  w->out_fd = w->child->take_stdout();
  w->err_fd = w->child->take_stderr();
  return w;
}

// until something happens: a signal, output, a worker's exit (or 100 ms)
void wait_for_events(const std::vector<std::unique_ptr<Worker>>& workers) {
  std::vector<pollfd> fds;
  fds.push_back({g_signal_pipe[0], POLLIN, 0});
  for (const auto& w : workers) {
    if (w->out_fd >= 0) fds.push_back({w->out_fd, POLLIN, 0});
    if (w->err_fd >= 0) fds.push_back({w->err_fd, POLLIN, 0});
    if (w->child->exit_fd() >= 0) fds.push_back({w->child->exit_fd(), POLLIN, 0});
  }
  if (poll(fds.data(), fds.size(), 100) < 0 && errno != EINTR) throw std::runtime_error("poll failed");
}

// Ctrl-C or SIGTERM: stop launching, pass it on; a second one kills. True when one arrived
// since the last look (`forwarded` counts those passed on).
bool forward_signals(const std::vector<std::unique_ptr<Worker>>& workers, int& forwarded, double kill_after_s) {
  char sink[64];
  while (read(g_signal_pipe[0], sink, sizeof sink) > 0) {
  }
  const int signals_now = g_signals;
  if (signals_now <= forwarded) return false;
  const int sig = g_signal == SIGTERM ? SIGTERM : SIGINT;
  for (auto& w : workers) {
    w->stopped = true;
    if (signals_now >= 2) {
      kill(-w->child->pid(), SIGKILL);
      kill(w->child->pid(), SIGKILL);
    } else {
      kill(w->child->pid(), sig);
      w->kill_at = Clock::now() + seconds(kill_after_s);
    }
  }
  forwarded = signals_now;
  return true;
}

// reads what the worker printed, stops it when over its time; how it ended once it has
std::optional<RunEnd> watch(Worker& w, Clock::time_point now, const RunnerOptions& options) {
  if (w.out_fd >= 0) drain(w.out_fd, w, true);
  if (w.err_fd >= 0) drain(w.err_fd, w, false);
  // over its time: SIGTERM (it stops after a step and writes its summary), then SIGKILL
  if (!w.timed_out && now - w.started > std::chrono::duration<double>(options.run_timeout_s)) {
    w.timed_out = true;
    kill(w.child->pid(), SIGTERM);
    w.kill_at = now + seconds(options.kill_after_s);
  }
  if (w.kill_at && now > *w.kill_at) {
    kill(-w.child->pid(), SIGKILL);
    kill(w.child->pid(), SIGKILL);
    w.kill_at.reset();
  }
  const auto status = w.child->try_wait();
  if (!status) return std::nullopt;
  // what it printed last (a program it left behind may hold the pipe: no waiting for
  // the end of file), then the verdict
  if (w.out_fd >= 0) drain(w.out_fd, w, true);
  if (w.err_fd >= 0) drain(w.err_fd, w, false);
  if (w.out_fd >= 0) ::close(w.out_fd);
  if (w.err_fd >= 0) ::close(w.err_fd);
  w.log.close();
  w.result.close();
  RunEnd end;
  end.started = true;
  end.wait_status = *status;
  end.timed_out = w.timed_out;
  end.stopped = w.stopped;
  end.duration_s = std::chrono::duration<double>(Clock::now() - w.started).count();
  end.output_tail = w.tail.size() > tail_bytes ? w.tail.substr(w.tail.size() - tail_bytes) : w.tail;
  return end;
}

// `keep_recordings: failed`: a passed run's recording goes; recording.txt says why and how
// to make the run again (the same scenario, overrides and seed)
void discard_passed_recording(RunResult& r, const std::string& program) {
  if (r.verdict != RunVerdict::pass || r.recording.empty()) return;
  std::error_code ec;
  std::uintmax_t bytes = fs::file_size(r.recording, ec);
  if (ec) bytes = 0;
  if (!fs::remove(r.recording, ec)) return;  // kept when it cannot go
  r.recording.clear();
  // the scenario may find its firmware through TETHER_BUILD_DIR: the command carries it
  std::string command;
  if (const char* build = std::getenv("TETHER_BUILD_DIR"); build && *build)
    command = "TETHER_BUILD_DIR=" + adapters::shell_quote(build) + " ";
  command += adapters::shell_quote(program);
  for (const auto& a : r.plan.args) command += " " + adapters::shell_quote(a);
  std::ofstream note(fs::path(r.folder) / "recording.txt", std::ios::binary | std::ios::trunc);
  note << "recording.mcap (" << bytes << " bytes) was not kept: this run passed, and the campaign keeps the "
       << "recordings of failed runs only (keep_recordings: failed). To make the run again, recorded:\n  " << command
       << " --out FOLDER\n";
  note.close();
  // the run's report names the recording it was drawn from: it says there that it went
  const fs::path report = fs::path(r.folder) / "report.html";
  std::ifstream in(report, std::ios::binary);
  std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  const auto at = html.find("<span>recording <code>");
  const auto end = at == std::string::npos ? std::string::npos : html.find("</code>", at);
  if (end == std::string::npos) return;
  html.insert(end + 7, " <b>not kept</b> (the run passed; recording.txt beside this report makes it again)");
  std::ofstream(report, std::ios::binary | std::ios::trunc) << html;
}

}  // namespace

std::vector<RunResult> run_campaign(const std::vector<PlannedRun>& runs, const RunnerOptions& options,
                                    bool& interrupted) {
  interrupted = false;
  const SignalScope signals;
  std::vector<std::optional<RunResult>> results(runs.size());
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<std::size_t> slots;  // the plan index of each worker, same order as `workers`
  const std::size_t jobs = std::max<std::size_t>(1, options.jobs);
  std::size_t next = 0;
  bool stopping = false;
  int forwarded = 0;  // signals passed on so far

  const auto finish = [&](std::size_t slot, RunResult result) {
    if (options.on_finished) options.on_finished(result);
    results[slot] = std::move(result);
  };

  for (;;) {
    // launch while there is room
    while (!stopping && workers.size() < jobs && next < runs.size()) {
      std::optional<RunResult> failed;
      auto w = start_worker(runs[next], options, failed);
      if (w) {
        workers.push_back(std::move(w));
        slots.push_back(next);
      } else {
        finish(next, std::move(*failed));
      }
      ++next;
    }
    if (workers.empty()) break;

    wait_for_events(workers);
    if (forward_signals(workers, forwarded, options.kill_after_s)) {
      interrupted = true;
      stopping = true;
    }

    const auto now = Clock::now();
    for (std::size_t i = 0; i < workers.size();) {
      Worker& w = *workers[i];
      const std::optional<RunEnd> end = watch(w, now, options);
      if (!end) {
        ++i;
        continue;
      }
      RunResult result = judge_run(w.plan, *end, w.folder);
      if (!options.keep_passed_recordings) discard_passed_recording(result, options.program);
      finish(slots[i], std::move(result));
      workers.erase(workers.begin() + static_cast<std::ptrdiff_t>(i));
      slots.erase(slots.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }

  std::vector<RunResult> out;
  for (std::size_t i = 0; i < runs.size(); ++i)
    out.push_back(results[i] ? std::move(*results[i])
                             : not_run(runs[i], "not started: the campaign was interrupted (SIGINT or SIGTERM)"));
  return out;
}

}  // namespace tether::campaign
