// SPDX-License-Identifier: Apache-2.0
// `tether test` as a user runs it: the shipped campaigns, junit.xml read back with an XML
// parser, runs that cannot start, slices through GNU parallel merged, Ctrl-C, bad files.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "serial_test_util.hpp"
#include "test_paths.hpp"

namespace {

using tether::cli_test::run;
using tether::cli_test::temp_dir;
using tether::cli_test::tether_exe;
using tether::cli_test::tether_fw;

const std::string campaigns = TETHER_SOURCE_DIR + "/config/campaigns";
const std::string in_process_file = TETHER_SOURCE_DIR + "/config/scenarios/in_process_depth_hold.yaml";

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

nlohmann::json campaign_json(const std::string& dir) { return nlohmann::json::parse(slurp(dir + "/campaign.json")); }

// junit.xml read by Python's XML parser (tests/adapters/cli/junit_summary.py): what it holds
nlohmann::json junit(const std::string& dir) {
  const auto r = run("python3 " + TETHER_SOURCE_DIR + "/tests/adapters/cli/junit_summary.py " + dir + "/junit.xml");
  REQUIRE_MESSAGE(r.exit_code == 0, r.out);
  return nlohmann::json::parse(r.out);
}

// a small campaign of the in-process scenario (fast: nothing to launch), written to `dir`
std::string write_campaign(const std::string& dir, const std::string& body) {
  const std::string file = dir + "/campaign.yaml";
  std::ofstream(file) << "name: small\nscenarios:\n  - " + in_process_file + "\n" + body;
  return file;
}

}  // namespace

TEST_CASE("tether test: the shipped depth_hold campaign passes with the example firmware") {
  const std::string dir = temp_dir("campaign_ship");
  // two seeds of the twenty keep the suite fast; every fault set; one run at a time (the
  // firmware's deadline is 8 ms of wall time, and the suite runs more tests than cores: two
  // firmware pairs at once add to the load that makes a step late)
  const auto r = run(tether_fw + " test " + campaigns + "/depth_hold.yaml --campaign-set 'seeds=[1, 2]' -j 1 --out " +
                     dir + "/out");
  CHECK_MESSAGE(r.exit_code == 0, r.out);
  const auto j = campaign_json(dir + "/out");
  CHECK(j["total_runs"] == 10);
  CHECK(j["passed"] == j["total_runs"]);
  CHECK(j["verdict"] == "pass");
  for (const auto& run_j : j["runs"]) {
    CHECK_MESSAGE(run_j["verdict"] == "pass", run_j.dump());
    CHECK(run_j["exit_code"] == 0);
    CHECK(std::filesystem::exists(dir + "/out/" + run_j["report"].get<std::string>()));
    // the firmware process ran, not the law in-process, for 500 steps
    const auto summary =
        nlohmann::json::parse(slurp(dir + "/out/" + run_j["folder"].get<std::string>() + "/summary.json"));
    CHECK(summary["steps"] == 500);
    CHECK(summary["endpoints"][0]["serial"]["firmware"] == "depth_heading_hold");
    CHECK(summary["expectations"].size() == 4);
    // the report loads the charting library the campaign wrote once, instead of a copy each
    const std::string report = slurp(dir + "/out/" + run_j["report"].get<std::string>());
    CHECK(report.find("<script data-lib=\"dygraphs\" src=\"../assets/dygraph.min.js\"></script>") != std::string::npos);
    CHECK(report.find("danvk/dygraphs/blob") == std::string::npos);
    // the matrix: every expectation judged by both seeds of each fault set
    CHECK(run_j["expectations"].size() == 4);
    // keep_recordings: failed - a passed run's recording is gone, and its recording.txt says
    // why and how to make it again
    const std::string folder = dir + "/out/" + run_j["folder"].get<std::string>();
    CHECK(run_j["recording"].is_null());
    CHECK_FALSE(std::filesystem::exists(folder + "/recording.mcap"));
    CHECK(slurp(folder + "/recording.txt").find("keep_recordings: failed") != std::string::npos);
    // and its report, which names the recording it was drawn from, says it went
    CHECK(report.find("</code> <b>not kept</b> (the run passed; recording.txt") != std::string::npos);
  }
  // the command in recording.txt makes the same run again: its final state is the campaign run's
  {
    const std::string folder = dir + "/out/" + j["runs"][3]["folder"].get<std::string>();
    const std::string note = slurp(folder + "/recording.txt");
    const auto from = note.find("\n  ") + 3, to = note.find(" --out FOLDER");
    REQUIRE(to != std::string::npos);
    const auto again = run(note.substr(from, to - from) + " --out " + dir + "/again");
    REQUIRE_MESSAGE(again.exit_code == 0, again.out);
    CHECK(std::filesystem::exists(dir + "/again/recording.mcap"));
    const auto first = nlohmann::json::parse(slurp(folder + "/summary.json"));
    const auto second = nlohmann::json::parse(slurp(dir + "/again/summary.json"));
    CHECK(first["overrides"] == second["overrides"]);
    CHECK(second["verdict"] == "pass");
    // bit for bit when neither missed a deadline (under the sanitizers on a busy machine the
    // firmware can miss the 8 ms deadline, and the safe policy then changes the run)
    const auto missed = [](const nlohmann::json& summary) {
      return summary["endpoints"][0]["misses"].get<int>() + summary["endpoints"][0]["late"].get<int>();
    };
    if (missed(first) == 0 && missed(second) == 0) CHECK(first["state_hash"] == second["state_hash"]);
  }
  const std::string shared = slurp(dir + "/out/assets/dygraph.min.js");
  CHECK(shared.size() > 100000);
  CHECK(shared.find("danvk/dygraphs/blob") != std::string::npos);
  CHECK(std::filesystem::exists(dir + "/out/assets/dygraph.min.css"));
  CHECK(slurp(dir + "/out/index.html").find("<td data-v=\"scenario default, faults compass stuck\">") !=
        std::string::npos);
  CHECK(r.out.find("campaign \"depth_hold\": " + std::to_string(j["total_runs"].get<int>()) + " runs, " +
                   std::to_string(j["total_runs"].get<int>()) + " passed, 0 failed") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "tether test: the shipped campaign has 20 seeds and five fault sets, and depth_hold_broken fails naming the "
    "expectation and its step") {
  const std::string dir = temp_dir("campaign_broken");
  // the runs of the shipped campaign, listed without running them
  const auto list = run(tether_fw + " test " + campaigns + "/depth_hold.yaml --list");
  CHECK(list.exit_code == 0);
  CHECK(list.out.find("\n99  default faults=link silence seed=20\n") != std::string::npos);
  CHECK(list.out.find("100 runs") != std::string::npos);
  const auto slice = run(tether_fw + " test " + campaigns + "/depth_hold.yaml --list --shard 3/7");
  CHECK(slice.out.rfind("2   default faults=none seed=3\n9   default faults=none seed=10\n", 0) == 0);
  CHECK(slice.out.find("\n14 of 100 runs (shard 3/7)") != std::string::npos);  // 2, 9, ..., 93

  const auto r = run(tether_fw + " test " + campaigns + "/depth_hold_broken.yaml --campaign-set 'seeds=[1]' --out " +
                     dir + "/out");
  CHECK_MESSAGE(r.exit_code == 6, r.out);
  CHECK(r.out.find("FAIL    6    completed") != std::string::npos);
  CHECK(r.out.find("default fw=depth gain sign slipped seed=1") != std::string::npos);
  CHECK(r.out.find("holds 2 m depth: first failing at step ") != std::string::npos);
  CHECK(r.out.find("campaign \"depth_hold_broken\": 1 runs, 0 passed, 1 failed") != std::string::npos);
  const auto x = junit(dir + "/out");
  REQUIRE(x["testcases"].size() == 1);
  REQUIRE(x["testcases"][0]["failures"].size() == 1);
  CHECK(x["testcases"][0]["failures"][0].get<std::string>().rfind("holds 2 m depth: first failing at step ", 0) == 0);
  // the broken build ran, in place of the scenario's firmware
  const auto j = campaign_json(dir + "/out");
  const auto summary =
      nlohmann::json::parse(slurp(dir + "/out/" + j["runs"][0]["folder"].get<std::string>() + "/summary.json"));
  CHECK(summary["overrides"].dump().find("depth_heading_hold_broken") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "tether test: a --set that breaks the controller fails the shipped campaign, naming the expectation and its "
    "step") {
  // the vertical thrusters mounted upside down: the firmware's depth law pushes the wrong way
  const std::string dir = temp_dir("campaign_broken_set");
  const std::string flip = "vehicles.auv.bodies.hull.devices.thruster_v";
  const auto r = run(tether_fw + " test " + campaigns +
                     "/depth_hold.yaml --campaign-set 'seeds=[1, 2]' --campaign-set 'fault_sets=[{name: none}]'"
                     " --set '" +
                     flip + "front.mount.orientation_rpy_deg=[0, -90, 0]' --set '" + flip +
                     "rear.mount.orientation_rpy_deg=[0, -90, 0]' -j 2 --out " + dir + "/out");
  CHECK_MESSAGE(r.exit_code == 6, r.out);
  CHECK(r.out.find("campaign \"depth_hold\": 2 runs, 0 passed, 2 failed") != std::string::npos);
  const auto j = campaign_json(dir + "/out");
  REQUIRE(j["runs"].size() == 2);
  for (const auto& run_j : j["runs"]) {
    CHECK(run_j["verdict"] == "fail");
    CHECK(run_j["exit_code"] == 6);
    REQUIRE(run_j["failures"].size() >= 1);
    CHECK(run_j["failures"][0]["name"] == "holds 2 m depth");
    CHECK(run_j["failures"][0]["first_failing_step"].get<int>() > 0);
  }
  const auto x = junit(dir + "/out");
  CHECK(x["failures"] == 2);
  // the same command without the --set passes (the campaign, not the check, is what failed)
  // the failed runs keep their recordings (keep_recordings: failed)
  for (const auto& run_j : j["runs"]) {
    REQUIRE(run_j["recording"].is_string());
    CHECK(std::filesystem::exists(dir + "/out/" + run_j["recording"].get<std::string>()));
    CHECK_FALSE(std::filesystem::exists(dir + "/out/" + run_j["folder"].get<std::string>() + "/recording.txt"));
  }
  CHECK(slurp(dir + "/out/index.html").find("/recording.mcap\">recording</a>") != std::string::npos);
  // the same command without the --set passes (the campaign, not the check, is what failed);
  // keep_recordings: all keeps a passed run's recording too
  const auto ok = run(tether_fw + " test " + campaigns +
                      "/depth_hold.yaml --campaign-set 'seeds=[1]' --campaign-set 'fault_sets=[{name: none}]' "
                      "--campaign-set keep_recordings=all --out " +
                      dir + "/ok");
  CHECK_MESSAGE(ok.exit_code == 0, ok.out);
  const auto kept = campaign_json(dir + "/ok")["runs"][0];
  REQUIRE(kept["recording"].is_string());
  CHECK(std::filesystem::exists(dir + "/ok/" + kept["recording"].get<std::string>()));
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "tether test: junit.xml parses and counts, a run that cannot start is a failed case, and --set reaches every "
    "run") {
  const std::string dir = temp_dir("campaign_junit");
  // three scenarios: the example, one that does not exist, and the example under an
  // expectation it cannot meet; two seeds each
  const std::string file = dir + "/campaign.yaml";
  std::ofstream(file) << "name: mixed\nscenarios:\n  - " + in_process_file +
                             "\n  - /nonexistent/where.yaml\n  - {path: " + in_process_file +
                             ", name: strict, set: {expect: [{name: deeper than 3 m, value: auv.depth_m, that: '> 3', "
                             "when: at end}]}}\nseeds: [1, 2]\nset: {loop.real_time_factor: 0}\n";
  const auto r = run(tether_exe + " test " + file + " --set loop.steps=300 -j 2 --out " + dir + "/out");
  CHECK_MESSAGE(r.exit_code == 6, r.out);
  const auto x = junit(dir + "/out");
  CHECK(x["root"] == "testsuites");
  CHECK(x["tests"] == 6);
  CHECK(x["failures"] == 4);
  REQUIRE(x["testcases"].size() == 6);
  // the example passes: no failure, a link to its report that exists
  for (int i : {0, 1}) {
    CHECK(x["testcases"][i]["failures"].empty());
    CHECK(std::filesystem::exists(dir + "/out/" + x["testcases"][i]["report"].get<std::string>()));
  }
  // the missing scenario: a failed case that says why
  for (int i : {2, 3}) {
    CHECK(x["testcases"][i]["name"] == "where seed=" + std::to_string(i - 1));
    REQUIRE(x["testcases"][i]["failures"].size() == 1);
    CHECK(x["testcases"][i]["failures"][0] ==
          "could not start (exit 2): /nonexistent/where.yaml: cannot open the file");
  }
  // the unmet expectation, with its step: the last of 300 (--set reached it)
  for (int i : {4, 5}) {
    REQUIRE(x["testcases"][i]["failures"].size() == 1);
    CHECK(x["testcases"][i]["failures"][0].get<std::string>().rfind(
              "deeper than 3 m: first failing at step 299 (t = 3.000 s), worst ", 0) == 0);
  }
  const auto j = campaign_json(dir + "/out");
  CHECK(j["runs"][2]["exit_code"] == 2);
  CHECK(j["runs"][4]["exit_code"] == 6);
  CHECK(j["runs"][0]["labels"]["set"].back() == "loop.steps=300");
  const auto summary =
      nlohmann::json::parse(slurp(dir + "/out/" + j["runs"][1]["folder"].get<std::string>() + "/summary.json"));
  CHECK(summary["steps"] == 300);
  CHECK(summary["overrides"].back() == "loop.steps=300");
  // the index page: every run, its verdict, a link to its report
  const std::string html = slurp(dir + "/out/index.html");
  CHECK(html.find("FAILED: 2 of 6 runs passed, 4 failed") != std::string::npos);
  CHECK(html.find("/nonexistent/where.yaml: cannot open the file") != std::string::npos);
  CHECK(html.find("<a href=\"" + j["runs"][0]["report"].get<std::string>() + "\">report</a>") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("tether test --shard K/N through GNU parallel, then --merge: the same verdicts as one unsharded run") {
  REQUIRE_MESSAGE(tether::adapters::test::have_tool("parallel"), "GNU parallel (scripts/deps.sh installs it)");
  const std::string dir = temp_dir("campaign_shard");
  // seven runs, one of which fails (a recording that is not there): shards of 3, 2 and 2 runs
  const std::string file = write_campaign(
      dir,
      "seeds: [1, 2, 3]\nset: {loop.real_time_factor: 0, loop.steps: 150}\nvariants:\n  - {name: plain}\n"
      "  - {name: heavy, set: {vehicles.auv.bodies.hull.mass_kg: 60}}\n"
      "replays: [{recording: " +
          dir + "/absent.mcap}]\n");
  const auto whole = run(tether_exe + " test " + file + " -j 2 -q --out " + dir + "/whole");
  const auto sharded = run("parallel --halt never -j 3 " + tether_exe + " test " + file +
                           " -q -j 1 --shard {}/3 --out " + dir + "/s{} ::: 1 2 3");
  CAPTURE(sharded.out);
  const auto merged =
      run(tether_exe + " test --merge " + dir + "/s1 " + dir + "/s2 " + dir + "/s3 --out " + dir + "/merged");
  CHECK(merged.exit_code == whole.exit_code);
  CHECK(whole.exit_code == 6);
  const auto a = campaign_json(dir + "/whole");
  const auto b = campaign_json(dir + "/merged");
  CHECK(a["fingerprint"] == b["fingerprint"]);
  REQUIRE(a["runs"].size() == 7);
  REQUIRE(b["runs"].size() == 7);
  std::size_t failed = 0;
  for (std::size_t i = 0; i < 7; ++i) {
    CHECK(a["runs"][i]["name"] == b["runs"][i]["name"]);
    CHECK(a["runs"][i]["verdict"] == b["runs"][i]["verdict"]);
    CHECK(a["runs"][i]["exit_code"] == b["runs"][i]["exit_code"]);
    failed += a["runs"][i]["verdict"] == "fail";
  }
  CHECK(failed == 1);  // the replay of a recording that is not there
  // each slice holds its own runs only
  CHECK(campaign_json(dir + "/s2")["runs"].size() == 2);
  CHECK(campaign_json(dir + "/s2")["shard"] == nlohmann::json({{"k", 2}, {"n", 3}}));
  // the merged junit.xml says what the unsharded one says
  const auto ja = junit(dir + "/whole");
  const auto jb = junit(dir + "/merged");
  CHECK(ja["tests"] == jb["tests"]);
  CHECK(ja["failures"] == jb["failures"]);
  for (std::size_t i = 0; i < 7; ++i) {
    CHECK(ja["testcases"][i]["name"] == jb["testcases"][i]["name"]);
    CHECK(ja["testcases"][i]["failures"] == jb["testcases"][i]["failures"]);
  }
  // and links into the slices' folders
  CHECK(std::filesystem::exists(dir + "/merged/" + jb["testcases"][1]["report"].get<std::string>()));
  // a slice given twice, a missing slice, a different campaign
  const auto twice = run(tether_exe + " test --merge " + dir + "/s1 " + dir + "/s1 --out " + dir + "/m2");
  CHECK(twice.exit_code == 2);
  CHECK(twice.out.find("is in both") != std::string::npos);
  const auto gap = run(tether_exe + " test --merge " + dir + "/s1 " + dir + "/s3 --out " + dir + "/m3");
  CHECK(gap.exit_code == 6);
  CHECK(gap.out.find("not run by any merged slice") != std::string::npos);
  run(tether_exe + " test " + file + " -q --shard 1/3 --set loop.steps=100 --out " + dir + "/other");
  const auto other = run(tether_exe + " test --merge " + dir + "/other " + dir + "/s2 --out " + dir + "/m4");
  CHECK(other.exit_code == 2);
  CHECK(other.out.find("holds runs of a different campaign") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("tether test: Ctrl-C stops the workers and still writes the results so far") {
  const std::string dir = temp_dir("campaign_sigint");
  // a quick run, a long real-time one and one that never starts (one worker)
  const std::string file = dir + "/campaign.yaml";
  std::ofstream(file) << "name: long\nscenarios:\n  - {path: " + in_process_file +
                             ", name: quick, set: {loop.real_time_factor: 0, loop.steps: 50}}\n  - {path: " +
                             in_process_file +
                             ", name: slow, set: {loop.real_time_factor: 1, loop.steps: 100000}}\n"
                             "  - {path: " +
                             in_process_file + ", name: later}\n";
  const std::string out = dir + "/out";
  // the interrupt goes once the quick run is done and the slow one records (its handlers
  // are in place), waiting at most 60 s for that
  const auto r = run("sh -c '" + tether_exe + " test " + file + " -j 1 --out " + out + " >" + dir +
                     "/log.txt 2>&1 & pid=$!; i=0; while ! { grep -q \"quick\" " + dir + "/log.txt && [ -f " + out +
                     "/001-slow/recording.mcap ]; } && [ $i -lt 1200 ]; do sleep 0.05; "
                     "i=$((i+1)); done; kill -INT $pid; wait $pid; echo exit=$?'");
  const std::string log = slurp(dir + "/log.txt");
  CAPTURE(log);
  CHECK(r.out.find("exit=130") != std::string::npos);
  CHECK(log.find("INTERRUPTED") != std::string::npos);
  const auto j = campaign_json(out);
  CHECK(j["interrupted"] == true);
  REQUIRE(j["runs"].size() == 3);
  CHECK(j["runs"][0]["verdict"] == "pass");
  CHECK(j["runs"][1]["verdict"] == "fail");
  CHECK(j["runs"][1]["exit_code"] == 130);  // stopped cleanly after a step, its summary written
  CHECK(j["runs"][1]["reason"].get<std::string>().find("the campaign was interrupted") != std::string::npos);
  CHECK(std::filesystem::exists(out + "/001-slow/summary.json"));
  CHECK(j["runs"][2]["verdict"] == "not_run");
  const auto x = junit(out);
  CHECK(x["tests"] == 3);
  CHECK(x["failures"] == 1);
  CHECK(x["skipped"] == 1);
  CHECK(x["testcases"][2]["skipped"] == true);
  std::filesystem::remove_all(dir);
}

TEST_CASE("tether test: killed outright, the campaign leaves the results of the runs it had finished") {
  const std::string dir = temp_dir("campaign_sigkill");
  const std::string file = dir + "/campaign.yaml";
  std::ofstream(file) << "name: killed\nscenarios:\n  - {path: " + in_process_file +
                             ", name: quick, set: {loop.real_time_factor: 0, loop.steps: 50}}\n  - {path: " +
                             in_process_file + ", name: slow, set: {loop.real_time_factor: 1, loop.steps: 100000}}\n";
  const std::string out = dir + "/out";
  // once the quick run's line is out (the results are written before it): the campaign
  // stopped (so it cannot notice), its worker killed, then the campaign itself, both SIGKILL
  const auto r = run("sh -c '" + tether_exe + " test " + file + " -j 1 --out " + out + " >" + dir +
                     "/log.txt 2>&1 & pid=$!; i=0; while ! grep -q \"quick\" " + dir +
                     "/log.txt && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; kill -STOP $pid; "
                     "pkill -KILL -P $pid; kill -KILL $pid; wait $pid; echo exit=$?'");
  CAPTURE(slurp(dir + "/log.txt"));
  CHECK(r.out.find("exit=137") != std::string::npos);
  const auto j = campaign_json(out);
  REQUIRE(j["runs"].size() >= 1);
  CHECK(j["runs"][0]["verdict"] == "pass");
  CHECK(j["runs"][0]["report"] == "000-quick/report.html");
  CHECK(junit(out)["testcases"][0]["report"] == "000-quick/report.html");
  std::filesystem::remove_all(dir);
}

TEST_CASE("tether test: a malformed campaign file is a positioned config error, exit 2, nothing run") {
  const std::string dir = temp_dir("campaign_bad");
  const std::string file = dir + "/bad.yaml";
  std::ofstream(file) << "name: bad\nscenarios:\n  - a.yaml\nseeds: {first: 1, count: lots}\nfault_set: []\n";
  const auto r = run(tether_exe + " test " + file + " --out " + dir + "/out");
  CHECK(r.exit_code == 2);
  CHECK(r.out == file +
                     ":5:1: fault_set: unknown key (allowed here: name, description, scenarios, seeds, set, variants, "
                     "fault_sets, firmware, replays, run_timeout_s, keep_recordings)\n" +
                     file + ":4:26: seeds.count: expected a whole number from 1 to 1000000, got \"lots\"\n2 errors\n");
  CHECK_FALSE(std::filesystem::exists(dir + "/out"));
  // and the options
  CHECK(run(tether_exe + " test " + file + " --shard 4/3").exit_code == 2);
  CHECK(run(tether_exe + " test").exit_code == 2);
  CHECK(run(tether_exe + " test " + dir + "/missing.yaml").out.find("missing.yaml: cannot open the file") !=
        std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("tether test: firmware builds against a recorded session (regression replays) and in scenario runs") {
  const std::string dir = temp_dir("campaign_firmware");
  // a recorded session of the host firmware
  const auto rec = run(tether_fw + " run " + TETHER_SOURCE_DIR +
                       "/config/scenarios/default.yaml --rtf 0 --steps 300 "
                       "--quiet --out " +
                       dir + "/trial");
  REQUIRE_MESSAGE(rec.exit_code == 0, rec.out);
  const std::string file = dir + "/campaign.yaml";
  std::ofstream(file)
      << "name: builds\n"
         "scenarios:\n  - {path: " +
             TETHER_SOURCE_DIR +
             "/config/scenarios/default.yaml, set: {loop.steps: 200, "
             "loop.real_time_factor: 0}}\n"
             "replays:\n  - {recording: trial/recording.mcap, name: trial}\n"
             "firmware:\n"
             "  - {name: same, endpoint: firmware, launch: \"${TETHER_BUILD_DIR}/firmware/host/depth_heading_hold\"}\n"
             "  - {name: kp18, endpoint: firmware, launch: "
             "\"${TETHER_BUILD_DIR}/firmware/test/depth_heading_hold_kp18\"}\n";
  const auto r = run(tether_fw + " test " + file + " -j 2 --out " + dir + "/out");
  CHECK_MESSAGE(r.exit_code == 6, r.out);
  const auto j = campaign_json(dir + "/out");
  REQUIRE(j["runs"].size() == 4);
  CHECK(j["runs"][0]["name"] == "default fw=same");
  CHECK(j["runs"][0]["verdict"] == "pass");
  CHECK(j["runs"][1]["name"] == "default fw=kp18");  // a stiffer depth loop still holds depth
  CHECK(j["runs"][1]["verdict"] == "pass");
  // the same build reproduces every recorded command; the changed gain diverges, named with its step
  CHECK(j["runs"][2]["name"] == "replay trial fw=same");
  CHECK_MESSAGE(j["runs"][2]["verdict"] == "pass", j["runs"][2].dump());
  CHECK(j["runs"][3]["name"] == "replay trial fw=kp18");
  CHECK(j["runs"][3]["verdict"] == "fail");
  CHECK(j["runs"][3]["exit_code"] == 1);
  REQUIRE(j["runs"][3]["failures"].size() == 1);
  CHECK(j["runs"][3]["failures"][0]["message"].get<std::string>().rfind(
            "commands of endpoint \"firmware\" match the recorded firmware: first failing at step ", 0) == 0);
  std::filesystem::remove_all(dir);
}
