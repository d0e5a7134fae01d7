// SPDX-License-Identifier: Apache-2.0
#include "tether/scenario/faults.hpp"

#include <cmath>
#include <cstring>
#include <set>
#include <sstream>

#include "tether/hal/sensors.hpp"
#include "tether/scenario/endpoint_types.hpp"
#include "tether/scenario/scenario.hpp"

namespace tether::runtime {

namespace {

struct KindEntry {
  const char* name;
  FaultKind kind;
  const char* params[3];  // the parameter keys this kind takes
};

constexpr KindEntry kinds[] = {
    {"drop", FaultKind::drop, {}},
    {"delay", FaultKind::delay, {"steps"}},
    {"duplicate", FaultKind::duplicate, {}},
    {"reorder", FaultKind::reorder, {}},
    {"corrupt", FaultKind::corrupt, {"bits"}},
    {"disconnect", FaultKind::disconnect, {}},
    {"stuck", FaultKind::stuck, {"channel"}},
    {"bias", FaultKind::bias, {"value", "channel"}},
    {"drift", FaultKind::drift, {"rate", "channel"}},
    {"noise", FaultKind::noise, {"sigma", "channel"}},
    {"dropout", FaultKind::dropout, {}},
    {"scale", FaultKind::scale, {"factor", "channel"}},
    {"saturation", FaultKind::saturation, {"min", "max", "channel"}},
};

constexpr const char* param_keys[] = {"value", "rate", "sigma", "factor", "min", "max", "steps", "bits", "channel"};

std::string where(const ConfigNode& n) {
  std::ostringstream s;
  s << n.context().file << ":" << n.yaml().Mark().line + 1 << ":" << n.yaml().Mark().column + 1;
  return s.str();
}

bool takes(const KindEntry& k, const char* key) {
  for (const char* p : k.params)
    if (p != nullptr && std::strcmp(p, key) == 0) return true;
  return false;
}

std::string kind_list(bool link) {
  std::string out;
  for (const KindEntry& k : kinds)
    if (is_link_fault(k.kind) == link) out += (out.empty() ? "" : ", ") + std::string(k.name);
  return out;
}

}  // namespace

const char* to_string(FaultKind kind) {
  for (const KindEntry& k : kinds)
    if (k.kind == kind) return k.name;
  return "?";
}

const char* to_string(FaultDirection d) {
  switch (d) {
    case FaultDirection::out: return "out";
    case FaultDirection::in: return "in";
    case FaultDirection::both: return "both";
  }
  return "?";
}

namespace {

// the target: an endpoint's link or a device; false (with a positioned error) if there is none
bool parse_fault_target(const ConfigNode& x, const Scenario& sc, FaultConfig& f, std::string& target) {
  const bool on_endpoint = x.has("endpoint"), on_device = x.has("device");
  if (on_endpoint == on_device) {
    x.error(on_endpoint ? "a fault acts on one endpoint or one device, not both"
                        : "expected `endpoint: NAME` (a link fault) or `device: VEHICLE.PART.DEVICE` (a device fault)");
    return false;
  }
  if (on_endpoint) {
    target = x.string("endpoint");
    for (std::size_t e = 0; e < sc.endpoints.size(); ++e)
      if (sc.endpoints[e].name == target) f.endpoint = static_cast<int>(e);
    if (f.endpoint < 0) {
      std::string names;
      for (const auto& e : sc.endpoints) names += (names.empty() ? "" : ", ") + e.name;
      x["endpoint"].error("no endpoint named \"" + printable(target) +
                          "\" (endpoints: " + (names.empty() ? std::string("none") : names) + ")");
      return false;
    }
    const std::string& type = sc.endpoints[static_cast<std::size_t>(f.endpoint)].type;
    // judged by the type's registered facts; a type this program has not registered is the
    // endpoint table's to refuse (make_endpoints), and a program that makes no endpoints
    // (tether-vehicle reads the scenario for its vehicle) has none registered
    const auto facts = endpoint_type_facts().find(type);
    if (facts != endpoint_type_facts().end() && !facts->second.link_faults) {
      x["endpoint"].error("link faults act on the bytes of an endpoint's link; endpoint \"" + target +
                          "\" is of type " + type +
                          ", whose link takes none (endpoint types that take them: " + link_fault_types_text() + ")");
      return false;
    }
    return true;
  }
  target = x.string("device");
  for (std::size_t d = 0; d < sc.devices.size(); ++d)
    if (sc.devices[d].name.full() == target) f.device = static_cast<int>(d);
  if (f.device < 0) {
    x["device"].error("no device named \"" + printable(target) +
                      "\" (VEHICLE.PART.DEVICE; `tether devices` lists them)");
    return false;
  }
  if (hal::kind_info(sc.devices[static_cast<std::size_t>(f.device)].kind).actuator) {
    x["device"].error("device faults act on sensor readings; \"" + target + "\" is an actuator");
    return false;
  }
  return true;
}

// Under `timeout_policy: block` a step waits until its reply has crossed the link, and a
// link fault acts on every message of its steps, the re-sent ones too: unless the peer sends
// its step again by itself (ArduPilot repeats its frame: EndpointTypeFacts::peer_repeats),
// a fault that lets nothing through (all but duplicate) would stall the session at its first
// step (the serial and MQTT endpoints hung there). Checked for the scenario's faults and for
// one injected live alike (both are parsed here).
bool link_fault_passes(const ConfigNode& x, const EndpointConfig& e, FaultKind kind) {
  const auto facts = endpoint_type_facts().find(e.type);
  if (e.policy != TimeoutPolicy::block || kind == FaultKind::duplicate ||
      (facts != endpoint_type_facts().end() && facts->second.peer_repeats))
    return true;
  x["kind"].error(std::string("a `") + to_string(kind) + "` link fault on endpoint \"" + e.name + "\" (" + e.type +
                  ") under its timeout_policy block would stall the session: under block a step waits for its "
                  "reply, and the fault takes every message of its steps, the re-sent ones too, so they never "
                  "pass (give that endpoint timeout_policy hold, safe or abort for link faults; duplicate alone "
                  "is fine)");
  return false;
}

// the kind and which parameter keys it takes; null (with a positioned error) if wrong
const KindEntry* parse_fault_kind(const ConfigNode& x, bool on_endpoint) {
  const std::string kind = x.string("kind");
  const KindEntry* entry = nullptr;
  for (const KindEntry& k : kinds)
    if (kind == k.name) entry = &k;
  if (entry == nullptr || is_link_fault(entry->kind) != on_endpoint) {
    if (!kind.empty())
      x["kind"].error("expected a " + std::string(on_endpoint ? "link" : "device") + " fault kind (" +
                      kind_list(on_endpoint) + "), got \"" + printable(kind) + "\"");
    return nullptr;
  }
  bool params_ok = true;
  for (const char* key : param_keys)
    if (x.has(key) && !takes(*entry, key)) {
      x[key].error(std::string("a ") + entry->name + " fault takes no `" + key + "`");
      params_ok = false;
    }
  if (x.has("direction") && !on_endpoint) {
    x["direction"].error("`direction` is for link faults");
    params_ok = false;
  }
  return params_ok ? entry : nullptr;
}

// the kind's own parameters (every kind named: a new kind without a case does not build)
void parse_fault_params(const ConfigNode& x, const Scenario& sc, const std::string& target, FaultConfig& f) {
  if (f.endpoint >= 0) {
    const std::string dir = x.choice_or("direction", "both", {"out", "in", "both"});
    f.direction = dir == "out" ? FaultDirection::out : dir == "in" ? FaultDirection::in : FaultDirection::both;
    if (f.kind == FaultKind::disconnect && f.direction != FaultDirection::both)
      x["direction"].error("a disconnect silences both directions");
  }
  f.channel = static_cast<int>(x.integer_or("channel", -1, 0, hal::max_channels - 1));
  if (f.device >= 0) {
    const int channels = hal::kind_info(sc.devices[static_cast<std::size_t>(f.device)].kind).channels;
    if (f.channel >= channels)
      x["channel"].error("expected a channel of " + target + " (0 .. " + std::to_string(channels - 1) + ")");
  }
  switch (f.kind) {
    case FaultKind::bias: f.value = x.number("value", Range::between(-1e9, 1e9)); break;
    case FaultKind::drift: f.rate = x.number("rate", Range::between(-1e9, 1e9)); break;
    case FaultKind::noise: f.sigma = x.number("sigma", Range::between(0, 1e9)); break;
    case FaultKind::scale: f.factor = x.number("factor", Range::between(-1e9, 1e9)); break;
    case FaultKind::saturation:
      f.min = x.number("min", Range::between(-1e12, 1e12));
      f.max = x.number("max", Range::between(-1e12, 1e12));
      if (x.has("min") && x.has("max") && f.min > f.max) x["max"].error("expected max >= min");
      break;
    case FaultKind::delay: f.steps = static_cast<std::uint32_t>(x.integer_or("steps", 1, 1, 10'000)); break;
    case FaultKind::corrupt: f.bits = static_cast<std::uint32_t>(x.integer_or("bits", 1, 1, 64)); break;
    case FaultKind::drop:
    case FaultKind::duplicate:
    case FaultKind::reorder:
    case FaultKind::disconnect:
    case FaultKind::stuck:
    case FaultKind::dropout: break;  // no parameters
  }
}

// the trigger (exactly one) and the duration (in steps, at least one); false if wrong
bool parse_fault_when(const ConfigNode& x, const Scenario& sc, FaultConfig& f) {
  const int triggers = int(x.has("at_s")) + int(x.has("at_step")) + int(x.has("probability")) + int(x.has("if"));
  if (triggers != 1) {
    x.error(triggers == 0 ? "expected a trigger: at_s, at_step, probability or if"
                          : "expected one trigger (at_s, at_step, probability or if), got " + std::to_string(triggers));
    return false;
  }
  if (x.has("at_s")) {
    f.trigger = FaultTrigger::at_time;
    f.at_s = x.number("at_s", Range::between(0, 1e9));
  } else if (x.has("at_step")) {
    f.trigger = FaultTrigger::at_step;
    f.at_step = static_cast<std::uint64_t>(x.integer_or("at_step", 0, 0, 1'000'000'000'000));
  } else if (x.has("probability")) {
    f.trigger = FaultTrigger::probability;
    f.probability = x.number("probability", Range::between(0, 1));
  } else {
    f.trigger = FaultTrigger::condition;
    f.condition = parse_condition(x["if"], sc);
  }
  if (x.has("duration_s") && x.has("duration_steps")) {
    x.error("expected duration_s or duration_steps, not both");
    return false;
  }
  if (x.has("duration_s")) {
    const double period_s = static_cast<double>(sc.loop.period_ns) * 1e-9;
    const double d = x.number("duration_s", Range::between(0, 1e9));
    f.duration_steps = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(d / period_s)));
  } else {
    f.duration_steps = static_cast<std::uint64_t>(x.integer_or("duration_steps", 1, 1, 1'000'000'000'000));
  }
  return true;
}

}  // namespace

std::vector<FaultConfig> parse_faults(const ConfigNode& node, const Scenario& sc) {
  std::vector<FaultConfig> out;
  if (!node.yaml().IsDefined() || !node.expect_sequence()) return out;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const ConfigNode x = node.at(i);
    if (!x.is_map()) {
      x.error("expected a fault {endpoint or device, kind, a trigger, a duration}, got " + describe_value(x.yaml()));
      continue;
    }
    if (!x.expect_map({"name",        "endpoint", "device",     "kind",           "direction", "at_s",   "at_step",
                       "probability", "if",       "duration_s", "duration_steps", "value",     "rate",   "sigma",
                       "factor",      "min",      "max",        "steps",          "bits",      "channel"}))
      continue;
    FaultConfig f;
    f.where = where(x);
    std::string target;
    if (!parse_fault_target(x, sc, f, target)) continue;
    const KindEntry* entry = parse_fault_kind(x, f.endpoint >= 0);
    if (entry == nullptr) continue;
    f.kind = entry->kind;
    if (f.endpoint >= 0 && !link_fault_passes(x, sc.endpoints[static_cast<std::size_t>(f.endpoint)], f.kind)) continue;
    parse_fault_params(x, sc, target, f);
    if (!parse_fault_when(x, sc, f)) continue;
    f.name = x.has("name") ? x.string("name")
                           : std::string(entry->name) + " on " + (f.endpoint >= 0 ? "endpoint " : "") + target;
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace tether::runtime
