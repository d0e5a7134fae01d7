// SPDX-License-Identifier: Apache-2.0
// One step() call as a class (internal to physics): the per-sub-step data, the scratch the
// step reuses, and the Stepper whose stages live in their own files (docs/physics.md,
// "Where the stages live"):
//   physics.cpp          the step: set-up, forces and frames, the sub-step rule, the sub-step loop
//   integrate.cpp        moving the bodies: RK4, closed-form free flight, symplectic Euler
//   contacts.cpp         broad and narrow phase, contact preparation, warm start, time of
//                        impact, outrunners (continuous collision), contact events
//   islands.cpp          islands and the velocity solve (contacts and joints, island by island)
//   projection.cpp       the position projection that pushes overlaps apart
//   joint_step.cpp       joints in the step: set-up, springs, rows per sub-step, post-stabilisation
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "tether/physics/broadphase.hpp"
#include "tether/physics/collision.hpp"
#include "tether/physics/physics.hpp"
#include "tether/physics/workers.hpp"
#include "joint_rows.hpp"
#include "joint_tree.hpp"
#include "solver_body.hpp"

namespace tether::runtime::detail {

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

// body_forces with the body's rotation matrix already at hand (the same operations)
void body_forces(const WorldModel& model, const BodyModel& body, const BodyState& s, const Mat3& r,
                 const BodyWrench& input, Vec3& force, Vec3& torque);

inline double inverse_effective_mass(const SolverBody& a, const SolverBody& b, const Vec3& ra, const Vec3& rb,
                                     const Vec3& d) {
  const Vec3 ca = ra.cross(d), cb = rb.cross(d);
  const double k = a.inv_m + b.inv_m + ca.dot(mul(a.inv_i, ca)) + cb.dot(mul(b.inv_i, cb));
  return k > 1e-300 ? 1.0 / k : 0.0;
}

}  // namespace tether::runtime::detail

namespace tether::runtime {

struct PhysicsScratch::Impl {
  std::vector<detail::BodyFrame> frames;
  std::vector<detail::SolverBody> solver;
  std::vector<BodyState> start;
  std::vector<Aabb> boxes;
  std::vector<BoxPair> pairs;
  std::vector<int> bounded_statics;    // in the broad phase, after the bodies
  std::vector<int> unbounded_statics;  // planes and heightfields: tested per body
  std::vector<Aabb> static_boxes;
  std::vector<Mat3> static_rot;
  BroadPhase broad;
  std::vector<detail::Contact> contacts;
  std::vector<detail::Contact> previous;  // the last sub-step's contacts (warm start), this step only
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
  std::vector<detail::Row> rows;  // solver rows in island order
  std::vector<detail::ProjRow> proj_rows;
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
  std::vector<std::vector<detail::Contact>> part_contacts;  // [0] unused: part 0 writes to contacts
  std::vector<std::size_t> part_offset;
  std::vector<double> part_min;
  std::vector<std::uint64_t> part_solves;
  std::vector<std::uint32_t> part_sweeps;
  std::vector<std::uint8_t> part_flag;
  // joints (docs/physics.md, "Joints"): one solve per joint, grouped by island
  std::vector<detail::JointSolve> joints;
  std::vector<std::uint8_t> jointed;          // per body: held by a joint (symplectic path)
  std::vector<std::uint32_t> jointed_bodies;  // the bodies held by a joint, in index order
  std::vector<std::uint64_t> joined_pairs;    // (lower << 32 | higher) body pairs: never collide
  std::vector<std::int32_t> joint_island;     // per joint
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

}  // namespace tether::runtime

namespace tether::runtime::detail {

// one step() call: the model, the state and the scratch, with the sub-step machinery; each
// group of members below is defined in the file it names
class Stepper {
 public:
  Stepper(const WorldModel& model, WorldState& state, const StepInputs& inputs, PhysicsScratch::Impl& s,
          StepReport* report)
      : model_(model), cfg_(model.contact), state_(state), inputs_(inputs), s_(s), report_(report),
        n_(std::min(state.bodies.size(), model.bodies.size())) {}

  StepStatus run(double dt_s);

 private:
  // what solve_islands works on: one island's contact rows and joints
  struct Island {
    Row* first;
    Row* last;
    const std::uint32_t* joint_first;
    const std::uint32_t* joint_last;
  };
  // the largest joint errors a correction sweep measured
  struct JointErrors {
    double m = 0, rad = 0;
  };

  const BodyWrench& input(std::size_t i) const {
    static const BodyWrench none{};
    return i < inputs_.wrenches.size() ? inputs_.wrenches[i] : none;
  }
  // physics.cpp: the step and its sub-step loop
  void setup();
  void frames();
  double motion_limit();  // the longest sub-step the motion rule allows (size fraction)
  double choose_substep(double remaining, double cap, double motion_limit) const;
  double free_cap();            // the longest free sub-step the bodies' forces allow now
  bool nothing_within_reach();  // after set_motion(h): no contact can begin in h
  void set_motion(double h);
  void prepare(double h);
  bool all_finite();
  // how many parts `count` items are cut into: one per thread, none smaller than a minimum
  int parts_for(std::size_t count) const;
  // calls fn(begin, end, part) over contiguous parts of [0, count), in parallel when it pays
  template <class F>
  void parallel(std::size_t count, F&& fn);
  // calls fn(part) for part in [0, parts): on the team when parts > 1
  template <class F>
  void run_parts(int parts, F&& fn);
  // integrate.cpp: moving the bodies
  void integrate(double h);
  void integrate_bodies(std::size_t begin, std::size_t end, double h);
  // contacts.cpp: finding and preparing contacts, outrunners, events
  void detect();
  void find_pairs();  // the bodies' boxes grown by their motion, and the broad phase's pairs
  void add_contacts(std::vector<Contact>& out, std::int32_t a, std::int32_t b, std::int32_t static_index,
                    std::uint64_t group, const ContactPoint* pts, int count, double restitution, double friction,
                    double size_b, double rad_b);
  void narrow_phase(std::size_t begin, std::size_t end, std::vector<Contact>& out);
  void prepare_contacts(std::size_t begin, std::size_t end, double h);
  void warm_start(double h);
  double earliest_impact(double h) const;
  void catch_outrunners();
  void record_events();
  void finish_events();
  // islands.cpp: the velocity solve
  void build_islands();
  void solve();
  void solve_islands(std::size_t first, std::size_t last, std::uint64_t& solves, std::uint32_t& sweeps);
  void warm_island(const Island& island);
  double island_tolerance(const Island& island) const;
  void sweep_island_joints(const Island& island, int joint_passes, double& largest);
  void sweep_island_contacts(const Island& island, double& largest);
  // projection.cpp: the position projection
  void project();
  void projection_rows();
  double separation(const ProjRow& r, Vec3& nrm) const;
  void projection_adjacency();
  void projection_sweep(std::uint32_t stamp);
  void projection_next_work(std::uint32_t stamp);
  // joint_step.cpp: joints in the step
  void setup_joints();
  void joint_springs();
  void prepare_joints(double h);
  void correct_joints();
  bool measure_joint(std::size_t k, bool cached, JointErrors& worst);
  double limit_push(const JointSolve& j, bool past_limit) const;
  void correct_joint(std::size_t k, const Vec6& dl, double dll, bool summed);
  bool in_tree(std::size_t k) const;
  void measure_trees(JointErrors& worst);
  void correct_trees();
  void move_by_impulse(std::size_t body, const Vec3& p, const Vec3& l);
  void add_solve_loads();
  bool joined(std::size_t a, std::size_t b) const;
  detail::Pose pose(std::int32_t solver_index) const;
  void refresh_poses();  // s_.poses of the jointed bodies, from their states now

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
  bool try_free_ = false;  // a free sub-step may still be tried in this step
  double h_ = 0;
  int threads_ = 1;
};

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

}  // namespace tether::runtime::detail
