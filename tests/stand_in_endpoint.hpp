// SPDX-License-Identifier: Apache-2.0
// A scenario's rig over MQTT replaced by the in-process stand-in vehicle (the same vehicle,
// seeded): what the tests and bench/correction run tank trials with, without a broker.
#pragma once

#include <cstdint>
#include <string>

#include <yaml-cpp/yaml.h>

namespace tether::test {

/// Each `mqtt` endpoint of `root` (a parsed scenario) becomes a `stand_in` of the same name and
/// vehicle with `seed`, and `hidden` (YAML of its differences from the model) when not empty.
inline void stand_in_for_mqtt(YAML::Node root, std::uint64_t seed, const std::string& hidden = "") {
  for (YAML::Node e : root["endpoints"])
    if (e["type"].as<std::string>() == "mqtt") {
      YAML::Node n(YAML::NodeType::Map);
      n["name"] = e["name"];
      n["type"] = "stand_in";
      n["vehicle"] = e["vehicle"];
      n["seed"] = seed;
      if (!hidden.empty()) n["hidden"] = YAML::Load(hidden);
      e = n;
    }
}

}  // namespace tether::test
