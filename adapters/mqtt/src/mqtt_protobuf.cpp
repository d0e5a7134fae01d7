// SPDX-License-Identifier: Apache-2.0
// The MQTT payloads as Protocol Buffers (docs/mqtt.md, "Payloads", `tether/mqtt.proto`):
// written with the recording's hand-written wire writer, read with its bounds-checked reader.
// Readers accept what any protobuf library writes: fields in any order, absent scalars as
// zero (proto3), repeated doubles packed or not, unknown fields skipped.
#include <cmath>

#include "tether/firmware_shim/payloads.h"
#include "tether/hal/device_bank.hpp"
#include "tether/recording/protobuf.hpp"
#include "mqtt_body.hpp"

namespace tether::adapters::mqtt {

namespace pb = runtime::pb;
using runtime::Measurement;
using runtime::Quat;
using runtime::Vec3;

namespace {

// field numbers of tether/mqtt.proto
enum BodyField : std::uint32_t {
  body_name = 1,
  body_position = 2,
  body_orientation = 3,
  body_velocity = 4,
  body_angular_velocity = 5,
  body_measured_time = 6,
  body_covariance = 7
};
enum StateField : std::uint32_t {
  state_schema = 1,
  state_vehicle = 2,
  state_step = 3,
  state_time = 4,
  state_period = 5,
  state_bodies = 6,
  state_commands = 7
};
enum FeedbackField : std::uint32_t {
  feedback_schema = 1,
  feedback_vehicle = 2,
  feedback_step = 3,
  feedback_bodies = 4
};

void write_vec(pb::Writer& w, std::uint32_t field, const Vec3& v) { w.packed_f64(field, v.data(), 3); }
void write_quat(pb::Writer& w, std::uint32_t field, const Quat& q) {
  const double wxyz[4] = {q.w(), q.x(), q.y(), q.z()};
  w.packed_f64(field, wxyz, 4);
}

void write_state_bodies(pb::Writer& w, const runtime::WorldModel& model, const runtime::WorldState& state,
                        int vehicle) {
  for (std::size_t i = 0; i < model.bodies.size() && i < state.bodies.size(); ++i) {
    if (vehicle >= 0 && model.bodies[i].vehicle != vehicle) continue;
    const int b = static_cast<int>(i);
    const std::size_t at = w.begin(state_bodies);
    w.bytes(body_name, model.bodies[i].name);
    write_vec(w, body_position, state.bodies[i].position_m);
    write_quat(w, body_orientation, state.bodies[i].orientation);
    write_vec(w, body_velocity, runtime::linear_velocity(model, state, b));
    write_vec(w, body_angular_velocity, runtime::angular_velocity(model, state, b));
    w.end(at);
  }
}

// a repeated double, packed (length-delimited) or not (one fixed64 per element)
bool read_doubles(pb::Reader& r, pb::Wire wire, detail::Numbers& out) {
  out.present = true;
  return r.repeated_f64(wire, [&](double x) {
    out.add(x);
    return true;
  });
}

bool read_string(pb::Reader& r, pb::Wire wire, std::string& out) {
  std::string_view s;
  if (wire != pb::Wire::len || !r.len(s)) return false;
  out.assign(s);
  return true;
}

bool read_int(pb::Reader& r, pb::Wire wire, std::uint64_t& out) { return wire == pb::Wire::varint && r.varint(out); }

bool read_body(std::string_view bytes, detail::RawBody& b) {
  pb::Reader r(bytes);
  std::uint32_t field = 0;
  pb::Wire wire{};
  b.has_time = true;  // proto3: an absent measured_time_ns is 0
  while (r.next(field, wire)) {
    std::uint64_t v = 0;
    bool ok = true;
    switch (field) {
      case body_name: ok = b.has_name = read_string(r, wire, b.name); break;
      case body_position: ok = read_doubles(r, wire, b.position); break;
      case body_orientation: ok = read_doubles(r, wire, b.orientation); break;
      case body_velocity: ok = read_doubles(r, wire, b.velocity); break;
      case body_angular_velocity: ok = read_doubles(r, wire, b.angular_velocity); break;
      case body_measured_time:
        ok = read_int(r, wire, v);
        b.measured_time_ns = static_cast<std::int64_t>(v);
        break;
      case body_covariance: ok = read_doubles(r, wire, b.covariance); break;
      default: ok = r.skip(wire);
    }
    if (!ok) return false;
  }
  return !r.failed();
}

bool read_command(std::string_view bytes, NamedCommand& c, detail::Numbers& values) {
  pb::Reader r(bytes);
  std::uint32_t field = 0;
  pb::Wire wire{};
  while (r.next(field, wire)) {
    const bool ok = field == 1   ? read_string(r, wire, c.device)
                    : field == 2 ? read_doubles(r, wire, values)
                                 : r.skip(wire);
    if (!ok) return false;
  }
  return !r.failed();
}

Reject malformed(const pb::Reader& r, std::string& reason) {
  reason = "malformed protobuf near byte " + std::to_string(r.offset());
  return Reject::not_protobuf;
}

// the fields both messages begin with: schema, vehicle, step
Reject check_header(std::uint64_t schema, bool has_vehicle, const std::string& vehicle, const std::string& vehicle_id,
                    std::string& reason) {
  if (schema != static_cast<std::uint64_t>(schema_version)) {
    reason = "\"schema\" must be " + std::to_string(schema_version);
    return Reject::schema;
  }
  if (!has_vehicle) {
    reason = "\"vehicle\" must be a string";
    return Reject::bad_field;
  }
  if (vehicle != vehicle_id) {
    reason = "from vehicle \"" + vehicle + "\", expected \"" + vehicle_id + "\"";
    return Reject::wrong_vehicle;
  }
  return Reject::none;
}

}  // namespace

namespace detail {

void encode_projected_protobuf(std::string& out, const std::string& vehicle_id, const runtime::StepContext& ctx,
                               const runtime::WorldModel& model, const runtime::WorldState& projected, int vehicle,
                               const hal::DeviceBank* devices, const std::vector<std::size_t>& actuators) {
  out.clear();
  pb::Writer w(out);
  w.u64(state_schema, schema_version);
  w.bytes(state_vehicle, vehicle_id);
  w.u64(state_step, ctx.step);
  w.i64(state_time, ctx.time_ns);
  w.i64(state_period, ctx.period_ns);
  write_state_bodies(w, model, projected, vehicle);
  if (!devices) return;
  for (std::size_t i : actuators) {
    double values[4] = {};
    std::size_t n = 0;
    const std::uint8_t* data = nullptr;
    std::size_t size = 0;
    if (devices->reading(i, data, size) == hal::Status::ok && data)
      for (std::size_t k = 0; k + 4 <= size && n < 4; k += 4) values[n++] = tether_get_f32le(data + k);
    else
      n = std::min<std::size_t>(4, devices->payload_size(i) / 4);
    const std::size_t at = w.begin(state_commands);
    w.bytes(1, devices->full_name(i));
    w.packed_f64(2, values, n);
    w.end(at);
  }
}

void encode_actual_protobuf(std::string& out, const std::string& vehicle_id, const runtime::StepContext& ctx,
                            const runtime::WorldModel& model, const runtime::WorldState& actual, int vehicle) {
  out.clear();
  pb::Writer w(out);
  w.u64(state_schema, schema_version);
  w.bytes(state_vehicle, vehicle_id);
  w.u64(state_step, ctx.step);
  w.i64(state_time, actual.time_ns);
  write_state_bodies(w, model, actual, vehicle);
}

void encode_feedback_protobuf(std::string& out, const std::string& vehicle_id, std::uint64_t step,
                              const runtime::WorldModel& model, const std::vector<Measurement>& measurements) {
  out.clear();
  pb::Writer w(out);
  w.u64(feedback_schema, schema_version);
  w.bytes(feedback_vehicle, vehicle_id);
  w.u64(feedback_step, step);
  for (const Measurement& m : measurements) {
    const std::size_t at = w.begin(feedback_bodies);
    w.bytes(body_name, m.body < model.bodies.size() ? model.bodies[m.body].name : std::string());
    if (m.has_pose) {
      write_vec(w, body_position, m.position_m);
      write_quat(w, body_orientation, m.orientation);
    }
    if (m.has_velocity) {
      write_vec(w, body_velocity, m.velocity_m_s);
      write_vec(w, body_angular_velocity, m.angular_velocity_rad_s);
    }
    w.i64(body_measured_time, m.measured_time_ns);
    if (m.has_covariance) {
      double c[36];
      for (int r = 0; r < 6; ++r)
        for (int k = 0; k < 6; ++k) c[r * 6 + k] = m.pose_covariance(r, k);
      w.packed_f64(body_covariance, c, 36);
    }
    w.end(at);
  }
}

Reject parse_projected_protobuf(std::string_view bytes, const std::string& vehicle_id, Projected& out,
                                std::string& reason) {
  pb::Reader r(bytes);
  std::uint32_t field = 0;
  pb::Wire wire{};
  std::uint64_t schema = 0, step = 0, time = 0, period = 0;
  bool has_vehicle = false;
  std::string vehicle;
  out.commands.clear();
  while (r.next(field, wire)) {
    bool ok = true;
    switch (field) {
      case state_schema: ok = read_int(r, wire, schema); break;
      case state_vehicle: ok = has_vehicle = read_string(r, wire, vehicle); break;
      case state_step: ok = read_int(r, wire, step); break;
      case state_time: ok = read_int(r, wire, time); break;
      case state_period: ok = read_int(r, wire, period); break;
      case state_commands: {
        std::string_view c;
        NamedCommand nc;
        Numbers values;
        ok = wire == pb::Wire::len && r.len(c) && read_command(c, nc, values);
        if (ok && !command_values(values)) {
          reason = "command \"" + nc.device + "\" must be a list of at most 4 finite numbers";
          return Reject::bad_field;
        }
        nc.values.assign(values.v, values.v + values.n);
        out.commands.push_back(std::move(nc));
        break;
      }
      default: ok = r.skip(wire);  // bodies: the vehicle knows its own
    }
    if (!ok) return malformed(r, reason);
  }
  if (r.failed()) return malformed(r, reason);
  if (const Reject rej = check_header(schema, has_vehicle, vehicle, vehicle_id, reason); rej != Reject::none)
    return rej;
  if (static_cast<std::int64_t>(period) <= 0) {
    reason = "\"time_ns\" and \"period_ns\" (> 0) must be integers";
    return Reject::bad_field;
  }
  out.step = step;
  out.time_ns = static_cast<std::int64_t>(time);
  out.period_ns = static_cast<std::int64_t>(period);
  return Reject::none;
}

Reject parse_feedback_protobuf(std::string_view bytes, const std::string& vehicle_id, const runtime::WorldModel& model,
                               int vehicle, Feedback& out, std::string& reason) {
  pb::Reader r(bytes);
  std::uint32_t field = 0;
  pb::Wire wire{};
  std::uint64_t schema = 0, step = 0;
  bool has_vehicle = false;
  std::string from;
  std::vector<RawBody> bodies;
  while (r.next(field, wire)) {
    bool ok = true;
    switch (field) {
      case feedback_schema: ok = read_int(r, wire, schema); break;
      case feedback_vehicle: ok = has_vehicle = read_string(r, wire, from); break;
      case feedback_step: ok = read_int(r, wire, step); break;
      case feedback_bodies: {
        std::string_view b;
        ok = wire == pb::Wire::len && r.len(b) && read_body(b, bodies.emplace_back());
        break;
      }
      default: ok = r.skip(wire);
    }
    if (!ok) return malformed(r, reason);
  }
  if (r.failed()) return malformed(r, reason);
  if (const Reject rej = check_header(schema, has_vehicle, from, vehicle_id, reason); rej != Reject::none) return rej;
  out.step = step;
  out.measurements.clear();
  if (bodies.empty()) {
    reason = "\"bodies\" must be a non-empty list";
    return Reject::bad_field;
  }
  for (const RawBody& b : bodies) {
    Measurement m;
    if (const Reject rej = check_body(b, model, vehicle, m, reason); rej != Reject::none) return rej;
    out.measurements.push_back(m);
  }
  return Reject::none;
}

}  // namespace detail

}  // namespace tether::adapters::mqtt
