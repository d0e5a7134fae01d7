// SPDX-License-Identifier: Apache-2.0
// Reading an ardupilot_json endpoint's `mavlink:` section (docs/ardupilot.md, "The MAVLink
// link"): the address, the vehicle whose mode names apply, and the script of timed commands.
// Every mistake is recorded with its position, so one `tether check` shows them all.
#include <arpa/inet.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tether/mavlink/mavlink_link.hpp"

namespace tether::adapters {

namespace mav = mavlink;

namespace {

constexpr std::array<const char*, 6> action_keys{"arm", "mode", "depth_m", "heading_deg", "manual", "param"};

const char* vehicle_label(mav::Vehicle v) { return v == mav::Vehicle::sub ? "ArduSub" : "ArduRover"; }

std::string mode_list(mav::Vehicle v) {
  std::string all;
  for (const mav::FlightMode& m : mav::flight_modes(v)) all += std::string(all.empty() ? "" : ", ") + m.name;
  return all;
}

// "tcp:127.0.0.1:5760": false when it is not that shape with an IPv4 host and a port 1..65535
// (tcp also 0: a free port chosen at start, for a launched autopilot)
bool parse_address(const std::string& text, MavlinkLinkConfig& out) {
  std::string_view t(text);
  std::size_t prefix = 4;
  if (t.substr(0, 4) == "tcp:") {
    out.transport = MavlinkLinkConfig::Transport::tcp;
  } else if (t.substr(0, 6) == "udpin:") {
    out.transport = MavlinkLinkConfig::Transport::udp_in;
    prefix = 6;
  } else if (t.substr(0, 4) == "udp:") {
    out.transport = MavlinkLinkConfig::Transport::udp;
  } else {
    return false;
  }
  const std::size_t colon = t.rfind(':');
  if (colon <= prefix) return false;
  const std::string host(t.substr(prefix, colon - prefix));
  const std::string_view port = t.substr(colon + 1);
  in_addr addr{};
  if (::inet_pton(AF_INET, host.c_str(), &addr) != 1) return false;
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  const long p = std::stol(std::string(port));
  if (p < (out.transport == MavlinkLinkConfig::Transport::tcp ? 0 : 1) || p > 65535) return false;
  out.host = host;
  out.port = static_cast<std::uint16_t>(p);
  return true;
}

void parse_manual(const runtime::ConfigNode& m, mav::Vehicle vehicle, MavlinkAction& out) {
  if (!m.expect_map({"x", "y", "z", "r", "buttons"})) return;
  // ArduRover steers by y and drives by z (GCS_MAVLink_Rover.cpp, handle_manual_control_axes)
  if (vehicle == mav::Vehicle::rover)
    for (const char* axis : {"x", "r"})
      if (m.has(axis) && m.integer_or(axis, 0, -1000, 1000) != 0)
        m[axis].error(std::string("ArduRover reads MANUAL_CONTROL's y (steering) and z (throttle) only; ") + axis +
                      " does nothing");
  // ArduSub's throttle (z) is 0..1000 with 500 neutral: leaving it out must not dive
  const std::int64_t z_neutral = vehicle == mav::Vehicle::sub ? 500 : 0;
  out.manual[0] = static_cast<std::int16_t>(m.integer_or("x", 0, -1000, 1000));
  out.manual[1] = static_cast<std::int16_t>(m.integer_or("y", 0, -1000, 1000));
  out.manual[2] = static_cast<std::int16_t>(m.integer_or("z", z_neutral, -1000, 1000));
  out.manual[3] = static_cast<std::int16_t>(m.integer_or("r", 0, -1000, 1000));
  out.buttons = static_cast<std::uint16_t>(m.integer_or("buttons", 0, 0, 65535));
}

void parse_param(const runtime::ConfigNode& p, MavlinkAction& out) {
  if (!p.expect_map({"name", "value"})) return;
  const std::string name = p.string("name");
  if (name.size() > out.param_id.size())
    p["name"].error("a parameter name has at most 16 characters, got \"" + name + "\"");
  mav::set_text(out.param_id, name);
  out.param_value = static_cast<float>(p.number("value", runtime::Range::between(-3.4e38, 3.4e38)));
}

// the readers of operator_actions: false with the reason, the key named
struct Arguments {
  const nlohmann::json& j;
  std::string* why;

  bool fail(const std::string& text) const {
    if (why) *why = text;
    return false;
  }
  bool only(std::initializer_list<const char*> keys) const {
    for (const auto& [key, value] : j.items()) {
      (void)value;
      if (std::find_if(keys.begin(), keys.end(), [&](const char* k) { return key == k; }) == keys.end())
        return fail("unknown key \"" + key + "\"");
    }
    return true;
  }
  bool number(const char* key, double lo, double hi, double& out) const {
    if (!j.contains(key)) return true;
    const nlohmann::json& v = j[key];
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < lo || v.get<double>() > hi)
      return fail("\"" + std::string(key) + "\" must be a finite number in " + range_text(lo, hi) + ", got " +
                  v.dump());
    out = v.get<double>();
    return true;
  }
  bool whole(const char* key, double lo, double hi, double& out) const {
    if (!number(key, lo, hi, out)) return false;
    if (j.contains(key) && out != std::floor(out))
      return fail("\"" + std::string(key) + "\" must be a whole number, got " + j[key].dump());
    return true;
  }
  static std::string range_text(double lo, double hi) {
    char text[64];
    std::snprintf(text, sizeof text, "%g..%g", lo, hi);
    return text;
  }
};

}  // namespace

bool operator_actions(std::string_view verb, const nlohmann::json& arguments, mav::Vehicle vehicle,
                      std::vector<MavlinkAction>& out, std::string* why) {
  const Arguments a{arguments, why};
  MavlinkAction action;
  if (verb == "autopilot_arm") {
    if (!a.only({"arm", "force"})) return false;
    if (!arguments.contains("arm") || !arguments["arm"].is_boolean()) return a.fail("\"arm\" must be true or false");
    if (arguments.contains("force") && !arguments["force"].is_boolean())
      return a.fail("\"force\" must be true or false");
    action.kind = MavlinkAction::Kind::arm;
    action.arm = arguments["arm"].get<bool>();
    action.force = arguments.value("force", false);
  } else if (verb == "autopilot_mode") {
    if (!a.only({"mode"})) return false;
    if (!arguments.contains("mode") || !arguments["mode"].is_string()) return a.fail("\"mode\" must be a mode's name");
    const std::string name = arguments["mode"].get<std::string>();
    const std::optional<std::uint32_t> m = mav::custom_mode(vehicle, name);
    if (!m) return a.fail("no mode \"" + name + "\" in " + vehicle_label(vehicle) + " (" + mode_list(vehicle) + ")");
    action.kind = MavlinkAction::Kind::mode;
    action.custom_mode = *m;
  } else if (verb == "autopilot_manual") {
    if (!a.only({"x", "y", "z", "r", "buttons"})) return false;
    std::array<double, 4> axes{0, 0, vehicle == mav::Vehicle::sub ? 500.0 : 0.0, 0};
    double buttons = 0;
    if (!a.whole("x", -1000, 1000, axes[0]) || !a.whole("y", -1000, 1000, axes[1]) ||
        !a.whole("z", -1000, 1000, axes[2]) || !a.whole("r", -1000, 1000, axes[3]) ||
        !a.whole("buttons", 0, 65535, buttons))
      return false;
    if (vehicle == mav::Vehicle::rover && (axes[0] != 0 || axes[3] != 0))
      return a.fail("ArduRover reads MANUAL_CONTROL's y (steering) and z (throttle) only; x and r do nothing");
    action.kind = MavlinkAction::Kind::manual;
    for (std::size_t i = 0; i < 4; ++i) action.manual[i] = static_cast<std::int16_t>(axes[i]);
    action.buttons = static_cast<std::uint16_t>(buttons);
  } else if (verb == "autopilot_target") {
    if (!a.only({"depth_m", "heading_deg"})) return false;
    if (!arguments.contains("depth_m") && !arguments.contains("heading_deg"))
      return a.fail("give depth_m, heading_deg or both");
    MavlinkAction depth, heading;
    depth.kind = MavlinkAction::Kind::depth;
    heading.kind = MavlinkAction::Kind::heading;
    if (!a.number("depth_m", 0, 11'000, depth.depth_m) || !a.number("heading_deg", -360, 360, heading.heading_deg))
      return false;
    if (arguments.contains("depth_m")) out.push_back(depth);
    if (arguments.contains("heading_deg")) out.push_back(heading);
    return true;
  } else {
    return a.fail("unknown autopilot command \"" + std::string(verb) +
                  "\" (autopilot_arm, autopilot_mode, autopilot_manual, autopilot_target)");
  }
  out.push_back(action);
  return true;
}

std::string MavlinkLinkConfig::address() const {
  return std::string(transport == Transport::tcp ? "tcp:" : transport == Transport::udp_in ? "udpin:" : "udp:") + host +
         ":" + std::to_string(port);
}

std::optional<MavlinkAction> parse_mavlink_action(const runtime::ConfigNode& e, mav::Vehicle vehicle, bool with_time) {
  const std::size_t errors_before = e.context().errors.size();
  if (!e.is_map()) {
    e.error("expected a map with " + std::string(with_time ? "at_s and " : "") +
            "one action: arm, mode, depth_m, heading_deg, manual or param");
    return std::nullopt;
  }
  // which action: exactly one key of action_keys; anything else but at_s and force is unknown
  std::vector<std::string> actions;
  for (const auto& kv : e.yaml()) {
    const std::string key = kv.first.as<std::string>("");
    if (std::find_if(action_keys.begin(), action_keys.end(), [&](const char* a) { return key == a; }) !=
        action_keys.end())
      actions.push_back(key);
    else if (key != "force" && !(with_time && key == "at_s"))
      e[key.c_str()].error("unknown action \"" + key + "\" (one of arm, mode, depth_m, heading_deg, manual, param)");
  }
  if (actions.empty()) e.error("expected one action: arm, mode, depth_m, heading_deg, manual or param");
  if (actions.size() > 1) e.error("one action per entry, got " + actions[0] + " and " + actions[1]);

  MavlinkAction out;
  if (with_time) {
    const double at_s = e.number("at_s", runtime::Range::between(0, 1e9));
    out.at_ns = std::llround(at_s * 1e9);
  }
  const std::string action = actions.empty() ? std::string() : actions[0];
  if (e.has("force") && action != "arm") e["force"].error("force goes with arm");
  if (action == "arm") {
    out.kind = MavlinkAction::Kind::arm;
    out.arm = e.boolean_or("arm", true);
    out.force = e.boolean_or("force", false);
  } else if (action == "mode") {
    out.kind = MavlinkAction::Kind::mode;
    const std::string name = e.string("mode");
    const std::optional<std::uint32_t> m = mav::custom_mode(vehicle, name);
    if (m)
      out.custom_mode = *m;
    else if (!name.empty())
      e["mode"].error("no mode \"" + name + "\" in " + vehicle_label(vehicle) + " (" + mode_list(vehicle) + ")");
  } else if (action == "depth_m") {
    out.kind = MavlinkAction::Kind::depth;
    out.depth_m = e.number("depth_m", runtime::Range::between(0, 11'000));
  } else if (action == "heading_deg") {
    out.kind = MavlinkAction::Kind::heading;
    out.heading_deg = e.number("heading_deg", runtime::Range::between(-360, 360));
  } else if (action == "manual") {
    out.kind = MavlinkAction::Kind::manual;
    parse_manual(e["manual"], vehicle, out);
  } else if (action == "param") {
    out.kind = MavlinkAction::Kind::param;
    parse_param(e["param"], out);
  }
  if (e.context().errors.size() != errors_before) return std::nullopt;
  return out;
}

MavlinkLinkConfig parse_mavlink_config(const runtime::ConfigNode& n, std::int64_t instance) {
  MavlinkLinkConfig out;
  out.port = static_cast<std::uint16_t>(std::clamp<std::int64_t>(5760 + 10 * instance, 1, 65535));
  if (!n.expect_map({"address", "vehicle", "connect_timeout_ms", "arm_timeout_s", "pilot_input_hz", "script"}))
    return out;
  if (n.has("address")) {
    const std::string text = n.string("address");
    if (!text.empty() && !parse_address(text, out))
      n["address"].error(
          "expected tcp:HOST:PORT (connect), udp:HOST:PORT (send to a board) or udpin:HOST:PORT (listen, as for "
          "MAVProxy's --out) with an IPv4 host and a port 1..65535 (tcp port 0: a free one for `launch:`), got \"" +
          text + "\"");
  }
  const std::string vehicle = n.choice_or("vehicle", "sub", {"sub", "rover"});
  out.vehicle = vehicle == "rover" ? mav::Vehicle::rover : mav::Vehicle::sub;
  out.connect_timeout_ms = n.integer_or("connect_timeout_ms", 30'000, 1, 3'600'000);
  out.arm_timeout_ms = std::llround(n.number_or("arm_timeout_s", 90, runtime::Range::between(1, 86'400)) * 1000);
  out.pilot_rate_hz = n.number_or("pilot_input_hz", 10, runtime::Range::between(0, 100));
  const runtime::ConfigNode script = n["script"];
  if (n.has("script") && script.expect_sequence()) {
    for (std::size_t i = 0; i < script.size(); ++i)
      if (auto a = parse_mavlink_action(script.at(i), out.vehicle, true)) out.script.push_back(*a);
  }
  // in time order; list order among entries of the same time
  std::stable_sort(out.script.begin(), out.script.end(),
                   [](const MavlinkAction& a, const MavlinkAction& b) { return a.at_ns < b.at_ns; });
  return out;
}

}  // namespace tether::adapters
