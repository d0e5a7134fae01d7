// SPDX-License-Identifier: Apache-2.0
// The MAVLink side of the stand-in autopilot `tether-ardupilot` (docs/ardupilot.md, "The
// stand-in autopilot"): a TCP server where ArduPilot's SITL has its first serial port (127.0.0.1,
// 5760 + 10 * instance), for one ground station at a time; a new connection replaces the old
// one. It speaks as ArduPilot does (system 1, component 1): HEARTBEAT and SYS_STATUS at 1 Hz,
// ATTITUDE, GLOBAL_POSITION_INT and VFR_HUD at 4 Hz once the law has a reading, and it obeys
// arming, mode changes, MANUAL_CONTROL, depth and heading targets and PARAM_SET by changing the
// Autopilot state. Anything else is counted and ignored; a malformed stream costs bytes, never
// the connection (the Decoder resynchronises).
//
// One thread does it all with poll(): the listening socket, the client and a wake-up pipe for
// stop(), waking at the latest for the next periodic message. Sends never block: a frame the
// client's socket has no room for is dropped and counted.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "tether/ardupilot_standin/ardupilot_autopilot.hpp"
#include "tether/mavlink/mavlink.hpp"

namespace tether::adapters::ardupilot {

/// ArduPilot SITL's first serial port: TCP 5760 + 10 * instance.
inline constexpr std::uint16_t mavlink_base_port = 5760;

struct MavlinkServerOptions {
  std::string bind = "127.0.0.1";
  std::uint16_t port = mavlink_base_port;  // 0: any free port (port() tells which)
  std::uint8_t sysid = 1;
  std::uint8_t compid = 1;
  std::int64_t heartbeat_period_ms = 1000;  // HEARTBEAT and SYS_STATUS
  std::int64_t telemetry_period_ms = 250;   // ATTITUDE, GLOBAL_POSITION_INT, VFR_HUD
};

struct MavlinkServerCounters {
  std::uint64_t connections = 0;    // ground stations accepted
  std::uint64_t replaced = 0;       // connections closed because a new one came
  std::uint64_t frames_in = 0;      // frames decoded
  std::uint64_t handled = 0;        // of those, obeyed (or answered)
  std::uint64_t ignored = 0;        // of those, not handled: other messages, other targets
  std::uint64_t garbage_bytes = 0;  // bytes the decoders dropped or skipped
  std::uint64_t frames_out = 0;     // frames sent
  std::uint64_t send_dropped = 0;   // frames not sent (no room, or the socket failed)
};

/// STATUSTEXTs it sends, word for word (severity info, 6).
inline constexpr const char* text_arming = "Arming motors";
inline constexpr const char* text_disarming = "Disarming motors";
/// ... and on a refused mode change (severity warning, 4).
inline constexpr const char* text_mode_refused = "Flight mode change failed";

class MavlinkServer {
 public:
  /// Binds and listens (nothing is accepted before start()). Throws std::runtime_error when
  /// the address is not IPv4 or the port cannot be bound.
  MavlinkServer(Autopilot& autopilot, MavlinkServerOptions options);
  /// stop().
  ~MavlinkServer();
  MavlinkServer(const MavlinkServer&) = delete;
  MavlinkServer& operator=(const MavlinkServer&) = delete;

  /// Starts the server's thread.
  void start();
  /// Ends the thread and closes the sockets; idempotent.
  void stop();

  /// The TCP port it listens on.
  std::uint16_t port() const { return port_; }
  /// Waits up to `timeout` for a ground station to have connected (ever); true once one has.
  bool wait_for_gcs(std::chrono::milliseconds timeout);
  /// Whether a ground station is connected now.
  bool gcs_connected() const;
  MavlinkServerCounters counters() const;

 private:
  void run();
  void accept_client(std::chrono::steady_clock::time_point now);
  void close_client();
  void read_client();
  void send_periodic(std::chrono::steady_clock::time_point now);
  void handle(const mavlink::Frame& frame);
  bool for_us(std::uint8_t target_system) const;
  void handle_command(const mavlink::CommandLong& c);
  void change_mode(std::uint16_t ack_command, bool custom_flag, std::uint32_t custom_mode);
  void send_heartbeat();
  void send_sys_status();
  void send_telemetry();
  void send_text(std::uint8_t severity, const char* text);
  void send_ack(std::uint16_t command, std::uint8_t result);
  void send_param(std::size_t index);
  template <class M>
  void send(const M& message);

  Autopilot& autopilot_;
  MavlinkServerOptions options_;
  std::uint16_t port_ = 0;
  int listen_fd_ = -1;
  int client_fd_ = -1;
  int wake_read_ = -1;
  int wake_write_ = -1;
  std::thread thread_;
  std::uint8_t seq_ = 0;
  mavlink::Decoder decoder_;
  std::uint64_t decoder_garbage_base_ = 0;  // garbage of the decoders before this one
  std::chrono::steady_clock::time_point next_heartbeat_{};
  std::chrono::steady_clock::time_point next_telemetry_{};
  std::chrono::steady_clock::time_point started_{};

  mutable std::mutex mutex_;  // guards what follows
  std::condition_variable gcs_seen_cv_;
  bool gcs_seen_ = false;
  bool gcs_connected_ = false;
  MavlinkServerCounters counters_;
};

}  // namespace tether::adapters::ardupilot
