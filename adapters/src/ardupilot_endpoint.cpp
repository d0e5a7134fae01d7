// SPDX-License-Identifier: Apache-2.0
#include "tether/adapters/ardupilot_endpoint.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "tether/adapters/ardupilot_frames.hpp"
#include "tether/firmware_shim/payloads.h"

namespace tether::adapters {

namespace ap = ardupilot;
using runtime::SteadyClock;
using runtime::Vec3;

namespace {

// an actuator of the vehicle by its full name or a unique tail ("thruster", "hull.thruster");
// -1 when there is none (an error is recorded), -2 when it is ambiguous
int find_actuator(const runtime::Scenario& scenario, const std::string& vehicle, const std::string& name) {
  int found = -1;
  for (std::size_t i = 0; i < scenario.devices.size(); ++i) {
    const hal::DeviceSpec& d = scenario.devices[i];
    if (d.name.vehicle != vehicle) continue;
    const std::string full = d.name.full();
    if (full == name) return static_cast<int>(i);
    const bool tail = full.size() > name.size() && full.compare(full.size() - name.size(), name.size(), name) == 0 &&
                      full[full.size() - name.size() - 1] == '.';
    if (tail) found = found == -1 ? static_cast<int>(i) : -2;
  }
  return found;
}

}  // namespace

ArduPilotEndpointConfig parse_ardupilot_config(const runtime::EndpointConfig& config,
                                               const runtime::Scenario& scenario) {
  const runtime::ConfigNode& n = config.node;
  ArduPilotEndpointConfig out;
  n.expect_map({"name", "type", "vehicle", "deadline_ms", "timeout_policy", "host", "port", "instance", "body",
                "home_m", "connect_timeout_ms", "channels", "mavlink"});
  out.host = n.string_or("host", "127.0.0.1");
  in_addr addr{};
  if (::inet_pton(AF_INET, out.host.c_str(), &addr) != 1) n["host"].error("expected an IPv4 address, got \"" + out.host + "\"");
  const std::int64_t port = n.integer_or("port", 9002, 0, 65535);
  const std::int64_t instance = n.integer_or("instance", 0, 0, 1000);
  if (port == 0 && instance > 0) n["instance"].error("with port 0 (any free port) an instance has no meaning");
  if (port + 10 * instance > 65535) n["instance"].error("port " + std::to_string(port) + " + 10 * instance is past 65535");
  out.port = static_cast<std::uint16_t>(std::min<std::int64_t>(port + 10 * instance, 65535));
  out.home_m = n.vec3_or("home_m", Vec3(0, 0, 0));
  out.connect_timeout_ms = n.integer_or("connect_timeout_ms", 30'000, 1, 3'600'000);
  if (n.has("mavlink")) out.mavlink = parse_mavlink_config(n["mavlink"], instance);

  // the body ArduPilot flies: `body` (its part name or full name), else the vehicle's first
  if (config.vehicle_index < 0) {
    n.error("an ardupilot_json endpoint needs `vehicle`: the vehicle ArduPilot flies");
  } else {
    const runtime::VehicleModel& v = scenario.model.vehicles[static_cast<std::size_t>(config.vehicle_index)];
    if (n.has("body")) {
      const std::string b = n.string("body");
      int index = scenario.model.find_body(b);
      if (index < 0) index = scenario.model.find_body(v.name + "." + b);
      if (index < 0 || scenario.model.bodies[static_cast<std::size_t>(index)].vehicle != config.vehicle_index)
        n["body"].error("no body \"" + b + "\" in vehicle \"" + v.name + "\"");
      else
        out.body = index;
    } else if (!v.bodies.empty()) {
      out.body = v.bodies.front();
    }
  }

  if (!n.has("channels")) n.expected("channels", "a list of servo channels mapped to actuators");
  const std::vector<ap::ChannelMap> maps = ap::parse_channel_maps(n["channels"]);
  for (std::size_t i = 0; i < maps.size(); ++i) {
    const ap::ChannelMap& m = maps[i];
    if (m.actuator.empty() || config.vehicle_index < 0) continue;
    const runtime::ConfigNode where = n["channels"].at(i)["actuator"];
    const int d = find_actuator(scenario, config.vehicle, m.actuator);
    if (d == -1) {
      where.error("no device \"" + m.actuator + "\" on vehicle \"" + config.vehicle + "\"");
      continue;
    }
    if (d == -2) {
      where.error("\"" + m.actuator + "\" is ambiguous: write the full name (vehicle.part.device)");
      continue;
    }
    const hal::DeviceSpec& spec = scenario.devices[static_cast<std::size_t>(d)];
    const auto kind = static_cast<std::uint8_t>(spec.kind);
    // one f32 command: thruster (fraction), dc_motor (V), fin and servo (rad); `scale` gives the unit
    if (kind != TETHER_KIND_THRUSTER && kind != TETHER_KIND_DC_MOTOR && kind != TETHER_KIND_FIN &&
        kind != TETHER_KIND_SERVO) {
      where.error("\"" + spec.name.full() + "\" is a " + tether_kind_name(kind) +
                  "; a channel drives a thruster, dc_motor, fin or servo");
      continue;
    }
    out.channels.push_back(ArduPilotChannel{m, static_cast<std::uint16_t>(d)});
  }
  return out;
}

// ---- the endpoint ----------------------------------------------------------------------------

struct ArduPilotJsonEndpoint::Impl {
  int fd = -1;
  sockaddr_in peer{};
  bool have_peer = false;
  std::uint32_t last_frame = 0;  // the frame answered last (publish replies to it)
  const runtime::WorldModel* model = nullptr;
  Vec3 prev_velocity{0, 0, 0};  // S_k's, for the mean acceleration over the step
  std::int64_t prev_time_ns = 0;
  ap::ReplyBuffer reply;  // the latest reply, sent again on a repeated frame
  std::array<std::uint8_t, 512> datagram{};

  void close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

ArduPilotJsonEndpoint::ArduPilotJsonEndpoint(const runtime::EndpointConfig& config, const runtime::Scenario& scenario)
    : ArduPilotJsonEndpoint(config, parse_ardupilot_config(config, scenario)) {}

ArduPilotJsonEndpoint::ArduPilotJsonEndpoint(const runtime::EndpointConfig& config, ArduPilotEndpointConfig ap)
    : Endpoint(config), config_(std::move(ap)), impl_(std::make_unique<Impl>()) {
  if (config_.mavlink) mavlink_ = std::make_unique<MavlinkLink>(*config_.mavlink);
}

ArduPilotJsonEndpoint::~ArduPilotJsonEndpoint() { stop(); }

namespace {

// one datagram if one comes before `deadline`: its size (MSG_TRUNC: the real size even when
// longer than the buffer), or -1
ssize_t receive_until(int fd, std::uint8_t* buf, std::size_t cap, sockaddr_in& from, SteadyClock::time_point deadline) {
  for (;;) {
    const auto left = deadline - SteadyClock::now();
    if (left <= SteadyClock::duration::zero()) return -1;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    pollfd p{fd, POLLIN, 0};
    const int ready = ::ppoll(&p, 1, &ts, nullptr);
    if (ready < 0 && errno != EINTR) return -1;
    if (ready <= 0) continue;
    socklen_t len = sizeof from;
    const ssize_t n = ::recvfrom(fd, buf, cap, MSG_DONTWAIT | MSG_TRUNC, reinterpret_cast<sockaddr*>(&from), &len);
    if (n >= 0) return n;
  }
}

bool same_address(const sockaddr_in& a, const sockaddr_in& b) {
  return a.sin_addr.s_addr == b.sin_addr.s_addr && a.sin_port == b.sin_port;
}

std::string describe(const sockaddr_in& a) {
  char text[INET_ADDRSTRLEN] = "?";
  ::inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
  return std::string(text) + ":" + std::to_string(ntohs(a.sin_port));
}

}  // namespace

void ArduPilotJsonEndpoint::start(const runtime::WorldModel& model, const runtime::WorldState& initial) {
  Impl& s = *impl_;
  s.model = &model;
  if (config_.body < 0 || static_cast<std::size_t>(config_.body) >= initial.bodies.size())
    throw std::runtime_error("endpoint " + name() + ": no body for ArduPilot to fly");
  s.prev_velocity = runtime::linear_velocity(model, initial, config_.body);
  s.prev_time_ns = initial.time_ns;
  s.reply.size = 0;
  s.have_peer = false;

  s.close();
  s.fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s.fd < 0) throw std::runtime_error("endpoint " + name() + ": socket: " + std::strerror(errno));
  const int on = 1;
  ::setsockopt(s.fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in local{};
  local.sin_family = AF_INET;
  local.sin_port = htons(config_.port);
  ::inet_pton(AF_INET, config_.host.c_str(), &local.sin_addr);
  if (::bind(s.fd, reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0) {
    const std::string why = std::strerror(errno);
    s.close();
    throw std::runtime_error("endpoint " + name() + ": cannot bind UDP " + config_.host + ":" +
                             std::to_string(config_.port) + ": " + why);
  }

  // SITL started directly sends no servo packet until a MAVLink client is connected
  if (mavlink_) {
    try {
      mavlink_->connect("endpoint " + name());
    } catch (const std::runtime_error&) {
      s.close();
      throw;
    }
  }
  // ArduPilot sends first: its first servo packet names the address to answer
  const auto deadline = SteadyClock::now() + std::chrono::milliseconds(config_.connect_timeout_ms);
  for (;;) {
    sockaddr_in from{};
    const ssize_t n = receive_until(s.fd, s.datagram.data(), s.datagram.size(), from, deadline);
    if (n < 0) break;
    ap::ServoPacket p;
    const ap::ServoReject r = ap::parse_servo_packet(s.datagram.data(), static_cast<std::size_t>(n), p);
    link_.packets.count(r);
    if (r != ap::ServoReject::none) continue;
    s.peer = from;
    s.have_peer = true;
    s.last_frame = p.frame_count;
    link_.frame_rate_hz = p.frame_rate_hz;
    return;
  }
  const std::uint16_t port = bound_port();
  s.close();
  throw std::runtime_error("endpoint " + name() + ": no servo packet from ArduPilot on UDP " + config_.host + ":" +
                           std::to_string(port) + " within " + std::to_string(config_.connect_timeout_ms) +
                           " ms (start it with --model JSON:" + config_.host +
                           (port > 9002 && (port - 9002) % 10 == 0 ? " -I " + std::to_string((port - 9002) / 10) : "") +
                           ")");
}

std::uint16_t ArduPilotJsonEndpoint::bound_port() const {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  if (impl_->fd < 0 || ::getsockname(impl_->fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return 0;
  return ntohs(a.sin_port);
}

void ArduPilotJsonEndpoint::send_reply() {
  Impl& s = *impl_;
  if (!s.have_peer || s.reply.size == 0 || s.fd < 0) return;
  const ssize_t n = ::sendto(s.fd, s.reply.bytes.data(), s.reply.size, 0, reinterpret_cast<const sockaddr*>(&s.peer),
                             sizeof s.peer);
  if (n == static_cast<ssize_t>(s.reply.size))
    ++link_.replies_sent;
  else
    ++link_.send_errors;  // ArduPilot sends its frame again after a second without a reply
}

bool ArduPilotJsonEndpoint::publish(const runtime::StepContext& ctx, const runtime::WorldState& projected) {
  Impl& s = *impl_;
  const runtime::BodyState& b = projected.bodies[static_cast<std::size_t>(config_.body)];
  ap::TetherKinematics k;
  k.time_ns = projected.time_ns;
  k.position_m = b.position_m;
  k.orientation = b.orientation;
  k.velocity_m_s = runtime::linear_velocity(*s.model, projected, config_.body);
  k.angular_velocity_rad_s = runtime::angular_velocity(*s.model, projected, config_.body);
  const std::int64_t dt_ns = projected.time_ns - s.prev_time_ns;
  if (dt_ns > 0) k.acceleration_m_s2 = (k.velocity_m_s - s.prev_velocity) / (static_cast<double>(dt_ns) * 1e-9);
  ap::ReplyState r;
  ap::to_ardupilot(k, s.model->gravity_m_s2, config_.home_m, r);
  const ap::EncodeError e = ap::encode_reply(r, s.reply);
  if (e != ap::EncodeError::none) {
    fault_message_ = std::string("the state at step ") + std::to_string(ctx.step) +
                     " cannot be sent to ArduPilot: " + ap::to_string(e) + " value";
    return false;
  }
  if (mavlink_) mavlink_->step(ctx.time_ns);  // heartbeat and due commands before the frame advances
  send_reply();
  return true;
}

void ArduPilotJsonEndpoint::fill_commands(const ap::ServoPacket& packet, runtime::Reply& reply) const {
  for (const ArduPilotChannel& c : config_.channels) {
    const auto channel = static_cast<std::size_t>(c.map.channel - 1);
    const std::uint16_t pwm = channel < packet.channels ? packet.pwm_us[channel] : 0;
    runtime::DeviceCommand cmd;
    cmd.device = c.device;
    cmd.size = 4;
    tether_put_f32le(cmd.bytes.data(), static_cast<float>(ap::command_from_pwm(c.map, pwm) * c.map.scale));
    reply.commands.push_back(cmd);
  }
}

runtime::GatherStatus ArduPilotJsonEndpoint::gather(const runtime::StepContext& ctx, SteadyClock::time_point deadline,
                                                    runtime::Reply& reply) {
  Impl& s = *impl_;
  if (s.fd < 0) {
    fault_message_ = "the endpoint's socket is closed";
    return runtime::GatherStatus::fault;
  }
  for (;;) {
    sockaddr_in from{};
    const ssize_t n = receive_until(s.fd, s.datagram.data(), s.datagram.size(), from, deadline);
    if (n < 0) break;
    ap::ServoPacket p;
    const ap::ServoReject r = ap::parse_servo_packet(s.datagram.data(), static_cast<std::size_t>(n), p);
    link_.packets.count(r);
    counters.corrupt = link_.packets.rejected_total();
    if (r != ap::ServoReject::none) continue;
    link_.frame_rate_hz = p.frame_rate_hz;
    // frame counts compared modulo 2^32: 0 is a repeat, 1..2^31-1 forward, the rest backward
    const std::uint32_t ahead = p.frame_count - s.last_frame;
    const bool same_peer = s.have_peer && same_address(from, s.peer);
    if (same_peer && ahead == 0) {
      // our reply was lost or late: ArduPilot asks again; answer again, do not step
      ++link_.repeats;
      counters.stale = link_.repeats;
      send_reply();
      continue;
    }
    if (!same_peer || ahead >= 0x8000'0000u) {
      // ArduPilot restarted (a lower count, or a new port): follow it, give it the state
      ++link_.restarts;
      s.peer = from;
      s.have_peer = true;
      s.last_frame = p.frame_count;
      send_reply();
      continue;
    }
    link_.skipped_frames += ahead - 1;
    ++link_.frames;
    s.last_frame = p.frame_count;
    reply.clear();
    reply.step = ctx.step;
    fill_commands(p, reply);
    if (mavlink_) mavlink_->receive(reply.logs);
    return runtime::GatherStatus::ready;
  }
  return runtime::GatherStatus::timeout;
}

void ArduPilotJsonEndpoint::emit(const runtime::StepContext& ctx, const runtime::WorldState& actual) {
  (void)ctx;
  Impl& s = *impl_;
  s.prev_velocity = runtime::linear_velocity(*s.model, actual, config_.body);
  s.prev_time_ns = actual.time_ns;
}

void ArduPilotJsonEndpoint::safe_reply(runtime::Reply& reply) const {
  reply.clear();
  ap::ServoPacket stop;  // every channel 0: "no output", the stop command
  fill_commands(stop, reply);
}

bool ArduPilotJsonEndpoint::operator_command(std::string_view verb, const nlohmann::json& arguments, bool apply,
                                             std::string* why) {
  if (!mavlink_) {
    if (why) *why = "endpoint \"" + name() + "\" has no mavlink: section (no link to the autopilot)";
    return false;
  }
  std::vector<MavlinkAction> actions;
  if (!operator_actions(verb, arguments, mavlink_->config().vehicle, actions, why)) return false;
  if (!apply) return true;
  for (const MavlinkAction& a : actions)
    if (!mavlink_->queue(a, why)) return false;
  return true;
}

void ArduPilotJsonEndpoint::stop() {
  impl_->close();
  if (mavlink_) mavlink_->close();
}

void ArduPilotJsonEndpoint::summarize(nlohmann::json& out) const {
  nlohmann::json packets = {{"accepted", link_.packets.accepted}};
  for (std::size_t i = 1; i < ap::servo_reject_kinds; ++i)
    packets[ap::to_string(static_cast<ap::ServoReject>(i))] = link_.packets.rejected[i];
  out["ardupilot"] = {
      {"address", config_.host + ":" + std::to_string(config_.port)},
      {"peer", impl_->have_peer ? describe(impl_->peer) : std::string()},
      {"frames", link_.frames},
      {"repeats", link_.repeats},
      {"restarts", link_.restarts},
      {"skipped_frames", link_.skipped_frames},
      {"replies_sent", link_.replies_sent},
      {"send_errors", link_.send_errors},
      {"frame_rate_hz", link_.frame_rate_hz},
      {"packets", packets},
  };
  if (mavlink_) mavlink_->summarize(out);
}

}  // namespace tether::adapters
