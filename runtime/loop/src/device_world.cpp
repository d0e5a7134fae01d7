// SPDX-License-Identifier: Apache-2.0
#include "tether/loop/device_world.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

// every switch over a shape kind lists each one, no `default:`: a kind added without its case
// does not build
#pragma GCC diagnostic error "-Wswitch"

namespace tether::runtime {

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

// nearest entry t >= 0 of a ray (shape frame, unit direction) into a convex shape; `normal`
// in the shape frame; inf when missed. A ray starting inside gives 0.
double sphere_entry(const Vec3& o, const Vec3& d, const Vec3& centre, double r, Vec3& normal) {
  const Vec3 oc = o - centre;
  const double c = oc.squaredNorm() - r * r;
  if (c <= 0) {
    normal = -d;
    return 0;
  }
  const double b = oc.dot(d);
  const double disc = b * b - c;
  if (b > 0 || disc < 0) return inf;
  const double t = -b - std::sqrt(disc);
  normal = (oc + t * d).normalized();
  return t;
}

double box_entry(const Vec3& o, const Vec3& d, const Vec3& h, Vec3& normal) {
  double t_near = -inf, t_far = inf;
  int axis = -1;
  double sign = 1;
  for (int i = 0; i < 3; ++i) {
    if (std::abs(d[i]) < 1e-15) {
      if (std::abs(o[i]) > h[i]) return inf;
      continue;
    }
    double t1 = (-h[i] - o[i]) / d[i], t2 = (h[i] - o[i]) / d[i];
    double s = -1;
    if (t1 > t2) {
      std::swap(t1, t2);
      s = 1;
    }
    if (t1 > t_near) {
      t_near = t1;
      axis = i;
      sign = s;
    }
    t_far = std::min(t_far, t2);
  }
  if (t_near > t_far || t_far < 0) return inf;
  if (t_near <= 0) {
    normal = -d;
    return 0;
  }
  normal = Vec3::Zero();
  if (axis >= 0) normal[axis] = sign;
  return t_near;
}

// the side of a cylinder of radius r about the x axis, |x| <= half
double side_entry(const Vec3& o, const Vec3& d, double r, double half, Vec3& normal) {
  const double a = d.y() * d.y() + d.z() * d.z();
  if (a < 1e-15) return inf;
  const double b = o.y() * d.y() + o.z() * d.z();
  const double c = o.y() * o.y() + o.z() * o.z() - r * r;
  const double disc = b * b - a * c;
  if (disc < 0) return inf;
  const double t = (-b - std::sqrt(disc)) / a;
  if (t < 0 || std::abs(o.x() + t * d.x()) > half) return inf;
  const Vec3 p = o + t * d;
  normal = Vec3(0, p.y(), p.z()).normalized();
  return t;
}

double cylinder_entry(const Vec3& o, const Vec3& d, double r, double half, Vec3& normal) {
  if (std::abs(o.x()) <= half && o.y() * o.y() + o.z() * o.z() <= r * r) {
    normal = -d;
    return 0;
  }
  double best = side_entry(o, d, r, half, normal);
  // the two end discs
  for (double s : {-1.0, 1.0}) {
    if (std::abs(d.x()) < 1e-15) break;
    const double t = (s * half - o.x()) / d.x();
    if (t < 0 || t >= best || s * o.x() < half) continue;  // only the disc facing the origin
    const Vec3 p = o + t * d;
    if (p.y() * p.y() + p.z() * p.z() <= r * r) {
      best = t;
      normal = Vec3(s, 0, 0);
    }
  }
  return best;
}

double capsule_entry(const Vec3& o, const Vec3& d, double r, double half, Vec3& normal) {
  const double x = std::clamp(o.x(), -half, half);
  if ((o - Vec3(x, 0, 0)).squaredNorm() <= r * r) {
    normal = -d;
    return 0;
  }
  double best = side_entry(o, d, r, half, normal);
  for (double s : {-1.0, 1.0}) {
    Vec3 n;
    const double t = sphere_entry(o, d, Vec3(s * half, 0, 0), r, n);
    if (t < best) {
      best = t;
      normal = n;
    }
  }
  return best;
}

// a placed shape: world ray in, world normal out
double shape_entry(const Shape& shape, const Vec3& position, const Quat& orientation, const Vec3& origin,
                   const Vec3& dir, Vec3& normal_world) {
  if (shape.kind == ShapeKind::plane) {
    // solid where n·p <= offset in the shape's frame
    const Vec3 n = orientation * shape.normal;
    const double offset = shape.offset_m + n.dot(position);
    const double height = n.dot(origin) - offset;
    normal_world = n;
    if (height <= 0) return 0;
    const double closing = -n.dot(dir);
    return closing > 0 ? height / closing : inf;
  }
  const Vec3 o = orientation.conjugate() * (origin - position);
  const Vec3 d = orientation.conjugate() * dir;
  Vec3 n = Vec3::UnitZ();
  double t = inf;
  switch (shape.kind) {
    case ShapeKind::sphere: t = sphere_entry(o, d, Vec3::Zero(), shape.radius_m, n); break;
    case ShapeKind::box: t = box_entry(o, d, shape.half_extents_m, n); break;
    case ShapeKind::cylinder: t = cylinder_entry(o, d, shape.radius_m, shape.half_length_m, n); break;
    case ShapeKind::capsule: t = capsule_entry(o, d, shape.radius_m, shape.half_length_m, n); break;
    // a plane is handled above; terrain is not seen by this stand-in
    case ShapeKind::plane:
    case ShapeKind::heightfield: break;
  }
  normal_world = orientation * n;
  return t;
}

}  // namespace

hal::RayHit basic_ray_cast(const WorldModel& model, const WorldState& state, const Vec3& origin, const Vec3& direction,
                           double max_range_m, int ignore_body) {
  hal::RayHit best;
  double best_t = max_range_m;
  Vec3 normal;
  for (std::size_t i = 0; i < model.statics.size(); ++i) {
    const StaticBody& s = model.statics[i];
    const double t = shape_entry(s.shape, s.position_m, s.orientation, origin, direction, normal);
    if (t <= best_t) {
      best = {true, t, normal, -1, static_cast<int>(i)};
      best_t = t;
    }
  }
  const std::size_t n = std::min(model.bodies.size(), state.bodies.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (static_cast<int>(i) == ignore_body) continue;
    const BodyState& b = state.bodies[i];
    const double t = shape_entry(model.bodies[i].shape, b.position_m, b.orientation, origin, direction, normal);
    if (t <= best_t) {
      best = {true, t, normal, static_cast<int>(i), -1};
      best_t = t;
    }
  }
  return best;
}

DeviceWorld::DeviceWorld(const WorldModel& model, RayCastFn ray_cast_fn)
    : model_(model), ray_cast_fn_(ray_cast_fn ? ray_cast_fn : &basic_ray_cast) {
  bodies.resize(model.bodies.size());
  contacts.reserve(64);
  joint_loads.reserve(model.joints.size());
  joint_motion.reserve(model.joints.size());
  gravity_m_s2 = model.gravity_m_s2;
  water.present = model.water.present;
  water.density_kg_m3 = model.water.density_kg_m3;
  water.surface_z_m = model.water.surface_z_m;
  water.current_m_s = model.water.current_m_s;
}

void DeviceWorld::update_kinematics(const WorldState& state) {
  state_ = &state;
  const std::size_t n = std::min(bodies.size(), state.bodies.size());
  for (std::size_t i = 0; i < n; ++i) {
    const int id = static_cast<int>(i);
    const BodyState& s = state.bodies[i];
    hal::BodyKinematics& k = bodies[i];
    k.position_m = s.position_m;
    k.orientation = s.orientation;
    k.linear_velocity_m_s = linear_velocity(model_, state, id);
    k.angular_velocity_rad_s = angular_velocity(model_, state, id);
    k.mass_kg = model_.bodies[i].mass_kg;
  }
}

void DeviceWorld::update(const WorldState& state, const WorldState* previous, double dt_s, const StepInputs* inputs) {
  update_kinematics(state);
  const std::size_t n = std::min(bodies.size(), state.bodies.size());
  const bool differences = previous && dt_s > 0 && previous->bodies.size() >= n;
  static const BodyWrench no_input{};
  for (std::size_t i = 0; i < n; ++i) {
    const int id = static_cast<int>(i);
    const BodyModel& m = model_.bodies[i];
    const BodyState& s = state.bodies[i];
    hal::BodyKinematics& k = bodies[i];
    if (differences) {
      k.linear_acceleration_m_s2 = (k.linear_velocity_m_s - linear_velocity(model_, *previous, id)) / dt_s;
      k.angular_acceleration_rad_s2 = (k.angular_velocity_rad_s - angular_velocity(model_, *previous, id)) / dt_s;
    } else {
      // Newton-Euler at this instant: a = F/m; I dw/dt = tau - w x (I w), world frame
      const BodyWrench& in = inputs && i < inputs->wrenches.size() ? inputs->wrenches[i] : no_input;
      Vec3 force, torque;
      body_forces(model_, m, s, in, force, torque);
      k.linear_acceleration_m_s2 = force * m.inv_mass;
      const Mat3 r = s.orientation.toRotationMatrix();
      const Mat3 inv_inertia = r * m.inv_inertia_body * r.transpose();
      k.angular_acceleration_rad_s2 = inv_inertia * (torque - k.angular_velocity_rad_s.cross(s.angular_momentum));
    }
  }
}

hal::RayHit DeviceWorld::ray_cast(const Vec3& origin, const Vec3& direction, double max_range_m,
                                  int ignore_body) const {
  if (!state_) return {};
  return ray_cast_fn_(model_, *state_, origin, direction, max_range_m, ignore_body);
}

void add_device_wrenches(const std::vector<hal::Wrench>& wrenches, StepInputs& inputs) {
  const std::size_t n = std::min(wrenches.size(), inputs.wrenches.size());
  for (std::size_t i = 0; i < n; ++i) {
    inputs.wrenches[i].force_body_n += wrenches[i].force_body_n;
    inputs.wrenches[i].torque_body_nm += wrenches[i].torque_body_nm;
  }
}

}  // namespace tether::runtime
