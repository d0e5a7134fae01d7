// SPDX-License-Identifier: Apache-2.0
#include "tether/serial/serial_port.hpp"

#include <fcntl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include <libserialport.h>

namespace tether::adapters {

namespace {

std::string errno_text(int err) { return std::strerror(err); }

// libserialport's last error as text (it only has one after SP_ERR_FAIL)
std::string sp_error_text(sp_return rc) {
  switch (rc) {
    case SP_ERR_ARG: return "invalid argument";
    case SP_ERR_MEM: return "out of memory";
    case SP_ERR_SUPP: return "not supported by this device";
    case SP_ERR_FAIL: {
      char* msg = sp_last_error_message();
      std::string text = msg ? msg : "unknown error";
      sp_free_error_message(msg);
      while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
      return text;
    }
    default: return "error " + std::to_string(static_cast<int>(rc));
  }
}

speed_t baud_constant(int baud) {
  switch (baud) {
    case 1200: return B1200;
    case 2400: return B2400;
    case 4800: return B4800;
    case 9600: return B9600;
    case 19200: return B19200;
    case 38400: return B38400;
    case 57600: return B57600;
    case 115200: return B115200;
    case 230400: return B230400;
    case 460800: return B460800;
    case 500000: return B500000;
    case 576000: return B576000;
    case 921600: return B921600;
    case 1000000: return B1000000;
    case 1500000: return B1500000;
    case 2000000: return B2000000;
    case 3000000: return B3000000;
    case 4000000: return B4000000;
    default: return B0;
  }
}

bool set_flags(int fd, int add) {
  const int flags = fcntl(fd, F_GETFL);
  return flags >= 0 && fcntl(fd, F_SETFL, flags | add) == 0;
}

// termios settings on top of raw mode (a pty ignores speed and framing, a real tty does not)
void apply_termios(int fd, const SerialSettings& s, const std::string& path) {
  termios t{};
  if (tcgetattr(fd, &t) != 0) throw std::runtime_error(path + ": not a terminal (" + errno_text(errno) + ")");
  cfmakeraw(&t);
  t.c_cflag |= CLOCAL | CREAD;
  t.c_cflag &= ~static_cast<tcflag_t>(CSIZE | PARENB | PARODD | CSTOPB | CRTSCTS | CMSPAR);
  switch (s.data_bits) {
    case 5: t.c_cflag |= CS5; break;
    case 6: t.c_cflag |= CS6; break;
    case 7: t.c_cflag |= CS7; break;
    default: t.c_cflag |= CS8; break;
  }
  if (s.parity != Parity::none) t.c_cflag |= PARENB;
  if (s.parity == Parity::odd || s.parity == Parity::mark) t.c_cflag |= PARODD;
  if (s.parity == Parity::mark || s.parity == Parity::space) t.c_cflag |= CMSPAR;
  if (s.stop_bits == 2) t.c_cflag |= CSTOPB;
  if (s.flow_control == FlowControl::rtscts) t.c_cflag |= CRTSCTS;
  if (s.flow_control == FlowControl::xonxoff) t.c_iflag |= IXON | IXOFF;
  t.c_cc[VMIN] = 1;
  t.c_cc[VTIME] = 0;
  const speed_t speed = baud_constant(s.baud);
  if (speed == B0)
    throw std::runtime_error(path + ": baud rate " + std::to_string(s.baud) +
                             " is not a standard rate termios can set");
  cfsetispeed(&t, speed);
  cfsetospeed(&t, speed);
  if (tcsetattr(fd, TCSANOW, &t) != 0)
    throw std::runtime_error(path + ": cannot configure the terminal (" + errno_text(errno) + ")");
}

}  // namespace

const char* to_string(OpenMethod method) {
  switch (method) {
    case OpenMethod::libserialport: return "libserialport";
    case OpenMethod::termios: return "termios";
    case OpenMethod::pty_master: return "pty master";
  }
  return "?";
}

const char* to_string(Parity parity) {
  switch (parity) {
    case Parity::none: return "none";
    case Parity::odd: return "odd";
    case Parity::even: return "even";
    case Parity::mark: return "mark";
    case Parity::space: return "space";
  }
  return "?";
}

const char* to_string(FlowControl flow) {
  switch (flow) {
    case FlowControl::none: return "none";
    case FlowControl::xonxoff: return "xonxoff";
    case FlowControl::rtscts: return "rtscts";
    case FlowControl::dtrdsr: return "dtrdsr";
  }
  return "?";
}

OpenMethod choose_open_method(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::canonical(path, ec);
  if (ec) p = path;  // a missing path fails later, with the open's own message
  const std::string resolved = p.string();
  if (resolved.rfind("/dev/pts/", 0) == 0) return OpenMethod::termios;
  const std::filesystem::path sys = std::filesystem::path("/sys/class/tty") / p.filename();
  if (!std::filesystem::exists(sys, ec)) return OpenMethod::termios;
  return OpenMethod::libserialport;
}

bool make_raw(int fd) {
  termios t{};
  if (tcgetattr(fd, &t) != 0) return false;
  cfmakeraw(&t);
  t.c_cflag |= CLOCAL | CREAD;
  t.c_cc[VMIN] = 1;
  t.c_cc[VTIME] = 0;
  return tcsetattr(fd, TCSANOW, &t) == 0;
}

SerialLine SerialLine::open(const std::string& path, const SerialSettings& settings) {
  SerialLine line;
  line.description_ = path;
  line.method_ = choose_open_method(path);
  if (line.method_ == OpenMethod::termios) {
    line.fd_ = ::open(path.c_str(), O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (line.fd_ < 0) throw std::runtime_error("cannot open " + path + " (termios): " + errno_text(errno));
    apply_termios(line.fd_, settings, path);
    tcflush(line.fd_, TCIFLUSH);
    return line;
  }

  // a real device: libserialport opens and configures it, then lends us its descriptor
  sp_port* port = nullptr;
  sp_return rc = sp_get_port_by_name(path.c_str(), &port);
  if (rc != SP_OK)
    throw std::runtime_error("cannot find serial port " + path + " (libserialport): " + sp_error_text(rc));
  line.port_ = port;
  rc = sp_open(port, SP_MODE_READ_WRITE);
  if (rc != SP_OK)
    throw std::runtime_error("cannot open serial port " + path + " (libserialport): " + sp_error_text(rc));
  const sp_parity parity = settings.parity == Parity::odd     ? SP_PARITY_ODD
                           : settings.parity == Parity::even  ? SP_PARITY_EVEN
                           : settings.parity == Parity::mark  ? SP_PARITY_MARK
                           : settings.parity == Parity::space ? SP_PARITY_SPACE
                                                              : SP_PARITY_NONE;
  const sp_flowcontrol flow = settings.flow_control == FlowControl::xonxoff  ? SP_FLOWCONTROL_XONXOFF
                              : settings.flow_control == FlowControl::rtscts ? SP_FLOWCONTROL_RTSCTS
                              : settings.flow_control == FlowControl::dtrdsr ? SP_FLOWCONTROL_DTRDSR
                                                                             : SP_FLOWCONTROL_NONE;
  struct Step {
    const char* what;
    sp_return rc;
  };
  const Step steps[] = {{"baud rate", sp_set_baudrate(port, settings.baud)},
                        {"data bits", sp_set_bits(port, settings.data_bits)},
                        {"parity", sp_set_parity(port, parity)},
                        {"stop bits", sp_set_stopbits(port, settings.stop_bits)},
                        {"flow control", sp_set_flowcontrol(port, flow)}};
  for (const Step& s : steps)
    if (s.rc != SP_OK)
      throw std::runtime_error("serial port " + path + ": cannot set the " + s.what +
                               " (libserialport): " + sp_error_text(s.rc));
  int fd = -1;
  rc = sp_get_port_handle(port, &fd);
  if (rc != SP_OK || fd < 0)
    throw std::runtime_error("serial port " + path + ": no file descriptor (libserialport): " + sp_error_text(rc));
  // the descriptor stays libserialport's; ours is a duplicate, non-blocking, close-on-exec
  line.fd_ = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (line.fd_ < 0) throw std::runtime_error("serial port " + path + ": dup: " + errno_text(errno));
  set_flags(line.fd_, O_NONBLOCK);
  sp_flush(port, SP_BUF_INPUT);
  return line;
}

SerialLine SerialLine::adopt(int fd, std::string description) {
  SerialLine line;
  line.fd_ = fd;
  line.method_ = OpenMethod::pty_master;
  line.description_ = std::move(description);
  set_flags(fd, O_NONBLOCK);
  return line;
}

SerialLine::SerialLine(SerialLine&& other) noexcept
    : fd_(other.fd_), port_(other.port_), method_(other.method_), description_(std::move(other.description_)) {
  other.fd_ = -1;
  other.port_ = nullptr;
}

SerialLine& SerialLine::operator=(SerialLine&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = other.fd_;
    port_ = other.port_;
    method_ = other.method_;
    description_ = std::move(other.description_);
    other.fd_ = -1;
    other.port_ = nullptr;
  }
  return *this;
}

SerialLine::~SerialLine() { close(); }

void SerialLine::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (port_) {
    sp_close(port_);
    sp_free_port(port_);
    port_ = nullptr;
  }
}

PtyPair open_pty_pair() {
  PtyPair pair;
  pair.master = ::open("/dev/ptmx", O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (pair.master < 0) throw std::runtime_error("cannot create a pseudo-terminal (/dev/ptmx): " + errno_text(errno));
  char name[128];
  if (grantpt(pair.master) != 0 || unlockpt(pair.master) != 0 || ptsname_r(pair.master, name, sizeof name) != 0) {
    const int err = errno;
    ::close(pair.master);
    throw std::runtime_error("cannot set up a pseudo-terminal: " + errno_text(err));
  }
  pair.slave_path = name;
  pair.slave = ::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (pair.slave < 0) {
    const int err = errno;
    ::close(pair.master);
    throw std::runtime_error("cannot open " + pair.slave_path + ": " + errno_text(err));
  }
  // raw on both ends before the firmware runs, so early bytes are never echoed or mapped
  make_raw(pair.slave);
  make_raw(pair.master);
  return pair;
}

std::string list_ports_text() {
  sp_port** ports = nullptr;
  const sp_return rc = sp_list_ports(&ports);
  if (rc != SP_OK) return "cannot list serial ports (libserialport): " + sp_error_text(rc) + "\n";
  std::ostringstream out;
  int count = 0;
  for (sp_port** p = ports; *p != nullptr; ++p) {
    sp_port* port = *p;
    ++count;
    const char* name = sp_get_port_name(port);
    const char* description = sp_get_port_description(port);
    out << (name ? name : "?");
    const sp_transport transport = sp_get_port_transport(port);
    if (transport == SP_TRANSPORT_USB) {
      int vid = 0, pid = 0;
      out << "  usb";
      if (sp_get_port_usb_vid_pid(port, &vid, &pid) == SP_OK) {
        char ids[16];
        std::snprintf(ids, sizeof ids, " %04x:%04x", vid & 0xFFFF, pid & 0xFFFF);
        out << ids;
      }
      const char* maker = sp_get_port_usb_manufacturer(port);
      const char* product = sp_get_port_usb_product(port);
      const char* serial = sp_get_port_usb_serial(port);
      if (maker) out << "  " << maker;
      if (product) out << "  " << product;
      if (serial) out << "  serial " << serial;
    } else if (transport == SP_TRANSPORT_BLUETOOTH) {
      const char* address = sp_get_port_bluetooth_address(port);
      out << "  bluetooth" << (address ? std::string(" ") + address : std::string());
    } else {
      out << "  native";
    }
    if (description && *description) out << "  (" << description << ")";
    out << '\n';
  }
  sp_free_port_list(ports);
  if (count == 0) out << "no serial ports found\n";
  out << "(pseudo-terminals such as /dev/pts/N are not listed; a scenario may still name one: "
         "it is opened with termios, see docs/serial.md)\n";
  return out.str();
}

}  // namespace tether::adapters
