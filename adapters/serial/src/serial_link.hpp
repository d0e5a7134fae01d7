// SPDX-License-Identifier: Apache-2.0
// The serial endpoint's line and program, as the I/O thread sees them: one io_context and
// thread for every serial endpoint of the process (IoThread), and a Link per endpoint —
// writing, reading, the backlog, the launched program's output and exit, the link faults.
// The endpoint (serial_endpoint.cpp) sequences the protocol on top of it; this header is
// private to the serial room.
#pragma once

// Boost 1.74 + GCC 12 + C++20: <utility> must come before any Asio header (Asio uses
// std::exchange without including it; without this the build fails in C++20 mode)
#include <utility>

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "tether/loop/fault_injector.hpp"
#include "tether/process/child_process.hpp"
#include "tether/serial/serial_endpoint.hpp"

namespace tether::adapters::serial_detail {

namespace asio = boost::asio;
using runtime::SteadyClock;
using std::chrono::microseconds;
using std::chrono::milliseconds;

inline std::atomic<bool> g_quiet{false};

// the endpoint's own progress lines and the program's output; warnings always show
template <typename... Args>
void info(spdlog::format_string_t<Args...> fmt, Args&&... args) {
  if (!g_quiet.load(std::memory_order_relaxed)) spdlog::info(fmt, std::forward<Args>(args)...);
}

// ---- the I/O thread ------------------------------------------------------------------------


// one io_context and thread for every serial endpoint of the process
class IoThread {
 public:
  static std::shared_ptr<IoThread> get() {
    static std::mutex mutex;
    static std::weak_ptr<IoThread> instance;
    std::lock_guard<std::mutex> lock(mutex);
    auto p = instance.lock();
    if (!p) {
      p = std::shared_ptr<IoThread>(new IoThread());
      instance = p;
    }
    return p;
  }
  ~IoThread() {
    guard_.reset();
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }
  asio::io_context& io() { return io_; }

  // runs `f` on the I/O thread and waits for it
  template <typename F>
  void run_sync(F&& f) {
    std::promise<void> done;
    asio::post(io_, [&]() {
      f();
      done.set_value();
    });
    done.get_future().wait();
  }

 private:
  IoThread() : guard_(asio::make_work_guard(io_)) {
    thread_ = std::thread([this] { io_.run(); });
  }
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  std::thread thread_;
};

inline constexpr std::size_t max_backlog_bytes = 256 * 1024;
// while the session runs, how often the I/O thread reads what came between steps
inline constexpr milliseconds idle_read_period{10};
inline constexpr std::size_t output_tail_lines = 20;
inline constexpr std::size_t max_output_line = 2000;

inline std::string tail_text(const std::deque<std::string>& tail) {
  std::string out;
  for (const auto& l : tail) out += "\n  | " + l;
  return out;
}

// the first /dev/pts/N in a line of the program's output (QEMU: "char device redirected to
// /dev/pts/3 (label serial0)"; simavr_bridge: "uart0 on /dev/pts/4")
inline std::string find_pty_path(const std::string& line) {
  const std::size_t at = line.find("/dev/pts/");
  if (at == std::string::npos) return {};
  std::size_t end = at + 9;
  while (end < line.size() && std::isdigit(static_cast<unsigned char>(line[end]))) ++end;
  return end > at + 9 ? line.substr(at, end - at) : std::string();
}

// everything the I/O thread touches; handlers hold it by shared_ptr, state is under `m`
struct Link : std::enable_shared_from_this<Link> {
  Link(asio::io_context& io_context, std::string endpoint_name, std::vector<SerialDevice> table)
      : io(io_context), name(std::move(endpoint_name)), proto(name, std::move(table)) {
    backlog.reserve(4096);
    wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd < 0) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
  }
  ~Link() {
    if (wake_fd >= 0) ::close(wake_fd);
  }

  // something a waiting gather() must look at happened (m held)
  void wake() {
    cv.notify_all();
    if (gather_waiting) {
      const std::uint64_t one = 1;
      ssize_t ignored = ::write(wake_fd, &one, sizeof one);
      (void)ignored;
    }
  }

  asio::io_context& io;
  std::string name;
  std::mutex m;
  std::condition_variable cv;
  SerialProtocol proto;
  bool closed = false;  // close_all ran: handlers do nothing more

  // the line
  int fd = -1;                                         // the SerialLine's descriptor: writes (from any thread, under m)
  std::optional<asio::posix::stream_descriptor> line;  // a duplicate the I/O thread watches
  std::array<std::uint8_t, 1024> rx{};
  std::vector<std::uint8_t> backlog;  // bytes the line did not take yet
  bool write_armed = false;
  int wake_fd = -1;             // eventfd: the I/O thread wakes a waiting gather()
  bool gather_waiting = false;  // gather() is in ppoll() on the line and wake_fd
  // Once the session runs, the loop thread reads the line itself from publish() to the end
  // of gather(), and the I/O thread no longer watches it: a reply wakes one thread, not
  // two (docs/serial.md, "Who reads the line"). Between steps a timer reads what came.
  std::optional<asio::steady_timer> idle_read;
  bool loop_reads = false;  // publish() .. the end of gather(): the loop thread reads
  bool line_closed = false;
  std::string line_error;
  std::string hangup_hint;  // what a hang-up means on this line ("the program closed its end of /dev/pts/7")
  std::uint64_t backlog_events = 0;

  // the program
  ChildProcess* child = nullptr;
  std::optional<asio::posix::stream_descriptor> exit_watch, out_pipe, err_pipe;
  std::optional<asio::steady_timer> exit_poll;
  std::array<char, 1024> out_buf{}, err_buf{};
  std::string out_partial, err_partial;
  std::deque<std::string> tail;
  bool child_exited = false;
  int child_status = 0;
  bool want_port = false;
  std::string announced_port;

  // the step's link faults (docs/faults.md): what goes out and what comes in crosses these
  runtime::LinkShaper shape_out, shape_in;

  // ---- writing (m held) ----
  void flush_outbox() {
    auto& out = proto.outbox();
    if (out.empty()) return;
    const std::string_view bytes(reinterpret_cast<const char*>(out.data()), out.size());
    shape_out.pass(bytes, [this](std::string_view b) { write_bytes(b); });
    out.clear();
  }

  void write_bytes(std::string_view out) {
    if (out.empty() || line_closed || fd < 0) return;
    std::size_t done = 0;
    if (backlog.empty()) {
      const ssize_t n = ::write(fd, out.data(), out.size());
      if (n < 0 && errno != EAGAIN && errno != EINTR) {
        set_line_closed(std::string("write: ") + std::strerror(errno));
        return;
      }
      done = n > 0 ? static_cast<std::size_t>(n) : 0;
      proto.counters().bytes_tx += done;
    }
    if (done < out.size()) {
      backlog.insert(backlog.end(), reinterpret_cast<const std::uint8_t*>(out.data()) + done,
                     reinterpret_cast<const std::uint8_t*>(out.data()) + out.size());
      ++backlog_events;
      if (backlog.size() > max_backlog_bytes)
        set_line_closed("the other side does not read: " + std::to_string(backlog.size()) + " bytes queued");
      else if (!write_armed && line) {
        write_armed = true;
        asio::post(io, [self = shared_from_this()] { self->arm_write(); });
      }
    }
  }

  // bytes from the line into the decoder, through the link faults (m held)
  void feed(std::string_view bytes) {
    shape_in.pass(bytes, [this](std::string_view b) {
      proto.on_bytes(reinterpret_cast<const std::uint8_t*>(b.data()), b.size());
    });
  }

  std::string hung_up(const std::string& what) const {
    return hangup_hint.empty() ? what : "hang-up: " + hangup_hint + " (" + what + ")";
  }

  // A launched program that exits closes its end of the line before its exit is seen: wait a
  // little for the exit, whose status says more than the hang-up. A program that closed its
  // end but lives on is reported as the hang-up after this wait (m held through `lock`).
  void await_exit_after_hangup(std::unique_lock<std::mutex>& lock) {
    if (line_closed && child != nullptr && !child_exited)
      cv.wait_for(lock, milliseconds(500), [&] { return child_exited; });
  }

  void set_line_closed(std::string why) {
    if (!line_closed) {
      line_closed = true;
      line_error = std::move(why);
    }
    wake();
  }

  // ---- I/O thread ----
  void arm_write() {
    std::lock_guard<std::mutex> lock(m);
    if (closed || !line) return;
    line->async_wait(asio::posix::stream_descriptor::wait_write,
                     [self = shared_from_this()](boost::system::error_code ec) {
                       std::lock_guard<std::mutex> lock(self->m);
                       self->write_armed = false;
                       if (ec || self->closed) return;
                       self->drain_backlog();
                     });
  }

  void drain_backlog() {  // m held
    if (line_closed || backlog.empty()) return;
    const ssize_t n = ::write(fd, backlog.data(), backlog.size());
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      set_line_closed(std::string("write: ") + std::strerror(errno));
      return;
    }
    if (n > 0) {
      backlog.erase(backlog.begin(), backlog.begin() + n);
      proto.counters().bytes_tx += static_cast<std::uint64_t>(n);
    }
    if (!backlog.empty() && !write_armed && line) {  // without `line`: gather() and the idle reads
      write_armed = true;
      asio::post(io, [self = shared_from_this()] { self->arm_write(); });
    }
  }

  // Reads are done under `m` by whichever thread gets there first: the I/O thread when the
  // line becomes readable, or gather() itself, which waits on the line directly so a reply
  // costs one wake-up, not two. Either way bytes reach the decoder in order.
  void read_line() {
    line->async_wait(asio::posix::stream_descriptor::wait_read,
                     [self = shared_from_this()](boost::system::error_code ec) {
                       std::lock_guard<std::mutex> lock(self->m);
                       if (self->closed || !self->line) return;
                       if (ec) {
                         if (ec != asio::error::operation_aborted) self->set_line_closed("wait: " + ec.message());
                         return;
                       }
                       // re-arm before draining: bytes that arrive after the drain raise a new edge
                       if (!self->line_closed) self->read_line();
                       self->drain();
                     });
  }

  // the session runs: the I/O thread stops watching the line (its descriptor leaves the
  // I/O thread's epoll set) and reads it only between steps (I/O thread, m held)
  void hand_reads_to_loop() {
    if (closed || !line) return;
    boost::system::error_code ignored;
    line->cancel(ignored);
    ::close(line->release());
    line.reset();
    idle_read.emplace(io);
    arm_idle_read();
  }

  void arm_idle_read() {
    idle_read->expires_after(idle_read_period);
    idle_read->async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (ec) return;
      std::lock_guard<std::mutex> lock(self->m);
      if (self->closed || !self->idle_read) return;
      if (!self->loop_reads) {
        self->drain();
        self->drain_backlog();
      }
      if (!self->line_closed) self->arm_idle_read();
    });
  }

  // reads everything the line holds and decodes it (m held)
  void drain() {
    if (line_closed || fd < 0) return;
    const bool had_hello = proto.have_hello();
    const bool had_reply = proto.reply_ready();
    const auto phase = proto.phase();
    for (;;) {
      const ssize_t n = ::read(fd, rx.data(), rx.size());
      if (n > 0) {
        feed(std::string_view(reinterpret_cast<const char*>(rx.data()), static_cast<std::size_t>(n)));
        continue;
      }
      if (n == 0) {
        set_line_closed(hung_up("end of file"));
      } else if (errno == EINTR) {
        continue;
      } else if (errno == EIO) {
        // a pty master whose slave nobody holds open any more, a tty whose device went away
        set_line_closed(hung_up(std::string("read: ") + std::strerror(errno)));
      } else if (errno != EAGAIN) {
        set_line_closed(std::string("read: ") + std::strerror(errno));
      }
      break;
    }
    flush_outbox();
    if (!proto.other_logs().empty()) {
      // before the run (the handshake) nobody collects LOG lines with a reply: log them now
      for (const auto& l : proto.other_logs()) log_firmware_line(l);
      proto.other_logs().clear();
    }
    if (proto.have_hello() != had_hello || proto.reply_ready() != had_reply || proto.phase() != phase) wake();
  }

  void log_firmware_line(const runtime::LogLine& l) const {
    if (l.level >= 2)
      spdlog::error("[{}] {}", name, l.text);
    else if (l.level == 1)
      spdlog::warn("[{}] {}", name, l.text);
    else
      info("[{}] {}", name, l.text);
  }

  void watch_child() {
    if (exit_watch) {
      exit_watch->async_wait(asio::posix::stream_descriptor::wait_read,
                             [self = shared_from_this()](boost::system::error_code ec) {
                               if (!ec) self->check_child();
                             });
    } else {
      exit_poll->expires_after(milliseconds(20));
      exit_poll->async_wait([self = shared_from_this()](boost::system::error_code ec) {
        if (!ec) self->check_child();
      });
    }
  }

  void check_child() {
    std::lock_guard<std::mutex> lock(m);
    if (closed || child == nullptr) return;
    if (auto st = child->try_wait()) {
      child_exited = true;
      child_status = *st;
      wake();
      return;
    }
    watch_child();
  }

  void read_pipe(bool is_err) {
    auto& pipe = is_err ? err_pipe : out_pipe;
    auto& buf = is_err ? err_buf : out_buf;
    pipe->async_read_some(asio::buffer(buf),
                          [self = shared_from_this(), is_err](boost::system::error_code ec, std::size_t n) {
                            std::lock_guard<std::mutex> lock(self->m);
                            if (self->closed) return;
                            if (ec) {
                              self->end_output(is_err);
                              return;
                            }
                            self->take_output(is_err, (is_err ? self->err_buf : self->out_buf).data(), n);
                            self->read_pipe(is_err);
                          });
  }

  // splits the program's output into lines for the log (m held)
  void take_output(bool is_err, const char* data, std::size_t n) {
    std::string& partial = is_err ? err_partial : out_partial;
    for (std::size_t i = 0; i < n; ++i) {
      const char c = data[i];
      if (c == '\n' || partial.size() >= max_output_line) {
        output_line(is_err, partial);
        partial.clear();
        if (c == '\n') continue;
      }
      if (c != '\r') partial += c;
    }
  }

  void end_output(bool is_err) {
    std::string& partial = is_err ? err_partial : out_partial;
    if (!partial.empty()) output_line(is_err, partial);
    partial.clear();
  }

  void output_line(bool is_err, const std::string& raw) {
    const std::string text = printable(raw.data(), raw.size());
    (void)is_err;  // both streams are the program's output; its own words say how bad
    info("[{}] {}", name, text);
    tail.push_back(text);
    if (tail.size() > output_tail_lines) tail.pop_front();
    if (want_port && announced_port.empty()) {
      announced_port = find_pty_path(raw);
      if (!announced_port.empty()) wake();
    }
  }

  // drains what the pipes still hold, then closes every descriptor (I/O thread)
  void close_all() {
    std::lock_guard<std::mutex> lock(m);
    for (bool is_err : {false, true}) {
      auto& pipe = is_err ? err_pipe : out_pipe;
      if (!pipe) continue;
      char buf[1024];
      for (int i = 0; i < 64; ++i) {
        const ssize_t n = ::read(pipe->native_handle(), buf, sizeof buf);
        if (n <= 0) break;
        take_output(is_err, buf, static_cast<std::size_t>(n));
      }
      end_output(is_err);
    }
    drain();  // what the program wrote last, before its line goes
    closed = true;
    boost::system::error_code ignored;
    if (idle_read) {
      idle_read->cancel();
      idle_read.reset();
    }
    for (auto* d : {&line, &exit_watch, &out_pipe, &err_pipe})
      if (*d) {
        (*d)->close(ignored);
        d->reset();
      }
    if (exit_poll) {
      exit_poll->cancel();
      exit_poll.reset();
    }
    wake();
  }
};

}  // namespace tether::adapters::serial_detail
