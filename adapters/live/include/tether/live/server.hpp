// SPDX-License-Identifier: Apache-2.0
// The live server: a running session over the Foxglove WebSocket protocol
// (`foxglove.websocket.v1`) on Boost.Beast (docs/live.md). It publishes the recording's
// JSON channels as they are written (it taps the recorder's writer thread, never the loop)
// and steers the session through its SessionControl (services and parameters).
//
// Threads: one server thread runs all network I/O. The recorder's writer thread hands
// messages over through a bounded inbox; each client has a bounded send queue whose oldest
// data messages are dropped (and counted, and the client told) when it does not keep up.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "tether/loop/control.hpp"
#include "tether/recording/recorder.hpp"
#include "tether/scenario/scenario.hpp"

namespace tether::live {

struct ServerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8765;  // 0: any free port (port() says which)
  std::string token;          // required unless host is a loopback address
  std::uint32_t max_clients = 8;
  std::uint32_t queue_messages = 1024;    // per client: data messages waiting to be sent
  std::uint32_t max_frame_bytes = 65536;  // larger client frames close the connection
  double handshake_timeout_s = 10;        // a connection that does not finish its upgrade
  double max_rate_hz = 250;               // per channel: messages forwarded to clients (0: all)
  std::string name = "tether";
  bool replay = false;  // serving a replay: commands that would change the world are refused
};

/// The options from a scenario's `live:` block, the `--live [HOST:]PORT` option (empty:
/// none) and the TETHER_LIVE_TOKEN environment variable (used when the scenario names no
/// token). False with a reason on a malformed --live value.
bool server_options(const runtime::LiveConfig& config, const std::string& live_option, ServerOptions& out,
                    std::string* error);

/// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback(const std::string& host);

class Server final : public runtime::RecorderTap {
 public:
  /// `control` may be null (a server that only publishes). Nothing runs before start().
  Server(ServerOptions options, runtime::SessionControl* control);
  ~Server() override;
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// The recording's channels (Recorder::channels() after open()); JSON channels are
  /// advertised, the binary replay channels are not. Call before start().
  void set_channels(const std::vector<runtime::RecordedChannel>& channels);
  /// The names `/tether/apply_force` accepts for a body: "vehicle.part" and "vehicle" (its
  /// first body), with the body index. Call before start().
  void set_bodies(std::vector<std::pair<std::string, std::uint32_t>> bodies);

  /// Binds and listens, starts the server thread. Throws std::runtime_error with the
  /// reason (address in use, a non-loopback address without a token, ...).
  void start();
  /// Closes every connection (reason: the session ended) and joins the server thread.
  void stop();
  /// The port it listens on (after start()).
  std::uint16_t port() const;

  /// Figures for the session summary: clients, drops per client, refused connections.
  nlohmann::json summary() const;

  // RecorderTap (the recorder's writer thread)
  void opened(const std::vector<runtime::RecordedChannel>& channels) override { set_channels(channels); }
  bool wants(std::uint16_t channel) const override;
  void message(std::uint16_t channel, std::uint64_t log_time_ns, std::string_view bytes) override;

  struct Impl;  // opaque: the Beast side lives in server.cpp

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tether::live
