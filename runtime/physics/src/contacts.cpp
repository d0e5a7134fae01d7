// SPDX-License-Identifier: Apache-2.0
// Contacts in a sub-step: the broad and narrow phase, each contact's lever arms, effective
// masses and time of impact, the warm start, bodies that outran their motion bound
// (continuous collision), and the contact events of the loop step (docs/physics.md,
// "Sub-steps", "Collision detection").
#include <algorithm>
#include <cmath>
#include <limits>

#include "tether/physics/terrain.hpp"
#include "stepper.hpp"

namespace tether::runtime::detail {

void Stepper::add_contacts(std::vector<Contact>& out, std::int32_t a, std::int32_t b, std::int32_t static_index,
                           std::uint64_t group, const ContactPoint* pts, int count, double restitution, double friction,
                           double size_b, double rad_b) {
  // pairs come out per body a: planes/terrain, then bodies, then bounded statics
  const std::uint64_t partner = static_cast<std::uint64_t>(group == 1 ? b : static_index);
  const std::uint64_t key = (static_cast<std::uint64_t>(a) << 32) | (group << 30) | partner;
  const BodyModel& ba = model_.bodies[static_cast<std::size_t>(a)];
  const bool b_body = static_cast<std::size_t>(b) < n_;
  const double size_a = s_.frames[static_cast<std::size_t>(a)].size;
  const double slop = std::min(cfg_.slop_m, cfg_.slop_fraction * std::min(size_a, size_b));
  for (int k = 0; k < count; ++k) {
    Contact c;
    c.a = a;
    c.b = b;
    c.static_index = static_index;
    c.pair_key = key;
    c.n = pts[k].normal;
    c.point = pts[k].point;
    c.sep = pts[k].separation_m;
    c.restitution = std::max(ba.restitution, restitution);
    c.mu = std::sqrt(ba.friction * friction);
    c.slop = slop;
    c.round_pair = b_body && ba.shape.kind == ShapeKind::sphere && rad_b > 0;
    c.rad_a = ba.shape.radius_m;
    c.rad_b = rad_b;
    out.push_back(c);
  }
}

void Stepper::find_pairs() {
  const std::size_t n = n_;
  auto& boxes = s_.boxes;
  boxes.resize(n + s_.bounded_statics.size());
  parallel(n, [this, &boxes](std::size_t begin, std::size_t end, int) {
    for (std::size_t i = begin; i < end; ++i) {
      boxes[i] = shape_aabb({&model_.bodies[i].shape, state_.bodies[i].position_m, s_.frames[i].r});
      boxes[i].inflate(s_.frames[i].motion);
    }
  });
  for (std::size_t k = 0; k < s_.bounded_statics.size(); ++k)
    boxes[n + k] = s_.static_boxes[static_cast<std::size_t>(s_.bounded_statics[k])];
  s_.broad.find_pairs(boxes, cfg_.broad_phase, s_.pairs);
}

bool Stepper::nothing_within_reach() {
  const std::size_t n = n_;
  find_pairs();
  // pairs come sorted by (a, b) with the bodies first: one whose a is a body involves a body
  if (!s_.pairs.empty() && static_cast<std::size_t>(s_.pairs.front().a) < n) return false;
  // planes and terrain, with the narrow phase's own first test
  for (std::size_t i = 0; i < n; ++i) {
    const BodyFrame& f = s_.frames[i];
    for (int k : s_.unbounded_statics) {
      const auto ks = static_cast<std::size_t>(k);
      const StaticBody& st = model_.statics[ks];
      if (st.shape.kind == ShapeKind::plane) {
        const Vec3 nw = s_.static_rot[ks] * st.shape.normal;
        const double off = nw.dot(st.position_m) + st.shape.offset_m;
        if (!(nw.dot(state_.bodies[i].position_m) - off > f.bound_r + f.motion)) return false;
      } else if (s_.boxes[i].overlaps(s_.static_boxes[ks])) {
        return false;
      }
    }
  }
  return true;
}

void Stepper::detect() {
  const std::size_t n = n_;
  find_pairs();
  s_.contacts.clear();
  // each part finds the contacts of its bodies (part 0 straight into the list, the others
  // into their own); joined in part order they are the same list, in the same order, as one
  // thread finds. The other parts' lists are then copied into place in parallel.
  const int parts = parts_for(n);
  parallel(n, [this](std::size_t begin, std::size_t end, int part) {
    auto& out = part == 0 ? s_.contacts : s_.part_contacts[static_cast<std::size_t>(part)];
    out.clear();
    narrow_phase(begin, end, out);
  });
  auto& offset = s_.part_offset;
  offset.assign(static_cast<std::size_t>(parts) + 1, s_.contacts.size());
  for (int p = 1; p < parts; ++p)
    offset[static_cast<std::size_t>(p) + 1] =
        offset[static_cast<std::size_t>(p)] + s_.part_contacts[static_cast<std::size_t>(p)].size();
  s_.contacts.resize(offset.back());
  run_parts(parts, [this, &offset](int part) {
    if (part == 0) return;
    const auto& from = s_.part_contacts[static_cast<std::size_t>(part)];
    std::copy(from.begin(), from.end(),
              s_.contacts.begin() + static_cast<std::ptrdiff_t>(offset[static_cast<std::size_t>(part)]));
  });
  if (report_) {
    report_->pairs_tested += s_.pairs.size();
    report_->contact_points += s_.contacts.size();
  }
}

// the contacts of bodies [begin, end), in body order: planes and terrain, then broad-phase
// partners (bodies, then bounded statics)
void Stepper::narrow_phase(std::size_t begin, std::size_t end, std::vector<Contact>& out) {
  const std::size_t n = n_;
  const auto& boxes = s_.boxes;
  const auto& pairs = s_.pairs;
  ContactPoint pts[max_contact_points];
  std::size_t cursor = static_cast<std::size_t>(
      std::lower_bound(pairs.begin(), pairs.end(), begin,
                       [](const BoxPair& p, std::size_t a) { return static_cast<std::size_t>(p.a) < a; }) -
      pairs.begin());
  for (std::size_t i = begin; i < end; ++i) {
    const BodyModel& bi = model_.bodies[i];
    const ShapePose pi{&bi.shape, state_.bodies[i].position_m, s_.frames[i].r};
    const double mi = s_.frames[i].motion;
    const auto ai = static_cast<std::int32_t>(i);
    // planes and terrain
    for (int k : s_.unbounded_statics) {
      const StaticBody& st = model_.statics[static_cast<std::size_t>(k)];
      int count = 0;
      if (st.shape.kind == ShapeKind::plane) {
        const Vec3 nw = s_.static_rot[static_cast<std::size_t>(k)] * st.shape.normal;
        const double off = nw.dot(st.position_m) + st.shape.offset_m;
        if (nw.dot(pi.position) - off > s_.frames[i].bound_r + mi) continue;
        count = collide(pi, {&st.shape, st.position_m, s_.static_rot[static_cast<std::size_t>(k)]}, mi, pts);
      } else {
        if (!boxes[i].overlaps(s_.static_boxes[static_cast<std::size_t>(k)])) continue;
        count = collide_heightfield(pi, model_.heightfields[static_cast<std::size_t>(st.shape.heightfield)],
                                    st.position_m, s_.static_rot[static_cast<std::size_t>(k)], mi, pts);
      }
      if (count > 0)
        add_contacts(out, ai, static_cast<std::int32_t>(n), k, 0, pts, count, st.restitution, st.friction,
                     std::numeric_limits<double>::infinity(), 0.0);
    }
    // broad-phase partners (sorted: bodies, then bounded statics)
    while (cursor < pairs.size() && static_cast<std::size_t>(pairs[cursor].a) < i) ++cursor;
    for (; cursor < pairs.size() && static_cast<std::size_t>(pairs[cursor].a) == i; ++cursor) {
      const auto j = static_cast<std::size_t>(pairs[cursor].b);
      if (j < n) {
        if (joined(i, j)) continue;
        const BodyModel& bj = model_.bodies[j];
        const ShapePose pj{&bj.shape, state_.bodies[j].position_m, s_.frames[j].r};
        const int count = collide(pi, pj, mi + s_.frames[j].motion, pts);
        if (count > 0)
          add_contacts(out, ai, static_cast<std::int32_t>(j), -1, 1, pts, count, bj.restitution, bj.friction,
                       s_.frames[j].size, bj.shape.kind == ShapeKind::sphere ? bj.shape.radius_m : 0.0);
      } else {
        const int k = s_.bounded_statics[j - n];
        const StaticBody& st = model_.statics[static_cast<std::size_t>(k)];
        const int count = collide(pi, {&st.shape, st.position_m, s_.static_rot[static_cast<std::size_t>(k)]}, mi, pts);
        if (count > 0)
          add_contacts(out, ai, static_cast<std::int32_t>(n), k, 2, pts, count, st.restitution, st.friction,
                       shape_size(st.shape), 0.0);
      }
    }
  }
}

void Stepper::prepare_contacts(std::size_t begin, std::size_t end, double h) {
  for (std::size_t k = begin; k < end; ++k) {
    Contact& c = s_.contacts[k];
    const auto a = static_cast<std::size_t>(c.a), b = static_cast<std::size_t>(c.b);
    const bool b_body = b < n_;
    const BodyFrame& fa = s_.frames[a];
    const Vec3& xa = state_.bodies[a].position_m;
    const Vec3 xb = b_body ? state_.bodies[b].position_m : Vec3(c.point);
    const Vec3 va = fa.v;
    const Vec3 vb = b_body ? s_.frames[b].v : Vec3::Zero();
    c.ra = c.point - xa;
    c.rb = c.point - xb;
    Vec3 vrel = va + fa.w.cross(c.ra);
    if (b_body) vrel -= vb + s_.frames[b].w.cross(c.rb);
    c.vn0 = vrel.dot(c.n);
    c.ln = c.lt1 = c.lt2 = 0;
    const double approach = -c.vn0;
    if (approach > cfg_.bounce_threshold_m_s && c.sep <= approach * h) {
      // an impact inside this sub-step: bounce from the time of impact on, pushing at the
      // point where the surfaces meet then (keeps angular momentum exact)
      c.toi = std::max(0.0, c.sep) / approach;
      c.target = c.restitution * approach;
      c.impact = true;
      const Vec3 shift = 0.5 * c.toi * (vb - va);
      c.ra += shift;
      if (b_body) c.rb -= shift;
    } else {
      // close the gap by the end of the sub-step at most; overlap is left to the projection
      c.toi = 0;
      c.target = -std::max(c.sep, 0.0) / h;
      c.impact = false;
    }
    if (!b_body) c.rb.setZero();
    // a gap that neither the start velocities nor the free motion close within the sub-step
    // (plus a skin) needs no constraint; the projection still watches it in case a collision
    // throws one of the bodies at it
    if (!c.impact) {
      const SolverBody& pa = s_.solver[a];
      const SolverBody& pb = s_.solver[b];
      const double vn_pred = (pa.v + pa.w.cross(c.ra) - pb.v - pb.w.cross(c.rb)).dot(c.n);
      const double closing = std::max({0.0, -c.vn0, -vn_pred}) * h;
      const double skin = 0.01 * (fa.size + (b_body ? s_.frames[b].size : fa.size));
      c.far = c.sep > closing + skin;
    } else {
      c.far = false;
    }
    // friction directions: along the sliding velocity when there is one
    const Vec3 vt = vrel - c.vn0 * c.n;
    const double vt_len = vt.norm();
    c.t1 = vt_len > 1e-9 ? Vec3(vt / vt_len) : unit_perpendicular(c.n);
    const SolverBody& sa = s_.solver[a];
    const SolverBody& sb = s_.solver[b];
    c.kn = inverse_effective_mass(sa, sb, c.ra, c.rb, c.n);
    c.kt1 = inverse_effective_mass(sa, sb, c.ra, c.rb, c.t1);
    c.kt2 = inverse_effective_mass(sa, sb, c.ra, c.rb, c.n.cross(c.t1));
  }
}

void Stepper::warm_start(double h) {
  // resting contacts start from the impulses the same contact needed one sub-step ago
  // (matched by pair and nearest point); never carried from one loop step to the next
  const auto& prev = s_.previous;
  auto& cur = s_.contacts;
  if (prev.empty() || !(s_.previous_h > 0)) return;
  const std::size_t prev_size = s_.previous_sorted;  // contacts added after detection are unordered
  const double scale = h / s_.previous_h;
  std::size_t p = 0;
  for (std::size_t i = 0; i < cur.size();) {
    const std::uint64_t key = cur[i].pair_key;
    std::size_t i_end = i + 1;
    while (i_end < cur.size() && cur[i_end].pair_key == key) ++i_end;
    while (p < prev_size && prev[p].pair_key < key) ++p;
    std::size_t p_end = p;
    while (p_end < prev_size && prev[p_end].pair_key == key) ++p_end;
    for (std::size_t k = i; k < i_end && p < p_end; ++k) {
      Contact& c = cur[k];
      if (c.impact || c.far) continue;
      const double size_a = s_.frames[static_cast<std::size_t>(c.a)].size;
      const double size_b = static_cast<std::size_t>(c.b) < n_ ? s_.frames[static_cast<std::size_t>(c.b)].size : size_a;
      double best = 0.04 * std::min(size_a, size_b) * std::min(size_a, size_b);
      const Contact* match = nullptr;
      for (std::size_t q = p; q < p_end; ++q) {
        if (prev[q].impact || prev[q].ln <= 0) continue;
        const double d = (prev[q].point - c.point).squaredNorm();
        if (d < best) best = d, match = &prev[q];
      }
      if (!match) continue;
      c.ln = match->ln * scale;
      const Vec3 f = (match->t1 * match->lt1 + match->n.cross(match->t1) * match->lt2) * scale;
      double lt1 = f.dot(c.t1), lt2 = f.dot(c.n.cross(c.t1));
      const double lt = std::sqrt(lt1 * lt1 + lt2 * lt2), limit = c.mu * c.ln;
      if (lt > limit && lt > 0) lt1 *= limit / lt, lt2 *= limit / lt;
      c.lt1 = lt1;
      c.lt2 = lt2;
    }
    i = i_end;
    p = p_end;
  }
}

double Stepper::earliest_impact(double h) const {
  double t = h;
  for (const Contact& c : s_.contacts)
    if (c.toi > std::max(cfg_.min_substep_s, 1e-6 * h) && c.toi < t) t = c.toi;
  return t;
}

void Stepper::catch_outrunners() {
  // a body knocked faster than its own motion bound may reach bodies the broad phase did not
  // pair it with: add those pairs as projection-only contacts (the velocities answer in the
  // next sub-step, where the pair is found normally)
  const std::size_t n = n_;
  auto& runners = s_.runners;
  runners.clear();
  parallel(n, [this](std::size_t begin, std::size_t end, int) {
    for (std::size_t i = begin; i < end; ++i)
      s_.moved_by[i] = s_.disp_lin[i].norm() + s_.disp_ang[i].norm() * s_.frames[i].turn_r;
  });
  for (std::size_t i = 0; i < n; ++i)
    if (s_.moved_by[i] > s_.frames[i].motion) runners.push_back(static_cast<std::int32_t>(i));
  if (runners.empty()) return;
  if (report_) report_->outrunners += static_cast<std::uint32_t>(runners.size());
  auto& swept_boxes = s_.runner_boxes;
  swept_boxes.clear();
  const std::size_t first_new = s_.contacts.size();
  auto start_pose = [&](std::size_t i) {
    return ShapePose{&model_.bodies[i].shape, s_.start[i].position_m, s_.frames[i].r};
  };
  auto swept_box = [&](std::size_t i) {
    Aabb b0 = shape_aabb(start_pose(i));
    const Aabb b1 = shape_aabb(
        {&model_.bodies[i].shape, state_.bodies[i].position_m, state_.bodies[i].orientation.toRotationMatrix()});
    b0.min = b0.min.cwiseMin(b1.min);
    b0.max = b0.max.cwiseMax(b1.max);
    b0.inflate(0.01 * s_.frames[i].size);
    return b0;
  };
  for (std::int32_t i : runners) swept_boxes.push_back(swept_box(static_cast<std::size_t>(i)));
  ContactPoint pts[max_contact_points];
  for (std::size_t r = 0; r < runners.size(); ++r) {
    const auto i = static_cast<std::size_t>(runners[r]);
    const auto ai = static_cast<std::int32_t>(i);
    const ShapePose pi = start_pose(i);
    const Aabb& swept = swept_boxes[r];
    const double reach = s_.moved_by[i] + 0.01 * s_.frames[i].size;
    s_.broad.query(s_.boxes, swept, s_.candidates);
    for (std::int32_t j : s_.candidates) {
      const auto jj = static_cast<std::size_t>(j);
      // pairs the broad phase knew may still have had no contact within the old margin: test
      // them again too (a duplicate contact is harmless to the projection)
      if (j == ai) continue;
      if (jj < n) {
        if (joined(i, jj)) continue;
        const BodyModel& bj = model_.bodies[jj];
        const int count = collide(pi, start_pose(jj), reach + std::max(s_.frames[jj].motion, s_.moved_by[jj]), pts);
        if (count > 0)
          add_contacts(s_.contacts, ai, j, -1, 1, pts, count, bj.restitution, bj.friction, s_.frames[jj].size,
                       bj.shape.kind == ShapeKind::sphere ? bj.shape.radius_m : 0.0);
      } else {
        const int k = s_.bounded_statics[jj - n];
        const StaticBody& st = model_.statics[static_cast<std::size_t>(k)];
        const int count =
            collide(pi, {&st.shape, st.position_m, s_.static_rot[static_cast<std::size_t>(k)]}, reach, pts);
        if (count > 0)
          add_contacts(s_.contacts, ai, static_cast<std::int32_t>(n), k, 2, pts, count, st.restitution, st.friction,
                       shape_size(st.shape), 0.0);
      }
    }
    for (int k : s_.unbounded_statics) {
      const StaticBody& st = model_.statics[static_cast<std::size_t>(k)];
      int count = 0;
      if (st.shape.kind == ShapeKind::plane) {
        count = collide(pi, {&st.shape, st.position_m, s_.static_rot[static_cast<std::size_t>(k)]}, reach, pts);
      } else if (swept.overlaps(s_.static_boxes[static_cast<std::size_t>(k)])) {
        count = collide_heightfield(pi, model_.heightfields[static_cast<std::size_t>(st.shape.heightfield)],
                                    st.position_m, s_.static_rot[static_cast<std::size_t>(k)], reach, pts);
      }
      if (count > 0)
        add_contacts(s_.contacts, ai, static_cast<std::int32_t>(n), k, 0, pts, count, st.restitution, st.friction,
                     std::numeric_limits<double>::infinity(), 0.0);
    }
    // two runners may meet where neither was expected
    for (std::size_t q = r + 1; q < runners.size(); ++q) {
      const auto j = static_cast<std::size_t>(runners[q]);
      if (!swept.overlaps(swept_boxes[q]) || joined(i, j)) continue;
      const BodyModel& bj = model_.bodies[j];
      const int count = collide(pi, start_pose(j), reach + s_.moved_by[j], pts);
      if (count > 0)
        add_contacts(s_.contacts, ai, runners[q], -1, 1, pts, count, bj.restitution, bj.friction, s_.frames[j].size,
                     bj.shape.kind == ShapeKind::sphere ? bj.shape.radius_m : 0.0);
    }
  }
  // what the projection needs of the new contacts
  for (std::size_t k = first_new; k < s_.contacts.size(); ++k) {
    Contact& c = s_.contacts[k];
    const auto a = static_cast<std::size_t>(c.a), b = static_cast<std::size_t>(c.b);
    c.far = true;
    c.ra = c.point - s_.start[a].position_m;
    c.rb = b < n ? Vec3(c.point - s_.start[b].position_m) : Vec3::Zero();
    c.kn = inverse_effective_mass(s_.solver[a], s_.solver[b], c.ra, c.rb, c.n);
  }
}

void Stepper::record_events() {
  for (const Contact& c : s_.contacts) {
    if (c.ln <= 0) continue;
    const bool b_body = static_cast<std::size_t>(c.b) < n_;
    ContactEvent e;
    e.body_a = c.a;
    e.body_b = b_body ? c.b : -1;
    e.static_index = b_body ? -1 : c.static_index;
    e.point_m = c.point;
    e.normal = c.n;
    e.impulse_n_s = c.n * c.ln + c.t1 * c.lt1 + c.n.cross(c.t1) * c.lt2;
    s_.events.push_back({e, c.ln});
  }
}

void Stepper::finish_events() {
  auto& ev = s_.events;
  auto key_less = [](const PhysicsScratch::Impl::Event& p, const PhysicsScratch::Impl::Event& q) {
    if (p.e.body_a != q.e.body_a) return p.e.body_a < q.e.body_a;
    if (p.e.body_b != q.e.body_b) return p.e.body_b < q.e.body_b;
    return p.e.static_index < q.e.static_index;
  };
  // stable order without std::stable_sort's buffer: insertion sort keeps equal keys in
  // sub-step order and is linear on the already-sorted runs each sub-step produces
  for (std::size_t i = 1; i < ev.size(); ++i) {
    const auto x = ev[i];
    std::size_t j = i;
    while (j > 0 && key_less(x, ev[j - 1])) {
      ev[j] = ev[j - 1];
      --j;
    }
    ev[j] = x;
  }
  auto& out = report_->contacts;
  out.clear();
  report_->contacts_dropped = 0;
  for (std::size_t i = 0; i < ev.size();) {
    std::size_t j = i;
    ContactEvent merged = ev[i].e;
    Vec3 point_sum = Vec3::Zero();
    double weight = 0;
    merged.impulse_n_s.setZero();
    for (; j < ev.size() && !key_less(ev[i], ev[j]) && !key_less(ev[j], ev[i]); ++j) {
      merged.impulse_n_s += ev[j].e.impulse_n_s;
      point_sum += ev[j].weight * ev[j].e.point_m;
      weight += ev[j].weight;
      merged.normal = ev[j].e.normal;
    }
    if (weight > 0) merged.point_m = point_sum / weight;
    if (out.size() < out.capacity())
      out.push_back(merged);
    else
      ++report_->contacts_dropped;
    i = j;
  }
}

}  // namespace tether::runtime::detail
