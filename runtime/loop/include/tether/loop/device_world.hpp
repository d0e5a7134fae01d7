// SPDX-License-Identifier: Apache-2.0
// The runtime's implementation of hal::WorldView: what devices see of a WorldModel and a
// WorldState (kinematics, water, gravity, ray casts, contacts), and the way back from the
// devices' wrenches into the step's inputs.
#pragma once

#include <vector>

#include "tether/hal/world_view.hpp"
#include "tether/hal/wrench.hpp"
#include "tether/physics/physics.hpp"
#include "tether/physics/world_model.hpp"
#include "tether/physics/world_state.hpp"

namespace tether::runtime {

/// A ray cast over the world: the nearest hit within max_range_m, ignoring one body.
using RayCastFn = hal::RayHit (*)(const WorldModel& model, const WorldState& state, const Vec3& origin,
                                  const Vec3& direction, double max_range_m, int ignore_body);

/// Ray against every static shape and every body's shape (planes, spheres, boxes,
/// cylinders, capsules; heightfields are not seen). A ray that starts inside a shape hits it
/// at distance 0. The default RayCastFn of DeviceWorld.
hal::RayHit basic_ray_cast(const WorldModel& model, const WorldState& state, const Vec3& origin, const Vec3& direction,
                           double max_range_m, int ignore_body);

class DeviceWorld final : public hal::WorldView {
 public:
  /// Sizes the body list for `model`; the model must outlive the view.
  explicit DeviceWorld(const WorldModel& model, RayCastFn ray_cast_fn = &basic_ray_cast);

  /// Refreshes the view from `state` (which must outlive the next sense()/actuate(): ray
  /// casts read it). Accelerations: with `previous` (the state dt_s earlier) they are the
  /// finite difference of the velocities, which includes contact impulses; without it they
  /// come from body_forces() with `inputs` (nullptr: no external inputs), contacts excluded.
  /// Keeps the contact list (set it with set_contacts / clear it).
  void update(const WorldState& state, const WorldState* previous, double dt_s, const StepInputs* inputs = nullptr);
  /// Refreshes only what actuators read (pose, velocities, mass) from `state`; the
  /// accelerations keep their values. No actuator reads them (an IMU does, and sense()
  /// refreshes the whole view first); without `previous`, update() computes them with
  /// body_forces() for every body, the force model of a physics stage: before actuate() that
  /// was most of the loop's `pre` phase.
  void update_kinematics(const WorldState& state);
  /// Empties the contact list (call when the physics reports none, or before adding).
  void clear_contacts() { contacts.clear(); }

  [[nodiscard]] hal::RayHit ray_cast(const Vec3& origin_m, const Vec3& direction, double max_range_m,
                                     int ignore_body) const override;

 private:
  const WorldModel& model_;
  const WorldState* state_ = nullptr;
  RayCastFn ray_cast_fn_;
};

/// Adds the devices' wrenches (body frame, per body) to the step's inputs.
void add_device_wrenches(const std::vector<hal::Wrench>& wrenches, StepInputs& inputs);

}  // namespace tether::runtime
