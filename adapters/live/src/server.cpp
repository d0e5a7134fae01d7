// SPDX-License-Identifier: Apache-2.0
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange under C++20

#include "tether/live/server.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "tether/live/protocol.hpp"

namespace tether::live {

extern const std::string_view dashboard_html;  // dashboard.cpp.in, generated from dashboard/index.html

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;
using nlohmann::json;

bool is_loopback(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr a{};
  if (inet_pton(AF_INET, host.c_str(), &a) == 1) return (ntohl(a.s_addr) >> 24) == 127;
  return false;
}

bool server_options(const runtime::LiveConfig& config, const std::string& live_option, ServerOptions& out,
                    std::string* error) {
  out.host = config.host;
  out.port = config.port;
  out.token = config.token;
  out.max_clients = config.max_clients;
  out.queue_messages = config.queue_messages;
  out.max_frame_bytes = config.max_frame_bytes;
  out.max_rate_hz = config.max_rate_hz;
  if (!live_option.empty()) {
    // PORT, HOST:PORT or [V6]:PORT
    std::string host, port = live_option;
    const auto colon = live_option.rfind(':');
    if (colon != std::string::npos) {
      host = live_option.substr(0, colon);
      port = live_option.substr(colon + 1);
      if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
      if (host.empty()) {
        if (error) *error = "--live " + live_option + ": expected [HOST:]PORT";
        return false;
      }
    }
    char* end = nullptr;
    const long p = std::strtol(port.c_str(), &end, 10);
    if (port.empty() || *end != '\0' || p < 0 || p > 65535) {
      if (error) *error = "--live " + live_option + ": expected [HOST:]PORT with PORT in 0..65535";
      return false;
    }
    out.port = static_cast<std::uint16_t>(p);
    if (!host.empty()) out.host = host;
  }
  if (out.token.empty())
    if (const char* t = std::getenv("TETHER_LIVE_TOKEN")) out.token = t;
  return true;
}

namespace {

constexpr const char* subprotocol = "foxglove.websocket.v1";
constexpr std::size_t max_in_flight_calls = 64;   // per client: service calls not answered yet
constexpr std::size_t max_control_queued = 4096;  // per client: responses and statuses not yet sent
constexpr std::size_t max_inbox = 200000;         // messages from the recorder not yet sent out
constexpr std::size_t max_finished_clients = 64;  // per-client figures kept for the summary
constexpr double rate_burst = 64;                 // messages a channel may send at once past its rate cap

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

}  // namespace

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
                closed_for_cause = 0;
  std::vector<json> finished;

  std::size_t upgraded() const;
  void accept();
  void drain();
  void flush_rate_limited();
  void arm_flush(std::chrono::steady_clock::time_point at);
  void param_changed(const json& values);
};

namespace {

std::string status_text(int level, const std::string& message) {
  return json{{"op", "status"}, {"level", level}, {"message", message}}.dump();
}

// constant-time comparison: a wrong token takes as long whatever its prefix
bool same_token(const std::string& a, const std::string& b) {
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i % (b.size() ? b.size() : 1)]);
  return diff == 0 && !b.empty();
}

std::string query_param(std::string_view target, std::string_view key) {
  const auto q = target.find('?');
  if (q == std::string_view::npos) return {};
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    const auto eq = pair.find('=');
    if (pair.substr(0, eq) == key && eq != std::string_view::npos) return std::string(pair.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    rest = rest.substr(amp + 1);
  }
  return {};
}

}  // namespace

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Server::Impl& server, tcp::socket socket, std::uint64_t id)
      : server_(server), ws_(std::move(socket)), id_(id) {
    beast::error_code ec;
    const auto ep = beast::get_lowest_layer(ws_).socket().remote_endpoint(ec);
    remote_ = ec ? "?" : ep.address().to_string() + ":" + std::to_string(ep.port());
  }

  void start() {
    beast::get_lowest_layer(ws_).expires_after(
        std::chrono::milliseconds(static_cast<long>(server_.opt.handshake_timeout_s * 1000)));
    parser_.emplace();
    parser_->header_limit(16 * 1024);
    parser_->body_limit(4 * 1024);
    http::async_read(beast::get_lowest_layer(ws_), buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_request(ec); });
  }

  bool upgraded() const { return upgraded_; }

  // a message of a channel: sent if this client subscribes to it
  void deliver(const Msg& m) {
    if (!accepted_ || closing_) return;
    const auto it = by_channel_.find(m.channel);
    if (it == by_channel_.end()) return;
    Out o;
    o.binary = true;
    o.droppable = true;
    encode_message_data(it->second, m.time_ns, m.bytes, o.bytes);
    enqueue(std::move(o));
  }

  void send_time(std::uint64_t t) {
    if (!accepted_ || closing_) return;
    Out o;
    o.binary = true;
    o.droppable = true;
    encode_time(t, o.bytes);
    enqueue(std::move(o));
  }

  void send_text(std::string text) {
    Out o;
    o.bytes = std::move(text);
    enqueue(std::move(o));
  }

  void service_response(std::uint32_t service, std::uint32_t call, const std::string& payload) {
    if (in_flight_ > 0) --in_flight_;
    if (!upgraded_ || closing_) return;
    Out o;
    o.binary = true;
    encode_service_response(service, call, "json", payload, o.bytes);
    enqueue(std::move(o));
  }

  // closes once what is queued before is sent (a reason the client can read)
  void close(websocket::close_code code, std::string reason) {
    if (closing_) return;
    if (!upgraded_) {
      finish("closed before the upgrade: " + reason);
      beast::error_code ec;
      beast::get_lowest_layer(ws_).socket().shutdown(tcp::socket::shutdown_both, ec);
      beast::get_lowest_layer(ws_).close();
      return;
    }
    Out o;
    o.close = true;
    o.code = code;
    o.bytes = reason.substr(0, 120);  // a close frame's reason is at most 123 bytes
    close_reason_ = reason;
    enqueue(std::move(o));
    closing_ = true;
  }

  void param_values(const json& values) {
    if (!upgraded_ || closing_ || (!param_all_ && param_names_.empty())) return;
    json list = json::array();
    for (const auto& p : values)
      if (param_all_ || param_names_.count(p.value("name", ""))) list.push_back(p);
    if (!list.empty()) send_text(json{{"op", "parameterValues"}, {"parameters", list}}.dump());
  }

 private:
  void on_request(beast::error_code ec) {
    if (ec) {
      // garbage before the upgrade, a half-open connection, a header over its limit
      {
        std::lock_guard lock(server_.stats_mutex);
        ++server_.refused_protocol;
      }
      if (ec != beast::error::timeout && ec != http::error::end_of_stream) {
        plain_response(http::status::bad_request, "not an HTTP request: " + ec.message() + "\n");
        return;
      }
      finish("handshake failed: " + ec.message());
      return;
    }
    const auto& req = parser_->get();
    const auto target_view = req.target();
    const std::string_view target(target_view.data(), target_view.size());
    auto token_ok = [&] {
      if (server_.opt.token.empty()) return true;
      std::string given = query_param(target, "token");
      const auto auth_view = req[http::field::authorization];
      const std::string auth(auth_view.data(), auth_view.size());
      if (given.empty() && auth.rfind("Bearer ", 0) == 0) given = auth.substr(7);
      return same_token(given, server_.opt.token);
    };
    if (!websocket::is_upgrade(req)) {
      {
        std::lock_guard lock(server_.stats_mutex);
        ++server_.http_requests;
      }
      const std::string_view path = target.substr(0, target.find('?'));
      if (req.method() != http::verb::get && req.method() != http::verb::head) {
        plain_response(http::status::method_not_allowed, "GET / serves the dashboard; nothing else is here\n");
      } else if (path != "/" && path != "/index.html") {
        plain_response(http::status::not_found,
                       "not found: GET / serves the dashboard; Foxglove, Lichtblick and `tether ctl` connect to "
                       "ws://HOST:PORT (foxglove.websocket.v1); docs/live.md\n");
      } else if (!token_ok()) {
        std::lock_guard lock(server_.stats_mutex);
        ++server_.refused_token;
        plain_response(http::status::unauthorized, "a token is required: /?token=...\n");
      } else {
        plain_response(http::status::ok, std::string(dashboard_html), "text/html; charset=utf-8",
                       req.method() == http::verb::head);
      }
      return;
    }
    if (!server_.opt.token.empty()) {
      if (!token_ok()) {
        {
          std::lock_guard lock(server_.stats_mutex);
          ++server_.refused_token;
        }
        plain_response(http::status::unauthorized,
                       "a token is required: ?token=... or the header Authorization: Bearer ...\n");
        return;
      }
    }
    const auto protocols_view = req[http::field::sec_websocket_protocol];
    const std::string protocols(protocols_view.data(), protocols_view.size());
    if (protocols.find(subprotocol) == std::string::npos) {
      {
        std::lock_guard lock(server_.stats_mutex);
        ++server_.refused_protocol;
      }
      plain_response(http::status::bad_request,
                     std::string("this server speaks the WebSocket subprotocol ") + subprotocol + " only\n");
      return;
    }
    if (server_.upgraded() >= server_.opt.max_clients) {
      {
        std::lock_guard lock(server_.stats_mutex);
        ++server_.refused_full;
      }
      plain_response(http::status::service_unavailable,
                     "too many clients (live.max_clients = " + std::to_string(server_.opt.max_clients) + ")\n");
      return;
    }
    upgraded_ = true;  // counts against the cap from now on
    ++server_.clients_now;
    ws_.set_option(websocket::stream_base::decorator([](websocket::response_type& res) {
      res.set(http::field::sec_websocket_protocol, subprotocol);
      res.set(http::field::server, "tether");
    }));
    ws_.read_message_max(server_.opt.max_frame_bytes);
    ws_.async_accept(req, [self = shared_from_this()](beast::error_code e) { self->on_accept(e); });
  }

  void plain_response(http::status status, std::string body, const char* type = "text/plain; charset=utf-8",
                      bool head_only = false) {
    auto res = std::make_shared<http::response<http::string_body>>(status, 11);
    res->set(http::field::server, "tether");
    res->set(http::field::content_type, type);
    res->set(http::field::cache_control, "no-store");
    // the page talks to this server only; nothing else loads
    res->set("Content-Security-Policy",
             "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self' ws: "
             "wss:; img-src data:");
    res->set("X-Content-Type-Options", "nosniff");
    res->keep_alive(false);
    res->body() = std::move(body);
    res->prepare_payload();
    if (head_only) res->body().clear();
    http::async_write(beast::get_lowest_layer(ws_), *res,
                      [self = shared_from_this(), res](beast::error_code, std::size_t) {
                        beast::error_code ec;
                        beast::get_lowest_layer(self->ws_).socket().shutdown(tcp::socket::shutdown_both, ec);
                        beast::get_lowest_layer(self->ws_).close();
                        self->finish("plain HTTP " + std::to_string(res->result_int()));
                      });
  }

  void on_accept(beast::error_code ec) {
    if (ec) {
      upgraded_ = false;
      --server_.clients_now;
      finish("upgrade failed: " + ec.message());
      return;
    }
    accepted_ = true;
    beast::get_lowest_layer(ws_).expires_never();
    ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
    {
      std::lock_guard lock(server_.stats_mutex);
      ++server_.clients_total;
    }
    spdlog::info("live: client {} connected from {}", id_, remote_);
    send_text(server_.server_info_text);
    send_text(server_.advertise_text);
    send_text(server_.services_text);
    if (server_.have_time) send_time(server_.last_time_ns);
    read();
  }

  void read() {
    ws_.async_read(in_, [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec) {
      if (ec == websocket::error::message_too_big) {
        {
          std::lock_guard lock(server_.stats_mutex);
          ++server_.closed_for_cause;
        }
        finish("closed: a frame over live.max_frame_bytes (" + std::to_string(server_.opt.max_frame_bytes) + ")");
      } else if (ec == websocket::error::closed) {
        finish("closed by the client");
      } else {
        finish("connection lost: " + ec.message());
      }
      return;
    }
    const std::string data = beast::buffers_to_string(in_.data());
    in_.consume(in_.size());
    if (ws_.got_text())
      on_text(data);
    else
      on_binary(data);
    if (!closing_ && !finished_) read();
  }

  // a frame that breaks the protocol: say why, then close
  void protocol_error(const std::string& why) {
    {
      std::lock_guard lock(server_.stats_mutex);
      ++server_.closed_for_cause;
    }
    send_text(status_text(2, why));
    close(websocket::close_code::protocol_error, why);
  }

  void error_status(const std::string& why) { send_text(status_text(2, why)); }

  void on_text(const std::string& text) {
    const json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("op") || !j["op"].is_string())
      return protocol_error("malformed text frame: expected a JSON object with a string \"op\"");
    const std::string op = j["op"];
    if (op == "subscribe") return subscribe(j);
    if (op == "unsubscribe") return unsubscribe(j);
    if (op == "getParameters") return get_parameters(j);
    if (op == "setParameters") return set_parameters(j);
    if (op == "subscribeParameterUpdates" || op == "unsubscribeParameterUpdates") {
      const bool sub = op == "subscribeParameterUpdates";
      const auto names = j.value("parameterNames", json::array());
      if (!names.is_array()) return error_status(op + ": parameterNames must be an array of strings");
      if (names.empty()) {
        param_all_ = sub;
        if (!sub) param_names_.clear();
      }
      for (const auto& n : names)
        if (n.is_string()) {
          if (sub)
            param_names_.insert(n.get<std::string>());
          else
            param_names_.erase(n.get<std::string>());
        }
      return;
    }
    if (op == "advertise" || op == "unadvertise")
      return error_status(op + ": this server does not take client channels (no clientPublish capability)");
    error_status("unknown op \"" + op + "\"");
  }

  void subscribe(const json& j) {
    const auto subs = j.value("subscriptions", json());
    if (!subs.is_array()) return error_status("subscribe: \"subscriptions\" must be an array of {id, channelId}");
    for (const auto& s : subs) {
      if (!s.is_object() || !s.contains("id") || !s["id"].is_number_unsigned() || !s.contains("channelId") ||
          !s["channelId"].is_number_unsigned()) {
        error_status("subscribe: each subscription needs a whole-number \"id\" and \"channelId\"");
        continue;
      }
      const auto sub = s["id"].get<std::uint64_t>();
      const auto ch = s["channelId"].get<std::uint64_t>();
      if (sub > 0xffffffffu) {
        error_status("subscribe: subscription id " + std::to_string(sub) + " does not fit in 32 bits");
        continue;
      }
      if (ch > server_.max_channel || !server_.subscribers || !advertised(static_cast<std::uint16_t>(ch))) {
        error_status("subscribe: unknown channel id " + std::to_string(ch));
        continue;
      }
      if (subs_.count(static_cast<std::uint32_t>(sub))) {
        error_status("subscribe: subscription id " + std::to_string(sub) + " is already in use");
        continue;
      }
      if (by_channel_.count(static_cast<std::uint16_t>(ch))) {
        error_status("subscribe: channel " + std::to_string(ch) + " is already subscribed (subscription " +
                     std::to_string(by_channel_[static_cast<std::uint16_t>(ch)]) + ")");
        continue;
      }
      subs_[static_cast<std::uint32_t>(sub)] = static_cast<std::uint16_t>(ch);
      by_channel_[static_cast<std::uint16_t>(ch)] = static_cast<std::uint32_t>(sub);
      server_.subscribers[ch].fetch_add(1);
      // latched channels (the scene, the summary): the last message at once
      std::lock_guard lock(server_.inbox_mutex);
      const auto it = server_.latched_last.find(static_cast<std::uint16_t>(ch));
      if (it != server_.latched_last.end()) deliver(it->second);
    }
  }

  bool advertised(std::uint16_t ch) const {
    for (const auto& c : server_.channels)
      if (c.id == ch) return true;
    return false;
  }

  void unsubscribe(const json& j) {
    const auto ids = j.value("subscriptionIds", json());
    if (!ids.is_array()) return error_status("unsubscribe: \"subscriptionIds\" must be an array of numbers");
    for (const auto& i : ids) {
      if (!i.is_number_unsigned() || !subs_.count(static_cast<std::uint32_t>(i.get<std::uint64_t>()))) {
        error_status("unsubscribe: unknown subscription id " + i.dump());
        continue;
      }
      const auto sub = static_cast<std::uint32_t>(i.get<std::uint64_t>());
      const std::uint16_t ch = subs_[sub];
      subs_.erase(sub);
      by_channel_.erase(ch);
      server_.subscribers[ch].fetch_sub(1);
    }
  }

  // submits to the session; `reply` runs on the server thread with the answer
  bool submit(runtime::ControlRequest r, std::function<void(Connection&, bool, const std::string&)> reply,
              std::string* why) {
    if (!server_.control) {
      if (why) *why = "this server has no session to steer";
      return false;
    }
    if (in_flight_ >= max_in_flight_calls) {
      if (why) *why = "too many calls in flight (" + std::to_string(max_in_flight_calls) + "); wait for answers";
      return false;
    }
    std::weak_ptr<Connection> weak = weak_from_this();
    auto ioc = server_.ioc;
    r.done = [weak, ioc, reply](bool ok, const std::string& text) {
      net::post(*ioc, [weak, reply, ok, text] {
        if (auto self = weak.lock()) reply(*self, ok, text);
      });
    };
    if (!server_.control->submit(std::move(r), why)) return false;
    ++in_flight_;
    return true;
  }

  void get_parameters(const json& j) {
    const json id = j.value("id", json());
    const json names = j.value("parameterNames", json::array());
    runtime::ControlRequest r;
    r.kind = runtime::ControlRequest::Kind::parameters;
    std::string why;
    const bool ok = submit(
        std::move(r),
        [id, names](Connection& c, bool ok, const std::string& text) {
          if (c.in_flight_ > 0) --c.in_flight_;
          if (!ok) return c.error_status("getParameters: " + text);
          json all = json::parse(text, nullptr, false);
          json list = json::array();
          for (const auto& p : all)
            if (!names.is_array() || names.empty() || std::find(names.begin(), names.end(), p["name"]) != names.end())
              list.push_back(p);
          json out{{"op", "parameterValues"}, {"parameters", list}};
          if (!id.is_null()) out["id"] = id;
          c.send_text(out.dump());
        },
        &why);
    if (!ok) error_status("getParameters: " + why);
  }

  void set_parameters(const json& j) {
    const json id = j.value("id", json());
    const json params = j.value("parameters", json());
    if (!params.is_array()) return error_status("setParameters: \"parameters\" must be an array of {name, value}");
    // answered once every one has been taken by the session
    auto state = std::make_shared<std::pair<std::size_t, json>>(0, json::array());
    std::size_t submitted = 0;
    std::vector<std::pair<runtime::ControlRequest, json>> requests;
    for (const auto& p : params) {
      if (!p.is_object() || !p.contains("name") || !p["name"].is_string() || !p.contains("value") ||
          !p["value"].is_number()) {
        error_status("setParameters: each parameter needs a string \"name\" and a number \"value\"");
        continue;
      }
      const std::string name = p["name"];
      runtime::ControlRequest r;
      if (name == "rtf") {
        r.kind = runtime::ControlRequest::Kind::set_rtf;
        r.value = p["value"].get<double>();
      } else if (server_.opt.replay) {
        error_status("setParameters " + name + ": a replay plays the recording back; only rtf can be set");
        continue;
      } else {
        r.kind = runtime::ControlRequest::Kind::world;
        r.command.kind = runtime::OperatorCommand::Kind::set_parameter;
        r.command.name = name;
        r.command.value = p["value"].get<double>();
      }
      requests.emplace_back(std::move(r), json{{"name", name}, {"value", p["value"]}});
    }
    state->first = requests.size();
    for (auto& [r, value] : requests) {
      std::string why;
      const json v = value;
      const bool ok = submit(
          std::move(r),
          [state, id, v](Connection& c, bool ok, const std::string& text) {
            if (c.in_flight_ > 0) --c.in_flight_;
            if (ok)
              state->second.push_back(v);
            else
              c.error_status("setParameters " + v["name"].get<std::string>() + ": " + text);
            if (--state->first > 0) return;
            json out{{"op", "parameterValues"}, {"parameters", state->second}};
            if (!id.is_null()) out["id"] = id;
            c.send_text(out.dump());
            if (!state->second.empty()) c.server_.param_changed(state->second);
          },
          &why);
      if (!ok) {
        error_status("setParameters " + v["name"].get<std::string>() + ": " + why);
        --state->first;
      } else {
        ++submitted;
      }
    }
    if (submitted == 0 && !id.is_null())
      send_text(json{{"op", "parameterValues"}, {"parameters", json::array()}, {"id", id}}.dump());
  }

  void on_binary(const std::string& data) {
    if (data.empty()) return protocol_error("malformed binary frame: empty");
    const auto op = static_cast<std::uint8_t>(data[0]);
    if (op == 0x01) return error_status("client message data: this server does not take client channels");
    if (op != 0x02) return protocol_error("malformed binary frame: unknown opcode " + std::to_string(op));
    ServiceCall call;
    std::string why;
    if (!decode_service_call(data, call, &why)) return protocol_error("malformed service call: " + why);
    auto respond_error = [&](const std::string& text) {
      Out o;
      o.binary = true;
      encode_service_response(call.service, call.call, "json", json{{"ok", false}, {"error", text}}.dump(), o.bytes);
      enqueue(std::move(o));
    };
    const Service* service = find_service(call.service);
    if (!service) {
      error_status("service call " + std::to_string(call.call) + ": unknown service id " +
                   std::to_string(call.service));
      return respond_error("unknown service id " + std::to_string(call.service));
    }
    if (call.encoding != "json")
      return respond_error("the request encoding must be json, got \"" + call.encoding + "\"");
    runtime::ControlRequest r;
    if (!build_request(*service, call.payload, server_.bodies, r, &why)) {
      error_status(std::string(service->name) + ": " + why);
      return respond_error(why);
    }
    if (server_.opt.replay && r.kind == runtime::ControlRequest::Kind::world)
      return respond_error(std::string(service->name) +
                           ": a replay plays the recording back; it cannot change the world");
    const std::uint32_t sid = call.service, cid = call.call;
    const bool ok = submit(
        std::move(r),
        [sid, cid](Connection& c, bool ok, const std::string& text) {
          json out;
          if (ok) {
            out = json::parse(text, nullptr, false);
            if (!out.is_object()) out = json::object();
            out["ok"] = true;
          } else {
            out = json{{"ok", false}, {"error", text}};
          }
          c.service_response(sid, cid, out.dump());
        },
        &why);
    if (!ok) respond_error(why);
  }

  void enqueue(Out o) {
    if (finished_) return;
    if (o.droppable) {
      if (data_queued_ >= server_.opt.queue_messages) {
        // drop the oldest data message not being written now
        for (auto it = queue_.begin() + (writing_ ? 1 : 0); it != queue_.end(); ++it)
          if (it->droppable) {
            queue_.erase(it);
            --data_queued_;
            ++dropped_;
            ++dropped_unreported_;
            server_.dropped_live.fetch_add(1, std::memory_order_relaxed);
            break;
          }
      }
      ++data_queued_;
    } else if (queue_.size() - data_queued_ >= max_control_queued) {
      // a client that sends requests but never reads the answers
      finish("closed: it does not read its responses (" + std::to_string(max_control_queued) + " queued)");
      beast::get_lowest_layer(ws_).close();
      return;
    }
    queue_.push_back(std::move(o));
    const auto now = std::chrono::steady_clock::now();
    if (dropped_unreported_ > 0 && now - last_drop_notice_ > std::chrono::seconds(1)) {
      last_drop_notice_ = now;
      Out s;
      s.bytes =
          status_text(1, "this client reads slower than the session publishes: " + std::to_string(dropped_unreported_) +
                             " messages dropped (" + std::to_string(dropped_) +
                             " in all; live.queue_messages = " + std::to_string(server_.opt.queue_messages) + ")");
      dropped_unreported_ = 0;
      queue_.push_back(std::move(s));
    }
    // nothing is written before the upgrade's own response has gone out (Beast allows one
    // write at a time on a stream)
    if (!writing_ && accepted_) write_next();
  }

  void write_next() {
    if (queue_.empty() || finished_) {
      writing_ = false;
      return;
    }
    writing_ = true;
    Out& o = queue_.front();
    if (o.close) {
      ws_.async_close(websocket::close_reason(o.code, o.bytes), [self = shared_from_this()](beast::error_code) {
        self->finish(self->close_reason_.empty() ? "closed" : "closed: " + self->close_reason_);
      });
      return;
    }
    ws_.binary(o.binary);
    ws_.async_write(net::buffer(o.bytes), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) {
        self->finish("write failed: " + ec.message());
        return;
      }
      if (self->queue_.front().droppable) --self->data_queued_;
      ++self->sent_;
      self->queue_.pop_front();
      self->write_next();
    });
  }

  // the connection is over: release its subscriptions, keep its figures
  void finish(const std::string& why) {
    if (finished_) return;
    finished_ = true;
    closing_ = true;
    for (const auto& kv : subs_) server_.subscribers[kv.second].fetch_sub(1);
    subs_.clear();
    by_channel_.clear();
    if (upgraded_) {
      --server_.clients_now;
      spdlog::info("live: client {} ({}) {}; {} messages sent, {} dropped", id_, remote_, why, sent_, dropped_);
      std::lock_guard lock(server_.stats_mutex);
      if (server_.finished.size() < max_finished_clients)
        server_.finished.push_back(
            {{"client", id_}, {"remote", remote_}, {"sent", sent_}, {"dropped", dropped_}, {"end", why}});
    }
    beast::error_code ec;
    beast::get_lowest_layer(ws_).socket().close(ec);
    auto self = shared_from_this();
    net::post(*server_.ioc, [self] {
      Server::Impl& s = self->server_;
      s.connections.erase(self);
      if (s.stopping && s.connections.empty()) s.ioc->stop();  // every client has gone: done
    });
  }

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
  std::uint64_t dropped_ = 0, dropped_unreported_ = 0, sent_ = 0;
  std::chrono::steady_clock::time_point last_drop_notice_{};
  std::size_t in_flight_ = 0;
  std::map<std::uint32_t, std::uint16_t> subs_;        // subscription id -> channel
  std::map<std::uint16_t, std::uint32_t> by_channel_;  // channel -> subscription id
  bool param_all_ = false;
  std::set<std::string> param_names_;

  friend struct Server::Impl;
};

std::size_t Server::Impl::upgraded() const {
  std::size_t n = 0;
  for (const auto& c : connections) n += c->upgraded();
  return n;
}

void Server::Impl::accept() {
  acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted) return;
    if (!ec) {
      // sockets still in their handshake count too, so a flood of half-open ones is bounded
      if (connections.size() >= 4 * static_cast<std::size_t>(opt.max_clients) + 16) {
        std::lock_guard lock(stats_mutex);
        ++refused_full;
        beast::error_code ignored;
        socket.close(ignored);
      } else {
        auto c = std::make_shared<Connection>(*this, std::move(socket), next_id++);
        connections.insert(c);
        c->start();
      }
    }
    accept();
  });
}

void Server::Impl::drain() {
  std::deque<Msg> batch;
  {
    std::lock_guard lock(inbox_mutex);
    batch.swap(inbox);
    drain_posted = false;
  }
  std::uint64_t latest = 0;
  bool any = false;
  for (const Msg& m : batch) {
    if (!m.time_only)
      for (const auto& c : connections) c->deliver(m);
    if (m.channel < latched.size() && latched[m.channel]) continue;
    latest = std::max(latest, m.time_ns);
    any = true;
  }
  if (any) {
    last_time_ns = latest;
    have_time = true;
    for (const auto& c : connections) c->send_time(latest);
  }
}

// server thread: the channels' latest messages whose interval is over go out now
void Server::Impl::flush_rate_limited() {
  auto due = std::chrono::steady_clock::time_point::max();
  {
    std::lock_guard lock(inbox_mutex);
    const auto now = std::chrono::steady_clock::now();
    for (Rate& r : rates) {
      if (!r.pending) continue;
      if (r.take(now, opt.max_rate_hz)) {
        inbox.push_back(std::move(r.latest));
        r.latest = Msg{};
        r.pending = false;
      } else {
        due = std::min(due, r.next_token(opt.max_rate_hz));
      }
    }
    flush_armed = due != std::chrono::steady_clock::time_point::max();
  }
  drain();
  if (due != std::chrono::steady_clock::time_point::max()) arm_flush(due);
}

void Server::Impl::arm_flush(std::chrono::steady_clock::time_point at) {
  flush_timer.expires_at(at);
  flush_timer.async_wait([this](beast::error_code ec) {
    if (!ec) flush_rate_limited();
  });
}

void Server::Impl::param_changed(const json& values) {
  for (const auto& c : connections) c->param_values(values);
}

Server::Server(ServerOptions options, runtime::SessionControl* control) : impl_(std::make_unique<Impl>()) {
  impl_->opt = std::move(options);
  impl_->control = control;
}

Server::~Server() { stop(); }

void Server::set_channels(const std::vector<runtime::RecordedChannel>& channels) {
  Impl& s = *impl_;
  json adv = json::array();
  for (const auto& c : channels) {
    s.max_channel = std::max<std::size_t>(s.max_channel, c.id);
    if (c.encoding != "json") continue;  // the binary replay channels stay in the file
    s.channels.push_back(c);
    json ch{{"id", c.id}, {"topic", c.topic}, {"encoding", "json"}};
    if (c.schema_name.empty()) {
      // a plain JSON channel: a permissive schema, named after the topic
      std::string name = c.topic.substr(c.topic.find_first_not_of('/'));
      for (char& ch2 : name)
        if (ch2 == '/') ch2 = '.';
      ch["schemaName"] = name;
      ch["schema"] = R"({"type":"object"})";
      ch["schemaEncoding"] = "jsonschema";
    } else {
      ch["schemaName"] = c.schema_name;
      ch["schema"] = c.schema;
      ch["schemaEncoding"] = c.schema_encoding.empty() ? "jsonschema" : c.schema_encoding;
    }
    adv.push_back(std::move(ch));
  }
  s.subscribers = std::make_unique<std::atomic<int>[]>(s.max_channel + 1);
  s.latched.assign(s.max_channel + 1, false);
  Impl::Rate full;
  full.tokens = rate_burst;
  s.rates.assign(s.max_channel + 1, full);
  for (const auto& c : s.channels) {
    if (c.topic == runtime::topics::scene || c.topic == runtime::topics::summary) s.latched[c.id] = true;
    if (c.topic == runtime::topics::timing) s.time_channel = c.id;
  }
  s.advertise_text = json{{"op", "advertise"}, {"channels", adv}}.dump();
}

void Server::set_bodies(std::vector<std::pair<std::string, std::uint32_t>> bodies) {
  impl_->bodies = std::move(bodies);
}

void Server::start() {
  Impl& s = *impl_;
  if (!is_loopback(s.opt.host) && s.opt.token.empty())
    throw std::runtime_error("the live server binds to " + s.opt.host +
                             ", which is not a loopback address: set live.token in the scenario or "
                             "TETHER_LIVE_TOKEN in the environment (clients then present it)");
  json services = json::array();
  for (const Service& sv : service_table())
    services.push_back({{"id", sv.id},
                        {"name", sv.name},
                        {"type", sv.type},
                        {"requestSchema", sv.request_schema},
                        {"responseSchema", sv.response_schema}});
  s.services_text = json{{"op", "advertiseServices"}, {"services", services}}.dump();
  json caps = json::array({"time"});
  if (s.control) {
    caps.push_back("services");
    caps.push_back("parameters");
    caps.push_back("parametersSubscribe");
  }
  s.server_info_text = json{{"op", "serverInfo"},
                            {"name", s.opt.name},
                            {"capabilities", caps},
                            {"supportedEncodings", json::array({"json"})},
                            {"metadata", {{"server", "tether"}, {"time", "simulation time"}}},
                            {"sessionId", std::to_string(std::chrono::system_clock::now().time_since_epoch() /
                                                         std::chrono::milliseconds(1))}}
                           .dump();
  if (!s.subscribers) set_channels({});

  beast::error_code ec;
  const auto address = net::ip::make_address(s.opt.host == "localhost" ? "127.0.0.1" : s.opt.host, ec);
  if (ec) throw std::runtime_error("live server: \"" + s.opt.host + "\" is not an IP address");
  const tcp::endpoint ep(address, s.opt.port);
  s.acceptor.open(ep.protocol(), ec);
  if (!ec) s.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(ep, ec);
  if (!ec) s.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec)
    throw std::runtime_error("live server: cannot listen on " + s.opt.host + ":" + std::to_string(s.opt.port) + ": " +
                             ec.message());
  s.bound_port = s.acceptor.local_endpoint().port();
  s.accept();
  s.thread = std::thread([&s] {
    for (;;) {
      try {
        s.ioc->run();
        return;
      } catch (const std::exception& e) {
        spdlog::error("live server: {} (the server goes on)", e.what());
      }
    }
  });
}

void Server::stop() {
  Impl& s = *impl_;
  if (!s.thread.joinable()) return;
  net::post(*s.ioc, [&s] {
    beast::error_code ec;
    s.acceptor.close(ec);
    s.stopping = true;
    if (s.connections.empty()) s.ioc->stop();
    auto all = s.connections;
    for (const auto& c : all) c->close(websocket::close_code::going_away, "the session ended");
  });
  // a client that stalls its close does not hold up the end of the run
  auto timer = std::make_shared<net::steady_timer>(*s.ioc, std::chrono::seconds(1));
  timer->async_wait([&s, timer](beast::error_code) { s.ioc->stop(); });
  s.thread.join();
}

std::uint16_t Server::port() const { return impl_->bound_port; }

json Server::summary() const {
  const Impl& s = *impl_;
  std::lock_guard lock(s.stats_mutex);
  return json{{"address", s.opt.host + ":" + std::to_string(s.bound_port)},
              {"clients", s.clients_total},
              {"refused", {{"token", s.refused_token}, {"full", s.refused_full}, {"protocol", s.refused_protocol}}},
              {"http_requests", s.http_requests},
              {"closed_for_cause", s.closed_for_cause},
              {"clients_connected", s.clients_now.load()},
              {"dropped_messages", s.dropped_live.load()},
              {"server_dropped_messages", s.inbox_dropped.load()},
              {"rate_limited_messages", s.rate_limited.load()},
              {"per_client", s.finished}};
}

bool Server::wants(std::uint16_t channel) const {
  const Impl& s = *impl_;
  if (!s.subscribers || channel > s.max_channel) return false;
  if (s.latched[channel]) return true;
  if (s.clients_now.load(std::memory_order_relaxed) == 0) return false;
  return channel == s.time_channel || s.subscribers[channel].load(std::memory_order_relaxed) > 0;
}

void Server::message(std::uint16_t channel, std::uint64_t log_time_ns, std::string_view bytes) {
  Impl& s = *impl_;
  bool post = false;
  auto arm = std::chrono::steady_clock::time_point::max();
  {
    std::lock_guard lock(s.inbox_mutex);
    const bool latched = channel < s.latched.size() && s.latched[channel];
    if (latched) s.latched_last[channel] = Msg{channel, log_time_ns, std::string(bytes)};
    const bool subscribed = s.subscribers[channel].load(std::memory_order_relaxed) > 0;
    bool forward = subscribed || (channel == s.time_channel && s.clients_now.load(std::memory_order_relaxed) > 0);
    if (forward && !latched && s.opt.max_rate_hz > 0) {
      Impl::Rate& r = s.rates[channel];
      if (!r.take(std::chrono::steady_clock::now(), s.opt.max_rate_hz)) {
        // no token left: it waits as the channel's latest (replacing one waiting)
        if (r.pending) ++s.rate_limited;
        r.pending = true;
        r.latest.channel = channel;
        r.latest.time_ns = log_time_ns;
        r.latest.time_only = !subscribed;
        r.latest.bytes.assign(subscribed ? bytes : std::string_view());
        if (!s.flush_armed) {
          s.flush_armed = true;
          arm = r.next_token(s.opt.max_rate_hz);
        }
        forward = false;
      } else {
        if (r.pending) ++s.rate_limited;  // a newer one goes out now instead
        r.pending = false;
      }
    }
    if (forward) {
      if (s.inbox.size() >= max_inbox) {
        s.inbox.pop_front();
        s.inbox_dropped.fetch_add(1);
      }
      // nobody subscribes to the timing channel: its message only advances the time
      s.inbox.push_back(subscribed ? Msg{channel, log_time_ns, std::string(bytes), false}
                                   : Msg{channel, log_time_ns, std::string(), true});
    }
    if (!s.drain_posted && !s.inbox.empty()) {
      s.drain_posted = true;
      post = true;
    }
  }
  if (post) net::post(*s.ioc, [&s] { s.drain(); });
  if (arm != std::chrono::steady_clock::time_point::max()) net::post(*s.ioc, [&s, arm] { s.arm_flush(arm); });
}

}  // namespace tether::live
