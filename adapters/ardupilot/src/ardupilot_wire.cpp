// SPDX-License-Identifier: Apache-2.0
// What the recording shows of the ArduPilot link's wire frames (docs/ardupilot.md, "What
// is recorded"): the step's servo packet decoded (every channel's pulse width), one topic per
// mapped channel (its pulse and the command it became), and the JSON reply Tether sent.
#include <charconv>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tether/ardupilot/ardupilot_endpoint.hpp"

namespace tether::adapters {

namespace ap = ardupilot;

namespace {

void append_number(std::string& out, double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_number(std::string& out, std::uint64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// the packet a wire frame holds, or false (a frame recorded from something else)
bool servo_packet(std::string_view bytes, ap::ServoPacket& p) {
  return ap::parse_servo_packet(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(), p) ==
         ap::ServoReject::none;
}

constexpr const char* servo_schema = R"js({"type":"object","title":"ArduPilot servo packet of a step","properties":{
"step":{"type":"integer"},"frame_count":{"type":"integer"},"frame_rate_hz":{"type":"integer"},
"channels":{"type":"integer","description":"16 or 32"},
"pwm_us":{"type":"array","items":{"type":"integer"},"description":"channel 1 first; 0: no output"}}})js";

constexpr const char* channel_schema =
    R"js({"type":"object","title":"One ArduPilot servo channel of a step","properties":{
"step":{"type":"integer"},"pwm_us":{"type":"integer","description":"0: no output"},
"command":{"type":"number","description":"what the mapped actuator was sent (channel map, times scale)"},
"actuator":{"type":"string"}}})js";

constexpr const char* reply_schema =
    R"js({"type":"object","title":"Tether's JSON reply to ArduPilot of a step","properties":{
"step":{"type":"integer"},
"reply":{"type":"object","description":"the datagram as sent, without its framing newlines"}}})js";

}  // namespace

std::vector<runtime::WireTopic> ardupilot_wire_topics(const ArduPilotEndpointConfig& config) {
  std::vector<runtime::WireTopic> topics;
  runtime::WireTopic servo;
  servo.suffix = "servo";
  servo.schema_name = "tether.ArduPilotServo";
  servo.schema = servo_schema;
  servo.render = [](std::uint64_t step, std::string_view bytes, std::string& out) {
    ap::ServoPacket p;
    if (!servo_packet(bytes, p)) return false;
    out.append("{\"step\":");
    append_number(out, step);
    out.append(",\"frame_count\":");
    append_number(out, std::uint64_t{p.frame_count});
    out.append(",\"frame_rate_hz\":");
    append_number(out, std::uint64_t{p.frame_rate_hz});
    out.append(",\"channels\":");
    append_number(out, std::uint64_t{p.channels});
    out.append(",\"pwm_us\":[");
    for (std::size_t c = 0; c < p.channels; ++c) {
      if (c) out.push_back(',');
      append_number(out, std::uint64_t{p.pwm_us[c]});
    }
    out.append("]}");
    return true;
  };
  topics.push_back(std::move(servo));

  // one topic per mapped channel (a channel mapped twice: its first mapping)
  std::vector<bool> seen(ap::max_channels + 1, false);
  for (const ArduPilotChannel& c : config.channels) {
    if (c.map.channel < 1 || c.map.channel > static_cast<int>(ap::max_channels) || seen[c.map.channel]) continue;
    seen[c.map.channel] = true;
    runtime::WireTopic t;
    t.suffix = "servo/ch" + std::to_string(c.map.channel);
    t.schema_name = "tether.ArduPilotChannel";
    t.schema = channel_schema;
    const std::string actuator = nlohmann::json(c.map.actuator).dump();
    t.render = [map = c.map, actuator](std::uint64_t step, std::string_view bytes, std::string& out) {
      ap::ServoPacket p;
      const auto index = static_cast<std::size_t>(map.channel - 1);
      if (!servo_packet(bytes, p) || index >= p.channels) return false;
      out.append("{\"step\":");
      append_number(out, step);
      out.append(",\"pwm_us\":");
      append_number(out, std::uint64_t{p.pwm_us[index]});
      out.append(",\"command\":");
      append_number(out, ap::command_from_pwm(map, p.pwm_us[index]) * map.scale);
      out.append(",\"actuator\":");
      out.append(actuator);
      out.push_back('}');
      return true;
    };
    topics.push_back(std::move(t));
  }

  runtime::WireTopic reply;
  reply.suffix = "reply";
  reply.to_peer = true;
  reply.schema_name = "tether.ArduPilotReply";
  reply.schema = reply_schema;
  reply.render = [](std::uint64_t step, std::string_view bytes, std::string& out) {
    // the datagram is "\n{...}\n"; anything else (a recording edited by hand) is not shown
    const auto first = bytes.find_first_not_of(" \t\r\n");
    const auto last = bytes.find_last_not_of(" \t\r\n");
    if (first == std::string_view::npos) return false;
    const std::string_view object = bytes.substr(first, last - first + 1);
    // (nlohmann's reader stops at a NUL byte: one anywhere would pass unseen into the message)
    if (object.front() != '{' || object.back() != '}' || object.find('\0') != std::string_view::npos ||
        !nlohmann::json::accept(object))
      return false;
    out.append("{\"step\":");
    append_number(out, step);
    out.append(",\"reply\":");
    out.append(object);
    out.push_back('}');
    return true;
  };
  topics.push_back(std::move(reply));
  return topics;
}

}  // namespace tether::adapters
