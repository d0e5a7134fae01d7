// SPDX-License-Identifier: Apache-2.0
#include "joint_tree.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <Eigen/LU>

namespace tether::runtime::detail {

namespace {

// H's block of joint j's rows against one of its bodies, into `out`: [lin, ang_a] for side a,
// [-lin, ang_b] for side b; rows past the joint's are zero. `transposed`: the block's transpose
// (a body's columns against its parent joint)
void joint_block(const JointSolve& j, std::int32_t body, bool transposed, Mat6& out) {
  const JointRows& r = j.rows;
  out.setZero();
  const bool side_a = body == j.a;
  const Mat63& ang = side_a ? r.ang_a : r.ang_b;
  const double s = side_a ? 1.0 : -1.0;
  for (int i = 0; i < r.dims; ++i)
    for (int c = 0; c < 3; ++c) {
      double& l = transposed ? out(c, i) : out(i, c);
      double& w = transposed ? out(c + 3, i) : out(i, c + 3);
      l = s * r.lin(i, c);
      w = ang(i, c);
    }
}

template <int n>
bool invert_definite_n(const Mat6& m, double sign, double min_pivot, Mat6& out) {
  // L D Lᵀ with L unit lower (no square roots: a pivot costs one division, the chain from one
  // column to the next is short); every entry read below is written first
  double l[n][n];  // L's strict lower triangle
  double a[n][n];  // a[i][k] = l[i][k] d[k]
  double r[n];     // 1 / d
  double largest = 0;
  for (int i = 0; i < n; ++i) largest = std::max(largest, sign * m(i, i));
  if (!(largest > 0)) return false;
  for (int j = 0; j < n; ++j) {
    double d = sign * m(j, j);
    for (int k = 0; k < j; ++k) d -= a[j][k] * l[j][k];
    if (!(d > min_pivot * largest)) return false;
    r[j] = 1.0 / d;
    for (int i = j + 1; i < n; ++i) {
      double v = sign * m(i, j);
      for (int k = 0; k < j; ++k) v -= l[i][k] * a[j][k];
      a[i][j] = v;
      l[i][j] = v * r[j];
    }
  }
  // L^-1 (unit lower, into a's strict lower triangle), then L^-T D^-1 L^-1
  for (int j = 0; j < n; ++j)
    for (int i = j + 1; i < n; ++i) {
      double v = -l[i][j];
      for (int k = j + 1; k < i; ++k) v -= l[i][k] * a[k][j];
      a[i][j] = v;
    }
  if constexpr (n < 6) out.setZero();
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j) {
      double v = i == j ? r[i] : r[i] * a[i][j];
      for (int k = i + 1; k < n; ++k) v += a[k][i] * r[k] * a[k][j];
      out(i, j) = out(j, i) = sign * v;
    }
  for (int k = n; k < 6; ++k) out(k, k) = -1;
  return out.allFinite();
}

// the inverse of the leading n x n block of a symmetric definite matrix (negative definite:
// sign -1) by L D Lᵀ, written out for these small sizes (one instance per size, so the
// loops have fixed bounds); the rest of `out` is -1 on the diagonal (a joint's unused rows).
// False when a pivot is not clearly positive (redundant rows): at most min_pivot of the largest
// diagonal entry. m and out may be one matrix (m is read in full before out is written).
bool invert_definite(const Mat6& m, double sign, int n, Mat6& out, double min_pivot = 1e-12) {
  switch (n) {
    case 1: return invert_definite_n<1>(m, sign, min_pivot, out);
    case 2: return invert_definite_n<2>(m, sign, min_pivot, out);
    case 3: return invert_definite_n<3>(m, sign, min_pivot, out);
    case 4: return invert_definite_n<4>(m, sign, min_pivot, out);
    case 5: return invert_definite_n<5>(m, sign, min_pivot, out);
    case 6: return invert_definite_n<6>(m, sign, min_pivot, out);
    default: return false;
  }
}

// d -= hᵀ j on the lower triangle of d's leading n x n block (n columns of h and j, their
// first k rows): D before it is inverted is symmetric, and invert_definite reads only that
// triangle, so the other half is never computed
template <int n, int k, class H, class J>
void subtract_lower(Mat6& d, const H& h, const J& j) {
  for (int c = 0; c < n; ++c)
    for (int r = c; r < n; ++r) {
      double v = 0;
      for (int i = 0; i < k; ++i) v += h(i, r) * j(i, c);
      d(r, c) -= v;
    }
}

}  // namespace

namespace {

// false if the bodies and the joints between them changed since the last build (and records them)
bool same_topology(const std::vector<JointSolve>& joints, std::size_t bodies, JointForest& f) {
  const std::size_t count = joints.size();
  bool same = f.topology.size() == 2 * count + 1 && f.topology[0] == static_cast<std::int64_t>(bodies);
  for (std::size_t k = 0; k < count && same; ++k) {
    const JointSolve& j = joints[k];
    same = f.topology[2 * k + 1] == (j.valid ? j.a : -2) && f.topology[2 * k + 2] == (j.b_moves ? j.b : -1);
  }
  if (same) return true;
  f.topology.assign(2 * count + 1, 0);
  f.topology[0] = static_cast<std::int64_t>(bodies);
  for (std::size_t k = 0; k < count; ++k) {
    f.topology[2 * k + 1] = joints[k].valid ? joints[k].a : -2;
    f.topology[2 * k + 2] = joints[k].b_moves ? joints[k].b : -1;
  }
  return false;
}

// bodies -> their joints, in joint order
void build_adjacency(const std::vector<JointSolve>& joints, std::size_t bodies, JointForest& f) {
  f.adjacency_start.assign(bodies + 1, 0);
  for (const JointSolve& j : joints) {
    if (!j.valid) continue;
    ++f.adjacency_start[static_cast<std::size_t>(j.a) + 1];
    if (j.b_moves) ++f.adjacency_start[static_cast<std::size_t>(j.b) + 1];
  }
  for (std::size_t i = 0; i < bodies; ++i) f.adjacency_start[i + 1] += f.adjacency_start[i];
  f.adjacency.resize(f.adjacency_start.back());
  f.cursor.assign(f.adjacency_start.begin(), f.adjacency_start.end() - 1);  // fill cursors
  for (std::size_t k = 0; k < joints.size(); ++k) {
    const JointSolve& j = joints[k];
    if (!j.valid) continue;
    f.adjacency[static_cast<std::size_t>(f.cursor[static_cast<std::size_t>(j.a)]++)] = static_cast<std::int32_t>(k);
    if (j.b_moves)
      f.adjacency[static_cast<std::size_t>(f.cursor[static_cast<std::size_t>(j.b)]++)] = static_cast<std::int32_t>(k);
  }
}

// the group of `root`: its bodies (in f.members, seen), its two-body joints; returns its lowest
// joint to the world, or -1
std::int32_t collect_group(const std::vector<JointSolve>& joints, std::size_t root, JointForest& f) {
  std::vector<std::int32_t>& members = f.members;
  members.assign(1, static_cast<std::int32_t>(root));
  f.seen[root] = 1;
  std::int32_t world = -1;
  for (std::size_t at = 0; at < members.size(); ++at) {
    const auto body = static_cast<std::size_t>(members[at]);
    for (auto e = f.adjacency_start[body]; e < f.adjacency_start[body + 1]; ++e) {
      const std::int32_t k = f.adjacency[static_cast<std::size_t>(e)];
      const JointSolve& j = joints[static_cast<std::size_t>(k)];
      if (!j.b_moves) {
        world = world < 0 ? k : std::min(world, k);
        continue;
      }
      const std::int32_t other = j.a == static_cast<std::int32_t>(body) ? j.b : j.a;
      if (!f.seen[static_cast<std::size_t>(other)]) {
        f.seen[static_cast<std::size_t>(other)] = 1;
        members.push_back(other);
      }
    }
  }
  return world;
}

// one group in breadth-first order (f.group: >= 0 a body, < 0 a joint -(k + 1); f.queue: each
// node's parent in that list), its extra joints and its lowest joint
struct GroupOrder {
  std::int32_t lead = -1;
  int extras = 0;
  std::int32_t extra[max_extra_joints] = {};
};

// the breadth-first order from the root: each node after its parent; a joint that would reach
// a body already placed (a loop) or the world a second time is an extra joint
GroupOrder order_group(const std::vector<JointSolve>& joints, std::size_t root, std::int32_t world, JointForest& f) {
  std::vector<std::int32_t>& id = f.group;
  std::vector<std::int32_t>& parent = f.queue;
  id.clear();
  parent.clear();
  GroupOrder g;
  auto place_joint = [&](std::int32_t k, std::int32_t up) {
    f.tree_of[static_cast<std::size_t>(k)] = -2;  // placed
    id.push_back(-(k + 1));
    parent.push_back(up);
    g.lead = g.lead < 0 ? k : std::min(g.lead, k);
  };
  auto add_extra = [&](std::int32_t k) {
    f.tree_of[static_cast<std::size_t>(k)] = -3;  // seen: extra, or swept on its own
    if (g.extras == max_extra_joints) return;
    g.extra[g.extras++] = k;
    g.lead = g.lead < 0 ? k : std::min(g.lead, k);
  };
  for (const std::int32_t m : f.members) f.seen[static_cast<std::size_t>(m)] = 2;  // not placed yet
  auto place_body = [&](std::int32_t b, std::int32_t up) {
    f.seen[static_cast<std::size_t>(b)] = 1;
    id.push_back(b);
    parent.push_back(up);
  };
  if (world >= 0) {
    place_joint(world, -1);
    place_body(joints[static_cast<std::size_t>(world)].a, 0);
  } else {
    place_body(static_cast<std::int32_t>(root), -1);
  }
  for (std::size_t at = 0; at < id.size(); ++at) {
    if (id[at] < 0) continue;
    const auto body = static_cast<std::size_t>(id[at]);
    for (auto e = f.adjacency_start[body]; e < f.adjacency_start[body + 1]; ++e) {
      const std::int32_t k = f.adjacency[static_cast<std::size_t>(e)];
      const JointSolve& j = joints[static_cast<std::size_t>(k)];
      if (f.tree_of[static_cast<std::size_t>(k)] != -1) continue;  // placed or seen
      const std::int32_t other = j.a == static_cast<std::int32_t>(body) ? j.b : j.a;
      if (!j.b_moves || f.seen[static_cast<std::size_t>(other)] == 1) {
        add_extra(k);
        continue;
      }
      place_joint(k, static_cast<std::int32_t>(at));
      place_body(other, static_cast<std::int32_t>(id.size() - 1));
    }
  }
  return g;
}

// the ordered group as a tree (leaves first); a lone joint is left to be swept on its own
void add_tree(const GroupOrder& g, JointForest& f) {
  const std::vector<std::int32_t>& id = f.group;
  const std::vector<std::int32_t>& parent = f.queue;
  int placed_joints = 0;
  for (const std::int32_t v : id) placed_joints += v < 0 ? 1 : 0;
  if (placed_joints + g.extras < 2) {  // a lone joint: its own block is exact already
    for (const std::int32_t v : id)
      if (v < 0) f.tree_of[static_cast<std::size_t>(-v - 1)] = -1;
    for (int e = 0; e < g.extras; ++e) f.tree_of[static_cast<std::size_t>(g.extra[e])] = -1;
    return;
  }
  const auto t = static_cast<std::int32_t>(f.lead_joint.size());
  const auto base = static_cast<std::int32_t>(f.nodes.size());
  const auto size = static_cast<std::int32_t>(id.size());
  // leaves first: the breadth-first list reversed
  for (std::int32_t i = size - 1; i >= 0; --i) {
    TreeNode node;
    const std::int32_t v = id[static_cast<std::size_t>(i)];
    node.body = v >= 0 ? v : -1;
    node.joint = v < 0 ? -v - 1 : -1;
    if (node.joint >= 0) f.tree_of[static_cast<std::size_t>(node.joint)] = t;
    const std::int32_t p = parent[static_cast<std::size_t>(i)];
    node.parent = p < 0 ? -1 : base + (size - 1 - p);
    f.nodes.push_back(node);
  }
  for (std::int32_t i = base; i < base + size; ++i)
    if (f.nodes[static_cast<std::size_t>(i)].body >= 0)
      f.node_of_body[static_cast<std::size_t>(f.nodes[static_cast<std::size_t>(i)].body)] = i;
  for (int e = 0; e < max_extra_joints; ++e) {
    f.extra.push_back(e < g.extras ? g.extra[e] : -1);
    if (e < g.extras) f.tree_of[static_cast<std::size_t>(g.extra[e])] = t;
  }
  f.tree_start.push_back(static_cast<std::uint32_t>(f.nodes.size()));
  f.lead_joint.push_back(g.lead);
  f.usable.push_back(0);
}

}  // namespace

void build_forest(const std::vector<JointSolve>& joints, std::size_t bodies, JointForest& f) {
  // the same bodies and joints between the same bodies as last time: the same forest
  if (same_topology(joints, bodies, f)) return;
  f.nodes.clear();
  f.tree_start.assign(1, 0);
  f.lead_joint.clear();
  f.usable.clear();
  f.extra.clear();
  f.tree_of.assign(joints.size(), -1);
  f.node_of_body.assign(bodies, -1);
  build_adjacency(joints, bodies, f);
  // each group of bodies joined through joints, found breadth first from its lowest body, is
  // a tree of body and joint nodes. Joints to the world have no child to eliminate through:
  // the group's lowest one becomes the root (its body its child); another joint to the world,
  // or one that closes a loop, is an extra joint of the tree.
  f.seen.assign(bodies, 0);
  for (std::size_t root = 0; root < bodies; ++root) {
    if (f.seen[root] || f.adjacency_start[root] == f.adjacency_start[root + 1]) continue;
    const std::int32_t world = collect_group(joints, root, f);
    add_tree(order_group(joints, root, world, f), f);
  }
  // joints seen as extras beyond the limit are swept on their own
  for (auto& t : f.tree_of)
    if (t == -3) t = -1;
  const std::size_t trees = f.lead_joint.size();
  f.rows.resize(trees * max_tree_rows);
  f.row_count.assign(trees, 0);
  f.eq_count.assign(trees, 0);
  f.rows_inside.assign(trees, 0);
  f.w.resize(trees);
  f.eq_inv.resize(trees);
  f.extra_y.resize(f.nodes.size() * max_tree_rows);
}

namespace {

// H X = B for tree t with one or more right-hand sides at once, node i's columns given by cols(i) (an
// Eigen map) and replaced by the solution: leaves to root, the blocks' inverses, root to leaves
template <class Cols>
void substitute_with(JointForest& f, std::size_t first, std::size_t last, Cols cols) {
  for (std::size_t i = first; i < last; ++i) {
    const TreeNode& node = f.nodes[i];
    if (node.parent < 0) continue;
    auto up = cols(static_cast<std::size_t>(node.parent));
    const auto x = cols(i);
    if (node.edge == 3 && node.body < 0)
      up.noalias() -= node.j_up.topRows<3>().transpose() * x.template topRows<3>();
    else if (node.edge == 3)
      up.template topRows<3>().noalias() -= node.j_up.leftCols<3>().transpose() * x;
    else
      up.noalias() -= node.j_up.transpose() * x;
  }
  for (std::size_t i = first; i < last; ++i) {
    const TreeNode& node = f.nodes[i];
    auto x = cols(i);
    if (node.dims == 3)
      x.template topRows<3>() = (node.d_inv.topLeftCorner<3, 3>() * x.template topRows<3>()).eval();
    else
      x = (node.d_inv * x).eval();
  }
  for (std::size_t i = last; i-- > first;) {
    const TreeNode& node = f.nodes[i];
    if (node.parent < 0) continue;
    const auto up = cols(static_cast<std::size_t>(node.parent));
    auto x = cols(i);
    if (node.edge == 3 && node.body < 0)
      x.template topRows<3>().noalias() -= node.j_up.topRows<3>() * up;
    else if (node.edge == 3)
      x.noalias() -= node.j_up.leftCols<3>() * up.template topRows<3>();
    else
      x.noalias() -= node.j_up * up;
  }
}

// H x = b for tree t, b given in the nodes' x and replaced by the solution
void substitute(JointForest& f, std::size_t first, std::size_t last) {
  substitute_with(f, first, last, [&](std::size_t i) { return Eigen::Map<Vec6>(f.nodes[i].x.data()); });
}

// the same for C of the rows' responses: columns r0 .. r0 + C - 1 of extra_y (a node's
// max_tree_rows Vec6 are the columns of a 6 x max_tree_rows matrix), one walk for all C
template <int C>
void substitute_columns(JointForest& f, std::size_t first, std::size_t last, int r0) {
  substitute_with(f, first, last, [&](std::size_t i) {
    return Eigen::Map<Eigen::Matrix<double, 6, C>>(f.extra_y[i * max_tree_rows + static_cast<std::size_t>(r0)].data());
  });
}

// a row's three vectors (its rate: lin·(va − vb) + ang_a·wa + ang_b·wb)
void row_vectors(const JointSolve& j, const TreeRow& row, Vec3& lin, Vec3& ang_a, Vec3& ang_b) {
  const JointRows& r = j.rows;
  switch (row.kind) {
    case TreeRow::equality:
      lin = r.lin.row(row.index).transpose();
      ang_a = r.ang_a.row(row.index).transpose();
      ang_b = r.ang_b.row(row.index).transpose();
      break;
    case TreeRow::limit: lin = r.lin_l, ang_a = r.ang_a_l, ang_b = r.ang_b_l; break;
    case TreeRow::motor:
    case TreeRow::brake: lin = r.lin_d, ang_a = r.ang_a_d, ang_b = r.ang_b_d; break;
  }
}

// calls fn(node, H block of the row against that node's body) for each body of the row
template <class F>
void row_sides(const JointForest& f, const JointSolve& j, const TreeRow& row, F&& fn) {
  Vec3 lin, ang_a, ang_b;
  row_vectors(j, row, lin, ang_a, ang_b);
  Vec6 side;
  side << lin, ang_a;
  fn(f.node_of_body[static_cast<std::size_t>(j.a)], side);
  if (!j.b_moves) return;
  side << -lin, ang_b;
  fn(f.node_of_body[static_cast<std::size_t>(j.b)], side);
}

// the rate of a row at the solver's velocities
double rate_of(const JointSolve& j, const TreeRow& row, const std::vector<SolverBody>& solver) {
  Vec3 lin, ang_a, ang_b;
  row_vectors(j, row, lin, ang_a, ang_b);
  const SolverBody& a = solver[static_cast<std::size_t>(j.a)];
  const SolverBody& b = solver[static_cast<std::size_t>(j.b)];
  return lin.dot(a.v - b.v) + ang_a.dot(a.w) + ang_b.dot(b.w);
}

// the row's rate change from the velocity changes in the nodes' x
double rate_change(const JointForest& f, const JointSolve& j, const TreeRow& row) {
  double d = 0;
  row_sides(f, j, row,
            [&](std::int32_t node, const Vec6& side) { d += side.dot(f.nodes[static_cast<std::size_t>(node)].x); });
  return d;
}

// a row's accumulated impulse, the rate it aims at and its bounds
struct RowBounds {
  double* lambda;
  double target, lo, hi;
};
RowBounds bounds_of(JointSolve& j, const TreeRow& row) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  switch (row.kind) {
    case TreeRow::equality: return {&j.lambda[row.index], 0.0, -inf, inf};
    case TreeRow::limit: return {&j.lambda_l, j.target_l, j.rows.limit_both_ways ? -inf : 0.0, inf};
    case TreeRow::motor: return {&j.lambda_m, j.motor_speed, -j.bound_m, j.bound_m};
    case TreeRow::brake: break;
  }
  return {&j.lambda_b, 0.0, -j.bound_b, j.bound_b};  // the brake
}

// tree t's rows through its Schur complement: the extra joints' rows, then (if they all fit)
// the limit, motor and brake rows of every joint of the tree; for each, the tree's response to
// a unit impulse on it (H^-1 [J_row^T; 0]) and the matrix w of their rates per unit impulse
// (false: the equality rows are redundant, the tree is swept)
bool factor_rows(JointForest& f, std::size_t t, const std::vector<JointSolve>& joints) {
  const std::size_t first = f.tree_start[t], last = f.tree_start[t + 1];
  TreeRow* rows = f.rows.data() + t * max_tree_rows;
  int n = 0;
  for (int e = 0; e < max_extra_joints; ++e) {
    const std::int32_t k = f.extra[t * max_extra_joints + static_cast<std::size_t>(e)];
    if (k < 0) continue;
    for (int i = 0; i < joints[static_cast<std::size_t>(k)].rows.dims; ++i)
      rows[n++] = {k, TreeRow::equality, static_cast<std::int8_t>(i)};
  }
  const int eq = n;
  bool inside = true;
  auto add_bounded = [&](std::int32_t k) {
    const JointSolve& j = joints[static_cast<std::size_t>(k)];
    for (const TreeRow::Kind kind : {TreeRow::limit, TreeRow::motor, TreeRow::brake}) {
      const bool has = kind == TreeRow::limit ? j.rows.limit : kind == TreeRow::motor ? j.bound_m > 0 : j.bound_b > 0;
      if (!has) continue;
      if (n == max_tree_rows) {
        inside = false;
        return;
      }
      rows[n++] = {k, kind, 0};
    }
  };
  for (std::size_t i = first; i < last && inside; ++i)
    if (f.nodes[i].joint >= 0) add_bounded(f.nodes[i].joint);
  for (int e = 0; e < max_extra_joints && inside; ++e) {
    const std::int32_t k = f.extra[t * max_extra_joints + static_cast<std::size_t>(e)];
    if (k >= 0) add_bounded(k);
  }
  if (!inside) n = eq;  // too many: the limits, motors and brakes stay rows of their own
  f.row_count[t] = n;
  f.eq_count[t] = eq;
  f.rows_inside[t] = inside ? 1 : 0;
  if (n == 0) return true;
  // the responses to a unit impulse on each row, three rows a walk through the tree
  for (std::size_t i = first; i < last; ++i)
    for (int r = 0; r < n; ++r) f.extra_y[i * max_tree_rows + static_cast<std::size_t>(r)].setZero();
  for (int r = 0; r < n; ++r)
    row_sides(f, joints[static_cast<std::size_t>(rows[r].joint)], rows[r], [&](std::int32_t node, const Vec6& side) {
      f.extra_y[static_cast<std::size_t>(node) * max_tree_rows + static_cast<std::size_t>(r)] += side;
    });
  for (int r0 = 0; r0 < n; r0 += 3) {
    switch (std::min(3, n - r0)) {
      case 1: substitute_columns<1>(f, first, last, r0); break;
      case 2: substitute_columns<2>(f, first, last, r0); break;
      default: substitute_columns<3>(f, first, last, r0); break;
    }
  }
  MatRows& w = f.w[t];
  w.setZero(n, n);
  for (int q = 0; q < n; ++q)
    row_sides(f, joints[static_cast<std::size_t>(rows[q].joint)], rows[q], [&](std::int32_t node, const Vec6& side) {
      for (int r = 0; r < n; ++r)
        w(q, r) += side.dot(f.extra_y[static_cast<std::size_t>(node) * max_tree_rows + static_cast<std::size_t>(r)]);
    });
  for (int r = eq; r < n; ++r)
    if (!(w(r, r) > 0)) return false;
  if (eq == 0) return true;
  // near a singular layout (a cable pulled straight between two fixed points) the exact answer
  // is an unbounded impulse: leave such a tree to the sweeps, which stay bounded. The block is
  // symmetric positive definite (the rows' mobility through the tree): up to 6 rows (one
  // extra joint) by the fixed-size inverse above, a pivot below 1e-8 of the largest diagonal
  // entry counting as singular (the general LU below asks for a reciprocal condition > 1e-8)
  if (eq <= 6) {
    Mat6 m = Mat6::Zero();
    m.topLeftCorner(eq, eq) = w.topLeftCorner(eq, eq);
    if (!invert_definite(m, 1.0, eq, m, 1e-8)) return false;
    f.eq_inv[t] = m.topLeftCorner(eq, eq);
    return true;
  }
  const Eigen::PartialPivLU<MatRows> lu(w.topLeftCorner(eq, eq));
  if (!(lu.rcond() > 1e-8)) return false;
  f.eq_inv[t] = lu.inverse();
  return f.eq_inv[t].allFinite();
}

// adds the rows' impulses dl through the tree's responses to the nodes' x
void add_responses(JointForest& f, std::size_t t, const VecRows& dl) {
  const std::size_t first = f.tree_start[t], last = f.tree_start[t + 1];
  const int n = f.row_count[t];
  for (std::size_t i = first; i < last; ++i)
    for (int r = 0; r < n; ++r)
      if (dl[r] != 0) f.nodes[i].x += dl[r] * f.extra_y[i * max_tree_rows + static_cast<std::size_t>(r)];
}

}  // namespace

void factor_forest(JointForest& f, const std::vector<JointSolve>& joints, const std::vector<SolverBody>& solver) {
  for (std::size_t t = 0; t + 1 < f.tree_start.size(); ++t) {
    const std::size_t first = f.tree_start[t], last = f.tree_start[t + 1];
    bool ok = true;
    // D starts as H's diagonal block (kept in d_inv until it is inverted)
    for (std::size_t i = first; i < last && ok; ++i) {
      TreeNode& node = f.nodes[i];
      if (node.body >= 0) {
        const SolverBody& b = solver[static_cast<std::size_t>(node.body)];
        const double det = b.inv_i.determinant();
        if (!(b.inv_m > 0) || !(det > 0)) {
          ok = false;
          break;
        }
        node.dims = 6;
        node.d_inv.setZero();
        node.d_inv.topLeftCorner<3, 3>() = Mat3::Identity() / b.inv_m;
        node.d_inv.bottomRightCorner<3, 3>() = b.inv_i.inverse();
        // the parent is a joint: its block against this body, transposed
        if (node.parent >= 0)
          joint_block(joints[static_cast<std::size_t>(f.nodes[static_cast<std::size_t>(node.parent)].joint)], node.body,
                      true, node.h_up);
      } else {
        const JointSolve& j = joints[static_cast<std::size_t>(node.joint)];
        node.dims = j.rows.dims;
        if (node.dims == 0) {
          ok = false;
          break;
        }
        node.d_inv.setZero();
        for (int k = node.dims; k < 6; ++k) node.d_inv(k, k) = -1;  // unused rows: decoupled
        if (node.parent >= 0) joint_block(j, f.nodes[static_cast<std::size_t>(node.parent)].body, false, node.h_up);
      }
    }
    // eliminate leaves first: D_parent -= H_up^T D^-1 H_up
    for (std::size_t i = first; i < last && ok; ++i) {
      TreeNode& node = f.nodes[i];
      if (!invert_definite(node.d_inv, node.body >= 0 ? 1.0 : -1.0, node.dims, node.d_inv)) {  // in place
        ok = false;
        break;
      }
      if (node.parent < 0) continue;
      TreeNode& up = f.nodes[static_cast<std::size_t>(node.parent)];
      node.edge = node.body >= 0 ? up.dims : node.dims;
      if (node.edge == 3 && node.body < 0) {  // a ball joint under a body: 3 x 6 blocks
        node.j_up.topRows<3>().noalias() = node.d_inv.topLeftCorner<3, 3>() * node.h_up.topRows<3>();
        subtract_lower<6, 3>(up.d_inv, node.h_up, node.j_up);
      } else if (node.edge == 3) {  // a body under a ball joint: 6 x 3 blocks
        node.j_up.leftCols<3>().noalias() = node.d_inv * node.h_up.leftCols<3>();
        subtract_lower<3, 6>(up.d_inv, node.h_up, node.j_up);
      } else {
        node.j_up.noalias() = node.d_inv * node.h_up;
        subtract_lower<6, 6>(up.d_inv, node.h_up, node.j_up);
      }
    }
    if (ok) ok = factor_rows(f, t, joints);
    f.usable[t] = ok ? 1 : 0;
  }
}

double solve_tree(JointForest& f, std::size_t t, std::vector<JointSolve>& joints, std::vector<SolverBody>& solver) {
  const std::size_t first = f.tree_start[t], last = f.tree_start[t + 1];
  double largest = 0;
  // right-hand side: no force on the bodies, minus each row's rate on the joints
  for (std::size_t i = first; i < last; ++i) {
    TreeNode& node = f.nodes[i];
    node.x.setZero();
    if (node.body >= 0) continue;
    const JointSolve& j = joints[static_cast<std::size_t>(node.joint)];
    const SolverBody& a = solver[static_cast<std::size_t>(j.a)];
    const SolverBody& b = solver[static_cast<std::size_t>(j.b)];
    const Vec6 rate = j.rows.lin * (a.v - b.v) + j.rows.ang_a * a.w + j.rows.ang_b * b.w;  // rows past dims: 0
    largest = std::max(largest, rate.lpNorm<Eigen::Infinity>());
    node.x = -rate;
  }
  substitute(f, first, last);
  // the rows through the Schur complement, at the rates the tree's solve leaves them
  const int n = f.row_count[t], eq = f.eq_count[t];
  if (n > 0) {
    const TreeRow* rows = f.rows.data() + t * max_tree_rows;
    const MatRows& w = f.w[t];
    VecRows rate(n), dl = VecRows::Zero(n);
    for (int r = 0; r < n; ++r) {
      const JointSolve& j = joints[static_cast<std::size_t>(rows[r].joint)];
      rate[r] = rate_of(j, rows[r], solver) + rate_change(f, j, rows[r]);
    }
    if (n == eq) {  // equality rows only: exactly
      for (int r = 0; r < n; ++r) largest = std::max(largest, std::abs(rate[r]));
      dl = -(f.eq_inv[t] * rate);
    } else {  // projected Gauss-Seidel, each row within its bounds (on its total impulse)
      for (int sweep = 0; sweep < 4 * max_tree_rows; ++sweep) {
        double change = 0;
        for (int r = 0; r < n; ++r) {
          const RowBounds b = bounds_of(joints[static_cast<std::size_t>(rows[r].joint)], rows[r]);
          const double before = *b.lambda + dl[r];
          const double after = std::clamp(before + (b.target - rate[r]) / w(r, r), b.lo, b.hi);
          const double d = after - before;
          if (d == 0) continue;
          dl[r] += d;
          rate += w.col(r) * d;
          change = std::max(change, std::abs(d) * w(r, r));
        }
        largest = std::max(largest, sweep == 0 ? change : 0.0);
        if (change < 1e-12) break;
      }
    }
    add_responses(f, t, dl);
    for (int r = 0; r < n; ++r) *bounds_of(joints[static_cast<std::size_t>(rows[r].joint)], rows[r]).lambda += dl[r];
  }
  // the bodies' unknowns are their velocity changes, the joints' minus their impulses
  for (std::size_t i = first; i < last; ++i) {
    const TreeNode& node = f.nodes[i];
    if (node.body >= 0) {
      SolverBody& b = solver[static_cast<std::size_t>(node.body)];
      b.v += node.x.head<3>();
      b.w += node.x.tail<3>();
    } else {
      joints[static_cast<std::size_t>(node.joint)].lambda -= node.x;
    }
  }
  return largest;
}

void tree_correction(JointForest& f, std::size_t t, const std::vector<JointSolve>& joints, const std::vector<Vec6>& c,
                     std::vector<Vec6>& out) {
  const std::size_t first = f.tree_start[t], last = f.tree_start[t + 1];
  for (std::size_t i = first; i < last; ++i) {
    TreeNode& node = f.nodes[i];
    node.x.setZero();
    if (node.joint >= 0) node.x.head(node.dims) = -c[static_cast<std::size_t>(node.joint)].head(node.dims);
  }
  substitute(f, first, last);
  // the extra joints' rows (limits are corrected joint by joint by the caller)
  const int eq = f.eq_count[t];
  const TreeRow* rows = f.rows.data() + t * max_tree_rows;
  for (int r = 0; r < eq; ++r) out[static_cast<std::size_t>(rows[r].joint)].setZero();
  if (eq > 0) {
    VecRows err(eq);
    for (int r = 0; r < eq; ++r) {
      const JointSolve& j = joints[static_cast<std::size_t>(rows[r].joint)];
      err[r] = c[static_cast<std::size_t>(rows[r].joint)][rows[r].index] + rate_change(f, j, rows[r]);
    }
    VecRows dl = VecRows::Zero(f.row_count[t]);
    dl.head(eq) = -(f.eq_inv[t] * err);
    add_responses(f, t, dl);
    for (int r = 0; r < eq; ++r) out[static_cast<std::size_t>(rows[r].joint)][rows[r].index] = dl[r];
  }
  for (std::size_t i = first; i < last; ++i) {
    const TreeNode& node = f.nodes[i];
    if (node.joint >= 0) {
      Vec6& o = out[static_cast<std::size_t>(node.joint)];
      o.setZero();
      o.head(node.dims) = -node.x.head(node.dims);
    }
  }
}

}  // namespace tether::runtime::detail
