// SPDX-License-Identifier: Apache-2.0
// Joints between bodies: building them from a world anchor and axis, and reading what they
// hold (angle, travel, error). The solver itself is part of step() (docs/physics.md, "Joints").
#pragma once

#include <string>

#include "tether/physics/world_model.hpp"
#include "tether/physics/world_state.hpp"

namespace tether::runtime {

/// A joint as a scenario states it: world anchor and axis at the bodies' current poses.
struct JointSpec {
  std::string name;
  JointKind kind = JointKind::ball;
  int body_a = -1;
  int body_b = -1;               // -1: the world
  Vec3 anchor_world_m{0, 0, 0};  // hinge, ball, fixed, slider
  Vec3 axis_world{1, 0, 0};      // hinge, slider (need not be unit; not zero)
  bool limited = false;
  double lower = 0, upper = 0;                                 // rad (hinge) or m (slider)
  std::uint8_t locked = 0;                                     // lock: bits 0..2 world x, y, z; 3..5 turning about them
  double motor_speed = 0, motor_max = 0, brake = 0;            // hinge, slider (JointModel)
  double spring_n_m = 0, damper_n_s_m = 0, spring_rest_m = 0;  // slider
};

/// The joint in its bodies' frames, built at the poses in `state` (its zero angle and travel).
JointModel make_joint(const JointSpec& spec, const WorldState& state);

/// A joint's coordinate: hinge angle (rad, b relative to a about the axis, in (-pi, pi]),
/// slider travel (m, b along the axis from where it was built); 0 for the other kinds.
double joint_position(const JointModel& joint, const WorldState& state);

/// The rate of joint_position (rad/s, m/s) from the bodies' velocities; 0 for other kinds.
double joint_rate(const JointModel& joint, const WorldModel& model, const WorldState& state);

/// How far the bodies are from what the joint holds: the anchors' distance (slider: off the
/// axis; lock: off the held position) and the angle by which the orientations disagree
/// (hinge: the axes; fixed, slider, lock: the whole relative orientation; ball: 0).
struct JointError {
  double linear_m = 0;
  double angular_rad = 0;
};
JointError joint_error(const JointModel& joint, const WorldState& state);

}  // namespace tether::runtime
