// SPDX-License-Identifier: Apache-2.0
#include "tether/loop/stand_in_vehicle.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

#include "tether/firmware_shim/payloads.h"
#include "tether/hal/device_bank.hpp"
#include "tether/hal/noise.hpp"
#include "tether/loop/device_world.hpp"
#include "tether/scenario/scenario.hpp"

namespace tether::runtime {

HiddenParams default_hidden_params() {
  HiddenParams h;
  h.drag_scale = 1.15;
  h.thrust_scale = 0.9;
  h.buoyancy_offset_n = -2.0;
  h.current_m_s = Vec3(0, 0.05, 0);
  h.position_noise_m = 0.002;
  h.orientation_noise_rad = 0.002;
  h.velocity_noise_m_s = 0.005;
  return h;
}

struct StandInVehicle::Impl {
  Impl(const Scenario& scenario, std::uint64_t seed)
      : model(scenario.model), state(scenario.initial), bank(scenario.devices, seed, scenario.model.bodies.size()),
        view(model), rng(hal::mix64(seed ^ 0x7e7e7e7eULL)) {}

  WorldModel model;
  WorldState state;
  HiddenParams hidden;
  int vehicle = -1;
  hal::DeviceBank bank;
  DeviceWorld view;
  hal::Rng rng;
  StepInputs inputs;
  std::vector<hal::Wrench> device_wrenches;
  PhysicsScratch scratch;
  std::vector<WorldState> history;  // ring of the last delay_steps + 1 states
  std::size_t history_next = 0;
  std::size_t history_count = 0;

  void remember() {
    WorldState& slot = history[history_next];
    slot.step = state.step;
    slot.time_ns = state.time_ns;
    slot.bodies.assign(state.bodies.begin(), state.bodies.end());
    history_next = (history_next + 1) % history.size();
    if (history_count < history.size()) ++history_count;
  }
  // the state delay_steps ago, or the oldest one kept while the line fills
  const WorldState& delayed() const {
    const std::size_t back = std::min<std::size_t>(hidden.delay_steps, history_count - 1);
    const std::size_t n = history.size();
    return history[(history_next + n - 1 - back) % n];
  }

  Measurement measure_body(const WorldState& s, int body) {
    Measurement m;
    m.body = static_cast<std::uint32_t>(body);
    m.measured_time_ns = s.time_ns;
    m.has_pose = true;
    m.has_velocity = true;
    const BodyState& b = s.bodies[static_cast<std::size_t>(body)];
    const auto noise3 = [this](double stddev) {
      return stddev > 0 ? Vec3(rng.gaussian(), rng.gaussian(), rng.gaussian()) * stddev : Vec3(0, 0, 0);
    };
    m.position_m = b.position_m + noise3(hidden.position_noise_m);
    const Vec3 rot = noise3(hidden.orientation_noise_rad);
    m.orientation = b.orientation;
    if (rot.norm() > 0)
      m.orientation = (Quat(Eigen::AngleAxisd(rot.norm(), rot.normalized())) * b.orientation).normalized();
    m.velocity_m_s = linear_velocity(model, s, body) + noise3(hidden.velocity_noise_m_s);
    m.angular_velocity_rad_s = angular_velocity(model, s, body);
    if (hidden.position_noise_m > 0 || hidden.orientation_noise_rad > 0) {
      m.has_covariance = true;
      m.pose_covariance.setZero();
      const double p2 = hidden.position_noise_m * hidden.position_noise_m;
      const double o2 = hidden.orientation_noise_rad * hidden.orientation_noise_rad;
      for (int i = 0; i < 3; ++i) {
        m.pose_covariance(i, i) = p2;
        m.pose_covariance(i + 3, i + 3) = o2;
      }
    }
    return m;
  }
};

StandInVehicle::StandInVehicle(const Scenario& scenario, int vehicle, const HiddenParams& hidden, std::uint64_t seed) {
  if (vehicle < 0 || static_cast<std::size_t>(vehicle) >= scenario.model.vehicles.size())
    throw std::invalid_argument("stand-in vehicle: no vehicle with index " + std::to_string(vehicle) +
                                " (the scenario has " + std::to_string(scenario.model.vehicles.size()) + ")");
  impl_ = std::make_unique<Impl>(scenario, seed);
  Impl& s = *impl_;
  s.hidden = hidden;
  s.vehicle = vehicle;

  // the hidden differences: drag and buoyancy of this vehicle's bodies, the water's current
  const double g = s.model.gravity_m_s2.norm();
  const std::vector<int>& bodies = s.model.vehicles[static_cast<std::size_t>(vehicle)].bodies;
  for (int b : bodies) {
    BodyModel& body = s.model.bodies[static_cast<std::size_t>(b)];
    Damping& d = body.damping;
    d.linear *= hidden.drag_scale;
    d.quadratic *= hidden.drag_scale;
    d.angular_linear *= hidden.drag_scale;
    d.angular_quadratic *= hidden.drag_scale;
    // the offset is spread over the vehicle's bodies as displaced volume
    if (s.model.water.present && g > 0 && hidden.buoyancy_offset_n != 0) {
      const double dv =
          hidden.buoyancy_offset_n / (s.model.water.density_kg_m3 * g) / static_cast<double>(bodies.size());
      body.volume_m3 = std::max(0.0, body.volume_m3 + dv);
    }
  }
  s.model.water.current_m_s += hidden.current_m_s;

  s.inputs.resize(s.model.bodies.size());
  s.device_wrenches.resize(s.model.bodies.size());
  s.history.resize(static_cast<std::size_t>(hidden.delay_steps) + 1);
  s.remember();
}

StandInVehicle::~StandInVehicle() = default;
StandInVehicle::StandInVehicle(StandInVehicle&&) noexcept = default;
StandInVehicle& StandInVehicle::operator=(StandInVehicle&&) noexcept = default;

bool StandInVehicle::command(std::size_t device, const std::uint8_t* bytes, std::size_t size) {
  Impl& s = *impl_;
  if (device >= s.bank.size() || !s.bank.is_actuator(device)) return false;
  return s.bank.command(device, bytes, size) == hal::Status::ok;
}

bool StandInVehicle::command_values(std::size_t device, const double* values, std::size_t count) {
  // actuator payloads are one little-endian f32 per command channel (payloads.h)
  std::uint8_t bytes[16];
  if (count * 4 > sizeof bytes) return false;
  for (std::size_t i = 0; i < count; ++i) tether_put_f32le(bytes + 4 * i, static_cast<float>(values[i]));
  return command(device, bytes, count * 4);
}

int StandInVehicle::find_device(const char* full_name) const { return impl_->bank.find(full_name); }

StepStatus StandInVehicle::advance(const StepInputs& extra, double dt_s) {
  Impl& s = *impl_;
  s.inputs.clear();
  for (std::size_t i = 0; i < extra.wrenches.size() && i < s.inputs.wrenches.size(); ++i)
    s.inputs.wrenches[i] = extra.wrenches[i];
  if (s.bank.size() > 0) {
    s.view.update(s.state, nullptr, dt_s, &s.inputs);
    s.bank.actuate(s.view, dt_s, s.device_wrenches);
    for (hal::Wrench& w : s.device_wrenches) {
      w.force_body_n *= s.hidden.thrust_scale;
      w.torque_body_nm *= s.hidden.thrust_scale;
    }
    add_device_wrenches(s.device_wrenches, s.inputs);
  }
  const StepStatus status = step(s.model, s.state, s.inputs, dt_s, nullptr, s.scratch);
  s.remember();
  return status;
}

StepStatus StandInVehicle::advance(double dt_s) {
  static const StepInputs none;
  return advance(none, dt_s);
}

Measurement StandInVehicle::measure() {
  Impl& s = *impl_;
  return s.measure_body(s.delayed(), s.model.vehicles[static_cast<std::size_t>(s.vehicle)].bodies.front());
}

void StandInVehicle::measure_all(std::vector<Measurement>& out) {
  Impl& s = *impl_;
  const WorldState& at = s.delayed();
  for (int b : s.model.vehicles[static_cast<std::size_t>(s.vehicle)].bodies) out.push_back(s.measure_body(at, b));
}

const WorldState& StandInVehicle::state() const { return impl_->state; }
const WorldModel& StandInVehicle::model() const { return impl_->model; }
const HiddenParams& StandInVehicle::hidden() const { return impl_->hidden; }
int StandInVehicle::vehicle() const { return impl_->vehicle; }

void StandInVehicle::set_state(const WorldState& state) {
  Impl& s = *impl_;
  s.state = state;
  s.history_count = 0;
  s.history_next = 0;
  s.remember();
}

}  // namespace tether::runtime
