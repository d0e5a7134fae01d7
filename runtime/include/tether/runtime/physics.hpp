// SPDX-License-Identifier: Apache-2.0
// advance(): the pure, deterministic function of (model, state, inputs, dt).
#pragma once

#include <cstdint>
#include <vector>

#include "tether/runtime/world_model.hpp"
#include "tether/runtime/world_state.hpp"

namespace tether::runtime {

/// External forces on one body, constant over a loop step. World-frame parts keep their
/// direction; body-frame parts turn with the body inside the step.
struct BodyWrench {
  Vec3 force_world_n{0, 0, 0};
  Vec3 torque_world_nm{0, 0, 0};  // about the centre of mass
  Vec3 force_body_n{0, 0, 0};
  Vec3 torque_body_nm{0, 0, 0};   // about the centre of mass

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
    return force_world_n.isZero(0) && torque_world_nm.isZero(0) && force_body_n.isZero(0) &&
           torque_body_nm.isZero(0);
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

/// Counters a step reports (deterministic; part of what replay compares).
struct StepReport {
  std::uint32_t substeps = 0;
};

/// Advances `state` by dt seconds: RK4 in sub-steps no longer than model.max_substep_s,
/// quaternions renormalized. Returns numerical_fault on NaN/Inf: the state is then not
/// meaningful and the loop stops the session with a fault (never silently resets).
[[nodiscard]] StepStatus step(const WorldModel& model, WorldState& state, const StepInputs& inputs,
                              double dt_s, StepReport* report = nullptr);

/// Net force and torque (world frame, about the centre of mass) acting on a body in a state;
/// exposed for tests and for feedback processors that reason about forces.
void body_forces(const WorldModel& model, const BodyModel& body, const BodyState& state,
                 const BodyWrench& input, Vec3& force_world, Vec3& torque_world);

}  // namespace tether::runtime
