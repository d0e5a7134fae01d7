// SPDX-License-Identifier: Apache-2.0
// A stand-in for a physical vehicle: the "truth" a tank rig would measure. It runs the
// runtime's own physics on a copy of the scenario's world whose hidden parameters differ
// (drag, thrust coefficient, buoyancy, a current), drives its own copy of the vehicle's
// actuators with the commands it is given, and reports noisy, optionally delayed
// measurements. Used in-process (feedback experiments, bench/correction) and by the
// `tether-vehicle` program that speaks MQTT like a real rig (docs/mqtt.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "tether/loop/feedback.hpp"
#include "tether/physics/physics.hpp"
#include "tether/physics/world_model.hpp"
#include "tether/physics/world_state.hpp"

namespace tether::runtime {

struct Scenario;

/// What the real vehicle does differently from the model (all defaults: identical physics,
/// perfect and immediate measurements).
struct HiddenParams {
  double drag_scale = 1.0;             // multiplies every damping coefficient of the vehicle's bodies
  double thrust_scale = 1.0;           // multiplies the actuators' wrenches (thrust coefficient)
  double buoyancy_offset_n = 0.0;      // extra buoyancy when submerged (N, + = lighter in water)
  Vec3 current_m_s{0, 0, 0};           // added to the scenario's water current
  double position_noise_m = 0.0;       // stddev of each measured position axis
  double orientation_noise_rad = 0.0;  // stddev of each axis of a small rotation error
  double velocity_noise_m_s = 0.0;     // stddev of each measured velocity axis
  std::uint32_t delay_steps = 0;       // measurements describe the state this many steps ago
};

/// A plausible "real" vehicle for demos and tests: 15 % more drag, 10 % less thrust,
/// 2 N heavier, a 5 cm/s current along +y, millimetre noise, no delay.
HiddenParams default_hidden_params();

class StandInVehicle {
 public:
  /// Copies the scenario's world and initial state, applies `hidden` to the bodies of vehicle
  /// `vehicle` (index into model.vehicles) and builds its own device bank seeded from `seed`.
  /// Throws std::invalid_argument if the vehicle index is out of range.
  StandInVehicle(const Scenario& scenario, int vehicle, const HiddenParams& hidden, std::uint64_t seed);
  ~StandInVehicle();
  StandInVehicle(StandInVehicle&&) noexcept;
  StandInVehicle& operator=(StandInVehicle&&) noexcept;

  /// Sets an actuator's command (device index in the scenario's device table, payload bytes
  /// as firmware ACTUATE carries them); used from the next advance(). False if the device is
  /// unknown, not an actuator, or the bytes do not fit.
  bool command(std::size_t device, const std::uint8_t* bytes, std::size_t size);
  /// Same with the command's channels as numbers (a thruster: {u}); false as above.
  bool command_values(std::size_t device, const double* values, std::size_t count);
  /// Index of a device by full name ("auv.hull.thruster_left"), or -1.
  int find_device(const char* full_name) const;

  /// Advances the true world by dt_s: the actuators under their commands (scaled by
  /// thrust_scale) plus `extra` (per-body wrenches of the scenario's bodies; may be empty).
  /// Returns numerical_fault on NaN/Inf (the vehicle is then broken for good).
  [[nodiscard]] StepStatus advance(const StepInputs& extra, double dt_s);
  /// Advances with the actuators alone.
  [[nodiscard]] StepStatus advance(double dt_s);

  /// The vehicle's first body as the rig reports it now: pose and world velocities with
  /// noise, of the state delay_steps ago (measured_time_ns says which time).
  Measurement measure();
  /// One measurement per body of the vehicle, appended to `out` (same noise and delay).
  void measure_all(std::vector<Measurement>& out);

  /// The true state (no noise, no delay).
  const WorldState& state() const;
  /// The perturbed model the truth runs on.
  const WorldModel& model() const;
  const HiddenParams& hidden() const;
  int vehicle() const;
  /// Puts the true state somewhere else (tests, re-synchronising after a reset); clears the
  /// delay line.
  void set_state(const WorldState& state);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;  // on the heap: the device view keeps a reference to the model
};

}  // namespace tether::runtime
