// SPDX-License-Identifier: Apache-2.0
#include "tether/serial/serial_endpoint.hpp"

#include "serial_link.hpp"
#include "tether/process/launch_check.hpp"

// Boost 1.74 + GCC 12 + C++20: <utility> must come before any Asio header (Asio uses
// std::exchange without including it; without this the build fails in C++20 mode)
#include <utility>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <spdlog/spdlog.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include "tether/process/child_process.hpp"
#include "tether/firmware_shim/payloads.h"
#include "tether/hal/device_bank.hpp"
#include "tether/physics/math.hpp"

namespace tether::adapters {

using namespace serial_detail;

void set_serial_logs_quiet(bool quiet) { g_quiet.store(quiet); }

// ---- the endpoint --------------------------------------------------------------------------

struct SerialEndpoint::Impl {
  std::shared_ptr<IoThread> io;
  std::shared_ptr<Link> link;
  mutable std::mutex link_mutex;  // `link` is replaced by start() while others may read counters

  std::shared_ptr<Link> current_link() const {
    std::lock_guard<std::mutex> lock(link_mutex);
    return link;
  }
  std::unique_ptr<ChildProcess> child;
  SerialLine line;
  int pty_slave = -1;
  std::string pty_path;
  std::uint64_t last_step = 0;
  bool published = false;
  SteadyClock::time_point next_resend{};
  SteadyClock::time_point busy_until{};  // busy_poll_us after SENSORS(k) went out
  std::uint64_t replies_polled = 0;      // replies that came while gather() polled without sleeping
  bool stopped = false;
  std::string exit_description;  // how the program ended, once it has

  // the two halves of start(): the program (with `launch:`), then the handshake
  void launch(const SerialEndpointConfig& config, const std::string& endpoint, milliseconds timeout);
  void handshake(const SerialEndpointConfig& config, const std::string& endpoint, milliseconds timeout);
};

SerialEndpoint::SerialEndpoint(const runtime::EndpointConfig& config, const runtime::Scenario& scenario)
    : Endpoint(config), config_(parse_serial_config(config, scenario)), impl_(std::make_unique<Impl>()) {}

SerialEndpoint::SerialEndpoint(const runtime::EndpointConfig& config, SerialEndpointConfig serial)
    : Endpoint(config), config_(std::move(serial)), impl_(std::make_unique<Impl>()) {}

SerialEndpoint::~SerialEndpoint() { stop(); }

namespace {

// why the endpoint cannot go on, or empty (m held)
std::string fault_reason(const Link& link, const std::string& what) {
  if (link.proto.failed()) return link.proto.failure() + " " + what;
  if (link.child_exited) {
    std::string s = "firmware process " + ChildProcess::describe_status(link.child_status) + " " + what;
    if (!link.tail.empty()) s += " (last output: " + link.tail.back() + ")";
    return s;
  }
  if (link.line_closed) return "serial line closed " + what + ": " + link.line_error;
  return {};
}

// the loop's counters: replies for other steps and undecodable input
void sync_counters(const SerialCounters& c, runtime::LinkCounts& out) {
  out.stale = c.stale + c.duplicate + c.premature;
  out.corrupt = c.dropped_frames() + c.malformed;
}

}  // namespace

std::vector<std::string> SerialEndpoint::launch_problems() const {
  if (!config_.launch) return {};
  return adapters::launch_problems(name(), config_.launch->command, config_.launch->qemu_elf);
}

// starts the configured program; a program that makes its own pseudo-terminal names it on
// its output, and the line is opened on it
void SerialEndpoint::Impl::launch(const SerialEndpointConfig& config, const std::string& endpoint,
                                  milliseconds timeout) {
  Impl& s = *this;
  Link& link = *s.link;
  const SerialLaunchConfig& l = *config.launch;
  if (!l.qemu_elf.empty() && !std::filesystem::exists(l.qemu_elf))
    throw std::runtime_error("firmware image " + l.qemu_elf +
                             " not found (scripts/build_firmware.sh cortex_m3 builds the examples)");
  LaunchSpec spec;
  spec.argv = l.command;
  spec.env = l.env;
  spec.cwd = l.cwd;
  if (l.pty) {
    PtyPair pair = open_pty_pair();
    s.pty_slave = pair.slave;
    s.pty_path = pair.slave_path;
    s.line = SerialLine::adopt(pair.master, "pty master of " + pair.slave_path);
    spec.env.emplace_back("TETHER_PORT", pair.slave_path);
    for (auto& a : spec.argv)
      for (std::size_t at; (at = a.find("{port}")) != std::string::npos;) a.replace(at, 6, pair.slave_path);
  }
  s.child = std::make_unique<ChildProcess>(spec);
  info("endpoint \"{}\": launched {} (pid {}){}", endpoint, s.child->command_line(), s.child->pid(),
       l.pty ? " on " + s.pty_path : std::string());
  {
    std::lock_guard<std::mutex> lock(link.m);
    link.child = s.child.get();
    link.want_port = !l.pty;
    if (l.pty) link.hangup_hint = "the program closed its end of " + s.pty_path;
  }
  s.io->run_sync([&] {
    std::lock_guard<std::mutex> lock(link.m);
    auto& io = s.io->io();
    link.out_pipe.emplace(io, s.child->take_stdout());
    link.err_pipe.emplace(io, s.child->take_stderr());
    if (s.child->exit_fd() >= 0)
      link.exit_watch.emplace(io, ::dup(s.child->exit_fd()));
    else
      link.exit_poll.emplace(io);
    link.read_pipe(false);
    link.read_pipe(true);
    link.watch_child();
  });
  if (!l.pty) {
    // the program names its pty on its output
    std::unique_lock<std::mutex> lock(link.m);
    const auto until = SteadyClock::now() + timeout;
    link.cv.wait_until(lock, until, [&] { return !link.announced_port.empty() || link.child_exited; });
    if (link.announced_port.empty()) {
      if (link.child_exited)
        throw std::runtime_error(s.child->command_line() + " " + ChildProcess::describe_status(link.child_status) +
                                 " before it named a pseudo-terminal; its last output:" + tail_text(link.tail));
      throw std::runtime_error(
          s.child->command_line() + " named no pseudo-terminal (/dev/pts/N) on its output within " +
          std::to_string(config.handshake_timeout_ms) + " ms" +
          (link.tail.empty() ? std::string(" (no output)") : "; its last output:" + tail_text(link.tail)));
    }
    const std::string path = link.announced_port;
    lock.unlock();
    s.line = SerialLine::open(path, config.settings);
  }
}

// HELLO, then DEVICES and READY, each within the handshake timeout (m not held on entry)
void SerialEndpoint::Impl::handshake(const SerialEndpointConfig& config, const std::string& endpoint,
                                     milliseconds timeout) {
  Impl& s = *this;
  Link& link = *s.link;
  // HELLO
  std::unique_lock<std::mutex> lock(link.m);
  auto until = SteadyClock::now() + timeout;
  const auto broken = [&] { return link.proto.failed() || link.child_exited || link.line_closed; };
  link.cv.wait_until(lock, until, [&] { return link.proto.have_hello() || broken(); });
  if (link.child_exited && !link.proto.failed())
    throw std::runtime_error("firmware process " + ChildProcess::describe_status(link.child_status) +
                             " before the handshake ended; its last output:" + tail_text(link.tail));
  if (link.proto.failed()) throw std::runtime_error(link.proto.failure());
  if (link.line_closed) throw std::runtime_error("serial line " + s.line.description() + " closed: " + link.line_error);
  if (!link.proto.have_hello()) {
    const SerialCounters& c = link.proto.counters();
    std::string hint;
    if (c.bytes_rx == 0)
      hint = "nothing was received: is the firmware running and on this line?";
    else if (c.frames_rx == 0)
      hint = std::to_string(c.bytes_rx) +
             " bytes but no valid frame were received: wrong baud rate or not Tether firmware?";
    else
      hint = std::to_string(c.frames_rx) + " frames but no HELLO were received";
    throw std::runtime_error("no HELLO from the firmware on " + s.line.description() + " within " +
                             std::to_string(config.handshake_timeout_ms) + " ms: " + hint);
  }
  // The program has its end of our pty open (its HELLO came through it). Until now the
  // runtime held the slave too, so that the master did not hang up before the program
  // opened it; from now on only the program holds it, and when it closes it (exits, or
  // closes the line and lives on) the master hangs up and the step reports it.
  if (s.pty_slave >= 0) {
    ::close(s.pty_slave);
    s.pty_slave = -1;
  }

  // DEVICES, then READY
  link.proto.send_devices();
  link.flush_outbox();
  if (link.proto.failed()) throw std::runtime_error(link.proto.failure());
  until = SteadyClock::now() + timeout;
  link.cv.wait_until(lock, until, [&] { return link.proto.phase() == SerialProtocol::Phase::running || broken(); });
  link.await_exit_after_hangup(lock);
  if (link.proto.failed()) throw std::runtime_error(link.proto.failure());
  if (link.child_exited)
    throw std::runtime_error("firmware process " + ChildProcess::describe_status(link.child_status) +
                             " before READY; its last output:" + tail_text(link.tail));
  if (link.line_closed) throw std::runtime_error("serial line " + s.line.description() + " closed: " + link.line_error);
  if (link.proto.phase() != SerialProtocol::Phase::running)
    throw std::runtime_error("firmware `" + std::string(link.proto.hello().name) + "` sent no READY within " +
                             std::to_string(config.handshake_timeout_ms) + " ms of the device table");
  std::string opened;
  for (std::uint16_t idx : link.proto.slot_devices()) {
    for (const auto& d : config.table)
      if (d.index == idx) opened += (opened.empty() ? "" : ", ") + d.name;
  }
  const tether_hello_t& h = link.proto.hello();
  info("endpoint \"{}\": firmware `{}` build 0x{:08x}, protocol {}, {} devices offered, opened: {}", endpoint, h.name,
       h.build_id, static_cast<unsigned>(h.protocol_version), config.table.size(),
       opened.empty() ? std::string("none") : opened);
}

void SerialEndpoint::start(const runtime::WorldModel& model, const runtime::WorldState& initial) {
  (void)model, (void)initial;
  Impl& s = *impl_;
  s.io = IoThread::get();
  {
    std::lock_guard<std::mutex> lock(s.link_mutex);
    s.link = std::make_shared<Link>(s.io->io(), name(), config_.table);
    s.link->proto.set_log_limit(config_.log_lines_per_s, config_.log_burst);
  }
  s.stopped = false;
  Link& link = *s.link;
  const auto handshake = milliseconds(config_.handshake_timeout_ms);
  try {
    if (config_.launch) {
      s.launch(config_, name(), handshake);
    } else {
      if (config_.port.empty()) throw std::runtime_error("no port configured");
      s.line = SerialLine::open(config_.port, config_.settings);
    }
    info("endpoint \"{}\": serial line {} ({})", name(), s.line.description(), to_string(s.line.method()));

    const int read_fd = fcntl(s.line.fd(), F_DUPFD_CLOEXEC, 0);
    if (read_fd < 0) throw std::runtime_error(std::string("dup: ") + std::strerror(errno));
    s.io->run_sync([&] {
      std::lock_guard<std::mutex> lock(link.m);
      link.fd = s.line.fd();
      link.line.emplace(s.io->io(), read_fd);
      link.read_line();
      link.drain();  // what arrived before the line was watched (a HELLO already waiting)
    });

    s.handshake(config_, name(), handshake);
    s.io->run_sync([&] {
      std::lock_guard<std::mutex> lock(link.m);
      link.hand_reads_to_loop();
    });
  } catch (...) {
    stop();
    throw;
  }
}

void SerialEndpoint::set_link_faults(const runtime::LinkFaults& faults) {
  Impl& s = *impl_;
  if (!s.link) return;
  Link& link = *s.link;
  std::lock_guard<std::mutex> lock(link.m);
  const bool had_reply = link.proto.reply_ready();
  // what a delay held back crosses now, before this step's traffic
  link.shape_out.begin_step(faults.step, faults.seed, faults.out, [&](std::string_view b) { link.write_bytes(b); });
  link.shape_in.begin_step(faults.step, ~faults.seed, faults.in, [&](std::string_view b) {
    link.proto.on_bytes(reinterpret_cast<const std::uint8_t*>(b.data()), b.size());
  });
  link.flush_outbox();  // the decoder may have answered (a LOG, a NAK)
  if (!had_reply && link.proto.reply_ready()) link.wake();
}

bool SerialEndpoint::publish(const runtime::StepContext& ctx, const runtime::WorldState& projected) {
  Impl& s = *impl_;
  if (!s.link) {
    fault_message_ = "not started";
    return false;
  }
  Link& link = *s.link;
  std::unique_lock<std::mutex> lock(link.m);
  // built only on a fault: the step builds no strings
  auto at = [&] { return "at step " + std::to_string(ctx.step); };
  if (link.proto.failed() || link.child_exited || link.line_closed) {
    link.await_exit_after_hangup(lock);  // a killed program hangs up before its exit is seen
    fault_message_ = fault_reason(link, at());
    return false;
  }
  // what the line holds now came before SENSORS(k): decoded first, an ACTUATE among it that
  // claims step k cannot be its answer (counted premature; docs/protocol.md). One read that
  // finds nothing, most steps
  link.drain();
  const std::uint64_t time_us = projected.time_ns > 0 ? static_cast<std::uint64_t>(projected.time_ns / 1000) : 0;
  link.proto.send_sensors(static_cast<std::uint32_t>(ctx.step), time_us, devices_);
  link.flush_outbox();
  s.last_step = ctx.step;
  s.published = true;
  const auto sent = SteadyClock::now();
  s.next_resend = sent + milliseconds(config_.resend_ms);
  s.busy_until = sent + microseconds(config_.busy_poll_us);
  if (link.proto.failed() || link.line_closed) {
    link.await_exit_after_hangup(lock);
    fault_message_ = fault_reason(link, at());
    return false;
  }
  link.loop_reads = true;  // until gather() returns
  return true;
}

runtime::GatherStatus SerialEndpoint::gather(const runtime::StepContext& ctx, runtime::SteadyClock::time_point deadline,
                                             runtime::Reply& reply) {
  Impl& s = *impl_;
  if (!s.link) {
    fault_message_ = "not started";
    return runtime::GatherStatus::fault;
  }
  Link& link = *s.link;
  std::unique_lock<std::mutex> lock(link.m);
  struct ReadsBack {  // between steps the I/O thread's idle reads take the line again (m held)
    Link& link;
    ~ReadsBack() { link.loop_reads = false; }
  } reads_back{link};
  bool polling = false;  // the last pass read the line without sleeping (busy_poll_us)
  for (;;) {
    if (link.proto.reply_ready()) {
      reply.clear();
      reply.step = ctx.step;
      for (const auto& c : link.proto.commands()) reply.commands.push_back(c);
      for (auto& l : link.proto.logs()) reply.logs.push_back(std::move(l));
      link.proto.logs().clear();
      link.proto.mark_taken();
      sync_counters(link.proto.counters(), link_counts_);
      if (polling) ++s.replies_polled;
      return runtime::GatherStatus::ready;
    }
    link.await_exit_after_hangup(lock);
    if (link.proto.failed() || link.child_exited || link.line_closed) {
      fault_message_ = fault_reason(link, "at step " + std::to_string(ctx.step));
      sync_counters(link.proto.counters(), link_counts_);
      return runtime::GatherStatus::fault;
    }
    const auto now = SteadyClock::now();
    if (now >= deadline) {
      sync_counters(link.proto.counters(), link_counts_);
      return runtime::GatherStatus::timeout;
    }
    if (config_.resend_ms > 0 && now >= s.next_resend) {
      // a SENSORS or ACTUATE lost on the line: ask again (the firmware answers a repeated
      // SENSORS(k) with ACTUATE(k) without stepping twice)
      if (link.backlog.empty()) {
        link.proto.resend();
        link.flush_outbox();
      }
      s.next_resend = now + milliseconds(config_.resend_ms);
      continue;
    }
    // wait on the line itself (and on the I/O thread's wake-ups) until the next thing to do
    link.drain();
    if (link.proto.reply_ready() || link.line_closed) continue;
    if (now < s.busy_until) {
      // busy_poll_us: read the line again at once instead of sleeping on it (a reply is
      // taken without a wake-up's latency); the lock is let go between reads
      if (!link.backlog.empty()) link.drain_backlog();
      polling = true;
      lock.unlock();
      sched_yield();
      lock.lock();
      continue;
    }
    polling = false;
    const auto wake_at = config_.resend_ms > 0 ? std::min(deadline, s.next_resend) : deadline;
    const auto wait_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wake_at - now).count();
    const timespec timeout{static_cast<time_t>(wait_ns / 1'000'000'000), static_cast<long>(wait_ns % 1'000'000'000)};
    // bytes the line did not take yet (a slow line) go out as it takes them
    const short line_events = static_cast<short>(POLLIN | (link.backlog.empty() ? 0 : POLLOUT));
    pollfd fds[2] = {{link.fd, line_events, 0}, {link.wake_fd, POLLIN, 0}};
    link.gather_waiting = true;
    lock.unlock();
    ppoll(fds, 2, &timeout, nullptr);
    lock.lock();
    link.gather_waiting = false;
    if (!link.backlog.empty()) link.drain_backlog();
    if (fds[1].revents & POLLIN) {
      std::uint64_t count = 0;
      ssize_t ignored = ::read(link.wake_fd, &count, sizeof count);
      (void)ignored;
    }
  }
}

void SerialEndpoint::safe_reply(runtime::Reply& reply) const {
  reply.clear();
  reply.commands.assign(config_.safe.begin(), config_.safe.end());
}

void SerialEndpoint::stop() {
  Impl& s = *impl_;
  if (s.stopped || !s.link) return;
  s.stopped = true;
  Link& link = *s.link;
  bool told = false;
  {
    std::lock_guard<std::mutex> lock(link.m);
    if (link.proto.phase() == SerialProtocol::Phase::running) {
      link.proto.send_stop(static_cast<std::uint32_t>(s.last_step));
      link.flush_outbox();
    }
    told = link.proto.told_to_end() && !link.line_closed;
  }
  if (s.child) {
    // a program told STOP (or ERROR) may end by itself; anything else is terminated now
    const auto wait = milliseconds(told && config_.launch ? config_.launch->exit_wait_ms : 0);
    std::optional<int> st = s.child->wait_for(wait);
    if (!st) st = s.child->terminate(milliseconds(config_.launch ? config_.launch->kill_after_ms : 2000));
    s.exit_description = ChildProcess::describe_status(*st);
  }
  s.io->run_sync([&] { link.close_all(); });
  {
    std::lock_guard<std::mutex> lock(link.m);
    for (auto* lines : {&link.proto.other_logs(), &link.proto.logs()}) {
      for (const auto& l : *lines) link.log_firmware_line(l);
      lines->clear();
    }
    link.fd = -1;
    link.child = nullptr;
  }
  if (s.child) {
    info("endpoint \"{}\": firmware process {}", name(), s.exit_description);
  }
  {
    std::lock_guard<std::mutex> lock(link.m);
    const std::uint64_t suppressed = link.proto.counters().logs_suppressed;
    if (suppressed > 0)
      spdlog::warn(
          "endpoint \"{}\": {} of {} firmware LOG lines were suppressed by the rate limit ({} lines/s, burst {}; "
          "keys log_lines_per_s, log_burst)",
          name(), suppressed, link.proto.counters().logs, config_.log_lines_per_s, config_.log_burst);
  }
  s.line.close();
  if (s.pty_slave >= 0) ::close(s.pty_slave);
  s.pty_slave = -1;
}

SerialCounters SerialEndpoint::serial_counters() const {
  const auto link = impl_->current_link();
  if (!link) return {};
  std::lock_guard<std::mutex> lock(link->m);
  return link->proto.counters();
}

std::string SerialEndpoint::line_description() const { return impl_->line.description(); }

std::optional<int> SerialEndpoint::child_pid() const {
  if (impl_->child && !impl_->child->status()) return impl_->child->pid();
  return std::nullopt;
}

std::string SerialEndpoint::firmware_name() const {
  const auto link = impl_->current_link();
  if (!link) return {};
  std::lock_guard<std::mutex> lock(link->m);
  return link->proto.have_hello() ? std::string(link->proto.hello().name) : std::string();
}

void SerialEndpoint::summarize(nlohmann::json& out) const {
  const Impl& s = *impl_;
  nlohmann::json j;
  j["line"] = s.line.description();
  j["opened_with"] = to_string(s.line.method());
  if (config_.launch) {
    j["program"] = s.child ? s.child->command_line() : std::string();
    if (!s.exit_description.empty()) j["program_exit"] = s.exit_description;
  }
  j["devices_offered"] = config_.table.size();
  if (s.link) {
    std::lock_guard<std::mutex> lock(s.link->m);
    const SerialProtocol& p = s.link->proto;
    if (p.have_hello()) {
      j["firmware"] = p.hello().name;
      char build[16];
      std::snprintf(build, sizeof build, "0x%08x", p.hello().build_id);
      j["build_id"] = build;
      j["max_payload"] = p.hello().max_payload;
    }
    std::vector<std::string> opened;
    for (std::uint16_t idx : p.slot_devices())
      for (const auto& d : config_.table)
        if (d.index == idx) opened.push_back(d.name);
    j["devices_opened"] = opened;
    if (config_.busy_poll_us > 0) j["busy_poll"] = {{"us", config_.busy_poll_us}, {"replies_polled", s.replies_polled}};
    if (auto lf = runtime::link_fault_summary(s.link->shape_out, s.link->shape_in); !lf.is_null())
      j["link_faults"] = std::move(lf);
    const SerialCounters& c = p.counters();
    j["counters"] = {{"bytes_rx", c.bytes_rx},
                     {"bytes_tx", c.bytes_tx},
                     {"frames_rx", c.frames_rx},
                     {"frames_tx", c.frames_tx},
                     {"garbage_bytes", c.garbage_bytes},
                     {"crc_errors", c.crc_errors},
                     {"cobs_errors", c.cobs_errors},
                     {"runts", c.runts},
                     {"length_errors", c.length_errors},
                     {"oversize", c.oversize},
                     {"bad_version", c.bad_version},
                     {"unknown_type", c.unknown_type},
                     {"malformed", c.malformed},
                     {"stale", c.stale},
                     {"premature", c.premature},
                     {"duplicate", c.duplicate},
                     {"resent", c.resent},
                     {"hello_repeats", c.hello_repeats},
                     {"ready_repeats", c.ready_repeats},
                     {"unexpected", c.unexpected},
                     {"logs", c.logs},
                     {"logs_dropped", c.logs_dropped},
                     {"logs_suppressed", c.logs_suppressed},
                     {"write_backlogs", s.link->backlog_events}};
    if (p.failed()) j["protocol_failure"] = p.failure();
  }
  out["serial"] = std::move(j);
}

}  // namespace tether::adapters
