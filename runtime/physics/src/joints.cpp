// SPDX-License-Identifier: Apache-2.0
#include "tether/physics/joints.hpp"

#include <cmath>

#include "joint_rows.hpp"

namespace tether::runtime {

namespace {

// a body's pose in `state`, or the world's for -1
detail::Pose pose_of(const WorldState& state, int body) {
  const bool known = body >= 0 && static_cast<std::size_t>(body) < state.bodies.size();
  return detail::pose_of(known ? &state.bodies[static_cast<std::size_t>(body)] : nullptr);
}

}  // namespace

JointModel make_joint(const JointSpec& spec, const WorldState& state) {
  JointModel j;
  j.name = spec.name;
  j.kind = spec.kind;
  j.body_a = spec.body_a;
  j.body_b = spec.kind == JointKind::lock ? -1 : spec.body_b;
  j.limited = spec.limited;
  j.lower = spec.lower;
  j.upper = spec.upper;
  j.locked = spec.locked;
  j.motor_speed = spec.motor_speed;
  j.motor_max = spec.motor_max;
  j.brake = spec.brake;
  j.spring_n_m = spec.spring_n_m;
  j.damper_n_s_m = spec.damper_n_s_m;
  j.spring_rest_m = spec.spring_rest_m;
  const detail::Pose a = pose_of(state, j.body_a), b = pose_of(state, j.body_b);
  const Vec3 axis = spec.axis_world.normalized();
  const Vec3 ref = detail::unit_perpendicular(axis);
  j.anchor_a = a.r.transpose() * (spec.anchor_world_m - a.x);
  j.anchor_b = b.r.transpose() * (spec.anchor_world_m - b.x);
  j.axis_a = a.r.transpose() * axis;
  j.axis_b = b.r.transpose() * axis;
  j.ref_a = a.r.transpose() * ref;
  j.ref_b = b.r.transpose() * ref;
  j.relative = a.q.conjugate() * b.q;
  if (j.kind == JointKind::lock) {
    // held pose: where the body is now; with two turnings locked, the free world axis
    j.anchor_b = a.x;
    j.relative = a.q.conjugate();
    j.axis_b = Vec3::Zero();
    for (int i = 0; i < 3; ++i)
      if (!(j.locked & (8u << i))) j.axis_b = Vec3::Unit(i);
    j.axis_a = a.r.transpose() * j.axis_b;
  }
  return j;
}

double joint_position(const JointModel& joint, const WorldState& state) {
  if (joint.kind != JointKind::hinge && joint.kind != JointKind::slider) return 0;
  const detail::Pose a = pose_of(state, joint.body_a), b = pose_of(state, joint.body_b);
  const Vec3 axa = a.r * joint.axis_a;
  if (joint.kind == JointKind::hinge) {
    const Vec3 fa = a.r * joint.ref_a, fb = b.r * joint.ref_b;
    return std::atan2(fa.cross(fb).dot(axa), fa.dot(fb));
  }
  return axa.dot((b.x + b.r * joint.anchor_b) - (a.x + a.r * joint.anchor_a));
}

double joint_rate(const JointModel& joint, const WorldModel& model, const WorldState& state) {
  if (joint.kind != JointKind::hinge && joint.kind != JointKind::slider) return 0;
  const detail::Pose a = pose_of(state, joint.body_a), b = pose_of(state, joint.body_b);
  const Vec3 axa = a.r * joint.axis_a;
  auto velocity = [&](int body, const Vec3& at, Vec3& v, Vec3& w) {  // the world's: at rest
    v = w = Vec3::Zero();
    if (body < 0 || static_cast<std::size_t>(body) >= state.bodies.size()) return;
    w = angular_velocity(model, state, body);
    v = linear_velocity(model, state, body) + w.cross(at - state.bodies[static_cast<std::size_t>(body)].position_m);
  };
  Vec3 va, wa, vb, wb;
  if (joint.kind == JointKind::hinge) {
    velocity(joint.body_a, a.x, va, wa);
    velocity(joint.body_b, b.x, vb, wb);
    return (wb - wa).dot(axa);
  }
  // slider: b's anchor point moving along a's axis, as a sees it
  const Vec3 pb = b.x + b.r * joint.anchor_b;
  velocity(joint.body_a, pb, va, wa);
  velocity(joint.body_b, pb, vb, wb);
  const Vec3 pa = a.x + a.r * joint.anchor_a;
  return axa.dot(vb - va) + wa.cross(axa).dot(pb - pa);
}

JointError joint_error(const JointModel& joint, const WorldState& state) {
  const detail::Pose a = pose_of(state, joint.body_a), b = pose_of(state, joint.body_b);
  detail::JointRows rows;
  detail::joint_rows(joint, a, b, rows);
  JointError e;
  double lin2 = 0, ang2 = 0;
  for (int i = 0; i < rows.dims; ++i) {
    const double c2 = rows.c[i] * rows.c[i];
    if (rows.linear(i))
      lin2 += c2;
    else
      ang2 += c2;
  }
  // a limit passed counts as error of its kind
  if (rows.limit && rows.c_l < 0) {
    if (rows.lin_l.squaredNorm() > 0)
      lin2 += rows.c_l * rows.c_l;
    else
      ang2 += rows.c_l * rows.c_l;
  }
  e.linear_m = std::sqrt(lin2);
  e.angular_rad = std::sqrt(ang2);
  return e;
}

}  // namespace tether::runtime
