// SPDX-License-Identifier: Apache-2.0
// Small builders shared by the hal tests.
#pragma once

#include <cmath>
#include <numbers>
#include <string>

#include "tether/hal/device_spec.hpp"
#include "tether/hal/world_view.hpp"

namespace tether::hal::test {

inline constexpr double pi = std::numbers::pi;
inline constexpr double deg = pi / 180.0;

/// z-y-x roll, pitch, yaw in radians (the runtime's quat_from_rpy).
inline Quat rpy(double roll, double pitch, double yaw) {
  return Quat(Eigen::AngleAxisd(yaw, Vec3::UnitZ()) * Eigen::AngleAxisd(pitch, Vec3::UnitY()) *
              Eigen::AngleAxisd(roll, Vec3::UnitX()));
}

/// A spec of `kind` named auv.hull.<device> on body 0 with the kind's default params.
inline DeviceSpec make_spec(DeviceKind kind, const std::string& device, int body = 0) {
  DeviceSpec s;
  s.name = {"auv", "hull", device};
  s.kind = kind;
  s.body = body;
  s.params = default_params(kind);
  return s;
}

/// A world with `bodies` bodies at rest at the origin, level, 10 kg each.
inline SimpleWorld make_world(int bodies = 1) {
  SimpleWorld w;
  w.bodies.resize(static_cast<std::size_t>(bodies));
  for (auto& b : w.bodies) b.mass_kg = 10;
  return w;
}

}  // namespace tether::hal::test
