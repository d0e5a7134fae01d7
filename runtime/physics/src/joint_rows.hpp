// SPDX-License-Identifier: Apache-2.0
// A joint as rows of velocity constraints, solved as one block per joint (internal to physics;
// docs/physics.md, "Joints").
#pragma once

#include <cstdint>

#include "solver_body.hpp"
#include "tether/physics/world_model.hpp"
#include "tether/physics/world_state.hpp"

namespace tether::runtime::detail {

using Vec6 = Eigen::Matrix<double, 6, 1>;
using Mat6 = Eigen::Matrix<double, 6, 6>;
using Mat63 = Eigen::Matrix<double, 6, 3, Eigen::RowMajor>;  // row i: one row's 3-vector

/// Where one side of a joint is: a body's pose, or the world's (origin, identity).
struct Pose {
  Vec3 x{0, 0, 0};
  Quat q = Quat::Identity();
  Mat3 r = Mat3::Identity();
};

/// The pose of a body's state, or the world's for nullptr.
inline Pose pose_of(const BodyState* body) {
  Pose p;
  if (!body) return p;
  p.x = body->position_m;
  p.q = body->orientation;
  p.r = p.q.toRotationMatrix();
  return p;
}

/// The joint's equality rows at a pose: row i holds when lin_i·(va + wa×ra − vb − wb×rb)
/// (written as lin_i·(va − vb) + ang_a_i·wa + ang_b_i·wb) is zero; c_i is the row's position
/// error, whose rate that is. At most one one-sided limit row (hinge angle, slider travel):
/// c_limit >= 0 must hold. Rows past `dims` are zero.
struct JointRows {
  int dims = 0;
  Mat63 lin = Mat63::Zero();
  Mat63 ang_a = Mat63::Zero();
  Mat63 ang_b = Mat63::Zero();
  Vec6 c = Vec6::Zero();
  bool limit = false;
  bool limit_both_ways = false;  // lower == upper: the limit row holds in both directions
  std::int8_t limit_side = 0;    // -1: the lower limit's row, +1: the upper's
  Vec3 lin_l{0, 0, 0}, ang_a_l{0, 0, 0}, ang_b_l{0, 0, 0};
  double c_l = 0;
  // hinge, slider: the row whose rate is the coordinate's (angle or travel) rate; the motor
  // and the brake push along it
  bool coordinate = false;
  Vec3 lin_d{0, 0, 0}, ang_a_d{0, 0, 0}, ang_b_d{0, 0, 0};
  bool errors_only = false;  // only dims, c, the limit side and c_l were filled

  /// Row i holds a point (its error is a distance); otherwise an orientation (an angle).
  bool linear(int i) const { return lin.row(i).squaredNorm() > 0; }
};

/// Fills `out` for the joint with its sides at poses a and b; with errors_only, only the
/// position errors (the directions are left as they were).
void joint_rows(const JointModel& joint, const Pose& a, const Pose& b, JointRows& out, bool errors_only = false);

/// The rotation by a rotation vector th, for the small turns of a position correction (to
/// ~1e-17 below 1e-4 rad without the sine and cosine).
inline Quat small_rotation_quat(const Vec3& th) {
  const double a2 = th.squaredNorm();
  if (a2 > 1e-8) return rotation_quat(th);
  const double s = 0.5 - a2 / 48.0;  // sin(a/2)/a
  return Quat(1.0 - a2 / 8.0, s * th.x(), s * th.y(), s * th.z());
}

/// One joint inside one sub-step: its rows, their effective mass, the impulses so far.
struct JointSolve {
  std::int32_t a = 0, b = 0;  // solver indices; b is the static slot for the world
  bool b_moves = false;
  JointRows rows;
  Mat6 k_inv = Mat6::Identity();  // inverse of the rows' effective-mass matrix
  double k_l = 0;                 // the limit row's effective mass
  double target_l = 0;            // lowest rate of c_limit allowed (speculative: closes a gap in h)
  Vec6 lambda = Vec6::Zero();     // impulses of the rows so far this sub-step
  double lambda_l = 0;
  // motor and brake on the coordinate row: effective mass, their impulses and bounds (max * h)
  double k_d = 0, lambda_m = 0, lambda_b = 0, bound_m = 0, bound_b = 0, motor_speed = 0;
  // what the last sub-step of this loop step ended with (the warm start), and its limit side
  Vec6 carry = Vec6::Zero();
  double carry_l = 0, carry_m = 0, carry_b = 0;
  std::int8_t carry_side = 0;
  bool valid = false;  // both bodies exist and differ
};

/// The limit's and the coordinate row's effective masses (bodies' inverse mass and world
/// inverse inertia), the limit's target and the motor's and brake's bounds for a sub-step of h.
void prepare_joint(JointSolve& j, const JointModel& model, const SolverBody& a, const SolverBody& b, double h);
/// k_inv, the inverse of the equality rows' effective-mass matrix: needed only by a joint
/// solved on its own (Gauss-Seidel), not by one its tree solves.
void prepare_joint_block(JointSolve& j, const SolverBody& a, const SolverBody& b);
/// Applies impulses (the rows', the limit's and the coordinate row's) to the bodies; b only
/// when it moves.
void apply_joint_impulse(const JointSolve& j, const Vec6& rows, double limit, double drive, SolverBody& a,
                         SolverBody& b);
/// One Gauss-Seidel visit: the rows as one exact block (unless `block` is false: a joint tree
/// solves them), then the limit, the motor and the brake. Returns the largest
/// constraint velocity it removed (m/s or rad/s, for convergence).
double solve_joint(JointSolve& j, SolverBody& a, SolverBody& b, bool block = true);

}  // namespace tether::runtime::detail
