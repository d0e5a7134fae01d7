// SPDX-License-Identifier: Apache-2.0
// The scenario keys that hold bodies together: `joints:` (fixed, hinge, slider, ball between
// two bodies or a body and the world), a body's `locks:` (world axes it may not move along or
// turn about) and `cables:` (a tether as a chain of segments). docs/scenario.md, "joints".
#pragma once

#include <cstdint>

#include "tether/physics/world_model.hpp"
#include "tether/physics/world_state.hpp"
#include "tether/hal/device_spec.hpp"
#include "tether/scenario/config.hpp"

namespace tether::runtime {

/// Reads the top-level `joints:` list and appends a joint per entry, built at the bodies'
/// initial poses. Bodies are named "vehicle.part" (or "world"). Problems are recorded on the node.
void parse_joints(const ConfigNode& list, WorldModel& model, const WorldState& initial);

/// Reads a body's `locks:` list (x, y, z, roll, pitch, yaw: the world axes it may not move
/// along or turn about) into a JointModel lock mask (0: none).
std::uint8_t parse_locks(const ConfigNode& list);

/// Reads the top-level `wheels:` list: each wheel becomes a body of the vehicle it is `on`
/// (a cylinder on a hinge about its axle, with an optional motor and brake) and, with a
/// `suspension`, an upright above it on a sprung slider to that body. Appends bodies, their
/// initial states and joints ("vehicle.NAME.axle", "vehicle.NAME.suspension").
void parse_wheels(const ConfigNode& list, WorldModel& model, WorldState& initial);

/// Reads the top-level `cables:` list: each cable becomes a vehicle of capsule segments joined
/// by ball joints, hung between a fixed point (or a body) and a body. Appends bodies, their
/// initial states and the joints, and the devices of the cable's own `devices` list (on its
/// first segment, the `from` end: a winch's load cell) to `devices`.
void parse_cables(const ConfigNode& list, WorldModel& model, WorldState& initial,
                  std::vector<hal::DeviceSpec>& devices);

}  // namespace tether::runtime
