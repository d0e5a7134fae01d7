// SPDX-License-Identifier: Apache-2.0
// A small synchronous foxglove.websocket.v1 client on Boost.Beast: what `tether ctl` and
// the tests use to talk to a live session (docs/live.md). Every call has a timeout.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tether::live {

class Client {
 public:
  Client();
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// Connects to `url` (ws://HOST:PORT[/PATH][?token=...]) offering foxglove.websocket.v1;
  /// a non-empty `token` is sent as "Authorization: Bearer". Waits for serverInfo, the
  /// channels and the services. False with the reason (refused: the server's words).
  bool connect(const std::string& url, const std::string& token, std::string* error, double timeout_s = 5);

  const nlohmann::json& server_info() const { return server_info_; }
  /// The advertised channels ({id, topic, encoding, schemaName, ...}).
  const std::vector<nlohmann::json>& channels() const { return channels_; }
  const std::vector<nlohmann::json>& services() const { return services_; }
  /// Status messages received so far ({level, message}).
  const std::vector<nlohmann::json>& statuses() const { return statuses_; }

  /// Calls a service by name with a JSON request; waits for its response. Frames that
  /// arrive meanwhile are kept for next().
  bool call(const std::string& service, const nlohmann::json& request, nlohmann::json& response, std::string* error,
            double timeout_s = 60);
  /// Subscribes to a topic; `subscription` is the id its messages carry.
  bool subscribe(const std::string& topic, std::uint32_t& subscription, std::string* error);

  struct Frame {
    bool binary = false;
    std::string data;
  };
  /// The next frame from the server; false on timeout or a closed connection (`error` says).
  bool next(Frame& frame, double timeout_s, std::string* error);
  /// Waits for a text frame whose "op" is `op`; other frames are kept for next().
  bool wait_op(const std::string& op, nlohmann::json& out, double timeout_s, std::string* error);

  bool send_text(const std::string& text, std::string* error);
  bool send_binary(const std::string& bytes, std::string* error);
  /// Why the server closed the connection (code and reason), once it has.
  const std::string& close_reason() const { return close_reason_; }
  void close();

 private:
  bool read_one(Frame& frame, double timeout_s, std::string* error);
  void note(const Frame& frame);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  nlohmann::json server_info_;
  std::vector<nlohmann::json> channels_, services_, statuses_;
  std::deque<Frame> kept_;
  std::uint32_t next_call_ = 1, next_sub_ = 1;
  std::string close_reason_;
};

}  // namespace tether::live
