// SPDX-License-Identifier: Apache-2.0
#include "joint_rows.hpp"

#include <Eigen/Cholesky>
#include <algorithm>
#include <cmath>

namespace tether::runtime::detail {

namespace {

void add_linear(JointRows& o, const Vec3& e, const Vec3& ra, const Vec3& rb, double c) {
  const int i = o.dims++;
  o.c[i] = c;
  if (o.errors_only) return;
  o.lin.row(i) = e.transpose();
  o.ang_a.row(i) = ra.cross(e).transpose();
  o.ang_b.row(i) = -rb.cross(e).transpose();
}

void add_angular(JointRows& o, const Vec3& e, double c) {
  const int i = o.dims++;
  o.c[i] = c;
  if (o.errors_only) return;
  o.ang_a.row(i) = e.transpose();
  o.ang_b.row(i) = -e.transpose();
}

// the limit row: position `at` must stay within [lower, upper], the nearer limit is held; `at`
// grows at e·(va + wa×ra − vb − wb×rb) (angular: e·(wa − wb))
void set_limit(JointRows& o, const JointModel& j, double at, const Vec3& e, bool angular, const Vec3& ra,
               const Vec3& rb) {
  o.limit = true;
  o.limit_both_ways = j.lower == j.upper;
  const bool lower = at - j.lower <= j.upper - at;
  o.limit_side = lower ? -1 : 1;
  // the row keeps c >= 0: c = at − lower grows along e, c = upper − at along −e
  const Vec3 d = lower ? e : Vec3(-e);
  o.c_l = lower ? at - j.lower : j.upper - at;
  if (o.errors_only) return;
  if (angular) {
    o.lin_l.setZero();
    o.ang_a_l = d;
    o.ang_b_l = -d;
  } else {
    o.lin_l = d;
    o.ang_a_l = ra.cross(d);
    o.ang_b_l = -rb.cross(d);
  }
}

Vec3 unit(int axis) { return Vec3::Unit(axis); }

// the row whose rate is the coordinate's: e·(va + wa×ra − vb − wb×rb), or e·(wa − wb)
void set_coordinate(JointRows& o, const Vec3& e, bool angular, const Vec3& ra, const Vec3& rb) {
  o.coordinate = true;
  if (angular) {
    o.lin_d.setZero();
    o.ang_a_d = e;
    o.ang_b_d = -e;
  } else {
    o.lin_d = e;
    o.ang_a_d = ra.cross(e);
    o.ang_b_d = -rb.cross(e);
  }
}

// an impulse `l` along one row (lin, ang_a, ang_b) on the two bodies
void apply_row(const Vec3& lin, const Vec3& ang_a, const Vec3& ang_b, double l, bool b_moves, SolverBody& a,
               SolverBody& b) {
  a.v += (a.inv_m * l) * lin;
  a.w += mul(a.inv_i, l * ang_a);
  if (b_moves) {
    b.v -= (b.inv_m * l) * lin;
    b.w += mul(b.inv_i, l * ang_b);
  }
}

double row_rate(const Vec3& lin, const Vec3& ang_a, const Vec3& ang_b, const SolverBody& a, const SolverBody& b) {
  return lin.dot(a.v - b.v) + ang_a.dot(a.w) + ang_b.dot(b.w);
}

double row_mass(const Vec3& lin, const Vec3& ang_a, const Vec3& ang_b, const SolverBody& a, const SolverBody& b) {
  const double k =
      (a.inv_m + b.inv_m) * lin.squaredNorm() + ang_a.dot(mul(a.inv_i, ang_a)) + ang_b.dot(mul(b.inv_i, ang_b));
  return k > 1e-300 ? 1.0 / k : 0.0;
}

}  // namespace

void joint_rows(const JointModel& j, const Pose& a, const Pose& b, JointRows& o, bool errors_only) {
  o.dims = 0;
  o.errors_only = errors_only;
  if (!errors_only) {
    o.lin.setZero();
    o.ang_a.setZero();
    o.ang_b.setZero();
  }
  o.c.setZero();
  o.limit = false;
  o.limit_side = 0;
  o.coordinate = false;
  const Vec3 pa = a.x + a.r * j.anchor_a;
  const Vec3 pb = b.x + b.r * j.anchor_b;
  switch (j.kind) {
    case JointKind::fixed:
    case JointKind::hinge:
    case JointKind::ball: {
      const Vec3 ra = pa - a.x, rb = pb - b.x, d = pa - pb;
      for (int i = 0; i < 3; ++i) add_linear(o, unit(i), ra, rb, d[i]);
      if (j.kind == JointKind::fixed) {
        const Vec3 th = rotation_vector(a.q * j.relative * b.q.conjugate());
        for (int i = 0; i < 3; ++i) add_angular(o, unit(i), th[i]);
      } else if (j.kind == JointKind::hinge) {
        // the axes stay aligned: b's axis × a's axis turns at (wa − wb) across the axis
        const Vec3 axa = a.r * j.axis_a, axb = b.r * j.axis_b;
        const Vec3 u1 = unit_perpendicular(axa), u2 = axa.cross(u1);
        const Vec3 cr = axb.cross(axa);
        add_angular(o, u1, u1.dot(cr));
        add_angular(o, u2, u2.dot(cr));
        // the angle grows at (wb − wa)·axis: the row direction is −axis
        if (!errors_only) set_coordinate(o, -axa, true, Vec3::Zero(), Vec3::Zero());
        if (j.limited) {
          const Vec3 fa = a.r * j.ref_a, fb = b.r * j.ref_b;
          const double angle = std::atan2(fa.cross(fb).dot(axa), fa.dot(fb));
          set_limit(o, j, angle, -axa, true, Vec3::Zero(), Vec3::Zero());
        }
      }
      break;
    }
    case JointKind::slider: {
      const Vec3 axa = a.r * j.axis_a;
      const Vec3 u1 = unit_perpendicular(axa), u2 = axa.cross(u1);
      const Vec3 d = pb - pa;
      const Vec3 ra = pb - a.x, rb = pb - b.x;
      add_linear(o, u1, ra, rb, -u1.dot(d));
      add_linear(o, u2, ra, rb, -u2.dot(d));
      const Vec3 th = rotation_vector(a.q * j.relative * b.q.conjugate());
      for (int i = 0; i < 3; ++i) add_angular(o, unit(i), th[i]);
      if (!errors_only) set_coordinate(o, -axa, false, ra, rb);
      if (j.limited) set_limit(o, j, axa.dot(d), -axa, false, ra, rb);
      break;
    }
    case JointKind::lock: {
      for (int i = 0; i < 3; ++i)
        if (j.locked & (1u << i)) add_linear(o, unit(i), Vec3::Zero(), Vec3::Zero(), a.x[i] - j.anchor_b[i]);
      int turning = 0;
      for (int i = 3; i < 6; ++i) turning += (j.locked >> i) & 1;
      if (turning == 2) {
        // free to turn about one world axis only: a's axis that lay along it stays along it
        const Vec3 cr = j.axis_b.cross(a.r * j.axis_a);
        for (int i = 0; i < 3; ++i)
          if (j.locked & (8u << i)) add_angular(o, unit(i), cr[i]);
      } else if (turning > 0) {
        const Vec3 th = rotation_vector(a.q * j.relative);
        for (int i = 0; i < 3; ++i)
          if (j.locked & (8u << i)) add_angular(o, unit(i), th[i]);
      }
      break;
    }
  }
}

void prepare_joint(JointSolve& j, const JointModel& model, const SolverBody& a, const SolverBody& b, double h) {
  const JointRows& r = j.rows;
  j.bound_m = j.bound_b = 0;
  if (r.coordinate && (model.motor_max > 0 || model.brake > 0)) {
    j.k_d = row_mass(r.lin_d, r.ang_a_d, r.ang_b_d, a, b);
    j.bound_m = model.motor_max * h;
    j.bound_b = model.brake * h;
    j.motor_speed = model.motor_speed;
  }
  if (r.limit) {
    j.k_l = row_mass(r.lin_l, r.ang_a_l, r.ang_b_l, a, b);
    j.target_l = r.limit_both_ways ? -r.c_l / h : -std::max(r.c_l, 0.0) / h;
  }
}

void prepare_joint_block(JointSolve& j, const SolverBody& a, const SolverBody& b) {
  const JointRows& r = j.rows;
  const int n = r.dims;
  // K = J_a M_a^-1 J_a^T + J_b M_b^-1 J_b^T over the used rows; the rest stay identity
  Vec3 ia[6], ib[6];  // inverse inertia times each row's angular parts
  for (int i = 0; i < n; ++i) {
    ia[i] = mul(a.inv_i, r.ang_a.row(i).transpose());
    ib[i] = mul(b.inv_i, r.ang_b.row(i).transpose());
  }
  Mat6 k = Mat6::Identity();
  const double m = a.inv_m + b.inv_m;
  for (int i = 0; i < n; ++i)
    for (int c = 0; c <= i; ++c) {
      const double v = m * r.lin.row(i).dot(r.lin.row(c)) + r.ang_a.row(c).dot(ia[i]) + r.ang_b.row(c).dot(ib[i]);
      k(i, c) = k(c, i) = v;
    }
  if (n <= 3) {
    // a ball joint (or fewer rows): the closed-form 3 x 3 inverse, the rest stays identity
    j.k_inv.setIdentity();
    j.k_inv.topLeftCorner<3, 3>() = k.topLeftCorner<3, 3>().inverse();
  } else {
    j.k_inv = k.ldlt().solve(Mat6::Identity());
  }
}

void apply_joint_impulse(const JointSolve& j, const Vec6& rows, double limit, double drive, SolverBody& a,
                         SolverBody& b) {
  const JointRows& r = j.rows;
  Vec3 p = limit * r.lin_l + drive * r.lin_d, ta = limit * r.ang_a_l + drive * r.ang_a_d,
       tb = limit * r.ang_b_l + drive * r.ang_b_d;
  for (int i = 0; i < r.dims; ++i) {
    p += rows[i] * r.lin.row(i).transpose();
    ta += rows[i] * r.ang_a.row(i).transpose();
    tb += rows[i] * r.ang_b.row(i).transpose();
  }
  a.v += a.inv_m * p;
  a.w += mul(a.inv_i, ta);
  if (j.b_moves) {
    b.v -= b.inv_m * p;
    b.w += mul(b.inv_i, tb);
  }
}

double solve_joint(JointSolve& j, SolverBody& a, SolverBody& b, bool block) {
  const JointRows& r = j.rows;
  const int n = block ? r.dims : 0;
  const Vec3 dv = a.v - b.v;
  double rate[6];
  double largest = 0;
  for (int i = 0; i < n; ++i) {
    rate[i] = r.lin.row(i).dot(dv) + r.ang_a.row(i).dot(a.w) + r.ang_b.row(i).dot(b.w);
    largest = std::max(largest, std::abs(rate[i]));
  }
  Vec6 dl = Vec6::Zero();
  for (int i = 0; i < n; ++i) {
    double v = 0;
    for (int c = 0; c < n; ++c) v -= j.k_inv(i, c) * rate[c];
    dl[i] = v;
  }
  if (n > 0) {
    j.lambda += dl;
    apply_joint_impulse(j, dl, 0.0, 0.0, a, b);
  }
  if (r.limit) {
    const double rate_l = row_rate(r.lin_l, r.ang_a_l, r.ang_b_l, a, b);
    double l = j.lambda_l + j.k_l * (j.target_l - rate_l);
    if (!r.limit_both_ways) l = std::max(0.0, l);
    const double dll = l - j.lambda_l;
    j.lambda_l = l;
    if (dll != 0) {
      apply_row(r.lin_l, r.ang_a_l, r.ang_b_l, dll, j.b_moves, a, b);
      largest = std::max(largest, std::abs(dll) / std::max(j.k_l, 1e-300));
    }
  }
  // motor toward its speed, brake toward rest, each within its bound
  for (int which = 0; which < 2; ++which) {
    const double bound = which == 0 ? j.bound_m : j.bound_b;
    if (!(bound > 0)) continue;
    double& lambda = which == 0 ? j.lambda_m : j.lambda_b;
    const double target = which == 0 ? j.motor_speed : 0.0;
    const double rate = row_rate(r.lin_d, r.ang_a_d, r.ang_b_d, a, b);
    const double l = std::clamp(lambda + j.k_d * (target - rate), -bound, bound);
    const double dl_d = l - lambda;
    lambda = l;
    if (dl_d != 0) {
      apply_row(r.lin_d, r.ang_a_d, r.ang_b_d, dl_d, j.b_moves, a, b);
      largest = std::max(largest, std::abs(dl_d) / std::max(j.k_d, 1e-300));
    }
  }
  return largest;
}

}  // namespace tether::runtime::detail
