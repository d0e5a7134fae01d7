// SPDX-License-Identifier: Apache-2.0
#include "tether/hal/world_view.hpp"

#include <cmath>

namespace tether::hal {

RayHit SimpleWorld::ray_cast(const Vec3& origin, const Vec3& dir, double max_range, int ignore_body) const {
  RayHit best;
  double best_t = max_range;
  auto offer = [&](double t, const Vec3& normal, int body, int static_index) {
    if (t >= 0 && t <= best_t && (!best.hit || t < best.distance_m)) {
      best = RayHit{true, t, normal, body, static_index};
      best_t = t;
    }
  };
  for (std::size_t i = 0; i < planes.size(); ++i) {
    const Plane& p = planes[i];
    const double height = p.normal.dot(origin) - p.offset_m;  // > 0: outside the solid
    const double closing = -p.normal.dot(dir);                // > 0: moving toward it
    if (height <= 0)
      offer(0.0, p.normal, -1, static_cast<int>(i));  // starts inside the solid
    else if (closing > 0)
      offer(height / closing, p.normal, -1, static_cast<int>(i));
  }
  for (std::size_t i = 0; i < spheres.size(); ++i) {
    const Sphere& s = spheres[i];
    if (s.body >= 0 && s.body == ignore_body) continue;
    Vec3 centre = s.centre_m;
    if (s.body >= 0) {
      if (static_cast<std::size_t>(s.body) >= bodies.size()) continue;
      centre = bodies[static_cast<std::size_t>(s.body)].position_m;
    }
    // |o + t d - c|^2 = r^2 with |d| = 1
    const Vec3 oc = origin - centre;
    const double b = oc.dot(dir);
    const double c = oc.squaredNorm() - s.radius_m * s.radius_m;
    const double disc = b * b - c;
    if (disc < 0) continue;
    const double root = std::sqrt(disc);
    double t = -b - root;
    if (t < 0) t = c <= 0 ? 0.0 : -b + root;  // inside: the surface is at 0 for a sensor
    if (t < 0) continue;
    const Vec3 point = origin + t * dir;
    const Vec3 n = (point - centre).normalized();
    offer(t, n, s.body, s.body >= 0 ? -1 : static_cast<int>(planes.size() + i));
  }
  return best;
}

void SimpleWorld::add_tank(double half_x_m, double half_y_m, double floor_z_m) {
  planes.push_back({Vec3(0, 0, 1), floor_z_m});
  planes.push_back({Vec3(1, 0, 0), -half_x_m});
  planes.push_back({Vec3(-1, 0, 0), -half_x_m});
  planes.push_back({Vec3(0, 1, 0), -half_y_m});
  planes.push_back({Vec3(0, -1, 0), -half_y_m});
}

}  // namespace tether::hal
