// SPDX-License-Identifier: Apache-2.0
// advance(): the pure, deterministic function of (model, state, inputs, dt).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tether/physics/world_model.hpp"
#include "tether/physics/world_state.hpp"

namespace tether::runtime {

/// External forces on one body, constant over a loop step. World-frame parts keep their
/// direction; body-frame parts turn with the body inside the step.
struct BodyWrench {
  Vec3 force_world_n{0, 0, 0};
  Vec3 torque_world_nm{0, 0, 0};  // about the centre of mass
  Vec3 force_body_n{0, 0, 0};
  Vec3 torque_body_nm{0, 0, 0};  // about the centre of mass

  /// Adds a body-frame force applied at a body-frame point (relative to the centre of mass).
  void add_body_force_at(const Vec3& force_body, const Vec3& point_body) {
    force_body_n += force_body;
    torque_body_nm += point_body.cross(force_body);
  }
  /// Adds a world-frame force at a world-frame lever arm from the centre of mass.
  void add_world_force_at(const Vec3& force_world, const Vec3& lever_world) {
    force_world_n += force_world;
    torque_world_nm += lever_world.cross(force_world);
  }
  bool is_zero() const {
    return force_world_n.isZero(0) && torque_world_nm.isZero(0) && force_body_n.isZero(0) && torque_body_nm.isZero(0);
  }
};

/// Everything from outside that a step consumes, indexed by body.
struct StepInputs {
  std::vector<BodyWrench> wrenches;  // one per body (pre-sized at configure)

  void resize(std::size_t bodies) { wrenches.assign(bodies, BodyWrench{}); }
  void clear() {
    for (auto& w : wrenches) w = BodyWrench{};
  }
};

enum class StepStatus : std::uint8_t { ok, numerical_fault };

/// One touching pair during a loop step (bump sensors, observers, the recording).
struct ContactEvent {
  std::int32_t body_a = -1;
  std::int32_t body_b = -1;        // the other body, or -1 when it is static geometry
  std::int32_t static_index = -1;  // index into WorldModel::statics, or -1
  Vec3 point_m{0, 0, 0};           // world; impulse-weighted over the pair's contact points
  Vec3 normal{0, 0, 1};            // unit, from b (or the static) toward a
  Vec3 impulse_n_s{0, 0, 0};       // on a, summed over the loop step (b got the opposite)
};

/// What one joint did during a loop step: the impulses it gave its bodies, summed over the
/// sub-steps (the velocity solve, motor, brake, limit, spring and the position correction's
/// momentum). Divided by the step's length they are the mean force and torques it carried:
/// what a load cell (the `tension` sensor) reads.
struct JointLoad {
  Vec3 impulse_n_s{0, 0, 0};              // on body_a, world frame (body_b got the opposite)
  Vec3 angular_impulse_a_n_m_s{0, 0, 0};  // on body_a about its centre of mass, world frame
  Vec3 angular_impulse_b_n_m_s{0, 0, 0};  // on body_b about its centre of mass (0 for the world)
};

/// Counters a step reports (deterministic; part of what replay compares).
struct StepReport {
  std::uint32_t substeps = 0;
  std::uint32_t toi_cuts = 0;        // sub-steps shortened to end exactly at an impact
  std::uint32_t impacts = 0;         // impacts resolved at their time of impact
  std::uint32_t outrunners = 0;      // bodies knocked past their motion bound (checked again)
  std::uint64_t pairs_tested = 0;    // broad-phase candidate pairs, summed over sub-steps
  std::uint64_t contact_points = 0;  // narrow-phase points, summed over sub-steps
  std::uint64_t contact_solves = 0;  // solver updates of one contact, summed (cost measure)
  std::uint32_t max_sweeps = 0;      // most solver sweeps any island needed in a sub-step
  double max_penetration_m = 0;      // deepest overlap left after any sub-step of the step
  bool substep_limit_hit = false;    // ContactSettings::max_substeps reached
  double max_joint_error_m = 0;      // joints: largest anchor distance left after any sub-step
  double max_joint_error_rad = 0;    // joints: largest orientation disagreement left
  /// Touching pairs, one per pair per loop step, ordered by (body_a, body_b, static_index).
  /// Filled only up to the capacity the caller reserved (no allocation in the step); the
  /// rest are counted in contacts_dropped. Leave the capacity at 0 to skip the work.
  std::vector<ContactEvent> contacts;
  std::uint32_t contacts_dropped = 0;

  /// One per joint of the model, in its order; filled only when the caller reserved at least
  /// that many (no allocation in the step), otherwise left empty.
  std::vector<JointLoad> joint_loads;

  void reserve_contacts(std::size_t n) { contacts.reserve(n); }
  void reserve_joint_loads(std::size_t n) { joint_loads.reserve(n); }
};

/// Buffers step() reuses between calls so that, once warmed up, it does not allocate.
/// Holds nothing that carries from one step to the next: results never depend on it.
class PhysicsScratch {
 public:
  PhysicsScratch();
  ~PhysicsScratch();
  PhysicsScratch(PhysicsScratch&&) noexcept;
  PhysicsScratch& operator=(PhysicsScratch&&) noexcept;
  PhysicsScratch(const PhysicsScratch&) = delete;
  PhysicsScratch& operator=(const PhysicsScratch&) = delete;

  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// Advances `state` by dt seconds with adaptive sub-steps (docs/physics.md): no body moves
/// more than model.contact.max_motion_fraction of its size per sub-step and no sub-step is
/// longer than model.max_substep_s; contacts are speculative, impacts are resolved at their
/// time of impact. Free bodies use RK4, bodies in contact symplectic Euler with impulses.
/// Uses a per-thread PhysicsScratch. Returns numerical_fault on NaN/Inf: the state is then not
/// meaningful and the loop stops the session with a fault (never silently resets).
[[nodiscard]] StepStatus step(const WorldModel& model, WorldState& state, const StepInputs& inputs, double dt_s,
                              StepReport* report = nullptr);

/// Same as step() with caller-owned scratch buffers (results are bit-identical).
[[nodiscard]] StepStatus step(const WorldModel& model, WorldState& state, const StepInputs& inputs, double dt_s,
                              StepReport* report, PhysicsScratch& scratch);

/// Net force and torque (world frame, about the centre of mass) acting on a body in a state;
/// exposed for tests and for feedback processors that reason about forces.
void body_forces(const WorldModel& model, const BodyModel& body, const BodyState& state, const BodyWrench& input,
                 Vec3& force_world, Vec3& torque_world);

}  // namespace tether::runtime
