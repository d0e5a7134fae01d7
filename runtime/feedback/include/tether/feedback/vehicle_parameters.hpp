// SPDX-License-Identifier: Apache-2.0
// The vehicle parameters a fit may change, and how they act on the model: the online
// `estimate` processor and the offline `tether identify` use this one mapping, so a value one
// of them finds means the same to the other (docs/feedback.md).
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "tether/hal/device_spec.hpp"
#include "tether/physics/physics.hpp"
#include "tether/physics/world_model.hpp"

namespace tether::runtime {

/// Indices into a parameter vector theta.
namespace vp {
inline constexpr int thrust = 0;          // thrust coefficient c: the body's inputs x c
inline constexpr int linear_drag = 1;     // 3: body-axis linear damping x, y, z
inline constexpr int quadratic_drag = 4;  // 3: body-axis quadratic damping x, y, z
inline constexpr int buoyancy = 7;        // buoyancy offset b (N, up): displaced volume + b / (rho g)
inline constexpr int current_x = 8;       // water current x, y (m/s)
inline constexpr int current_y = 9;
inline constexpr int thruster_lag = 10;  // the rotors' time constants longer by this (s); without thrusters
                                         // on the body, a first-order lag of the inputs before c
inline constexpr int added_mass = 11;    // a: mass and inertia x (1 + a), displaced volume + a m / rho
inline constexpr int angular_drag = 12;  // the body's yaw damping x this (apply_angular_drag)
inline constexpr int count = 13;
}  // namespace vp

/// The parameters' names as the summary, the recording and fit files spell them.
inline constexpr std::array<const char*, vp::count> vehicle_parameter_names = {
    "thrust_coefficient", "linear_drag_x",       "linear_drag_y",     "linear_drag_z", "quadratic_drag_x",
    "quadratic_drag_y",   "quadratic_drag_z",    "buoyancy_offset_n", "current_x_m_s", "current_y_m_s",
    "thruster_lag_s",     "added_mass_fraction", "angular_drag_scale"};

/// What the mapping starts from: the body's values in the scenario's model.
struct VehicleParameterBase {
  int body = 0;
  double volume0_m3 = 0, mass0_kg = 1, gravity_m_s2 = 9.81, buoyancy_per_m3 = 1;
  Mat3 inertia0 = Mat3::Identity(), inv_inertia0 = Mat3::Identity();
  Vec3 angular_linear0{0, 0, 0}, angular_quadratic0{0, 0, 0};  // the body's angular damping
};
VehicleParameterBase vehicle_parameter_base(const WorldModel& model, int body);

/// The model's net static force up on the submerged body (its displaced water's weight less its
/// own, N): with the buoyancy offset b it is what the vertical motion shows, over the effective
/// mass, (B0 + b) / (1 + a) (the added mass weighs nothing in water).
double net_buoyancy_n(const VehicleParameterBase& base);

/// The manoeuvre that would strengthen a weak direction led by parameter `i` (a vp index), as
/// the online `estimate` processor's summary and `tether identify` say it.
const char* manoeuvre_advice(int i);

/// The model's own values (c = 1, its drags and current, no offset, lag or added mass, the
/// angular drag x 1).
std::array<double, vp::count> nominal_vehicle_parameters(const WorldModel& model, int body);

/// The bounds of each parameter and its prior standard deviation (the `estimate` processor's
/// keys, docs/feedback.md).
struct VehicleParameterRanges {
  double thrust_a = 0.3, thrust_b = 3;  // thrust_range
  double drag_factor = 5;               // drag_range_factor
  double max_buoyancy_n = 0;            // max_buoyancy_offset_n (0: 25 % of the weight)
  double max_current_m_s = 1;
  double max_thruster_lag_s = 0.3;
  double added_mass_stddev = 0.1;
  double stddev_scale = 1;  // initial_stddev (not for the added mass)
};
struct VehicleParameterPrior {
  std::array<double, vp::count> lo{}, hi{}, sd{};
};
/// Drags within [0, max(factor x nominal, nominal + 20 or 50)], |b| <= max_buoyancy_n, the
/// lag within [0, max]; the added mass is considered only (lo = hi = 0); the angular drag's
/// scale within [1 / factor, factor]; sd about a third of the range, so the data decide.
VehicleParameterPrior vehicle_parameter_prior(const std::array<double, vp::count>& nominal,
                                              const VehicleParameterRanges& ranges);

/// Puts theta into `model` (a copy of the scenario's): drags, displaced volume, current, and
/// with `with_added_mass` the mass and inertia. The thrust gain and the lag act on the inputs
/// (scale_wrench, lag_wrench_step), the model has no field for them.
void apply_vehicle_parameters(const VehicleParameterBase& base, const double* theta, bool with_added_mass,
                              WorldModel& model);

/// The body's angular damping about its z axis (yaw; linear and quadratic) x `scale`:
/// vp::angular_drag, online (the `angular_drag` group) and offline. Roll and pitch keep the model's: the restoring
/// moment rules them, and fitted with the yaw they pulled the scale to its bound on short trials of the exact model.
void apply_angular_drag(const VehicleParameterBase& base, double scale, WorldModel& model);

/// w x c, every part.
void scale_wrench(BodyWrench& w, double c);

/// A first-order lag with time constant tau on the wrench, its state y the filtered wrench at
/// the step's start; returns the filter's mean over the step (the input held for dt), as a
/// thruster's rotor gives its mean thrust over the step. tau = 0: the input itself.
BodyWrench lag_wrench_step(BodyWrench& y, const BodyWrench& in, double tau, double dt);

/// A thruster on the fitted body. With thrusters on the body the thruster lag slows their
/// rotors: the online `estimate` and the offline fit run each rotor again from its commands
/// with a time constant longer by the lag and add the change of its thrust to the body's
/// input (without thrusters: lag_wrench_step on the whole input).
struct BodyThruster {
  std::size_t device = 0;      // its index in the session's device bank
  std::string name;            // its full name
  hal::ThrusterParams params;  // resolved, as the twin runs it
  BodyWrench unit;             // the body wrench of one newton of its thrust (body frame)

  /// Adds `thrust_n` newtons of its thrust (along its axis, with its reaction torque) to `w`.
  void add_thrust(BodyWrench& w, double thrust_n) const {
    w.force_body_n += thrust_n * unit.force_body_n;
    w.torque_body_nm += thrust_n * unit.torque_body_nm;
  }
};
}  // namespace tether::runtime
namespace tether::hal {
class DeviceBank;
}
namespace tether::runtime {
/// The thrusters mounted on `body` in `bank`, in the bank's order.
std::vector<BodyThruster> body_thrusters(const hal::DeviceBank& bank, int body);
/// `p` with its rotor's time constant longer by `dtau` s (Yoerger's alpha and beta scaled
/// together: the same top speed, reached slower).
hal::ThrusterParams slower_rotor(hal::ThrusterParams p, double dtau);

}  // namespace tether::runtime
