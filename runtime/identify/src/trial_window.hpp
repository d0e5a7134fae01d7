// SPDX-License-Identifier: Apache-2.0
// A window of a trial replayed (the fit's windows, the prediction's segments): the shared
// window replay (tether/feedback/window_replay.hpp, the online `estimate`'s too) told where a
// trial keeps its start states, inputs and rotors. Private to the identify library.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "tether/feedback/window_replay.hpp"
#include "tether/identify/identify.hpp"

namespace tether::identify::detail {

namespace vp = runtime::vp;

// a window's start: position, velocity and a turn of the measured orientation (body frame,
// a rotation vector): fitted, tied to the measured start by its noise
inline constexpr int start_size = 9;
inline constexpr int lag_warmup_steps = 100;

// what every window of one trial shares
struct TrialModel {
  const Trial* trial = nullptr;
  runtime::VehicleParameterBase base;
  std::array<bool, vp::count> active{};
  double sigma_p = 0.005, sigma_v = 0.01, sigma_q = 0;  // sigma_q 0: orientation not compared
  int delay = 0;
};

// which window: `steps` steps from sample t0's start state (`start`: start_size values) with
// the inputs from index u0, with parameters `theta` (vp::count values)
struct TrialWindow {
  const double* theta = nullptr;
  const double* start = nullptr;
  std::size_t t0 = 0;
  std::int64_t u0 = 0;
  int steps = 0;
};

// the lag filter's state at input index u0: settled on the earliest input of the warm-up,
// then run over the inputs up to u0
BodyWrench lag_before(const Trial& trial, std::int64_t u0, double tau, double dt);

// the thrusters' rotors re-run with time constants longer by `dtau` (the offline thruster
// lag: the vehicle's rotors spin up slower than the model's), from the recorded commands: the
// change of the body's wrench at each input index of [u0, u0 + steps) against the twin's
// rotors. The rotors start a warm-up of five time constants earlier at the twin's recorded
// speeds. Two kept: a Jacobian's probe of the lag and the point it probes from.
const std::vector<BodyWrench>& rotor_delta(const Trial& tr, std::int64_t u0, int steps, double dtau,
                                           runtime::RotorDeltas& cache);

// replays a window from its start state (position, velocity and turn from w.start;
// orientation and angular velocity of sample t0); calls at(j, body state, body model) after
// each step j = 1..steps; false on a numerical fault
template <class At>
bool simulate(const TrialModel& tm, runtime::WorldModel& model, runtime::ReplayWork& work, const TrialWindow& tw,
              At&& at) {
  const Trial& tr = *tm.trial;
  const TrialSample& s0 = tr.samples[tw.t0];
  runtime::WindowReplay w;
  w.base = &tm.base;
  w.theta = tw.theta;
  w.added_mass = tm.active[vp::added_mass];
  w.angular_drag = true;
  w.steps = tw.steps;
  w.dt_s = tr.dt_s;
  // with thrusters on the body, their rotors run again with the lag added to their time
  // constants; without, the lag is a first-order filter on the whole input (as online)
  if (!tr.thrusters.empty())
    w.rotor_delta = &rotor_delta(tr, tw.u0, tw.steps, tw.theta[vp::thruster_lag], work.rotors);
  else
    w.lag = lag_before(tr, tw.u0, tw.theta[vp::thruster_lag], tr.dt_s);
  const double* start = tw.start;
  const auto start_state = [&](runtime::BodyState& b, const runtime::BodyModel& bm) {
    b.position_m = Vec3(start[0], start[1], start[2]);
    const Vec3 turn(start[6], start[7], start[8]);
    const double angle = turn.norm();
    b.orientation =
        angle > 0 ? (s0.orientation * Quat(Eigen::AngleAxisd(angle, turn / angle))).normalized() : s0.orientation;
    const Vec3 w0 = s0.has_velocity ? s0.angular_velocity : runtime::Vec3::Zero();
    runtime::set_start_velocity(b, bm, Vec3(start[3], start[4], start[5]), w0);
  };
  const auto input = [&](int i) -> const BodyWrench& {
    return tr.samples[static_cast<std::size_t>(tw.u0 + i)].input;
  };
  return runtime::replay_window(w, model, work, tr.twin[std::min(tw.t0, tr.twin.size() - 1)], start_state, input, at);
}

}  // namespace tether::identify::detail
