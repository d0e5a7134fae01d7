// SPDX-License-Identifier: Apache-2.0
// A MAVLink message as a plain struct with a list of its fields (docs/mavlink.md): from the
// list, at compile time, its payload lengths, its CRC_EXTRA as MAVLink's generator computes it,
// whether the list is in wire order; and the payload encoder and decoder. The messages
// themselves are in mavlink_messages.hpp.
//
// A message struct M has `static constexpr std::uint32_t msgid`, `std::uint8_t crc_extra`,
// `const char* name` (the XML's) and `static constexpr auto fields()`: a std::tuple of
// field(&M::member, "xml_name") and then extension(&M::member, "xml_name"), in wire order.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "tether/mavlink/mavlink.hpp"

namespace tether::adapters::mavlink {

// ---- fields -----------------------------------------------------------------------------

/// One field of message S: the member, its name in the XML, and whether it is an extension.
template <class S, class T>
struct Field {
  T S::*member;
  const char* name;
  bool extension;
};
template <class S, class T>
constexpr Field<S, T> field(T S::*member, const char* name) {
  return {member, name, false};
}
template <class S, class T>
constexpr Field<S, T> extension(T S::*member, const char* name) {
  return {member, name, true};
}

/// The wire types: the XML's name for each (the CRC_EXTRA hashes it) and the element count.
template <class T>
struct WireType;
template <>
struct WireType<std::uint8_t> {
  static constexpr const char* name = "uint8_t";
  static constexpr std::size_t count = 1;
};
template <>
struct WireType<std::int8_t> {
  static constexpr const char* name = "int8_t";
  static constexpr std::size_t count = 1;
};
template <>
struct WireType<char> {
  static constexpr const char* name = "char";
  static constexpr std::size_t count = 1;
};
template <>
struct WireType<std::uint16_t> {
  static constexpr const char* name = "uint16_t";
  static constexpr std::size_t count = 1;
};
template <>
struct WireType<std::int16_t> {
  static constexpr const char* name = "int16_t";
  static constexpr std::size_t count = 1;
};
template <>
struct WireType<std::uint32_t> {
  static constexpr const char* name = "uint32_t";
  static constexpr std::size_t count = 1;
};
template <>
struct WireType<std::int32_t> {
  static constexpr const char* name = "int32_t";
  static constexpr std::size_t count = 1;
};
template <>
struct WireType<float> {
  static constexpr const char* name = "float";
  static constexpr std::size_t count = 1;
};
template <class E, std::size_t N>
struct WireType<std::array<E, N>> {
  static constexpr const char* name = WireType<E>::name;
  static constexpr std::size_t count = N;
  static_assert(N >= 1 && N <= 255);
};

template <class T>
struct ElementOf {
  using type = T;
};
template <class E, std::size_t N>
struct ElementOf<std::array<E, N>> {
  using type = E;
};
template <class T>
inline constexpr std::size_t element_size = sizeof(typename ElementOf<T>::type);
template <class T>
inline constexpr std::size_t wire_size = element_size<T> * WireType<T>::count;
template <class T>
inline constexpr bool is_array = !std::is_same_v<typename ElementOf<T>::type, T>;

namespace detail {
template <class F>
struct FieldValue;
template <class S, class T>
struct FieldValue<Field<S, T>> {
  using type = T;
};
template <class F>
using field_value_t = typename FieldValue<std::remove_cvref_t<F>>::type;

constexpr std::uint16_t crc_string(const char* s, std::uint16_t crc) {
  for (; *s != 0; ++s) crc = crc_accumulate(static_cast<std::uint8_t>(*s), crc);
  return crc_accumulate(' ', crc);
}
}  // namespace detail

template <class M>
constexpr std::size_t min_length() {
  return std::apply([](auto... f) { return ((f.extension ? 0 : wire_size<detail::field_value_t<decltype(f)>>) + ... + 0); },
                    M::fields());
}
template <class M>
constexpr std::size_t max_length() {
  return std::apply([](auto... f) { return (wire_size<detail::field_value_t<decltype(f)>> + ... + 0); }, M::fields());
}

/// CRC_EXTRA as MAVLink's generator computes it: a CRC of "NAME " and, for each base field in
/// wire order, "type name " (and the array length byte), folded to 8 bits.
template <class M>
constexpr std::uint8_t compute_crc_extra() {
  std::uint16_t crc = detail::crc_string(M::name, 0xFFFF);
  std::apply(
      [&](auto... f) {
        auto one = [&](auto g) {
          using T = detail::field_value_t<decltype(g)>;
          if (g.extension) return;
          crc = detail::crc_string(WireType<T>::name, crc);
          crc = detail::crc_string(g.name, crc);
          if constexpr (is_array<T>) crc = crc_accumulate(static_cast<std::uint8_t>(WireType<T>::count), crc);
        };
        (one(f), ...);
      },
      M::fields());
  return static_cast<std::uint8_t>((crc & 0xFF) ^ (crc >> 8));
}

/// Whether M's fields are in MAVLink's wire order: base fields by non-increasing element size,
/// then extensions (which keep XML order), and no base field after an extension.
template <class M>
constexpr bool in_wire_order() {
  bool ok = true;
  std::size_t last_size = 8;
  bool seen_extension = false;
  std::apply(
      [&](auto... f) {
        auto one = [&](auto g) {
          using T = detail::field_value_t<decltype(g)>;
          if (g.extension) {
            seen_extension = true;
            return;
          }
          if (seen_extension || element_size<T> > last_size) ok = false;
          last_size = element_size<T>;
        };
        (one(f), ...);
      },
      M::fields());
  return ok;
}

/// What the framing needs of M (for a Decoder's table).
template <class M>
constexpr MessageInfo info() {
  return {M::msgid, M::crc_extra, static_cast<std::uint8_t>(min_length<M>()), static_cast<std::uint8_t>(max_length<M>()),
          M::name};
}

// ---- payload encoding ---------------------------------------------------------------------

namespace detail {
template <class E>
constexpr auto to_bits(E v) {
  if constexpr (std::is_same_v<E, float>) return std::bit_cast<std::uint32_t>(v);
  else return static_cast<std::make_unsigned_t<E>>(v);
}
template <class E>
void put(std::uint8_t* p, E v) {
  auto bits = to_bits(v);
  for (std::size_t i = 0; i < sizeof(E); ++i) p[i] = static_cast<std::uint8_t>(bits >> (8 * i));
}
template <class E>
E get(const std::uint8_t* p) {
  using U = decltype(to_bits(E{}));
  U bits = 0;
  for (std::size_t i = 0; i < sizeof(E); ++i) bits = static_cast<U>(bits | static_cast<U>(static_cast<U>(p[i]) << (8 * i)));
  if constexpr (std::is_same_v<E, float>) return std::bit_cast<float>(bits);
  else return static_cast<E>(bits);
}
}  // namespace detail

/// Writes m's fields in wire order into the first max_length<M>() bytes of out.
template <class M>
void encode_payload(const M& m, std::span<std::uint8_t, max_payload_size> out) {
  std::size_t offset = 0;
  std::apply(
      [&](auto... f) {
        auto one = [&](auto g) {
          using T = detail::field_value_t<decltype(g)>;
          const T& v = m.*(g.member);
          if constexpr (is_array<T>) {
            for (std::size_t i = 0; i < v.size(); ++i) detail::put(out.data() + offset + i * element_size<T>, v[i]);
          } else {
            detail::put(out.data() + offset, v);
          }
          offset += wire_size<T>;
        };
        (one(f), ...);
      },
      M::fields());
}

/// Reads an M from a payload zero-extended to 255 bytes (a Frame's).
template <class M>
M decode_payload(std::span<const std::uint8_t, max_payload_size> in) {
  M m{};
  std::size_t offset = 0;
  std::apply(
      [&](auto... f) {
        auto one = [&](auto g) {
          using T = detail::field_value_t<decltype(g)>;
          T& v = m.*(g.member);
          if constexpr (is_array<T>) {
            using E = typename ElementOf<T>::type;
            for (std::size_t i = 0; i < v.size(); ++i) v[i] = detail::get<E>(in.data() + offset + i * element_size<T>);
          } else {
            v = detail::get<T>(in.data() + offset);
          }
          offset += wire_size<T>;
        };
        (one(f), ...);
      },
      M::fields());
  return m;
}

/// Writes m as a whole frame (header.msgid is set to M's) into out; returns its size.
template <class M>
[[nodiscard]] std::size_t encode(const M& m, Header header, std::span<std::uint8_t, max_frame_size> out) {
  std::array<std::uint8_t, max_payload_size> payload{};
  encode_payload(m, payload);
  header.msgid = M::msgid;
  return encode_frame(header, M::crc_extra, std::span<const std::uint8_t>(payload.data(), max_length<M>()), out);
}

/// The frame as an M, or nothing when it holds another message.
template <class M>
std::optional<M> decode(const Frame& frame) {
  if (frame.header.msgid != M::msgid) return std::nullopt;
  return decode_payload<M>(frame.payload);
}

/// A char[N] field's text: up to the first NUL, or all N characters.
template <std::size_t N>
std::string_view text(const std::array<char, N>& chars) {
  std::size_t n = 0;
  while (n < N && chars[n] != 0) ++n;
  return {chars.data(), n};
}
/// Sets a char[N] field to s, NUL-padded; false (and cut to N) when s is longer than N.
template <std::size_t N>
bool set_text(std::array<char, N>& chars, std::string_view s) {
  chars.fill(0);
  const std::size_t n = s.size() < N ? s.size() : N;
  for (std::size_t i = 0; i < n; ++i) chars[i] = s[i];
  return s.size() <= N;
}

}  // namespace tether::adapters::mavlink
