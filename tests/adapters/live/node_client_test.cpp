// SPDX-License-Identifier: Apache-2.0
// Node against a real `tether run --live 0` (tests/live_node): the reference
// foxglove.websocket.v1 client (npm @foxglove/ws-protocol) runs serverInfo and channels,
// pose messages whose time increases, pause, step exactly 10, push with a force, resume,
// shut down, then `tether replay --verify` of that session's recording; and the built-in
// dashboard in headless Chromium (docs/live.md).
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "test_paths.hpp"
#include "tether/recording/replay.hpp"

#include "live_test_util.hpp"

using nlohmann::json;
using namespace tether;

using namespace tether::live_test;

namespace {

// runs a script of tests/live_node with its arguments; what it saw (its last line, JSON),
// checked to have exited 0 and said ok
json run_node(const std::string& script_and_args) {
  const Result node = run("TETHER_BINARY_DIR=" + TETHER_BINARY_DIR + " " + TETHER_SOURCE_DIR +
                          "/tests/live_node/run.sh " + script_and_args);
  MESSAGE(node.out);
  CHECK(node.exit_code == 0);
  const auto line = node.out.rfind("{\"ok\"");
  REQUIRE(line != std::string::npos);
  const json seen = json::parse(node.out.substr(line));
  CHECK(seen["ok"] == true);
  return seen;
}

}  // namespace

TEST_CASE("node client: the reference foxglove client watches, pauses, steps 10, pushes and resumes a session") {
  if (std::getenv("TETHER_SKIP_NODE_VALIDATION")) {
    MESSAGE("skipped: TETHER_SKIP_NODE_VALIDATION is set");
    return;
  }
  const std::string dir = temp_dir("sequence");
  Process tether("run " + in_process_file + " --live 0 --rtf 1 --steps 1000000 -q --out " + dir, dir);
  const std::string url = live_url(tether);
  const json seen = run_node("client.mjs " + url);
  CHECK(seen["failures"].empty());
  CHECK(seen["seen"]["pose_messages_after_step_10"] == 10);
  const int code = tether.wait();
  CHECK(code == 130);  // the client shut it down

  const json summary = json::parse(read_file(dir + "/summary.json"));
  CHECK(summary["control"]["operator_commands"] == 1);
  runtime::Recording rec;
  std::string error;
  REQUIRE_MESSAGE(runtime::load_recording(dir + "/recording.mcap", rec, &error), error);
  REQUIRE(rec.commands.size() == 1);
  CHECK(rec.commands[0].step == seen["seen"]["paused_at_step"].get<std::uint64_t>() + 10);
  const Result replay = run(tether_exe + " replay " + dir + "/recording.mcap --verify -q");
  CHECK_MESSAGE(replay.exit_code == 0, replay.out);
  CHECK(replay.out.find("bit-identical") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("node client: the built-in dashboard at GET / loads in headless Chromium, shows the session and pauses it") {
  if (std::getenv("TETHER_SKIP_NODE_VALIDATION")) {
    MESSAGE("skipped: TETHER_SKIP_NODE_VALIDATION is set");
    return;
  }
  const std::string dir = temp_dir("dashboard");
  Process tether("run " + in_process_file + " --live 0 --rtf 1 --steps 1000000 -q --out " + dir, dir);
  const std::string url = live_url(tether);
  const std::string page = "http://" + url.substr(std::string("ws://").size()) + "/";
  const json seen = run_node("dashboard.mjs " + page);
  CHECK(seen["seen"]["title"] == "tether: in_process_depth_hold");
  CHECK(seen["seen"]["state_text"] == "paused");
  // the plan view: the tank's four walls (its floor hides nothing from above), the AUV
  CHECK(seen["seen"]["plan"]["statics"].get<int>() == 4);
  CHECK(seen["seen"]["plan"]["vehicles"] == json::array({"auv"}));
  CHECK(seen["seen"]["plan"]["trail"].get<int>() > 5);
  CHECK(seen["seen"]["counters_text"].get<std::string>().find(", misses 0, late 0, stale 0, corrupt 0, faults 0") !=
        std::string::npos);
  // the scenario's four expectations, each on its line, as the session judges them
  REQUIRE(seen["seen"]["expectations"].size() == 4);
  CHECK(seen["seen"]["expectations"][0]["name"] == "holds 2 m depth");
  CHECK(seen["seen"]["expect_items"] == 4);
  CHECK(seen["seen"]["log_title"].get<std::string>().rfind("Log:", 0) == 0);

  // the click paused the session itself: it stays where the page saw it pause
  const Result s1 = run(tether_exe + " ctl --url " + url + " --json status");
  REQUIRE_MESSAGE(s1.exit_code == 0, s1.out);
  const json a = json::parse(s1.out);
  CHECK(a["paused"] == true);
  CHECK(a["step"] == seen["seen"]["paused_at_step"]);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const Result s2 = run(tether_exe + " ctl --url " + url + " --json status");
  REQUIRE_MESSAGE(s2.exit_code == 0, s2.out);
  CHECK(json::parse(s2.out)["step"] == a["step"]);
  const Result stop = run(tether_exe + " ctl --url " + url + " shutdown");
  CHECK_MESSAGE(stop.exit_code == 0, stop.out);
  CHECK(tether.wait() == 130);
  const json summary = json::parse(read_file(dir + "/summary.json"));
  CHECK(summary["live"]["http_requests"].get<int>() >= 1);
  std::filesystem::remove_all(dir);
}

TEST_CASE("node client: the dashboard's plan view draws a cable as the rope it is, beside its vehicle") {
  if (std::getenv("TETHER_SKIP_NODE_VALIDATION")) {
    MESSAGE("skipped: TETHER_SKIP_NODE_VALIDATION is set");
    return;
  }
  // tethered_rov: the AUV on a 30-segment cable from a point at the surface
  const std::string dir = temp_dir("dashboard_cable");
  Process tether("run " + TETHER_SOURCE_DIR + "/config/scenarios/tethered_rov.yaml --live 0 --rtf 1 -q --out " + dir,
                 dir, "TETHER_BUILD_DIR=" + TETHER_BINARY_DIR);
  const std::string url = live_url(tether);
  const std::string page = "http://" + url.substr(std::string("ws://").size()) + "/";
  const json seen = run_node("dashboard.mjs " + page + " --cable tether --shot " + dir + "/dashboard.png");
  // the cable's every segment (its nodes come on /tether/vehicles), and only the AUV as a vehicle
  CHECK(seen["seen"]["plan"]["cables"]["tether"] == 30);
  CHECK(seen["seen"]["plan"]["vehicles"] == json::array({"auv"}));
  CHECK(std::filesystem::file_size(dir + "/dashboard.png") > 10000);
  const Result stop = run(tether_exe + " ctl --url " + url + " shutdown");
  CHECK_MESSAGE(stop.exit_code == 0, stop.out);
  CHECK(tether.wait() == 130);
  std::filesystem::remove_all(dir);
}
