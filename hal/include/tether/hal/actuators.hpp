// SPDX-License-Identifier: Apache-2.0
// Actuator models: a command (payload bytes, decoded to numbers) and an internal state that
// evolves deterministically with dt become a force and torque on the body.
//
// Command channels: thruster [u in -1..1], dc_motor [volts], fin [angle rad], servo [angle
// rad], wheel_drive [left, right in -1..1]. Internal state (ActuatorState::x):
// thruster [rotor speed rad/s], dc_motor [rotor speed rad/s], fin [deflection rad], servo
// [angle rad], wheel_drive [left, right wheel speed rad/s].
#pragma once

#include <array>

#include "tether/hal/device_spec.hpp"
#include "tether/hal/wrench.hpp"

namespace tether::hal {

/// Internal state of one actuator: plain numbers, part of DeviceBank snapshots.
struct ActuatorState {
  std::array<double, 2> x{};
};

/// What one thruster step produced: the rotor speed at the end and the mean thrust.
struct RotorStep {
  double speed_rad_s = 0;
  double mean_thrust_n = 0;
};

/// The command after saturation to [-1, 1] and the dead band (NaN counts as 0).
double thruster_command(const ThrusterParams& p, double u);
/// Thrust of a rotor speed: ct * Omega * |Omega| (times reverse_ratio when Omega < 0).
double thruster_thrust(const ThrusterParams& p, double speed_rad_s);
/// Steady-state rotor speed for a command: u * max_speed (first order) or
/// sign(u) sqrt(beta |u| / alpha) (Yoerger). `p` must be resolved (resolve_thruster).
double thruster_steady_speed(const ThrusterParams& p, double u);
/// Advances the rotor over dt under command u (already through thruster_command); the
/// first-order model is integrated exactly, Yoerger's with RK4 in sub-steps of at most 1 ms;
/// the thrust is averaged over the sub-steps (trapezoid). `p` must be resolved.
RotorStep thruster_advance(const ThrusterParams& p, double speed_rad_s, double u, double dt_s);

/// Armature torque K_T (V - K_E w) / R, with V clamped to +-supply.
double dc_motor_torque(const DcMotorParams& p, double volts, double speed_rad_s);
/// Advances the rotor speed over dt (RK4 sub-steps); `mean_torque_nm` gets the mean
/// armature torque minus friction (what the body feels, negated) and `mean_thrust_n` the
/// propeller's mean thrust.
double dc_motor_advance(const DcMotorParams& p, double speed_rad_s, double volts, double dt_s, double& mean_torque_nm,
                        double& mean_thrust_n);

/// Lift + drag on a fin deflected by `angle_rad` moving with `velocity_mount` (its velocity
/// through the fluid, in the mount frame) in a fluid of density `density`: the force in the
/// mount frame.
Vec3 fin_force(const FinParams& p, double angle_rad, const Vec3& velocity_mount, double density);
/// Moves `angle` toward `target` by at most rate * dt (rate <= 0: jumps to target).
double rate_limited(double angle, double target, double rate, double dt_s);

/// Advances the actuator by dt under command channels `u` and adds its wrench on the body
/// (body frame, about the centre of mass) to `out`. `view` gives the body's motion, the
/// water and the ground (wheel contact rays).
void actuate_device(const DeviceSpec& spec, const double* u, ActuatorState& state, const WorldView& view, double dt_s,
                    Wrench& out);

/// A DC motor that turns another body (DcMotorParams::driven_body) puts its armature torque
/// about the shaft on that body (KindInfo::react); `x` is its ActuatorState::x.
void dc_motor_react(const DeviceSpec& spec, const double* x, const WorldView& view, Wrench* per_body,
                    std::size_t bodies);

}  // namespace tether::hal
