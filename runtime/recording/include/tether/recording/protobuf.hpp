// SPDX-License-Identifier: Apache-2.0
// Protocol Buffers wire format, written by hand (no protobuf library in the dependency
// list): a writer, a bounds-checked reader, and the descriptor of Tether's recording
// messages (`tether/recording.proto`, docs/recording.md). Doubles are fixed64 on the
// wire, so every bit pattern round-trips; Foxglove and every protobuf library decode the
// messages with the FileDescriptorSet that each channel's schema record carries.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
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
  void tag(std::uint32_t field, Wire wire);
  void u64(std::uint32_t field, std::uint64_t v);
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

/// A short message assembled on the stack and handed to Writer::bytes in one piece: the loop
/// encodes a step item every step, and one append per body beats one per field. The caller
/// keeps within N bytes (a body's state is 125, an actuator command at most 24).
template <std::size_t N>
class Chunk {
 public:
  void varint(std::uint64_t v) {
    while (v >= 0x80) {
      *p_++ = static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    *p_++ = static_cast<char>(v);
  }
  void u64(std::uint32_t field, std::uint64_t v) {
    varint(std::uint64_t{field} << 3);
    varint(v);
  }
  void fixed64(std::uint32_t field, std::uint64_t v) {
    varint((std::uint64_t{field} << 3) | 1);
    std::memcpy(p_, &v, 8);
    p_ += 8;
  }
  void f64(std::uint32_t field, double v) { fixed64(field, std::bit_cast<std::uint64_t>(v)); }
  void raw(std::uint32_t field, const void* data, std::size_t n) {
    varint((std::uint64_t{field} << 3) | 2);
    varint(n);
    std::memcpy(p_, data, n);
    p_ += n;
  }
  void vec3(std::uint32_t field, const Vec3& v) {
    varint((std::uint64_t{field} << 3) | 2);
    *p_++ = 27;
    f64(1, v.x());
    f64(2, v.y());
    f64(3, v.z());
  }
  void quat(std::uint32_t field, const Quat& q) {
    varint((std::uint64_t{field} << 3) | 2);
    *p_++ = 36;
    f64(1, q.x());
    f64(2, q.y());
    f64(3, q.z());
    f64(4, q.w());
  }
  std::string_view view() const { return {buf_, static_cast<std::size_t>(p_ - buf_)}; }

 private:
  char buf_[N];
  char* p_ = buf_;
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
  /// One field of a `repeated double`: packed (a run of 8-byte values, as we write it) or
  /// unpacked (one value; a parser must take both); add(x) for each value in order, and a
  /// false from add stops with false (a bound it keeps).
  template <class Add>
  bool repeated_f64(Wire wire, Add&& add) {
    double x = 0;
    if (wire == Wire::i64) return f64(x) && add(x);
    std::string_view bytes;
    if (wire != Wire::len || !len(bytes) || bytes.size() % 8 != 0) return false;
    for (std::size_t k = 0; k < bytes.size(); k += 8) {
      std::memcpy(&x, bytes.data() + k, 8);
      if (!add(x)) return false;
    }
    return true;
  }
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
