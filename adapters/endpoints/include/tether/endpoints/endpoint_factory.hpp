// SPDX-License-Identifier: Apache-2.0
// The table of endpoint types: each registration carries all of a type's facts (its factory,
// its own config keys, whether its link takes link faults, one line for `tether kinds`).
// Construction parses and validates; nothing is connected or launched until
// Endpoint::start(), and what start() would fail on that can be seen before is the
// endpoint's own launch_problems() (`tether check`).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tether/hal/registry.hpp"
#include "tether/loop/endpoint.hpp"
#include "tether/scenario/scenario.hpp"

namespace tether::adapters {

/// Makes an endpoint from its config node (records config errors on it, may throw
/// runtime::ConfigError); the scenario outlives the endpoint.
using EndpointFactory =
    std::function<std::unique_ptr<runtime::Endpoint>(const runtime::EndpointConfig&, const runtime::Scenario&)>;

/// One endpoint type, as registered.
struct EndpointType {
  EndpointFactory make;
  /// Its entries' own keys, beside runtime::endpoint_common_keys (which the scenario parses
  /// for every entry); the factory checks them with runtime::expect_endpoint_keys.
  std::span<const char* const> keys;
  /// Its link's bytes take link faults (its endpoint shapes them with a runtime::LinkShaper).
  bool link_faults = false;
  /// `timeout_policy` when an entry gives none ("hold", "block", "safe" or "abort").
  const char* default_policy = "hold";
  /// Its peer sends its step again by itself when an answer is lost (ArduPilot repeats its
  /// frame), so link faults under `block` do not stall it; without, the scenario refuses a
  /// link fault other than duplicate on one of its entries under block (docs/faults.md).
  bool peer_repeats = false;
};

/// hal::Registry of endpoint types whose add() also tells the scenario the type's facts
/// (runtime::endpoint_type_facts: its keys for error messages, whether it takes link faults).
class EndpointRegistry : public hal::Registry<EndpointType> {
 public:
  using hal::Registry<EndpointType>::Registry;
  /// Makes `name` known; false (and the existing entry stays) if it already is. Call at
  /// set-up, before scenarios are loaded; not thread-safe.
  bool add(std::string name, EndpointType type, std::string description);
};

/// The endpoint types a scenario may name: the built-ins (in_process, serial, mqtt,
/// stand_in, ardupilot_json; registered on first use, and when a program that links this
/// table loads) and any added at set-up with add(), before scenarios are loaded
/// (docs/extending.md, examples/endpoint/loopback.cpp).
EndpointRegistry& endpoint_kinds();

/// Constructs every endpoint of the scenario. Throws runtime::ConfigError listing all
/// problems (unknown types, bad keys) found across the endpoints.
std::vector<std::unique_ptr<runtime::Endpoint>> make_endpoints(const runtime::Scenario& scenario);

}  // namespace tether::adapters
