// SPDX-License-Identifier: Apache-2.0
#include "tether/recording/recording.hpp"

#include <bit>
#include <algorithm>
#include <cstring>

namespace tether::runtime {

static_assert(std::endian::native == std::endian::little, "recording layouts assume a little-endian host");

void ByteWriter::u16(std::uint16_t v) { out_.append(reinterpret_cast<const char*>(&v), 2); }
void ByteWriter::u32(std::uint32_t v) { out_.append(reinterpret_cast<const char*>(&v), 4); }
void ByteWriter::u64(std::uint64_t v) { out_.append(reinterpret_cast<const char*>(&v), 8); }
void ByteWriter::f64(double v) { u64(std::bit_cast<std::uint64_t>(v)); }

namespace {
template <typename T>
bool take(std::string_view in, std::size_t& pos, T& v) {
  if (in.size() - pos < sizeof(T)) return false;
  std::memcpy(&v, in.data() + pos, sizeof(T));
  pos += sizeof(T);
  return true;
}
}  // namespace

bool ByteReader::u8(std::uint8_t& v) { return take(in_, pos_, v); }
bool ByteReader::u16(std::uint16_t& v) { return take(in_, pos_, v); }
bool ByteReader::u32(std::uint32_t& v) { return take(in_, pos_, v); }
bool ByteReader::u64(std::uint64_t& v) { return take(in_, pos_, v); }
bool ByteReader::i64(std::int64_t& v) { return take(in_, pos_, v); }
bool ByteReader::f64(double& v) {
  std::uint64_t bits;
  if (!take(in_, pos_, bits)) return false;
  v = std::bit_cast<double>(bits);
  return true;
}
bool ByteReader::bytes(std::string_view& v) {
  std::uint32_t n;
  if (!u32(n) || in_.size() - pos_ < n) return false;
  v = in_.substr(pos_, n);
  pos_ += n;
  return true;
}
bool ByteReader::count(std::uint32_t& n, std::size_t min_size) {
  return u32(n) && (min_size == 0 || n <= (in_.size() - pos_) / min_size);
}

namespace {

constexpr std::uint8_t has_pose_bit = 1, has_velocity_bit = 2, has_covariance_bit = 4;

void encode_wrench(ByteWriter& w, const BodyWrench& b) {
  w.vec3(b.force_world_n);
  w.vec3(b.torque_world_nm);
  w.vec3(b.force_body_n);
  w.vec3(b.torque_body_nm);
}

bool decode_wrench(ByteReader& r, BodyWrench& b) {
  return r.vec3(b.force_world_n) && r.vec3(b.torque_world_nm) && r.vec3(b.force_body_n) && r.vec3(b.torque_body_nm);
}

bool decode_reply(ByteReader& r, Reply& reply) {
  reply.clear();
  std::uint32_t n;
  if (!r.u64(reply.step) || !r.count(n, 4 + 96)) return false;
  for (std::uint32_t i = 0; i < n; ++i) {
    std::uint32_t body;
    BodyWrench w;
    if (!r.u32(body) || !decode_wrench(r, w)) return false;
    reply.wrenches.emplace_back(body, w);
  }
  if (!r.count(n, 3)) return false;
  for (std::uint32_t i = 0; i < n; ++i) {
    DeviceCommand c;
    if (!r.u16(c.device) || !r.u8(c.size) || c.size > c.bytes.size()) return false;
    for (std::uint8_t b = 0; b < c.size; ++b)
      if (!r.u8(c.bytes[b])) return false;
    reply.commands.push_back(c);
  }
  if (!r.count(n, 4 + 8 + 1 + 13 * 8)) return false;
  for (std::uint32_t i = 0; i < n; ++i) {
    Measurement m;
    std::uint8_t flags;
    double qw, qx, qy, qz;
    if (!r.u32(m.body) || !r.i64(m.measured_time_ns) || !r.u8(flags) || !r.vec3(m.position_m) || !r.f64(qw) ||
        !r.f64(qx) || !r.f64(qy) || !r.f64(qz) || !r.vec3(m.velocity_m_s) || !r.vec3(m.angular_velocity_rad_s))
      return false;
    m.orientation = Quat(qw, qx, qy, qz);
    m.has_pose = flags & has_pose_bit;
    m.has_velocity = flags & has_velocity_bit;
    m.has_covariance = flags & has_covariance_bit;
    if (m.has_covariance)
      for (int k = 0; k < 36; ++k)
        if (!r.f64(m.pose_covariance.data()[k])) return false;
    reply.measurements.push_back(m);
  }
  return true;
}

bool fail(std::string* error, const char* what, const ByteReader& r) {
  if (error) *error = std::string(what) + " is malformed or cut short at byte " + std::to_string(r.offset());
  return false;
}

}  // namespace

void encode_reply(const Reply& reply, std::string& out) {
  ByteWriter w(out);
  w.u64(reply.step);
  w.u32(static_cast<std::uint32_t>(reply.wrenches.size()));
  for (const auto& [body, wrench] : reply.wrenches) {
    w.u32(body);
    encode_wrench(w, wrench);
  }
  w.u32(static_cast<std::uint32_t>(reply.commands.size()));
  for (const DeviceCommand& c : reply.commands) {
    // a size beyond the payload buffer would write a record the decoder refuses: clamp it
    const auto size = static_cast<std::uint8_t>(std::min<std::size_t>(c.size, c.bytes.size()));
    w.u16(c.device);
    w.u8(size);
    out.append(reinterpret_cast<const char*>(c.bytes.data()), size);
  }
  w.u32(static_cast<std::uint32_t>(reply.measurements.size()));
  for (const Measurement& m : reply.measurements) {
    w.u32(m.body);
    w.i64(m.measured_time_ns);
    w.u8(static_cast<std::uint8_t>((m.has_pose ? has_pose_bit : 0) | (m.has_velocity ? has_velocity_bit : 0) |
                                   (m.has_covariance ? has_covariance_bit : 0)));
    w.vec3(m.position_m);
    w.f64(m.orientation.w());
    w.f64(m.orientation.x());
    w.f64(m.orientation.y());
    w.f64(m.orientation.z());
    w.vec3(m.velocity_m_s);
    w.vec3(m.angular_velocity_rad_s);
    if (m.has_covariance)
      for (int k = 0; k < 36; ++k) w.f64(m.pose_covariance.data()[k]);
  }
}

void encode_step(const StepRecord& record, std::string& out) {
  ByteWriter w(out);
  w.u32(recording_format_version);
  w.u64(record.step);
  w.i64(record.time_ns);
  w.u64(record.state_hash);
  w.u64(record.step_time_ns);
  w.u16(static_cast<std::uint16_t>(record.slots.size()));
  for (const SlotRecord& s : record.slots) {
    w.u8(static_cast<std::uint8_t>(s.outcome));
    w.u64(s.round_trip_ns);
    if (s.outcome == SlotOutcome::fresh) encode_reply(s.reply, out);
  }
}

bool decode_step(std::string_view bytes, StepRecord& out, std::string* error) {
  ByteReader r(bytes);
  std::uint32_t version;
  std::uint16_t n;
  if (!r.u32(version)) return fail(error, "step record", r);
  if (version != recording_format_version) {
    if (error)
      *error = "step record of format version " + std::to_string(version) + ", this build reads version " +
               std::to_string(recording_format_version);
    return false;
  }
  if (!r.u64(out.step) || !r.i64(out.time_ns) || !r.u64(out.state_hash) || !r.u64(out.step_time_ns) || !r.u16(n))
    return fail(error, "step record", r);
  // each slot takes at least 9 bytes: a larger count is corrupt, refused before allocating
  if (n > (bytes.size() - r.offset()) / 9) return fail(error, "step record (endpoint count)", r);
  out.slots.resize(n);
  for (SlotRecord& s : out.slots) {
    std::uint8_t outcome;
    if (!r.u8(outcome) || outcome > 2 || !r.u64(s.round_trip_ns)) return fail(error, "step record", r);
    s.outcome = static_cast<SlotOutcome>(outcome);
    s.reply.clear();
    if (s.outcome == SlotOutcome::fresh && !decode_reply(r, s.reply)) return fail(error, "step record", r);
  }
  if (!r.done()) return fail(error, "step record (trailing bytes)", r);
  return true;
}

void encode_keyframe(const Keyframe& k, std::string& out) {
  ByteWriter w(out);
  w.u32(recording_format_version);
  // the state in place, length first (no temporary: the loop writes keyframes)
  const std::size_t length_at = out.size();
  w.u32(0);
  serialize_state(k.state, out);
  const auto length = static_cast<std::uint32_t>(out.size() - length_at - 4);
  for (int i = 0; i < 4; ++i)
    out[length_at + static_cast<std::size_t>(i)] = static_cast<char>((length >> (8 * i)) & 0xff);
  w.u32(static_cast<std::uint32_t>(k.held_inputs.wrenches.size()));
  for (const BodyWrench& b : k.held_inputs.wrenches) encode_wrench(w, b);
  w.u32(static_cast<std::uint32_t>(k.last_replies.size()));
  for (const Reply& r : k.last_replies) encode_reply(r, out);
  w.bytes(k.model_params);
  w.u32(static_cast<std::uint32_t>(k.processor_state.size()));
  for (const std::string& p : k.processor_state) w.bytes(p);
  w.bytes(k.devices);
  // added after format 1's first recordings: a keyframe without it has no active faults
  if (!k.faults.empty()) w.bytes(k.faults);
}

bool decode_keyframe(std::string_view bytes, Keyframe& k, std::string* error) {
  ByteReader r(bytes);
  std::uint32_t version, n;
  std::string_view state, params;
  if (!r.u32(version) || version != recording_format_version || !r.bytes(state)) return fail(error, "keyframe", r);
  std::string why;
  if (!deserialize_state(state, k.state, &why)) {
    if (error) *error = "keyframe: " + why;
    return false;
  }
  if (!r.count(n, 96)) return fail(error, "keyframe", r);
  k.held_inputs.wrenches.resize(n);
  for (BodyWrench& b : k.held_inputs.wrenches)
    if (!decode_wrench(r, b)) return fail(error, "keyframe", r);
  if (!r.count(n, 16)) return fail(error, "keyframe", r);
  k.last_replies.resize(n);
  for (Reply& reply : k.last_replies)
    if (!decode_reply(r, reply)) return fail(error, "keyframe", r);
  if (!r.bytes(params)) return fail(error, "keyframe", r);
  k.model_params = std::string(params);
  if (!r.count(n, 4)) return fail(error, "keyframe", r);
  k.processor_state.resize(n);
  for (std::string& p : k.processor_state) {
    std::string_view v;
    if (!r.bytes(v)) return fail(error, "keyframe", r);
    p = std::string(v);
  }
  std::string_view devices;
  if (!r.bytes(devices)) return fail(error, "keyframe", r);
  k.devices = std::string(devices);
  k.faults.clear();
  if (!r.done()) {
    std::string_view faults;
    if (!r.bytes(faults)) return fail(error, "keyframe", r);
    k.faults = std::string(faults);
  }
  if (!r.done()) return fail(error, "keyframe (trailing bytes)", r);
  return true;
}

void encode_step_commands(const StepCommands& c, std::string& out) {
  ByteWriter w(out);
  w.u32(recording_format_version);
  w.u64(c.step);
  w.u32(static_cast<std::uint32_t>(c.commands.size()));
  for (const OperatorCommand& o : c.commands) {
    w.u8(static_cast<std::uint8_t>(o.kind));
    w.bytes(o.name);
    w.u32(o.body);
    w.u8(o.body_frame ? 1 : 0);
    w.vec3(o.force_n);
    w.vec3(o.torque_nm);
    w.vec3(o.point_m);
    w.f64(o.duration_s);
    w.f64(o.value);
  }
}

bool decode_step_commands(std::string_view bytes, StepCommands& out, std::string* error) {
  ByteReader r(bytes);
  std::uint32_t version, n;
  if (!r.u32(version) || version != recording_format_version || !r.u64(out.step) || !r.count(n, 98))
    return fail(error, "operator commands", r);
  out.commands.resize(n);
  for (OperatorCommand& o : out.commands) {
    std::uint8_t kind, frame;
    std::string_view name;
    if (!r.u8(kind) || kind < 1 || kind > 4 || !r.bytes(name) || !r.u32(o.body) || !r.u8(frame) || frame > 1 ||
        !r.vec3(o.force_n) || !r.vec3(o.torque_nm) || !r.vec3(o.point_m) || !r.f64(o.duration_s) || !r.f64(o.value))
      return fail(error, "operator commands", r);
    o.kind = static_cast<OperatorCommand::Kind>(kind);
    o.name.assign(name);
    o.body_frame = frame == 1;
  }
  if (!r.done()) return fail(error, "operator commands (trailing bytes)", r);
  return true;
}

void encode_safe_replies(const std::vector<Reply>& replies, std::string& out) {
  ByteWriter w(out);
  w.u32(recording_format_version);
  w.u32(static_cast<std::uint32_t>(replies.size()));
  for (const Reply& r : replies) encode_reply(r, out);
}

bool decode_safe_replies(std::string_view bytes, std::vector<Reply>& out, std::string* error) {
  ByteReader r(bytes);
  std::uint32_t version, n;
  if (!r.u32(version) || version != recording_format_version || !r.count(n, 20)) return fail(error, "safe replies", r);
  out.resize(n);
  for (Reply& reply : out)
    if (!decode_reply(r, reply)) return fail(error, "safe replies", r);
  if (!r.done()) return fail(error, "safe replies (trailing bytes)", r);
  return true;
}

std::string serialize_model_params(const WorldModel& model) {
  std::string out;
  serialize_model_params(model, out);
  return out;
}

void serialize_model_params(const WorldModel& model, std::string& out) {
  out.clear();
  ByteWriter w(out);
  w.f64(model.water.density_kg_m3);
  w.vec3(model.water.current_m_s);
  w.u32(static_cast<std::uint32_t>(model.bodies.size()));
  for (const BodyModel& b : model.bodies) {
    w.f64(b.mass_kg);
    w.f64(b.volume_m3);
    w.vec3(b.centre_of_buoyancy_m);
    w.vec3(b.damping.linear);
    w.vec3(b.damping.quadratic);
    w.vec3(b.damping.angular_linear);
    w.vec3(b.damping.angular_quadratic);
  }
}

bool restore_model_params(std::string_view bytes, WorldModel& model, std::string* error) {
  ByteReader r(bytes);
  std::uint32_t n;
  double density;
  Vec3 current;
  if (!r.f64(density) || !r.vec3(current) || !r.u32(n)) return fail(error, "model parameters", r);
  if (n != model.bodies.size()) {
    if (error)
      *error = "model parameters for " + std::to_string(n) + " bodies, the scenario has " +
               std::to_string(model.bodies.size());
    return false;
  }
  model.water.density_kg_m3 = density;
  model.water.current_m_s = current;
  for (BodyModel& b : model.bodies) {
    double mass;
    if (!r.f64(mass) || !r.f64(b.volume_m3) || !r.vec3(b.centre_of_buoyancy_m) || !r.vec3(b.damping.linear) ||
        !r.vec3(b.damping.quadratic) || !r.vec3(b.damping.angular_linear) || !r.vec3(b.damping.angular_quadratic))
      return fail(error, "model parameters", r);
    if (mass != b.mass_kg) {
      // inertia scales with mass for a uniform body
      b.inertia_body *= mass / b.mass_kg;
      b.inv_inertia_body = b.inertia_body.inverse();
      b.mass_kg = mass;
      b.inv_mass = 1.0 / mass;
    }
  }
  if (!r.done()) return fail(error, "model parameters (trailing bytes)", r);
  return true;
}

}  // namespace tether::runtime
