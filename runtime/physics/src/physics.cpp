// SPDX-License-Identifier: Apache-2.0
// The step: set-up, forces and frames, the sub-step rule, and the loop over sub-steps that
// runs each stage in turn (stepper.hpp says which file holds which stage).
#include "tether/physics/physics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tether/physics/terrain.hpp"
#include "stepper.hpp"

namespace tether::runtime {

PhysicsScratch::PhysicsScratch() : impl(std::make_unique<Impl>()) {}
PhysicsScratch::~PhysicsScratch() = default;
PhysicsScratch::PhysicsScratch(PhysicsScratch&&) noexcept = default;
PhysicsScratch& PhysicsScratch::operator=(PhysicsScratch&&) noexcept = default;

void body_forces(const WorldModel& model, const BodyModel& body, const BodyState& s, const BodyWrench& input,
                 Vec3& force, Vec3& torque) {
  detail::body_forces(model, body, s, s.orientation.toRotationMatrix(), input, force, torque);
}

}  // namespace tether::runtime

namespace tether::runtime::detail {

void body_forces(const WorldModel& model, const BodyModel& body, const BodyState& s, const Mat3& r,
                 const BodyWrench& input, Vec3& force, Vec3& torque) {
  force = body.mass_kg * model.gravity_m_s2;
  torque.setZero();
  if (model.water.present) {
    const double f = submerged_fraction(body.shape, s.orientation, s.position_m.z(), model.water.surface_z_m);
    if (f > 0) {
      // buoyancy acts at the centre of buoyancy, opposite to gravity
      const Vec3 buoyancy = -model.water.density_kg_m3 * body.volume_m3 * f * model.gravity_m_s2;
      force += buoyancy;
      torque += (r * body.centre_of_buoyancy_m).cross(buoyancy);
      // damping acts on motion relative to the water, in the body frame, scaled by wetness
      const Vec3 v_b = r.transpose() * (s.linear_momentum * body.inv_mass - model.water.current_m_s);
      const Vec3 w_b = body.inv_inertia_body * (r.transpose() * s.angular_momentum);
      const Damping& d = body.damping;
      const Vec3 fd = -f * (d.linear.cwiseProduct(v_b) + d.quadratic.cwiseProduct(v_b.cwiseAbs()).cwiseProduct(v_b));
      const Vec3 td = -f * (d.angular_linear.cwiseProduct(w_b) +
                            d.angular_quadratic.cwiseProduct(w_b.cwiseAbs()).cwiseProduct(w_b));
      force += r * fd;
      torque += r * td;
    }
  }
  force += input.force_world_n + r * input.force_body_n;
  torque += input.torque_world_nm + r * input.torque_body_nm;
}

}  // namespace tether::runtime::detail

namespace tether::runtime::detail {

namespace {

bool finite(const BodyState& b) {
  return b.position_m.allFinite() && b.orientation.coeffs().allFinite() && b.linear_momentum.allFinite() &&
         b.angular_momentum.allFinite();
}

}  // namespace

// below this many items per part a hand-off costs more than it saves
constexpr std::size_t min_items_per_part = 64;

int Stepper::parts_for(std::size_t count) const {
  if (threads_ <= 1) return 1;
  return static_cast<int>(
      std::min<std::size_t>(static_cast<std::size_t>(threads_), std::max<std::size_t>(1, count / min_items_per_part)));
}

void Stepper::setup() {
  const std::size_t n = n_;
  threads_ = std::max(1, model_.threads);
  if (threads_ > 1 && (!s_.pool || s_.pool->threads() != threads_)) s_.pool = std::make_unique<WorkerPool>(threads_);
  const auto t = static_cast<std::size_t>(threads_);
  s_.part_contacts.resize(t);
  s_.part_min.resize(t);
  s_.part_solves.resize(t);
  s_.part_sweeps.resize(t);
  s_.part_flag.resize(t);
  s_.frames.resize(n);
  s_.solver.resize(n + 1);
  s_.solver[n] = SolverBody{};  // static geometry: never moves, infinite mass
  s_.start.resize(n);
  s_.corr_lin.resize(n);
  s_.corr_ang.resize(n);
  // one more than the bodies: the last entry stands for static geometry (never moves)
  s_.disp_lin.assign(n + 1, Vec3::Zero());
  s_.disp_ang.assign(n + 1, Vec3::Zero());
  s_.proj_lin.resize(n + 1);
  s_.proj_ang.resize(n + 1);
  s_.in_contact.resize(n);
  s_.const_force.resize(n);
  s_.isotropic.resize(n);
  s_.projected.resize(n);
  s_.moved_by.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const BodyModel& b = model_.bodies[i];
    const BodyWrench& in = input(i);
    // forces that do not depend on the state allow a closed-form free flight
    s_.const_force[i] = !model_.water.present && in.force_body_n.isZero(0) && in.torque_body_nm.isZero(0);
    const Mat3& ii = b.inv_inertia_body;
    s_.isotropic[i] = ii(0, 1) == 0 && ii(0, 2) == 0 && ii(1, 0) == 0 && ii(1, 2) == 0 && ii(2, 0) == 0 &&
                      ii(2, 1) == 0 && ii(0, 0) == ii(1, 1) && ii(1, 1) == ii(2, 2);
  }
  s_.bounded_statics.clear();
  s_.unbounded_statics.clear();
  s_.static_boxes.resize(model_.statics.size());
  s_.static_rot.resize(model_.statics.size());
  for (std::size_t k = 0; k < model_.statics.size(); ++k) {
    const StaticBody& st = model_.statics[k];
    s_.static_rot[k] = st.orientation.toRotationMatrix();
    if (st.shape.kind == ShapeKind::plane) {
      s_.static_boxes[k] = Aabb::infinite();
      s_.unbounded_statics.push_back(static_cast<int>(k));
    } else if (st.shape.kind == ShapeKind::heightfield) {
      if (st.shape.heightfield < 0 || static_cast<std::size_t>(st.shape.heightfield) >= model_.heightfields.size())
        continue;  // a dangling terrain reference collides with nothing
      s_.static_boxes[k] = heightfield_aabb(model_.heightfields[static_cast<std::size_t>(st.shape.heightfield)],
                                            st.position_m, s_.static_rot[k]);
      s_.unbounded_statics.push_back(static_cast<int>(k));
    } else {
      s_.static_boxes[k] = shape_aabb({&st.shape, st.position_m, s_.static_rot[k]});
      s_.bounded_statics.push_back(static_cast<int>(k));
    }
  }
  setup_joints();
  try_free_ = model_.free_substep_s > model_.max_substep_s && model_.joints.empty();
  collect_events_ = report_ && report_->contacts.capacity() > 0;
  s_.events.clear();
  s_.previous.clear();
  s_.previous_h = 0;
  s_.previous_sorted = 0;
}

void Stepper::frames() {
  parallel(n_, [this](std::size_t begin, std::size_t end, int) {
    for (std::size_t i = begin; i < end; ++i) {
      const BodyModel& b = model_.bodies[i];
      const BodyState& st = state_.bodies[i];
      BodyFrame& f = s_.frames[i];
      f.r = st.orientation.toRotationMatrix();
      f.inv_inertia = s_.isotropic[i] ? b.inv_inertia_body : Mat3(f.r * b.inv_inertia_body * f.r.transpose());
      f.v = st.linear_momentum * b.inv_mass;
      f.w = f.inv_inertia * st.angular_momentum;
      body_forces(model_, b, st, f.r, input(i), f.force, f.torque);
      f.size = shape_size(b.shape);
      f.bound_r = shape_bounding_radius(b.shape);
      // a spinning sphere occupies the same space: only its centre's motion counts
      f.turn_r = b.shape.kind == ShapeKind::sphere ? 0.0 : f.bound_r;
      f.speed = f.v.norm() + f.w.norm() * f.turn_r;
      f.bound_accel(b.inv_mass);
    }
  });
}

double Stepper::motion_limit() {
  // no surface point moves more than a fraction of the body's size: speed*h + accel*h^2/2 <= x
  auto shortest = [this](std::size_t begin, std::size_t end, double limit) {
    for (std::size_t i = begin; i < end; ++i) {
      const BodyFrame& f = s_.frames[i];
      const double x = cfg_.max_motion_fraction * f.size;
      const double den = f.speed + std::sqrt(f.speed * f.speed + 2.0 * f.accel * x);
      if (den > 0) limit = std::min(limit, 2.0 * x / den);
    }
    return limit;
  };
  // a minimum is exact, so the parts' minima give the same limit in any split
  const double none = std::numeric_limits<double>::infinity();
  parallel(n_, [&](std::size_t begin, std::size_t end, int part) {
    s_.part_min[static_cast<std::size_t>(part)] = shortest(begin, end, none);
  });
  double limit = none;
  for (int p = 0; p < parts_for(n_); ++p) limit = std::min(limit, s_.part_min[static_cast<std::size_t>(p)]);
  return limit;
}

double Stepper::choose_substep(double remaining, double cap, double motion_limit) const {
  double h = std::min(std::min(remaining, cap), motion_limit);
  h = std::min(std::max(h, cfg_.min_substep_s), remaining);
  // equal sub-steps over what is left, so the last one is not a sliver
  const double count = std::ceil(remaining / h - 1e-9);
  return count > 1 ? remaining / count : remaining;
}

// RK4 stays within a few parts in 10^4 of the exact solution per sub-step while h times the
// fastest rate of the forces is at most this
constexpr double free_rate_fraction = 0.25;

double Stepper::free_cap() {
  // the fastest rate (1/s) at which the water's forces change a body's motion: damping's
  // derivative along each body axis, the buoyancy's righting stiffness, the spin itself; a
  // body crossing the surface (buoyancy changing with depth) allows no free sub-step
  auto fastest = [this](std::size_t begin, std::size_t end, double rate) {
    for (std::size_t i = begin; i < end; ++i) {
      const BodyModel& b = model_.bodies[i];
      const BodyFrame& f = s_.frames[i];
      rate = std::max(rate, f.w.norm());
      if (!model_.water.present) continue;
      const BodyState& st = state_.bodies[i];
      const double wet = submerged_fraction(b.shape, st.orientation, st.position_m.z(), model_.water.surface_z_m);
      if (wet > 0 && wet < 1) return std::numeric_limits<double>::infinity();
      if (wet == 0) continue;
      // per axis, the inverse inertia's absolute row sum (bounds its eigenvalues' reach)
      const Vec3 inv_i = b.inv_inertia_body.cwiseAbs().rowwise().sum();
      const Vec3 v_b = f.r.transpose() * (f.v - model_.water.current_m_s);
      const Vec3 w_b = f.r.transpose() * f.w;
      const Damping& d = b.damping;
      const double lin = (d.linear + 2.0 * d.quadratic.cwiseProduct(v_b.cwiseAbs())).maxCoeff() * b.inv_mass;
      const double ang =
          (d.angular_linear + 2.0 * d.angular_quadratic.cwiseProduct(w_b.cwiseAbs())).cwiseProduct(inv_i).maxCoeff();
      const double buoyancy = model_.water.density_kg_m3 * b.volume_m3 * model_.gravity_m_s2.norm();
      const double righting = std::sqrt(buoyancy * b.centre_of_buoyancy_m.norm() * inv_i.maxCoeff());
      rate = std::max({rate, lin, ang, righting});
    }
    return rate;
  };
  // a maximum is exact, so the parts' maxima give the same cap in any split
  parallel(n_, [&](std::size_t begin, std::size_t end, int part) {
    s_.part_min[static_cast<std::size_t>(part)] = fastest(begin, end, 0.0);
  });
  double rate = 0;
  for (int p = 0; p < parts_for(n_); ++p) rate = std::max(rate, s_.part_min[static_cast<std::size_t>(p)]);
  return rate > 0 ? std::min(model_.free_substep_s, free_rate_fraction / rate) : model_.free_substep_s;
}

void Stepper::set_motion(double h) {
  parallel(n_, [this, h](std::size_t begin, std::size_t end, int) {
    for (std::size_t i = begin; i < end; ++i) {
      BodyFrame& f = s_.frames[i];
      // a thin skin keeps resting contacts in the set while they sit still
      const double skin = 0.01 * f.size;
      f.motion = f.speed * h + 0.5 * f.accel * h * h + skin;
    }
  });
}

void Stepper::prepare(double h) {
  // velocities the solver starts from: free motion over the sub-step (explicit forces)
  parallel(n_, [this, h](std::size_t begin, std::size_t end, int) {
    for (std::size_t i = begin; i < end; ++i) {
      const BodyFrame& f = s_.frames[i];
      SolverBody& sb = s_.solver[i];
      sb.inv_m = model_.bodies[i].inv_mass;
      sb.inv_i = f.inv_inertia;
      sb.v = f.v + (h * sb.inv_m) * f.force;
      sb.w = f.w + h * (f.inv_inertia * f.torque);
    }
  });
  parallel(s_.contacts.size(), [this, h](std::size_t begin, std::size_t end, int) { prepare_contacts(begin, end, h); });
  warm_start(h);
  prepare_joints(h);
}

bool Stepper::all_finite() {
  const std::size_t n = state_.bodies.size();
  parallel(n, [this](std::size_t begin, std::size_t end, int part) {
    std::uint8_t ok = 1;
    for (std::size_t i = begin; i < end && ok; ++i) ok = finite(state_.bodies[i]) ? 1 : 0;
    s_.part_flag[static_cast<std::size_t>(part)] = ok;
  });
  for (int p = 0; p < parts_for(n); ++p)
    if (!s_.part_flag[static_cast<std::size_t>(p)]) return false;
  return true;
}

StepStatus Stepper::run(double dt_s) {
  if (report_) {  // a fresh report that keeps its lists' capacity (setup reads it)
    auto keep = std::move(report_->contacts);
    auto keep_loads = std::move(report_->joint_loads);
    *report_ = StepReport{};
    report_->contacts = std::move(keep);
    report_->contacts.clear();
    report_->joint_loads = std::move(keep_loads);
    report_->joint_loads.clear();
  }
  setup();
  double remaining = dt_s;
  std::uint32_t substeps = 0, cuts = 0;
  while (remaining > 0) {
    frames();
    joint_springs();
    double h;
    bool free = false;
    if (substeps + 1 >= cfg_.max_substeps) {
      h = remaining;
      if (report_) report_->substep_limit_hit = true;
    } else {
      const double limit = motion_limit();
      h = choose_substep(remaining, model_.max_substep_s, limit);
      if (try_free_ && h < remaining) {
        // a longer sub-step while nothing is within its reach (docs/physics.md, "Sub-steps");
        // once something is, this step keeps to max_substep_s
        const double cap = free_cap();
        const double longer = cap > h ? choose_substep(remaining, cap, limit) : 0.0;
        if (longer > h) {
          set_motion(longer);
          free = nothing_within_reach();

          if (free) h = longer;
        }
        try_free_ = free;
      }
    }
    std::copy_n(state_.bodies.begin(), n_, s_.start.begin());
    if (free) {
      s_.contacts.clear();  // the trial's broad phase found nothing for this h
    } else {
      set_motion(h);
      detect();
    }
    prepare(h);
    if (cuts < cfg_.max_toi_cuts) {
      // end this sub-step exactly at the earliest impact
      const double t = earliest_impact(h);
      if (t < h) {
        h = t;
        ++cuts;
        prepare(h);
      }
    }
    solve();
    integrate(h);
    h_ = h;
    correct_joints();
    s_.sorted_contacts = s_.contacts.size();
    catch_outrunners();
    project();
    if (collect_events_) record_events();
    std::swap(s_.previous, s_.contacts);
    s_.previous_sorted = s_.sorted_contacts;
    s_.previous_h = h;
    if (!all_finite()) return StepStatus::numerical_fault;
    ++substeps;
    first_substep_ = false;
    remaining -= h;
    if (remaining < 1e-12 * dt_s) remaining = 0;
  }
  // time advances by the loop period exactly, never by accumulated sub-steps
  state_.time_ns += static_cast<std::int64_t>(std::llround(dt_s * 1e9));
  ++state_.step;
  if (report_) {
    report_->substeps = substeps;
    report_->toi_cuts = cuts;
    if (collect_events_) finish_events();
  }
  return StepStatus::ok;
}

}  // namespace tether::runtime::detail

namespace tether::runtime {

StepStatus step(const WorldModel& model, WorldState& state, const StepInputs& inputs, double dt_s, StepReport* report,
                PhysicsScratch& scratch) {
  if (!(dt_s > 0)) {
    ++state.step;
    return StepStatus::ok;
  }
  detail::Stepper stepper(model, state, inputs, *scratch.impl, report);
  return stepper.run(dt_s);
}

StepStatus step(const WorldModel& model, WorldState& state, const StepInputs& inputs, double dt_s, StepReport* report) {
  thread_local PhysicsScratch scratch;
  return step(model, state, inputs, dt_s, report, scratch);
}

}  // namespace tether::runtime
