// SPDX-License-Identifier: Apache-2.0
#include "tether/physics/world_state.hpp"

#include <bit>

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

// the 13 doubles of a body, in the order the hash takes them
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
