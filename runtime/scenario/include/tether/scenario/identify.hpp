// SPDX-License-Identifier: Apache-2.0
// `identify:` — an excitation plan (docs/feedback.md, "An excitation plan"): manoeuvres an
// in-process controller flies so that the estimate processor sees the vehicle at several
// speeds, turning and changing depth, and can identify its parameters. Each manoeuvre sets
// some of the controller's setpoints (the others keep their values) and holds them for
// `hold_s`; the plan starts at `start_s` and, with `repeat`, starts over after its last
// manoeuvre. Over MQTT the manoeuvres reach the vehicle as the controller's commands.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tether/scenario/config.hpp"

namespace tether::runtime {

struct EndpointConfig;

struct IdentifyManoeuvre {
  double hold_s = 0;
  std::vector<std::pair<std::string, double>> setpoints;  // as the controller names them
  std::optional<ConfigNode> node;                         // for errors found at session start
};

struct IdentifyPlan {
  bool enabled = false;
  std::string endpoint;
  int endpoint_index = -1;  // into Scenario::endpoints
  double start_s = 0;
  bool repeat = true;
  std::vector<IdentifyManoeuvre> manoeuvres;

  /// The manoeuvre in force `t_s` seconds into the session, or -1 (before the start, after
  /// the end without `repeat`).
  int manoeuvre_at(double t_s) const;
};

/// Parses `identify:` (absent: a disabled plan) against the scenario's endpoints; records
/// positioned config errors on the node.
IdentifyPlan parse_identify(const ConfigNode& node, const std::vector<EndpointConfig>& endpoints);

}  // namespace tether::runtime
