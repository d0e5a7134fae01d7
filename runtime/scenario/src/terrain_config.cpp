// SPDX-License-Identifier: Apache-2.0
#include "tether/scenario/terrain_config.hpp"

#include <filesystem>
#include <numbers>

#include "tether/physics/terrain.hpp"

namespace tether::runtime {

void parse_terrain(const ConfigNode& list, WorldModel& model, const std::string& base_dir) {
  if (!list.yaml().IsDefined()) return;
  if (!list.expect_sequence()) return;
  constexpr double deg = std::numbers::pi / 180.0;
  for (std::size_t k = 0; k < list.size(); ++k) {
    const ConfigNode t = list.at(k);
    if (!t.expect_map({"name", "position_m", "orientation_rpy_deg", "cell_size_m", "height_scale_m", "base_m", "pgm",
                       "heights", "restitution", "friction"}))
      continue;
    const std::string name = t.string("name");
    const double cell = t.number("cell_size_m", Range::positive());
    const double scale = t.number_or("height_scale_m", 1.0);
    const double base = t.number_or("base_m", 0.0);
    HeightField field;
    bool ok = false;
    if (t.has("pgm") == t.has("heights")) {
      t.error("expected exactly one of pgm (a PGM image path) or heights (a list of rows)");
    } else if (t.has("pgm")) {
      std::filesystem::path p = t.string("pgm");
      if (p.is_relative()) p = std::filesystem::path(base_dir) / p;
      try {
        field = load_pgm_heightfield(p.string(), cell > 0 ? cell : 1.0, scale, base);
        ok = cell > 0;
      } catch (const std::exception& e) {
        t["pgm"].error(e.what());
      }
    } else {
      const ConfigNode rows = t["heights"];
      std::vector<std::vector<double>> values;
      bool rows_ok = rows.is_sequence() && rows.size() >= 2;
      if (!rows_ok) rows.error("expected a list of at least 2 rows, each a list of at least 2 numbers");
      for (std::size_t j = 0; rows_ok && j < rows.size(); ++j) {
        const ConfigNode row = rows.at(j);
        std::vector<double> r;
        if (!row.is_sequence()) {
          row.error("expected a list of numbers, got " + describe_value(row.yaml()));
          rows_ok = false;
          break;
        }
        for (std::size_t i = 0; i < row.size(); ++i) {
          try {
            r.push_back(row.yaml()[i].as<double>() + 0.0);
          } catch (const std::exception&) {
            row.at(i).error("expected a number, got " + describe_value(row.yaml()[i]));
            rows_ok = false;
          }
        }
        values.push_back(std::move(r));
      }
      if (rows_ok) {
        try {
          field = make_heightfield(values, cell > 0 ? cell : 1.0, scale, name);
          for (double& h : field.heights_m) h += base;
          finish_heightfield(field);
          ok = cell > 0;
        } catch (const std::exception& e) {
          rows.error(e.what());
        }
      }
    }
    if (!ok) continue;
    field.name = name;
    StaticBody body;
    body.name = name;
    body.shape.kind = ShapeKind::heightfield;
    body.shape.heightfield = static_cast<int>(model.heightfields.size());
    body.position_m = t.vec3_or("position_m", Vec3::Zero());
    const Vec3 rpy = t.vec3_or("orientation_rpy_deg", Vec3::Zero());
    body.orientation = quat_from_rpy(rpy.x() * deg, rpy.y() * deg, rpy.z() * deg);
    body.restitution = t.number_or("restitution", 0.3, Range::between(0, 1));
    body.friction = t.number_or("friction", 0.5, Range::non_negative());
    model.heightfields.push_back(std::move(field));
    model.statics.push_back(std::move(body));
  }
}

}  // namespace tether::runtime
