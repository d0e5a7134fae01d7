// SPDX-License-Identifier: Apache-2.0
// MAVLink messages as JSON objects keyed by the XML's field names, through each struct's
// fields() list: for the round-trip tests and the node-mavlink cross-check.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "tether/mavlink/mavlink_messages.hpp"

namespace tether::adapters::mavlink::test {

/// Calls f(M{}) for each message type Tether knows.
template <class F>
void for_each_message(F&& f) {
  f(Heartbeat{});
  f(SysStatus{});
  f(SetMode{});
  f(ParamValue{});
  f(ParamSet{});
  f(Attitude{});
  f(GlobalPositionInt{});
  f(ManualControl{});
  f(VfrHud{});
  f(CommandLong{});
  f(CommandAck{});
  f(SetAttitudeTarget{});
  f(SetPositionTargetLocalNed{});
  f(SetPositionTargetGlobalInt{});
  f(StatusText{});
}

template <class T>
nlohmann::json value_json(const T& v) {
  if constexpr (std::is_same_v<T, float>) return static_cast<double>(v);  // the float's exact value
  else return static_cast<std::int64_t>(v);
}

/// {"field": value, ...}: numbers, arrays of numbers, char arrays as strings (up to a NUL).
template <class M>
nlohmann::json to_json(const M& m) {
  nlohmann::json j = nlohmann::json::object();
  std::apply(
      [&](auto... f) {
        auto one = [&](auto g) {
          using T = detail::field_value_t<decltype(g)>;
          const T& v = m.*(g.member);
          if constexpr (std::is_same_v<T, std::array<char, WireType<T>::count>>) {
            j[g.name] = std::string(text(v));
          } else if constexpr (is_array<T>) {
            nlohmann::json a = nlohmann::json::array();
            for (const auto& e : v) a.push_back(value_json(e));
            j[g.name] = a;
          } else {
            j[g.name] = value_json(v);
          }
        };
        (one(f), ...);
      },
      M::fields());
  return j;
}

/// The fields of j that M has, into m (missing ones stay as they are).
template <class M>
void from_json(const nlohmann::json& j, M& m) {
  std::apply(
      [&](auto... f) {
        auto one = [&](auto g) {
          if (!j.contains(g.name)) return;
          using T = detail::field_value_t<decltype(g)>;
          T& v = m.*(g.member);
          const nlohmann::json& x = j.at(g.name);
          if constexpr (std::is_same_v<T, std::array<char, WireType<T>::count>>) {
            set_text(v, x.get<std::string>());
          } else if constexpr (is_array<T>) {
            for (std::size_t i = 0; i < v.size() && i < x.size(); ++i) v[i] = x[i].get<typename ElementOf<T>::type>();
          } else {
            v = x.get<T>();
          }
        };
        (one(f), ...);
      },
      M::fields());
}

/// An M whose every field differs from zero and from the others (field k, element i: small
/// numbers that fit every type, negative where signed; text "F<k>").
template <class M>
M sample(int salt = 0) {
  M m{};
  int k = 0;
  std::apply(
      [&](auto... f) {
        auto one = [&](auto g) {
          using T = detail::field_value_t<decltype(g)>;
          using E = typename ElementOf<T>::type;
          ++k;
          auto value = [&](int i) -> E {
            const int n = 1 + (k * 7 + i * 3 + salt) % 100;
            if constexpr (std::is_same_v<E, float>) return (k % 2 ? -0.25F : 0.25F) * static_cast<float>(n) - 0.125F;
            else if constexpr (std::is_signed_v<E> && !std::is_same_v<E, char>) return static_cast<E>(-n);
            else if constexpr (std::is_same_v<E, char>) return static_cast<char>('A' + n % 26);
            else return static_cast<E>(n);
          };
          T& v = m.*(g.member);
          if constexpr (std::is_same_v<T, std::array<char, WireType<T>::count>>) {
            set_text(v, "F" + std::to_string(k + salt));
          } else if constexpr (is_array<T>) {
            for (std::size_t i = 0; i < v.size(); ++i) v[i] = value(static_cast<int>(i));
          } else {
            v = value(0);
          }
        };
        (one(f), ...);
      },
      M::fields());
  return m;
}

}  // namespace tether::adapters::mavlink::test
