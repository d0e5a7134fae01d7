// SPDX-License-Identifier: Apache-2.0
#include "tether/scenario/terrain_config.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tether/physics/terrain.hpp"

using namespace tether::runtime;

TEST_CASE("world.terrain entries: inline rows and PGM files, with errors people can act on") {
  const std::string dir = std::filesystem::temp_directory_path().string();
  std::ofstream(dir + "/tether_terrain_test_seabed.pgm", std::ios::binary) << "P2 3 3 10\n0 5 10\n0 5 10\n0 5 10\n";
  const ConfigNode root = load_config_text(R"(
terrain:
  - name: ramp
    position_m: [-1, -1, -3]
    cell_size_m: 0.5
    height_scale_m: 2
    heights:
      - [0, 0.5, 1]
      - [0, 0.5, 1]
    friction: 0.7
  - name: seabed
    cell_size_m: 1
    height_scale_m: 1
    base_m: -2
    pgm: tether_terrain_test_seabed.pgm
)",
                                           "scenario.yaml");
  WorldModel model;
  parse_terrain(root["terrain"], model, dir);
  REQUIRE(root.context().errors.empty());
  REQUIRE(model.heightfields.size() == 2);
  REQUIRE(model.statics.size() == 2);
  CHECK(model.statics[0].name == "ramp");
  CHECK(model.statics[0].shape.kind == ShapeKind::heightfield);
  CHECK(model.statics[0].friction == doctest::Approx(0.7));
  CHECK(model.heightfields[0].height(2, 1) == doctest::Approx(2.0));
  CHECK(model.statics[1].shape.heightfield == 1);
  CHECK(model.heightfields[1].height(2, 0) == doctest::Approx(-1.0));
  std::filesystem::remove(dir + "/tether_terrain_test_seabed.pgm");

  const ConfigNode bad = load_config_text(R"(
terrain:
  - name: a
    cell_size_m: 1
    heights: [[0, 1], [2]]
  - name: b
    cell_size_m: 1
  - name: c
    cell_size_m: -1
    pgm: missing.pgm
  - name: d
    cell_size_m: 1
    heights: [[0, x], [1, 1]]
)",
                                          "bad.yaml");
  WorldModel m2;
  parse_terrain(bad["terrain"], m2, dir);
  const auto& errors = bad.context().errors;
  REQUIRE(errors.size() >= 4);
  std::string all;
  for (const auto& e : errors) all += e + "\n";
  CAPTURE(all);
  CHECK(all.find("bad.yaml:") != std::string::npos);
  CHECK(all.find("row 1 has 1 heights") != std::string::npos);
  CHECK(all.find("exactly one of pgm") != std::string::npos);
  CHECK(all.find("cannot open") != std::string::npos);
  CHECK(all.find("expected a number") != std::string::npos);
  CHECK(m2.heightfields.empty());
}
