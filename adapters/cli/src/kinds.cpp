// SPDX-License-Identifier: Apache-2.0
// `tether kinds`: every extension point and what is registered under it (docs/extending.md).
#include <cstdio>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "example_controllers.hpp"
#include "tether/recording/json_text.hpp"
#include "tether/endpoints/endpoint_factory.hpp"
#include "tether/hal/device_spec.hpp"
#include "tether/identify/identify.hpp"
#include "tether/live/services.hpp"
#include "tether/feedback/feedback.hpp"
#include "tether/loop/in_process.hpp"

namespace tether::cli {

namespace {

// one extension point: its JSON key, its heading, where a scenario names it, its entries
template <class Registry>
void add_point(nlohmann::json& out, const char* key, const char* scenario_key, const Registry& registry) {
  nlohmann::json kinds = nlohmann::json::array();
  for (const auto& e : registry.entries()) kinds.push_back({{"name", e.name}, {"description", e.description}});
  out.push_back({{"extension_point", key},
                 {"what", registry.what()},
                 {"scenario_key", scenario_key},
                 {"kinds", std::move(kinds)}});
}

nlohmann::json kinds_json() {
  nlohmann::json out = nlohmann::json::array();
  add_point(out, "feedback_processors", "vehicles[].feedback[].type", runtime::feedback_processors());
  add_point(out, "endpoint_types", "endpoints[].type", adapters::endpoint_kinds());
  add_point(out, "controllers", "endpoints[].controller (type in_process)", runtime::controllers());
  add_point(out, "device_kinds", "vehicles[].parts[].devices[].kind", hal::device_kinds());
  // live services are called by clients of a live session, not named in a scenario
  nlohmann::json services = nlohmann::json::array();
  for (const live::Service& s : live::services().entries())
    services.push_back({{"name", s.name}, {"description", s.description}});
  out.push_back({{"extension_point", "live_services"},
                 {"what", "live service"},
                 {"scenario_key", "called by live clients: tether run --live"},
                 {"kinds", std::move(services)}});
  return out;
}

}  // namespace

void register_extensions() {
  examples::register_example_controllers();
  identify::register_online_refit();  // the `estimate` processor's refit_every_s
  register_test_doubles();
}

int kinds_command(const KindsOptions& options) {
  const nlohmann::json points = kinds_json();
  if (options.json) {
    std::cout << runtime::json_text(points, 2) << '\n';
    return exit_ok;
  }
  for (const auto& p : points) {
    std::cout << p["extension_point"].get<std::string>() << " (" << p["scenario_key"].get<std::string>() << "):\n";
    for (const auto& k : p["kinds"]) {
      char line[256];
      std::snprintf(line, sizeof line, "  %-20s %s\n", k["name"].get<std::string>().c_str(),
                    k["description"].get<std::string>().c_str());
      std::cout << line;
    }
  }
  std::cout << "How to add one: docs/extending.md\n";
  return exit_ok;
}

}  // namespace tether::cli
