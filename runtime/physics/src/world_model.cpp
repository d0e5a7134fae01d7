// SPDX-License-Identifier: Apache-2.0
#include "tether/physics/world_model.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace tether::runtime {

double shape_volume(const Shape& s) {
  const double pi = std::numbers::pi;
  switch (s.kind) {
    case ShapeKind::sphere: return 4.0 / 3.0 * pi * s.radius_m * s.radius_m * s.radius_m;
    case ShapeKind::box: return 8.0 * s.half_extents_m.prod();
    case ShapeKind::cylinder: return pi * s.radius_m * s.radius_m * 2.0 * s.half_length_m;
    case ShapeKind::capsule: return pi * s.radius_m * s.radius_m * (2.0 * s.half_length_m + 4.0 / 3.0 * s.radius_m);
    case ShapeKind::plane:
    case ShapeKind::heightfield: return 0;
  }
  return 0;
}

Mat3 shape_inertia(const Shape& s, double m) {
  Mat3 inertia = Mat3::Zero();
  const double r2 = s.radius_m * s.radius_m;
  switch (s.kind) {
    case ShapeKind::sphere: inertia.diagonal().setConstant(0.4 * m * r2); break;
    case ShapeKind::box: {
      const Vec3 h2 = s.half_extents_m.cwiseProduct(s.half_extents_m);
      inertia.diagonal() << m / 3.0 * (h2.y() + h2.z()), m / 3.0 * (h2.x() + h2.z()), m / 3.0 * (h2.x() + h2.y());
      break;
    }
    case ShapeKind::cylinder: {
      const double len = 2.0 * s.half_length_m;
      inertia.diagonal() << 0.5 * m * r2, m / 12.0 * (3.0 * r2 + len * len), m / 12.0 * (3.0 * r2 + len * len);
      break;
    }
    case ShapeKind::capsule: {
      // cylinder part plus two hemispheres, mass split by volume; hemisphere
      // centroids sit 3r/8 beyond the cylinder ends (parallel-axis theorem)
      const double pi = std::numbers::pi;
      const double len = 2.0 * s.half_length_m;
      const double v_cyl = pi * r2 * len;
      const double v_caps = 4.0 / 3.0 * pi * r2 * s.radius_m;
      const double m_cyl = m * v_cyl / (v_cyl + v_caps);
      const double m_caps = m - m_cyl;
      const double axial = 0.5 * m_cyl * r2 + 0.4 * m_caps * r2;
      const double d = s.half_length_m + 3.0 / 8.0 * s.radius_m;
      const double caps_own = 83.0 / 320.0 * m_caps * r2;  // two hemispheres about their centroids
      const double transverse = m_cyl / 12.0 * (3.0 * r2 + len * len) + caps_own + m_caps * d * d;
      inertia.diagonal() << axial, transverse, transverse;
      break;
    }
    case ShapeKind::plane:
    case ShapeKind::heightfield: inertia.setIdentity(); break;
  }
  return inertia;
}

double shape_vertical_half_extent(const Shape& s, const Quat& q) {
  const Mat3 r = q.toRotationMatrix();
  // row 2 of R holds each body axis's world-z component
  const Vec3 zc = r.row(2).transpose().cwiseAbs();
  switch (s.kind) {
    case ShapeKind::sphere: return s.radius_m;
    case ShapeKind::box: return zc.dot(s.half_extents_m);
    case ShapeKind::cylinder:
      return zc.x() * s.half_length_m + s.radius_m * std::sqrt(std::max(0.0, 1.0 - zc.x() * zc.x()));
    case ShapeKind::capsule: return zc.x() * s.half_length_m + s.radius_m;
    case ShapeKind::plane:
    case ShapeKind::heightfield: return 0;
  }
  return 0;
}

double submerged_fraction(const Shape& s, const Quat& q, double centre_z, double surface_z) {
  const double h = shape_vertical_half_extent(s, q);
  if (h <= 0) return centre_z < surface_z ? 1.0 : 0.0;
  const double depth_of_bottom = surface_z - (centre_z - h);  // wetted height
  if (depth_of_bottom <= 0) return 0;
  if (depth_of_bottom >= 2 * h) return 1;
  if (s.kind == ShapeKind::sphere) {
    // spherical cap of height d: V = pi d^2 (3r - d) / 3, over 4/3 pi r^3
    const double d = depth_of_bottom;
    const double r = s.radius_m;
    return d * d * (3 * r - d) / (4 * r * r * r);
  }
  // other shapes: the wetted height fraction (exact for an upright box)
  return depth_of_bottom / (2 * h);
}

int WorldModel::find_body(const std::string& name) const {
  for (std::size_t i = 0; i < bodies.size(); ++i)
    if (bodies[i].name == name) return static_cast<int>(i);
  return -1;
}

int WorldModel::find_vehicle(const std::string& name) const {
  for (std::size_t i = 0; i < vehicles.size(); ++i)
    if (vehicles[i].name == name) return static_cast<int>(i);
  return -1;
}

int WorldModel::find_joint(const std::string& name) const {
  for (std::size_t i = 0; i < joints.size(); ++i)
    if (joints[i].name == name) return static_cast<int>(i);
  return -1;
}

void finish_body_model(BodyModel& body, const Mat3* inertia_override, const double* volume_override) {
  body.inv_mass = 1.0 / body.mass_kg;
  body.inertia_body = inertia_override ? *inertia_override : shape_inertia(body.shape, body.mass_kg);
  body.inv_inertia_body = body.inertia_body.inverse();
  body.volume_m3 = volume_override ? *volume_override : shape_volume(body.shape);
}

}  // namespace tether::runtime
