// SPDX-License-Identifier: Apache-2.0
// Questions about placed shapes that make no contact points: the signed distance of a point
// to a shape, the GJK distance between two shapes' cores, bounding boxes and sizes.
// collision.cpp builds contacts from these.
#include "tether/physics/collision.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>
#include <limits>

#include "shape_geometry.hpp"

namespace tether::runtime {

namespace {

using detail::sign_of;
using detail::tiny;
using detail::world_plane;
using detail::WorldPlane;

// ---- point queries in the shape frame ---------------------------------------------------

double point_box_local(const Vec3& he, const Vec3& p, Vec3& n, Vec3& q) {
  const Vec3 c = p.cwiseMax(-he).cwiseMin(he);
  const Vec3 d = p - c;
  const double d2 = d.squaredNorm();
  if (d2 > 0) {
    const double dist = std::sqrt(d2);
    n = d / dist;
    q = c;
    return dist;
  }
  // inside: the nearest face
  int k = 0;
  double best = he.x() - std::abs(p.x());
  for (int i = 1; i < 3; ++i) {
    const double g = he[i] - std::abs(p[i]);
    if (g < best) {
      best = g;
      k = i;
    }
  }
  n.setZero();
  n[k] = sign_of(p[k]);
  q = p;
  q[k] = sign_of(p[k]) * he[k];
  return -best;
}

double point_capsule_local(double r, double hl, const Vec3& p, Vec3& n, Vec3& q) {
  const Vec3 s(std::clamp(p.x(), -hl, hl), 0, 0);
  const Vec3 v = p - s;
  const double len = v.norm();
  n = len > tiny ? Vec3(v / len) : Vec3(0, 0, 1);
  q = s + r * n;
  return len - r;
}

double point_cylinder_local(double r, double hl, const Vec3& p, Vec3& n, Vec3& q) {
  const double rho = std::hypot(p.y(), p.z());
  const Vec3 e = rho > tiny ? Vec3(0, p.y() / rho, p.z() / rho) : Vec3(0, 0, 1);
  const double dx = std::abs(p.x()) - hl;
  const double dr = rho - r;
  if (dx <= 0 && dr <= 0) {
    if (dx > dr) {
      n = Vec3(sign_of(p.x()), 0, 0);
      q = p;
      q.x() = sign_of(p.x()) * hl;
      return dx;
    }
    n = e;
    q = Vec3(p.x(), 0, 0) + r * e;
    return dr;
  }
  const Vec3 c = Vec3(std::clamp(p.x(), -hl, hl), 0, 0) + std::min(rho, r) * e;
  const Vec3 d = p - c;
  const double dist = d.norm();
  n = dist > tiny ? Vec3(d / dist) : (dx > dr ? Vec3(sign_of(p.x()), 0, 0) : e);
  q = c;
  return dist;
}

// ---- GJK's support functions -----------------------------------------------------------

// the radius a shape's core is shrunk by for GJK
double core_margin(const Shape& s) {
  switch (s.kind) {
    case ShapeKind::sphere:
    case ShapeKind::capsule: return s.radius_m;
    case ShapeKind::cylinder: return 0.1 * std::min(s.radius_m, s.half_length_m);
    case ShapeKind::box:
    case ShapeKind::plane:
    case ShapeKind::heightfield: return 0;
  }
  return 0;
}

Vec3 core_support(const ShapePose& s, const Vec3& d, double margin) {
  const Vec3 dl = s.rotation.transpose() * d;
  const Shape& sh = *s.shape;
  Vec3 p = Vec3::Zero();  // every case sets it; GCC 12 cannot tell once this file is on its own
  switch (sh.kind) {
    case ShapeKind::box:
      p = Vec3(sign_of(dl.x()) * sh.half_extents_m.x(), sign_of(dl.y()) * sh.half_extents_m.y(),
               sign_of(dl.z()) * sh.half_extents_m.z());
      break;
    case ShapeKind::capsule: p = Vec3(sign_of(dl.x()) * sh.half_length_m, 0, 0); break;
    case ShapeKind::cylinder: {
      const double rho = std::hypot(dl.y(), dl.z());
      p = Vec3(sign_of(dl.x()) * (sh.half_length_m - margin), 0, 0);
      if (rho > tiny) p += Vec3(0, dl.y(), dl.z()) * ((sh.radius_m - margin) / rho);
      break;
    }
    case ShapeKind::sphere:
    case ShapeKind::plane:
    case ShapeKind::heightfield: p.setZero(); break;
  }
  return s.position + s.rotation * p;
}

// ---- GJK --------------------------------------------------------------------------------

struct Simplex {
  std::array<Vec3, 4> w, a, b;
  std::array<double, 4> lambda{};
  int n = 0;

  void keep(std::initializer_list<int> idx, std::initializer_list<double> lam) {
    std::array<Vec3, 4> w2, a2, b2;
    int k = 0;
    auto li = lam.begin();
    for (int i : idx) {
      w2[static_cast<std::size_t>(k)] = w[static_cast<std::size_t>(i)];
      a2[static_cast<std::size_t>(k)] = a[static_cast<std::size_t>(i)];
      b2[static_cast<std::size_t>(k)] = b[static_cast<std::size_t>(i)];
      lambda[static_cast<std::size_t>(k)] = *li++;
      ++k;
    }
    w = w2;
    a = a2;
    b = b2;
    n = k;
  }
};

// closest point of triangle (i, j, k) of the simplex to the origin, as indices and weights
struct TriResult {
  std::array<int, 3> idx{};
  std::array<double, 3> lam{};
  int n = 0;
  Vec3 v;
};

TriResult closest_on_triangle(const Simplex& s, int ia, int ib, int ic) {
  const Vec3& a = s.w[static_cast<std::size_t>(ia)];
  const Vec3& b = s.w[static_cast<std::size_t>(ib)];
  const Vec3& c = s.w[static_cast<std::size_t>(ic)];
  TriResult r;
  const Vec3 ab = b - a, ac = c - a, ap = -a;
  const double d1 = ab.dot(ap), d2 = ac.dot(ap);
  if (d1 <= 0 && d2 <= 0) {
    r.n = 1, r.idx = {ia, 0, 0}, r.lam = {1, 0, 0}, r.v = a;
    return r;
  }
  const Vec3 bp = -b;
  const double d3 = ab.dot(bp), d4 = ac.dot(bp);
  if (d3 >= 0 && d4 <= d3) {
    r.n = 1, r.idx = {ib, 0, 0}, r.lam = {1, 0, 0}, r.v = b;
    return r;
  }
  const double vc = d1 * d4 - d3 * d2;
  if (vc <= 0 && d1 >= 0 && d3 <= 0) {
    const double t = d1 / (d1 - d3);
    r.n = 2, r.idx = {ia, ib, 0}, r.lam = {1 - t, t, 0}, r.v = a + t * ab;
    return r;
  }
  const Vec3 cp = -c;
  const double d5 = ab.dot(cp), d6 = ac.dot(cp);
  if (d6 >= 0 && d5 <= d6) {
    r.n = 1, r.idx = {ic, 0, 0}, r.lam = {1, 0, 0}, r.v = c;
    return r;
  }
  const double vb = d5 * d2 - d1 * d6;
  if (vb <= 0 && d2 >= 0 && d6 <= 0) {
    const double t = d2 / (d2 - d6);
    r.n = 2, r.idx = {ia, ic, 0}, r.lam = {1 - t, t, 0}, r.v = a + t * ac;
    return r;
  }
  const double va = d3 * d6 - d5 * d4;
  if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0) {
    const double t = (d4 - d3) / ((d4 - d3) + (d5 - d6));
    r.n = 2, r.idx = {ib, ic, 0}, r.lam = {1 - t, t, 0}, r.v = b + t * (c - b);
    return r;
  }
  const double denom = va + vb + vc;
  if (std::abs(denom) < tiny) {  // degenerate triangle: fall back to its best edge
    r.n = 1, r.idx = {ia, 0, 0}, r.lam = {1, 0, 0}, r.v = a;
    return r;
  }
  const double v = vb / denom, w = vc / denom;
  r.n = 3, r.idx = {ia, ib, ic}, r.lam = {1 - v - w, v, w}, r.v = a + ab * v + ac * w;
  return r;
}

void apply(Simplex& s, const TriResult& r) {
  if (r.n == 1)
    s.keep({r.idx[0]}, {r.lam[0]});
  else if (r.n == 2)
    s.keep({r.idx[0], r.idx[1]}, {r.lam[0], r.lam[1]});
  else
    s.keep({r.idx[0], r.idx[1], r.idx[2]}, {r.lam[0], r.lam[1], r.lam[2]});
}

// reduces the simplex to the feature closest to the origin; returns false if it holds the origin
bool reduce(Simplex& s, Vec3& v) {
  switch (s.n) {
    case 1:
      s.lambda[0] = 1;
      v = s.w[0];
      return true;
    case 2: {
      const Vec3 ab = s.w[1] - s.w[0];
      const double den = ab.squaredNorm();
      const double t = den > tiny ? std::clamp(-s.w[0].dot(ab) / den, 0.0, 1.0) : 0.0;
      if (t <= 0)
        s.keep({0}, {1.0});
      else if (t >= 1)
        s.keep({1}, {1.0});
      else
        s.keep({0, 1}, {1 - t, t});
      v = s.n == 1 ? s.w[0] : Vec3(s.w[0] * s.lambda[0] + s.w[1] * s.lambda[1]);
      return true;
    }
    case 3: {
      const TriResult r = closest_on_triangle(s, 0, 1, 2);
      v = r.v;
      apply(s, r);
      return true;
    }
    case 4: {
      // faces and the vertex opposite each
      static constexpr int faces[4][4] = {{0, 1, 2, 3}, {0, 2, 3, 1}, {0, 3, 1, 2}, {1, 3, 2, 0}};
      bool any_outside = false;
      double best = std::numeric_limits<double>::infinity();
      TriResult best_r;
      for (const auto& f : faces) {
        const Vec3& a = s.w[static_cast<std::size_t>(f[0])];
        const Vec3 nrm = (s.w[static_cast<std::size_t>(f[1])] - a).cross(s.w[static_cast<std::size_t>(f[2])] - a);
        const double side_origin = nrm.dot(-a);
        const double side_other = nrm.dot(s.w[static_cast<std::size_t>(f[3])] - a);
        const bool outside = side_origin * side_other < 0 || std::abs(side_other) < 1e-18;
        if (!outside) continue;
        any_outside = true;
        const TriResult r = closest_on_triangle(s, f[0], f[1], f[2]);
        const double d = r.v.squaredNorm();
        if (d < best) {
          best = d;
          best_r = r;
        }
      }
      if (!any_outside) return false;
      v = best_r.v;
      apply(s, best_r);
      return true;
    }
    default: return true;
  }
}

ConvexDistance gjk(const ShapePose& a, const ShapePose& b, double ma, double mb) {
  ConvexDistance out;
  Simplex s;
  Vec3 v = a.position - b.position;
  if (v.squaredNorm() < tiny) v = Vec3(1, 0, 0);
  for (int iter = 0; iter < 64; ++iter) {
    const Vec3 pa = core_support(a, -v, ma);
    const Vec3 pb = core_support(b, v, mb);
    const Vec3 w = pa - pb;
    const double vv = v.squaredNorm();
    if (s.n > 0 && vv - v.dot(w) <= 1e-12 * std::max(vv, 1e-12)) break;  // no progress: v is closest
    bool duplicate = false;
    for (int i = 0; i < s.n; ++i)
      if ((s.w[static_cast<std::size_t>(i)] - w).squaredNorm() < 1e-24) duplicate = true;
    if (duplicate) break;
    s.w[static_cast<std::size_t>(s.n)] = w;
    s.a[static_cast<std::size_t>(s.n)] = pa;
    s.b[static_cast<std::size_t>(s.n)] = pb;
    ++s.n;
    if (!reduce(s, v)) {
      out.overlapping = true;
      return out;
    }
    if (v.squaredNorm() < 1e-20) {
      out.overlapping = true;
      return out;
    }
  }
  out.point_a.setZero();
  out.point_b.setZero();
  for (int i = 0; i < s.n; ++i) {
    out.point_a += s.lambda[static_cast<std::size_t>(i)] * s.a[static_cast<std::size_t>(i)];
    out.point_b += s.lambda[static_cast<std::size_t>(i)] * s.b[static_cast<std::size_t>(i)];
  }
  out.distance_m = (out.point_a - out.point_b).norm();
  if (out.distance_m < 1e-10) out.overlapping = true;
  return out;
}

}  // namespace

// ---- public -----------------------------------------------------------------------------

double point_distance(const ShapePose& s, const Vec3& point, Vec3& normal, Vec3& surface) {
  const Shape& sh = *s.shape;
  if (sh.kind == ShapeKind::plane) {
    const WorldPlane pl = world_plane(s);
    const double d = pl.n.dot(point) - pl.offset;
    normal = pl.n;
    surface = point - d * pl.n;
    return d;
  }
  if (sh.kind == ShapeKind::sphere) {
    const Vec3 v = point - s.position;
    const double len = v.norm();
    normal = len > tiny ? Vec3(v / len) : Vec3(0, 0, 1);
    surface = s.position + sh.radius_m * normal;
    return len - sh.radius_m;
  }
  const Vec3 p = s.rotation.transpose() * (point - s.position);
  Vec3 nl(0, 0, 1), ql = p;  // every case sets both; initialised for the compiler
  double d = 0;
  switch (sh.kind) {
    case ShapeKind::box: d = point_box_local(sh.half_extents_m, p, nl, ql); break;
    case ShapeKind::capsule: d = point_capsule_local(sh.radius_m, sh.half_length_m, p, nl, ql); break;
    case ShapeKind::cylinder: d = point_cylinder_local(sh.radius_m, sh.half_length_m, p, nl, ql); break;
    case ShapeKind::sphere:
    case ShapeKind::plane:
    case ShapeKind::heightfield:
      nl = Vec3(0, 0, 1);
      ql = p;
      d = std::numeric_limits<double>::infinity();
      break;
  }
  normal = s.rotation * nl;
  surface = s.position + s.rotation * ql;
  return d;
}

ConvexDistance convex_core_distance(const ShapePose& a, const ShapePose& b, double& margin_a, double& margin_b) {
  margin_a = core_margin(*a.shape);
  margin_b = core_margin(*b.shape);
  return gjk(a, b, margin_a, margin_b);
}

Aabb shape_aabb(const ShapePose& pose) {
  const Shape& s = *pose.shape;
  Vec3 ext = Vec3::Zero();
  switch (s.kind) {
    case ShapeKind::sphere: ext.setConstant(s.radius_m); break;
    case ShapeKind::box: ext = pose.rotation.cwiseAbs() * s.half_extents_m; break;
    case ShapeKind::capsule:
      ext = pose.rotation.col(0).cwiseAbs() * s.half_length_m + Vec3::Constant(s.radius_m);
      break;
    case ShapeKind::cylinder: {
      const Vec3 u = pose.rotation.col(0);
      for (int k = 0; k < 3; ++k)
        ext[k] = std::abs(u[k]) * s.half_length_m + s.radius_m * std::sqrt(std::max(0.0, 1 - u[k] * u[k]));
      break;
    }
    case ShapeKind::plane:
    case ShapeKind::heightfield: return Aabb::infinite();
  }
  return {pose.position - ext, pose.position + ext};
}

double shape_bounding_radius(const Shape& s) {
  switch (s.kind) {
    case ShapeKind::sphere: return s.radius_m;
    case ShapeKind::box: return s.half_extents_m.norm();
    case ShapeKind::capsule: return s.half_length_m + s.radius_m;
    case ShapeKind::cylinder: return std::hypot(s.half_length_m, s.radius_m);
    case ShapeKind::plane:
    case ShapeKind::heightfield: return 0;
  }
  return 0;
}

double shape_size(const Shape& s) {
  switch (s.kind) {
    case ShapeKind::sphere:
    case ShapeKind::capsule: return s.radius_m;
    case ShapeKind::box: return s.half_extents_m.minCoeff();
    case ShapeKind::cylinder: return std::min(s.radius_m, s.half_length_m);
    case ShapeKind::plane:
    case ShapeKind::heightfield: return std::numeric_limits<double>::infinity();
  }
  return 0;
}

}  // namespace tether::runtime
