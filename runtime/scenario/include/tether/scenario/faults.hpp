// SPDX-License-Identifier: Apache-2.0
// `faults:` — seeded, recorded, replayable faults (docs/faults.md): on an endpoint's link
// (what goes out to the peer and what comes back) or on a device's reading, each triggered
// at a time, at a step, with a probability per step drawn from the scenario seed, or when a
// condition holds, and active for a duration.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "tether/scenario/config.hpp"
#include "tether/scenario/expectations.hpp"

namespace tether::runtime {

struct Scenario;

enum class FaultKind : std::uint8_t {
  // link
  drop,
  delay,
  duplicate,
  reorder,
  corrupt,
  disconnect,
  // device
  stuck,
  bias,
  drift,
  noise,
  dropout,
  scale,
  saturation,
};

const char* to_string(FaultKind kind);
/// True for the kinds that act on an endpoint's link.
inline bool is_link_fault(FaultKind k) { return k <= FaultKind::disconnect; }

/// Which way a link fault acts: on what the runtime sends, on what it receives, or both.
enum class FaultDirection : std::uint8_t { out = 1, in = 2, both = 3 };
const char* to_string(FaultDirection direction);

enum class FaultTrigger : std::uint8_t { at_time, at_step, probability, condition };

struct FaultConfig {
  std::string name;   // as given, or "KIND on TARGET"
  std::string where;  // "file:line:column" of the entry
  FaultKind kind = FaultKind::drop;
  int endpoint = -1;  // link faults: index into Scenario::endpoints
  int device = -1;    // device faults: index into Scenario::devices
  int channel = -1;   // device faults: one channel, or -1 for every channel of the reading
  FaultDirection direction = FaultDirection::both;
  FaultTrigger trigger = FaultTrigger::at_time;
  double at_s = 0;                   // at_time: seconds from the start
  std::uint64_t at_step = 0;         // at_step
  double probability = 0;            // per step, while not active
  ExpectationConfig condition;       // condition: `if: {value, that}`
  std::uint64_t duration_steps = 1;  // how long it stays active once triggered
  // parameters
  double value = 0;         // bias: the offset added
  double rate = 0;          // drift: offset per second since the start
  double sigma = 0;         // noise: standard deviation added
  double factor = 1;        // scale: the reading is multiplied by it
  double min = 0, max = 0;  // saturation: the reading is clamped to [min, max]
  std::uint32_t steps = 1;  // delay: messages arrive this many steps late
  std::uint32_t bits = 1;   // corrupt: bits flipped in each message
};

/// Parses `faults:` against the scenario's endpoints and devices (positioned errors); the
/// loop's period turns `duration_s` into steps.
std::vector<FaultConfig> parse_faults(const ConfigNode& node, const Scenario& scenario);

}  // namespace tether::runtime
