// SPDX-License-Identifier: Apache-2.0
#include "tether/physics/raycast.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "tether/physics/terrain.hpp"

namespace tether::runtime {

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

// smallest root t >= 0 of |o_yz + t d_yz|^2 = r^2 (the side of an infinite x-axis cylinder)
bool ray_side(const Vec3& o, const Vec3& d, double r, double& t_out) {
  const double a = d.y() * d.y() + d.z() * d.z();
  if (a < 1e-300) return false;
  const double b = o.y() * d.y() + o.z() * d.z();
  const double c = o.y() * o.y() + o.z() * o.z() - r * r;
  const double disc = b * b - a * c;
  if (disc < 0) return false;
  const double t = (-b - std::sqrt(disc)) / a;
  if (t < 0) return false;
  t_out = t;
  return true;
}

bool ray_sphere(const Vec3& o, const Vec3& d, const Vec3& c, double r, double& t_out, Vec3& n) {
  const Vec3 m = o - c;
  const double b = m.dot(d);
  const double cc = m.squaredNorm() - r * r;
  if (cc <= 0) {
    t_out = 0;
    n = -d;
    return true;
  }
  if (b > 0) return false;
  const double disc = b * b - cc;
  if (disc < 0) return false;
  t_out = -b - std::sqrt(disc);
  n = (m + t_out * d) / r;
  return true;
}

// Moller-Trumbore; the normal returned faces the ray
bool ray_triangle(const Vec3& o, const Vec3& d, const Vec3& a, const Vec3& b, const Vec3& c, double& t_out, Vec3& n) {
  const Vec3 e1 = b - a, e2 = c - a;
  const Vec3 p = d.cross(e2);
  const double det = e1.dot(p);
  if (std::abs(det) < 1e-300) return false;
  const double inv = 1.0 / det;
  const Vec3 s = o - a;
  const double u = s.dot(p) * inv;
  if (u < -1e-12 || u > 1 + 1e-12) return false;
  const Vec3 q = s.cross(e1);
  const double v = d.dot(q) * inv;
  if (v < -1e-12 || u + v > 1 + 1e-12) return false;
  const double t = e2.dot(q) * inv;
  if (t < 0) return false;
  t_out = t;
  n = e1.cross(e2).normalized();
  if (n.dot(d) > 0) n = -n;
  return true;
}

// slab test: the part [t0, t1] of the ray inside a box, false if none within [0, t_max]
bool ray_box_range(const Vec3& o, const Vec3& inv_d, const Aabb& box, double t_max, double& t0, double& t1) {
  t0 = 0;
  t1 = t_max;
  for (int k = 0; k < 3; ++k) {
    double a = (box.min[k] - o[k]) * inv_d[k];
    double b = (box.max[k] - o[k]) * inv_d[k];
    if (std::isnan(a) || std::isnan(b)) {  // ray parallel to and on the slab's boundary
      if (o[k] < box.min[k] || o[k] > box.max[k]) return false;
      continue;
    }
    if (a > b) std::swap(a, b);
    t0 = std::max(t0, a);
    t1 = std::min(t1, b);
    if (t0 > t1) return false;
  }
  return true;
}

Vec3 safe_inverse(const Vec3& d) {
  Vec3 inv;
  for (int k = 0; k < 3; ++k) inv[k] = d[k] != 0 ? 1.0 / d[k] : (std::signbit(d[k]) ? -inf : inf);
  return inv;
}

bool better(double t, int body, int static_index, const RayHit& best) {
  if (!best.hit || t < best.distance_m) return true;
  if (t > best.distance_m) return false;
  // ties: bodies before statics, lower index first (deterministic whatever the visit order)
  const int key = body >= 0 ? body : 1 << 30 | static_index;
  const int best_key = best.body >= 0 ? best.body : 1 << 30 | best.static_index;
  return key < best_key;
}

void offer_static(const WorldModel& model, int k, const Mat3& rot, const Vec3& o, const Vec3& d, double range,
                  RayHit& best) {
  const StaticBody& st = model.statics[static_cast<std::size_t>(k)];
  double t;
  Vec3 n;
  bool hit = false;
  if (st.shape.kind == ShapeKind::heightfield) {
    if (st.shape.heightfield < 0 || static_cast<std::size_t>(st.shape.heightfield) >= model.heightfields.size()) return;
    hit = raycast_heightfield(model.heightfields[static_cast<std::size_t>(st.shape.heightfield)], st.position_m, rot, o,
                              d, range, t, n);
  } else {
    hit = raycast_shape({&st.shape, st.position_m, rot}, o, d, range, t, n);
  }
  if (hit && better(t, -1, k, best)) best = {true, t, o + t * d, n, -1, k};
}

}  // namespace

bool raycast_shape(const ShapePose& pose, const Vec3& origin, const Vec3& d_world, double max_range, double& t_out,
                   Vec3& normal) {
  const Shape& s = *pose.shape;
  if (s.kind == ShapeKind::plane) {
    const Vec3 n = pose.rotation * s.normal;
    const double offset = n.dot(pose.position) + s.offset_m;
    const double height = n.dot(origin) - offset;
    if (height <= 0) {
      t_out = 0;
      normal = -d_world;
      return true;
    }
    const double dn = n.dot(d_world);
    if (dn >= 0) return false;
    const double t = -height / dn;
    if (t > max_range) return false;
    t_out = t;
    normal = n;
    return true;
  }
  if (s.kind == ShapeKind::sphere) {
    double t;
    Vec3 n;
    if (!ray_sphere(origin, d_world, pose.position, s.radius_m, t, n) || t > max_range) return false;
    t_out = t;
    normal = n;
    return true;
  }
  // the rest in the shape's frame
  const Mat3 rt = pose.rotation.transpose();
  const Vec3 o = rt * (origin - pose.position);
  const Vec3 d = rt * d_world;
  double best = inf;
  Vec3 bn(0, 0, 0);
  auto take = [&](double t, const Vec3& n) {
    if (t >= 0 && t < best) best = t, bn = n;
  };
  switch (s.kind) {
    case ShapeKind::box: {
      const Vec3& e = s.half_extents_m;
      if ((o.cwiseAbs() - e).maxCoeff() <= 0) {
        take(0, -d);
        break;
      }
      double t0 = -inf, t1 = inf;
      int axis = -1;
      for (int k = 0; k < 3; ++k) {
        if (d[k] == 0) {
          if (std::abs(o[k]) > e[k]) return false;
          continue;
        }
        double a = (-e[k] - o[k]) / d[k], b = (e[k] - o[k]) / d[k];
        if (a > b) std::swap(a, b);
        if (a > t0) t0 = a, axis = k;
        t1 = std::min(t1, b);
      }
      if (axis < 0 || t0 > t1 || t0 < 0) return false;
      Vec3 n = Vec3::Zero();
      n[axis] = d[axis] > 0 ? -1 : 1;
      take(t0, n);
      break;
    }
    case ShapeKind::capsule: {
      const double r = s.radius_m, hl = s.half_length_m;
      const double x = std::clamp(o.x(), -hl, hl);
      if ((o - Vec3(x, 0, 0)).squaredNorm() <= r * r) {
        take(0, -d);
        break;
      }
      double t;
      if (ray_side(o, d, r, t) && std::abs(o.x() + t * d.x()) <= hl) {
        const Vec3 p = o + t * d;
        take(t, Vec3(0, p.y(), p.z()) / r);
      }
      Vec3 n;
      for (double end : {-hl, hl})
        if (ray_sphere(o, d, Vec3(end, 0, 0), r, t, n)) take(t, n);
      break;
    }
    case ShapeKind::cylinder: {
      const double r = s.radius_m, hl = s.half_length_m;
      if (std::abs(o.x()) <= hl && o.y() * o.y() + o.z() * o.z() <= r * r) {
        take(0, -d);
        break;
      }
      double t;
      if (ray_side(o, d, r, t) && std::abs(o.x() + t * d.x()) <= hl) {
        const Vec3 p = o + t * d;
        take(t, Vec3(0, p.y(), p.z()) / r);
      }
      if (d.x() != 0) {
        for (double end : {-hl, hl}) {
          const double tc = (end - o.x()) / d.x();
          const Vec3 p = o + tc * d;
          if (tc >= 0 && p.y() * p.y() + p.z() * p.z() <= r * r) take(tc, Vec3(end > 0 ? 1 : -1, 0, 0));
        }
      }
      break;
    }
    case ShapeKind::sphere:
    case ShapeKind::plane:
    case ShapeKind::heightfield: return false;  // not cast against here
  }
  if (!(best <= max_range)) return false;
  t_out = best;
  normal = pose.rotation * bn;
  if (best == 0) normal = -d_world;
  return true;
}

bool raycast_heightfield(const HeightField& f, const Vec3& position, const Mat3& rotation, const Vec3& origin,
                         const Vec3& d_world, double max_range, double& t_out, Vec3& normal) {
  if (f.columns < 2 || f.rows < 2) return false;
  const Vec3 o = rotation.transpose() * (origin - position);
  const Vec3 d = rotation.transpose() * d_world;
  // starting under the surface counts as inside the ground
  double z0;
  if (heightfield_height(f, o.x(), o.y(), z0) && o.z() <= z0) {
    t_out = 0;
    normal = -d_world;
    return true;
  }
  const double c = f.cell_size_m;
  const Aabb box{Vec3(0, 0, f.min_height_m), Vec3((f.columns - 1) * c, (f.rows - 1) * c, f.max_height_m)};
  double t0, t1;
  if (!ray_box_range(o, safe_inverse(d), box, max_range, t0, t1)) return false;
  // walk the cells the ray's ground track crosses, nearest first
  const Vec3 p = o + t0 * d;
  int i = std::clamp(static_cast<int>(std::floor(p.x() / c)), 0, f.columns - 2);
  int j = std::clamp(static_cast<int>(std::floor(p.y() / c)), 0, f.rows - 2);
  const int step_i = d.x() > 0 ? 1 : -1, step_j = d.y() > 0 ? 1 : -1;
  const double dt_i = d.x() != 0 ? c / std::abs(d.x()) : inf;
  const double dt_j = d.y() != 0 ? c / std::abs(d.y()) : inf;
  double next_i = d.x() != 0 ? ((i + (step_i > 0 ? 1 : 0)) * c - o.x()) / d.x() : inf;
  double next_j = d.y() != 0 ? ((j + (step_j > 0 ? 1 : 0)) * c - o.y()) / d.y() : inf;
  for (int guard = 0; guard < 4 * (f.columns + f.rows) + 8; ++guard) {
    double best = inf;
    Vec3 bn;
    const double x0 = i * c, y0 = j * c;
    const Vec3 p00(x0, y0, f.height(i, j)), p10(x0 + c, y0, f.height(i + 1, j));
    const Vec3 p01(x0, y0 + c, f.height(i, j + 1)), p11(x0 + c, y0 + c, f.height(i + 1, j + 1));
    double t;
    Vec3 n;
    if (ray_triangle(o, d, p00, p10, p11, t, n) && t < best) best = t, bn = n;
    if (ray_triangle(o, d, p00, p11, p01, t, n) && t < best) best = t, bn = n;
    if (best <= max_range) {
      t_out = best;
      normal = rotation * bn;
      return true;
    }
    if (next_i < next_j) {
      if (next_i > t1) break;
      i += step_i;
      next_i += dt_i;
    } else {
      if (next_j > t1) break;
      j += step_j;
      next_j += dt_j;
    }
    if (i < 0 || j < 0 || i > f.columns - 2 || j > f.rows - 2) break;
  }
  return false;
}

RayHit raycast(const WorldModel& model, const WorldState& state, const Vec3& origin, const Vec3& direction,
               double max_range, int ignore_body) {
  RayHit best;
  const double len = direction.norm();
  if (!(len > 0) || !(max_range >= 0)) return best;
  const Vec3 d = direction / len;
  for (std::size_t i = 0; i < state.bodies.size() && i < model.bodies.size(); ++i) {
    if (static_cast<int>(i) == ignore_body) continue;
    const BodyModel& b = model.bodies[i];
    const BodyState& s = state.bodies[i];
    // bounding sphere first
    const double r = shape_bounding_radius(b.shape);
    const Vec3 m = origin - s.position_m;
    const double along = std::clamp(-m.dot(d), 0.0, max_range);
    if ((m + along * d).squaredNorm() > r * r) continue;
    double t;
    Vec3 n;
    if (raycast_shape({&b.shape, s.position_m, s.orientation.toRotationMatrix()}, origin, d, max_range, t, n) &&
        better(t, static_cast<int>(i), -1, best))
      best = {true, t, origin + t * d, n, static_cast<int>(i), -1};
  }
  for (std::size_t k = 0; k < model.statics.size(); ++k)
    offer_static(model, static_cast<int>(k), model.statics[k].orientation.toRotationMatrix(), origin, d,
                 best.hit ? best.distance_m : max_range, best);
  return best;
}

void RayScene::build(const WorldModel& model, const WorldState& state) {
  model_ = &model;
  state_ = &state;
  const std::size_t n = std::min(state.bodies.size(), model.bodies.size());
  items_.clear();
  item_boxes_.clear();
  centres_.clear();
  unbounded_.clear();
  rotations_.resize(n + model.statics.size());
  for (std::size_t i = 0; i < n; ++i) {
    rotations_[i] = state.bodies[i].orientation.toRotationMatrix();
    const Aabb box = shape_aabb({&model.bodies[i].shape, state.bodies[i].position_m, rotations_[i]});
    items_.push_back(static_cast<std::int32_t>(i));
    item_boxes_.push_back(box);
    centres_.push_back(0.5 * (box.min + box.max));
  }
  for (std::size_t k = 0; k < model.statics.size(); ++k) {
    const StaticBody& st = model.statics[k];
    rotations_[n + k] = st.orientation.toRotationMatrix();
    if (st.shape.kind == ShapeKind::plane || st.shape.kind == ShapeKind::heightfield) {
      unbounded_.push_back(static_cast<std::int32_t>(k));
      continue;
    }
    const Aabb box = shape_aabb({&st.shape, st.position_m, rotations_[n + k]});
    items_.push_back(static_cast<std::int32_t>(n + k));
    item_boxes_.push_back(box);
    centres_.push_back(0.5 * (box.min + box.max));
  }
  perm_.resize(items_.size());
  for (std::size_t k = 0; k < perm_.size(); ++k) perm_[k] = static_cast<std::int32_t>(k);
  nodes_.clear();
  if (!items_.empty()) build_node(0, static_cast<std::int32_t>(items_.size()));
}

std::int32_t RayScene::build_node(std::int32_t first, std::int32_t count) {
  const auto self = static_cast<std::int32_t>(nodes_.size());
  nodes_.push_back({});
  Aabb box{Vec3::Constant(inf), Vec3::Constant(-inf)};
  Aabb cb{Vec3::Constant(inf), Vec3::Constant(-inf)};
  for (std::int32_t k = first; k < first + count; ++k) {
    const auto idx = static_cast<std::size_t>(perm_[static_cast<std::size_t>(k)]);
    box.min = box.min.cwiseMin(item_boxes_[idx].min);
    box.max = box.max.cwiseMax(item_boxes_[idx].max);
    cb.min = cb.min.cwiseMin(centres_[idx]);
    cb.max = cb.max.cwiseMax(centres_[idx]);
  }
  nodes_[static_cast<std::size_t>(self)].box = box;
  if (count <= 4) {
    nodes_[static_cast<std::size_t>(self)].first = first;
    nodes_[static_cast<std::size_t>(self)].count = count;
    return self;
  }
  int axis = 0;
  (cb.max - cb.min).maxCoeff(&axis);
  // median split along the widest spread of centres (ties by item: deterministic)
  const std::int32_t half = count / 2;
  const auto begin = perm_.begin() + first;
  std::nth_element(begin, begin + half, begin + count, [&](std::int32_t p, std::int32_t q) {
    const double a = centres_[static_cast<std::size_t>(p)][axis], b = centres_[static_cast<std::size_t>(q)][axis];
    return a != b ? a < b : p < q;
  });
  const std::int32_t left = build_node(first, half);
  const std::int32_t right = build_node(first + half, count - half);
  nodes_[static_cast<std::size_t>(self)].left = left;
  nodes_[static_cast<std::size_t>(self)].right = right;
  return self;
}

RayHit RayScene::cast(const Vec3& origin, const Vec3& direction, double max_range, int ignore_body) const {
  RayHit best;
  const double len = direction.norm();
  if (!model_ || !(len > 0) || !(max_range >= 0)) return best;
  const Vec3 d = direction / len;
  const Vec3 inv_d = safe_inverse(d);
  const std::size_t n = std::min(state_->bodies.size(), model_->bodies.size());
  if (!nodes_.empty()) {
    std::array<std::int32_t, 128> stack;
    int top = 0;
    stack[static_cast<std::size_t>(top++)] = 0;
    while (top > 0) {
      const Node& node = nodes_[static_cast<std::size_t>(stack[static_cast<std::size_t>(--top)])];
      double t0, t1;
      if (!ray_box_range(origin, inv_d, node.box, best.hit ? best.distance_m : max_range, t0, t1)) continue;
      if (node.left < 0) {
        for (std::int32_t k = node.first; k < node.first + node.count; ++k) {
          const auto item =
              static_cast<std::size_t>(items_[static_cast<std::size_t>(perm_[static_cast<std::size_t>(k)])]);
          const double range = best.hit ? best.distance_m : max_range;
          double t;
          Vec3 nrm;
          if (item < n) {
            if (static_cast<int>(item) == ignore_body) continue;
            const ShapePose pose{&model_->bodies[item].shape, state_->bodies[item].position_m, rotations_[item]};
            if (raycast_shape(pose, origin, d, range, t, nrm) && better(t, static_cast<int>(item), -1, best))
              best = {true, t, origin + t * d, nrm, static_cast<int>(item), -1};
          } else {
            offer_static(*model_, static_cast<int>(item - n), rotations_[item], origin, d, range, best);
          }
        }
        continue;
      }
      // nearer child last on the stack, so it is visited first
      const Node& l = nodes_[static_cast<std::size_t>(node.left)];
      const Node& r = nodes_[static_cast<std::size_t>(node.right)];
      double la, lb, ra, rb;
      const double range = best.hit ? best.distance_m : max_range;
      const bool hit_l = ray_box_range(origin, inv_d, l.box, range, la, lb);
      const bool hit_r = ray_box_range(origin, inv_d, r.box, range, ra, rb);
      if (top + 2 > static_cast<int>(stack.size())) continue;  // cannot happen with median splits
      if (hit_l && hit_r) {
        if (la <= ra) {
          stack[static_cast<std::size_t>(top++)] = node.right;
          stack[static_cast<std::size_t>(top++)] = node.left;
        } else {
          stack[static_cast<std::size_t>(top++)] = node.left;
          stack[static_cast<std::size_t>(top++)] = node.right;
        }
      } else if (hit_l) {
        stack[static_cast<std::size_t>(top++)] = node.left;
      } else if (hit_r) {
        stack[static_cast<std::size_t>(top++)] = node.right;
      }
    }
  }
  for (std::int32_t k : unbounded_)
    offer_static(*model_, k, rotations_[n + static_cast<std::size_t>(k)], origin, d,
                 best.hit ? best.distance_m : max_range, best);
  return best;
}

}  // namespace tether::runtime
