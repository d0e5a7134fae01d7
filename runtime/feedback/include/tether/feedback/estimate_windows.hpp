// SPDX-License-Identifier: Apache-2.0
// The `estimate` processor's windows (docs/feedback.md, "estimate"): a ring of the recorded
// steps — each one's measured state and the input the twin's body received — and, with
// `thruster_lag_model: rotors`, each of the body's thrusters' command and its twin rotor's
// speed; a window of them is replayed with a set of parameters by the shared window replay
// (window_replay.hpp), as `tether identify` replays its trial's. Sized at configure: the step
// never allocates.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <Eigen/Core>

#include "tether/feedback/vehicle_parameters.hpp"
#include "tether/feedback/window_replay.hpp"
#include "tether/physics/world_model.hpp"
#include "tether/physics/world_state.hpp"

namespace tether::hal {
class DeviceBank;
}

namespace tether::runtime {

class EstimateWindows {
 public:
  /// One recorded step: the measured state at time index t and the input from t to t+1.
  struct Entry {
    std::int64_t time_index = -1;
    bool valid = false;         // state measured
    bool has_velocity = false;  // its velocities measured (else taken from the twin)
    bool has_input = false;
    BodyState state;  // position and orientation
    Vec3 velocity{0, 0, 0}, angular_velocity{0, 0, 0};
    BodyWrench input;
  };
  /// What a replay applies: the vehicle's parameters' base and which of theta's groups act.
  struct Parameters {
    const VehicleParameterBase* base = nullptr;
    bool added_mass = false, angular_drag = false;
  };
  /// Where a replay lands: position, velocity, heading, yaw rate.
  using Landing = Eigen::Matrix<double, 8, 1>;
  /// The positions at the window's checkpoints.
  using Track = Eigen::Matrix<double, 15, 1>;
  static constexpr int checkpoints = 5;
  /// The time index of checkpoint j of the window [t0, t1).
  static std::int64_t checkpoint(std::int64_t t0, std::int64_t t1, int j) {
    return t0 + ((j + 1) * (t1 - t0)) / checkpoints;
  }

  /// Sizes the ring for windows of `horizon` steps, their inputs `delay` steps earlier and
  /// `warmup` steps of inputs before them (the lag filter's); `bodies` is the model's count.
  void configure(int body, int horizon, int warmup, int delay, std::size_t bodies);
  Entry& entry(std::int64_t t) { return ring_[slot(t)]; }
  const Entry& entry(std::int64_t t) const { return ring_[slot(t)]; }
  static Entry fresh_entry(std::int64_t t) {
    Entry e;
    e.time_index = t;
    return e;
  }

  // --- the thruster lag on the body's thrusters: their rotors run again, slower ---

  /// The body's thrusters in `bank` (the first step with devices); none: the lag is a filter.
  void look_up_thrusters(const hal::DeviceBank& bank);
  /// The thrusters whose rotors the windows run (a test's, without a device bank).
  void set_thrusters(std::vector<BodyThruster> thrusters);
  bool thrusters_looked_up() const { return thrusters_looked_up_; }
  const std::vector<BodyThruster>& thrusters() const { return thrusters_; }
  /// Step k: each thruster's command as held (the bank has actuated it) and its rotor's speed
  /// at the step's end.
  void record_rotors(const hal::DeviceBank& bank, std::int64_t k);
  /// Step k of thruster j: its command held and its twin rotor's speed at the step's end.
  void record_rotor(std::int64_t k, std::size_t j, double command, double speed_end);
  /// Whether step t's rotor speeds are known (always without thrusters).
  bool rotors_known(std::int64_t t) const;
  /// The live twin's thrusters slowed by `dtau` over step k, added to `w`.
  void add_live_rotors(std::int64_t k, double dtau, double dt, BodyWrench& w);

  /// Replays steps [t0, t1) from the measured S_t0 (its velocity changed by dv) with
  /// parameters th on `model` (the other bodies from `twin`): the landing and the positions at
  /// the checkpoints (track); false on a fault.
  bool replay(WorldModel& model, const Parameters& p, const double* th, const WorldState& twin, std::int64_t t0,
              std::int64_t t1, double dt, Landing& landing, const Vec3& dv = Vec3::Zero(), Track* track = nullptr);

  /// The ring and the rotors' history, appended (keyframes).
  void snapshot(std::string& out) const;
  /// Restores what snapshot() wrote, all of `in` (false otherwise).
  bool restore(std::string_view in);

 private:
  std::size_t slot(std::int64_t t) const {
    return static_cast<std::size_t>(t % static_cast<std::int64_t>(ring_.size()));
  }
  std::size_t rotor_slot(std::int64_t t, std::size_t j) const { return slot(t) * thrusters_.size() + j; }
  void size_rotors(std::size_t n);
  double slow_thrust(std::size_t j, const hal::ThrusterParams& slow, double& speed, std::int64_t t, double dt) const;
  double twin_thrust(std::size_t j, std::int64_t t, double dt) const;
  const std::vector<BodyWrench>& rotor_delta(std::int64_t u0, std::int64_t steps, double dtau, double dt);
  BodyWrench lag_before(std::int64_t t0, double tau, double dt) const;
  static void put_entry(std::string& out, const Entry& e);
  static bool get_entry(std::string_view& in, Entry& e);

  int body_ = 0, horizon_ = 0;
  int warmup_ = 0;  // steps of inputs kept before a window for the lag's filter
  int delay_ = 0;   // input_delay_steps
  std::vector<Entry> ring_;
  // with `thruster_lag_model: rotors`, the thruster lag on the body's thrusters (found in the
  // session's devices on the first step; none: the filter): per ring slot each one's command
  // and its twin rotor's speed at the step's start (NaN: not known), the twin's speeds at the
  // last step's end, and the live twin's slower rotors
  bool thrusters_looked_up_ = false;
  std::vector<BodyThruster> thrusters_;
  std::vector<double> rotor_cmd_, rotor_speed_, speed_end_, live_speed_;
  ReplayWork work_;
  friend struct RingRotors;
};

/// Raw bytes of a wrench, field by field (processor snapshots).
void put_wrench(std::string& out, const BodyWrench& w);
bool get_wrench(std::string_view& in, BodyWrench& w);

}  // namespace tether::runtime
