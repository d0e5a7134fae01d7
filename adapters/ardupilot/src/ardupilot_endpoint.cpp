// SPDX-License-Identifier: Apache-2.0
#include "tether/ardupilot/ardupilot_endpoint.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <string_view>
#include <stdexcept>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "tether/ardupilot/ardupilot_frames.hpp"
#include "tether/process/launch_check.hpp"
#include "tether/process/launched_program.hpp"
#include "tether/firmware_shim/payloads.h"
#include "tether/hal/device_bank.hpp"
#include "tether/scenario/endpoint_types.hpp"

namespace tether::adapters {

namespace ap = ardupilot;
using runtime::SteadyClock;
using runtime::Vec3;

namespace {

// `rangefinders: [{rng: 1, device: altimeter}, ...]`
void parse_rangefinders(const runtime::ConfigNode& list, const runtime::EndpointConfig& config,
                        const runtime::Scenario& scenario, std::vector<ArduPilotRangefinder>& out) {
  if (!list.is_sequence()) {
    list.error("expected a list of {rng: 1..6, device: NAME}, got " + runtime::describe_value(list.yaml()));
    return;
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    const runtime::ConfigNode r = list.at(i);
    if (!r.expect_map({"rng", "device"})) continue;
    const int rng = static_cast<int>(r.integer_or("rng", 1, 1, 6));
    for (const ArduPilotRangefinder& other : out)
      if (other.rng == rng) r["rng"].error("rng_" + std::to_string(rng) + " is given twice");
    if (!r.has("device")) {
      r.expected("device", "a range, sonar or altimeter device of the vehicle");
      continue;
    }
    const int d = find_vehicle_device(scenario, config.vehicle, r.string("device"));
    if (d < 0) {
      r["device"].error(d == -1 ? "no device \"" + r.string("device") + "\" on vehicle \"" + config.vehicle + "\""
                                : "\"" + r.string("device") + "\" is ambiguous: write the full name");
      continue;
    }
    const hal::DeviceSpec& spec = scenario.devices[static_cast<std::size_t>(d)];
    const auto kind = static_cast<std::uint8_t>(spec.kind);
    if (kind != TETHER_KIND_RANGE && kind != TETHER_KIND_SONAR && kind != TETHER_KIND_ALTIMETER) {
      r["device"].error("\"" + spec.name.full() + "\" is a " + tether_kind_name(kind) +
                        "; a rangefinder is a range, sonar or altimeter device");
      continue;
    }
    out.push_back(ArduPilotRangefinder{rng, static_cast<std::uint16_t>(d)});
  }
}

// `imu: NAME`: an imu device of the vehicle; -1 (an error recorded) when it is not one
int parse_imu(const runtime::ConfigNode& n, const runtime::EndpointConfig& config, const runtime::Scenario& scenario) {
  const std::string name = n.string("imu");
  const runtime::ConfigNode node = n["imu"];
  const int d = find_vehicle_device(scenario, config.vehicle, name);
  if (d < 0) {
    node.error(d == -1 ? "no device \"" + name + "\" on vehicle \"" + config.vehicle + "\""
                       : "\"" + name + "\" is ambiguous: write the full name");
    return -1;
  }
  const hal::DeviceSpec& spec = scenario.devices[static_cast<std::size_t>(d)];
  if (static_cast<std::uint8_t>(spec.kind) != TETHER_KIND_IMU) {
    node.error("\"" + spec.name.full() + "\" is a " + tether_kind_name(static_cast<std::uint8_t>(spec.kind)) +
               "; `imu` names an imu device");
    return -1;
  }
  return d;
}

}  // namespace

ArduPilotEndpointConfig parse_ardupilot_config(const runtime::EndpointConfig& config,
                                               const runtime::Scenario& scenario) {
  const runtime::ConfigNode& n = config.node;
  ArduPilotEndpointConfig out;
  runtime::expect_endpoint_keys(n, ardupilot_endpoint_keys);
  out.host = n.string_or("host", "127.0.0.1");
  in_addr addr{};
  if (::inet_pton(AF_INET, out.host.c_str(), &addr) != 1)
    n["host"].error("expected an IPv4 address, got \"" + out.host + "\"");
  const std::int64_t port = n.integer_or("port", 9002, 0, 65535);
  const std::int64_t instance = n.integer_or("instance", 0, 0, 1000);
  if (port == 0 && instance > 0) n["instance"].error("with port 0 (any free port) an instance has no meaning");
  if (port + 10 * instance > 65535)
    n["instance"].error("port " + std::to_string(port) + " + 10 * instance is past 65535");
  out.port = static_cast<std::uint16_t>(std::min<std::int64_t>(port + 10 * instance, 65535));
  out.instance = instance;
  if (n.has("launch")) out.launch = parse_program_launch(n["launch"], scenario_dir(scenario));
  out.wind_from_current = n.boolean_or("wind_from_current", false);
  if (n.has("rangefinders")) parse_rangefinders(n["rangefinders"], config, scenario, out.rangefinders);
  if (n.has("imu")) out.imu = parse_imu(n, config, scenario);
  out.home_m = n.vec3_or("home_m", Vec3(0, 0, 0));
  out.connect_timeout_ms = n.integer_or("connect_timeout_ms", 30'000, 1, 3'600'000);
  if (n.has("mavlink")) {
    out.mavlink = parse_mavlink_config(n["mavlink"], instance);
    if (out.mavlink->port == 0 && !out.launch)
      n["mavlink"]["address"].error(
          "port 0 (a free port) needs `launch:`, which hands it to the autopilot as {mavlink_port}");
  }

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
    const int d = find_vehicle_device(scenario, config.vehicle, m.actuator);
    if (d == -1) {
      where.error("no device \"" + m.actuator + "\" on vehicle \"" + config.vehicle + "\"");
      continue;
    }
    if (d == -2) {
      where.error("\"" + m.actuator + "\" is ambiguous: write the full name (vehicle.part.device)");
      continue;
    }
    const hal::DeviceSpec& spec = scenario.devices[static_cast<std::size_t>(d)];
    // one f32 command: thruster (fraction), dc_motor (V), fin and servo (rad); `scale` gives the unit
    if (!hal::kind_info(spec.kind).one_command) {
      std::string kinds;  // the kinds a channel drives, from the kind table
      for (const auto& e : hal::device_kinds().entries())
        if (hal::kind_info(e.factory).one_command) kinds += (kinds.empty() ? "" : ", ") + e.name;
      where.error("\"" + spec.name.full() + "\" is a " + hal::kind_info(spec.kind).name +
                  "; a channel drives an actuator of one command (" + kinds + ")");
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
  std::uint32_t candidate = 0;   // the last off-sequence count seen (believed if it comes again)
  bool have_candidate = false;
  const runtime::WorldModel* model = nullptr;
  Vec3 prev_velocity{0, 0, 0};  // S_k's, for the mean acceleration over the step
  std::int64_t prev_time_ns = 0;
  ap::ReplyBuffer reply;     // the latest reply made (publish), sent only to a frame that asks
  ap::ReplyBuffer answered;  // the reply that answered last_frame: a repeat of it gets these bytes again
  // a frame taken (or ArduPilot's first) not answered yet: the next publish answers it. One
  // reply per frame: ArduPilot reads one datagram per frame, and an unasked one would stay
  // queued and put it a frame behind for good
  bool owed = false;
  std::array<std::uint8_t, 512> datagram{};
  std::unique_ptr<LaunchedProgram> program;  // with `launch:`
  // link faults (docs/faults.md): replies out, servo packets in
  runtime::LinkShaper shape_out, shape_in;
  bool shaping_out = false, shaping_in = false;  // this step's plans do something
  struct Inbound {
    std::string bytes;
    sockaddr_in from;
  };
  std::deque<Inbound> inbox;  // let through after a frame was taken, or late (faults only)
  std::string program_end;    // how it ended, once stopped

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

// a TCP port nobody listens on now (bound, read, released): the autopilot binds it next
std::uint16_t free_tcp_port(const std::string& host) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  ::inet_pton(AF_INET, host.c_str(), &a.sin_addr);
  socklen_t len = sizeof a;
  const bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  if (fd >= 0) ::close(fd);
  if (!ok) throw std::runtime_error(std::string("no free TCP port on ") + host + ": " + std::strerror(errno));
  return ntohs(a.sin_port);
}

// the furthest a new frame may be ahead of the last one taken: ArduPilot skips one frame per
// reply that answered no frame of ours (a step that missed it); further is a damaged count
constexpr std::uint32_t max_frame_jump = 32;

bool same_address(const sockaddr_in& a, const sockaddr_in& b) {
  return a.sin_addr.s_addr == b.sin_addr.s_addr && a.sin_port == b.sin_port;
}

std::string describe(const sockaddr_in& a) {
  char text[INET_ADDRSTRLEN] = "?";
  ::inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
  return std::string(text) + ":" + std::to_string(ntohs(a.sin_port));
}

}  // namespace

std::vector<std::string> ArduPilotJsonEndpoint::launch_problems() const {
  if (!config_.launch) return {};
  return adapters::launch_problems(name(), config_.launch->command);
}

void ArduPilotJsonEndpoint::start(const runtime::WorldModel& model, const runtime::WorldState& initial) {
  Impl& s = *impl_;
  s.model = &model;
  if (config_.body < 0 || static_cast<std::size_t>(config_.body) >= initial.bodies.size())
    throw std::runtime_error("endpoint " + name() + ": no body for ArduPilot to fly");
  s.prev_velocity = runtime::linear_velocity(model, initial, config_.body);
  s.prev_time_ns = initial.time_ns;
  s.reply.size = 0;
  s.have_peer = false;
  bind_socket();
  // the port is bound before the program starts: its first packet is never refused
  if (config_.launch) launch_program();
  // SITL started directly sends no servo packet until a MAVLink client is connected
  if (mavlink_) {
    // ArduSub's depth zero is the pressure when it starts (it calibrates its barometer at
    // boot): the vehicle's depth below home now is what its zero means
    mavlink_->set_depth_datum(config_.home_m.z() -
                              initial.bodies[static_cast<std::size_t>(config_.body)].position_m.z());
    try {
      mavlink_->connect("endpoint " + name());
    } catch (const std::runtime_error&) {
      s.close();
      throw;
    }
  }
  await_first_packet();
}

void ArduPilotJsonEndpoint::bind_socket() {
  Impl& s = *impl_;
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
}

// `launch:`: the autopilot program, its output to the log
void ArduPilotJsonEndpoint::launch_program() {
  Impl& s = *impl_;
  LaunchSpec spec;
  spec.argv = config_.launch->command;
  replace_placeholder(spec.argv, "{port}", std::to_string(bound_port()));
  replace_placeholder(spec.argv, "{instance}", std::to_string(config_.instance));
  // `mavlink.address` with port 0: a free port now, which the program is told to serve
  if (config_.mavlink && config_.mavlink->port == 0) {
    config_.mavlink->port = free_tcp_port(config_.mavlink->host);
    mavlink_ = std::make_unique<MavlinkLink>(*config_.mavlink);
  }
  replace_placeholder(spec.argv, "{mavlink_port}",
                      std::to_string(config_.mavlink ? config_.mavlink->port : 5760 + 10 * config_.instance));
  spec.env = config_.launch->env;
  spec.cwd = config_.launch->cwd;
  try {
    s.program = std::make_unique<LaunchedProgram>(spec, name());
  } catch (const std::exception& e) {
    s.close();
    throw std::runtime_error("endpoint " + name() + ": launch: " + e.what());
  }
  spdlog::info("endpoint \"{}\": launched {} (pid {})", name(), s.program->command_line(), s.program->child().pid());
}

// ArduPilot sends first: its first servo packet names the address to answer. A launched
// program that ends before is reported at once, with its last output.
void ArduPilotJsonEndpoint::await_first_packet() {
  Impl& s = *impl_;
  const auto deadline = SteadyClock::now() + std::chrono::milliseconds(config_.connect_timeout_ms);
  while (SteadyClock::now() < deadline) {
    if (s.program && s.program->exited()) {
      s.close();
      throw std::runtime_error("endpoint " + name() + ": the autopilot program " + s.program->command_line() + " " +
                               s.program->describe_end() +
                               " before its first servo packet; its last output:" + s.program->tail_text());
    }
    sockaddr_in from{};
    const auto slice = std::min(deadline, SteadyClock::now() + std::chrono::milliseconds(100));
    const ssize_t n = receive_until(s.fd, s.datagram.data(), s.datagram.size(), from, slice);
    if (n < 0) continue;
    ap::ServoPacket p;
    const ap::ServoReject r = ap::parse_servo_packet(s.datagram.data(), static_cast<std::size_t>(n), p);
    link_.packets.count(r);
    if (r != ap::ServoReject::none) continue;
    s.peer = from;
    s.have_peer = true;
    s.last_frame = p.frame_count;
    s.owed = true;
    link_.frame_rate_hz = p.frame_rate_hz;
    return;
  }
  const std::uint16_t port = bound_port();
  s.close();
  throw std::runtime_error(
      "endpoint " + name() + ": no servo packet from ArduPilot on UDP " + config_.host + ":" + std::to_string(port) +
      " within " + std::to_string(config_.connect_timeout_ms) + " ms" +
      (s.program
           ? " from " + s.program->command_line() + "; its last output:" + s.program->tail_text()
           : " (start it with --model JSON:" + config_.host +
                 (port > 9002 && (port - 9002) % 10 == 0 ? " -I " + std::to_string((port - 9002) / 10) : "") + ")"));
}

std::uint16_t ArduPilotJsonEndpoint::bound_port() const {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  if (impl_->fd < 0 || ::getsockname(impl_->fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return 0;
  return ntohs(a.sin_port);
}

void ArduPilotJsonEndpoint::send_bytes(std::string_view bytes) {
  Impl& s = *impl_;
  if (!s.have_peer || s.fd < 0) return;
  const ssize_t n =
      ::sendto(s.fd, bytes.data(), bytes.size(), 0, reinterpret_cast<const sockaddr*>(&s.peer), sizeof s.peer);
  if (n == static_cast<ssize_t>(bytes.size()))
    ++link_.replies_sent;
  else
    ++link_.send_errors;  // ArduPilot sends its frame again after a second without a reply
}

// answers the frame owed with the latest reply, which is kept as that frame's answer
void ArduPilotJsonEndpoint::answer() {
  Impl& s = *impl_;
  if (!s.owed || s.reply.size == 0) return;
  s.owed = false;
  s.answered.size = s.reply.size;
  std::memcpy(s.answered.bytes.data(), s.reply.bytes.data(), s.reply.size);
  send_reply(s.answered);
}

void ArduPilotJsonEndpoint::send_reply(const ardupilot::ReplyBuffer& reply) {
  Impl& s = *impl_;
  if (reply.size == 0) return;
  const std::string_view bytes(reinterpret_cast<const char*>(reply.bytes.data()), reply.size);
  if (!s.shaping_out && s.shape_out.holding() == 0)
    send_bytes(bytes);
  else
    s.shape_out.pass(bytes, [&](std::string_view b) { send_bytes(b); });
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
  add_optional_fields(r);
  const ap::EncodeError e = ap::encode_reply(r, s.reply);
  if (e != ap::EncodeError::none) {
    fault_message_ = std::string("the state at step ") + std::to_string(ctx.step) +
                     " cannot be sent to ArduPilot: " + ap::to_string(e) + " value";
    return false;
  }
  if (mavlink_) mavlink_->step(ctx.time_ns);  // heartbeat and due commands before the frame advances
  answer();  // nothing when the frame was answered already (a missed step): no unasked reply
  return true;
}

// rng_N from the mapped devices' current readings, the current as velocity_wind
void ArduPilotJsonEndpoint::add_optional_fields(ap::ReplyState& r) const {
  if (devices_ != nullptr) {
    for (const ArduPilotRangefinder& f : config_.rangefinders) {
      const hal::Sample& sample = devices_->sample(f.device);
      if (!sample.valid) continue;
      r.rng_m[static_cast<std::size_t>(f.rng - 1)] = sample.ch[0];
      r.rng_present = static_cast<std::uint8_t>(r.rng_present | (1u << (f.rng - 1)));
    }
  }
  // the imu device's reading (its noise, bias, faults; its device frame taken as the body's)
  if (devices_ != nullptr && config_.imu >= 0) {
    const hal::Sample& sample = devices_->sample(static_cast<std::size_t>(config_.imu));
    if (sample.valid) {
      r.gyro_rad_s = ap::frd_from_flu(Vec3(sample.ch[0], sample.ch[1], sample.ch[2]));
      r.accel_body_m_s2 = ap::frd_from_flu(Vec3(sample.ch[3], sample.ch[4], sample.ch[5]));
    }
  }
  if (config_.wind_from_current) {
    r.has_wind = true;
    r.velocity_wind_m_s = ap::ned_from_enu(impl_->model->water.current_m_s);
  }
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

// one datagram from ArduPilot (after the link faults): true when it is a new frame, whose
// servo outputs are then this step's commands
bool ArduPilotJsonEndpoint::take_datagram(std::string_view bytes, const sockaddr_in& from,
                                          const runtime::StepContext& ctx, runtime::Reply& reply) {
  Impl& s = *impl_;
  ap::ServoPacket p;
  const ap::ServoReject r =
      ap::parse_servo_packet(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(), p);
  link_.packets.count(r);
  link_counts_.corrupt = link_.packets.rejected_total();
  if (r != ap::ServoReject::none) return false;
  link_.frame_rate_hz = p.frame_rate_hz;
  // ArduPilot moves on one frame per reply it reads, and it reads every reply we send (also
  // one sent on a step whose frame never came, a miss): from its address a count a little
  // ahead (up to max_frame_jump) is its next frame, the same count again is a repeat, 0 is a
  // restart. Any other count (behind, or far ahead) is a packet late, duplicated or damaged
  // on the way, unless ArduPilot insists on it: the same such count twice in a row is
  // believed (ours was the wrong one)
  const std::uint32_t ahead = p.frame_count - s.last_frame;  // modulo 2^32
  const bool same_peer = s.have_peer && same_address(from, s.peer);
  const auto stale = [&] { link_counts_.stale = link_.repeats + link_.off_sequence + link_.foreign_packets; };
  if (same_peer && ahead == 0) {
    // our reply was lost or late: ArduPilot asks again; the same bytes again, no step (if it
    // is not answered yet, the next publish answers it)
    ++link_.repeats;
    stale();
    if (!s.owed) send_reply(s.answered);
    return false;
  }
  if (p.frame_count == 0 && !(same_peer && ahead == 1)) {
    // ArduPilot restarted (at 0, on its port or a new one): follow it, give it the state
    ++link_.restarts;
    s.peer = from;
    s.have_peer = true;
    s.last_frame = 0;
    s.have_candidate = false;
    s.owed = true;
    answer();
    return false;
  }
  if (!same_peer) {
    ++link_.foreign_packets;  // a stranger, or an ArduPilot we did not see start: not followed
    stale();
    return false;
  }
  if (ahead > max_frame_jump) {
    if (!s.have_candidate || s.candidate != p.frame_count) {
      s.candidate = p.frame_count;
      s.have_candidate = true;
      ++link_.off_sequence;
      stale();
      return false;
    }
    ++link_.resyncs;  // ArduPilot sent it twice: its count is the one to follow
  } else {
    link_.skipped_frames += ahead - 1;  // frames whose replies were the misses' (or lost)
  }
  s.have_candidate = false;
  ++link_.frames;
  s.last_frame = p.frame_count;
  s.owed = true;
  reply.clear();
  reply.step = ctx.step;
  fill_commands(p, reply);
  // the frame and the reply ArduPilot read before it (the state it flew this frame on)
  reply.add_wire(false, bytes);
  reply.add_wire(true, std::string_view(reinterpret_cast<const char*>(s.answered.bytes.data()), s.answered.size));
  if (mavlink_) mavlink_->receive(reply.logs);
  return true;
}

runtime::GatherStatus ArduPilotJsonEndpoint::gather(const runtime::StepContext& ctx, SteadyClock::time_point deadline,
                                                    runtime::Reply& reply) {
  Impl& s = *impl_;
  if (s.fd < 0) {
    fault_message_ = "the endpoint's socket is closed";
    return runtime::GatherStatus::fault;
  }
  const auto program_ended = [&] {
    if (!s.program || !s.program->exited()) return false;
    fault_message_ = "the autopilot program " + s.program->describe_end() + " at step " + std::to_string(ctx.step) +
                     "; its last output:" + s.program->tail_text();
    return true;
  };
  if (program_ended()) return runtime::GatherStatus::fault;
  if (mavlink_ && !mavlink_->failure().empty()) {
    fault_message_ = "the ground station gave up at step " + std::to_string(ctx.step) + ": " + mavlink_->failure();
    return runtime::GatherStatus::fault;
  }
  // what the link faults let through late (delayed, or behind a frame already taken) first
  while (!s.inbox.empty()) {
    Impl::Inbound m = std::move(s.inbox.front());
    s.inbox.pop_front();
    if (take_datagram(m.bytes, m.from, ctx, reply)) return runtime::GatherStatus::ready;
  }
  for (;;) {
    sockaddr_in from{};
    // a launched program is looked at every 100 ms of the wait: its end is a fault at once
    const auto until = s.program ? std::min(deadline, SteadyClock::now() + std::chrono::milliseconds(100)) : deadline;
    const ssize_t n = receive_until(s.fd, s.datagram.data(), s.datagram.size(), from, until);
    if (n < 0) {
      if (program_ended()) return runtime::GatherStatus::fault;
      if (SteadyClock::now() < deadline) continue;
      break;
    }
    const std::string_view bytes(reinterpret_cast<const char*>(s.datagram.data()),
                                 std::min(static_cast<std::size_t>(n), s.datagram.size()));
    if (!s.shaping_in && s.shape_in.holding() == 0) {
      if (take_datagram(bytes, from, ctx, reply)) return runtime::GatherStatus::ready;
      continue;
    }
    bool taken = false;
    s.shape_in.pass(bytes, [&](std::string_view b) {
      if (taken)
        s.inbox.push_back(Impl::Inbound{std::string(b), from});
      else
        taken = take_datagram(b, from, ctx, reply);
    });
    if (taken) return runtime::GatherStatus::ready;
  }
  return runtime::GatherStatus::timeout;
}

void ArduPilotJsonEndpoint::set_link_faults(const runtime::LinkFaults& faults) {
  Impl& s = *impl_;
  s.shaping_out = faults.out.any();
  s.shaping_in = faults.in.any();
  // what a delay held back crosses now: replies to ArduPilot, packets into the inbox
  s.shape_out.begin_step(faults.step, faults.seed, faults.out, [&](std::string_view b) { send_bytes(b); });
  s.shape_in.begin_step(faults.step, ~faults.seed, faults.in, [&](std::string_view b) {
    s.inbox.push_back(Impl::Inbound{std::string(b), s.peer});
  });
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
  Impl& s = *impl_;
  s.close();
  if (s.program && s.program_end.empty()) {
    const int st = s.program->stop(std::chrono::milliseconds(config_.launch->kill_after_ms));
    s.program_end = ChildProcess::describe_status(st);
    spdlog::info("endpoint \"{}\": autopilot program {}", name(), s.program_end);
  }
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
      {"off_sequence", link_.off_sequence},
      {"resyncs", link_.resyncs},
      {"foreign_packets", link_.foreign_packets},
      {"skipped_frames", link_.skipped_frames},
      {"replies_sent", link_.replies_sent},
      {"send_errors", link_.send_errors},
      {"frame_rate_hz", link_.frame_rate_hz},
      {"packets", packets},
  };
  if (auto lf = runtime::link_fault_summary(impl_->shape_out, impl_->shape_in); !lf.is_null())
    out["ardupilot"]["link_faults"] = lf;
  if (impl_->program)
    out["ardupilot"]["program"] = {{"command", impl_->program->command_line()}, {"ended", impl_->program_end}};
  if (mavlink_) mavlink_->summarize(out);
}

}  // namespace tether::adapters
