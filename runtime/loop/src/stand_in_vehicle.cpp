// SPDX-License-Identifier: Apache-2.0
#include "tether/loop/stand_in_vehicle.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include "tether/firmware_shim/payloads.h"
#include "tether/hal/device_bank.hpp"
#include "tether/hal/noise.hpp"
#include "tether/loop/device_world.hpp"
#include "tether/scenario/scenario.hpp"
#include "tether/scenario/endpoint_types.hpp"

namespace tether::runtime {

HiddenParams default_hidden_params() {
  HiddenParams h;
  h.drag_scale = 1.15;
  h.linear_drag_axis_scale = Vec3(1.0, 0.9, 1.1);
  h.quadratic_drag_axis_scale = Vec3(1.0, 1.1, 0.95);
  h.thrust_scale = 0.9;
  h.thruster_time_constant_scale = 1.2;
  h.thruster_dead_band = 0.03;
  h.added_mass_fraction = 0.1;
  h.buoyancy_offset_n = -2.0;
  h.current_m_s = Vec3(0, 0.05, 0);
  h.current_swing_m_s = Vec3(0.01, 0.01, 0);
  h.current_period_s = 60;
  h.position_noise_m = 0.002;
  h.orientation_noise_rad = 0.002;
  h.velocity_noise_m_s = 0.005;
  h.velocity_bias_m_s = Vec3(0.001, -0.001, 0);
  return h;
}

double thruster_time_constant_s(const WorldModel& model, const std::vector<hal::DeviceSpec>& devices, int body) {
  if (body < 0 || static_cast<std::size_t>(body) >= model.bodies.size()) return 0;
  const int vehicle = model.bodies[static_cast<std::size_t>(body)].vehicle;
  double sum = 0;
  int n = 0;
  for (const hal::DeviceSpec& d : devices)
    if (const auto* p = std::get_if<hal::ThrusterParams>(&d.params))
      if (d.body >= 0 &&
          static_cast<std::size_t>(d.body) < model.bodies.size() &&
          model.bodies[static_cast<std::size_t>(d.body)].vehicle == vehicle)
        sum += p->time_constant_s, ++n;
  return n ? sum / n : 0.0;
}

std::vector<std::pair<std::string, double>> hidden_truth(const WorldModel& model, int body, const HiddenParams& h,
                                                         double thruster_time_constant) {
  std::vector<std::pair<std::string, double>> out;
  if (body < 0 || static_cast<std::size_t>(body) >= model.bodies.size()) return out;
  const Damping& d = model.bodies[static_cast<std::size_t>(body)].damping;
  out.emplace_back("thrust_coefficient", h.thrust_scale);
  const char* axes[3] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i)
    out.emplace_back(std::string("linear_drag_") + axes[i], d.linear[i] * h.drag_scale * h.linear_drag_axis_scale[i]);
  for (int i = 0; i < 3; ++i)
    out.emplace_back(std::string("quadratic_drag_") + axes[i],
                     d.quadratic[i] * h.drag_scale * h.quadratic_drag_axis_scale[i]);
  // the offset is spread over the vehicle's bodies; the estimate sees its body's share
  int bodies = 0;
  for (const BodyModel& b : model.bodies) bodies += b.vehicle == model.bodies[static_cast<std::size_t>(body)].vehicle;
  out.emplace_back("buoyancy_offset_n", h.buoyancy_offset_n / std::max(bodies, 1));
  out.emplace_back("current_x_m_s", model.water.current_m_s.x() + h.current_m_s.x());
  out.emplace_back("current_y_m_s", model.water.current_m_s.y() + h.current_m_s.y());
  out.emplace_back("added_mass_fraction", h.added_mass_fraction);
  out.emplace_back("angular_drag_scale", h.drag_scale);  // the offline fit's (the angular damping x this)
  if (thruster_time_constant > 0)
    out.emplace_back("thruster_lag_s", thruster_time_constant * (h.thruster_time_constant_scale - 1));
  return out;
}

struct StandInVehicle::Impl {
  Impl(const Scenario& scenario, const HiddenParams& h, std::uint64_t seed)
      : model(scenario.model), state(scenario.initial), hidden(h),
        bank(real_devices(scenario.devices, h), seed, scenario.model.bodies.size()), view(model),
        rng(hal::mix64(seed ^ 0x7e7e7e7eULL)) {}

  // the rig's thrusters: slower to spin up, with at least the hidden dead band
  static std::vector<hal::DeviceSpec> real_devices(std::vector<hal::DeviceSpec> specs, const HiddenParams& h) {
    for (hal::DeviceSpec& d : specs)
      if (auto* p = std::get_if<hal::ThrusterParams>(&d.params)) {
        const double f = h.thruster_time_constant_scale > 0 ? h.thruster_time_constant_scale : 1.0;
        p->time_constant_s *= f;
        p->alpha /= f;  // explicit yoerger coefficients: the same steady speed, reached slower
        p->beta /= f;
        p->dead_band = std::max(p->dead_band, h.thruster_dead_band);
      }
    return specs;
  }

  WorldModel model;
  WorldState state;
  HiddenParams hidden;
  int vehicle = -1;
  Vec3 base_current{0, 0, 0};  // the scenario's current plus the hidden steady part
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

  // the water's current now and at the vehicle's depth (its first body)
  void update_current() {
    Vec3 c = base_current;
    if (hidden.current_period_s > 0 && hidden.current_swing_m_s.squaredNorm() > 0)
      c += hidden.current_swing_m_s *
           std::sin(2 * 3.14159265358979323846 * static_cast<double>(state.time_ns) * 1e-9 / hidden.current_period_s);
    if (hidden.current_shear_per_m.squaredNorm() > 0) {
      const int b = model.vehicles[static_cast<std::size_t>(vehicle)].bodies.front();
      const double depth =
          std::max(0.0, model.water.surface_z_m - state.bodies[static_cast<std::size_t>(b)].position_m.z());
      c += hidden.current_shear_per_m * depth;
    }
    model.water.current_m_s = c;
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
    m.velocity_m_s = linear_velocity(model, s, body) + hidden.velocity_bias_m_s + noise3(hidden.velocity_noise_m_s);
    m.angular_velocity_rad_s = angular_velocity(model, s, body) + noise3(hidden.angular_velocity_noise_rad_s);
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
  impl_ = std::make_unique<Impl>(scenario, hidden, seed);
  Impl& s = *impl_;
  s.vehicle = vehicle;

  // the hidden differences: drag, inertia and buoyancy of this vehicle's bodies, the water's current
  const double g = s.model.gravity_m_s2.norm();
  const std::vector<int>& bodies = s.model.vehicles[static_cast<std::size_t>(vehicle)].bodies;
  for (int b : bodies) {
    BodyModel& body = s.model.bodies[static_cast<std::size_t>(b)];
    Damping& d = body.damping;
    d.linear = d.linear.cwiseProduct(hidden.linear_drag_axis_scale) * hidden.drag_scale;
    d.quadratic = d.quadratic.cwiseProduct(hidden.quadratic_drag_axis_scale) * hidden.drag_scale;
    d.angular_linear *= hidden.drag_scale;
    d.angular_quadratic *= hidden.drag_scale;
    // the offset is spread over the vehicle's bodies as displaced volume
    if (s.model.water.present && g > 0 && hidden.buoyancy_offset_n != 0) {
      const double dv =
          hidden.buoyancy_offset_n / (s.model.water.density_kg_m3 * g) / static_cast<double>(bodies.size());
      body.volume_m3 = std::max(0.0, body.volume_m3 + dv);
    }
    // added mass: the water the hull drags along resists acceleration but weighs nothing
    // in water, so the extra mass is matched by as much extra displaced water
    if (hidden.added_mass_fraction > 0) {
      const double extra = body.mass_kg * hidden.added_mass_fraction;
      body.mass_kg += extra;
      body.inv_mass = 1.0 / body.mass_kg;
      body.inertia_body *= 1.0 + hidden.added_mass_fraction;
      body.inv_inertia_body = body.inertia_body.inverse();
      if (s.model.water.present) body.volume_m3 += extra / s.model.water.density_kg_m3;
      // the state holds momenta: the same velocities with the heavier body
      BodyState& st = s.state.bodies[static_cast<std::size_t>(b)];
      st.linear_momentum *= 1.0 + hidden.added_mass_fraction;
      st.angular_momentum *= 1.0 + hidden.added_mass_fraction;
    }
  }
  s.model.water.current_m_s += hidden.current_m_s;
  s.base_current = s.model.water.current_m_s;

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
    s.view.update_kinematics(s.state);  // actuators read no accelerations
    s.bank.actuate(s.view, dt_s, s.device_wrenches);
    for (hal::Wrench& w : s.device_wrenches) {
      w.force_body_n *= s.hidden.thrust_scale;
      w.torque_body_nm *= s.hidden.thrust_scale;
    }
    add_device_wrenches(s.device_wrenches, s.inputs);
  }
  s.update_current();
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

bool StandInVehicle::take_devices_from(const StandInVehicle& other) {
  std::string bytes;
  other.impl_->bank.snapshot(bytes);
  return impl_->bank.restore(bytes, nullptr);
}

HiddenParams parse_hidden_params(const ConfigNode& n, HiddenParams h) {
  if (!n.yaml().IsDefined()) return h;
  if (!n.expect_map({"drag_scale", "linear_drag_axis_scale", "quadratic_drag_axis_scale", "thrust_scale",
                     "thruster_time_constant_scale", "thruster_dead_band", "added_mass_fraction", "buoyancy_offset_n",
                     "current_m_s", "current_swing_m_s", "current_period_s", "current_shear_per_m", "position_noise_m",
                     "orientation_noise_rad", "velocity_noise_m_s", "angular_velocity_noise_rad_s", "velocity_bias_m_s",
                     "delay_steps"}))
    return h;
  const Range scale = Range::positive();
  h.drag_scale = n.number_or("drag_scale", h.drag_scale, scale);
  h.linear_drag_axis_scale = n.vec3_or("linear_drag_axis_scale", h.linear_drag_axis_scale, scale);
  h.quadratic_drag_axis_scale = n.vec3_or("quadratic_drag_axis_scale", h.quadratic_drag_axis_scale, scale);
  h.thrust_scale = n.number_or("thrust_scale", h.thrust_scale, scale);
  h.thruster_time_constant_scale = n.number_or("thruster_time_constant_scale", h.thruster_time_constant_scale, scale);
  h.thruster_dead_band = n.number_or("thruster_dead_band", h.thruster_dead_band, Range{0, 1, false});
  h.added_mass_fraction = n.number_or("added_mass_fraction", h.added_mass_fraction, Range{0, 10, false});
  h.buoyancy_offset_n = n.number_or("buoyancy_offset_n", h.buoyancy_offset_n);
  h.current_m_s = n.vec3_or("current_m_s", h.current_m_s);
  h.current_swing_m_s = n.vec3_or("current_swing_m_s", h.current_swing_m_s);
  h.current_period_s = n.number_or("current_period_s", h.current_period_s, scale);
  h.current_shear_per_m = n.vec3_or("current_shear_per_m", h.current_shear_per_m);
  h.position_noise_m = n.number_or("position_noise_m", h.position_noise_m, Range::non_negative());
  h.orientation_noise_rad = n.number_or("orientation_noise_rad", h.orientation_noise_rad, Range::non_negative());
  h.velocity_noise_m_s = n.number_or("velocity_noise_m_s", h.velocity_noise_m_s, Range::non_negative());
  h.angular_velocity_noise_rad_s =
      n.number_or("angular_velocity_noise_rad_s", h.angular_velocity_noise_rad_s, Range::non_negative());
  h.velocity_bias_m_s = n.vec3_or("velocity_bias_m_s", h.velocity_bias_m_s);
  h.delay_steps = static_cast<std::uint32_t>(n.integer_or("delay_steps", h.delay_steps, 0, 1000));
  return h;
}

namespace {

HiddenParams stand_in_hidden(const EndpointConfig& c) {
  const ConfigNode& n = c.node;
  expect_endpoint_keys(n, stand_in_endpoint_keys);
  if (c.vehicle_index < 0) n.error("a stand_in endpoint needs the `vehicle` it stands in for");
  const bool exact = n.boolean_or("exact", false);
  if (exact && n.has("hidden")) n["hidden"].error("`exact` and `hidden` do not go together");
  return exact ? HiddenParams{} : parse_hidden_params(n["hidden"], default_hidden_params());
}

}  // namespace

StandInEndpoint::StandInEndpoint(const EndpointConfig& config, const Scenario& scenario)
    : Endpoint(config), model_(&scenario.model), specs_(&scenario.devices),
      truth_(scenario, std::max(config.vehicle_index, 0), stand_in_hidden(config),
             config.node.unsigned_or("seed", scenario.loop.seed)) {}

bool StandInEndpoint::publish(const StepContext& ctx, const WorldState&) {
  if (!bound_ && devices_) {
    // the vehicle's actuators, in the device table's order (the truth's bank has the same)
    const auto& bodies = truth_.model().vehicles[static_cast<std::size_t>(truth_.vehicle())].bodies;
    for (std::size_t i = 0; i < devices_->size(); ++i)
      if (devices_->is_actuator(i) && std::find(bodies.begin(), bodies.end(), devices_->spec(i).body) != bodies.end())
        actuators_.push_back(i);
    bound_ = true;
  }
  // the commands as they stand (what the MQTT endpoint sends the rig with this step)
  for (std::size_t i : actuators_) {
    const std::uint8_t* data = nullptr;
    std::size_t size = 0;
    if (devices_->reading(i, data, size) == hal::Status::ok && data) (void)truth_.command(i, data, size);
  }
  if (truth_.advance(static_cast<double>(ctx.period_ns) * 1e-9) != StepStatus::ok) {
    fault_message_ = "the stand-in vehicle's physics faulted (NaN or Inf)";
    return false;
  }
  pending_.clear();
  pending_.step = ctx.step;
  truth_.measure_all(pending_.measurements);
  has_pending_ = true;
  return true;
}

GatherStatus StandInEndpoint::gather(const StepContext& ctx, SteadyClock::time_point, Reply& reply) {
  if (!has_pending_ || pending_.step != ctx.step) return GatherStatus::timeout;
  std::swap(reply, pending_);
  has_pending_ = false;
  return GatherStatus::ready;
}

void StandInEndpoint::summarize(nlohmann::json& out) const {
  // what the estimate should find for each of the vehicle's bodies (docs/feedback.md)
  auto& truth = out["hidden_truth"] = nlohmann::json::object();
  for (int b : truth_.model().vehicles[static_cast<std::size_t>(truth_.vehicle())].bodies) {
    auto& body = truth[truth_.model().bodies[static_cast<std::size_t>(b)].name] = nlohmann::json::object();
    for (const auto& [name, value] :
         hidden_truth(*model_, b, truth_.hidden(), thruster_time_constant_s(*model_, *specs_, b)))
      body[name] = value;
  }
}

}  // namespace tether::runtime
