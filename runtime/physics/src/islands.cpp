// SPDX-License-Identifier: Apache-2.0
// The velocity solve: contacts and joints that share a body form an island; each island is
// solved alone (sequential impulses, joint trees exactly) until it converges
// (docs/physics.md, "Collision response", "Joints", "Threads").
#include <algorithm>
#include <cmath>

#include "stepper.hpp"

namespace tether::runtime::detail {

// passes over an island's joints per sweep when a joint tree in it keeps limit, motor or
// brake rows beside it (more than fit its Schur complement; solve_islands)
constexpr int tree_passes_with_rows = 4;

// contacts that share a body form an island; each island iterates until it converges
void Stepper::build_islands() {
  const std::size_t n = n_;
  const auto& contacts = s_.contacts;
  auto& parent = s_.parent;
  parent.resize(n);
  for (std::size_t i = 0; i < n; ++i) parent[i] = static_cast<std::int32_t>(i);
  auto find = [&parent](std::int32_t x) {
    while (parent[static_cast<std::size_t>(x)] != x) {
      parent[static_cast<std::size_t>(x)] = parent[static_cast<std::size_t>(parent[static_cast<std::size_t>(x)])];
      x = parent[static_cast<std::size_t>(x)];
    }
    return x;
  };
  auto join = [&](std::int32_t a, std::int32_t b) {
    const std::int32_t ra = find(a), rb = find(b);
    if (ra != rb) parent[static_cast<std::size_t>(std::max(ra, rb))] = std::min(ra, rb);
  };
  for (const Contact& c : contacts) {
    if (c.far || static_cast<std::size_t>(c.b) >= n) continue;  // static geometry links nothing
    join(c.a, c.b);
  }
  for (const detail::JointSolve& j : s_.joints)
    if (j.valid && j.b_moves) join(j.a, j.b);
  // number islands in order of their first contact; a counting sort keeps contact order
  // inside each; rows are packed in that order so the sweeps read memory front to back
  auto& label = s_.island_label;
  label.assign(n, -1);
  auto& of = s_.island_of;
  of.resize(contacts.size());
  std::int32_t islands = 0;
  for (std::size_t k = 0; k < contacts.size(); ++k) {
    if (contacts[k].far) {
      of[k] = -1;
      continue;
    }
    const auto root = static_cast<std::size_t>(find(contacts[k].a));
    if (label[root] < 0) label[root] = islands++;
    of[k] = label[root];
  }
  // joints join the island of their bodies (islands of joints alone come after the others)
  auto& joint_of = s_.joint_island;
  joint_of.resize(s_.joints.size());
  for (std::size_t k = 0; k < s_.joints.size(); ++k) {
    if (!s_.joints[k].valid) {
      joint_of[k] = -1;
      continue;
    }
    const auto root = static_cast<std::size_t>(find(s_.joints[k].a));
    if (label[root] < 0) label[root] = islands++;
    joint_of[k] = label[root];
  }
  auto& jstart = s_.joint_start;
  jstart.assign(static_cast<std::size_t>(islands) + 1, 0);
  for (std::int32_t i : joint_of)
    if (i >= 0) ++jstart[static_cast<std::size_t>(i) + 1];
  for (std::size_t i = 0; i < static_cast<std::size_t>(islands); ++i) jstart[i + 1] += jstart[i];
  s_.joint_cursor.assign(jstart.begin(), jstart.end() - 1);
  s_.joint_order.resize(jstart.back());
  for (std::size_t k = 0; k < joint_of.size(); ++k)
    if (joint_of[k] >= 0)
      s_.joint_order[s_.joint_cursor[static_cast<std::size_t>(joint_of[k])]++] = static_cast<std::uint32_t>(k);
  auto& start = s_.island_start;
  start.assign(static_cast<std::size_t>(islands) + 1, 0);
  for (std::int32_t i : of)
    if (i >= 0) ++start[static_cast<std::size_t>(i) + 1];
  for (std::size_t i = 0; i < static_cast<std::size_t>(islands); ++i) start[i + 1] += start[i];
  const std::size_t total = start.back();
  auto& cursor = s_.island_cursor;
  cursor.assign(start.begin(), start.end() - 1);
  s_.rows.resize(total);
  s_.row_contact.resize(total);
  for (std::size_t k = 0; k < contacts.size(); ++k) {
    if (of[k] < 0) continue;
    const std::uint32_t slot = cursor[static_cast<std::size_t>(of[k])]++;
    const Contact& c = contacts[k];
    Row& r = s_.rows[slot];
    r.a = c.a;
    r.b = c.b;
    r.n = c.n;
    r.t1 = c.t1;
    r.ra = c.ra;
    r.rb = c.rb;
    r.kn = c.kn;
    r.kt1 = c.kt1;
    r.kt2 = c.kt2;
    r.target = c.target;
    r.mu = c.mu;
    r.ln = c.ln;
    r.lt1 = c.lt1;
    r.lt2 = c.lt2;
    s_.row_contact[slot] = static_cast<std::uint32_t>(k);
  }
}

void Stepper::solve() {
  if (s_.contacts.empty() && s_.joints.empty()) {  // nothing to solve: free flight
    s_.rows.clear();
    return;
  }
  build_islands();
  const std::size_t islands = s_.island_start.size() - 1;
  const std::size_t rows = s_.rows.size();
  // islands share no body, so each is solved alone, by whichever part holds it; the parts
  // take runs of whole islands of about equal work (a joint weighs as four contact rows)
  auto& weight = s_.island_weight;
  weight.resize(islands + 1);
  for (std::size_t i = 0; i <= islands; ++i) weight[i] = s_.island_start[i] + 4 * s_.joint_start[i];
  const std::size_t total = weight.back();
  const int parts = parts_for(total);
  auto first_island = [&](int part) {
    std::size_t begin = 0, end = 0;
    part_range(total, parts, part, begin, end);
    return static_cast<std::size_t>(std::lower_bound(weight.begin(), weight.end() - 1, begin) - weight.begin());
  };
  run_parts(parts, [&](int part) {
    const std::size_t first = first_island(part);
    const std::size_t last = part + 1 == parts ? islands : first_island(part + 1);
    auto p = static_cast<std::size_t>(part);
    s_.part_solves[p] = 0;
    s_.part_sweeps[p] = 0;
    solve_islands(first, last, s_.part_solves[p], s_.part_sweeps[p]);
  });
  if (report_)
    for (int p = 0; p < parts; ++p) {
      report_->contact_solves += s_.part_solves[static_cast<std::size_t>(p)];
      report_->max_sweeps = std::max(report_->max_sweeps, s_.part_sweeps[static_cast<std::size_t>(p)]);
    }
  // impulses back to the contacts (integration, time of impact, events, warm start)
  parallel(rows, [this](std::size_t begin, std::size_t end, int) {
    for (std::size_t k = begin; k < end; ++k) {
      Contact& c = s_.contacts[s_.row_contact[k]];
      c.ln = s_.rows[k].ln;
      c.lt1 = s_.rows[k].lt1;
      c.lt2 = s_.rows[k].lt2;
    }
  });
}

void Stepper::solve_islands(std::size_t first_island, std::size_t last_island, std::uint64_t& solves,
                            std::uint32_t& sweeps) {
  const bool cold = s_.previous.empty();
  for (std::size_t isl = first_island; isl < last_island; ++isl) {
    const Island island{s_.rows.data() + s_.island_start[isl], s_.rows.data() + s_.island_start[isl + 1],
                        s_.joint_order.data() + s_.joint_start[isl], s_.joint_order.data() + s_.joint_start[isl + 1]};
    Row* const first = island.first;
    Row* const last = island.last;
    const std::uint32_t* const joint_first = island.joint_first;
    const std::uint32_t* const joint_last = island.joint_last;
    // a joint costs about one contact update per row
    std::ptrdiff_t count = last - first;
    for (const std::uint32_t* k = joint_first; k != joint_last; ++k) count += s_.joints[*k].rows.dims;
    warm_island(island);
    // cold islands may sweep up to cold_velocity_iterations times within a budget of contact
    // updates, so a small stack converges and a big crowd costs no more than a warm one
    int iterations = std::max(1, cfg_.velocity_iterations);
    if (joint_first != joint_last) iterations = std::max(iterations, cfg_.joint_velocity_iterations);
    // an island of joints alone is cold on the loop step's first sub-step only
    if (first != last ? cold : first_substep_) {
      const double affordable = static_cast<double>(cfg_.cold_solve_budget) / static_cast<double>(count);
      iterations = std::max(iterations, static_cast<int>(std::min<double>(cfg_.cold_velocity_iterations, affordable)));
    }
    const double tolerance = island_tolerance(island);
    // a tree's limits, motors and brakes are solved in it (its Schur complement) unless it has
    // too many: then they are rows of their own beside its exact solve, and a few passes over
    // the joints per sweep let the two agree
    int joint_passes = 1;
    bool exact = first == last;  // no contacts, and every joint in a tree with all its rows
    for (const std::uint32_t* k = joint_first; k != joint_last; ++k) {
      const std::int32_t t = s_.forest.solving(*k);
      const detail::JointSolve& j = s_.joints[*k];
      const bool in_tree = t >= 0;
      const bool rows = j.rows.limit || j.bound_m > 0 || j.bound_b > 0;
      const bool beside = rows && !(in_tree && s_.forest.rows_inside[static_cast<std::size_t>(t)]);
      if (in_tree && beside) joint_passes = tree_passes_with_rows;
      if (!in_tree || beside) exact = false;
    }
    // then one sweep solves the island exactly (a second would only confirm it)
    if (exact) iterations = 1;
    for (int it = 0; it < iterations; ++it) {
      double largest = 0;  // largest velocity change this sweep
      sweep_island_joints(island, joint_passes, largest);
      sweep_island_contacts(island, largest);
      solves += static_cast<std::uint64_t>(count);
      if (largest < tolerance || it + 1 == iterations) {
        sweeps = std::max(sweeps, static_cast<std::uint32_t>(it + 1));
        break;
      }
    }
  }
}

// the island's start: joints from what they ended the previous sub-step with (prepare_joints
// scaled it), contacts from what they carried over (warm_start)
void Stepper::warm_island(const Island& island) {
  auto& sol = s_.solver;
  const auto fixed = static_cast<std::int32_t>(n_);  // static geometry: never written
  for (const std::uint32_t* k = island.joint_first; k != island.joint_last; ++k) {
    const detail::JointSolve& j = s_.joints[*k];
    if (j.lambda.isZero(0) && j.lambda_l == 0 && j.lambda_m == 0 && j.lambda_b == 0) continue;
    detail::apply_joint_impulse(j, j.lambda, j.lambda_l, j.lambda_m + j.lambda_b, sol[static_cast<std::size_t>(j.a)],
                                sol[static_cast<std::size_t>(j.b)]);
  }
  for (const Row* r = island.first; r != island.last; ++r) {
    if (r->ln == 0 && r->lt1 == 0 && r->lt2 == 0) continue;
    SolverBody& a = sol[static_cast<std::size_t>(r->a)];
    const Vec3 p = r->n * r->ln + r->t1 * r->lt1 + r->n.cross(r->t1) * r->lt2;
    a.v += a.inv_m * p;
    a.w += mul(a.inv_i, r->ra.cross(p));
    if (r->b != fixed) {
      SolverBody& b = sol[static_cast<std::size_t>(r->b)];
      b.v -= b.inv_m * p;
      b.w -= mul(b.inv_i, r->rb.cross(p));
    }
  }
}

// converged when no sweep changes a velocity by more than a small part of the speeds at stake
// in this island (and never needs to be better than the absolute tolerance)
double Stepper::island_tolerance(const Island& island) const {
  const auto& sol = s_.solver;
  double scale = 0;
  for (const Row* r = island.first; r != island.last; ++r) {
    const SolverBody& a = sol[static_cast<std::size_t>(r->a)];
    const SolverBody& b = sol[static_cast<std::size_t>(r->b)];
    const double vn = (a.v + a.w.cross(r->ra) - b.v - b.w.cross(r->rb)).dot(r->n);
    scale = std::max(scale, std::abs(r->target) + std::abs(vn));
  }
  for (const std::uint32_t* k = island.joint_first; k != island.joint_last; ++k) {
    const detail::JointSolve& j = s_.joints[*k];
    const SolverBody& a = sol[static_cast<std::size_t>(j.a)];
    const SolverBody& b = sol[static_cast<std::size_t>(j.b)];
    const detail::Vec6 rate = j.rows.lin * (a.v - b.v) + j.rows.ang_a * a.w + j.rows.ang_b * b.w;
    scale = std::max(scale, rate.lpNorm<Eigen::Infinity>() + std::abs(j.target_l));
  }
  return std::max(cfg_.velocity_tolerance_m_s, cfg_.velocity_tolerance_fraction * scale);
}

// one sweep's passes over the island's joints: a tree's rows exactly when its lowest joint
// comes up, every other joint (and a tree's rows beside it) Gauss-Seidel
void Stepper::sweep_island_joints(const Island& island, int joint_passes, double& largest) {
  auto& sol = s_.solver;
  for (int pass = 0; pass < joint_passes; ++pass)
    for (const std::uint32_t* k = island.joint_first; k != island.joint_last; ++k) {
      detail::JointSolve& j = s_.joints[*k];
      // a joint of a tree: the tree's rows exactly, when its lowest joint comes up
      const std::int32_t t = s_.forest.solving(*k);
      const bool in_tree = t >= 0;
      if (in_tree && s_.forest.lead_joint[static_cast<std::size_t>(t)] == static_cast<std::int32_t>(*k))
        largest = std::max(largest, detail::solve_tree(s_.forest, static_cast<std::size_t>(t), s_.joints, sol));
      if (in_tree && s_.forest.rows_inside[static_cast<std::size_t>(t)]) continue;  // all solved in it
      largest = std::max(largest, detail::solve_joint(j, sol[static_cast<std::size_t>(j.a)],
                                                      sol[static_cast<std::size_t>(j.b)], !in_tree));
    }
}

// one sweep over the island's contact rows: the normal impulse, then Coulomb friction
void Stepper::sweep_island_contacts(const Island& island, double& largest) {
  auto& sol = s_.solver;
  const auto fixed = static_cast<std::int32_t>(n_);  // static geometry: never written
  for (Row* r = island.first; r != island.last; ++r) {
    SolverBody& a = sol[static_cast<std::size_t>(r->a)];
    SolverBody& b = sol[static_cast<std::size_t>(r->b)];
    const Vec3 vrel = a.v + a.w.cross(r->ra) - b.v - b.w.cross(r->rb);
    const double vn = vrel.dot(r->n);
    const double ln = std::max(0.0, r->ln + r->kn * (r->target - vn));
    const double dln = ln - r->ln;
    r->ln = ln;
    // Coulomb friction: a disc of radius mu * normal impulse
    const Vec3 t2 = r->n.cross(r->t1);
    double lt1 = r->lt1 - r->kt1 * vrel.dot(r->t1);
    double lt2 = r->lt2 - r->kt2 * vrel.dot(t2);
    const double limit = r->mu * ln;
    const double lt = std::sqrt(lt1 * lt1 + lt2 * lt2);
    if (lt > limit) {
      const double k = lt > 0 ? limit / lt : 0.0;
      lt1 *= k;
      lt2 *= k;
    }
    const double dlt1 = lt1 - r->lt1, dlt2 = lt2 - r->lt2;
    r->lt1 = lt1;
    r->lt2 = lt2;
    if (dln == 0 && dlt1 == 0 && dlt2 == 0) continue;
    const Vec3 p = r->n * dln + r->t1 * dlt1 + t2 * dlt2;
    a.v += a.inv_m * p;
    a.w += mul(a.inv_i, r->ra.cross(p));
    if (r->b != fixed) {
      b.v -= b.inv_m * p;
      b.w -= mul(b.inv_i, r->rb.cross(p));
    }
    largest = std::max(largest, (std::abs(dln) + std::abs(dlt1) + std::abs(dlt2)) / std::max(r->kn, 1e-300));
  }
}

}  // namespace tether::runtime::detail
