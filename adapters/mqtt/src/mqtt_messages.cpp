// SPDX-License-Identifier: Apache-2.0
#include "tether/recording/json_text.hpp"
#include "tether/mqtt/mqtt_messages.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "tether/firmware_shim/payloads.h"
#include "tether/hal/device_bank.hpp"
#include "mqtt_body.hpp"

namespace tether::adapters::mqtt {

using nlohmann::json;
using runtime::Measurement;
using runtime::Quat;
using runtime::Vec3;

Topics topics_for(const std::string& session, const std::string& vehicle_id) {
  const std::string base = "tether/" + session + "/";
  return {base + vehicle_id + "/projected", base + vehicle_id + "/feedback", base + vehicle_id + "/actual",
          base + vehicle_id + "/status", base + "runtime/status"};
}

const char* to_string(Reject reason) {
  switch (reason) {
    case Reject::none: return "accepted";
    case Reject::oversize: return "oversize";
    case Reject::not_json: return "not JSON";
    case Reject::schema: return "wrong schema";
    case Reject::wrong_vehicle: return "another vehicle";
    case Reject::bad_field: return "bad field";
    case Reject::not_protobuf: return "malformed protobuf";
  }
  return "?";
}

const char* to_string(Payload format) { return format == Payload::protobuf ? "protobuf" : "json"; }

std::vector<std::size_t> vehicle_actuators(const hal::DeviceBank& devices, const runtime::WorldModel& model,
                                           int vehicle) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (!devices.is_actuator(i)) continue;
    const int body = static_cast<int>(devices.spec(i).body);
    if (vehicle >= 0 && (body < 0 || static_cast<std::size_t>(body) >= model.bodies.size() ||
                         model.bodies[static_cast<std::size_t>(body)].vehicle != vehicle))
      continue;
    out.push_back(i);
  }
  return out;
}

namespace {

json vec(const Vec3& v) { return json::array({v.x(), v.y(), v.z()}); }
json quat(const Quat& q) { return json::array({q.w(), q.x(), q.y(), q.z()}); }

json bodies_json(const runtime::WorldModel& model, const runtime::WorldState& state, int vehicle) {
  json bodies = json::array();
  for (std::size_t i = 0; i < model.bodies.size() && i < state.bodies.size(); ++i) {
    if (vehicle >= 0 && model.bodies[i].vehicle != vehicle) continue;
    const int b = static_cast<int>(i);
    bodies.push_back({{"name", model.bodies[i].name},
                      {"position_m", vec(state.bodies[i].position_m)},
                      {"orientation_wxyz", quat(state.bodies[i].orientation)},
                      {"velocity_m_s", vec(runtime::linear_velocity(model, state, b))},
                      {"angular_velocity_rad_s", vec(runtime::angular_velocity(model, state, b))}});
  }
  return bodies;
}

// a list of exactly n finite numbers
bool numbers(const json& j, std::size_t n, double* out) {
  if (!j.is_array() || j.size() != n) return false;
  for (std::size_t i = 0; i < n; ++i) {
    if (!j[i].is_number()) return false;
    out[i] = j[i].get<double>();
    if (!std::isfinite(out[i])) return false;
  }
  return true;
}

Reject header(const json& j, const char* type, const std::string& vehicle_id, std::string& reason) {
  if (!j.is_object()) {
    reason = "not a JSON object";
    return Reject::schema;
  }
  const auto s = j.find("schema");
  if (s == j.end() || !s->is_number_integer() || s->get<std::int64_t>() != schema_version) {
    reason = "\"schema\" must be " + std::to_string(schema_version);
    return Reject::schema;
  }
  const auto t = j.find("type");
  if (t != j.end() && (!t->is_string() || t->get<std::string>() != type)) {
    reason = std::string("\"type\" must be \"") + type + "\"";
    return Reject::schema;
  }
  const auto v = j.find("vehicle");
  if (v == j.end() || !v->is_string()) {
    reason = "\"vehicle\" must be a string";
    return Reject::bad_field;
  }
  if (v->get<std::string>() != vehicle_id) {
    reason = "from vehicle \"" + v->get<std::string>() + "\", expected \"" + vehicle_id + "\"";
    return Reject::wrong_vehicle;
  }
  const auto st = j.find("step");
  if (st == j.end() || !st->is_number_unsigned()) {
    reason = "\"step\" must be an unsigned integer";
    return Reject::bad_field;
  }
  return Reject::none;
}

// a JSON list as numbers, unchecked (check_body checks)
void fill(const json& body, const char* key, detail::Numbers& out) {
  const auto it = body.find(key);
  if (it == body.end()) return;
  out.present = true;
  if (!it->is_array()) {
    out.ok = false;
    return;
  }
  for (const json& x : *it) {
    if (!x.is_number()) {
      out.ok = false;
      return;
    }
    out.add(x.get<double>());
  }
}

}  // namespace

namespace detail {

bool Numbers::exactly(std::size_t count) const {
  if (!present || !ok || n != count) return false;
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(v[i])) return false;
  return true;
}

bool command_values(const Numbers& values) {
  if (!values.ok || values.n > 4) return false;
  for (std::size_t i = 0; i < values.n; ++i)
    if (!std::isfinite(values.v[i])) return false;
  return true;
}

Reject check_body(const RawBody& b, const runtime::WorldModel& model, int vehicle, Measurement& m,
                  std::string& reason) {
  if (!b.has_name) {
    reason = "a body's \"name\" must be a string";
    return Reject::bad_field;
  }
  const int index = model.find_body(b.name);
  if (index < 0 || (vehicle >= 0 && model.bodies[static_cast<std::size_t>(index)].vehicle != vehicle)) {
    reason = "body \"" + b.name + "\" is not a body of this vehicle";
    return Reject::bad_field;
  }
  m.body = static_cast<std::uint32_t>(index);
  if (!b.has_time) {
    reason = "\"measured_time_ns\" must be an integer";
    return Reject::bad_field;
  }
  m.measured_time_ns = b.measured_time_ns;
  if (b.position.present != b.orientation.present) {
    reason = "a pose needs both \"position_m\" and \"orientation_wxyz\"";
    return Reject::bad_field;
  }
  if (b.position.present) {
    if (!b.position.exactly(3)) {
      reason = "\"position_m\" must be 3 finite numbers";
      return Reject::bad_field;
    }
    m.position_m = Vec3(b.position.v[0], b.position.v[1], b.position.v[2]);
    if (!b.orientation.exactly(4)) {
      reason = "\"orientation_wxyz\" must be 4 finite numbers";
      return Reject::bad_field;
    }
    const Quat q(b.orientation.v[0], b.orientation.v[1], b.orientation.v[2], b.orientation.v[3]);
    if (std::abs(q.norm() - 1.0) > 1e-3) {
      reason = "\"orientation_wxyz\" must be a unit quaternion";
      return Reject::bad_field;
    }
    m.orientation = q.normalized();
    m.has_pose = true;
  }
  if (b.velocity.present) {
    if (!b.velocity.exactly(3)) {
      reason = "\"velocity_m_s\" must be 3 finite numbers";
      return Reject::bad_field;
    }
    m.velocity_m_s = Vec3(b.velocity.v[0], b.velocity.v[1], b.velocity.v[2]);
    if (b.angular_velocity.present) {
      if (!b.angular_velocity.exactly(3)) {
        reason = "\"angular_velocity_rad_s\" must be 3 finite numbers";
        return Reject::bad_field;
      }
      m.angular_velocity_rad_s = Vec3(b.angular_velocity.v[0], b.angular_velocity.v[1], b.angular_velocity.v[2]);
    }
    m.has_velocity = true;
  }
  if (!m.has_pose && !m.has_velocity) {
    reason = "a body needs a pose or a velocity";
    return Reject::bad_field;
  }
  if (b.covariance.present) {
    if (!b.covariance.exactly(36)) {
      reason = "\"pose_covariance\" must be 36 finite numbers (6 x 6, row major)";
      return Reject::bad_field;
    }
    for (int r = 0; r < 6; ++r)
      for (int k = 0; k < 6; ++k) m.pose_covariance(r, k) = b.covariance.v[r * 6 + k];
    m.has_covariance = true;
  }
  return Reject::none;
}

}  // namespace detail

void encode_projected(std::string& out, const std::string& vehicle_id, const runtime::StepContext& ctx,
                      const runtime::WorldModel& model, const runtime::WorldState& projected, int vehicle,
                      const hal::DeviceBank* devices, const std::vector<std::size_t>& actuators, Payload format) {
  if (format == Payload::protobuf)
    return detail::encode_projected_protobuf(out, vehicle_id, ctx, model, projected, vehicle, devices, actuators);
  json j{{"schema", schema_version},
         {"type", "projected"},
         {"vehicle", vehicle_id},
         {"step", ctx.step},
         {"time_ns", ctx.time_ns},
         {"period_ns", ctx.period_ns},
         {"bodies", bodies_json(model, projected, vehicle)}};
  json commands = json::object();
  if (devices) {
    for (std::size_t i : actuators) {
      const std::uint8_t* data = nullptr;
      std::size_t size = 0;
      json values = json::array();
      if (devices->reading(i, data, size) == hal::Status::ok && data)
        for (std::size_t k = 0; k + 4 <= size; k += 4) values.push_back(tether_get_f32le(data + k));
      else
        for (std::size_t k = 0; k + 4 <= devices->payload_size(i); k += 4) values.push_back(0.0);
      commands[devices->full_name(i)] = std::move(values);
    }
  }
  j["commands"] = std::move(commands);
  out = runtime::json_text(j);
}

void encode_actual(std::string& out, const std::string& vehicle_id, const runtime::StepContext& ctx,
                   const runtime::WorldModel& model, const runtime::WorldState& actual, int vehicle, Payload format) {
  if (format == Payload::protobuf) return detail::encode_actual_protobuf(out, vehicle_id, ctx, model, actual, vehicle);
  json j{{"schema", schema_version}, {"type", "actual"},          {"vehicle", vehicle_id},
         {"step", ctx.step},         {"time_ns", actual.time_ns}, {"bodies", bodies_json(model, actual, vehicle)}};
  out = runtime::json_text(j);
}

void encode_feedback(std::string& out, const std::string& vehicle_id, std::uint64_t step,
                     const runtime::WorldModel& model, const std::vector<Measurement>& measurements, Payload format) {
  if (format == Payload::protobuf) return detail::encode_feedback_protobuf(out, vehicle_id, step, model, measurements);
  json bodies = json::array();
  for (const Measurement& m : measurements) {
    json b{{"name", m.body < model.bodies.size() ? model.bodies[m.body].name : std::string()},
           {"measured_time_ns", m.measured_time_ns}};
    if (m.has_pose) {
      b["position_m"] = vec(m.position_m);
      b["orientation_wxyz"] = quat(m.orientation);
    }
    if (m.has_velocity) {
      b["velocity_m_s"] = vec(m.velocity_m_s);
      b["angular_velocity_rad_s"] = vec(m.angular_velocity_rad_s);
    }
    if (m.has_covariance) {
      json c = json::array();
      for (int r = 0; r < 6; ++r)
        for (int k = 0; k < 6; ++k) c.push_back(m.pose_covariance(r, k));
      b["pose_covariance"] = std::move(c);
    }
    bodies.push_back(std::move(b));
  }
  json j{{"schema", schema_version},
         {"type", "feedback"},
         {"vehicle", vehicle_id},
         {"step", step},
         {"bodies", std::move(bodies)}};
  out = runtime::json_text(j);
}

std::string encode_status(const std::string& state, const std::string& client_id, const std::string& run) {
  json j{{"schema", schema_version}, {"type", "status"}, {"state", state}, {"client_id", client_id}};
  if (!run.empty()) j["run"] = run;
  return runtime::json_text(j);
}

Reject parse_projected(std::string_view text, const std::string& vehicle_id, Projected& out, std::string& reason,
                       std::size_t max_bytes) {
  if (text.size() > max_bytes) {
    reason = std::to_string(text.size()) + " bytes (at most " + std::to_string(max_bytes) + ")";
    return Reject::oversize;
  }
  if (payload_of(text) == Payload::protobuf) return detail::parse_projected_protobuf(text, vehicle_id, out, reason);
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    reason = "not valid JSON";
    return Reject::not_json;
  }
  if (const Reject r = header(j, "projected", vehicle_id, reason); r != Reject::none) return r;
  out.step = j["step"].get<std::uint64_t>();
  const auto t = j.find("time_ns");
  const auto p = j.find("period_ns");
  if (t == j.end() || !t->is_number_integer() || p == j.end() || !p->is_number_integer() ||
      p->get<std::int64_t>() <= 0) {
    reason = "\"time_ns\" and \"period_ns\" (> 0) must be integers";
    return Reject::bad_field;
  }
  out.time_ns = t->get<std::int64_t>();
  out.period_ns = p->get<std::int64_t>();
  out.commands.clear();
  if (const auto c = j.find("commands"); c != j.end()) {
    if (!c->is_object()) {
      reason = "\"commands\" must be an object of device: [numbers]";
      return Reject::bad_field;
    }
    for (const auto& [name, values] : c->items()) {
      NamedCommand nc;
      nc.device = name;
      if (!values.is_array() || values.size() > 4) {
        reason = "command \"" + name + "\" must be a list of at most 4 numbers";
        return Reject::bad_field;
      }
      nc.values.resize(values.size());
      if (!numbers(values, values.size(), nc.values.data())) {
        reason = "command \"" + name + "\" must be a list of finite numbers";
        return Reject::bad_field;
      }
      out.commands.push_back(std::move(nc));
    }
  }
  return Reject::none;
}

Reject parse_feedback(std::string_view text, const std::string& vehicle_id, const runtime::WorldModel& model,
                      int vehicle, Feedback& out, std::string& reason, std::size_t max_bytes) {
  if (text.size() > max_bytes) {
    reason = std::to_string(text.size()) + " bytes (at most " + std::to_string(max_bytes) + ")";
    return Reject::oversize;
  }
  if (payload_of(text) == Payload::protobuf)
    return detail::parse_feedback_protobuf(text, vehicle_id, model, vehicle, out, reason);
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    reason = "not valid JSON";
    return Reject::not_json;
  }
  if (const Reject r = header(j, "feedback", vehicle_id, reason); r != Reject::none) return r;
  out.step = j["step"].get<std::uint64_t>();
  out.measurements.clear();
  const auto bodies = j.find("bodies");
  if (bodies == j.end() || !bodies->is_array() || bodies->empty()) {
    reason = "\"bodies\" must be a non-empty list";
    return Reject::bad_field;
  }
  for (const json& b : *bodies) {
    if (!b.is_object()) {
      reason = "each of \"bodies\" must be an object";
      return Reject::bad_field;
    }
    detail::RawBody raw;
    if (const auto name = b.find("name"); name != b.end() && name->is_string()) {
      raw.has_name = true;
      raw.name = name->get<std::string>();
    }
    if (const auto mt = b.find("measured_time_ns"); mt != b.end() && mt->is_number_integer()) {
      raw.has_time = true;
      raw.measured_time_ns = mt->get<std::int64_t>();
    }
    fill(b, "position_m", raw.position);
    fill(b, "orientation_wxyz", raw.orientation);
    fill(b, "velocity_m_s", raw.velocity);
    fill(b, "angular_velocity_rad_s", raw.angular_velocity);
    fill(b, "pose_covariance", raw.covariance);
    Measurement m;
    if (const Reject r = detail::check_body(raw, model, vehicle, m, reason); r != Reject::none) return r;
    out.measurements.push_back(m);
  }
  return Reject::none;
}

std::string parse_status(std::string_view text, std::string* run) {
  if (text.size() > 4096) return {};
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return {};
  if (run) {
    const auto r = j.find("run");
    *run = r != j.end() && r->is_string() ? r->get<std::string>() : std::string();
  }
  const auto s = j.find("state");
  return s != j.end() && s->is_string() ? s->get<std::string>() : std::string();
}

}  // namespace tether::adapters::mqtt
