// SPDX-License-Identifier: Apache-2.0
#include "tether/recording/protobuf.hpp"

#include <bit>
#include <cstring>
#include <vector>

namespace tether::runtime::pb {

static_assert(std::endian::native == std::endian::little, "fixed64 fields are copied as little-endian");

// each field is assembled in a stack Chunk and appended once (a push_back per byte costs
// more); the Chunk writes the same bytes for the loop's step items
void Writer::varint(std::uint64_t v) {
  Chunk<10> c;
  c.varint(v);
  out_.append(c.view());
}

void Writer::tag(std::uint32_t field, Wire wire) {
  varint((std::uint64_t{field} << 3) | static_cast<std::uint8_t>(wire));
}

void Writer::u64(std::uint32_t field, std::uint64_t v) {
  Chunk<20> c;
  c.u64(field, v);
  out_.append(c.view());
}

void Writer::fixed64(std::uint32_t field, std::uint64_t v) {
  Chunk<18> c;
  c.fixed64(field, v);
  out_.append(c.view());
}

void Writer::f64(std::uint32_t field, double v) { fixed64(field, std::bit_cast<std::uint64_t>(v)); }

void Writer::bytes(std::uint32_t field, std::string_view v) {
  Chunk<20> head;
  head.varint((std::uint64_t{field} << 3) | static_cast<std::uint8_t>(Wire::len));
  head.varint(v.size());
  out_.append(head.view());
  out_.append(v);
}

void Writer::vec3(std::uint32_t field, const Vec3& v) {
  Chunk<40> c;  // a tag of up to 5 bytes, the length, 27 bytes of doubles
  c.vec3(field, v);
  out_.append(c.view());
}

void Writer::quat(std::uint32_t field, const Quat& q) {
  Chunk<48> c;
  c.quat(field, q);
  out_.append(c.view());
}

void Writer::packed_f64(std::uint32_t field, const double* v, std::size_t n) {
  bytes(field, std::string_view(reinterpret_cast<const char*>(v), 8 * n));
}

// one byte is reserved for the length: most nested messages are shorter than 128 bytes;
// a longer one moves its body up by the extra length bytes
std::size_t Writer::begin(std::uint32_t field) {
  Chunk<11> c;
  c.varint((std::uint64_t{field} << 3) | static_cast<std::uint8_t>(Wire::len));
  c.varint(0);
  out_.append(c.view());
  return out_.size();
}

void Writer::end(std::size_t at) {
  std::uint64_t n = out_.size() - at;
  char buf[10];
  std::size_t k = 0;
  while (n >= 0x80) {
    buf[k++] = static_cast<char>((n & 0x7f) | 0x80);
    n >>= 7;
  }
  buf[k++] = static_cast<char>(n);
  if (k > 1) out_.insert(at, k - 1, '\0');
  std::memcpy(out_.data() + at - 1, buf, k);
}

bool Reader::varint(std::uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos_ >= in_.size()) return fail();
    const auto b = static_cast<std::uint8_t>(in_[pos_++]);
    // the tenth byte may only carry the top bit of a 64-bit value
    if (shift == 63 && b > 1) return fail();
    v |= std::uint64_t{b & 0x7fu} << shift;
    if (!(b & 0x80)) return true;
  }
  return fail();
}

bool Reader::next(std::uint32_t& field, Wire& wire) {
  if (failed_ || pos_ == in_.size()) return false;
  std::uint64_t t;
  if (!varint(t)) return false;
  const auto w = static_cast<std::uint8_t>(t & 7);
  if ((t >> 3) == 0 || (t >> 3) > 0x1fffffff || (w != 0 && w != 1 && w != 2 && w != 5)) return fail();
  field = static_cast<std::uint32_t>(t >> 3);
  wire = static_cast<Wire>(w);
  return true;
}

bool Reader::fixed64(std::uint64_t& v) {
  if (in_.size() - pos_ < 8) return fail();
  std::memcpy(&v, in_.data() + pos_, 8);
  pos_ += 8;
  return true;
}

bool Reader::f64(double& v) {
  std::uint64_t bits;
  if (!fixed64(bits)) return false;
  v = std::bit_cast<double>(bits);
  return true;
}

bool Reader::len(std::string_view& v) {
  std::uint64_t n;
  if (!varint(n)) return false;
  if (n > in_.size() - pos_) return fail();
  v = in_.substr(pos_, n);
  pos_ += n;
  return true;
}

bool Reader::skip(Wire wire) {
  std::uint64_t v;
  std::string_view s;
  switch (wire) {
    case Wire::varint: return varint(v);
    case Wire::i64: return fixed64(v);
    case Wire::len: return len(s);
    case Wire::i32:
      if (in_.size() - pos_ < 4) return fail();
      pos_ += 4;
      return true;
  }
  return fail();
}

namespace {

// reads a message of doubles numbered 1..n into v[0..n); every one must be there
bool read_doubles(std::string_view bytes, double* v, std::uint32_t n) {
  Reader r(bytes);
  std::uint32_t field, seen = 0;
  Wire wire;
  while (r.next(field, wire)) {
    if (field >= 1 && field <= n) {
      if (wire != Wire::i64 || !r.f64(v[field - 1])) return false;
      seen |= 1u << field;
    } else if (!r.skip(wire)) {
      return false;
    }
  }
  return !r.failed() && seen == ((1u << (n + 1)) - 2);
}

}  // namespace

bool read_vec3(std::string_view bytes, Vec3& v) {
  double d[3];
  if (!read_doubles(bytes, d, 3)) return false;
  v = Vec3(d[0], d[1], d[2]);
  return true;
}

bool read_quat(std::string_view bytes, Quat& q) {
  double d[4];
  if (!read_doubles(bytes, d, 4)) return false;
  q = Quat(d[3], d[0], d[1], d[2]);
  return true;
}

// ---- the descriptor of tether/recording.proto ----------------------------------------

namespace {

// google.protobuf.FieldDescriptorProto.Type
enum Type : int {
  t_double = 1,
  t_int64 = 3,
  t_uint64 = 4,
  t_fixed64 = 6,
  t_bool = 8,
  t_string = 9,
  t_message = 11,
  t_bytes = 12,
  t_uint32 = 13,
  t_enum = 14
};

struct FieldDef {
  const char* name;
  int number;
  int type;
  bool repeated;
  const char* type_name;  // message or enum, in package tether
  const char* comment;
};

struct MessageDef {
  const char* name;
  const char* comment;
  std::vector<FieldDef> fields;
};

struct EnumDef {
  const char* name;
  const char* comment;
  std::vector<std::pair<const char*, int>> values;
};

constexpr bool rep = true, one = false;

const std::vector<EnumDef>& enums() {
  static const std::vector<EnumDef> e = {
      {"SlotOutcome",
       "How a step's gather went for one endpoint.",
       {{"SLOT_FRESH", 0}, {"SLOT_TIMEOUT", 1}, {"SLOT_FAULT", 2}}},
      {"CommandKind",
       "What an operator command does.",
       {{"COMMAND_UNSPECIFIED", 0},
        {"APPLY_FORCE", 1},
        {"REMOVE_FORCE", 2},
        {"SET_PARAMETER", 3},
        {"INJECT_FAULT", 4},
        {"ENDPOINT_COMMAND", 5},
        {"BACKGROUND_TAKE", 6}}},
  };
  return e;
}

const std::vector<MessageDef>& messages() {
  static const std::vector<MessageDef> m = {
      {"Vec3", "", {{"x", 1, t_double, one, "", ""}, {"y", 2, t_double, one, "", ""}, {"z", 3, t_double, one, "", ""}}},
      {"Quaternion",
       "",
       {{"x", 1, t_double, one, "", ""},
        {"y", 2, t_double, one, "", ""},
        {"z", 3, t_double, one, "", ""},
        {"w", 4, t_double, one, "", ""}}},
      {"BodyState",
       "A rigid body's state: momenta rather than velocities (world frame).",
       {{"position_m", 1, t_message, one, "Vec3", ""},
        {"orientation", 2, t_message, one, "Quaternion", ""},
        {"linear_momentum", 3, t_message, one, "Vec3", "kg m/s"},
        {"angular_momentum", 4, t_message, one, "Vec3", "kg m^2/s"}}},
      {"WorldState",
       "S_k: the mutable part of the world. Written bodies first, step and time last.",
       {{"step", 1, t_uint64, one, "", ""},
        {"time_ns", 2, t_int64, one, "", "simulation time"},
        {"bodies", 3, t_message, rep, "BodyState", ""}}},
      {"Wrench",
       "Forces and torques on one body, world and body axes.",
       {{"body", 1, t_uint32, one, "", "body index"},
        {"force_world_n", 2, t_message, one, "Vec3", ""},
        {"torque_world_nm", 3, t_message, one, "Vec3", ""},
        {"force_body_n", 4, t_message, one, "Vec3", ""},
        {"torque_body_nm", 5, t_message, one, "Vec3", ""}}},
      {"DeviceCommand",
       "An actuator command as the endpoint sent it.",
       {{"device", 1, t_uint32, one, "", "device index in scenario order"},
        {"payload", 2, t_bytes, one, "", "at most 16 bytes"}}},
      {"Measurement",
       "What an endpoint measured of the real world.",
       {{"body", 1, t_uint32, one, "", ""},
        {"measured_time_ns", 2, t_int64, one, "", ""},
        {"has_pose", 3, t_bool, one, "", ""},
        {"has_velocity", 4, t_bool, one, "", ""},
        {"position_m", 5, t_message, one, "Vec3", ""},
        {"orientation", 6, t_message, one, "Quaternion", ""},
        {"velocity_m_s", 7, t_message, one, "Vec3", "world frame"},
        {"angular_velocity_rad_s", 8, t_message, one, "Vec3", "world frame"},
        {"pose_covariance", 9, t_double, rep, "", "6x6 in Eigen's column-major order, or empty"}}},
      {"Reply",
       "An endpoint's answer for one step.",
       {{"step", 1, t_uint64, one, "", ""},
        {"wrenches", 2, t_message, rep, "Wrench", ""},
        {"commands", 3, t_message, rep, "DeviceCommand", ""},
        {"measurements", 4, t_message, rep, "Measurement", ""},
        {"wire", 5, t_message, rep, "WireFrame", "what crossed the link this step (ArduPilot: servo packet, reply)"}}},
      {"WireFrame",
       "Bytes an endpoint exchanged with the other side for one step, as they went.",
       {{"to_peer", 1, t_bool, one, "", "true: sent by Tether; false: received"}, {"bytes", 2, t_bytes, one, "", ""}}},
      {"Slot",
       "One endpoint's part of a step, in scenario order (metadata `tether`, key `endpoints`).",
       {{"outcome", 1, t_enum, one, "SlotOutcome", ""},
        {"round_trip_ns", 2, t_uint64, one, "", ""},
        {"reply", 3, t_message, one, "Reply", "only when fresh"}}},
      {"StepRecord",
       "/tether/step: everything from outside that step k consumed, and the hash of S_{k+1}.",
       {{"format_version", 1, t_uint32, one, "", "written last"},
        {"step", 2, t_uint64, one, "", ""},
        {"time_ns", 3, t_int64, one, "", "t_k"},
        {"state_hash", 4, t_fixed64, one, "", "FNV-1a 64 of S_{k+1}"},
        {"step_time_ns", 5, t_uint64, one, "", "wall time of phases 1-7"},
        {"slots", 6, t_message, rep, "Slot", ""}}},
      {"Keyframe",
       "/tether/keyframe: a snapshot replay can start from (taken after step state.step - 1).",
       {{"format_version", 1, t_uint32, one, "", ""},
        {"state", 2, t_message, one, "WorldState", "written last"},
        {"held_inputs", 3, t_message, rep, "Wrench", "inputs of step k-1, one per body"},
        {"last_replies", 4, t_message, rep, "Reply", "per endpoint: the reply `hold` reuses"},
        {"model_params", 5, t_bytes, one, "", "docs/recording.md, ModelParams"},
        {"processor_state", 6, t_bytes, rep, "", "per feedback processor, its own snapshot"},
        {"devices", 7, t_bytes, one, "", "the device bank's snapshot"},
        {"faults", 8, t_bytes, one, "", "active faults' snapshot; empty without"}}},
      {"OperatorCommand",
       "A command from an operator that changes the world, applied in phase 4 of its step.",
       {{"kind", 1, t_enum, one, "CommandKind", ""},
        {"name", 2, t_string, one, "", "force, parameter or processor, or the fault or endpoint command as JSON"},
        {"body", 3, t_uint32, one, "", ""},
        {"body_frame", 4, t_bool, one, "", ""},
        {"force_n", 5, t_message, one, "Vec3", ""},
        {"torque_nm", 6, t_message, one, "Vec3", ""},
        {"point_m", 7, t_message, one, "Vec3", ""},
        {"duration_s", 8, t_double, one, "", ""},
        {"value", 9, t_double, one, "", "a parameter's value; BACKGROUND_TAKE: 1 taken, 0 deferred"}}},
      {"StepCommands",
       "/tether/commands: the operator commands step k applied.",
       {{"format_version", 1, t_uint32, one, "", "written last"},
        {"step", 2, t_uint64, one, "", ""},
        {"commands", 3, t_message, rep, "OperatorCommand", ""}}},
      {"SafeReplies",
       "/tether/safe_replies: per endpoint, the reply its `safe` timeout policy applies.",
       {{"format_version", 1, t_uint32, one, "", "written last"}, {"replies", 2, t_message, rep, "Reply", ""}}},
  };
  return m;
}

// protoc's json_name: lowerCamelCase, each '_' dropped and the letter after it capitalised
std::string json_name(const std::string& name) {
  std::string out;
  bool upper = false;
  for (const char c : name) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
    upper = false;
  }
  return out;
}

std::string build_descriptor_set() {
  std::string file;
  Writer f(file);
  f.bytes(1, "tether/recording.proto");
  f.bytes(2, "tether");
  for (const MessageDef& m : messages()) {
    const std::size_t at = f.begin(4);  // message_type
    f.bytes(1, m.name);
    for (const FieldDef& d : m.fields) {
      const std::size_t fa = f.begin(2);  // field
      f.bytes(1, d.name);
      f.u64(3, static_cast<std::uint64_t>(d.number));
      f.u64(4, d.repeated ? 3 : 1);  // LABEL_REPEATED : LABEL_OPTIONAL
      f.u64(5, static_cast<std::uint64_t>(d.type));
      if (d.type == t_message || d.type == t_enum) f.bytes(6, std::string(".tether.") + d.type_name);
      f.bytes(10, json_name(d.name));  // as protoc writes it: position_m -> positionM
      f.end(fa);
    }
    f.end(at);
  }
  for (const EnumDef& e : enums()) {
    const std::size_t at = f.begin(5);  // enum_type
    f.bytes(1, e.name);
    for (const auto& [name, number] : e.values) {
      const std::size_t va = f.begin(2);
      f.bytes(1, name);
      f.u64(2, static_cast<std::uint64_t>(number));
      f.end(va);
    }
    f.end(at);
  }
  f.bytes(12, "proto3");
  std::string set;
  Writer s(set);
  s.bytes(1, file);  // FileDescriptorSet.file
  return set;
}

const char* type_word(const FieldDef& d) {
  switch (d.type) {
    case t_double: return "double";
    case t_int64: return "int64";
    case t_uint64: return "uint64";
    case t_fixed64: return "fixed64";
    case t_bool: return "bool";
    case t_string: return "string";
    case t_bytes: return "bytes";
    case t_uint32: return "uint32";
    default: return d.type_name;
  }
}

}  // namespace

const std::string& descriptor_set() {
  static const std::string set = build_descriptor_set();
  return set;
}

std::string proto_text() {
  std::string t =
      "// tether/recording.proto: the protobuf messages of a Tether recording's replay channels.\n"
      "// Generated from runtime/recording/src/protobuf.cpp (a test keeps this file equal to it).\n"
      "// Tether writes every field, zeros included; doubles are fixed64, so bits round-trip.\n"
      "syntax = \"proto3\";\n\npackage tether;\n";
  for (const EnumDef& e : enums()) {
    t += std::string("\n// ") + e.comment + "\nenum " + e.name + " {\n";
    for (const auto& [name, number] : e.values) t += std::string("  ") + name + " = " + std::to_string(number) + ";\n";
    t += "}\n";
  }
  for (const MessageDef& m : messages()) {
    t += "\n";
    if (*m.comment) t += std::string("// ") + m.comment + "\n";
    t += std::string("message ") + m.name + " {\n";
    for (const FieldDef& d : m.fields) {
      t += std::string("  ") + (d.repeated ? "repeated " : "") + type_word(d) + " " + d.name + " = " +
           std::to_string(d.number) + ";";
      if (*d.comment) t += std::string("  // ") + d.comment;
      t += "\n";
    }
    t += "}\n";
  }
  return t;
}

}  // namespace tether::runtime::pb
