// SPDX-License-Identifier: Apache-2.0
#include "tether/scenario/identify.hpp"

#include <cmath>

#include "tether/scenario/scenario.hpp"

namespace tether::runtime {

int IdentifyPlan::manoeuvre_at(double t_s) const {
  if (!enabled || manoeuvres.empty() || t_s < start_s) return -1;
  double cycle = 0;
  for (const IdentifyManoeuvre& m : manoeuvres) cycle += m.hold_s;
  double t = t_s - start_s;
  if (t >= cycle) {
    if (!repeat) return -1;
    t = std::fmod(t, cycle);
  }
  for (std::size_t i = 0; i < manoeuvres.size(); ++i) {
    if (t < manoeuvres[i].hold_s) return static_cast<int>(i);
    t -= manoeuvres[i].hold_s;
  }
  return static_cast<int>(manoeuvres.size()) - 1;  // rounding at the cycle's end
}

IdentifyPlan parse_identify(const ConfigNode& node, const std::vector<EndpointConfig>& endpoints) {
  IdentifyPlan plan;
  if (!node.yaml().IsDefined() || node.yaml().IsNull()) return plan;
  if (!node.expect_map({"endpoint", "start_s", "repeat", "manoeuvres"})) return plan;
  plan.enabled = true;
  plan.endpoint = node.string("endpoint");
  for (std::size_t i = 0; i < endpoints.size(); ++i)
    if (endpoints[i].name == plan.endpoint) plan.endpoint_index = static_cast<int>(i);
  if (plan.endpoint_index < 0 && !plan.endpoint.empty())
    node["endpoint"].error("no endpoint named \"" + plan.endpoint + "\"");
  else if (plan.endpoint_index >= 0 && endpoints[static_cast<std::size_t>(plan.endpoint_index)].type != "in_process")
    node["endpoint"].error("the plan is flown by an in_process endpoint's controller; \"" + plan.endpoint +
                           "\" is of type " + endpoints[static_cast<std::size_t>(plan.endpoint_index)].type);
  plan.start_s = node.number_or("start_s", 0.0, Range::non_negative());
  plan.repeat = node.boolean_or("repeat", true);
  const ConfigNode list = node["manoeuvres"];
  if (!list.yaml().IsDefined()) {
    node.expected("manoeuvres", "a list of manoeuvres ({hold_s, and setpoints such as surge, depth_m, heading_deg})");
    return plan;
  }
  if (!list.expect_sequence()) return plan;
  if (list.size() == 0) list.error("expected at least one manoeuvre");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const ConfigNode m = list.at(i);
    IdentifyManoeuvre out;
    out.node = m;
    if (!m.is_map()) {
      m.error("expected a map {hold_s, and setpoints}, got " + describe_value(m.yaml()));
      continue;
    }
    out.hold_s = m.number("hold_s", Range::positive());
    for (const auto& kv : m.yaml()) {
      if (!kv.first.IsScalar()) {  // a list or a map as a key (`{a: 1}: 2`)
        m.error("expected setpoint names as keys, got " + describe_value(kv.first));
        continue;
      }
      const std::string key = kv.first.Scalar();
      if (key == "hold_s") continue;
      out.setpoints.emplace_back(key, m.number(key.c_str()));
    }
    if (out.setpoints.empty()) m.error("a manoeuvre sets at least one setpoint (surge, depth_m, heading_deg, ...)");
    plan.manoeuvres.push_back(std::move(out));
  }
  return plan;
}

}  // namespace tether::runtime
