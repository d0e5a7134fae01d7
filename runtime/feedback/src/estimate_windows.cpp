// SPDX-License-Identifier: Apache-2.0
// The `estimate` processor's windows (tether/feedback/estimate_windows.hpp): the ring of
// recorded steps, the rotors' history, and a window's replay through the shared one.
#include "tether/feedback/estimate_windows.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "feedback_processors.hpp"
#include "tether/hal/actuators.hpp"
#include "tether/hal/device_bank.hpp"

namespace tether::runtime {

using feedback_detail::get_bytes;
using feedback_detail::put_bytes;

namespace {
// the body x axis' heading in the horizontal plane
double heading(const Quat& q) {
  const Mat3 r = q.toRotationMatrix();
  return std::atan2(r(1, 0), r(0, 0));
}
}  // namespace

// the ring's rotor history, as run_slower_rotors asks for it
struct RingRotors {
  const EstimateWindows& w;
  double dt;
  double command(std::int64_t u, std::size_t j) const { return w.rotor_cmd_[w.rotor_slot(u, j)]; }
  double speed(std::int64_t u, std::size_t j) const { return w.rotor_speed_[w.rotor_slot(u, j)]; }
  double twin_thrust(std::int64_t u, std::size_t j) const { return w.twin_thrust(j, u, dt); }
};

void EstimateWindows::configure(int body, int horizon, int warmup, int delay, std::size_t bodies) {
  body_ = body, horizon_ = horizon, warmup_ = warmup, delay_ = delay;
  // pre-sized: the step never allocates
  ring_.assign(static_cast<std::size_t>(horizon_ + warmup_ + delay_ + 2), Entry{});
  work_.world.bodies.resize(bodies);
  work_.inputs.resize(bodies);
}

void EstimateWindows::look_up_thrusters(const hal::DeviceBank& bank) { set_thrusters(body_thrusters(bank, body_)); }

void EstimateWindows::set_thrusters(std::vector<BodyThruster> thrusters) {
  thrusters_looked_up_ = true;
  thrusters_ = std::move(thrusters);
  if (thrusters_.empty()) return;
  if (speed_end_.size() != thrusters_.size()) size_rotors(thrusters_.size());  // else restored
  work_.rotors.reserve(horizon_);
}

// the rotors' history for n thrusters, nothing known yet (NaN: the speed at a step's start
// is known from the second step seen on)
void EstimateWindows::size_rotors(std::size_t n) {
  const double unknown = std::numeric_limits<double>::quiet_NaN();
  speed_end_.assign(n, unknown);
  live_speed_.assign(n, unknown);
  rotor_cmd_.assign(ring_.size() * n, 0.0);
  rotor_speed_.assign(ring_.size() * n, unknown);
}

bool EstimateWindows::rotors_known(std::int64_t t) const {
  return thrusters_.empty() || !std::isnan(rotor_speed_[rotor_slot(t, 0)]);
}

void EstimateWindows::record_rotors(const hal::DeviceBank& bank, std::int64_t k) {
  for (std::size_t j = 0; j < thrusters_.size(); ++j) {
    const hal::Sample& held = bank.sample(thrusters_[j].device);
    record_rotor(k, j, held.valid ? held.ch[0] : 0.0, bank.actuator_state(thrusters_[j].device).x[0]);
  }
}

// its speed at the step's start is the end of the step before
void EstimateWindows::record_rotor(std::int64_t k, std::size_t j, double command, double speed_end) {
  rotor_cmd_[rotor_slot(k, j)] = command;
  rotor_speed_[rotor_slot(k, j)] = speed_end_[j];
  speed_end_[j] = speed_end;
}

// thruster j's rotor at `speed` (advanced) run with `slow` over step t: its mean thrust
double EstimateWindows::slow_thrust(std::size_t j, const hal::ThrusterParams& slow, double& speed, std::int64_t t,
                                    double dt) const {
  const hal::RotorStep r =
      hal::thruster_advance(slow, speed, hal::thruster_command(slow, rotor_cmd_[rotor_slot(t, j)]), dt);
  speed = r.speed_rad_s;
  return r.mean_thrust_n;
}

// the twin's own thrust of thruster j over step t (its recorded speed and command: the same
// function on the same numbers as the bank's, so an unchanged rotor adds exactly nothing)
double EstimateWindows::twin_thrust(std::size_t j, std::int64_t t, double dt) const {
  const hal::ThrusterParams& p = thrusters_[j].params;
  const std::size_t i = rotor_slot(t, j);
  return hal::thruster_advance(p, rotor_speed_[i], hal::thruster_command(p, rotor_cmd_[i]), dt).mean_thrust_n;
}

// the live twin: its rotors run slower by the lag estimated so far
void EstimateWindows::add_live_rotors(std::int64_t k, double dtau, double dt, BodyWrench& w) {
  for (std::size_t j = 0; j < thrusters_.size(); ++j) {
    if (std::isnan(rotor_speed_[rotor_slot(k, j)])) {  // the first step: start with the twin's
      live_speed_[j] = speed_end_[j];
      continue;
    }
    if (std::isnan(live_speed_[j])) live_speed_[j] = rotor_speed_[rotor_slot(k, j)];
    const double slow = slow_thrust(j, slower_rotor(thrusters_[j].params, dtau), live_speed_[j], k, dt);
    thrusters_[j].add_thrust(w, slow - twin_thrust(j, k, dt));
  }
}

// the change of the input at steps [u0, u0 + steps) when the rotors run with time constants
// longer by dtau: from the twin's recorded speeds a warm-up of five time constants earlier
// (as far as the ring and the history reach). Two kept: a window's base and its lag probe.
const std::vector<BodyWrench>& EstimateWindows::rotor_delta(std::int64_t u0, std::int64_t steps, double dtau,
                                                            double dt) {
  const auto n = static_cast<int>(steps);
  if (const RotorDelta* kept = work_.rotors.find(dtau, u0, n)) return kept->delta;
  RotorDelta& out = work_.rotors.make(dtau, u0, n);
  const std::int64_t warm = rotor_warmup_steps(thrusters_, dtau, dt);
  std::int64_t from = u0;
  while (from > std::max<std::int64_t>(u0 - warm, 1) && entry(from - 1).time_index == from - 1 &&
         entry(from - 1).has_input && rotors_known(from - 1))
    --from;
  run_slower_rotors(thrusters_, from, u0 + steps, dt, out, RingRotors{*this, dt});
  return out.delta;
}

// the lag filter's state at the start of a window whose first input is t0's: settled on the
// earliest input the warm-up keeps, then run over the inputs up to t0
BodyWrench EstimateWindows::lag_before(std::int64_t t0, double tau, double dt) const {
  BodyWrench y = entry(t0).input;
  bool settled = false;
  for (std::int64_t t = std::max<std::int64_t>(t0 - warmup_, 0); t < t0; ++t) {
    const Entry& e = entry(t);
    if (e.time_index != t || !e.has_input) continue;
    if (!settled) y = e.input, settled = true;
    (void)lag_wrench_step(y, e.input, tau, dt);
  }
  return y;
}

bool EstimateWindows::replay(WorldModel& model, const Parameters& p, const double* th, const WorldState& twin,
                             std::int64_t t0, std::int64_t t1, double dt, Landing& landing, const Vec3& dv,
                             Track* track) {
  WindowReplay w;
  w.base = p.base;
  w.theta = th;
  w.added_mass = p.added_mass;
  w.angular_drag = p.angular_drag;
  w.steps = static_cast<int>(t1 - t0);
  w.dt_s = dt;
  if (!thrusters_.empty())
    w.rotor_delta = &rotor_delta(t0 - delay_, t1 - t0, th[vp::thruster_lag], dt);
  else
    w.lag = lag_before(t0 - delay_, th[vp::thruster_lag], dt);
  const Entry& e0 = entry(t0);
  const auto start = [&](BodyState& b, const BodyModel& bm) {
    b = e0.state;
    const Vec3 v = e0.velocity + dv;
    set_start_velocity(b, bm, v, e0.angular_velocity);
  };
  const auto input = [&](int i) -> const BodyWrench& { return entry(t0 + i - delay_).input; };
  int next_checkpoint = 0;
  const auto at = [&](int j, const BodyState& s, const BodyModel&) {
    if (track && next_checkpoint < checkpoints && t0 + j == checkpoint(t0, t1, next_checkpoint))
      track->segment<3>(3 * next_checkpoint++) = s.position_m;
  };
  if (!replay_window(w, model, work_, twin.bodies, start, input, at)) return false;
  const BodyState& s = work_.world.bodies[static_cast<std::size_t>(body_)];
  landing.head<3>() = s.position_m;
  landing.segment<3>(3) = s.linear_momentum * model.bodies[static_cast<std::size_t>(body_)].inv_mass;
  landing[6] = heading(s.orientation);
  landing[7] = angular_velocity(model, work_.world, body_).z();
  return true;
}

void put_wrench(std::string& out, const BodyWrench& w) {
  put_bytes(out, w.force_world_n);
  put_bytes(out, w.torque_world_nm);
  put_bytes(out, w.force_body_n);
  put_bytes(out, w.torque_body_nm);
}
bool get_wrench(std::string_view& in, BodyWrench& w) {
  return get_bytes(in, w.force_world_n) && get_bytes(in, w.torque_world_nm) && get_bytes(in, w.force_body_n) &&
         get_bytes(in, w.torque_body_nm);
}

// field by field: no padding bytes in keyframes
void EstimateWindows::put_entry(std::string& out, const Entry& e) {
  put_bytes(out, e.time_index);
  put_bytes(out, static_cast<std::uint8_t>(e.valid | e.has_velocity << 1 | e.has_input << 2));
  put_bytes(out, e.state.position_m);
  put_bytes(out, e.state.orientation.coeffs());
  put_bytes(out, e.velocity);
  put_bytes(out, e.angular_velocity);
  put_wrench(out, e.input);
}
bool EstimateWindows::get_entry(std::string_view& in, Entry& e) {
  std::uint8_t flags = 0;
  Eigen::Vector4d q;
  const bool ok = get_bytes(in, e.time_index) && get_bytes(in, flags) && get_bytes(in, e.state.position_m) &&
                  get_bytes(in, q) && get_bytes(in, e.velocity) && get_bytes(in, e.angular_velocity) &&
                  get_wrench(in, e.input);
  e.state.orientation.coeffs() = q;
  e.valid = flags & 1, e.has_velocity = flags & 2, e.has_input = flags & 4;
  return ok;
}

void EstimateWindows::snapshot(std::string& out) const {
  for (const Entry& e : ring_) put_entry(out, e);
  // the rotors' history (empty without thrusters on the body or a thruster lag)
  put_bytes(out, static_cast<std::uint32_t>(speed_end_.size()));
  for (const auto* v : {&speed_end_, &live_speed_, &rotor_cmd_, &rotor_speed_})
    for (double x : *v) put_bytes(out, x);
}

bool EstimateWindows::restore(std::string_view b) {
  for (Entry& e : ring_)
    if (!get_entry(b, e)) return false;
  std::uint32_t n = 0;
  if (!get_bytes(b, n) || (thrusters_looked_up_ && n != thrusters_.size())) return false;
  // exactly the rotors' history of n thrusters is left (checked before it is allocated)
  if (b.size() != sizeof(double) * std::size_t{n} * (2 + 2 * ring_.size())) return false;
  size_rotors(n);
  for (auto* v : {&speed_end_, &live_speed_, &rotor_cmd_, &rotor_speed_})
    for (double& x : *v)
      if (!get_bytes(b, x)) return false;
  work_.rotors.forget();  // computed from the timeline before the restore
  return b.empty();
}

}  // namespace tether::runtime
