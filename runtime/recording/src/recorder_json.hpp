// SPDX-License-Identifier: Apache-2.0
// The JSON values the recorder builds its rare messages from (the scene, the log channel):
// Foxglove's time, vector, quaternion, pose and colour objects.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "tether/physics/math.hpp"

namespace tether::runtime::recorder_json {

using nlohmann::json;

inline json stamp(std::int64_t time_ns) {
  return json{{"sec", time_ns / 1'000'000'000}, {"nsec", time_ns % 1'000'000'000}};
}

inline json vec(const Vec3& v) { return json{{"x", v.x()}, {"y", v.y()}, {"z", v.z()}}; }

inline json quat(const Quat& q) { return json{{"x", q.x()}, {"y", q.y()}, {"z", q.z()}, {"w", q.w()}}; }

inline json pose(const Vec3& p, const Quat& q) { return json{{"position", vec(p)}, {"orientation", quat(q)}}; }

inline json color(double r, double g, double b, double a) { return json{{"r", r}, {"g", g}, {"b", b}, {"a", a}}; }

}  // namespace tether::runtime::recorder_json
