// SPDX-License-Identifier: Apache-2.0
// The built-in feedback processors (docs/feedback.md): factories for the registry in
// feedback.cpp and the small pose helpers they share. Private to the runtime library.
#pragma once

#include <cstring>
#include <memory>
#include <numbers>
#include <string>
#include <string_view>

#include "tether/feedback/feedback.hpp"

namespace tether::runtime::feedback_detail {

std::unique_ptr<FeedbackProcessor> make_direct();
std::unique_ptr<FeedbackProcessor> make_blend();
std::unique_ptr<FeedbackProcessor> make_vector_adjust();
std::unique_ptr<FeedbackProcessor> make_kalman();
std::unique_ptr<FeedbackProcessor> make_estimate();

using Vec6 = Eigen::Matrix<double, 6, 1>;

/// The ranges of the processors' noise keys (standard deviations): > 0, and small enough that
/// squares and sums of squares stay finite (at 1e300 the noise matrix became infinite and the
/// update NaN): 1e6 in the key's own unit, an angle's at most pi, an angular rate's 100 rad/s.
inline constexpr Range kStddevRange{0, 1e6, true};
inline constexpr Range kAngleStddevRange{0, std::numbers::pi, true};
inline constexpr Range kRateStddevRange{0, 100, true};

/// Rotation vector (axis * angle, world frame) that turns `from` into `to`: to = exp(r) from.
inline Vec3 rotation_between(const Quat& from, const Quat& to) {
  Quat d = to * from.conjugate();
  if (d.w() < 0) d.coeffs() = -d.coeffs();  // the short way round
  const Eigen::AngleAxisd aa(d);
  return aa.axis() * aa.angle();
}

/// exp(r) * q for a world-frame rotation vector r.
inline Quat rotate_by(const Vec3& r, const Quat& q) {
  const double angle = r.norm();
  if (angle < 1e-15) return q;
  return (Quat(Eigen::AngleAxisd(angle, r / angle)) * q).normalized();
}

/// Pose error (position, then rotation vector) from `state` to the measured pose.
inline Vec6 pose_error(const BodyState& state, const Measurement& m) {
  Vec6 e;
  e.head<3>() = m.position_m - state.position_m;
  e.tail<3>() = rotation_between(state.orientation, m.orientation);
  return e;
}

/// Appends the raw bytes of trivially copyable values (processor snapshots).
template <typename T>
void put_bytes(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}
/// Reads what put_bytes wrote; false when `in` is too short.
template <typename T>
bool get_bytes(std::string_view& in, T& value) {
  if (in.size() < sizeof(T)) return false;
  std::memcpy(static_cast<void*>(&value), in.data(), sizeof(T));
  in.remove_prefix(sizeof(T));
  return true;
}

/// The measurement of `body` among this step's, or nullptr.
inline const Measurement* measurement_of(const FeedbackContext& ctx, int body) {
  for (const Measurement& m : ctx.measurements)
    if (static_cast<int>(m.body) == body && m.has_pose) return &m;
  return nullptr;
}

}  // namespace tether::runtime::feedback_detail

namespace tether::runtime::feedback_detail {
/// The body of the processor's `part` key (default: the vehicle's first body); records a
/// config error on an unknown part.
int part_body(const ConfigNode& node, const WorldModel& model, int vehicle);
}  // namespace tether::runtime::feedback_detail
