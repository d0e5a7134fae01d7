// SPDX-License-Identifier: Apache-2.0
// Contact points between two placed shapes: a pair function per combination of kinds and
// collide(), which picks one. Distances and bounds are in shape_queries.cpp.
#include "tether/physics/collision.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "shape_geometry.hpp"

namespace tether::runtime {

namespace {

using detail::sign_of;
using detail::tiny;
using detail::world_plane;
using detail::WorldPlane;

// any unit vector perpendicular to unit n
Vec3 any_perpendicular(const Vec3& n) {
  const Vec3 t = std::abs(n.x()) < 0.57 ? Vec3(1, 0, 0) : Vec3(0, 1, 0);
  return n.cross(t).normalized();
}

// ---- contact sets -----------------------------------------------------------------------

// a small fixed buffer that merges near-duplicate points and keeps the best four
struct ContactSet {
  std::array<ContactPoint, 16> p;
  int n = 0;
  double merge_m = 1e-4;

  void add(const Vec3& point, const Vec3& normal, double sep) {
    for (int i = 0; i < n; ++i) {
      if ((p[i].point - point).squaredNorm() < merge_m * merge_m) {
        if (sep < p[i].separation_m) p[i] = {point, normal, sep};
        return;
      }
    }
    if (n < static_cast<int>(p.size())) {
      p[static_cast<std::size_t>(n++)] = {point, normal, sep};
    } else {
      // full: replace the shallowest if the new one is deeper
      int worst = 0;
      for (int i = 1; i < n; ++i)
        if (p[i].separation_m > p[worst].separation_m) worst = i;
      if (sep < p[worst].separation_m) p[static_cast<std::size_t>(worst)] = {point, normal, sep};
    }
  }

  // deepest, farthest from it, then the two that span the largest area on either side
  int emit(ContactPoint* out, int max_out) {
    if (n <= max_out) {
      for (int i = 0; i < n; ++i) out[i] = p[static_cast<std::size_t>(i)];
      return n;
    }
    std::array<bool, 16> used{};
    int k = 0;
    auto take = [&](int i) {
      used[static_cast<std::size_t>(i)] = true;
      out[k++] = p[static_cast<std::size_t>(i)];
    };
    int i0 = 0;
    for (int i = 1; i < n; ++i)
      if (p[i].separation_m < p[i0].separation_m) i0 = i;
    take(i0);
    int i1 = -1;
    double best = -1;
    for (int i = 0; i < n; ++i) {
      if (used[static_cast<std::size_t>(i)]) continue;
      const double d = (p[i].point - p[i0].point).squaredNorm();
      if (d > best) {
        best = d;
        i1 = i;
      }
    }
    take(i1);
    const Vec3 nrm = p[i0].normal;
    const Vec3 a = p[i0].point;
    const Vec3 ab = p[i1].point - a;
    int i2 = -1, i3 = -1;
    double pos = -std::numeric_limits<double>::infinity();
    for (int i = 0; i < n; ++i) {
      if (used[static_cast<std::size_t>(i)]) continue;
      const double area = ab.cross(p[i].point - a).dot(nrm);
      if (area > pos) pos = area, i2 = i;
    }
    double neg = std::numeric_limits<double>::infinity();
    for (int i = 0; i < n; ++i) {
      if (used[static_cast<std::size_t>(i)] || i == i2) continue;
      const double area = ab.cross(p[i].point - a).dot(nrm);
      if (area < neg) neg = area, i3 = i;
    }
    if (i2 >= 0 && k < max_out) take(i2);
    if (i3 >= 0 && i3 != i2 && k < max_out) take(i3);
    for (int i = 0; i < n && k < max_out; ++i)
      if (!used[static_cast<std::size_t>(i)]) take(i);
    return k;
  }
};

// ---- overlapping cores: the axis of least overlap ---------------------------------------

// support point of the whole shape in world direction d
Vec3 full_support(const ShapePose& s, const Vec3& d) {
  const Vec3 dl = s.rotation.transpose() * d;
  const Shape& sh = *s.shape;
  Vec3 p = Vec3::Zero();  // every case sets it; GCC 12 cannot tell once this file is on its own
  switch (sh.kind) {
    case ShapeKind::sphere: {
      const double len = dl.norm();
      p = len > tiny ? Vec3(sh.radius_m * dl / len) : Vec3::Zero();
      break;
    }
    case ShapeKind::box:
      p = Vec3(sign_of(dl.x()) * sh.half_extents_m.x(), sign_of(dl.y()) * sh.half_extents_m.y(),
               sign_of(dl.z()) * sh.half_extents_m.z());
      break;
    case ShapeKind::capsule: {
      const double len = dl.norm();
      p = Vec3(sign_of(dl.x()) * sh.half_length_m, 0, 0) + (len > tiny ? Vec3(sh.radius_m * dl / len) : Vec3::Zero());
      break;
    }
    case ShapeKind::cylinder: {
      const double rho = std::hypot(dl.y(), dl.z());
      p = Vec3(sign_of(dl.x()) * sh.half_length_m, 0, 0);
      if (rho > tiny) p += Vec3(0, dl.y(), dl.z()) * (sh.radius_m / rho);
      break;
    }
    case ShapeKind::plane:
    case ShapeKind::heightfield: p.setZero(); break;
  }
  return s.position + s.rotation * p;
}

// when cores overlap: the candidate axis of least overlap (an approximation of the true
// minimum translation; exact when one of the candidates is the true axis, as for boxes)
void overlap_fallback(const ShapePose& a, const ShapePose& b, ContactSet& set) {
  std::array<Vec3, 24> axes;
  int n = 0;
  auto push = [&](const Vec3& v) {
    const double len = v.norm();
    if (len > 1e-9 && n < static_cast<int>(axes.size())) axes[static_cast<std::size_t>(n++)] = v / len;
  };
  auto shape_axes = [](const ShapePose& s, std::array<Vec3, 3>& out) {
    if (s.shape->kind == ShapeKind::box) {
      for (int i = 0; i < 3; ++i) out[static_cast<std::size_t>(i)] = s.rotation.col(i);
      return 3;
    }
    if (s.shape->kind == ShapeKind::capsule || s.shape->kind == ShapeKind::cylinder) {
      out[0] = s.rotation.col(0);
      return 1;
    }
    return 0;
  };
  std::array<Vec3, 3> ax_a, ax_b;
  const int na = shape_axes(a, ax_a), nb = shape_axes(b, ax_b);
  for (int i = 0; i < na; ++i) push(ax_a[static_cast<std::size_t>(i)]);
  for (int i = 0; i < nb; ++i) push(ax_b[static_cast<std::size_t>(i)]);
  for (int i = 0; i < na; ++i)
    for (int j = 0; j < nb; ++j) push(ax_a[static_cast<std::size_t>(i)].cross(ax_b[static_cast<std::size_t>(j)]));
  const Vec3 d = a.position - b.position;
  push(d);
  // radial directions of round shapes toward the other centre
  auto radial = [&](const ShapePose& s, const Vec3& toward) {
    if (s.shape->kind != ShapeKind::capsule && s.shape->kind != ShapeKind::cylinder) return;
    const Vec3 u = s.rotation.col(0);
    push(toward - toward.dot(u) * u);
  };
  radial(a, -d);
  radial(b, d);
  double best = std::numeric_limits<double>::infinity();
  Vec3 best_n(0, 0, 1);
  for (int i = 0; i < n; ++i) {
    for (double sgn : {1.0, -1.0}) {
      const Vec3 nrm = sgn * axes[static_cast<std::size_t>(i)];
      const double overlap = full_support(b, nrm).dot(nrm) - full_support(a, -nrm).dot(nrm);
      if (overlap < best) {
        best = overlap;
        best_n = nrm;
      }
    }
  }
  const Vec3 deepest_a = full_support(a, -best_n);
  set.add(deepest_a + 0.5 * best * best_n, best_n, -best);
}

// ---- pair functions (a is the first kind in enum order) ---------------------------------

// a point of a's surface (with a's outward direction) against shape b
void point_against(const ShapePose& b, const Vec3& p, double margin, ContactSet& set) {
  Vec3 nb, sb;
  const double d = point_distance(b, p, nb, sb);
  if (d < margin) set.add(0.5 * (p + sb), nb, d);
}

// a sphere (centre c, radius r) against shape b
void sphere_against(const Vec3& c, double r, const ShapePose& b, double margin, ContactSet& set) {
  Vec3 nb, sb;
  const double d = point_distance(b, c, nb, sb) - r;
  if (d < margin) set.add(0.5 * (c - r * nb + sb), nb, d);
}

// two boxes touching edge to edge (`u`: the separating axis ra_i x rb_j, `depth` its separation)
void box_box_edge(const ShapePose& a, const ShapePose& b, int edge_i, int edge_j, const Vec3& u, double depth,
                  ContactSet& set) {
  const Mat3& ra = a.rotation;
  const Mat3& rb = b.rotation;
  const Vec3& ea = a.shape->half_extents_m;
  const Vec3& eb = b.shape->half_extents_m;
  const Vec3 d = a.position - b.position;  // from b to a
  Vec3 n = u;
  if (n.dot(d) < 0) n = -n;
  // the edge of a most toward b, the edge of b most toward a
  Vec3 ca = a.position, cb = b.position;
  for (int k = 0; k < 3; ++k) {
    if (k != edge_i) ca += ra.col(k) * (ea[k] * sign_of(-ra.col(k).dot(n)));
    if (k != edge_j) cb += rb.col(k) * (eb[k] * sign_of(rb.col(k).dot(n)));
  }
  const Vec3 ua = ra.col(edge_i), ub = rb.col(edge_j);
  // closest points of two lines, clamped to the edges
  const Vec3 r = ca - cb;
  const double bdot = ua.dot(ub), dd = ua.dot(r), e = ub.dot(r);
  const double den = 1 - bdot * bdot;
  double s = den > 1e-12 ? (bdot * e - dd) / den : 0.0;
  s = std::clamp(s, -ea[edge_i], ea[edge_i]);
  double t = std::clamp(bdot * s + e, -eb[edge_j], eb[edge_j]);
  s = std::clamp(bdot * t - dd, -ea[edge_i], ea[edge_i]);
  const Vec3 pa = ca + ua * s, pb = cb + ub * t;
  set.add(0.5 * (pa + pb), n, depth);
}

// a face of box `ref` (its axis `axis`) against box `inc`: the incident face clipped to the
// reference face's sides; `ref_is_b`: the reference is the pair's b (the normal points from b to a)
void box_box_face(const ShapePose& ref, const ShapePose& inc, int axis, bool ref_is_b, double margin, ContactSet& set) {
  // nr = ref's outward face normal toward inc
  const Vec3& er = ref.shape->half_extents_m;
  const Vec3& ei = inc.shape->half_extents_m;
  Vec3 nr = ref.rotation.col(axis);
  if (nr.dot(inc.position - ref.position) < 0) nr = -nr;
  const Vec3 n = ref_is_b ? nr : Vec3(-nr);  // contact normal from b to a
  // incident face: the face of inc most opposed to nr
  int ki = 0;
  double most = -1;
  for (int k = 0; k < 3; ++k) {
    const double v = std::abs(inc.rotation.col(k).dot(nr));
    if (v > most) most = v, ki = k;
  }
  const Vec3 ni = inc.rotation.col(ki) * (inc.rotation.col(ki).dot(nr) > 0 ? -1.0 : 1.0);
  const int ku = (ki + 1) % 3, kv = (ki + 2) % 3;
  const Vec3 fc = inc.position + ni * ei[ki];
  const Vec3 iu = inc.rotation.col(ku) * ei[ku], iv = inc.rotation.col(kv) * ei[kv];
  std::array<Vec3, 16> poly{fc + iu + iv, fc - iu + iv, fc - iu - iv, fc + iu - iv};
  int np = 4;
  // clip against the four side planes of the reference face
  const Vec3 rc = ref.position + nr * er[axis];
  const int ru = (axis + 1) % 3, rv = (axis + 2) % 3;
  const std::array<std::pair<Vec3, double>, 4> sides{{{ref.rotation.col(ru), er[ru]},
                                                      {-ref.rotation.col(ru), er[ru]},
                                                      {ref.rotation.col(rv), er[rv]},
                                                      {-ref.rotation.col(rv), er[rv]}}};
  for (const auto& [pn, lim] : sides) {
    std::array<Vec3, 16> out;
    int no = 0;
    for (int i = 0; i < np; ++i) {
      const Vec3& p0 = poly[static_cast<std::size_t>(i)];
      const Vec3& p1 = poly[static_cast<std::size_t>((i + 1) % np)];
      const double d0 = (p0 - rc).dot(pn) - lim, d1 = (p1 - rc).dot(pn) - lim;
      if (d0 <= 0) out[static_cast<std::size_t>(no++)] = p0;
      if ((d0 < 0) != (d1 < 0) && no < 16) out[static_cast<std::size_t>(no++)] = p0 + (p1 - p0) * (d0 / (d0 - d1));
    }
    poly = out;
    np = no;
    if (np == 0) break;
  }
  for (int i = 0; i < np; ++i) {
    const Vec3& p = poly[static_cast<std::size_t>(i)];
    const double sep = (p - rc).dot(nr);
    if (sep < margin) set.add(p - nr * (0.5 * sep), n, sep);
  }
  if (set.n == 0) {
    // clipping lost everything (grazing): fall back to the deepest incident vertex
    const Vec3 p = full_support(inc, -nr);
    const double sep = (p - rc).dot(nr);
    if (sep < margin) set.add(p - nr * (0.5 * sep), n, sep);
  }
}

void box_box(const ShapePose& a, const ShapePose& b, double margin, ContactSet& set) {
  const Mat3& ra = a.rotation;
  const Mat3& rb = b.rotation;
  const Vec3& ea = a.shape->half_extents_m;
  const Vec3& eb = b.shape->half_extents_m;
  const Vec3 d = a.position - b.position;  // from b to a
  // c(i, j) = A_i · B_j
  const Mat3 c = ra.transpose() * rb;
  Mat3 abs_c = c.cwiseAbs();
  abs_c.array() += 1e-12;
  const Vec3 da = ra.transpose() * d;  // d in a's frame
  const Vec3 db = rb.transpose() * d;  // d in b's frame

  double best_a = -std::numeric_limits<double>::infinity(), best_b = best_a, best_e = best_a;
  int axis_a = 0, axis_b = 0, edge_i = 0, edge_j = 0;
  Vec3 edge_axis(0, 0, 1);
  for (int i = 0; i < 3; ++i) {
    const double rbp = eb.dot(abs_c.row(i));
    const double s = std::abs(da[i]) - ea[i] - rbp;
    if (s > margin) return;
    if (s > best_a) best_a = s, axis_a = i;
  }
  for (int j = 0; j < 3; ++j) {
    const double rap = ea.dot(abs_c.col(j));
    const double s = std::abs(db[j]) - eb[j] - rap;
    if (s > margin) return;
    if (s > best_b) best_b = s, axis_b = j;
  }
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      const Vec3 l = ra.col(i).cross(rb.col(j));
      const double len = l.norm();
      if (len < 1e-6) continue;  // parallel edges: the face axes cover them
      const Vec3 u = l / len;
      const double rap = ea.dot((ra.transpose() * u).cwiseAbs());
      const double rbp = eb.dot((rb.transpose() * u).cwiseAbs());
      const double s = std::abs(d.dot(u)) - rap - rbp;
      if (s > margin) return;
      if (s > best_e) best_e = s, edge_i = i, edge_j = j, edge_axis = u;
    }
  }
  const double size = std::min(ea.minCoeff(), eb.minCoeff());
  const double tol = 1e-3 * size + 1e-9;
  // prefer faces (stable manifolds); an edge axis only when clearly better
  const bool use_b = best_b > best_a + tol;
  const double best_face = use_b ? best_b : best_a;
  if (best_e > best_face + tol) {
    box_box_edge(a, b, edge_i, edge_j, edge_axis, best_e, set);
    return;
  }
  if (use_b)
    box_box_face(b, a, axis_b, true, margin, set);
  else
    box_box_face(a, b, axis_a, false, margin, set);
}

void box_plane(const ShapePose& a, const WorldPlane& pl, double margin, ContactSet& set) {
  const Vec3& e = a.shape->half_extents_m;
  for (int i = 0; i < 8; ++i) {
    const Vec3 local((i & 1) ? e.x() : -e.x(), (i & 2) ? e.y() : -e.y(), (i & 4) ? e.z() : -e.z());
    const Vec3 v = a.position + a.rotation * local;
    const double d = pl.n.dot(v) - pl.offset;
    if (d < margin) set.add(v - pl.n * (0.5 * d), pl.n, d);
  }
}

// rim points of a cylinder's end discs that can touch something in direction -n from the
// cylinder: per disc the extreme point, plus three more around it when the disc faces n
template <typename F>
void cylinder_rim_points(const ShapePose& c, const Vec3& n, F&& f) {
  const Vec3 u = c.rotation.col(0);
  const double r = c.shape->radius_m, hl = c.shape->half_length_m;
  Vec3 w = -n - (-n).dot(u) * u;
  const double wl = w.norm();
  const bool flat = wl < 0.35;  // disc within ~20 degrees of facing n
  w = wl > 1e-9 ? Vec3(w / wl) : any_perpendicular(u);
  const Vec3 w2 = u.cross(w);
  for (double end : {-1.0, 1.0}) {
    const Vec3 ce = c.position + u * (end * hl);
    f(ce + r * w);
    if (flat) {
      f(ce - r * w);
      f(ce + r * w2);
      f(ce - r * w2);
    }
  }
}

void cylinder_plane(const ShapePose& a, const WorldPlane& pl, double margin, ContactSet& set) {
  cylinder_rim_points(a, pl.n, [&](const Vec3& v) {
    const double d = pl.n.dot(v) - pl.offset;
    if (d < margin) set.add(v - pl.n * (0.5 * d), pl.n, d);
  });
}

void capsule_ends(const ShapePose& s, Vec3& e0, Vec3& e1) {
  const Vec3 u = s.rotation.col(0) * s.shape->half_length_m;
  e0 = s.position - u;
  e1 = s.position + u;
}

// closest points between segments p1-q1 and p2-q2
void closest_segments(const Vec3& p1, const Vec3& q1, const Vec3& p2, const Vec3& q2, Vec3& c1, Vec3& c2) {
  const Vec3 d1 = q1 - p1, d2 = q2 - p2, r = p1 - p2;
  const double a = d1.squaredNorm(), e = d2.squaredNorm(), f = d2.dot(r);
  double s = 0, t = 0;
  if (a <= tiny && e <= tiny) {
    c1 = p1, c2 = p2;
    return;
  }
  if (a <= tiny) {
    t = std::clamp(f / e, 0.0, 1.0);
  } else {
    const double c = d1.dot(r);
    if (e <= tiny) {
      s = std::clamp(-c / a, 0.0, 1.0);
    } else {
      const double b = d1.dot(d2), den = a * e - b * b;
      s = den > tiny ? std::clamp((b * f - c * e) / den, 0.0, 1.0) : 0.0;
      t = (b * s + f) / e;
      if (t < 0) {
        t = 0;
        s = std::clamp(-c / a, 0.0, 1.0);
      } else if (t > 1) {
        t = 1;
        s = std::clamp((b - c) / a, 0.0, 1.0);
      }
    }
  }
  c1 = p1 + d1 * s;
  c2 = p2 + d2 * t;
}

void capsule_capsule(const ShapePose& a, const ShapePose& b, double margin, ContactSet& set) {
  Vec3 a0, a1, b0, b1, ca, cb;
  capsule_ends(a, a0, a1);
  capsule_ends(b, b0, b1);
  const double ra = a.shape->radius_m, rb = b.shape->radius_m;
  closest_segments(a0, a1, b0, b1, ca, cb);
  const Vec3 dv = ca - cb;
  const double len = dv.norm();
  const Vec3 n = len > tiny ? Vec3(dv / len) : any_perpendicular(a.rotation.col(0));
  const double sep = len - ra - rb;
  if (sep < margin) set.add(0.5 * ((ca - ra * n) + (cb + rb * n)), n, sep);
  // the end spheres give the second point of a line contact
  sphere_against(a0, ra, b, margin, set);
  sphere_against(a1, ra, b, margin, set);
  ContactSet other;
  other.merge_m = set.merge_m;
  sphere_against(b0, rb, a, margin, other);
  sphere_against(b1, rb, a, margin, other);
  for (int i = 0; i < other.n; ++i) {
    const ContactPoint& p = other.p[static_cast<std::size_t>(i)];
    set.add(p.point, -p.normal, p.separation_m);
  }
}

// pairs without a closed form: GJK on the cores, plus sampled surface points of a
void generic_convex(const ShapePose& a, const ShapePose& b, double margin, ContactSet& set) {
  double ma = 0, mb = 0;
  const ConvexDistance cd = convex_core_distance(a, b, ma, mb);
  Vec3 n;
  if (cd.overlapping) {
    overlap_fallback(a, b, set);
    if (set.n == 0) return;
    n = set.p[0].normal;
  } else {
    n = (cd.point_a - cd.point_b) / cd.distance_m;
    const double sep = cd.distance_m - ma - mb;
    if (sep < margin) set.add(0.5 * ((cd.point_a - ma * n) + (cd.point_b + mb * n)), n, sep);
  }
  // extra points so that line and face contacts are supported at more than one point
  auto sample = [&](const ShapePose& s, const ShapePose& o, const Vec3& toward_o, bool flip) {
    ContactSet tmp;
    tmp.merge_m = set.merge_m;
    if (s.shape->kind == ShapeKind::capsule) {
      Vec3 e0, e1;
      capsule_ends(s, e0, e1);
      sphere_against(e0, s.shape->radius_m, o, margin, tmp);
      sphere_against(e1, s.shape->radius_m, o, margin, tmp);
    } else if (s.shape->kind == ShapeKind::cylinder) {
      cylinder_rim_points(s, -toward_o, [&](const Vec3& v) { point_against(o, v, margin, tmp); });
    } else if (s.shape->kind == ShapeKind::box) {
      const Vec3& e = s.shape->half_extents_m;
      for (int i = 0; i < 8; ++i) {
        const Vec3 local((i & 1) ? e.x() : -e.x(), (i & 2) ? e.y() : -e.y(), (i & 4) ? e.z() : -e.z());
        const Vec3 v = s.position + s.rotation * local;
        if ((v - s.position).dot(toward_o) > 0) point_against(o, v, margin, tmp);
      }
    }
    for (int i = 0; i < tmp.n; ++i) {
      const ContactPoint& p = tmp.p[static_cast<std::size_t>(i)];
      set.add(p.point, flip ? Vec3(-p.normal) : p.normal, p.separation_m);
    }
  };
  sample(a, b, -n, false);
  sample(b, a, n, true);
}

}  // namespace

// ---- public -----------------------------------------------------------------------------

int collide(const ShapePose& a_in, const ShapePose& b_in, double margin, ContactPoint* out) {
  // order the pair by kind so each combination has one function; flip normals back after
  const bool swap = a_in.shape->kind > b_in.shape->kind;
  const ShapePose& a = swap ? b_in : a_in;
  const ShapePose& b = swap ? a_in : b_in;
  const Shape& sa = *a.shape;
  const Shape& sb = *b.shape;
  ContactSet set;
  set.merge_m = 0.05 * std::min(shape_size(sa), shape_size(sb));
  if (!(set.merge_m < 1e300)) set.merge_m = 1e-4;
  switch (sa.kind) {
    case ShapeKind::sphere:
      // sphere against anything: exact through the point distance of b
      if (sb.kind == ShapeKind::heightfield) break;
      sphere_against(a.position, sa.radius_m, b, margin, set);
      break;
    case ShapeKind::box:
      switch (sb.kind) {
        case ShapeKind::box: box_box(a, b, margin, set); break;
        case ShapeKind::plane: box_plane(a, world_plane(b), margin, set); break;
        case ShapeKind::cylinder:
        case ShapeKind::capsule: generic_convex(a, b, margin, set); break;
        case ShapeKind::sphere:
        case ShapeKind::heightfield: break;
      }
      break;
    case ShapeKind::cylinder:
      switch (sb.kind) {
        case ShapeKind::cylinder:
        case ShapeKind::capsule: generic_convex(a, b, margin, set); break;
        case ShapeKind::plane: cylinder_plane(a, world_plane(b), margin, set); break;
        case ShapeKind::sphere:
        case ShapeKind::box:
        case ShapeKind::heightfield: break;
      }
      break;
    case ShapeKind::capsule:
      switch (sb.kind) {
        case ShapeKind::capsule: capsule_capsule(a, b, margin, set); break;
        case ShapeKind::plane: {
          Vec3 e0, e1;
          capsule_ends(a, e0, e1);
          sphere_against(e0, sa.radius_m, b, margin, set);
          sphere_against(e1, sa.radius_m, b, margin, set);
          break;
        }
        case ShapeKind::sphere:
        case ShapeKind::box:
        case ShapeKind::cylinder:
        case ShapeKind::heightfield: break;
      }
      break;
    case ShapeKind::plane:
    case ShapeKind::heightfield: break;
  }
  const int n = set.emit(out, 4);
  if (swap)
    for (int i = 0; i < n; ++i) out[i].normal = -out[i].normal;
  return n;
}

}  // namespace tether::runtime
