// SPDX-License-Identifier: Apache-2.0
#include "tether/recording/operator_command.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

namespace tether::runtime {

using nlohmann::json;

// the recording's kind number is the index + 1: appending keeps every recorded number
static_assert(std::variant_size_v<OperatorCommand> == 6, "a new kind: its JSON and fields below, and docs/live.md");
static_assert(std::is_same_v<std::variant_alternative_t<0, OperatorCommand>, ApplyForce>);
static_assert(std::is_same_v<std::variant_alternative_t<3, OperatorCommand>, InjectFault>);
static_assert(std::is_same_v<std::variant_alternative_t<4, OperatorCommand>, EndpointCommand>);
static_assert(std::is_same_v<std::variant_alternative_t<5, OperatorCommand>, BackgroundTake>);

const char* kind_name(const OperatorCommand& c) {
  return std::visit([](const auto& k) { return std::decay_t<decltype(k)>::kind; }, c);
}

namespace {

json vec(const Vec3& v) { return json::array({v.x(), v.y(), v.z()}); }

// the readers of command_from_json: false with the reason, the key named
struct Reader {
  const json& j;
  std::string* why;

  bool fail(std::string text) const {
    if (why) *why = std::move(text);
    return false;
  }
  bool string(const char* key, std::string& out, bool required, const char* what) const {
    if (!j.contains(key)) return !required || fail(std::string("\"") + key + "\" is required: " + what);
    if (!j[key].is_string()) return fail(std::string("\"") + key + "\" must be a string: " + what);
    out = j[key].get<std::string>();
    return true;
  }
  bool number(const char* key, double& out, bool required) const {
    if (!j.contains(key)) return !required || fail(std::string("\"") + key + "\" is required");
    if (!j[key].is_number() || !std::isfinite(j[key].get<double>()))
      return fail(std::string("\"") + key + "\" must be a finite number");
    out = j[key].get<double>();
    return true;
  }
  bool vec3(const char* key, Vec3& out) const {
    if (!j.contains(key)) return true;
    const json& v = j[key];
    if (!v.is_array() || v.size() != 3 || !v[0].is_number() || !v[1].is_number() || !v[2].is_number())
      return fail(std::string("\"") + key + "\" must be an array of three numbers");
    out = Vec3(v[0].get<double>(), v[1].get<double>(), v[2].get<double>());
    if (!std::isfinite(out.x()) || !std::isfinite(out.y()) || !std::isfinite(out.z()))
      return fail(std::string("\"") + key + "\" must be finite");
    return true;
  }
};

bool read(const Reader& r, const BodyNames& bodies, ApplyForce& c) {
  if (!r.string("name", c.name, true, "a force's name (remove_force names the force by it)")) return false;
  if (c.name.empty()) return r.fail("\"name\" must be a non-empty string (remove_force names the force by it)");
  if (c.name.size() > 200) return r.fail("\"name\" is longer than 200 bytes");
  std::string body;
  if (!r.string("body", body, true, "a body (\"vehicle.part\" or \"vehicle\")")) return false;
  bool found = false;
  for (const auto& [n, index] : bodies)
    if (n == body) {
      c.body = index;
      found = true;
      break;
    }
  if (!found) {
    std::string known;
    for (const auto& b : bodies) known += (known.empty() ? "" : ", ") + b.first;
    return r.fail("no body \"" + body + "\" (known: " + known + ")");
  }
  if (!r.vec3("force", c.force_n) || !r.vec3("torque", c.torque_nm) || !r.vec3("point", c.point_m)) return false;
  std::string frame = "world";
  if (!r.string("frame", frame, false, "\"world\" or \"body\"")) return false;
  if (frame != "world" && frame != "body") return r.fail("\"frame\" must be \"world\" or \"body\"");
  c.body_frame = frame == "body";
  c.duration_s = 0;
  if (!r.number("duration_s", c.duration_s, false) || c.duration_s < 0)
    return r.fail("\"duration_s\" must be a number >= 0 (simulation seconds; 0 or absent: until removed)");
  return true;
}

bool read(const Reader& r, const BodyNames&, RemoveForce& c) {
  return r.string("name", c.name, true, "the name of a force acting");
}

bool read(const Reader& r, const BodyNames&, SetParameter& c) {
  return r.string("name", c.name, true, "a parameter (getParameters lists them)") && r.number("value", c.value, true);
}

bool read(const Reader& r, const BodyNames&, InjectFault& c) {
  // checked against the scenario by the session (it knows the endpoints and devices)
  c.entry = r.j.dump();
  return true;
}

// {"endpoint": NAME, "verb": VERB, ...arguments}: the arguments are checked by the endpoint
bool read(const Reader& r, const BodyNames&, EndpointCommand& c) {
  if (!r.string("endpoint", c.endpoint, true, "the endpoint's name")) return false;
  if (!r.string("verb", c.verb, true, "what the endpoint is to do")) return false;
  json arguments = r.j;
  arguments.erase("endpoint");
  arguments.erase("verb");
  c.arguments = arguments.dump();
  return true;
}

bool read(const Reader& r, const BodyNames&, BackgroundTake& c) {
  if (!r.string("processor", c.processor, true, "a feedback processor's name")) return false;
  if (!r.j.contains("taken") || !r.j["taken"].is_boolean())
    return r.fail("\"taken\" must be true (taken) or false (deferred)");
  c.taken = r.j["taken"].get<bool>();
  return true;
}

json endpoint_command_json(const EndpointCommand& c) {
  json j = json::parse(c.arguments, nullptr, false);
  if (!j.is_object()) j = json{{"arguments", c.arguments}};
  j["endpoint"] = c.endpoint;
  j["verb"] = c.verb;
  return j;
}

// the alternative whose kind is `kind`, read from the request
template <std::size_t I = 0>
bool read_kind(std::string_view kind, const Reader& r, const BodyNames& bodies, OperatorCommand& out) {
  if constexpr (I == std::variant_size_v<OperatorCommand>) {
    return r.fail("unknown operator command \"" + std::string(kind) + "\"");
  } else {
    using K = std::variant_alternative_t<I, OperatorCommand>;
    if (kind != K::kind) return read_kind<I + 1>(kind, r, bodies, out);
    K k;
    if (!read(r, bodies, k)) return false;
    out = std::move(k);
    return true;
  }
}

}  // namespace

json command_to_json(const OperatorCommand& command, const BodyNames& bodies) {
  return std::visit(overloaded{
                        [&](const ApplyForce& c) {
                          json body = c.body;
                          for (const auto& [n, index] : bodies)
                            if (index == c.body) {
                              body = n;
                              break;
                            }
                          return json{{"name", c.name},
                                      {"body", body},
                                      {"force", vec(c.force_n)},
                                      {"torque", vec(c.torque_nm)},
                                      {"point", vec(c.point_m)},
                                      {"frame", c.body_frame ? "body" : "world"},
                                      {"duration_s", c.duration_s}};
                        },
                        [](const RemoveForce& c) {
                          return json{{"name", c.name}};
                        },
                        [](const SetParameter& c) {
                          return json{{"name", c.name}, {"value", c.value}};
                        },
                        [](const InjectFault& c) {
                          json j = json::parse(c.entry, nullptr, false);
                          return j.is_object() ? j : json{{"entry", c.entry}};
                        },
                        [](const EndpointCommand& c) { return endpoint_command_json(c); },
                        [](const BackgroundTake& c) {
                          return json{{"processor", c.processor}, {"taken", c.taken}};
                        },
                    },
                    command);
}

bool command_from_json(std::string_view kind, const json& request, const BodyNames& bodies, OperatorCommand& out,
                       std::string* why) {
  const Reader r{request, why};
  if (!request.is_object()) return r.fail("the request must be a JSON object");
  return read_kind(kind, r, bodies, out);
}

OperatorCommandFields to_fields(const OperatorCommand& command) {
  OperatorCommandFields f;
  f.kind = static_cast<std::uint8_t>(command.index() + 1);
  std::visit(overloaded{
                 [&](const ApplyForce& c) {
                   f.name = c.name;
                   f.body = c.body;
                   f.body_frame = c.body_frame;
                   f.force_n = c.force_n;
                   f.torque_nm = c.torque_nm;
                   f.point_m = c.point_m;
                   f.duration_s = c.duration_s;
                 },
                 [&](const RemoveForce& c) { f.name = c.name; },
                 [&](const SetParameter& c) {
                   f.name = c.name;
                   f.value = c.value;
                 },
                 [&](const InjectFault& c) { f.name = c.entry; },
                 [&](const EndpointCommand& c) { f.name = endpoint_command_json(c).dump(); },
                 [&](const BackgroundTake& c) {
                   f.name = c.processor;
                   f.value = c.taken ? 1 : 0;
                 },
             },
             command);
  return f;
}

bool from_fields(OperatorCommandFields f, OperatorCommand& out) {
  switch (f.kind) {
    case 1:
      out = ApplyForce{std::move(f.name), f.body, f.body_frame, f.force_n, f.torque_nm, f.point_m, f.duration_s};
      return true;
    case 2: out = RemoveForce{std::move(f.name)}; return true;
    case 3: out = SetParameter{std::move(f.name), f.value}; return true;
    case 4: out = InjectFault{std::move(f.name)}; return true;
    case 5: {
      const json j = json::parse(f.name, nullptr, false);
      EndpointCommand c;
      if (!j.is_object() || !read(Reader{j, nullptr}, BodyNames{}, c)) return false;
      out = std::move(c);
      return true;
    }
    case 6:
      if (f.value != 0 && f.value != 1) return false;
      out = BackgroundTake{std::move(f.name), f.value == 1};
      return true;
    default: return false;
  }
}

}  // namespace tether::runtime
