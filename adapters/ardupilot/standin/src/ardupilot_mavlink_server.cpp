// SPDX-License-Identifier: Apache-2.0
#include "tether/ardupilot_standin/ardupilot_mavlink_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <numbers>
#include <stdexcept>

#include "tether/mavlink/mavlink_messages.hpp"

namespace tether::adapters::ardupilot {

namespace mav = mavlink;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::uint8_t severity_critical = 2;
constexpr std::uint8_t severity_warning = 4;
constexpr float arm_force_magic = 21196.0F;  // param2 of an arm that skips the checks
constexpr std::uint8_t attitude_target_ignore_throttle = 64;  // ATTITUDE_TARGET_TYPEMASK_THROTTLE_IGNORE
constexpr std::uint8_t severity_info = 6;
constexpr std::uint8_t mav_result_unsupported = 3;
constexpr std::uint8_t mav_result_failed = 4;
constexpr std::uint8_t mav_param_type_real32 = 9;
constexpr std::uint8_t attitude_target_ignore_attitude = 128;  // ATTITUDE_TARGET_TYPEMASK_ATTITUDE_IGNORE
constexpr std::uint16_t position_target_ignore_z = 4;          // POSITION_TARGET_TYPEMASK_Z_IGNORE
// MAV_SYS_STATUS_SENSOR bits it reports present, enabled and healthy: 3D gyro, 3D accel,
// absolute pressure (the depth sensor), AHRS, motor outputs
constexpr std::uint32_t sensors = 1u | 2u | 8u | (1u << 21) | (1u << 15);
constexpr std::uint32_t sensor_ahrs = 1u << 21;

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

MavlinkServer::MavlinkServer(Autopilot& autopilot, MavlinkServerOptions options)
    : autopilot_(autopilot), options_(std::move(options)), decoder_(mav::known_messages()) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(options_.port);
  if (::inet_pton(AF_INET, options_.bind.c_str(), &a.sin_addr) != 1)
    throw std::runtime_error("MAVLink server: " + options_.bind + " is not an IPv4 address");
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd_ < 0) throw std::runtime_error(std::string("MAVLink server: socket: ") + std::strerror(errno));
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0 || ::listen(listen_fd_, 4) != 0) {
    const std::string why = std::strerror(errno);
    close_fd(listen_fd_);
    throw std::runtime_error("MAVLink server: cannot listen on " + options_.bind + ":" + std::to_string(options_.port) +
                             ": " + why);
  }
  socklen_t len = sizeof a;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    close_fd(listen_fd_);
    throw std::runtime_error(std::string("MAVLink server: pipe: ") + std::strerror(errno));
  }
  wake_read_ = pipe_fds[0];
  wake_write_ = pipe_fds[1];
}

MavlinkServer::~MavlinkServer() {
  stop();
  close_fd(wake_read_);
  close_fd(wake_write_);
}

void MavlinkServer::start() {
  if (thread_.joinable() || listen_fd_ < 0) return;
  started_ = Clock::now();
  thread_ = std::thread([this] { run(); });
}

void MavlinkServer::stop() {
  if (thread_.joinable()) {
    const char byte = 0;
    (void)::write(wake_write_, &byte, 1);
    thread_.join();
  }
  close_client();
  close_fd(listen_fd_);
}

bool MavlinkServer::wait_for_gcs(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  return gcs_seen_cv_.wait_for(lock, timeout, [this] { return gcs_seen_; });
}

bool MavlinkServer::gcs_connected() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return gcs_connected_;
}

MavlinkServerCounters MavlinkServer::counters() const {
  std::lock_guard<std::mutex> lock(mutex_);
  MavlinkServerCounters c = counters_;
  return c;
}

void MavlinkServer::run() {
  for (;;) {
    const auto now = Clock::now();
    if (client_fd_ >= 0) send_periodic(now);
    auto next = Clock::now() + std::chrono::seconds(1);
    if (client_fd_ >= 0) next = std::min(next_heartbeat_, next_telemetry_);
    const auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count();
    pollfd fds[3] = {{wake_read_, POLLIN, 0}, {listen_fd_, POLLIN, 0}, {client_fd_, POLLIN, 0}};
    const int ready = ::poll(fds, client_fd_ >= 0 ? 3 : 2, static_cast<int>(std::clamp<long long>(wait_ms, 0, 1000)));
    if (ready < 0 && errno != EINTR) return;
    if (ready <= 0) continue;
    if (fds[0].revents != 0) return;  // stop()
    if (client_fd_ >= 0 && fds[2].revents != 0) read_client();
    if (fds[1].revents != 0) accept_client(Clock::now());
  }
}

void MavlinkServer::accept_client(Clock::time_point now) {
  const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) return;
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const bool replacing = client_fd_ >= 0;
  close_client();
  client_fd_ = fd;
  // a new stream: a new decoder (what the old one held belongs to the old connection)
  decoder_garbage_base_ += decoder_.counters().garbage_bytes + decoder_.counters().skipped_bytes;
  decoder_ = mav::Decoder(mav::known_messages());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++counters_.connections;
    if (replacing) ++counters_.replaced;
    gcs_seen_ = true;
    gcs_connected_ = true;
  }
  gcs_seen_cv_.notify_all();
  // a heartbeat at once, so that a ground station knows it at once
  next_heartbeat_ = now;
  next_telemetry_ = now;
  send_periodic(now);
}

void MavlinkServer::close_client() {
  close_fd(client_fd_);
  std::lock_guard<std::mutex> lock(mutex_);
  gcs_connected_ = false;
}

void MavlinkServer::read_client() {
  std::uint8_t bytes[1024];
  const ssize_t n = ::recv(client_fd_, bytes, sizeof bytes, 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (n <= 0) {
    decoder_.finish();
    close_client();
  } else {
    decoder_.feed(std::span<const std::uint8_t>(bytes, static_cast<std::size_t>(n)),
                  [&](const mav::Frame& f) { handle(f); });
  }
  std::lock_guard<std::mutex> lock(mutex_);
  counters_.garbage_bytes =
      decoder_garbage_base_ + decoder_.counters().garbage_bytes + decoder_.counters().skipped_bytes;
}

void MavlinkServer::send_periodic(Clock::time_point now) {
  if (now >= next_heartbeat_) {
    send_heartbeat();
    send_sys_status();
    next_heartbeat_ = now + std::chrono::milliseconds(options_.heartbeat_period_ms);
  }
  if (now >= next_telemetry_) {
    send_telemetry();
    next_telemetry_ = now + std::chrono::milliseconds(options_.telemetry_period_ms);
  }
}

template <class M>
void MavlinkServer::send(const M& message) {
  if (client_fd_ < 0) return;
  std::array<std::uint8_t, mav::max_frame_size> buf{};
  mav::Header h;
  h.seq = seq_++;
  h.sysid = options_.sysid;
  h.compid = options_.compid;
  const std::size_t n = mav::encode(message, h, buf);
  const ssize_t sent = n == 0 ? -1 : ::send(client_fd_, buf.data(), n, MSG_DONTWAIT | MSG_NOSIGNAL);
  std::lock_guard<std::mutex> lock(mutex_);
  if (sent == static_cast<ssize_t>(n))
    ++counters_.frames_out;
  else
    ++counters_.send_dropped;
}

void MavlinkServer::send_heartbeat() {
  mav::Heartbeat hb;
  hb.type = autopilot_.airframe() == Airframe::rover ? mav::mav_type_ground_rover : mav::mav_type_submarine;
  hb.autopilot = mav::mav_autopilot_ardupilotmega;
  const bool armed = autopilot_.armed();
  hb.base_mode =
      static_cast<std::uint8_t>(mav::mav_mode_flag_custom_mode_enabled | (armed ? mav::mav_mode_flag_safety_armed : 0));
  hb.custom_mode = autopilot_.mode();
  hb.system_status = mav::mav_state_active;
  send(hb);
}

void MavlinkServer::send_sys_status() {
  mav::SysStatus s;
  s.onboard_control_sensors_present = sensors;
  s.onboard_control_sensors_enabled = sensors;
  // the AHRS is unhealthy until the start-up has passed (as ArduSub's EKF at boot)
  s.onboard_control_sensors_health = autopilot_.ready() ? sensors : sensors & ~sensor_ahrs;
  s.voltage_battery = 0xFFFF;  // no battery
  s.current_battery = -1;
  s.battery_remaining = -1;
  send(s);
}

void MavlinkServer::send_telemetry() {
  const AutopilotTelemetry t = autopilot_.telemetry();
  if (!t.have_reading) return;
  const SensorReading& r = t.reading;
  const auto boot_ms = static_cast<std::uint32_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_).count());
  const auto& q = r.quaternion;
  const double heading = heading_deg(q);
  mav::Attitude a;
  a.time_boot_ms = boot_ms;
  a.roll = static_cast<float>(roll_rad(q));
  a.pitch = static_cast<float>(std::asin(std::clamp(2.0 * (q[0] * q[2] - q[3] * q[1]), -1.0, 1.0)));
  a.yaw = static_cast<float>(heading_error_deg(heading, 0) * std::numbers::pi / 180.0);
  a.rollspeed = static_cast<float>(r.gyro_rad_s.x());
  a.pitchspeed = static_cast<float>(r.gyro_rad_s.y());
  a.yawspeed = static_cast<float>(r.gyro_rad_s.z());
  send(a);
  // positions are from home (no latitude/longitude: lat and lon stay 0); altitude is -depth
  auto clamp16 = [](double v) { return static_cast<std::int16_t>(std::clamp(v, -32767.0, 32767.0)); };
  mav::GlobalPositionInt p;
  p.time_boot_ms = boot_ms;
  p.alt = static_cast<std::int32_t>(std::lround(-r.position_m.z() * 1000.0));
  p.relative_alt = p.alt;
  p.vx = clamp16(r.velocity_m_s.x() * 100.0);
  p.vy = clamp16(r.velocity_m_s.y() * 100.0);
  p.vz = clamp16(r.velocity_m_s.z() * 100.0);
  p.hdg = static_cast<std::uint16_t>(std::lround(heading * 100.0) % 36000);
  send(p);
  mav::VfrHud v;
  v.groundspeed = static_cast<float>(std::hypot(r.velocity_m_s.x(), r.velocity_m_s.y()));
  v.heading = static_cast<std::int16_t>(std::lround(heading) % 360);
  v.alt = static_cast<float>(-r.position_m.z());
  v.climb = static_cast<float>(-r.velocity_m_s.z());
  send(v);
}

void MavlinkServer::send_text(std::uint8_t severity, const char* text) {
  mav::StatusText t;
  t.severity = severity;
  mav::set_text(t.text, text);
  send(t);
}

void MavlinkServer::send_ack(std::uint16_t command, std::uint8_t result) {
  mav::CommandAck a;
  a.command = command;
  a.result = result;
  send(a);
}

void MavlinkServer::send_param(std::size_t index) {
  mav::ParamValue v;
  mav::set_text(v.param_id, hold_params()[index].name);
  v.param_value = static_cast<float>(autopilot_.param(index));
  v.param_type = mav_param_type_real32;
  v.param_count = static_cast<std::uint16_t>(hold_params().size());
  v.param_index = static_cast<std::uint16_t>(index);
  send(v);
}

bool MavlinkServer::for_us(std::uint8_t target_system) const {
  return target_system == 0 || target_system == options_.sysid;
}

void MavlinkServer::change_mode(std::uint16_t ack_command, bool custom_flag, std::uint32_t custom_mode) {
  const auto change = custom_flag ? autopilot_.set_mode(custom_mode) : Autopilot::ModeChange::refused;
  if (change == Autopilot::ModeChange::refused) {
    send_text(severity_warning, text_mode_refused);
    send_ack(ack_command, mav_result_failed);
    return;
  }
  send_ack(ack_command, mav::mav_result_accepted);
  // as ArduPilot: the new mode shows in a heartbeat soon after
  if (change == Autopilot::ModeChange::changed) send_heartbeat();
}

void MavlinkServer::handle_command(const mav::CommandLong& c) {
  if (c.command == mav::mav_cmd_component_arm_disarm) {
    if (c.param1 != 0.0F && c.param1 != 1.0F) {
      send_ack(c.command, mav_result_unsupported);
      return;
    }
    const bool arm = c.param1 == 1.0F;
    // as ArduSub before its estimator is healthy: refused, the reason as a PreArm text
    // (AP_Arming_Sub::ins_checks), unless forced
    if (arm && !autopilot_.armed() && c.param2 != arm_force_magic && !autopilot_.ready()) {
      send_text(severity_critical, text_prearm_ahrs);
      send_ack(c.command, mav_result_failed);
      return;
    }
    // the text comes before the answer, as ArduPilot's arming prints it while it arms
    const bool changed = autopilot_.set_armed(arm);
    if (changed) send_text(severity_info, arm ? text_arming : text_disarming);
    send_ack(c.command, mav::mav_result_accepted);
    // as for a mode: the new state shows in a heartbeat soon after, not a second later
    if (changed) send_heartbeat();
    return;
  }
  if (c.command == mav::mav_cmd_do_set_mode) {
    const auto base_mode = static_cast<std::uint32_t>(std::isfinite(c.param1) ? c.param1 : 0.0F);
    const bool custom =
        (base_mode & mav::mav_mode_flag_custom_mode_enabled) != 0 && std::isfinite(c.param2) && c.param2 >= 0.0F;
    change_mode(c.command, custom, custom ? static_cast<std::uint32_t>(c.param2) : 0);
    return;
  }
  send_ack(c.command, mav_result_unsupported);
}

void MavlinkServer::handle(const mav::Frame& frame) {
  bool handled = false;
  if (frame.header.msgid == mav::Heartbeat::msgid) {
    handled = true;  // a ground station's: nothing to do (no GCS failsafe here)
  } else if (auto c = mav::decode<mav::CommandLong>(frame); c && for_us(c->target_system)) {
    handle_command(*c);
    handled = true;
  } else if (auto m = mav::decode<mav::SetMode>(frame); m && for_us(m->target_system)) {
    // ArduPilot answers SET_MODE with a COMMAND_ACK whose command is SET_MODE's message id
    change_mode(static_cast<std::uint16_t>(mav::SetMode::msgid),
                (m->base_mode & mav::mav_mode_flag_custom_mode_enabled) != 0, m->custom_mode);
    handled = true;
  } else if (auto mc = mav::decode<mav::ManualControl>(frame); mc && for_us(mc->target)) {
    autopilot_.set_pilot(PilotInput{mc->x, mc->y, mc->z, mc->r}, autopilot_.now());
    handled = true;
  } else if (auto g = mav::decode<mav::SetPositionTargetGlobalInt>(frame); g && for_us(g->target_system)) {
    // ArduSub takes the altitude (metres up from its depth zero) in ALT_HOLD and GUIDED only
    handled = (g->type_mask & position_target_ignore_z) == 0 && autopilot_.set_depth_target(-static_cast<double>(g->alt));
  } else if (auto at = mav::decode<mav::SetAttitudeTarget>(frame); at && for_us(at->target_system)) {
    const auto& q = at->q;
    const double norm = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    if ((at->type_mask & attitude_target_ignore_attitude) == 0 && norm > 0.5)
      handled = autopilot_.attitude_target(heading_deg({q[0] / norm, q[1] / norm, q[2] / norm, q[3] / norm}),
                                           (at->type_mask & attitude_target_ignore_throttle) != 0);
  } else if (auto ps = mav::decode<mav::ParamSet>(frame); ps && for_us(ps->target_system)) {
    // an unknown name or a value out of range is not answered (as ArduPilot)
    const std::string name(mav::text(ps->param_id));
    if (const auto index = autopilot_.set_param(name, ps->param_value)) {
      send_param(*index);
      handled = true;
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  ++counters_.frames_in;
  if (handled)
    ++counters_.handled;
  else
    ++counters_.ignored;
}

}  // namespace tether::adapters::ardupilot
