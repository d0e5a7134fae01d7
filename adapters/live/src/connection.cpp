// SPDX-License-Identifier: Apache-2.0
// One client's connection: the HTTP upgrade (token, subprotocol, the client cap, the
// dashboard page), reads, and the bounded send queue that drops the oldest data messages.
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange under C++20

#include "server_impl.hpp"

#include <spdlog/spdlog.h>

namespace tether::live {

std::string status_text(int level, const std::string& message) {
  return json{{"op", "status"}, {"level", level}, {"message", message}}.dump();
}

namespace {

// constant-time comparison: a wrong token takes as long whatever its prefix
bool same_token(const std::string& a, const std::string& b) {
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i % (b.size() ? b.size() : 1)]);
  return diff == 0 && !b.empty();
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// a query value percent-decoded (RFC 3986); with plus_is_space also '+' as a space, as
// application/x-www-form-urlencoded writes it (Python's urlencode). False on a broken escape.
bool percent_decode(std::string_view in, bool plus_is_space, std::string& out) {
  out.clear();
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '%') {
      if (i + 2 >= in.size()) return false;
      const int hi = hex_digit(in[i + 1]), lo = hex_digit(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      out.push_back(plus_is_space && in[i] == '+' ? ' ' : in[i]);
    }
  }
  return true;
}

// a token from the query string: as sent, percent-decoded (encodeURIComponent, curl) or
// form-decoded (urlencode) — every comparison made, each in constant time
bool query_token_matches(const std::string& given, const std::string& token) {
  std::string decoded, form;
  const bool d = percent_decode(given, false, decoded);
  const bool f = percent_decode(given, true, form);
  const bool raw_ok = same_token(given, token);
  const bool decoded_ok = same_token(d ? decoded : std::string(), token);
  const bool form_ok = same_token(f ? form : std::string(), token);
  return raw_ok | decoded_ok | form_ok;
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

void Connection::start() {
  beast::get_lowest_layer(ws_).expires_after(
      std::chrono::milliseconds(static_cast<long>(server_.opt.handshake_timeout_s * 1000)));
  parser_.emplace();
  parser_->header_limit(16 * 1024);
  parser_->body_limit(4 * 1024);
  http::async_read(beast::get_lowest_layer(ws_), buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_request(ec); });
}

// a message of a channel: sent if this client subscribes to it
void Connection::deliver(const Msg& m) {
  if (!accepted_ || closing_) return;
  const auto it = by_channel_.find(m.channel);
  if (it == by_channel_.end()) return;
  Out o;
  o.binary = true;
  o.droppable = true;
  encode_message_data(it->second, m.time_ns, m.bytes, o.bytes);
  enqueue(std::move(o));
}

void Connection::send_time(std::uint64_t t) {
  if (!accepted_ || closing_) return;
  Out o;
  o.binary = true;
  o.droppable = true;
  encode_time(t, o.bytes);
  enqueue(std::move(o));
}

void Connection::send_text(std::string text) {
  Out o;
  o.bytes = std::move(text);
  enqueue(std::move(o));
}

void Connection::service_response(std::uint32_t service, std::uint32_t call, const std::string& payload) {
  if (in_flight_ > 0) --in_flight_;
  if (!upgraded_ || closing_) return;
  Out o;
  o.binary = true;
  encode_service_response(service, call, "json", payload, o.bytes);
  enqueue(std::move(o));
}

// closes once what is queued before is sent (a reason the client can read)
void Connection::close(websocket::close_code code, std::string reason) {
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

void Connection::param_values(const json& values) {
  if (!upgraded_ || closing_ || (!param_all_ && param_names_.empty())) return;
  json list = json::array();
  for (const auto& p : values)
    if (param_all_ || param_names_.count(p.value("name", ""))) list.push_back(p);
  if (!list.empty()) send_text(json{{"op", "parameterValues"}, {"parameters", list}}.dump());
}

void Connection::on_request(beast::error_code ec) {
  if (finished_) return;  // closed while it waited (made room for a newer connection)
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
    const std::string given = query_param(target, "token");
    if (!given.empty()) return query_token_matches(given, server_.opt.token);
    const auto auth_view = req[http::field::authorization];
    const std::string auth(auth_view.data(), auth_view.size());
    return auth.rfind("Bearer ", 0) == 0 && same_token(auth.substr(7), server_.opt.token);
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

void Connection::plain_response(http::status status, std::string body, const char* type, bool head_only) {
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

void Connection::on_accept(beast::error_code ec) {
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

void Connection::read() {
  ws_.async_read(in_, [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
}

void Connection::on_read(beast::error_code ec) {
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
void Connection::protocol_error(const std::string& why) {
  {
    std::lock_guard lock(server_.stats_mutex);
    ++server_.closed_for_cause;
  }
  send_text(status_text(2, why));
  close(websocket::close_code::protocol_error, why);
}

void Connection::enqueue(Out o) {
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
  } else if (queue_.size() - data_queued_ >= max_control_queued ||
             control_bytes_queued_ + o.bytes.size() > max_control_queued_bytes) {
    // a client that sends requests but never reads the answers
    {
      std::lock_guard lock(server_.stats_mutex);
      ++server_.closed_for_cause;
    }
    finish("closed: it does not read its responses (" + std::to_string(queue_.size() - data_queued_) + " waiting, " +
           std::to_string(control_bytes_queued_) + " bytes; " + std::to_string(sent_bytes_) +
           " bytes taken by its socket before)");
    beast::get_lowest_layer(ws_).close();
    return;
  } else {
    control_bytes_queued_ += o.bytes.size();
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
    control_bytes_queued_ += s.bytes.size();
    queue_.push_back(std::move(s));
  }
  // nothing is written before the upgrade's own response has gone out (Beast allows one
  // write at a time on a stream)
  if (!writing_ && accepted_) write_next();
}

void Connection::write_next() {
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
    const Out& done = self->queue_.front();
    if (done.droppable)
      --self->data_queued_;
    else
      self->control_bytes_queued_ -= done.bytes.size();
    ++self->sent_;
    self->sent_bytes_ += done.bytes.size();
    self->queue_.pop_front();
    self->write_next();
  });
}

json Connection::figures(const std::string& end) const {
  return {{"client", id_},       {"remote", remote_}, {"sent", sent_}, {"sent_bytes", sent_bytes_},
          {"dropped", dropped_}, {"end", end}};
}

void Connection::refuse_busy() {
  plain_response(http::status::service_unavailable,
                 "busy: too many connections waiting for their handshake; try again\n");
}

// the connection is over: release its subscriptions, keep its figures
void Connection::finish(const std::string& why) {
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
    if (server_.finished.size() < max_finished_clients) server_.finished.push_back(figures(why));
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

}  // namespace tether::live
