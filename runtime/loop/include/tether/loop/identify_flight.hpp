// SPDX-License-Identifier: Apache-2.0
// The scenario's `identify:` flown (docs/feedback.md, "An excitation plan"): at each step the
// plan's manoeuvre for the step's time; when it changes, its setpoints go to the in-process
// controller of the plan's endpoint, and the change is logged and recorded as an event.
#pragma once

#include <memory>
#include <vector>

#include "tether/loop/endpoint.hpp"
#include "tether/scenario/scenario.hpp"

namespace tether::runtime {

class InProcessEndpoint;
class Recorder;

class IdentifyFlight {
 public:
  /// Finds the plan's endpoint among `endpoints` and checks the plan's setpoints against its
  /// controller (throws ConfigError naming the manoeuvre's key otherwise). A replay's
  /// endpoints are not controllers (the recorded replies carry the manoeuvres): nothing to fly.
  IdentifyFlight(const Scenario& scenario, const std::vector<std::unique_ptr<Endpoint>>& endpoints);

  /// True if there is a plan and a controller to fly it.
  bool active() const { return endpoint_ != nullptr; }
  /// The manoeuvre for the step's time: a new one sets its setpoints (and is an event).
  void fly(const StepContext& ctx, Recorder* recorder);

 private:
  const Scenario& scenario_;
  InProcessEndpoint* endpoint_ = nullptr;
  int manoeuvre_ = -1;  // the one in force, or -1
};

}  // namespace tether::runtime
