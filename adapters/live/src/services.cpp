// SPDX-License-Identifier: Apache-2.0
#include "tether/live/services.hpp"

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace tether::live {

using nlohmann::json;
using R = runtime::ControlRequest;

const char* const status_response_schema =
    R"({"type":"object","properties":{"ok":{"type":"boolean"},"error":{"type":"string"},"step":{"type":"integer"},)"
    R"("steps_done":{"type":"integer"},"steps_planned":{"type":"integer"},"time_s":{"type":"number"},)"
    R"("paused":{"type":"boolean"},"stepping":{"type":"boolean"},"real_time_factor":{"type":"number"},)"
    R"("forces":{"type":"array"},"endpoints":{"type":"array"},"expectations":{"type":"array"}}})";
const char* const accepted_response_schema =
    R"({"type":"object","properties":{"ok":{"type":"boolean"},"error":{"type":"string"},)"
    R"("accepted":{"type":"boolean"},"takes_effect_at_step":{"type":"integer"}}})";

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

// a key of each type, for the rows below
RequestKey key(std::string name, KeyType type, std::string description, bool required, double min = -inf,
               double max = inf) {
  RequestKey k;
  k.name = std::move(name);
  k.type = type;
  k.description = std::move(description);
  k.required = required;
  k.min = min;
  k.max = max;
  return k;
}
RequestKey integer(std::string name, double min, double max, std::string description, bool required = false) {
  return key(std::move(name), KeyType::integer, std::move(description), required, min, max);
}
RequestKey number(std::string name, double min, double max, std::string description, bool required = false) {
  return key(std::move(name), KeyType::number, std::move(description), required, min, max);
}
RequestKey text(std::string name, std::string description, bool required = false,
                std::vector<std::string> choices = {}) {
  RequestKey k = key(std::move(name), KeyType::string, std::move(description), required);
  k.choices = std::move(choices);
  return k;
}
RequestKey vec3(std::string name, std::string description) {
  return key(std::move(name), KeyType::vec3, std::move(description), false);
}
RequestKey boolean(std::string name, std::string description, bool required = false) {
  return key(std::move(name), KeyType::boolean, std::move(description), required);
}
// a handler for a service that asks the session for one fixed thing
template <class Action>
ServiceHandler plain() {
  return [](const json&, const ServiceContext&, R::Action& out, std::string*) {
    out = Action{};
    return true;
  };
}

// a handler for an operator command: the command's own JSON codec reads it
ServiceHandler world(const char* kind) {
  return [kind](const json& j, const ServiceContext& ctx, R::Action& out, std::string* why) {
    runtime::OperatorCommand c;
    if (!runtime::command_from_json(kind, j, ctx.bodies, c, why)) return false;
    out = R::World{std::move(c)};
    return true;
  };
}

// a handler for a command to one endpoint (EndpointCommand): the request with its verb; the
// session finds the endpoint and the endpoint checks the arguments
ServiceHandler endpoint_command(const char* verb) {
  return [verb](const json& j, const ServiceContext& ctx, R::Action& out, std::string* why) {
    json request = j;
    request["verb"] = verb;
    runtime::OperatorCommand c;
    if (!runtime::command_from_json(runtime::EndpointCommand::kind, request, ctx.bodies, c, why)) return false;
    out = R::World{std::move(c)};
    return true;
  };
}

// the autopilot services (docs/live.md, "Autopilot services"): an ardupilot_json endpoint
// with a `mavlink:` section sends them to ArduPilot at the next step
template <class Add>
void add_autopilot_services(Add& add) {
  const RequestKey endpoint = text("endpoint", "the ardupilot_json endpoint (with a mavlink: section)", true);
  add("/tether/autopilot_arm", "tether/AutopilotArm", "arms or disarms the autopilot (COMMAND_LONG 400)",
      {endpoint, boolean("arm", "true arms, false disarms", true),
       boolean("force", "skip the pre-arm checks (param2 21196; default false)")},
      accepted_response_schema, true, endpoint_command("autopilot_arm"));
  add("/tether/autopilot_mode", "tether/AutopilotMode", "puts the autopilot in a flight mode (DO_SET_MODE)",
      {endpoint, text("mode", "the mode's name (ALT_HOLD, \"alt hold\"; the vehicle's modes)", true)},
      accepted_response_schema, true, endpoint_command("autopilot_mode"));
  add("/tether/autopilot_manual", "tether/AutopilotManual", "one MANUAL_CONTROL: the pilot's sticks and buttons",
      {endpoint, integer("x", -1000, 1000, "forward (default 0)"), integer("y", -1000, 1000, "right (default 0)"),
       integer("z", -1000, 1000, "throttle (default 500 for sub: neutral, 0 for rover)"),
       integer("r", -1000, 1000, "yaw (default 0)"), integer("buttons", 0, 65535, "button bits (default 0)")},
      accepted_response_schema, true, endpoint_command("autopilot_manual"));
  add("/tether/autopilot_target", "tether/AutopilotTarget",
      "a depth (SET_POSITION_TARGET_GLOBAL_INT) and/or heading (SET_ATTITUDE_TARGET) target",
      {endpoint, number("depth_m", 0, 11000, "depth below the surface, m (alt = -depth)"),
       number("heading_deg", -360, 360, "compass heading, degrees clockwise from north")},
      accepted_response_schema, true, endpoint_command("autopilot_target"));
}

// the built-ins, in id order (clients may have cached the ids: append, never reorder)
void add_builtins(ServiceTable& t) {
  auto add = [&](std::string name, std::string type, std::string description, std::vector<RequestKey> keys,
                 const char* response, bool changes_world, ServiceHandler handler) {
    Service s;
    s.name = std::move(name);
    s.type = std::move(type);
    s.description = std::move(description);
    s.keys = std::move(keys);
    s.response_schema = response ? response : status_response_schema;
    s.changes_world = changes_world;
    s.handler = std::move(handler);
    t.add(std::move(s));
  };
  add("/tether/status", "tether/Status", "the session's status", {}, nullptr, false, plain<R::Status>());
  add("/tether/pause", "tether/Pause", "stops stepping after the step in progress", {}, nullptr, false,
      plain<R::Pause>());
  add("/tether/resume", "tether/Resume", "steps again, paced", {}, nullptr, false, plain<R::Resume>());
  add("/tether/step", "tether/Step", "pauses if running, runs exactly `steps` steps, answers when they are done",
      {integer("steps", 1, 1e9, "how many steps (default 1)")}, nullptr, false,
      [](const json& j, const ServiceContext&, R::Action& out, std::string*) {
        out = R::Step{j.value("steps", std::uint64_t{1})};
        return true;
      });
  add("/tether/run_until", "tether/RunUntil",
      "pauses if running, runs until the simulation time reaches `time_s`, answers then",
      {number("time_s", -inf, inf, "the simulation time to run to (s)", true)}, nullptr, false,
      [](const json& j, const ServiceContext&, R::Action& out, std::string*) {
        out = R::RunUntil{j["time_s"].get<double>()};
        return true;
      });
  add("/tether/set_rtf", "tether/SetRtf", "the real-time factor from the next step",
      {number("rtf", 0, 1000, "the real-time factor (0: as fast as possible)", true)}, nullptr, false,
      [](const json& j, const ServiceContext&, R::Action& out, std::string*) {
        out = R::SetRtf{j["rtf"].get<double>()};
        return true;
      });
  add("/tether/apply_force", "tether/ApplyForce", "a named force and torque on a body, from the next step",
      {text("name", "the force's name (remove_force names it; a force of the same name is replaced)", true),
       text("body", "\"vehicle.part\", or \"vehicle\" for its first body", true),
       vec3("force", "N, in `frame`'s axes (default 0)"), vec3("torque", "N·m, in `frame`'s axes (default 0)"),
       text("frame", "the axes of force and torque (default world)", false, {"world", "body"}),
       vec3("point", "where the force acts, m, body frame from the centre of mass (default the centre)"),
       number("duration_s", 0, 1e7, "simulation seconds (0 or absent: until removed)")},
      accepted_response_schema, true, [](const json& j, const ServiceContext& ctx, R::Action& out, std::string* why) {
        // a request with neither would be accepted and do nothing
        if (!j.contains("force") && !j.contains("torque")) {
          if (why) *why = "\"force\" or \"torque\" is required (a force with neither does nothing)";
          return false;
        }
        return world(runtime::ApplyForce::kind)(j, ctx, out, why);
      });
  add("/tether/remove_force", "tether/RemoveForce", "removes a force from the next step",
      {text("name", "the force's name", true)}, accepted_response_schema, true, world(runtime::RemoveForce::kind));
  add("/tether/shutdown", "tether/Shutdown", "ends the session after the step in progress (outcome stopped)", {}, {},
      false, plain<R::Shutdown>());
  add("/tether/seek", "tether/Seek", "a replay served live: goes to step `step` from the nearest keyframe, paused",
      {integer("step", 0, 1.8e19, "the step to go to", true)}, nullptr, false,
      [](const json& j, const ServiceContext&, R::Action& out, std::string*) {
        out = R::Seek{j["step"].get<std::uint64_t>()};
        return true;
      });
  RequestKey refused_if = key("if", KeyType::object, "", false);
  refused_if.refused =
      "a live fault starts now, at at_s / at_step, or with a probability per step; `if:` conditions are for the "
      "scenario's faults";
  add("/tether/inject_fault", "tether/InjectFault",
      "a seeded fault (the keys of a scenario's faults: entry, docs/faults.md); without at_s, at_step or probability "
      "it starts at the next step",
      {text("name", "the fault's name (default \"KIND on TARGET\")"),
       text("endpoint", "a link fault's endpoint"),
       text("device", "a device fault's device (\"vehicle.part.device\")"),
       text("kind", "what the fault does", true,
            {"drop", "delay", "duplicate", "reorder", "corrupt", "disconnect", "stuck", "bias", "drift", "noise",
             "dropout", "scale", "saturation"}),
       text("direction", "a link fault's direction (default both)", false, {"out", "in", "both"}),
       number("at_s", 0, inf, "starts at this simulation time (s)"),
       integer("at_step", 0, 1.8e19, "starts at this step"),
       number("probability", 0, 1, "starts with this probability per step"),
       number("duration_s", 0, inf, "how long it stays active (s)"),
       integer("duration_steps", 0, 1.8e19, "how long it stays active (steps)"),
       number("value", -inf, inf, "bias: the offset"),
       number("rate", -inf, inf, "drift: offset per second"),
       number("sigma", 0, inf, "noise: standard deviation"),
       number("factor", -inf, inf, "scale: the factor"),
       number("min", -inf, inf, "saturation: the lower bound"),
       number("max", -inf, inf, "saturation: the upper bound"),
       integer("steps", 0, 1e9, "delay: steps late"),
       integer("bits", 0, 1e9, "corrupt: bits flipped per message"),
       integer("channel", 0, 1e9, "a device fault's channel (default every channel)"),
       refused_if},
      R"({"type":"object","properties":{"ok":{"type":"boolean"},"error":{"type":"string"},)"
      R"("accepted":{"type":"boolean"},"takes_effect_at_step":{"type":"integer"},"fault":{"type":"string"},)"
      R"("starts_at_step":{"type":"integer"}}})",
      true, world(runtime::InjectFault::kind));
  add_autopilot_services(add);
  // an mcu endpoint's firmware reads these bytes on its Serial (docs/mcu.md, "Serial")
  add("/tether/mcu_serial", "tether/McuSerial", "bytes into an mcu endpoint's UART (the firmware's Serial)",
      {text("endpoint", "the mcu endpoint", true), text("text", "the bytes (\\n ends a line)", true)},
      accepted_response_schema, true, endpoint_command("serial"));
}

std::string number_text(double v) {
  char buf[32];
  if (std::abs(v) < 1e15 && v == std::floor(v))
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  else
    std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// "a number in 0..1000", "a whole number >= 1", "one of world, body"
std::string expected(const RequestKey& k) {
  std::string range;
  const bool lo = std::isfinite(k.min), hi = std::isfinite(k.max) && k.max < 1e18;
  if (lo && hi)
    range = " in " + number_text(k.min) + ".." + number_text(k.max);
  else if (lo)
    range = " >= " + number_text(k.min);
  else if (hi)
    range = " <= " + number_text(k.max);
  switch (k.type) {
    case KeyType::integer: return "a whole number" + range;
    case KeyType::number: return "a finite number" + range;
    case KeyType::vec3: return "an array of three finite numbers";
    case KeyType::object: return "a JSON object";
    case KeyType::boolean: return "true or false";
    case KeyType::string: {
      if (k.choices.empty()) return "a string";
      std::string list;
      for (const auto& c : k.choices) list += (list.empty() ? "" : ", ") + ("\"" + c + "\"");
      return "one of " + list;
    }
  }
  return "?";
}

bool fits(const RequestKey& k, const json& v) {
  auto in_range = [&](double d) { return std::isfinite(d) && d >= k.min && d <= k.max; };
  switch (k.type) {
    case KeyType::integer:
      return v.is_number_integer() && (v.is_number_unsigned() ? in_range(static_cast<double>(v.get<std::uint64_t>()))
                                                              : in_range(static_cast<double>(v.get<std::int64_t>())));
    case KeyType::number: return v.is_number() && in_range(v.get<double>());
    case KeyType::vec3:
      if (!v.is_array() || v.size() != 3) return false;
      for (const auto& x : v)
        if (!x.is_number() || !std::isfinite(x.get<double>())) return false;
      return true;
    case KeyType::object: return v.is_object();
    case KeyType::boolean: return v.is_boolean();
    case KeyType::string:
      if (!v.is_string()) return false;
      if (k.choices.empty()) return true;
      for (const auto& c : k.choices)
        if (v.get<std::string>() == c) return true;
      return false;
  }
  return false;
}

}  // namespace

bool ServiceTable::add(Service service) {
  if (!service.handler || find(service.name)) return false;
  service.id = static_cast<std::uint32_t>(services_.size() + 1);
  services_.push_back(std::move(service));
  return true;
}

const Service* ServiceTable::find(std::uint32_t id) const {
  return id >= 1 && id <= services_.size() ? &services_[id - 1] : nullptr;
}

const Service* ServiceTable::find(std::string_view name) const {
  for (const Service& s : services_)
    if (s.name == name) return &s;
  return nullptr;
}

ServiceTable& services() {
  static ServiceTable table = [] {
    ServiceTable t;
    add_builtins(t);
    return t;
  }();
  return table;
}

const Service* find_service(std::uint32_t id) { return services().find(id); }
const Service* find_service(std::string_view name) { return services().find(name); }

bool validate_request(const Service& service, const json& request, std::string* why) {
  if (!request.is_object()) {
    if (why) *why = "the request must be a JSON object";
    return false;
  }
  std::string errors;
  auto error = [&](const std::string& e) { errors += (errors.empty() ? "" : "; ") + e; };
  std::string known;
  for (const RequestKey& k : service.keys)
    if (k.refused.empty()) known += (known.empty() ? "" : ", ") + k.name;
  for (const auto& [key, value] : request.items()) {
    const RequestKey* k = nullptr;
    for (const RequestKey& c : service.keys)
      if (c.name == key) k = &c;
    if (!k)
      error("unknown key \"" + key + "\" (" + (known.empty() ? "this service takes none" : "known: " + known) + ")");
    else if (!k->refused.empty())
      error("\"" + key + "\": " + k->refused);
    else if (!fits(*k, value))
      error("\"" + key + "\" must be " + expected(*k) + ", got " + value.dump());
  }
  for (const RequestKey& k : service.keys)
    if (k.required && !request.contains(k.name)) error("\"" + k.name + "\" is required: " + k.description);
  if (errors.empty()) return true;
  if (why) *why = std::move(errors);
  return false;
}

std::string request_schema(const Service& service) {
  json properties = json::object();
  json required = json::array();
  for (const RequestKey& k : service.keys) {
    if (!k.refused.empty()) continue;
    json p;
    switch (k.type) {
      case KeyType::integer: p["type"] = "integer"; break;
      case KeyType::number: p["type"] = "number"; break;
      case KeyType::string: p["type"] = "string"; break;
      case KeyType::object: p["type"] = "object"; break;
      case KeyType::boolean: p["type"] = "boolean"; break;
      case KeyType::vec3:
        p = {{"type", "array"}, {"items", {{"type", "number"}}}, {"minItems", 3}, {"maxItems", 3}};
        break;
    }
    if (k.type == KeyType::integer || k.type == KeyType::number) {
      if (std::isfinite(k.min)) p["minimum"] = k.min;
      if (std::isfinite(k.max) && k.max < 1e18) p["maximum"] = k.max;
    }
    if (!k.choices.empty()) p["enum"] = k.choices;
    if (!k.description.empty()) p["description"] = k.description;
    properties[k.name] = std::move(p);
    if (k.required) required.push_back(k.name);
  }
  json schema{{"type", "object"}, {"properties", properties}, {"additionalProperties", false}};
  if (!service.description.empty()) schema["description"] = service.description;
  if (!required.empty()) schema["required"] = required;
  return schema.dump();
}

bool build_request(const Service& service, std::string_view payload, const runtime::BodyNames& bodies,
                   runtime::ControlRequest& out, std::string* why) {
  const json j = payload.empty() ? json::object() : json::parse(payload, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    if (why) *why = "the request must be a JSON object";
    return false;
  }
  if (!validate_request(service, j, why)) return false;
  return service.handler(j, ServiceContext{bodies}, out.action, why);
}

}  // namespace tether::live
