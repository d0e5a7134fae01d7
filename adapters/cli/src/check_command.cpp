// SPDX-License-Identifier: Apache-2.0
// `tether check SCENARIO`: the scenario is read, its endpoints and feedback processors are
// built (nothing started), an `identify:` plan's setpoints must be the controller's, and the
// programs and firmware images they would launch must exist.
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "helpers.hpp"
#include "tether/endpoints/endpoint_factory.hpp"
#include "tether/feedback/feedback.hpp"
#include "tether/process/launch_check.hpp"
#include "tether/loop/identify_flight.hpp"
#include "tether/scenario/scenario.hpp"

namespace tether::cli {

int check_command(const CheckOptions& options) {
  try {
    const runtime::Scenario scenario = runtime::load_scenario(options.scenario, options.overrides);
    const auto endpoints = adapters::make_endpoints(scenario);
    const auto processors = runtime::make_feedback_processors(scenario);
    // an `identify:` plan's setpoints: names and values the controller takes
    const runtime::IdentifyFlight flight(scenario, endpoints);
    // each endpoint type checks its own launch; a problem is positioned at the endpoint's
    // `launch:` key like every other error of the file
    bool missing = false;
    for (const auto& e : endpoints)
      for (const std::string& m : e->launch_problems()) {
        missing = true;
        const std::string prefix = "endpoint \"" + e->name() + "\": launch: ";
        const std::string text = m.rfind(prefix, 0) == 0 ? m.substr(prefix.size()) : m;
        for (const auto& c : scenario.endpoints)
          if (c.name == e->name()) (c.node.has("launch") ? c.node["launch"] : c.node).error(text);
      }
    if (missing) {
      for (const auto& c : scenario.endpoints)
        if (!c.node.context().errors.empty()) throw runtime::ConfigError(c.node.context().errors);
      return exit_usage;
    }
    std::cout << options.scenario << ": ok (" << scenario.model.vehicles.size() << " vehicles, "
              << scenario.model.bodies.size() << " bodies, " << scenario.model.statics.size() << " static bodies, "
              << endpoints.size() << " endpoints, " << processors.size() << " feedback processors, "
              << scenario.loop.steps << " steps of " << static_cast<double>(scenario.loop.period_ns) * 1e-6 << " ms)\n";
    return exit_ok;
  } catch (const runtime::ConfigError& e) {
    print_config_error(e);
    return exit_usage;
  }
}

}  // namespace tether::cli
