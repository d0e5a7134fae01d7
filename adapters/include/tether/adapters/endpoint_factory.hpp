// SPDX-License-Identifier: Apache-2.0
// Builds the scenario's endpoints from their config (type -> factory, one registry).
// Construction parses and validates; nothing is connected or launched until
// Endpoint::start().
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "tether/hal/registry.hpp"
#include "tether/loop/endpoint.hpp"
#include "tether/scenario/scenario.hpp"

namespace tether::adapters {

/// Makes an endpoint from its config node (records config errors on it, may throw
/// runtime::ConfigError); the scenario outlives the endpoint.
using EndpointFactory =
    std::function<std::unique_ptr<runtime::Endpoint>(const runtime::EndpointConfig&, const runtime::Scenario&)>;
using EndpointRegistry = hal::Registry<EndpointFactory>;

/// The endpoint types a scenario may name: the built-ins (in_process, serial, mqtt;
/// registered on first use) and any added at set-up with add(), before scenarios are
/// loaded (docs/extending.md, examples/endpoint/loopback.cpp).
EndpointRegistry& endpoint_kinds();

/// Constructs every endpoint of the scenario. Throws runtime::ConfigError listing all
/// problems (unknown types, bad keys) found across the endpoints.
std::vector<std::unique_ptr<runtime::Endpoint>> make_endpoints(const runtime::Scenario& scenario);

}  // namespace tether::adapters
