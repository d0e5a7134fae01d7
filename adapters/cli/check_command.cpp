// SPDX-License-Identifier: Apache-2.0
// `tether check SCENARIO`: the scenario is read, its endpoints and feedback processors are
// built (nothing started), and the programs and firmware images they would launch must exist.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <unistd.h>

#include "commands.hpp"
#include "helpers.hpp"
#include "tether/adapters/endpoint_factory.hpp"
#include "tether/adapters/mqtt_endpoint.hpp"
#include "tether/adapters/serial_endpoint.hpp"
#include "tether/loop/feedback.hpp"
#include "tether/scenario/scenario.hpp"

namespace tether::cli {

namespace {

// what a program named on a command line resolves to: itself if it has a slash, else the
// first executable of that name on PATH (empty: none)
std::string find_program(const std::string& name) {
  std::error_code ec;
  if (name.find('/') != std::string::npos) return std::filesystem::is_regular_file(name, ec) ? name : std::string();
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  for (std::size_t start = 0; start <= dirs.size();) {
    const auto colon = dirs.find(':', start);
    const std::string dir = dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (std::filesystem::is_regular_file(candidate, ec) && access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return {};
}

// the programs and firmware images the endpoints would launch that are not there
std::vector<std::string> missing_launches(const runtime::Scenario& scenario) {
  std::vector<std::string> missing;
  for (const auto& e : scenario.endpoints) {
    std::vector<std::string> command;
    std::string image;
    if (e.type == "serial") {
      const auto c = adapters::parse_serial_config(e, scenario);
      if (!c.launch) continue;
      command = c.launch->command;
      image = c.launch->qemu_elf;
    } else if (e.type == "mqtt") {
      const auto c = adapters::parse_mqtt_config(e, scenario);
      if (!c.launch) continue;
      command = c.launch->command;
    }
    const std::string where = "endpoint \"" + e.name + "\": launch: ";
    std::error_code ec;
    if (!image.empty() && !std::filesystem::is_regular_file(image, ec))
      missing.push_back(where + "the firmware image " + image + " does not exist (not built yet?)");
    if (!command.empty() && find_program(command.front()).empty())
      missing.push_back(where + (command.front().find('/') != std::string::npos
                                     ? "the program " + command.front() + " does not exist (not built yet?)"
                                     : command.front() + " is not on PATH (is it installed?)"));
    else if (!command.empty() && command.front().find('/') != std::string::npos &&
             access(command.front().c_str(), X_OK) != 0)
      missing.push_back(where + "the program " + command.front() + " is not executable");
  }
  return missing;
}

}  // namespace

int check_command(const CheckOptions& options) {
  try {
    const runtime::Scenario scenario = runtime::load_scenario(options.scenario, options.overrides);
    const auto endpoints = adapters::make_endpoints(scenario);
    const auto processors = runtime::make_feedback_processors(scenario);
    const auto missing = missing_launches(scenario);
    if (!missing.empty()) {
      for (const auto& m : missing) std::cerr << options.scenario << ": " << m << '\n';
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
