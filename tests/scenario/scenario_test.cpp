// SPDX-License-Identifier: Apache-2.0
// Scenario parsing: what a valid file yields and the exact message for each kind of mistake.
#include <doctest/doctest.h>

#include <string>

#include "scenario_test_util.hpp"
#include "test_paths.hpp"
#include "tether/scenario/scenario.hpp"

using namespace tether::runtime;
using tether::runtime::test::errors_of;
using tether::runtime::test::replace;

namespace {

const char* valid = R"(name: t
world:
  gravity_m_s2: [0, 0, -9.81]
  water: {density_kg_m3: 1025, surface_z_m: 0}
  tank: {size_m: [20, 10, 8]}
vehicles:
  - name: auv
    bodies:
      - name: hull
        shape: {type: cylinder, radius_m: 0.1, length_m: 1.2}
        mass_kg: 38
        initial: {position_m: [1, 2, -3], velocity_m_s: [0.5, 0, 0]}
loop: {period_ms: 20, real_time_factor: 0, duration_s: 2, seed: 7}
endpoints:
  - {name: c, type: in_process, vehicle: auv, controller: idle, deadline_ms: 3, timeout_policy: safe}
)";

}  // namespace

TEST_CASE("a valid scenario") {
  const Scenario sc = parse_scenario(valid, "s.yaml");
  CHECK(sc.name == "t");
  REQUIRE(sc.model.bodies.size() == 1);
  CHECK(sc.model.bodies[0].name == "auv.hull");
  CHECK(sc.model.bodies[0].mass_kg == 38);
  CHECK(sc.model.water.present);
  CHECK(sc.model.statics.size() == 5);  // tank floor and four walls
  CHECK(sc.initial.bodies[0].position_m == Vec3(1, 2, -3));
  CHECK(sc.initial.bodies[0].linear_momentum.x() == doctest::Approx(19));
  CHECK(sc.loop.period_ns == 20'000'000);
  CHECK(sc.loop.steps == 100);
  CHECK(sc.loop.seed == 7);
  CHECK(sc.loop.real_time_factor == 0);
  REQUIRE(sc.endpoints.size() == 1);
  CHECK(sc.endpoints[0].deadline_ns == 3'000'000);
  CHECK(sc.endpoints[0].policy == TimeoutPolicy::safe);
  CHECK(sc.endpoints[0].vehicle_index == 0);
}

TEST_CASE("the default scenario in config/ is valid and puts firmware in the loop") {
  const Scenario sc = load_scenario(TETHER_SOURCE_DIR + "/config/scenarios/default.yaml");
  CHECK(sc.name == "default");
  REQUIRE(sc.endpoints.size() == 1);
  CHECK(sc.endpoints[0].type == "serial");
  const Scenario in_process = load_scenario(TETHER_SOURCE_DIR + "/config/scenarios/in_process_depth_hold.yaml");
  CHECK(in_process.name == "in_process_depth_hold");
  REQUIRE(in_process.endpoints.size() == 1);
  CHECK(in_process.endpoints[0].type == "in_process");
}

TEST_CASE("config errors name file, line, column and key path, and say what was expected") {
  SUBCASE("a word where a number belongs") {
    const auto e = errors_of(replace(valid, "mass_kg: 38", "mass_kg: heavy"));
    REQUIRE(e.size() == 1);
    CHECK(e[0] == "s.yaml:11:18: vehicles[0].bodies[0].mass_kg: expected a number > 0, got \"heavy\"");
  }
  SUBCASE("a number out of range") {
    const auto e = errors_of(replace(valid, "mass_kg: 38", "mass_kg: -1"));
    REQUIRE(e.size() == 1);
    CHECK(e[0] == "s.yaml:11:18: vehicles[0].bodies[0].mass_kg: expected a number > 0, got \"-1\"");
  }
  SUBCASE("a missing key points at its parent") {
    const auto e = errors_of(replace(valid, "        mass_kg: 38\n", ""));
    REQUIRE(e.size() == 1);
    CHECK(e[0] == "s.yaml:9:9: vehicles[0].bodies[0].mass_kg: missing; expected a number > 0");
  }
  SUBCASE("a typo in a key is an error, not silently ignored") {
    const auto e = errors_of(replace(valid, "mass_kg: 38", "mas_kg: 38"));
    REQUIRE(e.size() == 2);
    CHECK(e[0].rfind("s.yaml:11:9: vehicles[0].bodies[0].mas_kg: unknown key (allowed here: name, shape, mass_kg,",
                     0) == 0);
    CHECK(e[1] == "s.yaml:9:9: vehicles[0].bodies[0].mass_kg: missing; expected a number > 0");
  }
  SUBCASE("a choice outside its set") {
    const auto e = errors_of(replace(valid, "timeout_policy: safe", "timeout_policy: wait"));
    REQUIRE(e.size() == 1);
    CHECK(e[0] == "s.yaml:15:97: endpoints[0].timeout_policy: expected one of block, hold, safe, abort, got \"wait\"");
  }
  SUBCASE("a vector of the wrong length") {
    const auto e = errors_of(replace(valid, "position_m: [1, 2, -3]", "position_m: [1, 2]"));
    REQUIRE(e.size() == 1);
    CHECK(e[0] == "s.yaml:12:31: vehicles[0].bodies[0].initial.position_m: expected a list of 3 numbers, got a list");
  }
  SUBCASE("an element of a vector that is not a number") {
    const auto e = errors_of(replace(valid, "size_m: [20, 10, 8]", "size_m: [20, ten, 8]"));
    REQUIRE(e.size() == 1);
    CHECK(e[0] == "s.yaml:5:23: world.tank.size_m[1]: expected a number > 0, got \"ten\"");
  }
  SUBCASE("an unknown shape type") {
    const auto e = errors_of(replace(valid, "type: cylinder", "type: torus"));
    REQUIRE(e.size() == 1);
    CHECK(e[0] ==
          "s.yaml:10:23: vehicles[0].bodies[0].shape.type: expected one of sphere, box, cylinder, capsule, got "
          "\"torus\"");
  }
  SUBCASE("an endpoint naming a vehicle that does not exist") {
    const auto e = errors_of(replace(valid, "vehicle: auv", "vehicle: rov"));
    REQUIRE(e.size() == 1);
    CHECK(e[0] == "s.yaml:15:42: endpoints[0].vehicle: no vehicle named \"rov\" in this scenario");
  }
  SUBCASE("steps and duration together") {
    const auto e = errors_of(replace(valid, "duration_s: 2", "duration_s: 2, steps: 5"));
    REQUIRE(e.size() == 1);
    CHECK(e[0] == "s.yaml:13:56: loop.duration_s: give either steps or duration_s, not both");
  }
  SUBCASE("every error in the file is reported at once") {
    std::string text = replace(valid, "mass_kg: 38", "mass_kg: heavy");
    text = replace(text, "period_ms: 20", "period_ms: fast");
    text = replace(text, "density_kg_m3: 1025", "density_kg_m3: 0");
    CHECK(errors_of(text).size() == 3);
  }
  SUBCASE("a YAML syntax error") {
    const auto e = errors_of("world: {gravity_m_s2: [0, 0\nvehicles: []\n");
    REQUIRE(e.size() == 1);
    CHECK(e[0].rfind("s.yaml:", 0) == 0);
    CHECK(e[0].find("YAML syntax error") != std::string::npos);
  }
  SUBCASE("not a map at the top") {
    const auto e = errors_of("- 1\n- 2\n");
    REQUIRE(e.size() == 1);
    CHECK(e[0] == "s.yaml:1:1: (top level): expected a scenario map (world, vehicles, loop, endpoints), got a list");
  }
  SUBCASE("a missing file") {
    try {
      load_scenario("/nonexistent/x.yaml");
      FAIL("no error");
    } catch (const ConfigError& e) {
      CHECK(std::string(e.what()) == "/nonexistent/x.yaml: cannot open the file");
    }
  }
}

TEST_CASE("scenario: numbers whose derived figures would not be finite are refused (found by the fuzz target)") {
  const auto errors_of = [](const std::string& text) {
    try {
      parse_scenario(text, "f.yaml");
    } catch (const ConfigError& e) {
      std::string all;
      for (const auto& l : e.errors()) all += l + "\n";
      return all;
    }
    return std::string();
  };
  const auto body = [](const std::string& shape, const std::string& mass) {
    return "vehicles:\n  - name: auv\n    bodies:\n      - {name: hull, shape: " + shape + ", mass_kg: " + mass + "}\n";
  };
  CHECK(errors_of(body("{type: sphere, radius_m: 0.2}", "1e-320")).find("mass_kg: expected a value from 1e-06 kg") !=
        std::string::npos);
  CHECK(errors_of(body("{type: sphere, radius_m: 1e-200}", "1")).find("radius_m: expected a value from 1e-06 m") !=
        std::string::npos);
  CHECK(errors_of(body("{type: cylinder, radius_m: 0.1, length_m: 1e300}", "1")).find("length_m: expected") !=
        std::string::npos);
  CHECK(errors_of(body("{type: box, size_m: [1, 1e300, 1]}", "1")).find("size_m: expected") != std::string::npos);
  CHECK(errors_of(body("{type: sphere, radius_m: 0.2}", "1") + "loop: {duration_s: 1e300}\n")
            .find("loop.duration_s: expected") != std::string::npos);
  CHECK(errors_of(body("{type: sphere, radius_m: 0.2}", "1") +
                  "endpoints: [{name: c, type: in_process, vehicle: auv, controller: idle, deadline_ms: 1e13}]\n")
            .find("deadline_ms: expected") != std::string::npos);
  // and an expectation on a vehicle without bodies is an error, not a read past the end
  CHECK(errors_of("vehicles: [{name: auv, bodies: []}]\nexpect:\n  - {value: auv.depth_m, that: \"< 1\"}\n") != "");
}

TEST_CASE("world.free_substep_s: 10 ms by default, max_substep_s alone sets both, errors positioned") {
  CHECK(parse_scenario(valid, "s.yaml").model.free_substep_s == 0.01);
  const std::string tank = "  tank: {size_m: [20, 10, 8]}\n";
  const Scenario alone = parse_scenario(replace(valid, tank, tank + "  max_substep_s: 0.001\n"), "s.yaml");
  CHECK(alone.model.max_substep_s == 0.001);
  CHECK(alone.model.free_substep_s == 0.001);  // the limit asked for holds everywhere
  const Scenario both =
      parse_scenario(replace(valid, tank, tank + "  max_substep_s: 0.001\n  free_substep_s: 0.02\n"), "s.yaml");
  CHECK(both.model.free_substep_s == 0.02);
  for (const char* bad : {"-1", "0", ".nan", "1e308", "fast", "[0.01]"}) {
    CAPTURE(bad);
    const auto e = errors_of(replace(valid, tank, tank + "  free_substep_s: " + bad + "\n"));
    REQUIRE(e.size() == 1);
    CHECK(e[0].find("s.yaml:") == 0);
    CHECK(e[0].find("world.free_substep_s") != std::string::npos);
  }
  const auto misspelled = errors_of(replace(valid, tank, tank + "  free_substeps_s: 0.01\n"));
  REQUIRE(misspelled.size() == 1);
  CHECK(misspelled[0].find("free_substeps_s") != std::string::npos);
}

TEST_CASE("world.physics_threads: 1 by default, the scenario's count, positioned errors out of range") {
  CHECK(parse_scenario(valid, "s.yaml").model.threads == 1);
  const std::string four =
      replace(valid, "  tank: {size_m: [20, 10, 8]}\n", "  tank: {size_m: [20, 10, 8]}\n  physics_threads: 4\n");
  CHECK(parse_scenario(four, "s.yaml").model.threads == 4);
  for (const char* bad : {"0", "257", "two", "1.5"}) {
    CAPTURE(bad);
    const auto e = errors_of(replace(four, "physics_threads: 4", std::string("physics_threads: ") + bad));
    REQUIRE(e.size() == 1);
    CHECK(e[0] == std::string("s.yaml:6:20: world.physics_threads: expected a whole number from 1 to 256, got \"") +
                      bad + "\"");
  }
}
