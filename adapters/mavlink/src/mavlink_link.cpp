// SPDX-License-Identifier: Apache-2.0
// The ardupilot_json endpoint's MAVLink link (mavlink_link.hpp): sockets, the per-step sends,
// and what the autopilot says turned into log lines.
#include "tether/mavlink/mavlink_link.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numbers>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

namespace tether::adapters {

namespace mav = mavlink;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::int64_t second_ns = 1'000'000'000;
constexpr std::uint8_t mav_frame_global_relative_alt_int = 6;
constexpr std::uint8_t mav_param_type_real32 = 9;
constexpr std::uint8_t mav_result_in_progress = 5;
// SET_POSITION_TARGET_GLOBAL_INT: every dimension ignored but the altitude (z)
// (POSITION_TARGET_TYPEMASK bits 0..11 set but Z_IGNORE, 4, and FORCE_SET, 512)
constexpr std::uint16_t position_only_alt = 0x0DFB;
// SET_ATTITUDE_TARGET: the three body rates ignored; ArduSub's ALT_HOLD keeps a target only
// with throttle ignored as well (bit 6: GCS_MAVLink_Sub.cpp, mode_althold.cpp), GUIDED only without
constexpr std::uint8_t attitude_rates_ignored = 1 | 2 | 4;
constexpr std::uint8_t attitude_throttle_ignored = 64;
constexpr std::uint32_t sub_mode_guided = 4;

const char* const ack_names[8] = {"accepted", "temporarily_rejected", "denied",    "unsupported",
                                  "failed",   "in_progress",          "cancelled", "other"};

sockaddr_in socket_address(const MavlinkLinkConfig& c) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(c.port);
  ::inet_pton(AF_INET, c.host.c_str(), &a.sin_addr);
  return a;
}

std::string mode_text(mav::Vehicle v, std::uint32_t mode) {
  const std::string_view name = mav::mode_name(v, mode);
  return name.empty() ? std::to_string(mode) : std::string(name);
}

// the level of a STATUSTEXT line: MAV_SEVERITY 0..3 (emergency .. error) an error, 4 a warning
std::uint8_t level_of(std::uint8_t severity) { return severity <= 3 ? 2 : severity == 4 ? 1 : 0; }

// text safe for a log line: printable ASCII kept, anything else as \xNN
std::string printable_text(std::string_view s) {
  std::string out;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7F) {
      out += c;
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02X", u);
      out += hex;
    }
  }
  return out;
}

}  // namespace

static_assert(sizeof(sockaddr_in) == 16, "MavlinkLink::peer_ holds a sockaddr_in");

MavlinkLink::MavlinkLink(MavlinkLinkConfig config) : config_(std::move(config)), decoder_(mav::known_messages()) {
  queued_.reserve(max_queued);
  notes_.reserve(64);
  // the sticks centred: ArduSub's throttle (z) is 0..1000 with 500 neutral, ArduRover's -1000..1000
  if (config_.vehicle == mav::Vehicle::sub) sticks_[2] = 500;
}

MavlinkLink::~MavlinkLink() { close(); }

void MavlinkLink::close() {
  active_ = false;
  close_socket();
}

void MavlinkLink::close_socket() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  state_ = State::closed;
}

void MavlinkLink::open_socket() {
  close_socket();
  const int type = config_.transport == MavlinkLinkConfig::Transport::tcp ? SOCK_STREAM : SOCK_DGRAM;
  fd_ = ::socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) {
    last_error_ = errno;
    throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  }
  if (type == SOCK_STREAM) {
    const int on = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  }
}

void MavlinkLink::connect(const std::string& who) {
  active_ = true;
  if (config_.transport != MavlinkLinkConfig::Transport::tcp) {
    // udp (a board): our datagrams go to it, and the connected socket reads only its
    // replies; udp_in (MAVProxy's --out): bind the address, the autopilot's frames arrive
    // from MAVProxy, and ours go back to whoever sent last
    const bool listen = config_.transport == MavlinkLinkConfig::Transport::udp_in;
    const sockaddr_in address = socket_address(config_);
    try {
      open_socket();
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(who + ": MAVLink " + e.what());
    }
    const int one = 1;
    if (listen) ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    const auto* a = reinterpret_cast<const sockaddr*>(&address);
    if ((listen ? ::bind(fd_, a, sizeof address) : ::connect(fd_, a, sizeof address)) != 0) {
      const std::string why = std::strerror(errno);
      close();
      throw std::runtime_error(who + ": MAVLink " + config_.address() + ": " + (listen ? "cannot bind: " : "") + why);
    }
    state_ = State::connected;
    ever_connected_ = true;
    return;
  }
  // TCP: SITL opens 5760 a moment after it starts; try again until the deadline
  const auto deadline = Clock::now() + std::chrono::milliseconds(config_.connect_timeout_ms);
  for (;;) {
    start_connect(0);
    if (state_ == State::connecting) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      pollfd p{fd_, POLLOUT, 0};
      if (::poll(&p, 1, static_cast<int>(std::clamp<std::int64_t>(left, 0, 200))) > 0) finish_connect(0);
    }
    if (state_ == State::connected) {
      next_retry_ns_ = 0;
      return;
    }
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const std::string why = last_error_ != 0 ? std::strerror(last_error_) : "no answer";
  close();
  throw std::runtime_error(who + ": no MAVLink connection to " + config_.address() + " within " +
                           std::to_string(config_.connect_timeout_ms) + " ms (" + why +
                           "; ArduPilot SITL listens on TCP 5760 + 10 * instance)");
}

// a non-blocking connect: connected, connecting (finish_connect later), or closed
void MavlinkLink::start_connect(std::int64_t time_ns) {
  try {
    open_socket();
  } catch (const std::runtime_error&) {
    next_retry_ns_ = time_ns + second_ns;
    return;
  }
  const sockaddr_in to = socket_address(config_);
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0) {
    finish_connect(time_ns);
  } else if (errno == EINPROGRESS) {
    state_ = State::connecting;
  } else {
    last_error_ = errno;
    close_socket();
    next_retry_ns_ = time_ns + second_ns;
  }
}

void MavlinkLink::finish_connect(std::int64_t time_ns) {
  int error = 0;
  socklen_t len = sizeof error;
  if (::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &len) != 0 || error != 0) {
    last_error_ = error != 0 ? error : errno;
    close_socket();
    next_retry_ns_ = time_ns + second_ns;
    return;
  }
  state_ = State::connected;
  if (ever_connected_) {
    ++counters_.reconnects;
    pending_ = Pending::restored;
  }
  ever_connected_ = true;
}

void MavlinkLink::lose() {
  ++counters_.links_lost;
  counters_.bytes_dropped += out_size_;
  out_size_ = 0;
  decoder_.finish();
  close_socket();
  pending_ = Pending::lost;
  next_retry_ns_ = 0;  // at the next step, then once a second
}

void MavlinkLink::flush() {
  if (state_ != State::connected || out_size_ == 0) return;
  if (config_.transport == MavlinkLinkConfig::Transport::udp_in && !have_peer_) {
    counters_.bytes_dropped += out_size_;  // nobody has spoken yet: nobody to answer
    out_size_ = 0;
    return;
  }
  sockaddr_in peer{};
  std::memcpy(&peer, peer_.data(), sizeof peer);
  const ssize_t n = config_.transport == MavlinkLinkConfig::Transport::udp_in
                        ? ::sendto(fd_, out_.data(), out_size_, MSG_DONTWAIT | MSG_NOSIGNAL,
                                   reinterpret_cast<const sockaddr*>(&peer), sizeof peer)
                        : ::send(fd_, out_.data(), out_size_, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n > 0) {
    counters_.bytes_sent += static_cast<std::uint64_t>(n);
    std::memmove(out_.data(), out_.data() + n, out_size_ - static_cast<std::size_t>(n));
    out_size_ -= static_cast<std::size_t>(n);
    return;
  }
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (config_.transport != MavlinkLinkConfig::Transport::tcp) {
    // nobody at the address (yet): the datagram is gone, the socket stays
    ++counters_.send_errors;
    counters_.bytes_dropped += out_size_;
    out_size_ = 0;
    return;
  }
  lose();
}

template <class M>
void MavlinkLink::send(const M& message) {
  std::array<std::uint8_t, mav::max_frame_size> frame;
  const mav::Header h{.seq = seq_, .sysid = our_sysid, .compid = our_compid};
  const std::size_t n = mav::encode(message, h, frame);
  if (n == 0) return;
  ++seq_;
  if (state_ != State::connected) {
    counters_.bytes_dropped += n;  // lost with the link in this very step
    return;
  }
  // UDP: one frame per datagram; TCP: a byte stream, whole frames queued behind what waits
  if (config_.transport != MavlinkLinkConfig::Transport::tcp) flush();
  if (out_size_ + n > out_.size()) {
    counters_.bytes_dropped += n;
    return;
  }
  std::memcpy(out_.data() + out_size_, frame.data(), n);
  out_size_ += n;
  flush();
}

void MavlinkLink::send_action(const MavlinkAction& a) {
  ++counters_.commands_sent;
  const std::uint8_t sys = target_sysid_;
  const std::uint8_t comp = target_compid_;
  switch (a.kind) {
    case MavlinkAction::Kind::arm: send(mav::arm_disarm(sys, comp, a.arm, a.force)); break;
    case MavlinkAction::Kind::mode: send(mav::do_set_mode(sys, comp, a.custom_mode)); break;
    case MavlinkAction::Kind::depth: {
      mav::SetPositionTargetGlobalInt m;
      m.time_boot_ms = static_cast<std::uint32_t>(last_time_ns_ / 1'000'000);
      m.target_system = sys;
      m.target_component = comp;
      m.coordinate_frame = mav_frame_global_relative_alt_int;
      m.type_mask = position_only_alt;
      m.alt = static_cast<float>(-(a.depth_m - depth_datum_m_));
      send(m);
      break;
    }
    case MavlinkAction::Kind::heading: {
      // yaw about NED's down axis: q = (cos(yaw/2), 0, 0, sin(yaw/2))
      const double half = a.heading_deg * std::numbers::pi / 360.0;
      mav::SetAttitudeTarget m;
      m.time_boot_ms = static_cast<std::uint32_t>(last_time_ns_ / 1'000'000);
      m.target_system = sys;
      m.target_component = comp;
      m.type_mask = config_.vehicle == mav::Vehicle::sub && mode_ == sub_mode_guided
                        ? attitude_rates_ignored
                        : static_cast<std::uint8_t>(attitude_rates_ignored | attitude_throttle_ignored);
      m.q = {static_cast<float>(std::cos(half)), 0.0F, 0.0F, static_cast<float>(std::sin(half))};
      m.thrust = 0.5F;  // ArduSub: neutral climb rate
      send(m);
      break;
    }
    case MavlinkAction::Kind::manual: {
      mav::ManualControl m;
      m.target = sys;
      m.x = a.manual[0];
      m.y = a.manual[1];
      m.z = a.manual[2];
      m.r = a.manual[3];
      m.buttons = a.buttons;
      send(m);
      break;
    }
    case MavlinkAction::Kind::param: {
      mav::ParamSet m;
      m.target_system = sys;
      m.target_component = comp;
      m.param_id = a.param_id;
      m.param_value = a.param_value;
      m.param_type = mav_param_type_real32;
      send(m);
      break;
    }
  }
}

void MavlinkLink::step(std::int64_t time_ns) {
  last_time_ns_ = time_ns;
  if (!active_) return;  // not connected yet, or closed by stop()
  if (config_.transport == MavlinkLinkConfig::Transport::tcp) {
    if (state_ == State::closed && time_ns >= next_retry_ns_) start_connect(time_ns);
    if (state_ == State::connecting) {
      pollfd p{fd_, POLLOUT, 0};
      if (::poll(&p, 1, 0) > 0) finish_connect(time_ns);
    }
  }
  if (state_ != State::connected) return;  // the script waits for the link
  flush();
  if (time_ns >= next_heartbeat_ns_) {
    send(mav::gcs_heartbeat());
    ++counters_.heartbeats_sent;
    next_heartbeat_ns_ = time_ns - time_ns % second_ns + second_ns;
  }
  while (next_script_ < config_.script.size() && config_.script[next_script_].at_ns <= time_ns && connected())
    take(config_.script[next_script_++], time_ns);
  for (const MavlinkAction& a : queued_) take(a, time_ns);
  queued_.clear();
  keep_up(time_ns);
}

void MavlinkLink::note(std::uint8_t level, std::string text) {
  if (notes_.size() < 64) notes_.push_back({level, std::move(text)});
}

// a command becomes what the ground station keeps asking for; a parameter is sent once
void MavlinkLink::take(const MavlinkAction& a, std::int64_t time_ns) {
  switch (a.kind) {
    case MavlinkAction::Kind::arm:
      want_arm_ = a;
      arm_asked_ns_ = time_ns;
      next_arm_ns_ = time_ns;
      arm_tries_ = 0;
      failure_.clear();
      break;
    case MavlinkAction::Kind::mode:
      want_mode_ = a.custom_mode;
      next_mode_ns_ = time_ns;
      break;
    case MavlinkAction::Kind::depth:
      depth_target_m_ = a.depth_m;
      next_target_ns_ = time_ns;
      if (depth_datum_m_ != 0 && config_.vehicle == mav::Vehicle::sub) {
        char text[160];
        std::snprintf(text, sizeof text,
                      "ground station: depth %.3g m sent as %.3g m below ArduSub's depth zero (the %.3g m it was at "
                      "when it started)",
                      a.depth_m, a.depth_m - depth_datum_m_, depth_datum_m_);
        note(0, text);
      }
      break;
    case MavlinkAction::Kind::heading:
      heading_target_deg_ = a.heading_deg;
      next_heading_ns_ = time_ns;
      break;
    case MavlinkAction::Kind::manual:
      sticks_ = a.manual;
      buttons_ = a.buttons;
      next_pilot_ns_ = time_ns;
      if (config_.pilot_rate_hz <= 0) send_action(a);  // not streamed: sent as given
      break;
    case MavlinkAction::Kind::param: send_action(a); break;
  }
}

// what a ground station keeps up, once the autopilot has been heard (its HEARTBEAT)
void MavlinkLink::keep_up(std::int64_t time_ns) {
  if (!have_heartbeat_) return;
  if (want_mode_) {
    if (mode_ == *want_mode_) {
      want_mode_.reset();
    } else if (time_ns >= next_mode_ns_) {
      MavlinkAction m;
      m.kind = MavlinkAction::Kind::mode;
      m.custom_mode = *want_mode_;
      send_action(m);
      note(0, "ground station: asking for mode " + mode_text(config_.vehicle, *want_mode_));
      next_mode_ns_ = time_ns + second_ns;
    }
  }
  if (want_arm_) {
    if (armed_ == want_arm_->arm) {
      if (want_arm_->arm)
        note(0, "ground station: armed after " + std::to_string(arm_tries_) +
                    (arm_tries_ == 1 ? " request" : " requests"));
      want_arm_.reset();
    } else if (time_ns - arm_asked_ns_ > config_.arm_timeout_ms * 1'000'000) {
      if (failure_.empty())
        failure_ = std::string("ArduPilot did not ") + (want_arm_->arm ? "arm" : "disarm") + " within " +
                   std::to_string(config_.arm_timeout_ms / 1000) + " s (" + std::to_string(arm_tries_) +
                   " requests); it said: " + (last_prearm_.empty() ? "nothing" : "\"" + last_prearm_ + "\"");
    } else if (time_ns >= next_arm_ns_) {
      ++arm_tries_;
      send_action(*want_arm_);
      note(0, std::string("ground station: asking to ") + (want_arm_->arm ? "arm" : "disarm") + " (request " +
                  std::to_string(arm_tries_) + ")");
      next_arm_ns_ = time_ns + second_ns;
    }
  }
  if (depth_target_m_ && time_ns >= next_target_ns_) {
    MavlinkAction d;
    d.kind = MavlinkAction::Kind::depth;
    d.depth_m = *depth_target_m_;
    send_action(d);
    next_target_ns_ = time_ns + second_ns;
  }
  if (heading_target_deg_ && time_ns >= next_heading_ns_) {
    MavlinkAction h;
    h.kind = MavlinkAction::Kind::heading;
    h.heading_deg = *heading_target_deg_;
    send_action(h);
    next_heading_ns_ = time_ns + (config_.vehicle == mav::Vehicle::sub && mode_ == sub_mode_guided ? second_ns / 4
                                                                                                  : second_ns);
  }
  if (config_.pilot_rate_hz > 0 && time_ns >= next_pilot_ns_) {
    MavlinkAction m;
    m.kind = MavlinkAction::Kind::manual;
    m.manual = sticks_;
    m.buttons = buttons_;
    send_action(m);
    next_pilot_ns_ = time_ns + static_cast<std::int64_t>(1e9 / config_.pilot_rate_hz);
  }
}

bool MavlinkLink::queue(const MavlinkAction& action, std::string* why) {
  if (queued_.size() >= max_queued) {
    if (why) *why = "the autopilot's command queue is full (" + std::to_string(max_queued) + " waiting for a step)";
    return false;
  }
  queued_.push_back(action);
  return true;
}

void MavlinkLink::receive(std::vector<runtime::LogLine>& logs) {
  if (pending_ == Pending::lost) logs.push_back({1, "autopilot: MAVLink link lost"});
  if (pending_ == Pending::restored) logs.push_back({0, "autopilot: MAVLink link restored"});
  pending_ = Pending::none;
  for (runtime::LogLine& l : notes_) logs.push_back(std::move(l));
  notes_.clear();
  if (state_ != State::connected) return;
  // what has arrived, bounded so that a flood cannot hold the step
  for (int reads = 0; reads < 32; ++reads) {
    sockaddr_in from{};
    socklen_t from_len = sizeof from;
    const ssize_t n =
        ::recvfrom(fd_, in_.data(), in_.size(), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &from_len);
    if (n > 0 && config_.transport == MavlinkLinkConfig::Transport::udp_in) {
      std::memcpy(peer_.data(), &from, sizeof from);
      have_peer_ = true;
    }
    if (n > 0) {
      counters_.bytes_received += static_cast<std::uint64_t>(n);
      decoder_.feed(std::span<const std::uint8_t>(in_.data(), static_cast<std::size_t>(n)),
                    [&](const mav::Frame& f) { on_frame(f, logs); });
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (config_.transport != MavlinkLinkConfig::Transport::tcp) {
      ++counters_.send_errors;  // an earlier datagram refused (ICMP): nobody there yet
      return;
    }
    lose();  // closed (0) or reset by the autopilot
    logs.push_back({1, "autopilot: MAVLink link lost"});
    pending_ = Pending::none;
    return;
  }
}

void MavlinkLink::on_frame(const mav::Frame& f, std::vector<runtime::LogLine>& logs) {
  if (f.header.sysid == our_sysid && f.header.compid == our_compid) return;  // our own, echoed by a router
  if (auto hb = mav::decode<mav::Heartbeat>(f)) {
    // the autopilot's: not a ground station's, and the first such sender's from then on
    if (hb->type == mav::mav_type_gcs || hb->autopilot == mav::mav_autopilot_invalid) return;
    if (!have_target_) {
      target_sysid_ = f.header.sysid;
      target_compid_ = f.header.compid;
      have_target_ = true;
    } else if (f.header.sysid != target_sysid_ || f.header.compid != target_compid_) {
      return;
    }
    ++counters_.heartbeats_received;
    const bool armed = (hb->base_mode & mav::mav_mode_flag_safety_armed) != 0;
    if (!have_heartbeat_ || armed != armed_) logs.push_back({0, armed ? "autopilot: armed" : "autopilot: disarmed"});
    if (!have_heartbeat_ || hb->custom_mode != mode_)
      logs.push_back({0, "autopilot: mode " + mode_text(config_.vehicle, hb->custom_mode)});
    have_heartbeat_ = true;
    armed_ = armed;
    mode_ = hb->custom_mode;
  } else if (auto st = mav::decode<mav::StatusText>(f)) {
    ++counters_.statustexts;
    std::string text = printable_text(mav::text(st->text));
    if (text.rfind("PreArm:", 0) == 0 || text.rfind("Arm:", 0) == 0) last_prearm_ = text;
    logs.push_back({level_of(st->severity), "autopilot: " + std::move(text)});
  } else if (auto ack = mav::decode<mav::CommandAck>(f)) {
    ++counters_.acks[std::min<std::size_t>(ack->result, 7)];
    if (ack->result == mav::mav_result_accepted)
      logs.push_back({0, "autopilot: command " + std::to_string(ack->command) + " accepted"});
    else if (ack->result != mav_result_in_progress)
      logs.push_back({1, "autopilot: command " + std::to_string(ack->command) + " refused (result " +
                             std::to_string(ack->result) + ")"});
  } else if (auto pv = mav::decode<mav::ParamValue>(f)) {
    ++counters_.param_values;
    char value[32];
    std::snprintf(value, sizeof value, "%g", static_cast<double>(pv->param_value));
    logs.push_back({0, "autopilot: param " + printable_text(mav::text(pv->param_id)) + " = " + value});
  } else if (auto ss = mav::decode<mav::SysStatus>(f)) {
    ++counters_.sys_status;
    sys_status_ = *ss;
  }
}

std::optional<bool> MavlinkLink::armed() const { return have_heartbeat_ ? std::optional<bool>(armed_) : std::nullopt; }

std::optional<std::uint32_t> MavlinkLink::mode() const {
  return have_heartbeat_ ? std::optional<std::uint32_t>(mode_) : std::nullopt;
}

void MavlinkLink::summarize(nlohmann::json& out) const {
  const mav::DecoderCounters& d = decoder_.counters();
  nlohmann::json acks = nlohmann::json::object();
  for (std::size_t i = 0; i < counters_.acks.size(); ++i)
    if (counters_.acks[i] != 0) acks[ack_names[i]] = counters_.acks[i];
  nlohmann::json m = {
      {"address", config_.address()},
      {"connected", connected()},
      {"target", std::to_string(target_sysid_) + "/" + std::to_string(target_compid_)},
      {"armed", have_heartbeat_ ? nlohmann::json(armed_) : nlohmann::json()},
      {"mode", have_heartbeat_ ? nlohmann::json(mode_text(config_.vehicle, mode_)) : nlohmann::json()},
      {"heartbeats_sent", counters_.heartbeats_sent},
      {"heartbeats_received", counters_.heartbeats_received},
      {"statustexts", counters_.statustexts},
      {"param_values", counters_.param_values},
      {"commands_sent", counters_.commands_sent},
      {"acks", acks},
      {"bytes_sent", counters_.bytes_sent},
      {"bytes_received", counters_.bytes_received},
      {"bytes_dropped", counters_.bytes_dropped},
      {"send_errors", counters_.send_errors},
      {"links_lost", counters_.links_lost},
      {"reconnects", counters_.reconnects},
      {"arm_requests", arm_tries_},
      {"failure", failure_},
      {"decoder",
       {{"frames", d.frames},
        {"bad_crc", d.bad_crc},
        {"unknown_msgid", d.unknown_msgid},
        {"signed_frames", d.signed_frames},
        {"bad_flags", d.bad_flags},
        {"garbage_bytes", d.garbage_bytes},
        {"truncated", d.truncated}}},
  };
  if (counters_.sys_status != 0)
    m["sys_status"] = {{"voltage_battery_mv", sys_status_.voltage_battery},
                       {"load_permille", sys_status_.load},
                       {"sensors_health", sys_status_.onboard_control_sensors_health}};
  out["mavlink"] = std::move(m);
}

}  // namespace tether::adapters
