// SPDX-License-Identifier: Apache-2.0
// The mcu endpoint's frame of a step and the Foxglove topics that show it (mcu_wire.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tether/mcu/mcu_endpoint.hpp"

namespace tether::adapters {

/// Builds one step's frame (its buffer keeps its capacity from step to step).
struct McuFrame {
  std::string bytes;
  void begin(std::size_t pins);
  void pin(double value, double changed_us);  // changed_us < 0: not this step
  void chips(std::size_t count);
  void chip(std::uint32_t transactions, std::uint32_t nacks);
};

/// The topics of an endpoint with this config; `device_names` by device index (full names).
std::vector<runtime::WireTopic> mcu_wire_topics(const McuEndpointConfig& config,
                                                const std::vector<std::string>& device_names);

}  // namespace tether::adapters
