// SPDX-License-Identifier: Apache-2.0
// `tether devices SCENARIO`: the device table, as text or JSON.
#include <iostream>
#include <stdexcept>

#include "commands.hpp"
#include "helpers.hpp"
#include "tether/hal/device_table.hpp"
#include "tether/recording/json_text.hpp"
#include "tether/scenario/scenario.hpp"

namespace tether::cli {

int devices_command(const DevicesOptions& options) {
  try {
    const runtime::Scenario scenario = runtime::load_scenario(options.scenario);
    const hal::DeviceBank bank(scenario.devices, scenario.loop.seed, scenario.model.bodies.size());
    if (options.json)
      std::cout << runtime::json_text(hal::device_table_json(bank), 2) << '\n';
    else
      std::cout << hal::device_table_text(bank);
    return exit_ok;
  } catch (const runtime::ConfigError& e) {
    print_config_error(e);
    return exit_usage;
  } catch (const std::invalid_argument& e) {
    std::cerr << options.scenario << ": " << e.what() << '\n';
    return exit_usage;
  }
}

}  // namespace tether::cli
