// SPDX-License-Identifier: Apache-2.0
// A mosquitto broker for tests and benchmarks: a free loopback port, a generated config
// (optionally with a password file), started and stopped by the caller, restartable on the
// same port. Header-only so bench/ can include it too.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

namespace tether::test {

/// A free TCP port on 127.0.0.1 (bound to port 0 and released).
inline int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error("no free loopback port");
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

/// True if something accepts TCP connections on 127.0.0.1:port.
inline bool port_accepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool ok = fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  if (fd >= 0) ::close(fd);
  return ok;
}

class Mosquitto {
 public:
  struct Options {
    std::string username;  // with a user name: a password file, anonymous access off
    std::string password;
    std::string binary = "/usr/sbin/mosquitto";
    bool broker_nodelay = true;     // set_tcp_nodelay on the broker's sockets (docs/mqtt.md)
    bool tls = false;               // a TLS listener with a fresh self-signed certificate (ca_file())
    std::string extra_config = {};  // lines appended to mosquitto.conf as written (a bridge)
  };

  Mosquitto() : Mosquitto(Options{}) {}
  /// Writes the config into a fresh temporary folder and starts the broker; throws if it
  /// does not accept connections within 5 s.
  explicit Mosquitto(Options options) : options_(std::move(options)) {
    char tmpl[] = "/tmp/tether-mosquitto-XXXXXX";
    if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    // mosquitto started as root drops to its own user before reading the password file
    std::filesystem::permissions(dir_, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                                           std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                                           std::filesystem::perms::others_exec);
    port_ = free_loopback_port();
    if (options_.tls) {
      // the certificate is its own CA; its name is the address clients connect to
      const std::string cmd =
          "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 "
          "-addext subjectAltName=IP:127.0.0.1 -keyout '" +
          dir_ + "/key.pem' -out '" + dir_ + "/cert.pem' >/dev/null 2>&1 && chmod 644 '" + dir_ + "/key.pem'";
      if (std::system(cmd.c_str()) != 0) throw std::runtime_error("openssl could not make a certificate: " + cmd);
    }
    std::ofstream conf(dir_ + "/mosquitto.conf");
    conf << "listener " << port_ << " 127.0.0.1\n"
         << "persistence false\n"
         << "log_dest stderr\n"  // into stdout.log (mosquitto runs as its own user)
         << "set_tcp_nodelay " << (options_.broker_nodelay ? "true" : "false") << "\n"
         << "max_inflight_messages 0\n";
    if (options_.tls) conf << "certfile " << dir_ << "/cert.pem\nkeyfile " << dir_ << "/key.pem\n";
    if (options_.username.empty()) {
      conf << "allow_anonymous true\n";
    } else {
      conf << "allow_anonymous false\npassword_file " << dir_ << "/passwd\n";
      const std::string cmd = "mosquitto_passwd -b -c '" + dir_ + "/passwd' '" + options_.username + "' '" +
                              options_.password + "' >/dev/null 2>&1";
      if (std::system(cmd.c_str()) != 0) throw std::runtime_error("mosquitto_passwd failed: " + cmd);
    }
    conf << options_.extra_config;
    conf.close();
    start();
  }
  ~Mosquitto() {
    stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  Mosquitto(const Mosquitto&) = delete;
  Mosquitto& operator=(const Mosquitto&) = delete;

  int port() const { return port_; }
  std::string uri() const { return (options_.tls ? "ssl://127.0.0.1:" : "tcp://127.0.0.1:") + std::to_string(port_); }
  /// The certificate clients trust (Options::tls).
  std::string ca_file() const { return dir_ + "/cert.pem"; }
  const std::string& dir() const { return dir_; }
  pid_t pid() const { return pid_; }

  /// Starts the broker (again) on the same port; waits until it accepts connections.
  void start() {
    if (pid_ > 0) return;
    const std::string conf = dir_ + "/mosquitto.conf";
    const std::string log = dir_ + "/stdout.log";
    std::fflush(nullptr);  // or the child's copy of unwritten output is written twice
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      const int in = ::open("/dev/null", O_RDONLY);
      const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(in, 0);
      ::dup2(out, 1);
      ::dup2(out, 2);
      ::execl(options_.binary.c_str(), "mosquitto", "-c", conf.c_str(), static_cast<char*>(nullptr));
      std::_Exit(127);
    }
    if (pid_ < 0) throw std::runtime_error("fork failed");
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!port_accepts(port_)) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("mosquitto exited at start; see " + dir_ + "/stdout.log");
      }
      if (std::chrono::steady_clock::now() > until) throw std::runtime_error("mosquitto did not listen within 5 s");
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // polling a condition, bounded
    }
  }
  /// SIGTERM and wait (a clean broker exit).
  void stop() { end(SIGTERM); }
  /// SIGKILL and wait (the broker vanishes: clients see the connection drop).
  void kill() { end(SIGKILL); }

 private:
  void end(int sig) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  Options options_;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace tether::test
