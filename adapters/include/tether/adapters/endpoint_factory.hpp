// SPDX-License-Identifier: Apache-2.0
// Builds the scenario's endpoints from their config (type -> class). Construction parses
// and validates; nothing is connected or launched until Endpoint::start().
#pragma once

#include <memory>
#include <vector>

#include "tether/loop/endpoint.hpp"
#include "tether/scenario/scenario.hpp"

namespace tether::adapters {

/// Endpoint types a scenario may name, for messages and docs.
inline constexpr const char* endpoint_types[] = {"in_process", "serial", "mqtt"};

/// Constructs every endpoint of the scenario. Throws runtime::ConfigError listing all
/// problems (unknown types, bad keys) found across the endpoints.
std::vector<std::unique_ptr<runtime::Endpoint>> make_endpoints(const runtime::Scenario& scenario);

}  // namespace tether::adapters
