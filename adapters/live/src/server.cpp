// SPDX-License-Identifier: Apache-2.0
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange under C++20

#include "server_impl.hpp"

#include <arpa/inet.h>

#include <cstdlib>
#include <future>
#include <stdexcept>

#include <spdlog/spdlog.h>

namespace tether::live {

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

std::size_t Server::Impl::upgraded() const {
  std::size_t n = 0;
  for (const auto& c : connections) n += c->upgraded();
  return n;
}

void Server::Impl::accept() {
  acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted) return;
    if (!ec) {
      // sockets still in their handshake count too, so a flood of half-open ones is bounded;
      // when the pool is full the oldest connection still in its handshake makes room (an
      // idle one cannot hold the door shut), and with none to close the newcomer is answered 503
      const std::size_t pool = 4 * static_cast<std::size_t>(opt.max_clients) + 16;
      if (connections.size() >= pool) {
        std::shared_ptr<Connection> oldest;
        for (const auto& c : connections)
          if (!c->upgraded() && !c->finished() && (!oldest || c->id() < oldest->id())) oldest = c;
        if (oldest) {
          {
            std::lock_guard lock(stats_mutex);
            ++idle_closed;
          }
          oldest->finish("closed before the upgrade: the handshake pool (" + std::to_string(pool) +
                         ") was full and it was the oldest waiting");
        }
      }
      beast::error_code ignored;  // a socket that refuses the option keeps the kernel's default
      socket.set_option(net::socket_base::send_buffer_size(socket_send_buffer_bytes), ignored);
      auto c = std::make_shared<Connection>(*this, std::move(socket), next_id++);
      connections.insert(c);
      if (connections.size() > pool + 16) {
        {
          std::lock_guard lock(stats_mutex);
          ++refused_full;
        }
        c->refuse_busy();
      } else {
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
  json advertised = json::array();
  for (const Service& sv : services().entries())
    advertised.push_back({{"id", sv.id},
                          {"name", sv.name},
                          {"type", sv.type},
                          {"requestSchema", request_schema(sv)},
                          {"responseSchema", sv.response_schema}});
  s.services_text = json{{"op", "advertiseServices"}, {"services", advertised}}.dump();
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
  // the clients connected now, from the server thread (it owns them): every client that
  // connected appears in per_client, those that stayed to the end too
  json connected = json::array();
  if (s.thread.joinable() && !s.ioc->stopped()) {
    auto answer = std::make_shared<std::promise<json>>();
    auto figures = answer->get_future();
    net::post(*s.ioc, [&s, answer] {
      json list = json::array();
      for (const auto& c : s.connections)
        if (c->upgraded() && !c->finished()) list.push_back(c->figures("connected when the summary was written"));
      answer->set_value(std::move(list));
    });
    if (figures.wait_for(std::chrono::seconds(2)) == std::future_status::ready) connected = figures.get();
  }
  std::lock_guard lock(s.stats_mutex);
  json per_client = s.finished;
  for (auto& c : connected)
    if (per_client.size() < max_finished_clients) per_client.push_back(std::move(c));
  return json{{"address", s.opt.host + ":" + std::to_string(s.bound_port)},
              {"clients", s.clients_total},
              {"refused", {{"token", s.refused_token}, {"full", s.refused_full}, {"protocol", s.refused_protocol}}},
              {"http_requests", s.http_requests},
              {"closed_for_cause", s.closed_for_cause},
              {"idle_closed", s.idle_closed},
              {"clients_connected", s.clients_now.load()},
              {"dropped_messages", s.dropped_live.load()},
              {"server_dropped_messages", s.inbox_dropped.load()},
              {"rate_limited_messages", s.rate_limited.load()},
              {"per_client", per_client}};
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
