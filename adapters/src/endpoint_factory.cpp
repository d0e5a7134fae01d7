// SPDX-License-Identifier: Apache-2.0
#include "tether/adapters/endpoint_factory.hpp"

#include "tether/adapters/mqtt_endpoint.hpp"
#include "tether/adapters/serial_endpoint.hpp"
#include "tether/loop/in_process.hpp"

namespace tether::adapters {

std::vector<std::unique_ptr<runtime::Endpoint>> make_endpoints(const runtime::Scenario& scenario) {
  std::vector<std::unique_ptr<runtime::Endpoint>> out;
  for (const runtime::EndpointConfig& config : scenario.endpoints) {
    if (config.type == "in_process") {
      out.push_back(std::make_unique<runtime::InProcessEndpoint>(config, scenario.model));
    } else if (config.type == "serial") {
      out.push_back(std::make_unique<SerialEndpoint>(config, scenario));
    } else if (config.type == "mqtt") {
      out.push_back(std::make_unique<MqttEndpoint>(config, scenario));
    } else if (!config.type.empty()) {
      std::string list;
      for (const char* t : endpoint_types) list += std::string(list.empty() ? "" : ", ") + t;
      config.node["type"].error("unknown endpoint type \"" + config.type + "\" (known: " + list + ")");
    }
  }
  scenario.throw_if_errors();
  return out;
}

}  // namespace tether::adapters
