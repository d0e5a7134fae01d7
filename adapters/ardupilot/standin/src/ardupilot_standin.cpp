// SPDX-License-Identifier: Apache-2.0
#include "tether/ardupilot_standin/ardupilot_standin.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace tether::adapters::ardupilot {

namespace {

// Where a key's value starts, found as ArduPilot finds it: the section's first occurrence
// in the line (the line's start for a top-level key), then the key's first occurrence one
// character past the section's name, then two characters past the key (its closing `":`).
// nullptr when either is not found or the line ends first.
const char* value_of(const char* line, const char* section, const char* key) {
  const char* p = std::strstr(line, section);
  if (p == nullptr) return nullptr;
  p += std::strlen(section);
  if (*p == '\0') return nullptr;
  p = std::strstr(p + 1, key);
  if (p == nullptr) return nullptr;
  p += std::strlen(key);
  if (p[0] == '\0' || p[1] == '\0') return nullptr;
  return p + 2;
}

bool read_number(const char*& p, double& out) {
  char* end = nullptr;
  const double v = std::strtod(p, &end);
  if (end == p) return false;
  out = v;
  p = end;
  return true;
}

void skip_spaces(const char*& p) {
  while (std::isspace(static_cast<unsigned char>(*p))) ++p;
}

// "[a, b, c]" with any spaces, as sscanf("[%f, %f, %f]") reads it: all `n` numbers or nothing
template <std::size_t n>
bool read_numbers(const char* p, std::array<double, n>& out) {
  if (p == nullptr || *p != '[') return false;
  ++p;
  std::array<double, n> v{};
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) {
      skip_spaces(p);
      if (*p != ',') return false;
      ++p;
    }
    skip_spaces(p);
    if (!read_number(p, v[i])) return false;
  }
  out = v;
  return true;
}

bool read_vec3(const char* p, Vec3& out) {
  std::array<double, 3> v{};
  if (!read_numbers(p, v)) return false;
  out = Vec3(v[0], v[1], v[2]);
  return true;
}

bool read_scalar(const char* p, double& out) { return p != nullptr && read_number(p, out); }

}  // namespace

std::uint32_t read_reply_like_ardupilot(const char* line, SensorReading& out) {
  std::uint32_t f = 0;
  if (read_scalar(value_of(line, "", "timestamp"), out.timestamp_s)) f |= field_timestamp;
  if (read_vec3(value_of(line, "imu", "gyro"), out.gyro_rad_s)) f |= field_gyro;
  if (read_vec3(value_of(line, "imu", "accel_body"), out.accel_body_m_s2)) f |= field_accel_body;
  if (read_vec3(value_of(line, "", "position"), out.position_m)) f |= field_position;
  if (read_numbers(value_of(line, "", "quaternion"), out.quaternion)) f |= field_quaternion;
  if (read_vec3(value_of(line, "", "velocity"), out.velocity_m_s)) f |= field_velocity;
  static constexpr const char* rng_keys[6] = {"rng_1", "rng_2", "rng_3", "rng_4", "rng_5", "rng_6"};
  for (std::size_t i = 0; i < 6; ++i)
    if (read_scalar(value_of(line, "", rng_keys[i]), out.rng_m[i])) f |= field_rng_1 << i;
  if (read_vec3(value_of(line, "", "velocity_wind"), out.velocity_wind_m_s)) f |= field_velocity_wind;
  if (read_scalar(value_of(line, "battery", "voltage"), out.battery_voltage_v)) f |= field_battery_voltage;
  if (read_scalar(value_of(line, "battery", "current"), out.battery_current_a)) f |= field_battery_current;
  out.fields = f;
  return f;
}

void FixedPwm::outputs(const SensorReading* last, std::uint32_t frame_count, std::span<std::uint16_t> pwm_us) {
  (void)last;
  (void)frame_count;
  for (std::size_t i = 0; i < pwm_us.size() && i < pwm_us_.size(); ++i) pwm_us[i] = pwm_us_[i];
}

ArduPilotStandIn::ArduPilotStandIn(StandInOptions options, ControlLaw& law) : options_(std::move(options)), law_(law) {
  if (options_.channels != 16 && options_.channels != 32)
    throw std::runtime_error("ArduPilot stand-in: channels must be 16 or 32, got " +
                             std::to_string(options_.channels));
  if (options_.recv_timeout_ms <= 0 || options_.resend_after_ms <= 0)
    throw std::runtime_error("ArduPilot stand-in: recv_timeout_ms and resend_after_ms must be > 0");
  open_socket();
}

ArduPilotStandIn::~ArduPilotStandIn() {
  if (fd_ >= 0) ::close(fd_);
}

void ArduPilotStandIn::open_socket() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error(std::string("ArduPilot stand-in: socket: ") + std::strerror(errno));
  // a loopback target is answered from loopback only: the stand-in opens nothing outside
  sockaddr_in local{};
  local.sin_family = AF_INET;
  local.sin_port = 0;
  in_addr target{};
  if (::inet_pton(AF_INET, options_.host.c_str(), &target) != 1)
    throw std::runtime_error("ArduPilot stand-in: host " + options_.host + " is not an IPv4 address");
  local.sin_addr.s_addr = (ntohl(target.s_addr) >> 24) == 127 ? htonl(INADDR_LOOPBACK) : htonl(INADDR_ANY);
  if (::bind(fd_, reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0)
    throw std::runtime_error(std::string("ArduPilot stand-in: bind: ") + std::strerror(errno));
}

std::uint16_t ArduPilotStandIn::local_port() const {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) return 0;
  return ntohs(a.sin_port);
}

void ArduPilotStandIn::restart() {
  open_socket();
  frame_count_ = 0;
  last_ = SensorReading{};
  have_timestamp_ = false;
  sim_time_s_ = 0;
  frame_rate_hz_ = 0;
  buffered_ = 0;
}

void ArduPilotStandIn::send_packet() {
  std::uint8_t bytes[servo_packet_bytes_32];
  const std::size_t n = encode_servo_packet(packet_, bytes, sizeof bytes);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(options_.port);
  ::inet_pton(AF_INET, options_.host.c_str(), &to.sin_addr);
  // a lost packet is what the re-send is for; nothing else to do about a failed send
  (void)::sendto(fd_, bytes, n, 0, reinterpret_cast<const sockaddr*>(&to), sizeof to);
  ++counters.packets_sent;
}

bool ArduPilotStandIn::take_line() {
  // as ArduPilot: line ends become NULs, and the last complete line (between the last two
  // NULs) is the reply; what follows the last NUL stays for the next datagram
  char* begin = buffer_.data();
  std::replace(begin, begin + buffered_, '\n', '\0');
  char* last_nul = nullptr;
  for (std::size_t i = buffered_; i-- > 0;)
    if (begin[i] == '\0') {
      last_nul = begin + i;
      break;
    }
  if (last_nul == nullptr || last_nul == begin) return false;
  char* line_start = nullptr;
  for (char* p = last_nul; p-- > begin;)
    if (*p == '\0') {
      line_start = p + 1;
      break;
    }
  if (line_start == nullptr) return false;
  SensorReading r = last_;
  const bool readable = (read_reply_like_ardupilot(line_start, r) & required_fields) == required_fields;
  const std::size_t rest = buffered_ - static_cast<std::size_t>(last_nul - begin);
  std::memmove(begin, last_nul, rest);
  buffered_ = rest;
  if (!readable) return false;
  if (have_timestamp_ && r.timestamp_s < last_.timestamp_s) {
    ++counters.physics_resets;  // ArduPilot: "physics reset", its clock does not move
  } else if (have_timestamp_) {
    const double dt = r.timestamp_s - last_.timestamp_s;
    sim_time_s_ += dt;
    // as SITL: a step between 0 and 0.1 s sets the frame rate (recv_fdm -> adjust_frame_time)
    if (dt > 0 && dt < 0.1) frame_rate_hz_ = static_cast<std::uint16_t>(std::clamp(std::lround(1.0 / dt), 10L, 65535L));
  }
  have_timestamp_ = true;
  last_ = r;
  return true;
}

ArduPilotStandIn::FrameResult ArduPilotStandIn::frame(std::chrono::steady_clock::time_point give_up_at) {
  packet_.channels = options_.channels;
  packet_.frame_rate_hz = frame_rate_hz_ != 0 ? frame_rate_hz_ : options_.frame_rate_hz;
  packet_.frame_count = frame_count_;
  packet_.pwm_us.fill(0);
  law_.outputs(last_.fields != 0 ? &last_ : nullptr, frame_count_,
               std::span<std::uint16_t>(packet_.pwm_us.data(), options_.channels));
  send_packet();
  std::int64_t silent_ms = 0;
  for (;;) {
    if (cancelled_ || std::chrono::steady_clock::now() >= give_up_at) return FrameResult::gave_up;
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(options_.recv_timeout_ms));
    if (ready <= 0) {
      silent_ms += options_.recv_timeout_ms;
      if (silent_ms >= options_.resend_after_ms) {
        silent_ms = 0;
        ++counters.resends;
        send_packet();
      }
      continue;
    }
    if (buffered_ == buffer_.size()) {
      ++counters.buffer_overflows;
      buffered_ = 0;
    }
    const ssize_t got = ::recv(fd_, buffer_.data() + buffered_, buffer_.size() - buffered_, 0);
    if (got <= 0) continue;
    silent_ms = 0;
    buffered_ += static_cast<std::size_t>(got);
    if (take_line()) {
      ++counters.replies;
      ++frame_count_;
      return FrameResult::replied;
    }
    // as ArduPilot: no reply taken, so the next packet goes out with the same frame_count
    ++counters.unreadable;
    send_packet();
  }
}

}  // namespace tether::adapters::ardupilot
