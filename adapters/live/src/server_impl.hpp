// SPDX-License-Identifier: Apache-2.0
// The live server's inside, shared by its three sources: server.cpp (the server, its
// inbox from the recorder and the rate cap), connection.cpp (one client's connection: the
// upgrade, reads, the bounded send queue) and connection_requests.cpp (what a client asks:
// subscriptions, parameters, service calls through the service table).
#pragma once

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange under C++20

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <nlohmann/json.hpp>

#include "tether/live/protocol.hpp"
#include "tether/live/server.hpp"
#include "tether/live/services.hpp"

namespace tether::live {

extern const std::string_view dashboard_html;  // dashboard.cpp.in, generated from dashboard/index.html

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;
using nlohmann::json;

inline constexpr const char* subprotocol = "foxglove.websocket.v1";
inline constexpr std::size_t max_in_flight_calls = 64;   // per client: service calls not answered yet
inline constexpr std::size_t max_control_queued = 4096;  // per client: responses and statuses not yet sent
inline constexpr std::size_t max_control_queued_bytes = std::size_t{8} << 20;  // ... and their bytes
// every accepted socket's send buffer (SO_SNDBUF; Linux doubles it for its bookkeeping):
// fixed, so what the kernel holds for a client that never reads is bounded by this and the
// client's own receive window, not by the send buffer's autotuning (up to tcp_wmem's 4 MB)
inline constexpr int socket_send_buffer_bytes = 256 * 1024;
inline constexpr std::size_t max_inbox = 200000;         // messages from the recorder not yet sent out
inline constexpr std::size_t max_finished_clients = 64;  // per-client figures kept for the summary
inline constexpr double rate_burst = 64;                 // messages a channel may send at once past its rate cap

struct Out {
  std::string bytes;
  bool binary = false;
  bool droppable = false;  // a data message (or time): may be dropped when the client lags
  bool close = false;      // close the connection once everything before it is sent
  websocket::close_code code = websocket::close_code::normal;
};

struct Msg {
  std::uint16_t channel = 0;
  std::uint64_t time_ns = 0;
  std::string bytes;
  bool time_only = false;  // nobody subscribes to it: it only advances the clients' time
};

class Connection;

struct Server::Impl {
  ServerOptions opt;
  runtime::SessionControl* control = nullptr;
  std::shared_ptr<net::io_context> ioc = std::make_shared<net::io_context>(1);
  tcp::acceptor acceptor{*ioc};
  std::thread thread;
  std::uint16_t bound_port = 0;

  std::vector<runtime::RecordedChannel> channels;  // advertised (JSON) ones
  std::string advertise_text, services_text, server_info_text;
  std::unique_ptr<std::atomic<int>[]> subscribers;  // by channel id
  std::size_t max_channel = 0;
  std::vector<std::pair<std::string, std::uint32_t>> bodies;  // names apply_force takes
  std::uint16_t time_channel = 0;                             // /tether/timing: one message per step carries the time
  std::atomic<int> clients_now{0};                            // upgraded connections
  std::vector<bool> latched;  // by channel id: /scene, /tether/summary (kept for late subscribers)
  std::map<std::uint16_t, Msg> latched_last;

  std::mutex inbox_mutex;
  std::deque<Msg> inbox;
  bool drain_posted = false;
  std::atomic<std::uint64_t> inbox_dropped{0};
  // the rate cap (max_rate_hz), per channel id, under inbox_mutex: a token bucket of
  // rate_burst messages refilled at max_rate_hz (the recorder's writer hands over steps in
  // bursts; a burst at a paced rate passes whole). With no token left a message waits as the
  // channel's latest and goes out when a token is back, unless a newer one replaces it first
  // (counted as rate_limited): a client always gets the last state, never a backlog.
  struct Rate {
    double tokens = 0;
    std::chrono::steady_clock::time_point refilled{};
    bool pending = false;
    Msg latest;
    // refills and takes a token if there is one
    bool take(std::chrono::steady_clock::time_point now, double rate_hz) {
      tokens = std::min(rate_burst, tokens + std::chrono::duration<double>(now - refilled).count() * rate_hz);
      refilled = now;
      if (tokens < 1) return false;
      tokens -= 1;
      return true;
    }
    std::chrono::steady_clock::time_point next_token(double rate_hz) const {
      return refilled + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>((1 - tokens) / rate_hz));
    }
  };
  std::vector<Rate> rates;
  bool flush_armed = false;
  std::atomic<std::uint64_t> rate_limited{0};
  net::steady_timer flush_timer{*ioc};         // server thread
  std::atomic<std::uint64_t> dropped_live{0};  // every client's drops, as they happen

  // server thread only
  std::set<std::shared_ptr<Connection>> connections;  // upgraded or upgrading
  std::uint64_t next_id = 1;
  bool stopping = false;
  std::uint64_t last_time_ns = 0;
  bool have_time = false;

  mutable std::mutex stats_mutex;
  std::uint64_t clients_total = 0, refused_token = 0, refused_full = 0, refused_protocol = 0, http_requests = 0,
                closed_for_cause = 0, idle_closed = 0;
  std::vector<json> finished;

  std::size_t upgraded() const;
  void accept();
  void drain();
  void flush_rate_limited();
  void arm_flush(std::chrono::steady_clock::time_point at);
  void param_changed(const json& values);
};

/// {"op": "status", "level": level, "message": message}
std::string status_text(int level, const std::string& message);

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Server::Impl& server, tcp::socket socket, std::uint64_t id)
      : server_(server), ws_(std::move(socket)), id_(id) {
    beast::error_code ec;
    const auto ep = beast::get_lowest_layer(ws_).socket().remote_endpoint(ec);
    remote_ = ec ? "?" : ep.address().to_string() + ":" + std::to_string(ep.port());
  }
  bool upgraded() const { return upgraded_; }
  bool finished() const { return finished_; }
  std::uint64_t id() const { return id_; }
  // its line of the summary's per_client
  json figures(const std::string& end) const;
  void start();
  // the handshake pool is full: answered 503 and closed (Server::Impl::accept)
  void refuse_busy();
  // the connection is over: release its subscriptions, keep its figures
  void finish(const std::string& why);
  // a message of a channel: sent if this client subscribes to it
  void deliver(const Msg& m);
  void send_time(std::uint64_t t);
  void send_text(std::string text);
  void service_response(std::uint32_t service, std::uint32_t call, const std::string& payload);
  // closes once what is queued before is sent (a reason the client can read)
  void close(websocket::close_code code, std::string reason);
  void param_values(const json& values);

 private:
  void on_request(beast::error_code ec);
  void plain_response(http::status status, std::string body, const char* type = "text/plain; charset=utf-8",
                      bool head_only = false);
  void on_accept(beast::error_code ec);
  void read();
  void on_read(beast::error_code ec);
  // a frame that breaks the protocol: say why, then close
  void protocol_error(const std::string& why);
  void on_text(const std::string& text);
  void subscribe(const json& j);
  bool advertised(std::uint16_t ch) const;
  void unsubscribe(const json& j);
  // submits to the session; `reply` runs on the server thread with the answer
  bool submit(runtime::ControlRequest r, std::function<void(Connection&, bool, const std::string&)> reply,
              std::string* why);
  void get_parameters(const json& j);
  void set_parameters(const json& j);
  void on_binary(const std::string& data);
  void enqueue(Out o);
  void write_next();
  void error_status(const std::string& why) { send_text(status_text(2, why)); }

  Server::Impl& server_;
  websocket::stream<beast::tcp_stream> ws_;
  std::uint64_t id_;
  std::string remote_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  beast::flat_buffer in_;
  bool upgraded_ = false;  // counts against the cap (from the upgrade request on)
  bool accepted_ = false;  // the upgrade's response has been written: frames may follow
  bool closing_ = false, finished_ = false, writing_ = false;
  std::string close_reason_;
  std::deque<Out> queue_;
  std::size_t data_queued_ = 0;
  std::size_t control_bytes_queued_ = 0;  // bytes of the responses and statuses in queue_
  std::uint64_t dropped_ = 0, dropped_unreported_ = 0, sent_ = 0, sent_bytes_ = 0;
  std::chrono::steady_clock::time_point last_drop_notice_{};
  std::size_t in_flight_ = 0;
  std::map<std::uint32_t, std::uint16_t> subs_;        // subscription id -> channel
  std::map<std::uint16_t, std::uint32_t> by_channel_;  // channel -> subscription id
  bool param_all_ = false;
  std::set<std::string> param_names_;

  friend struct Server::Impl;
};

}  // namespace tether::live
