// SPDX-License-Identifier: Apache-2.0
#include "tether/ardupilot/ardupilot_channels.hpp"

#include <algorithm>

#include "tether/ardupilot/ardupilot_json.hpp"

namespace tether::adapters::ardupilot {

double command_from_pwm(const ChannelMap& map, std::uint16_t pwm_us) {
  if (pwm_us == 0) return 0.0;
  const double pwm = std::clamp(static_cast<double>(pwm_us), static_cast<double>(map.min_us),
                                static_cast<double>(map.max_us));
  if (map.mode == ChannelMode::one_way) {
    const double span = map.max_us - map.min_us;
    const double u = map.reversed ? (map.max_us - pwm) / span : (pwm - map.min_us) / span;
    return std::clamp(u, 0.0, 1.0);
  }
  const double u = pwm >= map.trim_us ? (pwm - map.trim_us) / (map.max_us - map.trim_us)
                                      : (pwm - map.trim_us) / (map.trim_us - map.min_us);
  return std::clamp(map.reversed ? -u : u, -1.0, 1.0);
}

std::vector<ChannelMap> parse_channel_maps(const runtime::ConfigNode& list) {
  std::vector<ChannelMap> out;
  if (!list.expect_sequence()) return out;
  constexpr std::int64_t lowest_us = 500, highest_us = 2500;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const runtime::ConfigNode n = list.at(i);
    if (!n.expect_map({"channel", "actuator", "mode", "min_us", "trim_us", "max_us", "reversed", "scale"})) continue;
    ChannelMap m;
    // 0 marks a channel that is missing or wrong (already reported)
    if (!n.has("channel")) n.expected("channel", "a whole number from 1 to 32");
    m.channel = static_cast<int>(n.integer_or("channel", 0, 1, static_cast<std::int64_t>(max_channels)));
    m.actuator = n.string("actuator");
    m.mode = n.choice_or("mode", "reversible", {"reversible", "one_way"}) == "one_way" ? ChannelMode::one_way
                                                                                       : ChannelMode::reversible;
    m.min_us = static_cast<int>(n.integer_or("min_us", 1100, lowest_us, highest_us));
    m.max_us = static_cast<int>(n.integer_or("max_us", 1900, lowest_us, highest_us));
    m.reversed = n.boolean_or("reversed", false);
    m.scale = n.number_or("scale", 1.0, tether::runtime::Range::between(-1e6, 1e6));
    if (m.mode == ChannelMode::one_way) {
      if (n.has("trim_us")) n["trim_us"].error("a one_way channel stops at min_us; trim_us has no meaning there");
      if (m.min_us >= m.max_us) n["max_us"].error("expected max_us > min_us (" + std::to_string(m.min_us) + ")");
    } else {
      m.trim_us = static_cast<int>(n.integer_or("trim_us", 1500, lowest_us, highest_us));
      if (!(m.min_us < m.trim_us && m.trim_us < m.max_us))
        n.error("expected min_us < trim_us < max_us, got " + std::to_string(m.min_us) + " < " +
                std::to_string(m.trim_us) + " < " + std::to_string(m.max_us));
    }
    for (const ChannelMap& before : out) {
      if (m.channel != 0 && before.channel == m.channel)
        n["channel"].error("channel " + std::to_string(m.channel) + " is mapped twice");
      if (!m.actuator.empty() && before.actuator == m.actuator)
        n["actuator"].error("actuator " + m.actuator + " is mapped twice");
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace tether::adapters::ardupilot
