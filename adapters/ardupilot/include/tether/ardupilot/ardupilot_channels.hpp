// SPDX-License-Identifier: Apache-2.0
// From ArduPilot's servo outputs to Tether's actuator commands (docs/ardupilot.md,
// "Channels"): each mapped channel names one actuator and how its pulse width becomes a
// command. A vehicle frame (which motor sits on which channel, which way it turns) is
// therefore configuration, not code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tether/scenario/config.hpp"

namespace tether::adapters::ardupilot {

enum class ChannelMode : std::uint8_t {
  reversible,  // trim is stop: min..trim..max -> -1..0..1 (a thruster, a servo)
  one_way,     // min is stop: min..max -> 0..1 (a propeller that only pushes)
};

/// One mapped servo channel.
struct ChannelMap {
  int channel = 1;       // ArduPilot's SERVOn: 1..32
  std::string actuator;  // the actuator's name, resolved by the endpoint at configure time
  int min_us = 1100;
  int trim_us = 1500;  // reversible only
  int max_us = 1900;
  bool reversed = false;
  ChannelMode mode = ChannelMode::reversible;
  double scale = 1.0;  // the actuator gets command × scale (a thruster: 1; a fin: its full deflection in rad)
};

/// The command for a pulse width: reversible -1..1 (piecewise linear through trim, so
/// both sides reach full scale), one_way 0..1; `reversed` mirrors it (reversible: negated,
/// one_way: max is stop). Pulses outside min..max are clamped; 0 ("no output", what
/// ArduPilot sends on a disabled channel) is the stop command.
double command_from_pwm(const ChannelMap& map, std::uint16_t pwm_us);

/// Reads a `channels:` list (keys channel, actuator, mode, min_us, trim_us, max_us,
/// reversed, scale), e.g.
///   channels:
///     - {channel: 1, actuator: thruster_fr, min_us: 1100, trim_us: 1500, max_us: 1900}
///     - {channel: 3, actuator: prop, mode: one_way, reversed: true}
/// Records positioned errors on the nodes (the caller throws): a channel outside 1..32 or
/// given twice, an actuator missing or given twice, min < trim < max (min < max for
/// one_way, where trim_us has no meaning), pulses within 500..2500 µs.
std::vector<ChannelMap> parse_channel_maps(const runtime::ConfigNode& list);

}  // namespace tether::adapters::ardupilot
