// SPDX-License-Identifier: Apache-2.0
// A window's replay (docs/feedback.md, "The offline fit"): the model's own step() run from a
// window's start state over its recorded inputs with a set of vehicle parameters — the body's
// thrusters' rotors run again slower by the thruster lag (a first-order lag of the whole input
// where the body has none), the input scaled by the thrust gain. The online `estimate`
// processor replays its measured-state windows with it, and `tether identify`'s fit its
// trial's windows: one code, so a value of a parameter means the same to both (tested bit for
// bit in tests/identify). Each caller says where its start state, inputs and rotor history
// come from; this file says what is done with them.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "tether/feedback/vehicle_parameters.hpp"
#include "tether/hal/actuators.hpp"
#include "tether/physics/physics.hpp"
#include "tether/physics/world_state.hpp"

namespace tether::runtime {

/// The change of a body's input at input indices [u0, u0 + steps) when its thrusters' rotors
/// run with time constants longer by `dtau`, against the twin's rotors (delta[u - u0]).
struct RotorDelta {
  double dtau = -1;  // -1: holds nothing
  std::int64_t u0 = -1;
  int steps = 0;
  std::vector<BodyWrench> delta;
};

/// The last two rotor deltas made (a window's base point and its Jacobian's probe of the lag),
/// the most recently used first.
class RotorDeltas {
 public:
  /// The delta of (dtau, u0, steps) if one is kept (it becomes the most recent), else nullptr.
  RotorDelta* find(double dtau, std::int64_t u0, int steps) {
    if (matches(entries_[1], dtau, u0, steps)) std::swap(entries_[0], entries_[1]);
    return matches(entries_[0], dtau, u0, steps) ? &entries_[0] : nullptr;
  }
  /// The least recently used entry, made the most recent for (dtau, u0, steps) with `steps`
  /// zero wrenches, for the caller to fill (no allocation once reserve() sized it).
  RotorDelta& make(double dtau, std::int64_t u0, int steps) {
    std::swap(entries_[0], entries_[1]);
    RotorDelta& out = entries_[0];
    out.dtau = dtau, out.u0 = u0, out.steps = steps;
    out.delta.assign(static_cast<std::size_t>(steps), BodyWrench{});
    return out;
  }
  /// Sizes both for windows of `steps` steps.
  void reserve(int steps) {
    for (RotorDelta& d : entries_) d.delta.assign(static_cast<std::size_t>(steps), BodyWrench{});
  }
  /// Forgets both (the history they were made from changed).
  void forget() {
    for (RotorDelta& d : entries_) d.dtau = -1;
  }

 private:
  static bool matches(const RotorDelta& d, double dtau, std::int64_t u0, int steps) {
    return d.dtau == dtau && d.u0 == u0 && d.steps == steps;
  }
  std::array<RotorDelta, 2> entries_;
};

/// How many steps before a window the slower rotors start (five of the longest time constant,
/// lengthened by `dtau`), so that they have caught up with their commands.
inline std::int64_t rotor_warmup_steps(const std::vector<BodyThruster>& thrusters, double dtau, double dt_s) {
  double tau = 0;
  for (const BodyThruster& th : thrusters) tau = std::max(tau, th.params.time_constant_s + dtau);
  return static_cast<std::int64_t>(std::ceil(5 * tau / dt_s));
}

/// Fills `out` (made for (dtau, u0, steps)): each thruster's rotor run again with its time
/// constant longer by out.dtau over input indices [from, end), from the twin's speed at
/// `from`; the change of its thrust against the twin's at indices >= out.u0 added to the
/// body's wrench. `history` answers command(u, j) (thruster j's command held over step u),
/// speed(u, j) (the twin's rotor speed at step u's start) and twin_thrust(u, j) (the twin's
/// mean thrust over step u).
template <class History>
void run_slower_rotors(const std::vector<BodyThruster>& thrusters, std::int64_t from, std::int64_t end, double dt_s,
                       RotorDelta& out, const History& history) {
  for (std::size_t j = 0; j < thrusters.size() && from < end; ++j) {
    const hal::ThrusterParams slow = slower_rotor(thrusters[j].params, out.dtau);
    double speed = history.speed(from, j);
    for (std::int64_t u = from; u < end; ++u) {
      const hal::RotorStep r = hal::thruster_advance(slow, speed, hal::thruster_command(slow, history.command(u, j)), dt_s);
      speed = r.speed_rad_s;
      if (u < out.u0) continue;
      thrusters[j].add_thrust(out.delta[static_cast<std::size_t>(u - out.u0)], r.mean_thrust_n - history.twin_thrust(u, j));
    }
  }
}

/// One window's replay: the parameters and how the input is lagged.
struct WindowReplay {
  const VehicleParameterBase* base = nullptr;  // the vehicle's body and its values before theta
  const double* theta = nullptr;               // vp::count values (vehicle_parameters.hpp)
  bool added_mass = false;                     // theta's added mass applied to the model
  bool angular_drag = true;                    // theta's angular drag applied to the model
  int steps = 0;
  double dt_s = 0;
  /// The thrusters' change of the input at each step (run_slower_rotors); nullptr: the whole
  /// input goes through a first-order lag of theta's thruster lag, from `lag`.
  const std::vector<BodyWrench>* rotor_delta = nullptr;
  BodyWrench lag{};  // the lag filter's state at the window's start
};

/// What a replay steps: kept from window to window, so a replay allocates nothing once sized.
struct ReplayWork {
  WorldState world;
  StepInputs inputs;  // sized to the model's bodies by the caller
  PhysicsScratch scratch;
  RotorDeltas rotors;
};

/// Sets a start state's momenta from its velocity and angular velocity (world frame).
inline void set_start_velocity(BodyState& b, const BodyModel& bm, const Vec3& velocity, const Vec3& angular_velocity) {
  b.linear_momentum = bm.mass_kg * velocity;
  const Mat3 r0 = b.orientation.toRotationMatrix();
  b.angular_momentum = r0 * bm.inertia_body * r0.transpose() * angular_velocity;
}

/// Replays a window: applies w.theta to `model`, starts work.world from `twin` (every body's
/// S_t0) with the fitted body's state set by start(BodyState&, const BodyModel&) (the model's
/// body with theta applied), then before step j = 1..w.steps sets the body's input from
/// input(j - 1) (a const BodyWrench&, as the twin's body received it), and after it calls
/// at(j, the body's state, its model). False on a numerical fault (the rest not stepped).
template <class Start, class Input, class At>
bool replay_window(const WindowReplay& w, WorldModel& model, ReplayWork& work, std::span<const BodyState> twin,
                   Start&& start, Input&& input, At&& at) {
  apply_vehicle_parameters(*w.base, w.theta, w.added_mass, model);
  if (w.angular_drag) apply_angular_drag(*w.base, w.theta[vp::angular_drag], model);
  const auto body = static_cast<std::size_t>(w.base->body);
  work.world.bodies.assign(twin.begin(), twin.end());
  start(work.world.bodies[body], static_cast<const BodyModel&>(model.bodies[body]));
  for (auto& x : work.inputs.wrenches) x = BodyWrench{};
  BodyWrench lag = w.lag;
  for (int j = 1; j <= w.steps; ++j) {
    BodyWrench& in = work.inputs.wrenches[body];
    const BodyWrench& recorded = input(j - 1);
    if (w.rotor_delta) {
      const BodyWrench& d = (*w.rotor_delta)[static_cast<std::size_t>(j - 1)];
      in = recorded;
      in.force_body_n += d.force_body_n;
      in.torque_body_nm += d.torque_body_nm;
    } else {
      in = lag_wrench_step(lag, recorded, w.theta[vp::thruster_lag], w.dt_s);
    }
    scale_wrench(in, w.theta[vp::thrust]);
    if (step(model, work.world, work.inputs, w.dt_s, nullptr, work.scratch) != StepStatus::ok) return false;
    at(j, static_cast<const BodyState&>(work.world.bodies[body]), static_cast<const BodyModel&>(model.bodies[body]));
  }
  return true;
}

}  // namespace tether::runtime
