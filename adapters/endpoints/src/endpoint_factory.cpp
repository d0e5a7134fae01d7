// SPDX-License-Identifier: Apache-2.0
#include "tether/endpoints/endpoint_factory.hpp"

#include "tether/ardupilot/ardupilot_endpoint.hpp"
#include "tether/loop/in_process.hpp"
#include "tether/loop/stand_in_vehicle.hpp"
#include "tether/mcu/mcu_endpoint.hpp"
#include "tether/mqtt/mqtt_endpoint.hpp"
#include "tether/scenario/endpoint_types.hpp"
#include "tether/serial/serial_endpoint.hpp"

namespace tether::adapters {

bool EndpointRegistry::add(std::string name, EndpointType type, std::string description) {
  if (find(name)) return false;
  runtime::EndpointTypeFacts& facts = runtime::endpoint_type_facts()[name];
  facts.keys.assign(type.keys.begin(), type.keys.end());
  facts.link_faults = type.link_faults;
  facts.default_policy = type.default_policy;
  facts.peer_repeats = type.peer_repeats;
  return hal::Registry<EndpointType>::add(std::move(name), std::move(type), std::move(description));
}

namespace {

// a backend's registration: its class, constructed from (config, scenario)
template <class T>
EndpointType backend(std::span<const char* const> keys, bool link_faults, const char* default_policy = "hold",
                     bool peer_repeats = false) {
  return {[](const runtime::EndpointConfig& c, const runtime::Scenario& s) -> std::unique_ptr<runtime::Endpoint> {
            return std::make_unique<T>(c, s);
          },
          keys, link_faults, default_policy, peer_repeats};
}

}  // namespace

EndpointRegistry& endpoint_kinds() {
  // filled on first use, so the built-ins are there whoever asks first
  static EndpointRegistry r = [] {
    EndpointRegistry reg("endpoint type");
    reg.add("in_process",
            {[](const runtime::EndpointConfig& c, const runtime::Scenario& s) -> std::unique_ptr<runtime::Endpoint> {
               return std::make_unique<runtime::InProcessEndpoint>(c, s.model);
             },
             runtime::in_process_endpoint_keys, false},
            "a controller compiled into the binary, answering at once");
    reg.add("serial", backend<SerialEndpoint>(serial_endpoint_keys, true),
            "firmware over a serial line (a port, a pseudo-terminal, or a launched host/QEMU build)");
    reg.add("mqtt", backend<MqttEndpoint>(mqtt_endpoint_keys, true),
            "a physical vehicle over an MQTT broker (lock-step by topic)");
    reg.add("stand_in", backend<runtime::StandInEndpoint>(runtime::stand_in_endpoint_keys, false),
            "the stand-in vehicle in-process: tether-vehicle's hidden physics without a broker");
    reg.add("ardupilot_json", backend<ArduPilotJsonEndpoint>(ardupilot_endpoint_keys, true, "block", true),
            "ArduPilot (SITL or a board) through its JSON physics interface over UDP, lock-step on frame_count");
    reg.add("mcu", backend<McuEndpoint>(mcu_endpoint_keys, false),
            "firmware (an ELF or an Arduino sketch) on an emulated ATmega328P, its pins wired to the devices");
    return reg;
  }();
  return r;
}

namespace {
// The scenario checks link faults' targets against the types' facts while it parses, which
// may be before anyone asks for the table: a program that links this table (every one that
// makes endpoints) registers the built-ins as it loads. Function-local statics on both
// sides, so the order of static initialisers does not matter.
[[maybe_unused]] const bool built_ins_registered = (endpoint_kinds(), true);
}  // namespace

std::vector<std::unique_ptr<runtime::Endpoint>> make_endpoints(const runtime::Scenario& scenario) {
  std::vector<std::unique_ptr<runtime::Endpoint>> out;
  for (const runtime::EndpointConfig& config : scenario.endpoints) {
    if (const EndpointType* type = endpoint_kinds().find(config.type)) {
      out.push_back(type->make(config, scenario));
    } else if (!config.type.empty()) {
      config.node["type"].error(endpoint_kinds().unknown_message(config.type));
    }
  }
  scenario.throw_if_errors();
  return out;
}

}  // namespace tether::adapters
