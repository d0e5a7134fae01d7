// SPDX-License-Identifier: Apache-2.0
// The MAVLink link of an ardupilot_json endpoint (docs/ardupilot.md, "The MAVLink link"):
// Tether as a ground station. ArduPilot flies nothing until it is armed and in a mode with
// targets, and a directly started SITL sends no servo packet until a client has connected
// to its TCP port 5760; so the endpoint connects this link in start() before it waits for
// the first servo packet, and drives it from its per-step calls:
//
//   connect()  TCP: connect, retrying until connect_timeout_ms; UDP (a board): open a socket
//              that sends to the address and reads the replies; UDP in (MAVProxy's --out):
//              bind the address and answer whoever sent last
//   step(t)    publish: a GCS HEARTBEAT every second of *simulation* time (SITL's clock is
//              the simulation's), then what the script and the operator asked for, as a
//              ground station keeps it up (docs/ardupilot.md, "The ground station"): a mode
//              and arming are asked for once a second until the autopilot's HEARTBEAT
//              shows them (arming gives up after arm_timeout_ms: failure() then holds the
//              autopilot's last PreArm text); depth and heading targets are sent again
//              every second (ArduSub's ALT_HOLD drops an attitude target after 5 s, GUIDED
//              after 1 s: there every 250 ms); the pilot's sticks (neutral unless set) go
//              out pilot_rate_hz times a second, so ArduPilot's RC overrides never lapse to
//              SITL's receiver. A lost TCP link is reconnected without blocking. Sends never
//              block: what does not fit the socket waits in a fixed buffer, what does not
//              fit that is dropped and counted
//   receive()  gather, after the servo frame: what has arrived, decoded into this step's
//              log lines (armed, mode, STATUSTEXT, refused commands). The lines are part of
//              the recorded reply, so replay reproduces them without ArduPilot
//
// Identity: system 255, component 190 (a GCS). The autopilot's system and component are the
// first HEARTBEAT's that is not a GCS's (1/1 until one comes).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tether/mavlink/mavlink.hpp"
#include "tether/mavlink/mavlink_messages.hpp"
#include "tether/scenario/config.hpp"
#include "tether/scenario/step_data.hpp"

namespace tether::adapters {

/// One command to the autopilot: a `mavlink.script` entry or an operator's.
struct MavlinkAction {
  enum class Kind : std::uint8_t { arm, mode, depth, heading, manual, param };
  Kind kind = Kind::arm;
  std::int64_t at_ns = 0;                          // script: sent at the first step whose t_k >= at_ns
  bool arm = true;                                 // arm: true arms, false disarms
  bool force = false;                              // arm: param2 21196 (skips the pre-arm checks)
  std::uint32_t custom_mode = 0;                   // mode
  double depth_m = 0;                              // depth: SET_POSITION_TARGET_GLOBAL_INT alt = -depth_m
  double heading_deg = 0;                          // heading: SET_ATTITUDE_TARGET yaw (NED: 0 north, clockwise)
  std::array<std::int16_t, 4> manual{0, 0, 0, 0};  // manual: x, y, z, r in [-1000, 1000]
  std::uint16_t buttons = 0;                       // manual
  std::array<char, 16> param_id{};                 // param: PARAM_SET name
  float param_value = 0;                           // param
};

/// The `mavlink:` section of an ardupilot_json endpoint.
struct MavlinkLinkConfig {
  enum class Transport : std::uint8_t { tcp, udp, udp_in };
  Transport transport = Transport::tcp;
  std::string host = "127.0.0.1";
  std::uint16_t port = 5760;  // default 5760 + 10 * the endpoint's instance
  mavlink::Vehicle vehicle = mavlink::Vehicle::sub;
  std::int64_t connect_timeout_ms = 30'000;
  std::int64_t arm_timeout_ms = 90'000;  // simulated time from the first arm request to giving up
  double pilot_rate_hz = 10;             // MANUAL_CONTROL a second; 0: none (ArduPilot's overrides lapse)
  std::vector<MavlinkAction> script;     // sorted by time (list order among equal times)

  /// "tcp:127.0.0.1:5760"
  std::string address() const;
};

/// Reads a `mavlink:` section (`instance`: the endpoint's, for the default port); records
/// positioned errors in the node's context (the caller throws).
MavlinkLinkConfig parse_mavlink_config(const runtime::ConfigNode& node, std::int64_t instance);

/// Reads one script entry or operator command: `{at_s: 1, depth_m: 2}` and the like
/// (`with_time`: at_s is required). Records positioned errors; nothing when there were any.
std::optional<MavlinkAction> parse_mavlink_action(const runtime::ConfigNode& node, mavlink::Vehicle vehicle,
                                                  bool with_time);

/// An operator's autopilot command (docs/live.md, "Autopilot services") as the actions it
/// sends: autopilot_arm {arm, force?}, autopilot_mode {mode}, autopilot_manual {x, y, z, r,
/// buttons?}, autopilot_target {depth_m?, heading_deg?} (at least one). False with the reason:
/// an unknown verb or key, an unknown mode, a value missing, not finite or out of range.
bool operator_actions(std::string_view verb, const nlohmann::json& arguments, mavlink::Vehicle vehicle,
                      std::vector<MavlinkAction>& out, std::string* why);

/// What happened on the link, for the summary.
struct MavlinkLinkCounters {
  std::uint64_t heartbeats_sent = 0;
  std::uint64_t heartbeats_received = 0;  // the autopilot's
  std::uint64_t statustexts = 0;
  std::uint64_t commands_sent = 0;  // script and operator commands (not heartbeats)
  std::uint64_t param_values = 0;
  std::uint64_t sys_status = 0;
  std::array<std::uint64_t, 8> acks{};  // COMMAND_ACK by MAV_RESULT (0..6; 7: any other)
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t bytes_dropped = 0;  // frames that did not fit the send buffer, or were in it when the link was lost
  std::uint64_t send_errors = 0;    // UDP: a send refused (nobody at the address)
  std::uint64_t links_lost = 0;     // TCP: the autopilot closed or reset the connection
  std::uint64_t reconnects = 0;     // TCP: connected again after a loss
};

class MavlinkLink {
 public:
  static constexpr std::uint8_t our_sysid = 255;
  static constexpr std::uint8_t our_compid = 190;  // MAV_COMP_ID_MISSIONPLANNER
  static constexpr std::size_t send_buffer_size = 4096;
  static constexpr std::size_t max_queued = 16;  // operator commands waiting for the next step

  explicit MavlinkLink(MavlinkLinkConfig config);
  ~MavlinkLink();
  MavlinkLink(const MavlinkLink&) = delete;
  MavlinkLink& operator=(const MavlinkLink&) = delete;

  /// TCP: connects, retrying until connect_timeout_ms; UDP: opens the socket. Throws
  /// std::runtime_error starting with `who` (e.g. "endpoint ap") when it cannot.
  void connect(const std::string& who);
  /// The per-step work at simulation time t_k = time_ns (see the header comment). Never blocks.
  void step(std::int64_t time_ns);
  /// Reads what has arrived without waiting and appends this step's lines to `logs`.
  void receive(std::vector<runtime::LogLine>& logs);
  /// The vehicle's depth (m) when ArduPilot started: ArduSub's depth zero is its pressure at
  /// boot, so depth targets are sent relative to it.
  void set_depth_datum(double depth_m) { depth_datum_m_ = depth_m; }
  /// Why the ground station gave up (arming not granted in time, with the autopilot's own
  /// words), or empty.
  const std::string& failure() const { return failure_; }
  /// Queues a command for the next step(); false with the reason when the queue is full.
  bool queue(const MavlinkAction& action, std::string* why);
  /// Closes the socket; safe to call twice.
  void close();

  /// Adds a "mavlink" object: address, connected, armed, mode, counters, decoder counters.
  void summarize(nlohmann::json& out) const;

  bool connected() const { return state_ == State::connected; }
  /// The autopilot's latest armed state and mode (nothing before its first HEARTBEAT).
  std::optional<bool> armed() const;
  std::optional<std::uint32_t> mode() const;
  std::uint8_t target_system() const { return target_sysid_; }
  std::uint8_t target_component() const { return target_compid_; }
  const MavlinkLinkCounters& counters() const { return counters_; }
  const mavlink::DecoderCounters& decoder_counters() const { return decoder_.counters(); }
  const MavlinkLinkConfig& config() const { return config_; }

 private:
  enum class State : std::uint8_t { closed, connecting, connected };
  enum class Pending : std::uint8_t { none, lost, restored };

  void open_socket();
  void close_socket();
  void start_connect(std::int64_t time_ns);
  void finish_connect(std::int64_t time_ns);
  void lose();
  void send_action(const MavlinkAction& action);
  void take(const MavlinkAction& action, std::int64_t time_ns);
  void keep_up(std::int64_t time_ns);
  void note(std::uint8_t level, std::string text);
  template <class M>
  void send(const M& message);
  void flush();
  void on_frame(const mavlink::Frame& frame, std::vector<runtime::LogLine>& logs);

  MavlinkLinkConfig config_;
  int fd_ = -1;
  State state_ = State::closed;
  Pending pending_ = Pending::none;
  bool active_ = false;  // between connect() and close()
  bool ever_connected_ = false;
  int last_error_ = 0;  // errno of the latest failed connect
  std::int64_t next_heartbeat_ns_ = 0;
  std::int64_t next_retry_ns_ = 0;
  std::int64_t last_time_ns_ = 0;
  std::size_t next_script_ = 0;
  std::vector<MavlinkAction> queued_;  // reserved max_queued
  std::uint8_t seq_ = 0;
  std::uint8_t target_sysid_ = 1;
  std::uint8_t target_compid_ = 1;
  bool have_target_ = false;
  bool have_heartbeat_ = false;
  bool armed_ = false;
  std::uint32_t mode_ = 0;
  mavlink::SysStatus sys_status_{};
  // what the ground station keeps asking for (take(): the script's and the operator's)
  std::optional<MavlinkAction> want_arm_;   // until the HEARTBEAT shows it
  std::optional<std::uint32_t> want_mode_;  // until the HEARTBEAT shows it
  std::optional<double> depth_target_m_;
  std::optional<double> heading_target_deg_;
  std::array<std::int16_t, 4> sticks_{};
  std::uint16_t buttons_ = 0;
  std::int64_t arm_asked_ns_ = 0, next_arm_ns_ = 0, next_mode_ns_ = 0, next_target_ns_ = 0, next_heading_ns_ = 0,
               next_pilot_ns_ = 0;
  int arm_tries_ = 0;
  double depth_datum_m_ = 0;
  std::string last_prearm_;  // the autopilot's latest "PreArm: ..." / "Arm: ..." text
  std::string failure_;
  std::vector<runtime::LogLine> notes_;  // the ground station's own lines, given out by receive()
  std::array<std::uint8_t, 16> peer_{};  // udp_in: whoever sent last (a sockaddr_in)
  bool have_peer_ = false;
  std::array<std::uint8_t, send_buffer_size> out_{};
  std::size_t out_size_ = 0;
  std::array<std::uint8_t, 2048> in_{};
  mavlink::Decoder decoder_;
  MavlinkLinkCounters counters_;
};

}  // namespace tether::adapters
