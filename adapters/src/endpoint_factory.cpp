// SPDX-License-Identifier: Apache-2.0
#include "tether/adapters/endpoint_factory.hpp"

#include "tether/adapters/ardupilot_endpoint.hpp"
#include "tether/adapters/mqtt_endpoint.hpp"
#include "tether/adapters/serial_endpoint.hpp"
#include "tether/loop/in_process.hpp"
#include "tether/loop/stand_in_vehicle.hpp"

namespace tether::adapters {

EndpointRegistry& endpoint_kinds() {
  // filled on first use, so the built-ins are there whoever asks first (no static
  // initializer that a linker could drop from the static library)
  static EndpointRegistry r = [] {
    EndpointRegistry reg("endpoint type");
    reg.add(
        "in_process",
        [](const runtime::EndpointConfig& c, const runtime::Scenario& s) -> std::unique_ptr<runtime::Endpoint> {
          return std::make_unique<runtime::InProcessEndpoint>(c, s.model);
        },
        "a controller compiled into the binary, answering at once");
    reg.add(
        "serial",
        [](const runtime::EndpointConfig& c, const runtime::Scenario& s) -> std::unique_ptr<runtime::Endpoint> {
          return std::make_unique<SerialEndpoint>(c, s);
        },
        "firmware over a serial line (a port, a pseudo-terminal, or a launched host/QEMU build)");
    reg.add(
        "mqtt",
        [](const runtime::EndpointConfig& c, const runtime::Scenario& s) -> std::unique_ptr<runtime::Endpoint> {
          return std::make_unique<MqttEndpoint>(c, s);
        },
        "a physical vehicle over an MQTT broker (lock-step by topic)");
    reg.add(
        "stand_in",
        [](const runtime::EndpointConfig& c, const runtime::Scenario& s) -> std::unique_ptr<runtime::Endpoint> {
          return std::make_unique<runtime::StandInEndpoint>(c, s);
        },
        "the stand-in vehicle in-process: tether-vehicle's hidden physics without a broker");
    reg.add(
        "ardupilot_json",
        [](const runtime::EndpointConfig& c, const runtime::Scenario& s) -> std::unique_ptr<runtime::Endpoint> {
          return std::make_unique<ArduPilotJsonEndpoint>(c, s);
        },
        "ArduPilot (SITL or a board) through its JSON physics interface over UDP, lock-step on frame_count");
    return reg;
  }();
  return r;
}

std::vector<std::unique_ptr<runtime::Endpoint>> make_endpoints(const runtime::Scenario& scenario) {
  std::vector<std::unique_ptr<runtime::Endpoint>> out;
  for (const runtime::EndpointConfig& config : scenario.endpoints) {
    if (const EndpointFactory* factory = endpoint_kinds().find(config.type)) {
      out.push_back((*factory)(config, scenario));
    } else if (!config.type.empty()) {
      config.node["type"].error(endpoint_kinds().unknown_message(config.type));
    }
  }
  scenario.throw_if_errors();
  return out;
}

}  // namespace tether::adapters
