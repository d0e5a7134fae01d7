// SPDX-License-Identifier: Apache-2.0
// What actuators produce: a force and a torque on one body, in its body frame, about its
// centre of mass. runtime adds these into its BodyWrench (force_body_n, torque_body_nm).
#pragma once

#include "tether/hal/world_view.hpp"

namespace tether::hal {

struct Wrench {
  Vec3 force_body_n{0, 0, 0};
  Vec3 torque_body_nm{0, 0, 0};  // about the centre of mass

  /// Adds a body-frame force applied at a body-frame point (relative to the centre of mass).
  void add_force_at(const Vec3& force_body, const Vec3& point_body) {
    force_body_n += force_body;
    torque_body_nm += point_body.cross(force_body);
  }
  /// Sets both parts to zero.
  void clear() {
    force_body_n.setZero();
    torque_body_nm.setZero();
  }
};

}  // namespace tether::hal
