// SPDX-License-Identifier: Apache-2.0
// Height-field terrain: building grids (from rows or a PGM image), height lookup, bounds and
// contacts with convex shapes. The scenario keys under world.terrain are read by the scenario
// room (tether/scenario/terrain_config.hpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tether/physics/collision.hpp"
#include "tether/physics/world_model.hpp"

namespace tether::runtime {

/// Checks the grid (at least 2x2 vertices, matching size, finite heights, cell > 0) and fills
/// min/max height. Throws std::invalid_argument with a reason otherwise.
void finish_heightfield(HeightField& field);

/// A grid from rows of heights (rows[j][i] is the height at x = i·cell, y = j·cell), each
/// multiplied by height_scale_m. Throws std::invalid_argument if the rows are ragged.
HeightField make_heightfield(const std::vector<std::vector<double>>& rows, double cell_size_m,
                             double height_scale_m = 1.0, std::string name = {});

/// A grid from a binary (P5, 8 or 16 bit) or ASCII (P2) PGM image held in memory: height =
/// pixel / maxval · height_scale_m + base_m. The image's top row is the grid's last row
/// (largest y), so the image reads as a map with +y up. PNG is not supported.
/// Throws std::invalid_argument naming what is wrong.
HeightField heightfield_from_pgm(std::string_view bytes, double cell_size_m, double height_scale_m, double base_m = 0.0,
                                 std::string name = {});
/// Same, reading the file at `path`.
HeightField load_pgm_heightfield(const std::string& path, double cell_size_m, double height_scale_m,
                                 double base_m = 0.0);

/// Height and upward unit normal of the surface at grid-frame (x, y); false outside the grid.
bool heightfield_height(const HeightField& field, double x_m, double y_m, double& z_m, Vec3* normal = nullptr);

/// Terrain height below world (x, y) for a heightfield static (its frame turned by yaw only);
/// false if the point is outside the grid or the static is not a heightfield.
bool terrain_height(const WorldModel& model, int static_index, double x_m, double y_m, double& z_m,
                    Vec3* normal_world = nullptr);

/// World bounding box of a heightfield placed at (position, rotation).
Aabb heightfield_aabb(const HeightField& field, const Vec3& position, const Mat3& rotation);

/// Contacts between a convex shape and a placed heightfield, gaps below margin_m; normals point
/// from the terrain toward the shape. Spheres and capsules are exact against the triangles;
/// boxes and cylinders use their corners/rim points against the surface plus grid vertices
/// against the shape (docs/physics.md). Returns the count written (<= max_contact_points).
int collide_heightfield(const ShapePose& shape, const HeightField& field, const Vec3& position, const Mat3& rotation,
                        double margin_m, ContactPoint* out);

}  // namespace tether::runtime
