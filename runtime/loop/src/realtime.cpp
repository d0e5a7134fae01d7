// SPDX-License-Identifier: Apache-2.0
#include "tether/loop/realtime.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

namespace tether::runtime {

struct RealtimeGuard::Saved {
  bool locked = false;
  bool scheduled = false;
  int policy = SCHED_OTHER;
  sched_param param{};
  bool pinned = false;
  cpu_set_t cpus{};
};

namespace {

std::string refused(const std::string& what, int err, const std::string& grant) {
  return "refused: " + what + ": " + std::strerror(err) + "; " + grant;
}

}  // namespace

RealtimeGuard::RealtimeGuard(const RealtimeConfig& config) : config_(config), saved_(std::make_unique<Saved>()) {
  if (config_.lock_memory) {
    if (mlockall(MCL_CURRENT | MCL_FUTURE) == 0) {
      saved_->locked = true;
      lock_memory_ = "applied";
    } else {
      lock_memory_ = refused("mlockall", errno,
                             "grant CAP_IPC_LOCK or raise the locked-memory limit (ulimit -l unlimited, systemd "
                             "LimitMEMLOCK=infinity)");
    }
  }
  if (config_.priority > 0) {
    pthread_getschedparam(pthread_self(), &saved_->policy, &saved_->param);
    sched_param p{};
    p.sched_priority = config_.priority;
    if (const int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &p); rc == 0) {
      saved_->scheduled = true;
      priority_ = "applied";
    } else {
      priority_ = refused("SCHED_FIFO at priority " + std::to_string(config_.priority), rc,
                          "grant CAP_SYS_NICE or a real-time priority limit of at least " +
                              std::to_string(config_.priority) + " (ulimit -r, systemd LimitRTPRIO)");
    }
  }
  if (config_.cpu >= 0) {
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    pthread_getaffinity_np(pthread_self(), sizeof saved_->cpus, &saved_->cpus);
    cpu_set_t want;
    CPU_ZERO(&want);
    if (config_.cpu >= CPU_SETSIZE) {
      cpu_ = refused("CPU " + std::to_string(config_.cpu), EINVAL,
                     "the machine has CPUs 0.." + std::to_string(online - 1) + " online");
    } else {
      CPU_SET(config_.cpu, &want);
      if (const int rc = pthread_setaffinity_np(pthread_self(), sizeof want, &want); rc == 0) {
        saved_->pinned = true;
        cpu_ = "applied";
      } else {
        cpu_ = refused("CPU " + std::to_string(config_.cpu), rc,
                       "the machine has CPUs 0.." + std::to_string(online - 1) +
                           " online, and the process may use only its cpuset (taskset -p, cgroup cpuset.cpus)");
      }
    }
  }
  for (const auto* s : {&lock_memory_, &priority_, &cpu_})
    if (s->rfind("refused", 0) == 0) spdlog::warn("loop.realtime: {}", *s);
}

RealtimeGuard::~RealtimeGuard() {
  if (saved_->pinned) pthread_setaffinity_np(pthread_self(), sizeof saved_->cpus, &saved_->cpus);
  if (saved_->scheduled) pthread_setschedparam(pthread_self(), saved_->policy, &saved_->param);
  if (saved_->locked) munlockall();
}

std::vector<std::pair<std::string, std::string>> RealtimeGuard::status() const {
  std::vector<std::pair<std::string, std::string>> out;
  if (config_.lock_memory) out.emplace_back("lock_memory", lock_memory_);
  if (config_.priority > 0) out.emplace_back("priority", priority_);
  if (config_.cpu >= 0) out.emplace_back("cpu", cpu_);
  return out;
}

}  // namespace tether::runtime
