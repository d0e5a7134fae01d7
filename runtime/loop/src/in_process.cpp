// SPDX-License-Identifier: Apache-2.0
#include "tether/loop/in_process.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "tether/hal/device_bank.hpp"
#include "tether/scenario/endpoint_types.hpp"

namespace tether::runtime {

namespace {

// answers every step with no forces: the loop's floor in benchmarks
class IdleController final : public Controller {
 public:
  void configure(const ConfigNode& params, const WorldModel&, int) override {
    if (params.yaml().IsDefined()) params.expect_map({});
  }
  void compute(const StepContext&, const WorldModel&, const WorldState&, const hal::DeviceBank*, Reply& out) override {
    out.clear();
  }
};

// PID on depth (= surface_z - z) driving a body-frame vertical force, as vertical
// thrusters would; derivative on the measurement so a target change does not kick
class DepthPidController final : public Controller {
 public:
  void configure(const ConfigNode& p, const WorldModel& model, int vehicle) override {
    if (vehicle < 0) {
      p.error("the depth_pid controller needs the endpoint's `vehicle`");
      return;
    }
    if (!p.expect_map({"target_depth_m", "kp", "ki", "kd", "max_force_n", "integral_limit"})) return;
    target_depth_m_ = p.number("target_depth_m");
    kp_ = p.number_or("kp", 40.0, Range::non_negative());
    ki_ = p.number_or("ki", 5.0, Range::non_negative());
    kd_ = p.number_or("kd", 60.0, Range::non_negative());
    max_force_n_ = p.number_or("max_force_n", 100.0, Range::positive());
    integral_limit_ = p.number_or("integral_limit", 20.0, Range::non_negative());
    body_ = model.vehicles[static_cast<std::size_t>(vehicle)].bodies.front();
    surface_z_m_ = model.water.surface_z_m;
  }

  void compute(const StepContext& ctx, const WorldModel& model, const WorldState& projected, const hal::DeviceBank*,
               Reply& out) override {
    out.clear();
    const BodyState& b = projected.bodies[static_cast<std::size_t>(body_)];
    const double depth = surface_z_m_ - b.position_m.z();
    const double depth_rate = -linear_velocity(model, projected, body_).z();
    const double error = target_depth_m_ - depth;
    const double dt = static_cast<double>(ctx.period_ns) * 1e-9;
    integral_ = std::clamp(integral_ + error * dt, -integral_limit_, integral_limit_);
    const double u = kp_ * error + ki_ * integral_ - kd_ * depth_rate;
    // positive u means "go deeper": push along world -z, expressed in the body frame
    const double down = std::clamp(u, -max_force_n_, max_force_n_);
    BodyWrench w;
    w.force_body_n = b.orientation.conjugate() * Vec3(0, 0, -down);
    out.wrenches.emplace_back(static_cast<std::uint32_t>(body_), w);
  }

  void summarize(nlohmann::json& out, const WorldModel&, const WorldState& actual) const override {
    const double depth = surface_z_m_ - actual.bodies[static_cast<std::size_t>(body_)].position_m.z();
    out["target_depth_m"] = target_depth_m_;
    out["final_depth_m"] = depth;
    out["depth_error_m"] = depth - target_depth_m_;
  }

 private:
  double target_depth_m_ = 0;
  double kp_ = 0, ki_ = 0, kd_ = 0;
  double max_force_n_ = 0;
  double integral_limit_ = 0;
  double integral_ = 0;
  double surface_z_m_ = 0;
  int body_ = 0;
};

}  // namespace

ControllerRegistry& controllers() {
  // filled on first use: the built-ins are there whoever asks first
  static ControllerRegistry r = [] {
    ControllerRegistry reg("controller");
    reg.add(
        "idle", [] { return std::make_unique<IdleController>(); }, "no forces, every step (the loop's floor)");
    reg.add(
        "depth_pid", [] { return std::make_unique<DepthPidController>(); },
        "PID on depth driving a vertical body force");
    return reg;
  }();
  return r;
}

std::unique_ptr<Controller> make_controller(const std::string& name) {
  const ControllerFactory* factory = controllers().find(name);
  return factory ? (*factory)() : nullptr;
}

InProcessEndpoint::InProcessEndpoint(const EndpointConfig& config, const WorldModel& model)
    : Endpoint(config), model_(model) {
  const ConfigNode& n = config.node;
  expect_endpoint_keys(n, in_process_endpoint_keys);
  const std::string name = n.string("controller");
  controller_ = make_controller(name);
  if (!controller_) {
    if (!name.empty()) n["controller"].error(controllers().unknown_message(name));
    controller_ = make_controller("idle");
  }
  controller_->configure(n["params"], model, config.vehicle_index);
  pending_.wrenches.reserve(model.bodies.size());
}

InProcessEndpoint::InProcessEndpoint(const EndpointConfig& config, const WorldModel& model,
                                     std::unique_ptr<Controller> controller)
    : Endpoint(config), model_(model), controller_(std::move(controller)) {
  pending_.wrenches.reserve(model.bodies.size());
}

void InProcessEndpoint::start(const WorldModel&, const WorldState&) {
  if (devices_) controller_->bind_devices(*devices_);
}

bool InProcessEndpoint::publish(const StepContext& ctx, const WorldState& projected) {
  controller_->compute(ctx, model_, projected, devices_, pending_);
  pending_.step = ctx.step;
  has_pending_ = true;
  return true;
}

GatherStatus InProcessEndpoint::gather(const StepContext& ctx, SteadyClock::time_point, Reply& reply) {
  if (!has_pending_ || pending_.step != ctx.step) return GatherStatus::timeout;
  std::swap(reply, pending_);
  has_pending_ = false;
  return GatherStatus::ready;
}

void InProcessEndpoint::emit(const StepContext&, const WorldState& actual) {
  // keep the buffers: assign copies into existing capacity after the first step
  last_actual_.step = actual.step;
  last_actual_.time_ns = actual.time_ns;
  last_actual_.bodies.assign(actual.bodies.begin(), actual.bodies.end());
}

void InProcessEndpoint::summarize(nlohmann::json& out) const {
  if (!last_actual_.bodies.empty()) controller_->summarize(out, model_, last_actual_);
}

}  // namespace tether::runtime
