// SPDX-License-Identifier: Apache-2.0
// Headings as people read them: the world's yaw turns counter-clockwise from east (+x), a
// compass clockwise from north (+y). Goals, expectations, the summary, the recording's
// vehicles view and the report all give headings this way.
#pragma once

#include <cmath>
#include <numbers>

#include "tether/physics/math.hpp"

namespace tether::runtime {

/// `deg` wrapped into [0, 360).
inline double wrap_360_deg(double deg) { return std::fmod(std::fmod(deg, 360.0) + 360.0, 360.0); }

/// The compass heading for a yaw in degrees (counter-clockwise from east): clockwise from
/// north, in [0, 360).
inline double compass_from_yaw_deg(double yaw_deg) { return wrap_360_deg(90.0 - yaw_deg); }

/// The compass heading of a body (degrees clockwise from north = world +y, in [0, 360)).
inline double compass_heading_deg(const Quat& orientation) {
  return compass_from_yaw_deg(rpy_from_quat(orientation).z() * 180.0 / std::numbers::pi);
}

}  // namespace tether::runtime
