// SPDX-License-Identifier: Apache-2.0
// What the scenario knows of each endpoint type: the keys its entries take and whether its
// link takes link faults. The scenario parses the common keys of every entry
// (endpoint_common_keys, scenario.hpp) and checks link faults' targets; everything else about
// a type is its backend's. The endpoint registry (adapters/endpoints) writes a type's facts
// here when it registers the type: one registration carries all of them, and the scenario
// never names a type.
#pragma once

#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tether/scenario/config.hpp"

namespace tether::runtime {

struct EndpointTypeFacts {
  std::vector<std::string> keys;  // its own keys, beside endpoint_common_keys
  bool link_faults = false;       // its link's bytes take link faults (docs/faults.md)
  // its peer sends its step again by itself when an answer is lost (ArduPilot repeats its
  // frame): link faults under `timeout_policy: block` do not stall it. Without, the scenario
  // refuses a link fault other than duplicate on such an endpoint under block
  bool peer_repeats = false;
  // `timeout_policy` when an entry gives none: hold for firmware and vehicles; block where
  // the other side keeps its own clock in step with the replies (ArduPilot's JSON
  // interface), so that the world never runs ahead of it
  const char* default_policy = "hold";
};

/// Every registered endpoint type's facts, by type name. Filled at set-up (before scenarios
/// are loaded) by the endpoint registry; not thread-safe.
std::map<std::string, EndpointTypeFacts, std::less<>>& endpoint_type_facts();

/// The types whose links take link faults, "a, b" in name order ("none" if none).
std::string link_fault_types_text();

/// Checks an endpoint entry's keys against endpoint_common_keys and the type's `own`; an
/// unknown key's error also names the registered types that take it.
bool expect_endpoint_keys(const ConfigNode& node, std::span<const char* const> own);

}  // namespace tether::runtime
