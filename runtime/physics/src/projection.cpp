// SPDX-License-Identifier: Apache-2.0
// The position projection: after the bodies move, what overlaps deeper than the slop is pushed
// apart without changing velocities (docs/physics.md, "Collision response").
#include <algorithm>
#include <limits>

#include "stepper.hpp"

namespace tether::runtime::detail {

void Stepper::project() {
  // position projection (no velocity change, so no energy added): push apart what overlaps
  // by more than the slop, Gauss-Seidel over a work list that only holds contacts next to
  // bodies moved in the previous sweep
  const std::size_t n = n_;
  projection_rows();
  const auto& rows = s_.proj_rows;
  const std::size_t m = rows.size();
  auto& work = s_.work;
  work.clear();
  double deepest = 0;
  Vec3 nrm;
  for (std::size_t k = 0; k < m; ++k) {
    const double sep = separation(rows[k], nrm);
    deepest = std::min(deepest, sep);
    if (sep < -2 * rows[k].slop) work.push_back(static_cast<std::uint32_t>(k));
  }
  if (!work.empty()) {
    projection_adjacency();
    s_.contact_stamp.assign(m, 0);
    s_.body_stamp.assign(n + 1, 0);
    const int iterations = std::max(0, cfg_.position_iterations);
    for (int it = 1; it <= iterations && !work.empty(); ++it) {
      const auto stamp = static_cast<std::uint32_t>(it);
      projection_sweep(stamp);
      projection_next_work(stamp);
    }
    if (report_) {
      deepest = 0;
      for (const ProjRow& r : rows) deepest = std::min(deepest, separation(r, nrm));
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!s_.projected[i]) continue;
    BodyState& st = state_.bodies[i];
    st.position_m += s_.proj_lin[i];
    if (!s_.proj_ang[i].isZero(0)) st.orientation = (rotation_quat(s_.proj_ang[i]) * st.orientation).normalized();
  }
  if (report_) report_->max_penetration_m = std::max(report_->max_penetration_m, -deepest);
}

// the projection's rows, one per contact, and the bodies' positions now; nothing projected yet
void Stepper::projection_rows() {
  const std::size_t n = n_;
  const auto& contacts = s_.contacts;
  const std::size_t m = contacts.size();
  auto& rows = s_.proj_rows;
  rows.resize(m);
  auto& pos = s_.pos_now;
  pos.resize(n + 1);
  for (std::size_t i = 0; i < n; ++i) pos[i] = state_.bodies[i].position_m;
  pos[n].setZero();
  std::fill(s_.proj_lin.begin(), s_.proj_lin.end(), Vec3::Zero());
  std::fill(s_.proj_ang.begin(), s_.proj_ang.end(), Vec3::Zero());
  std::fill(s_.projected.begin(), s_.projected.end(), 0);
  parallel(m, [&](std::size_t begin, std::size_t end, int) {
    for (std::size_t k = begin; k < end; ++k) {
      const Contact& c = contacts[k];
      ProjRow& r = rows[k];
      r.a = c.a;
      r.b = c.b;
      r.n = c.n;
      r.ra = c.ra;
      r.rb = c.rb;
      r.sep = c.sep;
      r.slop = c.slop;
      r.radsum = c.round_pair ? c.rad_a + c.rad_b : 0.0;
      const SolverBody& sa = s_.solver[static_cast<std::size_t>(c.a)];
      const SolverBody& sb = s_.solver[static_cast<std::size_t>(c.b)];
      r.k = c.round_pair ? 1.0 / (sa.inv_m + sb.inv_m) : c.kn;
    }
  });
}

// separation now, with this sub-step's motion and the projection so far
double Stepper::separation(const ProjRow& r, Vec3& nrm) const {
  const auto& pos = s_.pos_now;
  const auto a = static_cast<std::size_t>(r.a), b = static_cast<std::size_t>(r.b);
  if (r.radsum > 0) {
    // two spheres: the exact distance of the moved centres
    const Vec3 d = pos[a] + s_.proj_lin[a] - pos[b] - s_.proj_lin[b];
    const double len = d.norm();
    nrm = len > 1e-12 ? Vec3(d / len) : r.n;
    return len - r.radsum;
  }
  nrm = r.n;
  const Vec3 da = s_.disp_lin[a] + s_.proj_lin[a] + (s_.disp_ang[a] + s_.proj_ang[a]).cross(r.ra) - s_.disp_lin[b] -
                  s_.proj_lin[b] - (s_.disp_ang[b] + s_.proj_ang[b]).cross(r.rb);
  return r.sep + r.n.dot(da);
}

// body -> contacts, to find what a correction may have disturbed
void Stepper::projection_adjacency() {
  const std::size_t n = n_;
  const auto& rows = s_.proj_rows;
  const std::size_t m = rows.size();
  auto& adj_start = s_.adjacency_start;
  auto& adj = s_.adjacency;
  adj_start.assign(n + 1, 0);
  for (const ProjRow& r : rows) {
    ++adj_start[static_cast<std::size_t>(r.a) + 1];
    if (static_cast<std::size_t>(r.b) < n) ++adj_start[static_cast<std::size_t>(r.b) + 1];
  }
  for (std::size_t i = 0; i < n; ++i) adj_start[i + 1] += adj_start[i];
  adj.resize(adj_start[n]);
  s_.island_cursor.assign(adj_start.begin(), adj_start.end() - 1);
  for (std::size_t k = 0; k < m; ++k) {
    adj[s_.island_cursor[static_cast<std::size_t>(rows[k].a)]++] = static_cast<std::uint32_t>(k);
    if (static_cast<std::size_t>(rows[k].b) < n)
      adj[s_.island_cursor[static_cast<std::size_t>(rows[k].b)]++] = static_cast<std::uint32_t>(k);
  }
}

// one Gauss-Seidel sweep over the work list; the bodies it moves are stamped and listed
void Stepper::projection_sweep(std::uint32_t stamp) {
  const std::size_t n = n_;
  const auto& rows = s_.proj_rows;
  Vec3 nrm;
  s_.moved.clear();
  for (std::uint32_t k : s_.work) {
    const ProjRow& r = rows[k];
    const double sep = separation(r, nrm);
    // corrections start below -2 slop and overshoot to a gap of one slop: in a pressed
    // crowd the neighbours' corrections push back, and overshooting converges in far
    // fewer sweeps; resting contact (within the slop) is never touched
    if (sep >= -2 * r.slop) continue;
    const auto a = static_cast<std::size_t>(r.a), b = static_cast<std::size_t>(r.b);
    const SolverBody& sa = s_.solver[a];
    const SolverBody& sb = s_.solver[b];
    const Vec3 p = (-(sep - r.slop) * r.k) * nrm;
    s_.proj_lin[a] += sa.inv_m * p;
    if (r.radsum == 0) s_.proj_ang[a] += mul(sa.inv_i, r.ra.cross(p));
    if (s_.body_stamp[a] != stamp) s_.body_stamp[a] = stamp, s_.moved.push_back(static_cast<std::uint32_t>(a));
    if (b < n) {
      s_.proj_lin[b] -= sb.inv_m * p;
      if (r.radsum == 0) s_.proj_ang[b] -= mul(sb.inv_i, r.rb.cross(p));
      if (s_.body_stamp[b] != stamp) s_.body_stamp[b] = stamp, s_.moved.push_back(static_cast<std::uint32_t>(b));
    }
  }
  for (std::uint32_t body : s_.moved) s_.projected[body] = 1;
}

// the next sweep's work list: every contact of a body that moved, in contact order
void Stepper::projection_next_work(std::uint32_t stamp) {
  const auto& adj_start = s_.adjacency_start;
  const auto& adj = s_.adjacency;
  auto& next = s_.next_work;
  next.clear();
  std::uint32_t lo = std::numeric_limits<std::uint32_t>::max(), hi = 0;
  for (std::uint32_t body : s_.moved)
    for (std::uint32_t q = adj_start[body]; q < adj_start[body + 1]; ++q)
      if (s_.contact_stamp[adj[q]] != stamp) {
        s_.contact_stamp[adj[q]] = stamp;
        next.push_back(adj[q]);
        lo = std::min(lo, adj[q]);
        hi = std::max(hi, adj[q]);
      }
  if (next.size() * 16 < static_cast<std::size_t>(hi - lo + 1)) {
    std::sort(next.begin(), next.end());
  } else {
    // dense: read the stamps in order instead of sorting
    next.clear();
    for (std::uint32_t q = lo; q <= hi && lo <= hi; ++q)
      if (s_.contact_stamp[q] == stamp) next.push_back(q);
  }
  std::swap(s_.work, next);
}

}  // namespace tether::runtime::detail
