// SPDX-License-Identifier: Apache-2.0
#include "tether/live/protocol.hpp"

#include <cmath>
#include <cstring>

#include <nlohmann/json.hpp>

namespace tether::live {

using nlohmann::json;
using runtime::Vec3;

namespace {

void put32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
std::uint32_t get32(std::string_view b, std::size_t at) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<std::size_t>(i)]);
  return v;
}
std::uint64_t get64(std::string_view b, std::size_t at) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<std::size_t>(i)]);
  return v;
}

void encode_call(std::uint8_t op, std::uint32_t service, std::uint32_t call, std::string_view encoding,
                 std::string_view payload, std::string& out) {
  out.clear();
  out.reserve(13 + encoding.size() + payload.size());
  out.push_back(static_cast<char>(op));
  put32(out, service);
  put32(out, call);
  put32(out, static_cast<std::uint32_t>(encoding.size()));
  out.append(encoding);
  out.append(payload);
}

constexpr const char* empty_schema = R"({"type":"object","properties":{}})";
constexpr const char* status_schema =
    R"({"type":"object","properties":{"ok":{"type":"boolean"},"error":{"type":"string"},"step":{"type":"integer"},)"
    R"("steps_done":{"type":"integer"},"steps_planned":{"type":"integer"},"time_s":{"type":"number"},)"
    R"("paused":{"type":"boolean"},"stepping":{"type":"boolean"},"real_time_factor":{"type":"number"},)"
    R"("forces":{"type":"array"}}})";
constexpr const char* accepted_schema =
    R"({"type":"object","properties":{"ok":{"type":"boolean"},"error":{"type":"string"},)"
    R"("accepted":{"type":"boolean"},"takes_effect_at_step":{"type":"integer"}}})";

const Service services[] = {
    {1, "/tether/status", "tether/Status", empty_schema, status_schema},
    {2, "/tether/pause", "tether/Pause", empty_schema, status_schema},
    {3, "/tether/resume", "tether/Resume", empty_schema, status_schema},
    {4, "/tether/step", "tether/Step",
     R"({"type":"object","properties":{"steps":{"type":"integer","minimum":1,"default":1}}})", status_schema},
    {5, "/tether/run_until", "tether/RunUntil",
     R"({"type":"object","properties":{"time_s":{"type":"number"}},"required":["time_s"]})", status_schema},
    {6, "/tether/set_rtf", "tether/SetRtf",
     R"({"type":"object","properties":{"rtf":{"type":"number","minimum":0,"maximum":1000}},"required":["rtf"]})",
     status_schema},
    {7, "/tether/apply_force", "tether/ApplyForce",
     R"({"type":"object","properties":{"name":{"type":"string"},"body":{"type":"string"},)"
     R"("force":{"type":"array","items":{"type":"number"},"minItems":3,"maxItems":3},)"
     R"("torque":{"type":"array","items":{"type":"number"},"minItems":3,"maxItems":3},)"
     R"("frame":{"enum":["world","body"]},)"
     R"("point":{"type":"array","items":{"type":"number"},"minItems":3,"maxItems":3},)"
     R"("duration_s":{"type":"number","minimum":0}},"required":["name","body"]})",
     accepted_schema},
    {8, "/tether/remove_force", "tether/RemoveForce",
     R"({"type":"object","properties":{"name":{"type":"string"}},"required":["name"]})", accepted_schema},
    {9, "/tether/shutdown", "tether/Shutdown", empty_schema, status_schema},
    {10, "/tether/seek", "tether/Seek",
     R"({"type":"object","properties":{"step":{"type":"integer","minimum":0}},"required":["step"]})", status_schema},
    {11, "/tether/inject_fault", "tether/InjectFault",
     R"({"type":"object","description":"the keys of a scenario's faults: entry (docs/faults.md); without at_s, )"
     R"(at_step or probability it starts at the next step",)"
     R"("properties":{"name":{"type":"string"},"endpoint":{"type":"string"},"device":{"type":"string"},)"
     R"("kind":{"enum":["drop","delay","duplicate","reorder","corrupt","disconnect","stuck","bias","drift",)"
     R"("noise","dropout","scale","saturation"]},"direction":{"enum":["out","in","both"]},)"
     R"("at_s":{"type":"number"},"at_step":{"type":"integer"},"probability":{"type":"number"},)"
     R"("duration_s":{"type":"number"},"duration_steps":{"type":"integer"},"value":{"type":"number"},)"
     R"("rate":{"type":"number"},"sigma":{"type":"number"},"factor":{"type":"number"},"min":{"type":"number"},)"
     R"("max":{"type":"number"},"steps":{"type":"integer"},"bits":{"type":"integer"},"channel":{"type":"integer"}},)"
     R"("required":["kind"]})",
     accepted_schema},
};

bool vec3(const json& j, const char* key, Vec3& out, std::string* why) {
  if (!j.contains(key)) return true;
  const json& v = j[key];
  if (!v.is_array() || v.size() != 3 || !v[0].is_number() || !v[1].is_number() || !v[2].is_number()) {
    if (why) *why = std::string("\"") + key + "\" must be an array of three numbers";
    return false;
  }
  out = Vec3(v[0].get<double>(), v[1].get<double>(), v[2].get<double>());
  if (!std::isfinite(out.x()) || !std::isfinite(out.y()) || !std::isfinite(out.z())) {
    if (why) *why = std::string("\"") + key + "\" must be finite";
    return false;
  }
  return true;
}

}  // namespace

void encode_message_data(std::uint32_t subscription, std::uint64_t time_ns, std::string_view payload,
                         std::string& out) {
  out.clear();
  out.reserve(13 + payload.size());
  out.push_back(0x01);
  put32(out, subscription);
  put64(out, time_ns);
  out.append(payload);
}

void encode_time(std::uint64_t time_ns, std::string& out) {
  out.clear();
  out.push_back(0x02);
  put64(out, time_ns);
}

void encode_service_response(std::uint32_t service, std::uint32_t call, std::string_view encoding,
                             std::string_view payload, std::string& out) {
  encode_call(0x03, service, call, encoding, payload, out);
}

void encode_service_call(std::uint32_t service, std::uint32_t call, std::string_view encoding, std::string_view payload,
                         std::string& out) {
  encode_call(0x02, service, call, encoding, payload, out);
}

bool decode_service_call(std::string_view f, ServiceCall& out, std::string* why, std::uint8_t opcode) {
  auto fail = [why](const char* text) {
    if (why) *why = text;
    return false;
  };
  if (f.size() < 13) return fail("shorter than its 13-byte header (opcode, service, call, encoding length)");
  if (static_cast<std::uint8_t>(f[0]) != opcode) return fail("wrong opcode");
  out.service = get32(f, 1);
  out.call = get32(f, 5);
  const std::uint32_t n = get32(f, 9);
  if (n > f.size() - 13) return fail("its encoding length runs past the end of the frame");
  out.encoding.assign(f.substr(13, n));
  out.payload.assign(f.substr(13 + n));
  return true;
}

bool decode_message_data(std::string_view f, MessageData& out) {
  if (f.size() < 13 || f[0] != 0x01) return false;
  out.subscription = get32(f, 1);
  out.time_ns = get64(f, 5);
  out.payload = f.substr(13);
  return true;
}

bool decode_time(std::string_view f, std::uint64_t& time_ns) {
  if (f.size() != 9 || f[0] != 0x02) return false;
  time_ns = get64(f, 1);
  return true;
}

std::span<const Service> service_table() { return services; }

const Service* find_service(std::uint32_t id) {
  for (const Service& s : services)
    if (s.id == id) return &s;
  return nullptr;
}

const Service* find_service(std::string_view name) {
  for (const Service& s : services)
    if (name == s.name) return &s;
  return nullptr;
}

bool build_request(const Service& service, std::string_view payload,
                   const std::vector<std::pair<std::string, std::uint32_t>>& bodies, runtime::ControlRequest& out,
                   std::string* why) {
  using K = runtime::ControlRequest::Kind;
  auto fail = [why](std::string text) {
    if (why) *why = std::move(text);
    return false;
  };
  json j = payload.empty() ? json::object() : json::parse(payload, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return fail("the request must be a JSON object");
  const std::string_view name = service.name;
  auto number = [&](const char* key, double& v) {
    if (!j.contains(key) || !j[key].is_number()) return false;
    v = j[key].get<double>();
    return std::isfinite(v);
  };
  if (name == "/tether/status") {
    out.kind = K::status;
  } else if (name == "/tether/pause") {
    out.kind = K::pause;
  } else if (name == "/tether/resume") {
    out.kind = K::resume;
  } else if (name == "/tether/shutdown") {
    out.kind = K::shutdown;
  } else if (name == "/tether/step") {
    out.kind = K::step;
    out.steps = 1;
    if (j.contains("steps")) {
      if (!j["steps"].is_number_unsigned() || j["steps"].get<std::uint64_t>() < 1 ||
          j["steps"].get<std::uint64_t>() > 1'000'000'000)
        return fail("\"steps\" must be a whole number in 1..1000000000");
      out.steps = j["steps"].get<std::uint64_t>();
    }
  } else if (name == "/tether/run_until") {
    out.kind = K::run_until;
    if (!number("time_s", out.value)) return fail("\"time_s\" (simulation seconds) must be a finite number");
  } else if (name == "/tether/set_rtf") {
    out.kind = K::set_rtf;
    if (!number("rtf", out.value)) return fail("\"rtf\" must be a number in 0..1000");
  } else if (name == "/tether/apply_force") {
    out.kind = K::world;
    runtime::OperatorCommand& c = out.command;
    c.kind = runtime::OperatorCommand::Kind::apply_force;
    if (!j.contains("name") || !j["name"].is_string() || j["name"].get<std::string>().empty())
      return fail("\"name\" must be a non-empty string (remove_force names the force by it)");
    c.name = j["name"];
    if (c.name.size() > 200) return fail("\"name\" is longer than 200 bytes");
    if (!j.contains("body") || !j["body"].is_string())
      return fail("\"body\" must name a body (\"vehicle.part\" or \"vehicle\")");
    const std::string body = j["body"];
    bool found = false;
    for (const auto& [n, index] : bodies)
      if (n == body) {
        c.body = index;
        found = true;
      }
    if (!found) {
      std::string known;
      for (const auto& b : bodies) known += (known.empty() ? "" : ", ") + b.first;
      return fail("no body \"" + body + "\" (known: " + known + ")");
    }
    if (!vec3(j, "force", c.force_n, why) || !vec3(j, "torque", c.torque_nm, why) || !vec3(j, "point", c.point_m, why))
      return false;
    if (j.contains("frame") && !j["frame"].is_string()) return fail("\"frame\" must be \"world\" or \"body\"");
    const std::string frame = j.contains("frame") ? j["frame"].get<std::string>() : std::string("world");
    if (frame != "world" && frame != "body") return fail("\"frame\" must be \"world\" or \"body\"");
    c.body_frame = frame == "body";
    c.duration_s = 0;
    if (j.contains("duration_s") && (!number("duration_s", c.duration_s) || c.duration_s < 0))
      return fail("\"duration_s\" must be a number >= 0 (simulation seconds; 0 or absent: until removed)");
  } else if (name == "/tether/remove_force") {
    out.kind = K::world;
    out.command.kind = runtime::OperatorCommand::Kind::remove_force;
    if (!j.contains("name") || !j["name"].is_string()) return fail("\"name\" must name a force");
    out.command.name = j["name"];
  } else if (name == "/tether/inject_fault") {
    // checked against the scenario by the session (it knows the endpoints and devices)
    out.kind = K::world;
    out.command.kind = runtime::OperatorCommand::Kind::inject_fault;
    out.command.name = j.dump();
  } else if (name == "/tether/seek") {
    out.kind = K::seek;
    if (!j.contains("step") || !j["step"].is_number_unsigned())
      return fail("\"step\" must be a whole number >= 0 (the step to go to)");
    out.steps = j["step"].get<std::uint64_t>();
  } else {
    return fail("unknown service");
  }
  return true;
}

}  // namespace tether::live
