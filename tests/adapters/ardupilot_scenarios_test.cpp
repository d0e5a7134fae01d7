// SPDX-License-Identifier: Apache-2.0
// The shipped ArduPilot scenarios as a user runs them: `tether run` launches the stand-in
// autopilot `tether-ardupilot`, arms it and sets its mode and targets over MAVLink, and the
// run passes its expectations; `tether replay --verify` reproduces it bit for bit without
// any autopilot; the 20-seed campaign with link faults passes. The BlueROV2 run uses the
// scenario's own ports (9002, 5760) as ArduPilot's defaults: nothing else in the suite
// binds them.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"

using namespace tether::cli_test;

namespace {

const std::string scenarios = TETHER_SOURCE_DIR "/config/scenarios";

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

}  // namespace

TEST_CASE(
    "ardupilot scenarios: ardusub_bluerov2 is armed over MAVLink, holds 2 m and heading 45, replays bit for bit") {
  const std::string dir = temp_dir("ardusub_bluerov2");
  const Result r = run(tether_fw + " run " + scenarios + "/ardusub_bluerov2.yaml --rtf 0 --quiet --out " + dir);
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json summary = read_json(dir + "/summary.json");
  CHECK(summary["verdict"] == "pass");
  const auto& e = summary["endpoints"][0];
  CHECK(e["type"] == "ardupilot_json");
  CHECK(e["misses"] == 0);
  CHECK(e["ardupilot"]["frames"] == 16000);
  CHECK(e["ardupilot"]["frame_rate_hz"] == 400);
  CHECK(e["mavlink"]["armed"] == true);
  CHECK(e["mavlink"]["mode"] == "ALT_HOLD");
  CHECK(contains(e["ardupilot"]["program"]["command"].get<std::string>(), "tether-ardupilot"));

  // the autopilot's words are in the recording's log (events), and the replay needs no autopilot
  const Result v = run(tether_exe + " replay " + dir + "/recording.mcap --verify --quiet");
  INFO(v.out);
  CHECK(v.exit_code == 0);
  CHECK(contains(v.out, "verify: all 16000 replayed states are bit-identical to the recording"));
}

TEST_CASE("ardupilot scenarios: ardurover_skid is armed, put in MANUAL and driven by pilot input") {
  const std::string dir = temp_dir("ardurover_skid");
  const Result r =
      run(tether_fw + " run " + scenarios +
          "/ardurover_skid.yaml --rtf 0 --quiet --set endpoints.ardurover.port=0"
          " --set endpoints.ardurover.instance=0 --set 'endpoints.ardurover.mavlink.address=tcp:127.0.0.1:0'"
          " --out " +
          dir);
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json summary = read_json(dir + "/summary.json");
  CHECK(summary["verdict"] == "pass");
  CHECK(summary["endpoints"][0]["mavlink"]["mode"] == "MANUAL");
}

TEST_CASE("ardupilot scenarios: the 20-seed campaign on a lossy link passes") {
  // one run at a time: the suite runs beside it, and the serial campaigns' deadlines are tight
  const std::string dir = temp_dir("ardusub_link_faults");
  const Result r = run(
      tether_fw + " test " TETHER_SOURCE_DIR "/config/campaigns/ardusub_link_faults.yaml -j 1 --quiet --out " + dir);
  INFO(r.out);
  CHECK(r.exit_code == 0);
  const nlohmann::json c = read_json(dir + "/campaign.json");
  CHECK(c["total_runs"] == 20);
  int passed = 0;
  for (const auto& run : c["runs"]) passed += run["verdict"] == "pass" ? 1 : 0;
  CHECK(passed == 20);
}
