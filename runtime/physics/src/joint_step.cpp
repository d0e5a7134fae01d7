// SPDX-License-Identifier: Apache-2.0
// Joints in the step (docs/physics.md, "Joints"): set-up once a loop step, sliders' springs
// with the forces, the rows and their warm start at each sub-step's start, and after the
// bodies move the post-stabilisation that removes the joints' position errors, with the joint
// loads. The rows themselves are in joint_rows.cpp, the exact tree solve in joint_tree.cpp.
#include <algorithm>
#include <cmath>

#include "stepper.hpp"

namespace tether::runtime::detail {

void Stepper::setup_joints() {
  const std::size_t n = n_;
  s_.jointed.assign(n, 0);
  s_.joined_pairs.clear();
  s_.joints.resize(model_.joints.size());
  first_substep_ = true;
  collect_loads_ = report_ && !model_.joints.empty() && report_->joint_loads.capacity() >= model_.joints.size();
  if (collect_loads_) {
    report_->joint_loads.assign(model_.joints.size(), JointLoad{});
    s_.spring_force_a.assign(model_.joints.size(), Vec3::Zero());
    s_.spring_torque_a.assign(model_.joints.size(), Vec3::Zero());
    s_.spring_torque_b.assign(model_.joints.size(), Vec3::Zero());
  }
  for (std::size_t k = 0; k < model_.joints.size(); ++k) {
    const JointModel& jm = model_.joints[k];
    detail::JointSolve& j = s_.joints[k];
    j = detail::JointSolve{};
    const bool a_ok = jm.body_a >= 0 && static_cast<std::size_t>(jm.body_a) < n;
    const bool b_ok = jm.body_b < 0 || (static_cast<std::size_t>(jm.body_b) < n && jm.body_b != jm.body_a);
    j.valid = a_ok && b_ok;
    if (!j.valid) continue;
    j.a = jm.body_a;
    j.b_moves = jm.body_b >= 0;
    j.b = j.b_moves ? jm.body_b : static_cast<std::int32_t>(n);
    s_.jointed[static_cast<std::size_t>(j.a)] = 1;
    if (j.b_moves) {
      s_.jointed[static_cast<std::size_t>(j.b)] = 1;
      const auto lo = static_cast<std::uint64_t>(std::min(j.a, j.b)),
                 hi = static_cast<std::uint64_t>(std::max(j.a, j.b));
      s_.joined_pairs.push_back(lo << 32 | hi);
    }
  }
  std::sort(s_.joined_pairs.begin(), s_.joined_pairs.end());
  s_.jointed_bodies.clear();
  for (std::size_t i = 0; i < n; ++i)
    if (s_.jointed[i]) s_.jointed_bodies.push_back(static_cast<std::uint32_t>(i));
  detail::build_forest(s_.joints, n, s_.forest);
  s_.joint_c.resize(s_.joints.size());
  s_.joint_dl.resize(s_.joints.size());
  s_.joint_dll.resize(s_.joints.size());
  s_.move_p.assign(n, Vec3::Zero());
  s_.move_l.assign(n, Vec3::Zero());
  s_.poses.assign(n + 1, detail::Pose{});  // the last: the world's (identity)
}

// sliders with a spring or damper: the force along the axis, on both bodies at b's anchor,
// added to the sub-step's forces (explicit, like the other forces)
void Stepper::joint_springs() {
  for (std::size_t k = 0; k < s_.joints.size(); ++k) {
    const JointModel& jm = model_.joints[k];
    const detail::JointSolve& j = s_.joints[k];
    if (!j.valid || jm.kind != JointKind::slider || (jm.spring_n_m == 0 && jm.damper_n_s_m == 0)) continue;
    const detail::Pose a = pose(j.a), b = pose(j.b);
    const Vec3 axis = a.r * jm.axis_a;
    const Vec3 pa = a.x + a.r * jm.anchor_a, pb = b.x + b.r * jm.anchor_b;
    const Vec3 ra = pb - a.x, rb = pb - b.x;
    BodyFrame& fa = s_.frames[static_cast<std::size_t>(j.a)];
    Vec3 vb = Vec3::Zero();
    if (j.b_moves) {
      const BodyFrame& fb = s_.frames[static_cast<std::size_t>(j.b)];
      vb = fb.v + fb.w.cross(rb);
    }
    const double travel = axis.dot(pb - pa);
    const double rate = axis.dot(vb - fa.v - fa.w.cross(ra));
    const Vec3 f = (-jm.spring_n_m * (travel - jm.spring_rest_m) - jm.damper_n_s_m * rate) * axis;  // on b
    auto push = [this](std::size_t i, const Vec3& force, const Vec3& lever) {
      BodyFrame& fr = s_.frames[i];
      fr.force += force;
      fr.torque += lever.cross(force);
      fr.bound_accel(model_.bodies[i].inv_mass);
    };
    push(static_cast<std::size_t>(j.a), -f, ra);
    if (j.b_moves) push(static_cast<std::size_t>(j.b), f, rb);
    if (collect_loads_) {
      s_.spring_force_a[k] = -f;
      s_.spring_torque_a[k] = ra.cross(-f);
      s_.spring_torque_b[k] = j.b_moves ? Vec3(rb.cross(f)) : Vec3::Zero();
    }
  }
}

bool Stepper::joined(std::size_t a, std::size_t b) const {
  if (s_.joined_pairs.empty()) return false;
  const std::uint64_t key =
      static_cast<std::uint64_t>(std::min(a, b)) << 32 | static_cast<std::uint64_t>(std::max(a, b));
  return std::binary_search(s_.joined_pairs.begin(), s_.joined_pairs.end(), key);
}

detail::Pose Stepper::pose(std::int32_t solver_index) const {
  const auto i = static_cast<std::size_t>(solver_index);
  return detail::pose_of(i < n_ ? &state_.bodies[i] : nullptr);  // the static slot: the world
}

void Stepper::refresh_poses() {
  for (const std::uint32_t i : s_.jointed_bodies) s_.poses[i] = detail::pose_of(&state_.bodies[i]);
}

void Stepper::prepare_joints(double h) {
  // rows at the sub-step's start; impulses start from the previous sub-step's, scaled to h
  // (the first sub-step of a loop step starts cold: nothing carries between loop steps)
  const double scale = s_.previous_h > 0 && !first_substep_ ? h / s_.previous_h : 0.0;
  refresh_poses();
  for (detail::JointSolve& j : s_.joints) {
    if (!j.valid) continue;
    const JointModel& jm = model_.joints[static_cast<std::size_t>(&j - s_.joints.data())];
    detail::joint_rows(jm, s_.poses[static_cast<std::size_t>(j.a)], s_.poses[static_cast<std::size_t>(j.b)], j.rows);
    detail::prepare_joint(j, jm, s_.solver[static_cast<std::size_t>(j.a)], s_.solver[static_cast<std::size_t>(j.b)], h);
    j.lambda = scale * j.carry;
    j.lambda_l = j.rows.limit && j.rows.limit_side == j.carry_side ? scale * j.carry_l : 0.0;
    j.lambda_m = std::clamp(scale * j.carry_m, -j.bound_m, j.bound_m);
    j.lambda_b = std::clamp(scale * j.carry_b, -j.bound_b, j.bound_b);
  }
  detail::factor_forest(s_.forest, s_.joints, s_.solver);
  // the joints no tree solves this sub-step (none, or one found singular) are swept on their own
  for (std::size_t k = 0; k < s_.joints.size(); ++k) {
    detail::JointSolve& j = s_.joints[k];
    if (j.valid && s_.forest.solving(k) < 0)
      detail::prepare_joint_block(j, s_.solver[static_cast<std::size_t>(j.a)],
                                  s_.solver[static_cast<std::size_t>(j.b)]);
  }
}

// the impulses this sub-step's solve and springs gave each joint's bodies, into the report
void Stepper::add_solve_loads() {
  for (std::size_t k = 0; k < s_.joints.size(); ++k) {
    const detail::JointSolve& j = s_.joints[k];
    if (!j.valid) continue;
    const detail::JointRows& r = j.rows;
    const double drive = j.lambda_m + j.lambda_b;
    Vec3 p = j.lambda_l * r.lin_l + drive * r.lin_d, ta = j.lambda_l * r.ang_a_l + drive * r.ang_a_d,
         tb = j.lambda_l * r.ang_b_l + drive * r.ang_b_d;
    for (int i = 0; i < r.dims; ++i) {
      p += j.lambda[i] * r.lin.row(i).transpose();
      ta += j.lambda[i] * r.ang_a.row(i).transpose();
      tb += j.lambda[i] * r.ang_b.row(i).transpose();
    }
    JointLoad& load = report_->joint_loads[k];
    load.impulse_n_s += p + h_ * s_.spring_force_a[k];
    load.angular_impulse_a_n_m_s += ta + h_ * s_.spring_torque_a[k];
    if (j.b_moves) load.angular_impulse_b_n_m_s += tb + h_ * s_.spring_torque_b[k];
  }
}

// a position correction by a (pseudo-)impulse p, angular l about the centre of mass; the
// velocity takes the same impulse spread over the sub-step (what moved the body by that much),
// so the correction also turns the velocity with the joint (RATTLE's position stage) instead of
// the next sub-step projecting it away, which would drain energy at first order in h
void Stepper::move_by_impulse(std::size_t i, const Vec3& p, const Vec3& l) {
  const SolverBody& sb = s_.solver[i];
  BodyState& st = state_.bodies[i];
  const Vec3 dx = sb.inv_m * p, dth = mul(sb.inv_i, l);
  st.position_m += dx;
  st.orientation = (detail::small_rotation_quat(dth) * st.orientation).normalized();
  st.linear_momentum += p / h_;
  st.angular_momentum += l / h_;
  s_.disp_lin[i] += dx;
  s_.disp_ang[i] += dth;
}

void Stepper::correct_joints() {
  if (s_.joints.empty()) return;
  // keep what the solve ended with for the next sub-step's warm start
  for (detail::JointSolve& j : s_.joints) {
    j.carry = j.lambda;
    j.carry_l = j.lambda_l;
    j.carry_m = j.lambda_m;
    j.carry_b = j.lambda_b;
    j.carry_side = j.rows.limit_side;
  }
  if (collect_loads_) add_solve_loads();
  // post-stabilisation: each sweep moves the bodies (positions only, by the rows' effective
  // masses of this sub-step) to cancel the joints' errors at the new poses: a joint tree by its
  // exact solve, every other joint Gauss-Seidel
  const detail::JointRows& rows = s_.joint_scratch;
  JointErrors worst;
  const int sweeps = std::max(0, cfg_.joint_position_iterations);
  const bool trees = !s_.forest.lead_joint.empty();
  // every joint in a tree: the measure pass sees them all before anything moves, so a sweep
  // whose errors are all within tolerance moves nothing
  bool trees_only = trees;
  for (std::size_t k = 0; k < s_.joints.size() && trees_only; ++k) trees_only = !s_.joints[k].valid || in_tree(k);
  for (int sweep = 0; sweep <= sweeps; ++sweep) {
    worst.m = worst.rad = 0;
    const bool measure_only = sweep == sweeps;
    if (trees) {
      // the trees' joints: every error at the poses this sweep starts from, then one solve each
      measure_trees(worst);
      if (trees_only && worst.m <= cfg_.joint_tolerance && worst.rad <= cfg_.joint_tolerance) break;
      if (!measure_only) correct_trees();
    }
    for (std::size_t k = 0; k < s_.joints.size(); ++k) {
      const detail::JointSolve& j = s_.joints[k];
      if (!j.valid || in_tree(k)) continue;
      const bool past_limit = measure_joint(k, false, worst);  // the bodies move joint by joint here
      if (measure_only) continue;
      // the correction pushes along the rows the solve used (consistent with k_inv), against
      // the error at the new poses: a body that turns cheaply is not turned by a mismatch
      correct_joint(k, -(j.k_inv * rows.c), limit_push(j, past_limit), false);
    }
    if (worst.m <= cfg_.joint_tolerance && worst.rad <= cfg_.joint_tolerance) break;
  }
  if (report_) {
    report_->max_joint_error_m = std::max(report_->max_joint_error_m, worst.m);
    report_->max_joint_error_rad = std::max(report_->max_joint_error_rad, worst.rad);
  }
}

// a joint's error at the current poses (into s_.joint_scratch), counted in `worst`; `cached`:
// s_.poses are the current poses (refreshed since anything moved). Returns whether the joint is
// past its limit.
bool Stepper::measure_joint(std::size_t k, bool cached, JointErrors& worst) {
  detail::JointRows& rows = s_.joint_scratch;
  const detail::JointSolve& j = s_.joints[k];
  if (cached)
    detail::joint_rows(model_.joints[k], s_.poses[static_cast<std::size_t>(j.a)],
                       s_.poses[static_cast<std::size_t>(j.b)], rows, true);
  else
    detail::joint_rows(model_.joints[k], pose(j.a), pose(j.b), rows, true);
  for (int i = 0; i < rows.dims; ++i) {
    const double e = std::abs(rows.c[i]);
    if (j.rows.linear(i))
      worst.m = std::max(worst.m, e);
    else
      worst.rad = std::max(worst.rad, e);
  }
  const bool past_limit = rows.limit && (rows.c_l < 0 || rows.limit_both_ways);
  if (past_limit) {
    double& w = j.rows.lin_l.squaredNorm() > 0 ? worst.m : worst.rad;
    w = std::max(w, std::abs(rows.c_l));
  }
  return past_limit;
}

// the limit row's pseudo-impulse for the error in s_.joint_scratch (0 when within the limits)
double Stepper::limit_push(const detail::JointSolve& j, bool past_limit) const {
  const detail::JointRows& rows = s_.joint_scratch;
  double dll = 0;
  if (past_limit && j.k_l > 0) dll = -rows.c_l * j.k_l;
  if (dll != 0 && rows.limit_side != j.rows.limit_side) dll = -dll;
  return dll;
}

// moves joint k's bodies by the rows' pseudo-impulses dl and the limit row's dll (summed: adds
// them to move_p / move_l, each body moved once by its sum afterwards)
void Stepper::correct_joint(std::size_t k, const detail::Vec6& dl, double dll, bool summed) {
  const detail::JointSolve& j = s_.joints[k];
  const detail::JointRows& dir = j.rows;
  const Vec3 p = dir.lin.transpose() * dl + dll * dir.lin_l;
  const Vec3 la = dir.ang_a.transpose() * dl + dll * dir.ang_a_l;
  const Vec3 lb = dir.ang_b.transpose() * dl + dll * dir.ang_b_l;
  const auto a = static_cast<std::size_t>(j.a), b = static_cast<std::size_t>(j.b);
  if (summed) {
    s_.move_p[a] += p;
    s_.move_l[a] += la;
    if (j.b_moves) {
      s_.move_p[b] -= p;
      s_.move_l[b] += lb;
    }
  } else {
    move_by_impulse(a, p, la);
    if (j.b_moves) move_by_impulse(b, -p, lb);
  }
  if (collect_loads_) {  // the correction's momentum (move_by_impulse) is the joint's too
    JointLoad& load = report_->joint_loads[k];
    load.impulse_n_s += p / h_;
    load.angular_impulse_a_n_m_s += la / h_;
    if (j.b_moves) load.angular_impulse_b_n_m_s += lb / h_;
  }
}

bool Stepper::in_tree(std::size_t k) const { return s_.forest.solving(k) >= 0; }

// the trees' joints: each one's error and limit push at the poses the sweep starts from
void Stepper::measure_trees(JointErrors& worst) {
  refresh_poses();
  for (std::size_t k = 0; k < s_.joints.size(); ++k) {
    if (!s_.joints[k].valid || !in_tree(k)) continue;
    const bool past_limit = measure_joint(k, true, worst);
    s_.joint_c[k] = s_.joint_scratch.c;
    s_.joint_dll[k] = limit_push(s_.joints[k], past_limit);
  }
}

// one exact solve per tree for the errors measure_trees found; a tree's bodies move once each,
// by the sum of their joints' pseudo-impulses
void Stepper::correct_trees() {
  for (std::size_t t = 0; t < s_.forest.lead_joint.size(); ++t)
    if (s_.forest.usable[t]) detail::tree_correction(s_.forest, t, s_.joints, s_.joint_c, s_.joint_dl);
  for (std::size_t k = 0; k < s_.joints.size(); ++k)
    if (s_.joints[k].valid && in_tree(k)) correct_joint(k, s_.joint_dl[k], s_.joint_dll[k], true);
  for (const std::uint32_t i : s_.jointed_bodies) {
    if (s_.move_p[i] != Vec3::Zero() || s_.move_l[i] != Vec3::Zero()) move_by_impulse(i, s_.move_p[i], s_.move_l[i]);
    s_.move_p[i].setZero();
    s_.move_l[i].setZero();
  }
}

}  // namespace tether::runtime::detail
