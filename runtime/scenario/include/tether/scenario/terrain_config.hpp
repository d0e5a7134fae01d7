// SPDX-License-Identifier: Apache-2.0
// The scenario keys under world.terrain: height fields read from the file (inline rows or a
// PGM image) and placed as static bodies.
#pragma once

#include <string>

#include "tether/physics/world_model.hpp"
#include "tether/scenario/config.hpp"

namespace tether::runtime {

/// Reads a world.terrain list (each entry: name, position_m, orientation_rpy_deg, cell_size_m,
/// height_scale_m, base_m, one of pgm (path relative to `base_dir`) or heights (rows),
/// restitution, friction) and appends a heightfield and a static per entry. Problems are
/// recorded on the node (the scenario throws them all at the end).
void parse_terrain(const ConfigNode& list, WorldModel& model, const std::string& base_dir);

}  // namespace tether::runtime
