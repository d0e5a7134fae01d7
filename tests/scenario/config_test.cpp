// SPDX-License-Identifier: Apache-2.0
// Reading YAML: a key given twice in one map is an error naming both places, at any depth,
// rather than the second silently losing to the first.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tether/scenario/config.hpp"
#include "tether/scenario/scenario.hpp"

using namespace tether::runtime;

namespace {

const char* valid = R"(name: t
world:
  water: {density_kg_m3: 1025, surface_z_m: 0}
vehicles:
  - name: auv
    bodies:
      - name: hull
        shape: {type: sphere, radius_m: 0.2}
        mass_kg: 38
loop: {period_ms: 20, real_time_factor: 0, steps: 10}
endpoints:
  - name: c
    type: in_process
    vehicle: auv
    controller: idle
)";

// the errors parse_scenario reports for `text`, or an empty list if it parsed
std::vector<std::string> scenario_errors(const std::string& text) {
  try {
    parse_scenario(text, "s.yaml");
  } catch (const ConfigError& e) {
    return e.errors();
  }
  return {};
}

std::vector<std::string> load_errors(const std::string& text) {
  return load_config_text(text, "c.yaml").context().errors;
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("the scenario used below parses without errors") { CHECK(scenario_errors(valid).empty()); }

TEST_CASE("a top-level key given twice names both places") {
  // a second loop block at the end used to be dropped without a word
  const auto e = scenario_errors(std::string(valid) + "loop:\n  period_ms: 5\n");
  REQUIRE(e.size() == 1);
  CHECK(e[0] == "s.yaml:16:1: loop: key given twice (first at s.yaml:10:1)");
}

TEST_CASE("a key given twice inside a list item's map names both places") {
  SUBCASE("block style") {
    const auto e =
        scenario_errors(replace(valid, "        mass_kg: 38\n", "        mass_kg: 38\n        mass_kg: 40\n"));
    REQUIRE(e.size() == 1);
    CHECK(e[0] == "s.yaml:10:9: vehicles[0].bodies[0].mass_kg: key given twice (first at s.yaml:9:9)");
  }
  SUBCASE("flow style") {
    const auto e =
        scenario_errors(replace(valid, "{type: sphere, radius_m: 0.2}", "{type: sphere, radius_m: 0.2, type: box}"));
    REQUIRE(e.size() == 1);
    CHECK(e[0] == "s.yaml:8:46: vehicles[0].bodies[0].shape.type: key given twice (first at s.yaml:8:17)");
  }
  SUBCASE("an endpoint") {
    const auto e = scenario_errors(std::string(valid) + "    controller: depth_pid\n");
    REQUIRE(e.size() == 1);
    CHECK(e[0] == "s.yaml:16:5: endpoints[0].controller: key given twice (first at s.yaml:15:5)");
  }
}

TEST_CASE("a nested map's key given twice names both places") {
  const auto e = scenario_errors(replace(valid, "surface_z_m: 0}", "surface_z_m: 0, density_kg_m3: 1000}"));
  REQUIRE(e.size() == 1);
  CHECK(e[0] == "s.yaml:3:48: world.water.density_kg_m3: key given twice (first at s.yaml:3:11)");
}

TEST_CASE("keys given twice are reported together with the file's other errors") {
  std::string text = replace(valid, "mass_kg: 38", "mass_kg: heavy");
  text += "name: u\nloop: {steps: 3}\n";
  const auto e = scenario_errors(text);
  REQUIRE(e.size() == 3);
  CHECK(e[0] == "s.yaml:16:1: name: key given twice (first at s.yaml:1:1)");
  CHECK(e[1] == "s.yaml:17:1: loop: key given twice (first at s.yaml:10:1)");
  CHECK(e[2] == "s.yaml:9:18: vehicles[0].bodies[0].mass_kg: expected a number > 0, got \"heavy\"");
}

TEST_CASE("the same key in different maps is not a duplicate") {
  CHECK(load_errors("a: {k: 1}\nb: {k: 2}\nlist: [{k: 1}, {k: 2}]\nrows: [[1, 1], [1, 1]]\n").empty());
  CHECK(load_errors("- {name: x}\n- {name: x}\n").empty());
}

TEST_CASE("a key given three times is reported twice against the first") {
  const auto e = load_errors("k: 1\nk: 2\nk: 3\n");
  REQUIRE(e.size() == 2);
  CHECK(e[0] == "c.yaml:2:1: k: key given twice (first at c.yaml:1:1)");
  CHECK(e[1] == "c.yaml:3:1: k: key given twice (first at c.yaml:1:1)");
}

TEST_CASE("aliases: a duplicate in an anchored map is reported once and a self-reference ends") {
  // in yaml-cpp's node tree the alias is the anchored map again, and &x [*x] is a cycle
  const auto e = load_errors("a: &m {k: 1, k: 2}\nb: *m\nc: *m\n");
  REQUIRE(e.size() == 1);
  CHECK(e[0] == "c.yaml:1:14: a.k: key given twice (first at c.yaml:1:8)");
  CHECK(load_errors("a: &x [1, *x]\nb: *x\n").empty());
  const auto keys = load_errors("base: &b 1\n*b : 2\n*b : 3\n");
  REQUIRE(keys.size() == 1);
  CHECK(keys[0] == "c.yaml:3:1: *b: key given twice (first at c.yaml:2:1)");
}

TEST_CASE("a list of lists of maps gives the full path of a duplicate") {
  const auto e = load_errors("grid:\n  - - {a: 1}\n    - {a: 1, b: 2, a: 3}\n");
  REQUIRE(e.size() == 1);
  CHECK(e[0] == "c.yaml:3:20: grid[0][1].a: key given twice (first at c.yaml:3:8)");
}

namespace {

std::string all_errors(const std::string& text) {
  std::string all;
  for (const auto& e : scenario_errors(text)) all += e + "\n";
  return all;
}

}  // namespace

TEST_CASE("text: a name that is not valid UTF-8 is a positioned error, and the bytes are printed escaped") {
  std::string text = valid;
  text.replace(text.find("name: t\n"), 8, "name: \"t\xff\xfe\"\n");  // raw bytes ff fe (a YAML \\xff is U+00FF)
  const std::string e1 = all_errors(text);
  CAPTURE(e1);
  CHECK(e1.find("s.yaml:1:7: name: expected text in UTF-8") != std::string::npos);
  std::string raw = valid;
  raw.replace(raw.find("name: auv"), 9, "name: \"auv\xc3\x28\"");  // an invalid two-byte sequence, raw
  const std::string e2 = all_errors(raw);
  CAPTURE(e2);
  CHECK(e2.find("expected text in UTF-8") != std::string::npos);
  CHECK(e2.find("\\xc3(") != std::string::npos);  // escaped in the message
  CHECK(valid_utf8(e2));
  // UTF-8 names are welcome
  std::string ok = valid;
  ok.replace(ok.find("name: t\n"), 8, "name: \"Tauchgang \xc3\xbc\xe2\x82\xac\xf0\x9f\x90\x9f\"\n");
  CHECK(all_errors(ok).empty());
}

TEST_CASE("text: control bytes from the file are escaped in messages") {
  std::string text = valid;
  text.replace(text.find("steps: 10"), 9, "steps: \"1\\e[2J0\"");  // an ANSI clear-screen
  const std::string e = all_errors(text);
  CAPTURE(e);
  CHECK(e.find("\\x1b[2J") != std::string::npos);
  CHECK(e.find('\x1b') == std::string::npos);
  CHECK(printable("a\tb\x7f\xff\xc3\xa9") == "a\\x09b\\x7f\\xff\xc3\xa9");
  CHECK_FALSE(valid_utf8("\xed\xa0\x80"));      // a surrogate
  CHECK_FALSE(valid_utf8("\xc0\xaf"));          // overlong
  CHECK_FALSE(valid_utf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  CHECK(valid_utf8("\xf4\x8f\xbf\xbf"));
}

TEST_CASE("limits: a second YAML document is refused, not ignored") {
  const std::string e = all_errors(std::string(valid) + "---\nname: other\n");
  CAPTURE(e);
  CHECK(e.find("a second YAML document") != std::string::npos);
  CHECK(e.find("s.yaml:") != std::string::npos);
}

TEST_CASE("limits: aliases that expand a small file past the node limit are refused at once") {
  // 72 kB: terrain rows of 10,000 aliases of one 10,000-number row = 10^8 cells when expanded
  std::string text = valid;
  std::string row = "[";
  for (int i = 0; i < 10'000; ++i) row += i ? ",0" : "0";
  row += "]";
  std::string rows = "[&r " + row;
  for (int i = 1; i < 10'000; ++i) rows += ",*r";
  rows += "]";
  text.replace(text.find("world:\n"), 7,
               "world:\n  terrain: [{name: t, cell_size_m: 1, position_m: [0, 0, 0], heights: " + rows + "}]\n");
  const std::string e = all_errors(text);
  CAPTURE(e.substr(0, 400));
  CHECK(e.find("expands to more than 4000000 YAML nodes") != std::string::npos);
  CHECK(e.find("s.yaml:3:") != std::string::npos);  // at the alias that crossed the line
  // a billion laughs: nested aliases, saturating rather than overflowing
  std::string laughs = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 40; ++i)
    laughs += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [*a" + std::to_string(i - 1) + ",*a" +
              std::to_string(i - 1) + ",*a" + std::to_string(i - 1) + ",*a" + std::to_string(i - 1) + "]\n";
  const std::string e2 = all_errors(std::string(valid) + laughs);
  CHECK(e2.find("expands to more than") != std::string::npos);
}

TEST_CASE("--set: overrides by path, list elements by index or name, validated like the file") {
  const Scenario sc = parse_scenario(
      valid, "s.yaml",
      {"loop.seed=7", "vehicles[0].bodies[0].mass_kg=12.5", "vehicles.auv.bodies.hull.shape.radius_m=0.3",
       "endpoints.c.deadline_ms=4", "loop.history_steps=16"});
  CHECK(sc.loop.seed == 7);
  CHECK(sc.model.bodies[0].mass_kg == 12.5);
  CHECK(sc.model.bodies[0].shape.radius_m == 0.3);
  CHECK(sc.endpoints[0].deadline_ns == 4'000'000);
  CHECK(sc.loop.history_steps == 16);  // a key the file did not have
  CHECK(sc.overrides.size() == 5);

  const auto errors_of = [](std::vector<std::string> overrides) {
    try {
      parse_scenario(valid, "s.yaml", overrides);
    } catch (const ConfigError& e) {
      std::string all;
      for (const auto& l : e.errors()) all += l + "\n";
      return all;
    }
    return std::string();
  };
  // a value the file's rules refuse: named by the option, not by a place in the file
  CHECK(errors_of({"loop.seed=abc"}) == "--set loop.seed=abc: loop.seed: expected a whole number >= 0, got \"abc\"\n");
  CHECK(errors_of({"vehicles[0].bodies[0].mass_kg=-1"})
            .find("--set vehicles[0].bodies[0].mass_kg=-1: "
                  "vehicles[0].bodies[0].mass_kg: expected") == 0);
  CHECK(errors_of({"loop.colour=red"}).find("--set loop.colour=red: loop.colour: unknown key") == 0);
  // paths that lead nowhere, and values that are not YAML
  CHECK(errors_of({"vehicles[3].bodies[0].mass_kg=1"}) ==
        "--set vehicles[3].bodies[0].mass_kg=1: vehicles has no element [3]\n");
  CHECK(errors_of({"endpoints.nope.deadline_ms=1"}).find("endpoints has no element named \"nope\"") !=
        std::string::npos);
  // a section the file leaves out is created, so every documented key can be set; a
  // misspelt section is then an unknown key, named by the option
  CHECK_FALSE(parse_scenario(valid, "s.yaml", {"recording.compress=false"}).recording.compress);
  CHECK(parse_scenario(valid, "s.yaml").recording.compress);
  CHECK(errors_of({"recordng.compress=false"}).find("--set recordng.compress=false: ") == 0);
  CHECK(errors_of({"recordng.compress=false"}).find("recordng: unknown key") != std::string::npos);
  CHECK(errors_of({"loop.seed"}) == "--set loop.seed: expected PATH=VALUE\n");
  CHECK(errors_of({"loop.seed=[1, 2"}).find("--set loop.seed=[1, 2: the value is not YAML") == 0);
}

TEST_CASE("--set PATH[+]=VALUE appends to a list, creating it when absent") {
  // `expect` is not in the file: the first [+] creates the list, the second appends to it
  const Scenario sc = parse_scenario(valid, "s.yaml",
                                     {"expect[+]={name: no contact, value: auv.contacts, that: '== 0'}",
                                      "expect[+]={value: auv.depth_m, that: '< 5', when: at end}"});
  REQUIRE(sc.expectations.size() == 2);
  CHECK(sc.expectations[0].name == "no contact");
  CHECK(sc.expectations[1].value == "auv.depth_m");
  // a list in the file grows at its end
  const Scenario two =
      parse_scenario(valid, "s.yaml", {"endpoints[+]={name: d, type: in_process, vehicle: auv, controller: idle}"});
  REQUIRE(two.endpoints.size() == 2);
  CHECK(two.endpoints[1].name == "d");
  // `key:` left empty in the file is an empty list to append to
  const Scenario empty =
      parse_scenario(std::string(valid) + "expect:\n", "s.yaml", {"expect[+]={value: auv.contacts, that: '== 0'}"});
  CHECK(empty.expectations.size() == 1);

  const auto errors_of = [](std::vector<std::string> overrides) {
    try {
      parse_scenario(valid, "s.yaml", overrides);
    } catch (const ConfigError& e) {
      std::string all;
      for (const auto& l : e.errors()) all += l + "\n";
      return all;
    }
    return std::string();
  };
  // an appended element is validated like the file, and named by its option
  CHECK(errors_of({"expect[+]={value: auv.contacts, that: 'is fine'}"})
            .find("--set expect[+]={value: auv.contacts, that: 'is fine'}: expect[0].that: ") == 0);
  CHECK(errors_of({"loop[+]=1"}) == "--set loop[+]=1: loop is not a list (only a list takes [+])\n");
  CHECK(errors_of({"endpoints[+].name=x"}) ==
        "--set endpoints[+].name=x: [+] appends a list element: it ends the path\n");
  // the sections above a new list are created too; what they hold is checked like the file
  CHECK(errors_of({"world.tank.statics[+]=1"}).find("--set world.tank.statics[+]=1: world.tank") == 0);
  // a list the scenario does not know: the error names the option that made it
  CHECK(errors_of({"colours[+]=red"}).find("--set colours[+]=red: colours: unknown key") == 0);
}

TEST_CASE("a file with 5,000 unknown keys lists the first 100 errors and counts them all") {
  std::string text = valid;
  for (int i = 0; i < 5000; ++i) text += "unknown_" + std::to_string(i) + ": " + std::to_string(i) + "\n";
  try {
    parse_scenario(text, "big.yaml");
    FAIL("a file with unknown keys parsed");
  } catch (const ConfigError& e) {
    CHECK(e.count() == 5000);
    REQUIRE(e.errors().size() == 101);
    CHECK(e.errors().front().find("big.yaml:") == 0);
    CHECK(e.errors().front().find("unknown key") != std::string::npos);
    for (const std::string& line : e.errors()) CHECK(line.find("big.yaml") == 0);  // every line names the file
    CHECK(e.errors().back() == "big.yaml: more than 100 errors; only the first 100 are listed");
    // the exception's text is the list, not a million lines
    CHECK(std::string(e.what()).size() < 100 * 400);
  }
}

TEST_CASE("a map with more than 10,000 keys is refused at the first key past them, before a tree is built") {
  std::string text = valid;
  const int first_line = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + 1;
  for (int i = 0; i < 20000; ++i) text += "unknown_" + std::to_string(i) + ": " + std::to_string(i) + "\n";
  try {
    parse_scenario(text, "huge.yaml");
    FAIL("a map of 20,000 keys parsed");
  } catch (const ConfigError& e) {
    REQUIRE(e.errors().size() == 1);
    // the valid file's own top-level keys come first: the 10,001st key is among the unknown ones
    const std::string& line = e.errors().front();
    CHECK_MESSAGE(line.find("huge.yaml:") == 0, line);
    CHECK_MESSAGE(line.find(": (top level): a map with more than 10000 keys") != std::string::npos, line);
    const int at = std::stoi(line.substr(std::string("huge.yaml:").size()));
    CHECK(at > first_line);
    CHECK(at < first_line + 10000);
  }
}

TEST_CASE("a list with more than 200,000 elements is refused at the first element past them") {
  // 250,000 entries in world.statics (the valid file has none): refused at the 200,001st,
  // positioned, one error
  std::string text = "name: long\nworld:\n  statics:\n";
  for (int i = 0; i < 250000; ++i) text += "    - " + std::to_string(i) + "\n";
  text += "vehicles: []\n";
  try {
    parse_scenario(text, "long.yaml");
    FAIL("a list of 250,000 elements parsed");
  } catch (const ConfigError& e) {
    REQUIRE(e.errors().size() == 1);
    CHECK(e.errors().front().find("long.yaml:200004:7: world.statics: a list with more than 200000 elements") == 0);
  }
  // 200,000 are read (and judged element by element: not a map each)
  std::string fits = "name: long\nworld:\n  statics:\n";
  for (int i = 0; i < 200000; ++i) fits += "    - " + std::to_string(i) + "\n";
  try {
    parse_scenario(fits, "fits.yaml");
    FAIL("200,000 numbers parsed as static bodies");
  } catch (const ConfigError& e) {
    CHECK(e.errors().front().find("world.statics[0]: expected a map") != std::string::npos);
  }
}

TEST_CASE("up to 100 errors are all listed, with no count line") {
  std::string text = valid;
  for (int i = 0; i < 100; ++i) text += "unknown_" + std::to_string(i) + ": 1\n";
  try {
    parse_scenario(text, "s.yaml");
    FAIL("a file with unknown keys parsed");
  } catch (const ConfigError& e) {
    CHECK(e.count() == 100);
    CHECK(e.errors().size() == 100);
    CHECK(e.errors().back().find("unknown_99") != std::string::npos);
  }
}
