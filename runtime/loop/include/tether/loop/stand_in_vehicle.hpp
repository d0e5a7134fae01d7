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
#include <string>
#include <utility>
#include <vector>

#include "tether/hal/device_spec.hpp"
#include "tether/loop/endpoint.hpp"
#include "tether/feedback/feedback.hpp"
#include "tether/physics/physics.hpp"
#include "tether/physics/world_model.hpp"
#include "tether/physics/world_state.hpp"

namespace tether::runtime {

struct Scenario;

/// What the real vehicle does differently from the model (all defaults: identical physics,
/// perfect and immediate measurements). Some differences are ones the model can represent
/// (the estimate processor's parameters: drag, thrust, buoyancy, a steady current); the
/// others are structure the model lacks (per-axis drag shape, slower thrusters with a wider
/// dead band, added mass, a current that changes in time and with depth, delayed and biased
/// measurements), so an estimator must cope with reality not being the model
/// (docs/feedback.md, "The stand-in for reality").
struct HiddenParams {
  double drag_scale = 1.0;                    // multiplies every damping coefficient of the vehicle's bodies
  Vec3 linear_drag_axis_scale{1, 1, 1};       // and the linear ones per body axis (x, y, z)
  Vec3 quadratic_drag_axis_scale{1, 1, 1};    // and the quadratic ones per body axis
  double thrust_scale = 1.0;                  // multiplies the actuators' wrenches (thrust coefficient)
  double thruster_time_constant_scale = 1.0;  // thrusters' rotor time constant x this (slower spin-up)
  double thruster_dead_band = 0.0;            // thruster commands |u| below this give no thrust (at least)
  double added_mass_fraction = 0.0;           // inertia x (1 + this) for every motion; the weight in water unchanged
  double buoyancy_offset_n = 0.0;             // extra buoyancy when submerged (N, + = lighter in water)
  Vec3 current_m_s{0, 0, 0};                  // added to the scenario's water current (steady part)
  Vec3 current_swing_m_s{0, 0, 0};            // amplitude of a slow sinusoidal change of that current...
  double current_period_s = 60;               // ...with this period
  Vec3 current_shear_per_m{0, 0, 0};          // current change per metre below the surface (at the vehicle)
  double position_noise_m = 0.0;              // stddev of each measured position axis
  double orientation_noise_rad = 0.0;         // stddev of each axis of a small rotation error
  double velocity_noise_m_s = 0.0;            // stddev of each measured velocity axis
  double angular_velocity_noise_rad_s = 0.0;  // stddev of each measured angular velocity axis
  Vec3 velocity_bias_m_s{0, 0, 0};            // a fixed error of the measured velocity (world frame)
  std::uint32_t delay_steps = 0;              // measurements describe the state this many steps ago
};

/// A plausible "real" vehicle for demos, tests and benchmarks (what `tether-vehicle` is
/// without --exact): 15 % more drag (shaped per axis), 10 % less thrust, thrusters 20 %
/// slower with a 0.03 dead band, 10 % added mass, 2 N heavier, a 5 cm/s current
/// along +y that swings by 1 cm/s over a minute, millimetre noise and a 1 mm/s velocity bias.
HiddenParams default_hidden_params();

/// The values the `estimate` feedback processor should find for body `body` of `model`
/// when the vehicle is `hidden` (its parameter names: thrust_coefficient, linear_drag_x,
/// ..., buoyancy_offset_n, current_x_m_s, current_y_m_s, the current's steady part;
/// added_mass_fraction; and thruster_lag_s, the extra lag of thrusters whose rotor time
/// constant `thruster_time_constant_s` is scaled, its first-order equivalent, when that is
/// above 0). What the model has no parameter for (dead band, swing, bias) has no entry: it is
/// the structure the estimator must cope with.
std::vector<std::pair<std::string, double>> hidden_truth(const WorldModel& model, int body, const HiddenParams& hidden,
                                                         double thruster_time_constant_s);

/// The mean rotor time constant of the thrusters (a yoerger rotor's at full speed) on the vehicle of body `body`
/// (0 when it has none): what a thruster lag is measured against.
double thruster_time_constant_s(const WorldModel& model, const std::vector<hal::DeviceSpec>& devices, int body);

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
  /// noise and bias, of the state delay_steps ago (measured_time_ns says which time).
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
  /// Takes `other`'s device state (its rotors' speeds, the commands its actuators hold, its
  /// sensors' noise streams): a prediction from another vehicle's state starts with that
  /// vehicle's rotors spinning, not at rest. False (nothing changed) if the two were built
  /// from different device tables.
  bool take_devices_from(const StandInVehicle& other);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;  // on the heap: the device view keeps a reference to the model
};

/// Reads the `hidden:` overrides of a stand-in (the HiddenParams field names, vectors as
/// [x, y, z]) on top of `base`; positioned errors on the node.
HiddenParams parse_hidden_params(const ConfigNode& node, HiddenParams base);

/// A stand_in endpoint entry's own keys, beside endpoint_common_keys.
inline constexpr const char* stand_in_endpoint_keys[] = {"exact", "seed", "hidden"};

/// The stand-in as an endpoint of type `stand_in` (docs/feedback.md): what `tether-vehicle`
/// does over MQTT, in-process and without a broker. Each step it takes the vehicle's
/// actuator commands as they stand in the session's device bank (as the MQTT endpoint
/// sends them), advances the true vehicle one period and answers with its measurements.
/// Keys: `exact` (no hidden differences), `seed` (default: the loop's), `hidden:` overrides
/// of default_hidden_params(). The summary holds the hidden truth the estimate should find.
class StandInEndpoint final : public Endpoint {
 public:
  StandInEndpoint(const EndpointConfig& config, const Scenario& scenario);
  bool publish(const StepContext& ctx, const WorldState& projected) override;
  GatherStatus gather(const StepContext& ctx, SteadyClock::time_point deadline, Reply& reply) override;
  void summarize(nlohmann::json& out) const override;
  const StandInVehicle& truth() const { return truth_; }

 private:
  const WorldModel* model_;  // the scenario's: what the hidden differences differ from
  const std::vector<hal::DeviceSpec>* specs_;  // the scenario's devices (their thrusters' lag)
  StandInVehicle truth_;
  std::vector<std::size_t> actuators_;  // the vehicle's actuators, found on the first publish
  bool bound_ = false;
  Reply pending_;
  bool has_pending_ = false;
};

}  // namespace tether::runtime
