// SPDX-License-Identifier: Apache-2.0
// Opening a serial line: one interface, two ways in. Real serial devices (a USB-serial
// adapter, a board's UART) are opened with libserialport, which knows baud rates, parity,
// flow control and USB metadata. Pseudo-terminals (host-built firmware, QEMU's `-serial
// pty`, simavr's bridge) are opened with termios in raw mode, because libserialport 0.1.1
// cannot open them (it needs /sys/class/tty/<name> and TIOCMGET). Both end in a file
// descriptor that the serial endpoint hands to Boost.Asio. docs/serial.md says which path
// a given port takes.
#pragma once

#include <cstdint>
#include <string>

struct sp_port;

namespace tether::adapters {

enum class Parity : std::uint8_t { none, odd, even, mark, space };
enum class FlowControl : std::uint8_t { none, xonxoff, rtscts, dtrdsr };

/// Line settings from the scenario (`baud`, `data_bits`, `parity`, `stop_bits`,
/// `flow_control`). A pseudo-terminal accepts and ignores them.
struct SerialSettings {
  int baud = 115200;
  int data_bits = 8;
  Parity parity = Parity::none;
  int stop_bits = 1;
  FlowControl flow_control = FlowControl::none;
};

/// How a line was opened.
enum class OpenMethod : std::uint8_t {
  libserialport,  // a real serial device with a /sys/class/tty entry
  termios,        // a pseudo-terminal (/dev/pts/N) or a tty that sysfs does not list
  pty_master,     // the runtime's end of a pseudo-terminal pair it created itself
};

/// "libserialport", "termios", "pty master".
const char* to_string(OpenMethod method);
const char* to_string(Parity parity);
const char* to_string(FlowControl flow);

/// The rule docs/serial.md states: termios for /dev/pts/* (after following symlinks) and for
/// any path whose /sys/class/tty/<name> entry is missing; libserialport otherwise.
OpenMethod choose_open_method(const std::string& path);

/// Sets raw 8-bit mode on a tty: no echo, no line editing, no signals, no CR/LF mapping, no
/// software flow control, VMIN 1 / VTIME 0. Returns false (errno set) if fd is not a tty.
bool make_raw(int fd);

/// An open serial line: owns the descriptor (and libserialport's port, if it opened it).
/// The descriptor is non-blocking and close-on-exec.
class SerialLine {
 public:
  /// Opens `path` by the rule above and applies `settings`. Throws std::runtime_error
  /// naming the path, the method and the operating system's reason.
  static SerialLine open(const std::string& path, const SerialSettings& settings);
  /// Takes ownership of an already open descriptor (the master of a pty pair).
  static SerialLine adopt(int fd, std::string description);

  SerialLine() = default;
  SerialLine(SerialLine&& other) noexcept;
  SerialLine& operator=(SerialLine&& other) noexcept;
  SerialLine(const SerialLine&) = delete;
  SerialLine& operator=(const SerialLine&) = delete;
  ~SerialLine();

  int fd() const { return fd_; }
  bool is_open() const { return fd_ >= 0; }
  OpenMethod method() const { return method_; }
  /// The path opened, or what the descriptor is ("pty master of /dev/pts/7").
  const std::string& description() const { return description_; }
  /// Closes the line (idempotent).
  void close();

 private:
  int fd_ = -1;
  sp_port* port_ = nullptr;  // set when libserialport opened the line
  OpenMethod method_ = OpenMethod::termios;
  std::string description_;
};

/// A pseudo-terminal pair made by the runtime: it keeps the master (its end of the line)
/// and one descriptor of the slave (so the master never reads EIO while the firmware has
/// not opened the slave yet, or reopens it); the firmware opens `slave_path`.
struct PtyPair {
  int master = -1;
  int slave = -1;
  std::string slave_path;
};

/// Opens a new pty pair, both ends raw, non-blocking master, close-on-exec descriptors.
/// Throws std::runtime_error on failure.
PtyPair open_pty_pair();

/// The serial ports libserialport finds on this machine (name, description, transport,
/// USB vendor/product/serial), as text for `tether ports`; says so when there are none.
/// Pseudo-terminals are never listed.
std::string list_ports_text();

}  // namespace tether::adapters
