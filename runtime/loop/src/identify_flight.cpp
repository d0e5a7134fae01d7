// SPDX-License-Identifier: Apache-2.0
#include "tether/loop/identify_flight.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

#include <spdlog/spdlog.h>

#include "tether/loop/in_process.hpp"
#include "tether/recording/recorder.hpp"

namespace tether::runtime {

IdentifyFlight::IdentifyFlight(const Scenario& scenario, const std::vector<std::unique_ptr<Endpoint>>& endpoints)
    : scenario_(scenario) {
  const IdentifyPlan& plan = scenario_.identify;
  if (!plan.enabled || plan.endpoint_index < 0 || static_cast<std::size_t>(plan.endpoint_index) >= endpoints.size())
    return;
  endpoint_ = dynamic_cast<InProcessEndpoint*>(endpoints[static_cast<std::size_t>(plan.endpoint_index)].get());
  if (!endpoint_) return;
  const Controller& controller = endpoint_->controller();
  const std::vector<std::string> names = controller.setpoint_names();
  for (const IdentifyManoeuvre& m : plan.manoeuvres)
    for (const auto& [name, value] : m.setpoints) {
      if (!m.node) continue;
      const ConfigNode at = (*m.node)[name.c_str()];
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        std::string known;
        for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
        at.error("the controller of endpoint \"" + plan.endpoint + "\" has no setpoint \"" + name + "\" (" +
                 (known.empty() ? "it has none" : "it has: " + known) + ")");
      } else if (const Range range = controller.setpoint_range(name); !range.contains(value)) {
        at.error("expected " + range.expected() + " (the controller's range for " + name + "), got " +
                 describe_value(at.yaml()));
      }
    }
  scenario_.throw_if_errors();
}

void IdentifyFlight::fly(const StepContext& ctx, Recorder* recorder) {
  const IdentifyPlan& plan = scenario_.identify;
  const int m = plan.manoeuvre_at(static_cast<double>(ctx.time_ns - scenario_.initial.time_ns) * 1e-9);
  if (m < 0 || m == manoeuvre_) return;
  manoeuvre_ = m;
  std::string text = "identify: manoeuvre " + std::to_string(m + 1) + " of " + std::to_string(plan.manoeuvres.size());
  const char* separator = ": ";
  for (const auto& [name, value] : plan.manoeuvres[static_cast<std::size_t>(m)].setpoints) {
    endpoint_->controller().set_setpoint(name, value);
    char number[32];
    std::snprintf(number, sizeof number, "%g", value);
    text += separator + name + " " + number;
    separator = ", ";
  }
  spdlog::info("{}", text);
  if (recorder) recorder->event(ctx.step, ctx.time_ns, 2, "identify", text);
}

}  // namespace tether::runtime
