// SPDX-License-Identifier: Apache-2.0
// ArduPilot in the loop through its JSON physics interface (docs/ardupilot.md): `type:
// ardupilot_json`. The endpoint is the physics side: it binds a UDP port (127.0.0.1:9002,
// + 10 per `instance`), ArduPilot (SITL with --model JSON, or a board simulating on
// hardware) sends servo packets to it, and it answers the sender with one JSON line.
//
//   start()    bind; launch the autopilot (`launch:`); wait for ArduPilot's first servo
//              packet (connect_timeout_ms)
//   publish    the reply for S'_{k+1} (the projected state), sent only if ArduPilot's latest
//              frame is not answered yet: one reply per frame, none unasked (after a
//              missed step the frame was answered already)
//   gather     wait for the next frame (frame_count + 1): its servo outputs, through the
//              channel map, are this step's actuator commands. The same frame again is
//              answered with the bytes that answered it before (no step); frame 0 again is ArduPilot
//              restarted (followed to its new port); any other count is ignored unless
//              it comes twice in a row (then believed); other senders are ignored
//   emit       keeps S_{k+1}'s velocity: the next reply's accelerometer is the mean
//              acceleration over the step
//
// With a `mavlink:` section the endpoint is also ArduPilot's ground station (mavlink_link.hpp):
// start() connects the MAVLink link before it waits for the first servo packet (a directly
// started SITL sends none until a client is on TCP 5760); publish sends the heartbeat and the
// script's commands due at t_k; gather, once the frame is taken, turns what ArduPilot said
// (armed, mode, STATUSTEXT, refused commands) into the reply's log lines, which the recording
// keeps and `replay --verify` reproduces. Each step's reply carries the servo packet taken and
// the JSON reply sent before it as wire frames (Reply::wire): recorded with the step.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tether/ardupilot/ardupilot_channels.hpp"
#include "tether/ardupilot/ardupilot_json.hpp"
#include "tether/process/config_text.hpp"
#include "tether/mavlink/mavlink_link.hpp"
#include "tether/loop/endpoint.hpp"
#include "tether/scenario/scenario.hpp"

struct sockaddr_in;

namespace tether::adapters {

/// One mapped channel with its actuator resolved.
/// An ardupilot_json endpoint entry's own keys, beside runtime::endpoint_common_keys
/// (docs/ardupilot.md).
inline constexpr const char* ardupilot_endpoint_keys[] = {
    "host",   "port",         "instance",          "body", "home_m", "connect_timeout_ms", "channels",
    "launch", "rangefinders", "wind_from_current", "imu",  "mavlink"};

struct ArduPilotChannel {
  ardupilot::ChannelMap map;
  std::uint16_t device = 0;  // index into the scenario's devices
};

/// `rangefinders:` one of ArduPilot's rng_1..rng_6 fed from a range, sonar or altimeter
/// device of the vehicle (its reading after noise and faults; no data: the key is left out).
struct ArduPilotRangefinder {
  int rng = 1;               // 1..6: `rng_N`, read by ArduPilot's RNGFNDx_TYPE 100
  std::uint16_t device = 0;  // index into the scenario's devices
};

/// A `type: ardupilot_json` endpoint's own keys.
struct ArduPilotEndpointConfig {
  std::string host = "127.0.0.1";            // the address the endpoint binds
  std::uint16_t port = 9002;                 // `port` (default 9002) + 10 * `instance`; 0: any free port
  int body = -1;                             // the vehicle's body ArduPilot flies (`body`, default its first)
  runtime::Vec3 home_m{0, 0, 0};             // `home_m`: world ENU point ArduPilot's position counts from
  std::int64_t connect_timeout_ms = 30'000;  // start() waits this long for the first packet
  std::vector<ArduPilotChannel> channels;
  std::vector<ArduPilotRangefinder> rangefinders;
  int imu = -1;  // `imu`: an imu device of the vehicle whose reading (noise, faults) is the reply's imu; -1: the body's
                 // motion
  bool wind_from_current = false;  // `wind_from_current`: the water current as `velocity_wind` (NED)
  std::int64_t instance = 0;       // ArduPilot's -I: its ports are 9002 and 5760, + 10 * instance
  /// `launch:` the autopilot program (SITL, the stand-in), started once the port is bound;
  /// in its command {port} is the bound UDP port, {instance} the instance and
  /// {mavlink_port} 5760 + 10 * instance. Without it ArduPilot is started by hand (or is a board).
  std::optional<ProgramLaunchConfig> launch;
  std::optional<MavlinkLinkConfig> mavlink;  // `mavlink:`: Tether as ArduPilot's ground station
};

/// Reads a `type: ardupilot_json` endpoint's keys; records positioned errors in the
/// scenario's context (the caller throws).
ArduPilotEndpointConfig parse_ardupilot_config(const runtime::EndpointConfig& config,
                                               const runtime::Scenario& scenario);

/// The recording's views of the link's wire frames (adapters/ardupilot/src/ardupilot_wire.cpp):
/// `servo` (the packet: frame count, rate, every pulse width), `servo/chN` per mapped channel
/// (pulse width, the command it became, the actuator) and `reply` (the JSON sent).
std::vector<runtime::WireTopic> ardupilot_wire_topics(const ArduPilotEndpointConfig& config);

/// What happened on the link, for the summary.
struct ArduPilotCounters {
  std::uint64_t frames = 0;          // new frames taken as a step's commands
  std::uint64_t repeats = 0;         // the same frame again, answered with the same reply
  std::uint64_t restarts = 0;        // frame_count 0 again (from its port or a new one): ArduPilot restarted
  std::uint64_t skipped_frames = 0;  // frames jumped over by a believed jump (count - expected)
  std::uint64_t off_sequence = 0;    // from ArduPilot, neither next, repeat nor 0: late, duplicated or damaged; ignored
  std::uint64_t resyncs = 0;         // an off-sequence count sent twice in a row: believed and followed
  std::uint64_t foreign_packets = 0;  // another sender not starting at 0: ignored
  std::uint64_t replies_sent = 0;
  std::uint64_t send_errors = 0;
  ardupilot::ServoCounters packets;  // every datagram by outcome
  std::uint16_t frame_rate_hz = 0;   // the last packet's frame_rate
};

class ArduPilotJsonEndpoint final : public runtime::Endpoint {
 public:
  ArduPilotJsonEndpoint(const runtime::EndpointConfig& config, const runtime::Scenario& scenario);
  ArduPilotJsonEndpoint(const runtime::EndpointConfig& config, ArduPilotEndpointConfig ap);
  ~ArduPilotJsonEndpoint() override;

  /// With `launch:`, the program it would start, if it is not there.
  std::vector<std::string> launch_problems() const override;
  /// Binds host:port, launches the program (`launch:`) and waits for ArduPilot's first servo
  /// packet. Throws std::runtime_error naming the endpoint: the port cannot be bound, the
  /// program cannot be started or ends first, or no packet within connect_timeout_ms.
  void start(const runtime::WorldModel& model, const runtime::WorldState& initial) override;
  /// Sends the reply for the projected state to ArduPilot. false (a fault) when the state
  /// cannot be written (a NaN or a value out of range).
  [[nodiscard]] bool publish(const runtime::StepContext& ctx, const runtime::WorldState& projected) override;
  /// Waits for ArduPilot's next frame until `deadline`; its servo outputs become commands.
  [[nodiscard]] runtime::GatherStatus gather(const runtime::StepContext& ctx, runtime::SteadyClock::time_point deadline,
                                             runtime::Reply& reply) override;
  void emit(const runtime::StepContext& ctx, const runtime::WorldState& actual) override;
  /// This step's link faults: replies to ArduPilot (out) and its servo packets (in) pass a
  /// runtime::LinkShaper; disconnect drops both ways.
  void set_link_faults(const runtime::LinkFaults& faults) override;
  /// Every mapped actuator at its stop command (0).
  void safe_reply(runtime::Reply& reply) const override;
  /// The autopilot services (autopilot_arm, _mode, _manual, _target): checked, then queued on
  /// the MAVLink link for the next step. Refused without a `mavlink:` section.
  bool operator_command(std::string_view verb, const nlohmann::json& arguments, bool apply, std::string* why) override;
  void stop() override;
  /// The servo packets, per mapped channel and the replies as Foxglove topics.
  std::vector<runtime::WireTopic> wire_topics() const override { return ardupilot_wire_topics(config_); }
  /// Adds an "ardupilot" object: address, frames, repeats, restarts, packets by outcome.
  /// Replies for other steps and undecodable input, as of the last gather.
  runtime::LinkCounts link_counts() const override { return link_counts_; }
  void summarize(nlohmann::json& out) const override;

  /// The port bound, after start() (useful with `port: 0`).
  std::uint16_t bound_port() const;
  const ArduPilotCounters& link_counters() const { return link_; }
  const ArduPilotEndpointConfig& config() const { return config_; }
  /// The MAVLink link, or nullptr without a `mavlink:` section.
  const MavlinkLink* mavlink() const { return mavlink_.get(); }

 private:
  runtime::LinkCounts link_counts_;  // updated by gather(), on the loop thread
  struct Impl;
  // start()'s three parts: the socket, the program (`launch:`), ArduPilot's first packet
  void bind_socket();
  void launch_program();
  void await_first_packet();
  void answer();
  void send_reply(const ardupilot::ReplyBuffer& reply);
  void send_bytes(std::string_view bytes);
  bool take_datagram(std::string_view bytes, const sockaddr_in& from, const runtime::StepContext& ctx,
                     runtime::Reply& reply);
  void add_optional_fields(ardupilot::ReplyState& r) const;
  void fill_commands(const ardupilot::ServoPacket& packet, runtime::Reply& reply) const;

  ArduPilotEndpointConfig config_;
  ArduPilotCounters link_;
  std::unique_ptr<Impl> impl_;
  std::unique_ptr<MavlinkLink> mavlink_;
};

}  // namespace tether::adapters
