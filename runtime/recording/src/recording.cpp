// SPDX-License-Identifier: Apache-2.0
#include "tether/recording/recording.hpp"

#include "tether/recording/protobuf.hpp"

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

namespace {

// Field numbers of tether/recording.proto (protobuf.cpp has the descriptor; docs/recording.proto the text).
namespace f {
// WorldState
constexpr std::uint32_t ws_step = 1, ws_time = 2, ws_bodies = 3;
// BodyState
constexpr std::uint32_t bs_position = 1, bs_orientation = 2, bs_linear = 3, bs_angular = 4;
// Wrench
constexpr std::uint32_t w_body = 1, w_force_world = 2, w_torque_world = 3, w_force_body = 4, w_torque_body = 5;
// DeviceCommand
constexpr std::uint32_t dc_device = 1, dc_payload = 2;
// Measurement
constexpr std::uint32_t m_body = 1, m_time = 2, m_has_pose = 3, m_has_velocity = 4, m_position = 5, m_orientation = 6,
                        m_velocity = 7, m_angular = 8, m_covariance = 9;
// Reply
constexpr std::uint32_t r_step = 1, r_wrenches = 2, r_commands = 3, r_measurements = 4, r_wire = 5;
// WireFrame
constexpr std::uint32_t wf_to_peer = 1, wf_bytes = 2;
// Slot
constexpr std::uint32_t s_outcome = 1, s_round_trip = 2, s_reply = 3;
// StepRecord
constexpr std::uint32_t sr_version = 1, sr_step = 2, sr_time = 3, sr_hash = 4, sr_step_time = 5, sr_slots = 6;
// Keyframe
constexpr std::uint32_t k_version = 1, k_state = 2, k_held = 3, k_replies = 4, k_params = 5, k_processors = 6,
                        k_devices = 7, k_faults = 8;
// OperatorCommand
constexpr std::uint32_t oc_kind = 1, oc_name = 2, oc_body = 3, oc_frame = 4, oc_force = 5, oc_torque = 6, oc_point = 7,
                        oc_duration = 8, oc_value = 9;
// StepCommands
constexpr std::uint32_t sc_version = 1, sc_step = 2, sc_commands = 3;
// SafeReplies
constexpr std::uint32_t sf_version = 1, sf_replies = 2;
}  // namespace f

using pb::Wire;

// typed reads of a field whose wire type must match
bool get(pb::Reader& r, Wire w, std::uint64_t& v) { return w == Wire::varint && r.varint(v); }
bool get(pb::Reader& r, Wire w, double& v) { return w == Wire::i64 && r.f64(v); }
bool get(pb::Reader& r, Wire w, std::string_view& v) { return w == Wire::len && r.len(v); }
bool get(pb::Reader& r, Wire w, std::int64_t& v) {
  std::uint64_t u;
  if (!get(r, w, u)) return false;
  v = static_cast<std::int64_t>(u);
  return true;
}
template <typename T>
bool get_small(pb::Reader& r, Wire w, T& v, std::uint64_t max) {
  std::uint64_t u;
  if (!get(r, w, u) || u > max) return false;
  v = static_cast<T>(u);
  return true;
}
bool get_bool(pb::Reader& r, Wire w, bool& v) {
  std::uint64_t u;
  if (!get(r, w, u) || u > 1) return false;
  v = u == 1;
  return true;
}
bool get_vec3(pb::Reader& r, Wire w, Vec3& v) {
  std::string_view b;
  return get(r, w, b) && pb::read_vec3(b, v);
}
bool get_quat(pb::Reader& r, Wire w, Quat& q) {
  std::string_view b;
  return get(r, w, b) && pb::read_quat(b, q);
}

// the bit of each field a decoder saw; `want` lists those a writer always writes
constexpr std::uint32_t bit(std::uint32_t field) { return field < 32 ? 1u << field : 0u; }

enum class Read { ok, malformed, missing };

// The field loop every decoder shares: `field(reader, number, wire)` reads one field it knows
// (false: malformed) and skips the others; afterwards every field of `want` must have come.
// `offset` (if given) is where reading stopped.
template <typename F>
Read read_message(std::string_view bytes, std::uint32_t want, F&& field, std::size_t* offset = nullptr) {
  pb::Reader r(bytes);
  std::uint32_t number, seen = 0;
  Wire w;
  bool ok = true;
  while (ok && r.next(number, w)) {
    ok = field(r, number, w);
    seen |= bit(number);
  }
  if (offset) *offset = r.offset();
  if (!ok || r.failed()) return Read::malformed;
  return (seen & want) == want ? Read::ok : Read::missing;
}

// a nested message: read whole or not at all
template <typename F>
bool read_nested(std::string_view bytes, std::uint32_t want, F&& field) {
  return read_message(bytes, want, std::forward<F>(field)) == Read::ok;
}

void put_wrench(pb::Writer& w, std::uint32_t body, const BodyWrench& b) {
  w.u64(f::w_body, body);
  w.vec3(f::w_force_world, b.force_world_n);
  w.vec3(f::w_torque_world, b.torque_world_nm);
  w.vec3(f::w_force_body, b.force_body_n);
  w.vec3(f::w_torque_body, b.torque_body_nm);
}

bool read_wrench(std::string_view bytes, std::uint32_t& body, BodyWrench& b) {
  const std::uint32_t want =
      bit(f::w_body) | bit(f::w_force_world) | bit(f::w_torque_world) | bit(f::w_force_body) | bit(f::w_torque_body);
  return read_nested(bytes, want, [&](pb::Reader& r, std::uint32_t field, Wire w) {
    switch (field) {
      case f::w_body: return get_small(r, w, body, 0xffffffffu);
      case f::w_force_world: return get_vec3(r, w, b.force_world_n);
      case f::w_torque_world: return get_vec3(r, w, b.torque_world_nm);
      case f::w_force_body: return get_vec3(r, w, b.force_body_n);
      case f::w_torque_body: return get_vec3(r, w, b.torque_body_nm);
      default: return r.skip(w);
    }
  });
}

void put_measurement(pb::Writer& w, const Measurement& m) {
  w.u64(f::m_body, m.body);
  w.i64(f::m_time, m.measured_time_ns);
  w.boolean(f::m_has_pose, m.has_pose);
  w.boolean(f::m_has_velocity, m.has_velocity);
  w.vec3(f::m_position, m.position_m);
  w.quat(f::m_orientation, m.orientation);
  w.vec3(f::m_velocity, m.velocity_m_s);
  w.vec3(f::m_angular, m.angular_velocity_rad_s);
  if (m.has_covariance) w.packed_f64(f::m_covariance, m.pose_covariance.data(), 36);
}

bool read_measurement(std::string_view bytes, Measurement& m) {
  int covariance = 0;
  const std::uint32_t want = bit(f::m_body) | bit(f::m_time) | bit(f::m_has_pose) | bit(f::m_has_velocity) |
                             bit(f::m_position) | bit(f::m_orientation) | bit(f::m_velocity) | bit(f::m_angular);
  const bool ok = read_nested(bytes, want, [&](pb::Reader& r, std::uint32_t field, Wire w) {
    switch (field) {
      case f::m_body: return get_small(r, w, m.body, 0xffffffffu);
      case f::m_time: return get(r, w, m.measured_time_ns);
      case f::m_has_pose: return get_bool(r, w, m.has_pose);
      case f::m_has_velocity: return get_bool(r, w, m.has_velocity);
      case f::m_position: return get_vec3(r, w, m.position_m);
      case f::m_orientation: return get_quat(r, w, m.orientation);
      case f::m_velocity: return get_vec3(r, w, m.velocity_m_s);
      case f::m_angular: return get_vec3(r, w, m.angular_velocity_rad_s);
      case f::m_covariance:
        return r.repeated_f64(w, [&](double x) {
          if (covariance >= 36) return false;
          m.pose_covariance.data()[covariance++] = x;
          return true;
        });
      default: return r.skip(w);
    }
  });
  m.has_covariance = covariance == 36;
  return ok && (covariance == 0 || covariance == 36);
}

void put_reply(pb::Writer& w, const Reply& reply) {
  w.u64(f::r_step, reply.step);
  for (const auto& [body, wrench] : reply.wrenches) {
    const std::size_t at = w.begin(f::r_wrenches);
    put_wrench(w, body, wrench);
    w.end(at);
  }
  for (const DeviceCommand& c : reply.commands) {
    // a size beyond the payload buffer would write a record the decoder refuses: clamp it
    const auto size = std::min<std::size_t>(c.size, c.bytes.size());
    pb::Chunk<32> m;  // device (at most 4 bytes with its tag), payload (at most 18)
    m.u64(f::dc_device, c.device);
    m.raw(f::dc_payload, c.bytes.data(), size);
    w.bytes(f::r_commands, m.view());
  }
  for (const Measurement& m : reply.measurements) {
    const std::size_t at = w.begin(f::r_measurements);
    put_measurement(w, m);
    w.end(at);
  }
  for (const WireFrame& f : reply.wire) {
    const std::size_t at = w.begin(f::r_wire);
    w.boolean(f::wf_to_peer, f.to_peer);
    w.bytes(f::wf_bytes, reply.wire_frame(f));
    w.end(at);
  }
}

bool read_command(std::string_view bytes, DeviceCommand& c) {
  return read_nested(bytes, bit(f::dc_device), [&](pb::Reader& r, std::uint32_t field, Wire w) {
    std::string_view payload;
    switch (field) {
      case f::dc_device: return get_small(r, w, c.device, 0xffff);
      case f::dc_payload:
        if (!get(r, w, payload) || payload.size() > c.bytes.size()) return false;
        c.size = static_cast<std::uint8_t>(payload.size());
        std::memcpy(c.bytes.data(), payload.data(), payload.size());
        return true;
      default: return r.skip(w);
    }
  });
}

bool read_wire_frame(std::string_view bytes, Reply& reply) {
  bool to_peer = false;
  std::string_view data;
  const bool ok = read_nested(bytes, bit(f::wf_bytes), [&](pb::Reader& r, std::uint32_t field, Wire w) {
    switch (field) {
      case f::wf_to_peer: return get_bool(r, w, to_peer);
      case f::wf_bytes: return get(r, w, data);
      default: return r.skip(w);
    }
  });
  // offsets are 32-bit: a reply's frames hold less than 4 GiB (an MCAP message is far smaller)
  if (!ok || reply.wire_bytes.size() + data.size() > 0xffffffffu) return false;
  reply.add_wire(to_peer, data);
  return true;
}

bool read_reply(std::string_view bytes, Reply& reply) {
  reply.clear();
  return read_nested(bytes, bit(f::r_step), [&](pb::Reader& r, std::uint32_t field, Wire w) {
    std::string_view b;
    switch (field) {
      case f::r_step: return get(r, w, reply.step);
      case f::r_wrenches: {
        std::uint32_t body = 0;
        BodyWrench wrench;
        if (!get(r, w, b) || !read_wrench(b, body, wrench)) return false;
        reply.wrenches.emplace_back(body, wrench);
        return true;
      }
      case f::r_commands: return get(r, w, b) && read_command(b, reply.commands.emplace_back());
      case f::r_measurements: return get(r, w, b) && read_measurement(b, reply.measurements.emplace_back());
      case f::r_wire: return get(r, w, b) && read_wire_frame(b, reply);
      default: return r.skip(w);
    }
  });
}

bool read_body(std::string_view bytes, BodyState& b) {
  const std::uint32_t want = bit(f::bs_position) | bit(f::bs_orientation) | bit(f::bs_linear) | bit(f::bs_angular);
  return read_nested(bytes, want, [&](pb::Reader& r, std::uint32_t field, Wire w) {
    switch (field) {
      case f::bs_position: return get_vec3(r, w, b.position_m);
      case f::bs_orientation: return get_quat(r, w, b.orientation);
      case f::bs_linear: return get_vec3(r, w, b.linear_momentum);
      case f::bs_angular: return get_vec3(r, w, b.angular_momentum);
      default: return r.skip(w);
    }
  });
}

bool fail_at(std::string* error, const char* what, std::size_t offset) {
  if (error) *error = std::string(what) + " is malformed or cut short at byte " + std::to_string(offset);
  return false;
}

bool fail(std::string* error, const char* what, const ByteReader& r) { return fail_at(error, what, r.offset()); }

// a top-level record's result as decode_* report it
bool result(Read read, std::size_t offset, std::string* error, const char* what) {
  if (read == Read::malformed) return fail_at(error, what, offset);
  if (read == Read::missing) {
    if (error) *error = std::string(what) + " is cut short or lacks a field it must have";
    return false;
  }
  return true;
}

bool check_version(std::uint32_t version, std::string* error, const char* what) {
  if (version == recording_format_version) return true;
  if (error)
    *error = std::string(what) + " of format version " + std::to_string(version) + ", this build reads version " +
             std::to_string(recording_format_version);
  return false;
}

}  // namespace

void encode_state(const WorldState& state, std::string& out) {
  pb::Writer w(out);
  for (const BodyState& b : state.bodies) {
    pb::Chunk<128> c;  // 29 + 38 + 29 + 29 bytes
    c.vec3(f::bs_position, b.position_m);
    c.quat(f::bs_orientation, b.orientation);
    c.vec3(f::bs_linear, b.linear_momentum);
    c.vec3(f::bs_angular, b.angular_momentum);
    w.bytes(f::ws_bodies, c.view());
  }
  // step and time last: a record cut at a field boundary lacks them
  pb::Chunk<24> tail;
  tail.u64(f::ws_step, state.step);
  tail.u64(f::ws_time, static_cast<std::uint64_t>(state.time_ns));
  out.append(tail.view());
}

bool decode_state(std::string_view bytes, WorldState& state, std::string* error) {
  state.bodies.clear();
  std::size_t at = 0;
  const Read read = read_message(
      bytes, bit(f::ws_step) | bit(f::ws_time),
      [&](pb::Reader& r, std::uint32_t field, Wire w) {
        std::string_view b;
        switch (field) {
          case f::ws_step: return get(r, w, state.step);
          case f::ws_time: return get(r, w, state.time_ns);
          case f::ws_bodies: return get(r, w, b) && read_body(b, state.bodies.emplace_back());
          default: return r.skip(w);
        }
      },
      &at);
  return result(read, at, error, "state record");
}

void encode_reply(const Reply& reply, std::string& out) {
  pb::Writer w(out);
  put_reply(w, reply);
}

void encode_step(const StepRecord& record, std::string& out) {
  pb::Writer w(out);
  for (const SlotRecord& s : record.slots) {
    const std::size_t at = w.begin(f::sr_slots);
    pb::Chunk<16> head;
    head.u64(f::s_outcome, static_cast<std::uint64_t>(s.outcome));
    head.u64(f::s_round_trip, s.round_trip_ns);
    out.append(head.view());
    if (s.outcome == SlotOutcome::fresh) {
      const std::size_t ra = w.begin(f::s_reply);
      put_reply(w, s.reply);
      w.end(ra);
    }
    w.end(at);
  }
  pb::Chunk<64> tail;
  tail.u64(f::sr_step, record.step);
  tail.u64(f::sr_time, static_cast<std::uint64_t>(record.time_ns));
  tail.fixed64(f::sr_hash, record.state_hash);
  tail.u64(f::sr_step_time, record.step_time_ns);
  // the version last: a record cut at a field boundary lacks it
  tail.u64(f::sr_version, recording_format_version);
  out.append(tail.view());
}

namespace {

bool read_slot(std::string_view bytes, SlotRecord& s) {
  s.reply.clear();
  bool reply = false;
  const bool ok =
      read_nested(bytes, bit(f::s_outcome) | bit(f::s_round_trip), [&](pb::Reader& r, std::uint32_t field, Wire w) {
        std::string_view b;
        switch (field) {
          case f::s_outcome: return get_small(r, w, s.outcome, 2);
          case f::s_round_trip: return get(r, w, s.round_trip_ns);
          case f::s_reply: return (reply = true) && get(r, w, b) && read_reply(b, s.reply);
          default: return r.skip(w);
        }
      });
  // a fresh slot carries its reply, the others none
  return ok && reply == (s.outcome == SlotOutcome::fresh);
}

}  // namespace

bool decode_step(std::string_view bytes, StepRecord& out, std::string* error) {
  std::uint32_t version = 0;
  std::size_t slots = 0, at = 0;
  const std::uint32_t want =
      bit(f::sr_version) | bit(f::sr_step) | bit(f::sr_time) | bit(f::sr_hash) | bit(f::sr_step_time);
  const Read read = read_message(
      bytes, want,
      [&](pb::Reader& r, std::uint32_t field, Wire w) {
        std::string_view b;
        switch (field) {
          case f::sr_version: return get_small(r, w, version, 0xffffffffu);
          case f::sr_step: return get(r, w, out.step);
          case f::sr_time: return get(r, w, out.time_ns);
          case f::sr_hash: return w == Wire::i64 && r.fixed64(out.state_hash);
          case f::sr_step_time: return get(r, w, out.step_time_ns);
          case f::sr_slots:
            // slots are reused from the record's previous contents (their reply buffers)
            if (slots == out.slots.size()) out.slots.emplace_back();
            return get(r, w, b) && read_slot(b, out.slots[slots++]);
          default: return r.skip(w);
        }
      },
      &at);
  out.slots.resize(slots);
  return result(read, at, error, "step record") && check_version(version, error, "step record");
}

void encode_keyframe(const Keyframe& k, std::string& out) {
  pb::Writer w(out);
  w.u64(f::k_version, recording_format_version);
  for (std::size_t i = 0; i < k.held_inputs.wrenches.size(); ++i) {
    const std::size_t at = w.begin(f::k_held);
    put_wrench(w, static_cast<std::uint32_t>(i), k.held_inputs.wrenches[i]);
    w.end(at);
  }
  for (const Reply& r : k.last_replies) {
    const std::size_t at = w.begin(f::k_replies);
    put_reply(w, r);
    w.end(at);
  }
  w.bytes(f::k_params, k.model_params);
  for (const std::string& p : k.processor_state) w.bytes(f::k_processors, p);
  w.bytes(f::k_devices, k.devices);
  if (!k.faults.empty()) w.bytes(f::k_faults, k.faults);
  // the state last: a keyframe cut at a field boundary lacks it
  const std::size_t at = w.begin(f::k_state);
  encode_state(k.state, out);
  w.end(at);
}

bool decode_keyframe(std::string_view bytes, Keyframe& k, std::string* error) {
  std::uint32_t version = 0;
  std::size_t at = 0;
  k.held_inputs.wrenches.clear();
  k.last_replies.clear();
  k.processor_state.clear();
  k.model_params.clear();
  k.devices.clear();
  k.faults.clear();
  std::string why;  // a state that does not decode says why
  const std::uint32_t want = bit(f::k_version) | bit(f::k_state) | bit(f::k_params) | bit(f::k_devices);
  const Read read = read_message(
      bytes, want,
      [&](pb::Reader& r, std::uint32_t field, Wire w) {
        std::string_view b;
        std::uint32_t body = 0;
        BodyWrench wrench;
        switch (field) {
          case f::k_version: return get_small(r, w, version, 0xffffffffu);
          case f::k_state: return get(r, w, b) && decode_state(b, k.state, &why);
          case f::k_held:
            // one per body, in body order
            if (!get(r, w, b) || !read_wrench(b, body, wrench) || body != k.held_inputs.wrenches.size()) return false;
            k.held_inputs.wrenches.push_back(wrench);
            return true;
          case f::k_replies: return get(r, w, b) && read_reply(b, k.last_replies.emplace_back());
          case f::k_params: return get(r, w, b) && (k.model_params.assign(b), true);
          case f::k_processors: return get(r, w, b) && (k.processor_state.emplace_back(b), true);
          case f::k_devices: return get(r, w, b) && (k.devices.assign(b), true);
          case f::k_faults: return get(r, w, b) && (k.faults.assign(b), true);
          default: return r.skip(w);
        }
      },
      &at);
  if (!why.empty()) {
    if (error) *error = "keyframe: " + why;
    return false;
  }
  return result(read, at, error, "keyframe") && check_version(version, error, "keyframe");
}

void encode_step_commands(const StepCommands& c, std::string& out) {
  pb::Writer w(out);
  for (const OperatorCommand& command : c.commands) {
    const OperatorCommandFields o = to_fields(command);
    const std::size_t at = w.begin(f::sc_commands);
    w.u64(f::oc_kind, o.kind);
    w.bytes(f::oc_name, o.name);
    w.u64(f::oc_body, o.body);
    w.boolean(f::oc_frame, o.body_frame);
    w.vec3(f::oc_force, o.force_n);
    w.vec3(f::oc_torque, o.torque_nm);
    w.vec3(f::oc_point, o.point_m);
    w.f64(f::oc_duration, o.duration_s);
    w.f64(f::oc_value, o.value);
    w.end(at);
  }
  w.u64(f::sc_step, c.step);
  w.u64(f::sc_version, recording_format_version);
}

namespace {

bool read_operator_command(std::string_view bytes, OperatorCommand& out) {
  OperatorCommandFields o;
  const bool read = read_nested(bytes, bit(f::oc_kind), [&](pb::Reader& r, std::uint32_t field, Wire w) {
    std::string_view b;
    switch (field) {
      case f::oc_kind: return get_small(r, w, o.kind, std::variant_size_v<OperatorCommand>) && o.kind != 0;
      case f::oc_name: return get(r, w, b) && (o.name.assign(b), true);
      case f::oc_body: return get_small(r, w, o.body, 0xffffffffu);
      case f::oc_frame: return get_bool(r, w, o.body_frame);
      case f::oc_force: return get_vec3(r, w, o.force_n);
      case f::oc_torque: return get_vec3(r, w, o.torque_nm);
      case f::oc_point: return get_vec3(r, w, o.point_m);
      case f::oc_duration: return get(r, w, o.duration_s);
      case f::oc_value: return get(r, w, o.value);
      default: return r.skip(w);
    }
  });
  return read && from_fields(std::move(o), out);
}

}  // namespace

bool decode_step_commands(std::string_view bytes, StepCommands& out, std::string* error) {
  std::uint32_t version = 0;
  std::size_t at = 0;
  out.commands.clear();
  const Read read = read_message(
      bytes, bit(f::sc_version) | bit(f::sc_step),
      [&](pb::Reader& r, std::uint32_t field, Wire w) {
        std::string_view b;
        switch (field) {
          case f::sc_version: return get_small(r, w, version, 0xffffffffu);
          case f::sc_step: return get(r, w, out.step);
          case f::sc_commands: return get(r, w, b) && read_operator_command(b, out.commands.emplace_back());
          default: return r.skip(w);
        }
      },
      &at);
  return result(read, at, error, "operator commands") && check_version(version, error, "operator commands");
}

void encode_safe_replies(const std::vector<Reply>& replies, std::string& out) {
  pb::Writer w(out);
  for (const Reply& r : replies) {
    const std::size_t at = w.begin(f::sf_replies);
    put_reply(w, r);
    w.end(at);
  }
  w.u64(f::sf_version, recording_format_version);
}

bool decode_safe_replies(std::string_view bytes, std::vector<Reply>& out, std::string* error) {
  std::uint32_t version = 0;
  std::size_t at = 0;
  out.clear();
  const Read read = read_message(
      bytes, bit(f::sf_version),
      [&](pb::Reader& r, std::uint32_t field, Wire w) {
        std::string_view b;
        switch (field) {
          case f::sf_version: return get_small(r, w, version, 0xffffffffu);
          case f::sf_replies: return get(r, w, b) && read_reply(b, out.emplace_back());
          default: return r.skip(w);
        }
      },
      &at);
  return result(read, at, error, "safe replies") && check_version(version, error, "safe replies");
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
