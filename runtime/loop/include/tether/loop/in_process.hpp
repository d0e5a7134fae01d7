// SPDX-License-Identifier: Apache-2.0
// The simulated endpoint: a controller compiled into the binary, answering at once.
// Used by the default scenario, by tests and as the floor in bench/loop_overhead.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tether/hal/registry.hpp"
#include "tether/loop/endpoint.hpp"
#include "tether/scenario/config.hpp"

namespace tether::runtime {

/// A control law run in-process. Configure once; compute() runs every step.
class Controller {
 public:
  virtual ~Controller() = default;
  /// Reads the controller's `params` map; records config errors against it.
  virtual void configure(const ConfigNode& params, const WorldModel& model, int vehicle) = 0;
  /// Computes the reply for step ctx.step from the projected state and, for controllers
  /// that use devices, this step's sensor readings in `devices` (may be null).
  virtual void compute(const StepContext& ctx, const WorldModel& model, const WorldState& projected,
                       const hal::DeviceBank* devices, Reply& out) = 0;
  /// Resolves device names to indices once the session's devices exist (before the first
  /// step); throws std::runtime_error naming what is missing.
  virtual void bind_devices(const hal::DeviceBank& devices) { (void)devices; }
  /// The setpoints an `identify:` plan may change (docs/feedback.md); none by default.
  virtual std::vector<std::string> setpoint_names() const { return {}; }
  /// The values a setpoint may take: a plan's value outside it is a config error, in `tether
  /// check` as at the start of a run (any number by default).
  virtual Range setpoint_range(const std::string& name) const {
    (void)name;
    return Range::any();
  }
  /// Changes a setpoint from the next compute(); false if the controller has no such setpoint.
  virtual bool set_setpoint(const std::string& name, double value) {
    (void)name;
    (void)value;
    return false;
  }
  /// Adds what the controller knows about how well it did (e.g. final depth error).
  virtual void summarize(nlohmann::json& out, const WorldModel& model, const WorldState& actual) const {
    (void)out;
    (void)model;
    (void)actual;
  }
};

/// Makes a controller of the registered name.
using ControllerFactory = std::function<std::unique_ptr<Controller>()>;
using ControllerRegistry = hal::Registry<ControllerFactory>;

/// The in-process controllers: the built-ins (idle, depth_pid; registered on first use) and
/// any added at set-up, before scenarios are loaded (docs/extending.md).
ControllerRegistry& controllers();

/// The controller of that name, or nullptr.
std::unique_ptr<Controller> make_controller(const std::string& name);

/// An in_process endpoint entry's own keys, beside endpoint_common_keys.
inline constexpr const char* in_process_endpoint_keys[] = {"controller", "params"};

class InProcessEndpoint final : public Endpoint {
 public:
  /// Parses `controller` and `params` from the endpoint's config node.
  InProcessEndpoint(const EndpointConfig& config, const WorldModel& model);
  /// For tests and benchmarks: an endpoint around a given controller.
  InProcessEndpoint(const EndpointConfig& config, const WorldModel& model, std::unique_ptr<Controller> controller);

  void start(const WorldModel& model, const WorldState& initial) override;
  [[nodiscard]] bool publish(const StepContext& ctx, const WorldState& projected) override;
  [[nodiscard]] GatherStatus gather(const StepContext& ctx, SteadyClock::time_point deadline, Reply& reply) override;
  void emit(const StepContext& ctx, const WorldState& actual) override;
  void summarize(nlohmann::json& out) const override;
  Controller& controller() { return *controller_; }

 private:
  const WorldModel& model_;
  std::unique_ptr<Controller> controller_;
  Reply pending_;
  bool has_pending_ = false;
  WorldState last_actual_;
};

}  // namespace tether::runtime
