// SPDX-License-Identifier: Apache-2.0
#include "tether/scenario/endpoint_types.hpp"

#include "tether/scenario/scenario.hpp"

namespace tether::runtime {

std::map<std::string, EndpointTypeFacts, std::less<>>& endpoint_type_facts() {
  static std::map<std::string, EndpointTypeFacts, std::less<>> facts;
  return facts;
}

std::string link_fault_types_text() {
  std::string list;
  for (const auto& [name, facts] : endpoint_type_facts())
    if (facts.link_faults) list += (list.empty() ? "" : ", ") + name;
  return list.empty() ? std::string("none") : list;
}

bool expect_endpoint_keys(const ConfigNode& node, std::span<const char* const> own) {
  std::vector<const char*> allowed(std::begin(endpoint_common_keys), std::end(endpoint_common_keys));
  allowed.insert(allowed.end(), own.begin(), own.end());
  const std::string type = node.has("type") ? node["type"].yaml().as<std::string>("") : std::string();
  // "type mqtt takes it": where a key belongs, from the registered types' facts
  const auto note = [&type](std::string_view key) {
    std::string takers;
    for (const auto& [name, facts] : endpoint_type_facts()) {
      if (name == type) continue;
      for (const std::string& k : facts.keys)
        if (k == key) takers += (takers.empty() ? "" : ", ") + name;
    }
    return takers.empty() ? std::string() : "endpoint types that take it: " + takers;
  };
  return node.expect_map(allowed, note);
}

}  // namespace tether::runtime
