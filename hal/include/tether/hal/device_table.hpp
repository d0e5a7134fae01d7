// SPDX-License-Identifier: Apache-2.0
// The device table that `tether devices SCENARIO` prints: one row per device with its
// index, full name, kind, direction, payload size, rate, units and noise.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "tether/hal/device_bank.hpp"

namespace tether::hal {

/// A one-line summary of a device's noise ("none", or "stddev=0.01 dropout=0.05 ...").
std::string noise_summary(const DeviceSpec& spec);
/// The device table as aligned text columns, one line per device, with a header line.
std::string device_table_text(const DeviceBank& bank);
/// The device table as a JSON array of objects (index, name, kind, kind_id, direction,
/// payload_size, rate_hz, units, body, mount, params, noise).
nlohmann::json device_table_json(const DeviceBank& bank);

}  // namespace tether::hal
