// SPDX-License-Identifier: Apache-2.0
// Fully qualified device names: vehicle.part.device (T. Sommer, "Physics for a 3D Driving
// Simulator", AutoSim, 2008, §4.2).
#pragma once

#include <string>
#include <string_view>

namespace tether::hal {

/// The three parts of a fully qualified device name.
struct DeviceName {
  std::string vehicle;
  std::string part;
  std::string device;
  std::string full() const { return vehicle + "." + part + "." + device; }
};

/// True if `s` is a valid name segment: [A-Za-z_][A-Za-z0-9_-]*, at most 31 characters.
bool valid_name_segment(std::string_view s);

/// Splits "vehicle.part.device"; false (and a reason in `error`) if malformed.
bool parse_device_name(std::string_view text, DeviceName& out, std::string* error);

}  // namespace tether::hal
