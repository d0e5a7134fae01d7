// SPDX-License-Identifier: Apache-2.0
#include "tether/physics/physics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tether/physics/broadphase.hpp"
#include "tether/physics/collision.hpp"
#include "tether/physics/terrain.hpp"
#include "tether/physics/workers.hpp"
#include "joint_rows.hpp"
#include "joint_tree.hpp"
#include "solver_body.hpp"

namespace tether::runtime {

namespace {

using detail::mul;
using detail::rotation_quat;
using detail::rotation_vector;
using detail::SolverBody;
using detail::unit_perpendicular;

// ---- free flight: RK4 over the full force model ------------------------------------------

// time derivative of one body's state; the quaternion as a 4-vector (w, x, y, z)
struct Derivative {
  Vec3 velocity;
  Eigen::Vector4d orientation_rate;
  Vec3 force;
  Vec3 torque;
};

Derivative evaluate(const WorldModel& model, const BodyModel& body, const BodyState& s, const BodyWrench& input) {
  Derivative d;
  d.velocity = s.linear_momentum * body.inv_mass;
  const Mat3 r = s.orientation.toRotationMatrix();
  const Vec3 w = r * (body.inv_inertia_body * (r.transpose() * s.angular_momentum));
  // dq/dt = 1/2 (0, w) q
  const Quat wq(0, w.x(), w.y(), w.z());
  const Quat qdot = wq * s.orientation;
  d.orientation_rate << 0.5 * qdot.w(), 0.5 * qdot.x(), 0.5 * qdot.y(), 0.5 * qdot.z();
  body_forces(model, body, s, input, d.force, d.torque);
  return d;
}

BodyState offset(const BodyState& s, const Derivative& d, double h) {
  BodyState out;
  out.position_m = s.position_m + h * d.velocity;
  Eigen::Vector4d q(s.orientation.w(), s.orientation.x(), s.orientation.y(), s.orientation.z());
  q += h * d.orientation_rate;
  out.orientation = Quat(q[0], q[1], q[2], q[3]).normalized();
  out.linear_momentum = s.linear_momentum + h * d.force;
  out.angular_momentum = s.angular_momentum + h * d.torque;
  return out;
}

// k1 from what the sub-step's frame already holds for the same state: the rotation matrix and
// the net force and torque (the same operations evaluate() would repeat, so the same bits)
Derivative first_derivative(const BodyModel& body, const BodyState& s, const Mat3& r, const Vec3& force,
                            const Vec3& torque) {
  Derivative d;
  d.velocity = s.linear_momentum * body.inv_mass;
  const Vec3 w = r * (body.inv_inertia_body * (r.transpose() * s.angular_momentum));
  const Quat wq(0, w.x(), w.y(), w.z());
  const Quat qdot = wq * s.orientation;
  d.orientation_rate << 0.5 * qdot.w(), 0.5 * qdot.x(), 0.5 * qdot.y(), 0.5 * qdot.z();
  d.force = force;
  d.torque = torque;
  return d;
}

void rk4(const WorldModel& model, const BodyModel& body, BodyState& s, const BodyWrench& input, double h,
         const Derivative& k1) {
  const Derivative k2 = evaluate(model, body, offset(s, k1, 0.5 * h), input);
  const Derivative k3 = evaluate(model, body, offset(s, k2, 0.5 * h), input);
  const Derivative k4 = evaluate(model, body, offset(s, k3, h), input);
  const double h6 = h / 6.0;
  s.position_m += h6 * (k1.velocity + 2.0 * k2.velocity + 2.0 * k3.velocity + k4.velocity);
  Eigen::Vector4d q(s.orientation.w(), s.orientation.x(), s.orientation.y(), s.orientation.z());
  q += h6 * (k1.orientation_rate + 2.0 * k2.orientation_rate + 2.0 * k3.orientation_rate + k4.orientation_rate);
  s.orientation = Quat(q[0], q[1], q[2], q[3]).normalized();
  s.linear_momentum += h6 * (k1.force + 2.0 * k2.force + 2.0 * k3.force + k4.force);
  s.angular_momentum += h6 * (k1.torque + 2.0 * k2.torque + 2.0 * k3.torque + k4.torque);
}

bool finite(const BodyState& b) {
  return b.position_m.allFinite() && b.orientation.coeffs().allFinite() && b.linear_momentum.allFinite() &&
         b.angular_momentum.allFinite();
}

// ---- per sub-step data -------------------------------------------------------------------

struct BodyFrame {
  Mat3 r;            // orientation at the sub-step start
  Mat3 inv_inertia;  // world frame
  Vec3 v, w;         // velocities at the start
  Vec3 force, torque;
  double size = 0;
  double bound_r = 0;
  double turn_r = 0;  // lever arm that turning moves the surface by (0 for a sphere)
  double speed = 0;   // fastest surface point
  double accel = 0;   // bound on surface-point acceleration
  double motion = 0;  // bound on surface motion in this sub-step (+ skin): collision margin

  void bound_accel(double inv_mass) { accel = force.norm() * inv_mass + (inv_inertia * torque).norm() * turn_r; }
};

// the part of a contact the position projection reads
struct ProjRow {
  std::int32_t a = 0, b = 0;
  double sep = 0, slop = 0, k = 0;
  double radsum = 0;  // > 0: two spheres, exact distance of the centres
  Vec3 n = Vec3::UnitZ(), ra = Vec3::Zero(), rb = Vec3::Zero();
};

// the part of a contact the solver sweeps over, packed in island order
struct Row {
  std::int32_t a = 0, b = 0;
  Vec3 n = Vec3::UnitZ(), t1 = Vec3::UnitX(), ra = Vec3::Zero(), rb = Vec3::Zero();
  double kn = 0, kt1 = 0, kt2 = 0, target = 0, mu = 0;
  double ln = 0, lt1 = 0, lt2 = 0;
};

struct Contact {
  std::int32_t a = 0;
  std::int32_t b = 0;  // solver index; the last one stands for static geometry
  std::int32_t static_index = -1;
  bool round_pair = false;     // two spheres: projection uses the exact distance
  bool impact = false;         // bounces in this sub-step (not warm-started)
  bool far = false;            // a gap nothing closes in this sub-step: projection only
  std::uint64_t pair_key = 0;  // (a, kind of partner, partner): the order contacts come in
  Vec3 n = Vec3::UnitZ(), t1 = Vec3::UnitX(), ra = Vec3::Zero(), rb = Vec3::Zero(), point = Vec3::Zero();
  double kn = 0, kt1 = 0, kt2 = 0;
  double target = 0;  // lowest normal velocity allowed after the solve
  double ln = 0, lt1 = 0, lt2 = 0;
  double mu = 0, restitution = 0;
  double sep = 0;
  double toi = 0;  // impact time inside the sub-step (0: at the start / none)
  double slop = 0;
  double rad_a = 0, rad_b = 0;
  double vn0 = 0;  // normal velocity at the sub-step start
};

double inverse_effective_mass(const SolverBody& a, const SolverBody& b, const Vec3& ra, const Vec3& rb, const Vec3& d) {
  const Vec3 ca = ra.cross(d), cb = rb.cross(d);
  const double k = a.inv_m + b.inv_m + ca.dot(mul(a.inv_i, ca)) + cb.dot(mul(b.inv_i, cb));
  return k > 1e-300 ? 1.0 / k : 0.0;
}

}  // namespace

struct PhysicsScratch::Impl {
  std::vector<BodyFrame> frames;
  std::vector<SolverBody> solver;
  std::vector<BodyState> start;
  std::vector<Aabb> boxes;
  std::vector<BoxPair> pairs;
  std::vector<int> bounded_statics;    // in the broad phase, after the bodies
  std::vector<int> unbounded_statics;  // planes and heightfields: tested per body
  std::vector<Aabb> static_boxes;
  std::vector<Mat3> static_rot;
  BroadPhase broad;
  std::vector<Contact> contacts;
  std::vector<Contact> previous;  // the last sub-step's contacts (warm start), this step only
  double previous_h = 0;
  std::vector<Vec3> corr_lin, corr_ang;  // time-of-impact position corrections
  std::vector<Vec3> disp_lin, disp_ang;  // motion over the sub-step
  std::vector<Vec3> proj_lin, proj_ang;  // position projection
  std::vector<std::uint8_t> in_contact, const_force, isotropic, projected;
  std::vector<double> moved_by;
  std::vector<std::int32_t> runners, candidates;
  std::vector<Aabb> runner_boxes;
  std::size_t sorted_contacts = 0, previous_sorted = 0;
  std::vector<std::int32_t> parent, island_label, island_of;
  std::vector<std::uint32_t> island_start, island_order, island_cursor;
  std::vector<Row> rows;  // solver rows in island order
  std::vector<ProjRow> proj_rows;
  std::vector<Vec3> pos_now;
  std::vector<std::uint32_t> row_contact;                 // contact index of each row
  std::vector<std::uint32_t> adjacency_start, adjacency;  // body -> contacts (projection)
  std::vector<std::uint32_t> work, next_work, contact_stamp, body_stamp, moved;
  struct Event {
    ContactEvent e;
    double weight;
  };
  std::vector<Event> events;
  // threads (docs/physics.md, "Threads"): per-part results, combined in part order
  std::unique_ptr<WorkerPool> pool;
  std::vector<std::vector<Contact>> part_contacts;  // [0] unused: part 0 writes to contacts
  std::vector<std::size_t> part_offset;
  std::vector<double> part_min;
  std::vector<std::uint64_t> part_solves;
  std::vector<std::uint32_t> part_sweeps;
  std::vector<std::uint8_t> part_flag;
  // joints (docs/physics.md, "Joints"): one solve per joint, grouped by island
  std::vector<detail::JointSolve> joints;
  std::vector<std::uint8_t> jointed;        // per body: held by a joint (symplectic path)
  std::vector<std::uint32_t> jointed_bodies;  // the bodies held by a joint, in index order
  std::vector<std::uint64_t> joined_pairs;  // (lower << 32 | higher) body pairs: never collide
  std::vector<std::int32_t> joint_island;   // per joint
  std::vector<std::uint32_t> joint_start, joint_order, joint_cursor, island_weight;
  detail::JointRows joint_scratch;
  detail::JointForest forest;                   // joints whose bodies form trees: solved exactly
  std::vector<detail::Vec6> joint_c, joint_dl;  // per joint: position errors and corrections
  std::vector<double> joint_dll;                // per joint: the limit row's correction
  std::vector<Vec3> move_p, move_l;             // per body: a tree correction's impulses, summed
  std::vector<detail::Pose> poses;              // per body and the world's slot: poses of this pass
  // per joint: the spring's force on body a and torques on a and b this sub-step (joint loads)
  std::vector<Vec3> spring_force_a, spring_torque_a, spring_torque_b;
};

PhysicsScratch::PhysicsScratch() : impl(std::make_unique<Impl>()) {}
PhysicsScratch::~PhysicsScratch() = default;
PhysicsScratch::PhysicsScratch(PhysicsScratch&&) noexcept = default;
PhysicsScratch& PhysicsScratch::operator=(PhysicsScratch&&) noexcept = default;

void body_forces(const WorldModel& model, const BodyModel& body, const BodyState& s, const BodyWrench& input,
                 Vec3& force, Vec3& torque) {
  const Mat3 r = s.orientation.toRotationMatrix();
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

namespace {

// one step() call: the model, the state and the scratch, with the sub-step machinery
class Stepper {
 public:
  Stepper(const WorldModel& model, WorldState& state, const StepInputs& inputs, PhysicsScratch::Impl& s,
          StepReport* report)
      : model_(model), cfg_(model.contact), state_(state), inputs_(inputs), s_(s), report_(report),
        n_(std::min(state.bodies.size(), model.bodies.size())) {}

  StepStatus run(double dt_s);

 private:
  const BodyWrench& input(std::size_t i) const {
    static const BodyWrench none{};
    return i < inputs_.wrenches.size() ? inputs_.wrenches[i] : none;
  }
  void setup();
  void frames();
  double choose_substep(double remaining);
  void set_motion(double h);
  void detect();
  void add_contacts(std::vector<Contact>& out, std::int32_t a, std::int32_t b, std::int32_t static_index,
                    std::uint64_t group, const ContactPoint* pts, int count, double restitution, double friction,
                    double size_b, double rad_b);
  void narrow_phase(std::size_t begin, std::size_t end, std::vector<Contact>& out);
  void solve_islands(std::size_t first, std::size_t last, std::uint64_t& solves, std::uint32_t& sweeps);
  // how many parts `count` items are cut into: one per thread, none smaller than a minimum
  int parts_for(std::size_t count) const;
  // calls fn(begin, end, part) over contiguous parts of [0, count), in parallel when it pays
  template <class F>
  void parallel(std::size_t count, F&& fn);
  // calls fn(part) for part in [0, parts): on the team when parts > 1
  template <class F>
  void run_parts(int parts, F&& fn);
  void warm_start(double h);
  void prepare(double h);
  void prepare_contacts(std::size_t begin, std::size_t end, double h);
  double earliest_impact(double h) const;
  void build_islands();
  void solve();
  void integrate(double h);
  void integrate_bodies(std::size_t begin, std::size_t end, double h);
  void catch_outrunners();
  void project();
  void setup_joints();
  void joint_springs();
  void prepare_joints(double h);
  void correct_joints();
  void move_by_impulse(std::size_t body, const Vec3& p, const Vec3& l);
  void add_solve_loads();
  bool joined(std::size_t a, std::size_t b) const;
  detail::Pose pose(std::int32_t solver_index) const;
  void refresh_poses();  // s_.poses of the jointed bodies, from their states now
  void record_events();
  bool all_finite();
  void finish_events();

  const WorldModel& model_;
  const ContactSettings& cfg_;
  WorldState& state_;
  const StepInputs& inputs_;
  PhysicsScratch::Impl& s_;
  StepReport* report_;
  std::size_t n_;
  bool collect_events_ = false;
  bool collect_loads_ = false;  // report_->joint_loads is filled
  bool first_substep_ = true;
  double h_ = 0;
  int threads_ = 1;
};

// passes over an island's joints per sweep when a joint tree in it keeps limit, motor or
// brake rows beside it (more than fit its Schur complement; solve_islands)
constexpr int tree_passes_with_rows = 4;

// below this many items per part a hand-off costs more than it saves
constexpr std::size_t min_items_per_part = 64;

int Stepper::parts_for(std::size_t count) const {
  if (threads_ <= 1) return 1;
  return static_cast<int>(
      std::min<std::size_t>(static_cast<std::size_t>(threads_), std::max<std::size_t>(1, count / min_items_per_part)));
}

template <class F>
void Stepper::run_parts(int parts, F&& fn) {
  if (parts <= 1)
    fn(0);
  else
    s_.pool->run(parts, fn);
}

template <class F>
void Stepper::parallel(std::size_t count, F&& fn) {
  const int parts = parts_for(count);
  run_parts(parts, [&](int part) {
    std::size_t begin = 0, end = 0;
    part_range(count, parts, part, begin, end);
    fn(begin, end, part);
  });
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
      body_forces(model_, b, st, input(i), f.force, f.torque);
      f.size = shape_size(b.shape);
      f.bound_r = shape_bounding_radius(b.shape);
      // a spinning sphere occupies the same space: only its centre's motion counts
      f.turn_r = b.shape.kind == ShapeKind::sphere ? 0.0 : f.bound_r;
      f.speed = f.v.norm() + f.w.norm() * f.turn_r;
      f.bound_accel(b.inv_mass);
    }
  });
}

double Stepper::choose_substep(double remaining) {
  double h = std::min(remaining, model_.max_substep_s);
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
  // a minimum is exact, so the parts' minima give the same h in any split
  parallel(n_, [&](std::size_t begin, std::size_t end, int part) {
    s_.part_min[static_cast<std::size_t>(part)] = shortest(begin, end, h);
  });
  for (int p = 0; p < parts_for(n_); ++p) h = std::min(h, s_.part_min[static_cast<std::size_t>(p)]);
  h = std::min(std::max(h, cfg_.min_substep_s), remaining);
  // equal sub-steps over what is left, so the last one is not a sliver
  const double count = std::ceil(remaining / h - 1e-9);
  return count > 1 ? remaining / count : remaining;
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

void Stepper::detect() {
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
  auto& sol = s_.solver;
  const auto fixed = static_cast<std::int32_t>(n_);  // static geometry: never written
  const bool cold = s_.previous.empty();
  for (std::size_t isl = first_island; isl < last_island; ++isl) {
    Row* const first = s_.rows.data() + s_.island_start[isl];
    Row* const last = s_.rows.data() + s_.island_start[isl + 1];
    const std::uint32_t* const joint_first = s_.joint_order.data() + s_.joint_start[isl];
    const std::uint32_t* const joint_last = s_.joint_order.data() + s_.joint_start[isl + 1];
    // a joint costs about one contact update per row
    std::ptrdiff_t count = last - first;
    for (const std::uint32_t* k = joint_first; k != joint_last; ++k) count += s_.joints[*k].rows.dims;
    // joints start from what they ended the previous sub-step with (prepare_joints scaled it)
    for (const std::uint32_t* k = joint_first; k != joint_last; ++k) {
      const detail::JointSolve& j = s_.joints[*k];
      if (j.lambda.isZero(0) && j.lambda_l == 0 && j.lambda_m == 0 && j.lambda_b == 0) continue;
      detail::apply_joint_impulse(j, j.lambda, j.lambda_l, j.lambda_m + j.lambda_b, sol[static_cast<std::size_t>(j.a)],
                                  sol[static_cast<std::size_t>(j.b)]);
    }
    // warm start: apply what the contacts carried over from the previous sub-step
    for (const Row* r = first; r != last; ++r) {
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
    // cold islands may sweep up to cold_velocity_iterations times within a budget of contact
    // updates, so a small stack converges and a big crowd costs no more than a warm one
    int iterations = std::max(1, cfg_.velocity_iterations);
    if (joint_first != joint_last) iterations = std::max(iterations, cfg_.joint_velocity_iterations);
    // an island of joints alone is cold on the loop step's first sub-step only
    if (first != last ? cold : first_substep_) {
      const double affordable = static_cast<double>(cfg_.cold_solve_budget) / static_cast<double>(count);
      iterations = std::max(iterations, static_cast<int>(std::min<double>(cfg_.cold_velocity_iterations, affordable)));
    }
    // converged when no sweep changes a velocity by more than a small part of the speeds at
    // stake in this island (and never needs to be better than the absolute tolerance)
    double scale = 0;
    for (const Row* r = first; r != last; ++r) {
      const SolverBody& a = sol[static_cast<std::size_t>(r->a)];
      const SolverBody& b = sol[static_cast<std::size_t>(r->b)];
      const double vn = (a.v + a.w.cross(r->ra) - b.v - b.w.cross(r->rb)).dot(r->n);
      scale = std::max(scale, std::abs(r->target) + std::abs(vn));
    }
    for (const std::uint32_t* k = joint_first; k != joint_last; ++k) {
      const detail::JointSolve& j = s_.joints[*k];
      const SolverBody& a = sol[static_cast<std::size_t>(j.a)];
      const SolverBody& b = sol[static_cast<std::size_t>(j.b)];
      const detail::Vec6 rate = j.rows.lin * (a.v - b.v) + j.rows.ang_a * a.w + j.rows.ang_b * b.w;
      scale = std::max(scale, rate.lpNorm<Eigen::Infinity>() + std::abs(j.target_l));
    }
    const double tolerance = std::max(cfg_.velocity_tolerance_m_s, cfg_.velocity_tolerance_fraction * scale);
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
      for (int pass = 0; pass < joint_passes; ++pass)
        for (const std::uint32_t* k = joint_first; k != joint_last; ++k) {
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
      for (Row* r = first; r != last; ++r) {
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
      solves += static_cast<std::uint64_t>(count);
      if (largest < tolerance || it + 1 == iterations) {
        sweeps = std::max(sweeps, static_cast<std::uint32_t>(it + 1));
        break;
      }
    }
  }
}

void Stepper::integrate(double h) {
  const std::size_t n = n_;
  // bodies held by a joint move like bodies in contact: with the solver's velocities
  std::copy(s_.jointed.begin(), s_.jointed.end(), s_.in_contact.begin());
  std::fill(s_.corr_lin.begin(), s_.corr_lin.end(), Vec3::Zero());
  std::fill(s_.corr_ang.begin(), s_.corr_ang.end(), Vec3::Zero());
  for (const Contact& c : s_.contacts) {
    if (c.ln <= 0) continue;
    s_.in_contact[static_cast<std::size_t>(c.a)] = 1;
    if (static_cast<std::size_t>(c.b) < n) s_.in_contact[static_cast<std::size_t>(c.b)] = 1;
    if (c.toi > 0) {
      // the impulse acts at the time of impact: before it the bodies kept their old velocity
      const Vec3 p = c.n * c.ln + c.t1 * c.lt1 + c.n.cross(c.t1) * c.lt2;
      const SolverBody& a = s_.solver[static_cast<std::size_t>(c.a)];
      s_.corr_lin[static_cast<std::size_t>(c.a)] -= (c.toi * a.inv_m) * p;
      s_.corr_ang[static_cast<std::size_t>(c.a)] -= c.toi * mul(a.inv_i, c.ra.cross(p));
      if (static_cast<std::size_t>(c.b) < n) {
        const SolverBody& b = s_.solver[static_cast<std::size_t>(c.b)];
        s_.corr_lin[static_cast<std::size_t>(c.b)] += (c.toi * b.inv_m) * p;
        s_.corr_ang[static_cast<std::size_t>(c.b)] += c.toi * mul(b.inv_i, c.rb.cross(p));
      }
      if (report_) ++report_->impacts;
    }
  }
  parallel(n, [this, h](std::size_t begin, std::size_t end, int) { integrate_bodies(begin, end, h); });
}

void Stepper::integrate_bodies(std::size_t begin, std::size_t end, double h) {
  for (std::size_t i = begin; i < end; ++i) {
    const BodyModel& bm = model_.bodies[i];
    BodyState& st = state_.bodies[i];
    const BodyFrame& f = s_.frames[i];
    if (s_.in_contact[i]) {
      // symplectic Euler with the contact impulses: resting contact stays exactly at rest
      const SolverBody& sb = s_.solver[i];
      const Vec3 dx = h * sb.v + s_.corr_lin[i];
      const Vec3 dth = h * sb.w + s_.corr_ang[i];
      st.linear_momentum = bm.mass_kg * sb.v;
      st.angular_momentum = s_.isotropic[i] ? Vec3(sb.w / bm.inv_inertia_body(0, 0))
                                            : Vec3(f.r * (bm.inertia_body * (f.r.transpose() * sb.w)));
      st.position_m += dx;
      st.orientation = (rotation_quat(dth) * st.orientation).normalized();
      s_.disp_lin[i] = dx;
      s_.disp_ang[i] = dth;
    } else if (s_.const_force[i] && s_.isotropic[i]) {
      // closed form under constant force; constant-axis rotation when torque-free
      const Vec3 x0 = st.position_m;
      st.position_m += h * f.v + (0.5 * h * h * bm.inv_mass) * f.force;
      st.linear_momentum += h * f.force;
      const double c = bm.inv_inertia_body(0, 0);
      Vec3 dth;
      if (f.torque.isZero(0)) {
        dth = h * f.w;
      } else {
        // rotation vector of a linearly growing angular velocity (second order)
        dth = h * (f.w + 0.5 * h * c * f.torque);
      }
      st.angular_momentum += h * f.torque;
      st.orientation = (rotation_quat(dth) * st.orientation).normalized();
      s_.disp_lin[i] = st.position_m - x0;
      s_.disp_ang[i] = dth;
    } else {
      const Vec3 x0 = st.position_m;
      const Quat q0 = st.orientation;
      rk4(model_, bm, st, input(i), h, first_derivative(bm, st, f.r, f.force, f.torque));
      s_.disp_lin[i] = st.position_m - x0;
      s_.disp_ang[i] = rotation_vector(st.orientation * q0.conjugate());
    }
  }
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

void Stepper::project() {
  // position projection (no velocity change, so no energy added): push apart what overlaps
  // by more than the slop, Gauss-Seidel over a work list that only holds contacts next to
  // bodies moved in the previous sweep
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
  // separation now, with this sub-step's motion and the projection so far
  auto separation = [&](const ProjRow& r, Vec3& nrm) {
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
  };
  auto& work = s_.work;
  auto& next = s_.next_work;
  work.clear();
  double deepest = 0;
  Vec3 nrm;
  for (std::size_t k = 0; k < m; ++k) {
    const double sep = separation(rows[k], nrm);
    deepest = std::min(deepest, sep);
    if (sep < -2 * rows[k].slop) work.push_back(static_cast<std::uint32_t>(k));
  }
  if (!work.empty()) {
    // body -> contacts, to find what a correction may have disturbed
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
    s_.contact_stamp.assign(m, 0);
    s_.body_stamp.assign(n + 1, 0);
    const int iterations = std::max(0, cfg_.position_iterations);
    for (int it = 1; it <= iterations && !work.empty(); ++it) {
      const auto stamp = static_cast<std::uint32_t>(it);
      s_.moved.clear();
      for (std::uint32_t k : work) {
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
      // next sweep: every contact of a body that moved, in contact order
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
      std::swap(work, next);
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

// ---- joints (docs/physics.md, "Joints") --------------------------------------------------

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
      detail::prepare_joint_block(j, s_.solver[static_cast<std::size_t>(j.a)], s_.solver[static_cast<std::size_t>(j.b)]);
  }
}

// a position correction by a (pseudo-)impulse p, angular l about the centre of mass; the
// velocity takes the same impulse spread over the sub-step (what moved the body by that much),
// so the correction also turns the velocity with the joint (RATTLE's position stage) instead of
// the next sub-step projecting it away, which would drain energy at first order in h
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
  detail::JointRows& rows = s_.joint_scratch;
  double worst_m = 0, worst_rad = 0;
  const int sweeps = std::max(0, cfg_.joint_position_iterations);
  const bool trees = !s_.forest.lead_joint.empty();
  // a joint's error at the current poses (into `rows`), counted in worst_m / worst_rad;
  // `cached`: s_.poses are the current poses (refreshed since anything moved)
  auto measure = [&](std::size_t k, bool cached) {
    const detail::JointSolve& j = s_.joints[k];
    if (cached)
      detail::joint_rows(model_.joints[k], s_.poses[static_cast<std::size_t>(j.a)],
                         s_.poses[static_cast<std::size_t>(j.b)], rows, true);
    else
      detail::joint_rows(model_.joints[k], pose(j.a), pose(j.b), rows, true);
    for (int i = 0; i < rows.dims; ++i) {
      const double e = std::abs(rows.c[i]);
      if (j.rows.linear(i))
        worst_m = std::max(worst_m, e);
      else
        worst_rad = std::max(worst_rad, e);
    }
    const bool past_limit = rows.limit && (rows.c_l < 0 || rows.limit_both_ways);
    if (past_limit) {
      double& worst = j.rows.lin_l.squaredNorm() > 0 ? worst_m : worst_rad;
      worst = std::max(worst, std::abs(rows.c_l));
    }
    return past_limit;
  };
  // moves joint k's bodies by the rows' pseudo-impulses dl and the limit row's dll (summed:
  // adds them to move_p / move_l, each body moved once by its sum afterwards)
  auto correct = [&](std::size_t k, const detail::Vec6& dl, double dll, bool summed) {
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
  };
  // the limit row's pseudo-impulse for the error in `rows` (0 when within the limits)
  auto limit_push = [&](const detail::JointSolve& j, bool past_limit) {
    double dll = 0;
    if (past_limit && j.k_l > 0) dll = -rows.c_l * j.k_l;
    if (dll != 0 && rows.limit_side != j.rows.limit_side) dll = -dll;
    return dll;
  };
  auto in_tree = [&](std::size_t k) { return s_.forest.solving(k) >= 0; };
  // every joint in a tree: the measure pass sees them all before anything moves, so a sweep
  // whose errors are all within tolerance moves nothing
  bool trees_only = trees;
  for (std::size_t k = 0; k < s_.joints.size() && trees_only; ++k)
    trees_only = !s_.joints[k].valid || in_tree(k);
  for (int sweep = 0; sweep <= sweeps; ++sweep) {
    worst_m = worst_rad = 0;
    const bool measure_only = sweep == sweeps;
    if (trees) {
      // the trees' joints: every error at the poses this sweep starts from, then one solve each
      refresh_poses();
      for (std::size_t k = 0; k < s_.joints.size(); ++k) {
        if (!s_.joints[k].valid || !in_tree(k)) continue;
        const bool past_limit = measure(k, true);
        s_.joint_c[k] = rows.c;
        s_.joint_dll[k] = limit_push(s_.joints[k], past_limit);
      }
      if (trees_only && worst_m <= cfg_.joint_tolerance && worst_rad <= cfg_.joint_tolerance) break;
      if (!measure_only) {
        for (std::size_t t = 0; t < s_.forest.lead_joint.size(); ++t)
          if (s_.forest.usable[t]) detail::tree_correction(s_.forest, t, s_.joints, s_.joint_c, s_.joint_dl);
        // a tree's bodies move once each, by the sum of their joints' pseudo-impulses
        for (std::size_t k = 0; k < s_.joints.size(); ++k)
          if (s_.joints[k].valid && in_tree(k)) correct(k, s_.joint_dl[k], s_.joint_dll[k], true);
        for (const std::uint32_t i : s_.jointed_bodies) {
          if (s_.move_p[i] != Vec3::Zero() || s_.move_l[i] != Vec3::Zero()) move_by_impulse(i, s_.move_p[i], s_.move_l[i]);
          s_.move_p[i].setZero();
          s_.move_l[i].setZero();
        }
      }
    }
    for (std::size_t k = 0; k < s_.joints.size(); ++k) {
      const detail::JointSolve& j = s_.joints[k];
      if (!j.valid || in_tree(k)) continue;
      const bool past_limit = measure(k, false);  // the bodies move joint by joint here
      if (measure_only) continue;
      // the correction pushes along the rows the solve used (consistent with k_inv), against
      // the error at the new poses: a body that turns cheaply is not turned by a mismatch
      correct(k, -(j.k_inv * rows.c), limit_push(j, past_limit), false);
    }
    if (worst_m <= cfg_.joint_tolerance && worst_rad <= cfg_.joint_tolerance) break;
  }
  if (report_) {
    report_->max_joint_error_m = std::max(report_->max_joint_error_m, worst_m);
    report_->max_joint_error_rad = std::max(report_->max_joint_error_rad, worst_rad);
  }
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
    if (substeps + 1 >= cfg_.max_substeps) {
      h = remaining;
      if (report_) report_->substep_limit_hit = true;
    } else {
      h = choose_substep(remaining);
    }
    std::copy_n(state_.bodies.begin(), n_, s_.start.begin());
    set_motion(h);
    detect();
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

}  // namespace

StepStatus step(const WorldModel& model, WorldState& state, const StepInputs& inputs, double dt_s, StepReport* report,
                PhysicsScratch& scratch) {
  if (!(dt_s > 0)) {
    ++state.step;
    return StepStatus::ok;
  }
  Stepper stepper(model, state, inputs, *scratch.impl, report);
  return stepper.run(dt_s);
}

StepStatus step(const WorldModel& model, WorldState& state, const StepInputs& inputs, double dt_s, StepReport* report) {
  thread_local PhysicsScratch scratch;
  return step(model, state, inputs, dt_s, report, scratch);
}

}  // namespace tether::runtime
