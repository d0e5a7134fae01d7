// SPDX-License-Identifier: Apache-2.0
// The mcu endpoint as a user meets it (docs/mcu.md): the Arduino examples under
// examples/arduino run with `tether run` and pass their expectations, the Serial lines are in
// the recording, a run replays bit for bit and runs again to the same state; the ROV sketch
// passes its campaign with faults at its pins; a sketch that does not build is named by
// `tether check` with the compiler's first error.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "test_paths.hpp"
#include "tether/recording/replay.hpp"

namespace {

namespace fs = std::filesystem;

const std::string tether_bin = TETHER_BINARY_DIR + "/tether";
const std::string examples = TETHER_SOURCE_DIR + "/examples/arduino/";

// sketches build into the build folder's cache, not the user's
std::string env() { return "TETHER_SKETCH_CACHE=" + TETHER_BINARY_DIR + "/sketch_cache "; }

std::string fresh_dir(const char* name) {
  const auto dir = fs::temp_directory_path() / ("tether_mcu_cli_test_" + std::to_string(getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

std::string final_hash(const std::string& out) {
  std::smatch m;
  static const std::regex re("final state hash ([0-9a-f]{16})");
  return std::regex_search(out, m, re) ? m[1].str() : "";
}

}  // namespace

TEST_CASE(
    "mcu examples: AnalogInOutSerial, Button and SFRRanger_reader, unmodified, pass their expectations, the "
    "Serial lines are in the recording, a run replays bit for bit and runs again to the same state") {
  const std::string dir = fresh_dir("examples");
  for (const char* name : {"analog_in_out_serial", "button", "sfr_ranger_reader"}) {
    const auto check = tether::cli_test::run(env() + tether_bin + " check " + examples + name + ".yaml");
    CHECK_MESSAGE(check.exit_code == 0, check.out);
    const auto r =
        tether::cli_test::run(env() + tether_bin + " run " + examples + name + ".yaml --out " + dir + "/" + name);
    CHECK_MESSAGE(r.exit_code == 0, r.out);
    CHECK_MESSAGE(contains(r.out, "PASS"), r.out);
    CHECK_MESSAGE(!contains(r.out, "FAIL"), r.out);
  }
  // the Serial lines, one event each, named after the endpoint
  tether::runtime::Recording rec;
  std::string error;
  REQUIRE_MESSAGE(tether::runtime::load_recording(dir + "/analog_in_out_serial/recording.mcap", rec, &error), error);
  int lines = 0;
  for (const auto& e : rec.events)
    if (e.value("name", "") == "uno" && contains(e.value("message", ""), "sensor = 306\t output = 76")) ++lines;
  CHECK(lines >= 80);  // a line every ~30 ms for 3 s
  // the pins' topics, a message a step
  REQUIRE(rec.channels.count("/endpoints/uno/pins") == 1);
  CHECK(rec.channels.at("/endpoints/uno/pins").first == 300);
  CHECK(rec.channels.count("/endpoints/uno/pins/D9") == 1);
  REQUIRE(rec.summary);
  CHECK((*rec.summary)["endpoints"][0]["mcu"]["serial_lines"].get<int>() == lines);
  // replay and a second run
  const auto v = tether::cli_test::run(tether_bin + " replay " + dir + "/analog_in_out_serial/recording.mcap --verify");
  CHECK_MESSAGE(v.exit_code == 0, v.out);
  CHECK_MESSAGE(contains(v.out, "bit-identical"), v.out);
  const auto a = tether::cli_test::run(env() + tether_bin + " run " + examples + "sfr_ranger_reader.yaml --out " + dir +
                                       "/again_a");
  const auto b = tether::cli_test::run(env() + tether_bin + " run " + examples + "sfr_ranger_reader.yaml --out " + dir +
                                       "/again_b");
  CHECK(!final_hash(a.out).empty());
  CHECK(final_hash(a.out) == final_hash(b.out));
  fs::remove_all(dir);
}

TEST_CASE(
    "mcu examples: the ROV sketch (MS5837 and MPU-6050 on I2C, ESCs, H-bridges) holds depth and heading, and "
    "passes its campaign with faults at its pins") {
  const std::string dir = fresh_dir("rov");
  // 3 s of it here, without its expectations (its campaign below runs it whole, with them)
  const auto r = tether::cli_test::run(env() + tether_bin + " run " + examples + "rov_depth_heading.yaml --out " + dir +
                                       "/run --set loop.steps=300 --set expect=[]");
  CHECK_MESSAGE(r.exit_code == 0, r.out);
  CHECK_MESSAGE(contains(r.out, "[uno] rov_depth_heading: ready"), r.out);
  CHECK_MESSAGE(contains(r.out, "[uno] depth "), r.out);  // its Serial lines in the log
  // its recording as Foxglove decodes it (the pins' and I2C topics with their JSON Schemas)
  if (!std::getenv("TETHER_SKIP_NODE_VALIDATION")) {
    const auto m = tether::cli_test::run("TETHER_BINARY_DIR=" + TETHER_BINARY_DIR + " " + TETHER_SOURCE_DIR +
                                         "/tests/mcap_validate/run.sh --foxglove " + dir + "/run/recording.mcap");
    CHECK_MESSAGE(m.exit_code == 0, m.out);
    CHECK_MESSAGE(contains(m.out, "\"/endpoints/uno/pins/D9\":300"), m.out);
    CHECK_MESSAGE(contains(m.out, "\"/endpoints/uno/i2c\":300"), m.out);
  }
  // the pressure sensor off the bus for 0.3 s (a dropout of its device): the MS5837 NACKs and
  // the sketch says so
  const auto off =
      tether::cli_test::run(env() + tether_bin + " run " + examples + "rov_depth_heading.yaml --out " + dir +
                            "/off --set loop.steps=200 --set expect=[] --set 'faults[+]={device: "
                            "auv.hull.depth, kind: dropout, at_s: 1, duration_s: 0.3}'");
  CHECK_MESSAGE(off.exit_code == 0, off.out);
  CHECK_MESSAGE(contains(off.out, "[uno] MS5837 not answering: holding the last depth"), off.out);
  std::ifstream summary(dir + "/off/summary.json");
  const auto j = nlohmann::json::parse(summary);
  CHECK(j["endpoints"][0]["mcu"]["i2c"][0]["chip"] == "ms5837");
  CHECK(j["endpoints"][0]["mcu"]["i2c"][0]["nacks"].get<int>() > 0);
  CHECK(j["endpoints"][0]["mcu"]["i2c"][1]["nacks"] == 0);  // the MPU-6050 answered throughout
  const auto c = tether::cli_test::run(env() + tether_bin + " test " + examples + "rov_campaign.yaml -j 2 --out " +
                                       dir + "/campaign");
  CHECK_MESSAGE(c.exit_code == 0, c.out);
  CHECK_MESSAGE(contains(c.out, "5 runs, 5 passed, 0 failed"), c.out);
  fs::remove_all(dir);
}

TEST_CASE("mcu: tether check names a sketch that does not build, with the compiler's first error") {
  const std::string dir = fresh_dir("check");
  fs::create_directories(dir + "/blink");
  std::ofstream(dir + "/blink/blink.ino") << "void setup() {\n  pinMode(13, OUTPUT);\n}\n\nvoid loop() {\n"
                                             "  digitalWrite(13, HIGH)\n  delay(500);\n}\n";
  std::ofstream(dir + "/s.yaml") << R"(name: broken
vehicles:
  - name: rov
    bodies: [{name: hull, shape: {type: sphere, radius_m: 0.2}, mass_kg: 2}]
loop: {period_ms: 10, real_time_factor: 0, steps: 10}
endpoints:
  - name: uno
    type: mcu
    vehicle: rov
    sketch: blink
)";
  const auto r = tether::cli_test::run(env() + tether_bin + " check " + dir + "/s.yaml");
  CHECK_MESSAGE(r.exit_code != 0, r.out);
  // where the scenario names the endpoint, then the compiler's first error, its file a path
  CHECK_MESSAGE(contains(r.out, "s.yaml:7:5: endpoints[0]: endpoint \"uno\": sketch " + dir +
                                    "/blink does not build: " + dir + "/blink/blink.ino:7:3: error: expected"),
                r.out);
  fs::remove_all(dir);
}
