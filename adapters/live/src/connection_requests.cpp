// SPDX-License-Identifier: Apache-2.0
// What a client asks (docs/live.md): subscriptions, parameters, and service calls, which go
// through the service table (tether/live/services.hpp) to the session's inbox.
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange under C++20

#include "server_impl.hpp"

namespace tether::live {

void Connection::on_text(const std::string& text) {
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

void Connection::subscribe(const json& j) {
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

bool Connection::advertised(std::uint16_t ch) const {
  for (const auto& c : server_.channels)
    if (c.id == ch) return true;
  return false;
}

void Connection::unsubscribe(const json& j) {
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
bool Connection::submit(runtime::ControlRequest r, std::function<void(Connection&, bool, const std::string&)> reply,
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

void Connection::get_parameters(const json& j) {
  const json id = j.value("id", json());
  const json names = j.value("parameterNames", json::array());
  runtime::ControlRequest r{runtime::ControlRequest::Parameters{}, {}};
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

void Connection::set_parameters(const json& j) {
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
      r.action = runtime::ControlRequest::SetRtf{p["value"].get<double>()};
    } else if (server_.opt.replay) {
      error_status("setParameters " + name + ": a replay plays the recording back; only rtf can be set");
      continue;
    } else {
      r.action = runtime::ControlRequest::World{runtime::SetParameter{name, p["value"].get<double>()}};
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

void Connection::on_binary(const std::string& data) {
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
    error_status("service call " + std::to_string(call.call) + ": unknown service id " + std::to_string(call.service));
    return respond_error("unknown service id " + std::to_string(call.service));
  }
  if (call.encoding != "json") return respond_error("the request encoding must be json, got \"" + call.encoding + "\"");
  // the service table: the request checked against the row's keys, then its handler
  if (server_.opt.replay && service->changes_world)
    return respond_error(service->name + ": a replay plays the recording back; it cannot change the world");
  runtime::ControlRequest r;
  if (!build_request(*service, call.payload, server_.bodies, r, &why)) {
    error_status(service->name + ": " + why);
    return respond_error(why);
  }
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

}  // namespace tether::live
