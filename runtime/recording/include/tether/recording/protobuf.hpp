// SPDX-License-Identifier: Apache-2.0
// Protocol Buffers wire format, written by hand (no protobuf library in the dependency
// list): a writer, a bounds-checked reader, and the descriptor of Tether's recording
// messages (`tether/recording.proto`, docs/recording.md). Doubles are fixed64 on the
// wire, so every bit pattern round-trips; Foxglove and every protobuf library decode the
// messages with the FileDescriptorSet that each channel's schema record carries.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tether/physics/math.hpp"

namespace tether::runtime::pb {

enum class Wire : std::uint8_t { varint = 0, i64 = 1, len = 2, i32 = 5 };

/// Appends fields to a string. Every field is written, zeros included (explicit values make
/// a record's size depend only on its shape, and the reader can require fields).
class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}
  void varint(std::uint64_t v);
  void tag(std::uint32_t field, Wire wire) { varint((std::uint64_t{field} << 3) | static_cast<std::uint8_t>(wire)); }
  void u64(std::uint32_t field, std::uint64_t v) {
    tag(field, Wire::varint);
    varint(v);
  }
  void i64(std::uint32_t field, std::int64_t v) { u64(field, static_cast<std::uint64_t>(v)); }
  void boolean(std::uint32_t field, bool v) { u64(field, v ? 1 : 0); }
  void fixed64(std::uint32_t field, std::uint64_t v);
  void f64(std::uint32_t field, double v);
  void bytes(std::uint32_t field, std::string_view v);
  /// tether.Vec3 {double x = 1; y = 2; z = 3;}
  void vec3(std::uint32_t field, const Vec3& v);
  /// tether.Quaternion {double x = 1; y = 2; z = 3; w = 4;}
  void quat(std::uint32_t field, const Quat& q);
  /// A packed repeated double.
  void packed_f64(std::uint32_t field, const double* v, std::size_t n);
  /// A nested message: begin() writes the tag and reserves the length, end() fills it in.
  std::size_t begin(std::uint32_t field);
  void end(std::size_t at);

 private:
  std::string& out_;
};

/// Reads fields one by one; never reads past the end. After a false from next() at the end
/// of the bytes, failed() tells an error from a clean end.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  /// The next field's number and wire type; false at the end or on a malformed tag.
  bool next(std::uint32_t& field, Wire& wire);
  bool varint(std::uint64_t& v);
  bool fixed64(std::uint64_t& v);
  bool f64(double& v);
  bool len(std::string_view& v);
  /// Skips the value of a field this reader does not know (newer writers may add fields).
  bool skip(Wire wire);
  bool failed() const { return failed_; }
  std::size_t offset() const { return pos_; }

 private:
  bool fail() {
    failed_ = true;
    return false;
  }
  std::string_view in_;
  std::size_t pos_ = 0;
  bool failed_ = false;
};

/// Reads a tether.Vec3 / tether.Quaternion message body.
bool read_vec3(std::string_view bytes, Vec3& v);
bool read_quat(std::string_view bytes, Quat& q);

/// The FileDescriptorSet (binary) of `tether/recording.proto`: every message a recording's
/// protobuf channels carry. Built once.
const std::string& descriptor_set();
/// The same file as .proto text (docs/recording.proto is this text; a test keeps them equal).
std::string proto_text();

}  // namespace tether::runtime::pb
