// SPDX-License-Identifier: Apache-2.0
// Joints whose bodies form a tree (a chain, a tether, a car), solved exactly in time linear in
// their number (internal to physics; docs/physics.md, "Joints"). The method is the one of
// D. Baraff, "Linear-Time Dynamics using Lagrange Multipliers" (SIGGRAPH 1996): the system
// [M J^T; J 0] of the bodies' masses and the joints' rows has the sparsity of a tree when the
// joints do, and eliminating it leaves first creates no fill-in.
#pragma once

#include <cstdint>
#include <vector>

#include "joint_rows.hpp"
#include "solver_body.hpp"

namespace tether::runtime::detail {

/// One unknown block of a tree: a body (its velocity change, 6) or a joint (its rows' impulses,
/// up to 6). Every block is 6 wide: a joint's unused rows are decoupled (zero in H, -1 on D's
/// diagonal), so the fixed-size arithmetic needs no branches.
struct TreeNode {
  std::int32_t body = -1;    // solver index of a body node
  std::int32_t joint = -1;   // joint index of a joint node
  std::int32_t parent = -1;  // index in JointForest::nodes, or -1 for the root
  int dims = 0;
  int edge = 6;               // rows of the joint on the edge to the parent (3: a ball joint's, worked as 3)
  Mat6 d_inv = Mat6::Zero();  // D^-1 of the factorisation
  Mat6 h_up = Mat6::Zero();   // H's block (this node's rows, the parent's columns)
  Mat6 j_up = Mat6::Zero();   // D^-1 h_up
  Vec6 x = Vec6::Zero();      // solve scratch
};

/// Joints of a group beyond its tree (a second joint to the world, a joint that closes a
/// loop): at most this many per tree are solved with it exactly; any further ones are swept
/// joint by joint.
inline constexpr int max_extra_joints = 2;
/// Rows solved through a tree's Schur complement: the extra joints' rows, then the limit, motor
/// and brake rows of its joints (one-sided or bounded, by projected Gauss-Seidel on the small
/// dense matrix of how each row's impulse moves every other row through the tree). A tree with
/// more keeps its limits, motors and brakes as rows of their own beside it.
inline constexpr int max_tree_rows = 24;
using MatRows = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, 0, max_tree_rows, max_tree_rows>;
using VecRows = Eigen::Matrix<double, Eigen::Dynamic, 1, 0, max_tree_rows, 1>;

/// One row of a tree's Schur complement.
struct TreeRow {
  enum Kind : std::uint8_t { equality, limit, motor, brake };
  std::int32_t joint = -1;
  Kind kind = equality;
  std::int8_t index = 0;  // an equality row: its row in the joint
};

/// The joint trees of a world: every connected group of joints (through bodies that move),
/// its nodes ordered so that each comes before its parent, and up to max_extra_joints joints
/// that do not fit the tree.
struct JointForest {
  std::vector<TreeNode> nodes;
  std::vector<std::uint32_t> tree_start;   // nodes of tree t: [tree_start[t], tree_start[t + 1])
  std::vector<std::int32_t> lead_joint;    // per tree: its lowest joint index (solved when met)
  std::vector<std::uint8_t> usable;        // per tree: factorised this sub-step (else swept)
  std::vector<std::int32_t> tree_of;       // per joint: its tree, or -1 (swept joint by joint)
  std::vector<std::int32_t> extra;         // per tree, max_extra_joints slots: joint index or -1
  std::vector<TreeRow> rows;               // per tree, max_tree_rows slots (this sub-step)
  std::vector<int> row_count, eq_count;    // per tree: its rows, the first eq_count equality rows
  std::vector<std::uint8_t> rows_inside;   // per tree: its limits, motors and brakes are among them
  std::vector<MatRows> w;                  // per tree: row q's rate per unit impulse on row r
  std::vector<MatRows> eq_inv;             // per tree: inverse of w's equality block
  std::vector<Vec6> extra_y;               // per node, max_tree_rows columns: the tree's response
  std::vector<std::int32_t> node_of_body;  // per body: its node, or -1

  /// The tree that solves joint k this sub-step (factorised), or -1: the joint is swept.
  std::int32_t solving(std::size_t k) const {
    const std::int32_t t = k < tree_of.size() ? tree_of[k] : -1;
    return t >= 0 && usable[static_cast<std::size_t>(t)] ? t : -1;
  }
  std::vector<std::int64_t> topology;  // what the forest was built from (rebuilt when it changes)
  // building scratch
  std::vector<std::int32_t> group, adjacency_start, adjacency, cursor, members, queue;
  std::vector<std::uint8_t> seen;
};

/// Finds the trees among `joints` (their a/b/b_moves/valid set) over `bodies` moving bodies.
/// Only their topology is used: call it once per loop step; it rebuilds only when that changed.
void build_forest(const std::vector<JointSolve>& joints, std::size_t bodies, JointForest& forest);

/// Factorises every tree at the rows the joints hold now (after prepare_joint); a tree whose
/// blocks are singular (redundant rows) is marked unusable and its joints are swept instead.
void factor_forest(JointForest& forest, const std::vector<JointSolve>& joints, const std::vector<SolverBody>& solver);

/// Solves tree t's joints' rows to zero rate exactly, and (rows_inside) its limits, motors and
/// brakes within their bounds: adds each joint's impulses to its lambdas and the velocity
/// changes to the bodies. Returns the largest rate removed.
double solve_tree(JointForest& forest, std::size_t tree, std::vector<JointSolve>& joints,
                  std::vector<SolverBody>& solver);

/// The position stage's correction for tree t: the pseudo-impulses (per joint, out[k]) that
/// cancel the rows' errors c[k] (per joint) along the rows the velocity solve used, its extra
/// joints included; the bodies are not moved (the caller moves them by these impulses).
void tree_correction(JointForest& forest, std::size_t tree, const std::vector<JointSolve>& joints,
                     const std::vector<Vec6>& c, std::vector<Vec6>& out);

}  // namespace tether::runtime::detail
