// SPDX-License-Identifier: Apache-2.0
// The `devices` list of a body in a scenario file, parsed into hal::DeviceSpec
// (docs/devices.md, "Device kinds and parameters"):
//
//   devices:
//     - name: psd_front              # -> vehicle.part.psd_front
//       kind: range                  # range, sonar, altimeter, depth, gyro, accel, imu, ...
//       mount: {position_m: [0.6, 0, 0], orientation_rpy_deg: [0, 0, 0]}
//       rate_hz: 20                  # sensors only; default: every loop step
//       params: {max_range_m: 4}     # kind-specific
//       noise: {stddev: 0.01, dropout: 0.02, delay_steps: 1}
#pragma once

#include <string>
#include <vector>

#include "tether/physics/world_model.hpp"

#include "tether/hal/device_spec.hpp"
#include "tether/scenario/config.hpp"

namespace tether::runtime {

/// Appends the devices of one body (vehicles[i].bodies[j].devices) to `out`. Records every
/// problem against the node (unknown keys, wrong types, numbers out of range, a name used
/// twice in `out`); an absent node is an empty list.
/// What devices' params name elsewhere, once every body and joint is in `model`: a dc_motor's
/// driven body (`params.drives: vehicle.part`), a tension sensor's joint (`params.joint` or
/// `params.cable`). Walks the scenario's `vehicles` and `cables` lists (a cable's `devices` sit
/// on its first segment); positioned errors for names that do not resolve.
void resolve_device_links(const ConfigNode& vehicles, const ConfigNode& cables, const WorldModel& model,
                          std::vector<hal::DeviceSpec>& devices);

void parse_devices(const ConfigNode& devices_node, const std::string& vehicle, const std::string& part, int body_index,
                   std::vector<hal::DeviceSpec>& out);

/// Parses "YYYY-MM-DDThh:mm:ss" with an optional trailing "Z" (UTC) into seconds since
/// 1970; false if malformed.
bool parse_utc_seconds(const std::string& text, std::int64_t& out);

}  // namespace tether::runtime
