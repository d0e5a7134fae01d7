// SPDX-License-Identifier: Apache-2.0
#include "tether/physics/world_state.hpp"

#include <bit>
#include <cstring>

#include "tether/physics/world_model.hpp"

namespace tether::runtime {

Vec3 linear_velocity(const WorldModel& model, const WorldState& state, int body) {
  return state.bodies[static_cast<std::size_t>(body)].linear_momentum *
         model.bodies[static_cast<std::size_t>(body)].inv_mass;
}

Vec3 angular_velocity(const WorldModel& model, const WorldState& state, int body) {
  const BodyState& b = state.bodies[static_cast<std::size_t>(body)];
  const Mat3 r = b.orientation.toRotationMatrix();
  return r * model.bodies[static_cast<std::size_t>(body)].inv_inertia_body * r.transpose() * b.angular_momentum;
}

void set_velocity(const WorldModel& model, WorldState& state, int body, const Vec3& v, const Vec3& w) {
  BodyState& b = state.bodies[static_cast<std::size_t>(body)];
  const BodyModel& m = model.bodies[static_cast<std::size_t>(body)];
  const Mat3 r = b.orientation.toRotationMatrix();
  b.linear_momentum = m.mass_kg * v;
  b.angular_momentum = r * m.inertia_body * r.transpose() * w;
}

namespace {

static_assert(std::endian::native == std::endian::little, "serialization assumes a little-endian host");

template <typename T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

template <typename T>
T get(const char*& p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  p += sizeof(T);
  return value;
}

// the 13 doubles of a body, in a fixed order shared by serialize and hash
template <typename F>
void for_each_double(const BodyState& b, F&& f) {
  for (int i = 0; i < 3; ++i) f(b.position_m[i]);
  f(b.orientation.w());
  f(b.orientation.x());
  f(b.orientation.y());
  f(b.orientation.z());
  for (int i = 0; i < 3; ++i) f(b.linear_momentum[i]);
  for (int i = 0; i < 3; ++i) f(b.angular_momentum[i]);
}

}  // namespace

void serialize_state(const WorldState& state, std::string& out) {
  put<std::uint64_t>(out, state.step);
  put<std::int64_t>(out, state.time_ns);
  put<std::uint32_t>(out, static_cast<std::uint32_t>(state.bodies.size()));
  for (const BodyState& b : state.bodies) for_each_double(b, [&](double v) { put(out, v); });
}

bool deserialize_state(std::string_view bytes, WorldState& state, std::string* error) {
  constexpr std::size_t head = 8 + 8 + 4;
  if (bytes.size() < head) {
    if (error) *error = "state record shorter than its 20-byte header";
    return false;
  }
  const char* p = bytes.data();
  const auto step = get<std::uint64_t>(p);
  const auto time_ns = get<std::int64_t>(p);
  const auto n = get<std::uint32_t>(p);
  const std::size_t want = head + std::size_t{n} * state_doubles_per_body * sizeof(double);
  if (bytes.size() != want) {
    if (error)
      *error = "state record of " + std::to_string(bytes.size()) + " bytes, expected " + std::to_string(want) +
               " for " + std::to_string(n) + " bodies";
    return false;
  }
  state.step = step;
  state.time_ns = time_ns;
  state.bodies.resize(n);
  for (BodyState& b : state.bodies) {
    for (int i = 0; i < 3; ++i) b.position_m[i] = get<double>(p);
    const double w = get<double>(p), x = get<double>(p), y = get<double>(p), z = get<double>(p);
    b.orientation = Quat(w, x, y, z);
    for (int i = 0; i < 3; ++i) b.linear_momentum[i] = get<double>(p);
    for (int i = 0; i < 3; ++i) b.angular_momentum[i] = get<double>(p);
  }
  return true;
}

std::uint64_t hash_state(const WorldState& state) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&h](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xffu;
      h *= 0x100000001b3ULL;
    }
  };
  mix(state.step);
  mix(static_cast<std::uint64_t>(state.time_ns));
  for (const BodyState& b : state.bodies) for_each_double(b, [&](double v) { mix(std::bit_cast<std::uint64_t>(v)); });
  return h;
}

}  // namespace tether::runtime
