// SPDX-License-Identifier: Apache-2.0
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange under C++20

#include "tether/live/client.hpp"

#include <chrono>
#include <optional>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include "tether/live/protocol.hpp"

namespace tether::live {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;
using nlohmann::json;

struct Client::Impl {
  net::io_context ioc;
  std::optional<websocket::stream<beast::tcp_stream>> ws;
  beast::flat_buffer buffer;
  bool open = false;

  // runs the io_context until `done` or the timeout; cancels the socket on timeout
  bool run(bool& done, double timeout_s) {
    ioc.restart();
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::microseconds(static_cast<std::int64_t>(timeout_s * 1e6));
    while (!done && std::chrono::steady_clock::now() < until) {
      ioc.run_one_until(until);
      if (ioc.stopped()) break;
    }
    if (done) return true;
    // give up on the connection: closing the stream (socket and timer) completes every
    // operation still pending, so no handler outlives the locals it refers to (a socket
    // cancel alone left a close handshake with a vanished server waiting forever)
    if (ws) beast::get_lowest_layer(*ws).close();
    ioc.restart();
    while (!done && ioc.run_one() > 0) {
    }
    return false;
  }
};

Client::Client() : impl_(std::make_unique<Impl>()) {}

Client::~Client() { close(); }

bool Client::connect(const std::string& url, const std::string& token, std::string* error, double timeout_s) {
  auto fail = [error](std::string why) {
    if (error) *error = std::move(why);
    return false;
  };
  // ws://HOST:PORT/PATH
  std::string rest = url;
  if (rest.rfind("ws://", 0) == 0)
    rest = rest.substr(5);
  else if (rest.find("://") != std::string::npos)
    return fail("only ws:// URLs are supported: " + url);
  const auto slash = rest.find('/');
  const std::string hostport = rest.substr(0, slash);
  std::string target = slash == std::string::npos ? "/" : rest.substr(slash);
  if (target.rfind("/?", 0) != 0 && target.find('?') == 0) target = "/" + target;
  std::string host = hostport, port = "8765";
  const auto colon = hostport.rfind(':');
  if (colon != std::string::npos && hostport.find(']') == std::string::npos) {
    host = hostport.substr(0, colon);
    port = hostport.substr(colon + 1);
  } else if (hostport.size() > 2 && hostport.front() == '[') {
    const auto close = hostport.find(']');
    host = hostport.substr(1, close - 1);
    if (close + 1 < hostport.size() && hostport[close + 1] == ':') port = hostport.substr(close + 2);
  }
  if (host.empty()) return fail("no host in " + url);

  Impl& s = *impl_;
  s.ws.emplace(s.ioc);
  beast::error_code ec;
  tcp::resolver resolver(s.ioc);
  const auto endpoints = resolver.resolve(host, port, ec);
  if (ec) return fail("cannot resolve " + host + ":" + port + ": " + ec.message());
  bool done = false;
  beast::get_lowest_layer(*s.ws).expires_after(std::chrono::microseconds(static_cast<std::int64_t>(timeout_s * 1e6)));
  beast::get_lowest_layer(*s.ws).async_connect(endpoints, [&](beast::error_code e, const tcp::endpoint&) {
    ec = e;
    done = true;
  });
  if (!s.run(done, timeout_s) || ec)
    return fail("cannot connect to " + host + ":" + port + ": " + (ec ? ec.message() : "timed out"));

  s.ws->set_option(websocket::stream_base::decorator([token](websocket::request_type& req) {
    req.set(http::field::sec_websocket_protocol, "foxglove.websocket.v1");
    if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
  }));
  websocket::response_type res;
  done = false;
  s.ws->async_handshake(res, host + ":" + port, target, [&](beast::error_code e) {
    ec = e;
    done = true;
  });
  if (!s.run(done, timeout_s)) return fail("the WebSocket upgrade timed out");
  if (ec) {
    std::string body = res.body();
    while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.pop_back();
    return fail("the server refused the connection (HTTP " + std::to_string(res.result_int()) + ")" +
                (body.empty() ? ": " + ec.message() : ": " + body));
  }
  beast::get_lowest_layer(*s.ws).expires_never();
  s.open = true;
  // serverInfo, advertise, advertiseServices come first
  if (!wait_op("serverInfo", server_info_, timeout_s, error)) return false;
  json j;
  if (!wait_op("advertise", j, timeout_s, error)) return false;
  if (server_info_.contains("capabilities") && server_info_["capabilities"].is_array()) {
    for (const auto& c : server_info_["capabilities"])
      if (c == "services") {
        json sv;
        if (!wait_op("advertiseServices", sv, timeout_s, error)) return false;
      }
  }
  return true;
}

void Client::note(const Frame& f) {
  if (f.binary) return;
  const json j = json::parse(f.data, nullptr, false);
  if (!j.is_object()) return;
  const std::string op = j.value("op", "");
  if (op == "advertise" && j.contains("channels"))
    for (const auto& c : j["channels"]) channels_.push_back(c);
  if (op == "advertiseServices" && j.contains("services"))
    for (const auto& c : j["services"]) services_.push_back(c);
  if (op == "status") statuses_.push_back(j);
}

bool Client::read_one(Frame& f, double timeout_s, std::string* error) {
  Impl& s = *impl_;
  if (!s.open) {
    if (error) *error = "not connected" + (close_reason_.empty() ? std::string() : " (" + close_reason_ + ")");
    return false;
  }
  bool done = false;
  beast::error_code ec;
  s.ws->async_read(s.buffer, [&](beast::error_code e, std::size_t) {
    ec = e;
    done = true;
  });
  if (!s.run(done, timeout_s)) {
    // a cancelled read leaves a websocket stream unusable: the connection is over
    s.open = false;
    if (error) *error = "timed out after " + std::to_string(timeout_s) + " s";
    return false;
  }
  if (ec) {
    s.open = false;
    const auto& reason = s.ws->reason();
    close_reason_ = ec == websocket::error::closed
                        ? "closed by the server (code " + std::to_string(static_cast<int>(reason.code)) +
                              (reason.reason.empty() ? "" : ": " + std::string(reason.reason.c_str())) + ")"
                        : "connection lost: " + ec.message();
    if (error) *error = close_reason_;
    return false;
  }
  f.binary = !s.ws->got_text();
  f.data = beast::buffers_to_string(s.buffer.data());
  s.buffer.consume(s.buffer.size());
  note(f);
  return true;
}

bool Client::next(Frame& f, double timeout_s, std::string* error) {
  if (!kept_.empty()) {
    f = std::move(kept_.front());
    kept_.pop_front();
    return true;
  }
  return read_one(f, timeout_s, error);
}

bool Client::wait_op(const std::string& op, json& out, double timeout_s, std::string* error) {
  for (auto it = kept_.begin(); it != kept_.end(); ++it)
    if (!it->binary) {
      json j = json::parse(it->data, nullptr, false);
      if (j.is_object() && j.value("op", "") == op) {
        out = std::move(j);
        kept_.erase(it);
        return true;
      }
    }
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::microseconds(static_cast<std::int64_t>(timeout_s * 1e6));
  for (;;) {
    const double left = std::chrono::duration<double>(until - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      if (error) *error = "no \"" + op + "\" from the server within " + std::to_string(timeout_s) + " s";
      return false;
    }
    Frame f;
    if (!read_one(f, left, error)) return false;
    if (!f.binary) {
      json j = json::parse(f.data, nullptr, false);
      if (j.is_object() && j.value("op", "") == op) {
        out = std::move(j);
        return true;
      }
    }
    kept_.push_back(std::move(f));
    if (kept_.size() > 100000) kept_.pop_front();  // a caller that never reads its data
  }
}

bool Client::call(const std::string& service, const json& request, json& response, std::string* error,
                  double timeout_s) {
  std::uint32_t id = 0;
  for (const auto& s : services_)
    if (s.value("name", "") == service) id = s.value("id", 0u);
  if (id == 0) {
    if (error) *error = "the server offers no service " + service;
    return false;
  }
  const std::uint32_t call = next_call_++;
  std::string frame;
  encode_service_call(id, call, "json", request.dump(), frame);
  if (!send_binary(frame, error)) return false;
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::microseconds(static_cast<std::int64_t>(timeout_s * 1e6));
  for (;;) {
    const double left = std::chrono::duration<double>(until - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      if (error) *error = service + ": no response within " + std::to_string(timeout_s) + " s";
      return false;
    }
    Frame f;
    if (!read_one(f, left, error)) return false;
    ServiceCall r;
    if (f.binary && !f.data.empty() && f.data[0] == 0x03 && decode_service_call(f.data, r, nullptr, 0x03) &&
        r.call == call) {
      response = json::parse(r.payload, nullptr, false);
      if (response.is_discarded()) {
        if (error) *error = service + ": the response is not JSON";
        return false;
      }
      return true;
    }
    kept_.push_back(std::move(f));
    if (kept_.size() > 100000) kept_.pop_front();
  }
}

bool Client::subscribe(const std::string& topic, std::uint32_t& subscription, std::string* error) {
  for (const auto& c : channels_)
    if (c.value("topic", "") == topic) {
      subscription = next_sub_++;
      const json j{{"op", "subscribe"},
                   {"subscriptions", json::array({{{"id", subscription}, {"channelId", c["id"]}}})}};
      return send_text(j.dump(), error);
    }
  if (error) *error = "the server advertises no topic " + topic;
  return false;
}

bool Client::send_text(const std::string& text, std::string* error) {
  Impl& s = *impl_;
  if (!s.open) {
    if (error) *error = "not connected";
    return false;
  }
  beast::error_code ec;
  s.ws->text(true);
  s.ws->write(net::buffer(text), ec);
  if (ec && error) *error = "send failed: " + ec.message();
  return !ec;
}

bool Client::send_binary(const std::string& bytes, std::string* error) {
  Impl& s = *impl_;
  if (!s.open) {
    if (error) *error = "not connected";
    return false;
  }
  beast::error_code ec;
  s.ws->binary(true);
  s.ws->write(net::buffer(bytes), ec);
  if (ec && error) *error = "send failed: " + ec.message();
  return !ec;
}

void Client::close() {
  Impl& s = *impl_;
  if (!s.open || !s.ws) return;
  s.open = false;
  bool done = false;
  s.ws->async_close(websocket::close_code::normal, [&](beast::error_code) { done = true; });
  s.run(done, 1.0);
}

}  // namespace tether::live
