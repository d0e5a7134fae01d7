// SPDX-License-Identifier: Apache-2.0
// Campaign files, their expansion into runs, judging a finished run, and the results
// (campaign.json, junit.xml, index.html, merging slices) without running anything: the
// command line and its worker processes are tests/adapters/cli/campaign_cli_test.cpp's.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tether/campaign/campaign.hpp"
#include "tether/scenario/config.hpp"

using namespace tether::campaign;
using tether::runtime::ConfigError;

namespace {

const char* campaign_text = R"(name: dives
description: two scenarios, each with two fault sets and two seeds
scenarios:
  - scenarios/a.yaml
  - {path: /abs/b.yaml, name: bee, set: {loop.steps: 30}}
seeds: [7, 9]
set:
  loop.real_time_factor: 0
  expect: [{name: shallow, value: auv.depth_m, that: "< 3"}]
fault_sets:
  - name: none
  - name: stuck compass
    faults: [{device: auv.hull.compass, kind: stuck, at_s: 1}]
firmware:
  - {name: new, endpoint: firmware, launch: build/fw --fast}
)";

std::vector<std::string> errors_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
  try {
    parse_campaign(text, "c.yaml", overrides);
  } catch (const ConfigError& e) {
    return e.errors();
  }
  return {};
}

std::string temp_dir(const char* name) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("tether_campaign_test_" + std::to_string(getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

int exited(int code) { return code << 8; }  // a wait status as waitpid() gives it (W_EXITCODE)

}  // namespace

TEST_CASE("a campaign expands to scenarios x firmware x fault sets x seeds, in a stable order") {
  const Campaign c = parse_campaign(campaign_text, "/work/camp/c.yaml");
  CHECK(c.name == "dives");
  REQUIRE(c.scenarios.size() == 2);
  CHECK(c.scenarios[0].name == "a");  // the file's stem
  CHECK(c.scenarios[0].resolved == "/work/camp/scenarios/a.yaml");
  CHECK(c.scenarios[1].name == "bee");
  CHECK(c.firmware[0].resolved == "/work/camp/build/fw --fast");  // relative to the campaign file

  const auto runs = expand_campaign(c, {"loop.steps=20"});
  REQUIRE(runs.size() == 8);
  std::vector<std::string> names;
  for (const auto& r : runs) names.push_back(r.name);
  CHECK(names == std::vector<std::string>{"a fw=new faults=none seed=7", "a fw=new faults=none seed=9",
                                          "a fw=new faults=stuck compass seed=7",
                                          "a fw=new faults=stuck compass seed=9", "bee fw=new faults=none seed=7",
                                          "bee fw=new faults=none seed=9", "bee fw=new faults=stuck compass seed=7",
                                          "bee fw=new faults=stuck compass seed=9"});
  for (std::size_t i = 0; i < runs.size(); ++i) CHECK(runs[i].index == i);
  CHECK(runs[2].folder == "002-a-fw-new-faults-stuck-compass-seed-7");
  CHECK(runs[2].classname == "dives.a");
  // --set in order: the campaign's, the scenario's, the fault set's, the build, the seed,
  // the command line's
  CHECK(runs[6].args == std::vector<std::string>{"run", "/abs/b.yaml", "--quiet", "--set", "loop.real_time_factor=0",
                                                 "--set", "expect=[{name: shallow, value: auv.depth_m, that: < 3}]",
                                                 "--set", "loop.steps=30", "--set",
                                                 "faults[+]={device: auv.hull.compass, kind: stuck, at_s: 1}", "--set",
                                                 "endpoints.firmware.launch={command: [/work/camp/build/fw, --fast]}",
                                                 "--set", "loop.seed=7", "--set", "loop.steps=20"});
  CHECK(runs[6].labels["fault_set"] == "stuck compass");
  CHECK(runs[6].labels["seed"] == 7);
  CHECK(runs[6].labels["firmware_launch"] == "build/fw --fast");  // as written: the fingerprint travels

  // the fingerprint follows what the runs are, not where the campaign sits
  const Campaign moved = parse_campaign(campaign_text, "/elsewhere/c.yaml");
  CHECK(campaign_fingerprint(c, runs) == campaign_fingerprint(moved, expand_campaign(moved, {"loop.steps=20"})));
  CHECK(campaign_fingerprint(c, runs) != campaign_fingerprint(c, expand_campaign(c, {"loop.steps=21"})));

  // a dimension left out is one run, not none; without seeds the scenario's own seed stays
  const Campaign plain = parse_campaign("scenarios: [x.yaml]\n", "/w/plain.yaml");
  const auto one = expand_campaign(plain, {});
  REQUIRE(one.size() == 1);
  CHECK(one[0].name == "x");
  CHECK(one[0].args == std::vector<std::string>{"run", "/w/x.yaml", "--quiet"});
  CHECK(plain.name == "plain");
}

TEST_CASE("a campaign's firmware builds: a QEMU image, environment variables, regression replays") {
  setenv("TETHER_CAMPAIGN_TEST_BUILD", "/opt/b", 1);
  const Campaign c = parse_campaign(R"(
replays:
  - {recording: trial.mcap}
  - {recording: /data/old.mcap, name: old, closed_loop: true, tolerance: 0.01}
firmware:
  - {name: m3, endpoint: fw, launch: "qemu:${TETHER_CAMPAIGN_TEST_BUILD}/fw.elf"}
  - {name: host, endpoint: fw, launch: "${TETHER_CAMPAIGN_UNSET_X:-out}/fw"}
)",
                                    "/c/c.yaml");
  const auto runs = expand_campaign(c, {"loop.seed=1"});  // --set does not reach replays
  REQUIRE(runs.size() == 4);
  CHECK(runs[0].name == "replay trial fw=m3");
  CHECK(runs[0].replay);
  CHECK(runs[0].args == std::vector<std::string>{"replay", "/c/trial.mcap", "--quiet", "--json", "--firmware",
                                                 "fw=qemu:/opt/b/fw.elf", "--tolerance", "1e-06"});
  CHECK(runs[1].args[5] == "fw=/c/out/fw");
  CHECK(runs[3].name == "replay old fw=host");
  CHECK(runs[3].args == std::vector<std::string>{"replay", "/data/old.mcap", "--quiet", "--json", "--firmware",
                                                 "fw=/c/out/fw", "--closed-loop", "--tolerance", "0.01"});
  // without builds, a replay verifies the recording
  const auto verify = expand_campaign(parse_campaign("replays: [{recording: r.mcap}]\n", "/c/c.yaml"), {});
  REQUIRE(verify.size() == 1);
  CHECK(verify[0].name == "replay r verify");
  CHECK(verify[0].args.back() == "--verify");
  // a scenario run with a QEMU build: the endpoint's launch becomes {qemu: IMAGE}
  const Campaign q = parse_campaign(
      "scenarios: [s.yaml]\nfirmware: [{name: m3, endpoint: fw, launch: 'qemu:img/fw.elf'}]\n", "/c/c.yaml");
  CHECK(expand_campaign(q, {})[0].args.back() == "endpoints.fw.launch={qemu: /c/img/fw.elf}");
}

TEST_CASE("a malformed campaign file: every problem at once, each with its position") {
  const auto e = errors_of(R"(name: bad
scenarios:
  - a.yaml
  - {path: b.yaml, colour: red}
seeds: [1, two, 1]
fault_sets:
  - faults: [{device: auv.hull.compass, kind: stuck}]
  - {name: x, faults: [stuck]}
firmware:
  - {name: f, launch: fw}
run_timeout_s: 0
retries: 3
keep_recordings: passed
)");
  REQUIRE(e.size() == 9);
  CHECK(e[0] ==
        "c.yaml:12:1: retries: unknown key (allowed here: name, description, scenarios, seeds, set, variants, "
        "fault_sets, firmware, replays, run_timeout_s, keep_recordings)");
  CHECK(e[1] == "c.yaml:4:20: scenarios[1].colour: unknown key (allowed here: path, name, set)");
  CHECK(e[2] == "c.yaml:5:12: seeds[1]: expected a whole number >= 0, got \"two\"");
  CHECK(e[3] == "c.yaml:5:17: seeds[2]: seed 1 given twice");
  CHECK(e[4] == "c.yaml:7:5: fault_sets[0].name: missing; expected a non-empty string");
  CHECK(e[5] ==
        "c.yaml:8:24: fault_sets[1].faults[0]: expected a fault (a map: device or endpoint, kind, trigger), "
        "got \"stuck\"");
  CHECK(e[6] == "c.yaml:10:5: firmware[0].endpoint: missing; expected a non-empty string");
  CHECK(e[7] == "c.yaml:11:16: run_timeout_s: expected a number from 0.001 to 1000000, got \"0\"");
  CHECK(e[8] == "c.yaml:13:18: keep_recordings: expected one of all, failed, got \"passed\"");

  CHECK(
      errors_of("seeds: [1]\n") ==
      std::vector<std::string>{"c.yaml:1:1: (top level): a campaign needs at least one of `scenarios` and `replays`"});
  CHECK(errors_of("scenarios: [a/x.yaml, b/x.yaml]\n") ==
        std::vector<std::string>{"c.yaml:1:23: scenarios[1]: scenario name (give one a `name:`) \"x\" given twice: "
                                 "names must be unique"});
  CHECK(errors_of("scenarios: [a.yaml]\nseeds: {first: 3}\n") ==
        std::vector<std::string>{"c.yaml:2:8: seeds.count: missing; expected a whole number from 1 to 1000000"});
  CHECK(errors_of("scenarios: [a.yaml]\nset: [loop.steps=3]\n")[0].find(
            "c.yaml:2:6: set: expected a map of PATH: VALUE") == 0);
  CHECK(errors_of("- a\n- b\n")[0].find("c.yaml:1:1: (top level): expected a campaign map") == 0);
  CHECK(errors_of("scenarios: [a.yaml\n")[0].find("c.yaml:2:1: YAML syntax error") == 0);
}

TEST_CASE("--campaign-set changes the campaign's keys, and its errors name the option") {
  const Campaign c = parse_campaign(campaign_text, "c.yaml", {"seeds={first: 1, count: 3}", "fault_sets=[]"});
  CHECK(c.seeds == std::vector<std::uint64_t>{1, 2, 3});
  CHECK(expand_campaign(c, {}).size() == 6);  // 2 scenarios x 3 seeds
  CHECK(errors_of(campaign_text, {"seeds=[x]"}) ==
        std::vector<std::string>{"--campaign-set seeds=[x]: seeds[0]: expected a whole number >= 0, got \"x\""});
  // a missing section is created, and then refused as an unknown key, naming the option
  REQUIRE(errors_of(campaign_text, {"nope.x=1"}).size() == 1);
  CHECK(errors_of(campaign_text, {"nope.x=1"})[0].find("--campaign-set nope.x=1: nope: unknown key") == 0);
}

TEST_CASE("--shard K/N: the slices are disjoint, cover every run, and follow the index") {
  std::size_t k = 0, n = 0;
  CHECK(parse_shard("2/3", k, n, nullptr));
  CHECK((k == 2 && n == 3));
  std::string why;
  for (const char* bad : {"0/3", "4/3", "3", "/3", "1/", "a/b", "1/0", "-1/3"}) {
    CHECK_FALSE_MESSAGE(parse_shard(bad, k, n, &why), bad);
    CHECK(why.find("expected K/N with 1 <= K <= N") != std::string::npos);
  }
  const Campaign c = parse_campaign(campaign_text, "c.yaml");
  const auto all = expand_campaign(c, {});
  std::set<std::size_t> seen;
  for (std::size_t s = 1; s <= 3; ++s)
    for (const auto& r : shard_runs(all, s, 3)) {
      CHECK(r.index % 3 == s - 1);
      CHECK(seen.insert(r.index).second);
    }
  CHECK(seen.size() == all.size());
}

TEST_CASE("judging a finished run: its exit code and what its session folder holds") {
  const std::string dir = temp_dir("judge");
  PlannedRun plan;
  plan.name = "a seed=1";
  RunEnd end;
  end.started = true;
  end.duration_s = 1.5;

  SUBCASE("exit 0 passes") {
    end.wait_status = exited(0);
    const RunResult r = judge_run(plan, end, dir);
    CHECK(r.verdict == RunVerdict::pass);
    CHECK(r.exit_code == 0);
    CHECK(r.reason.empty());
  }
  SUBCASE("exit 6: each failed expectation with its first failing step") {
    std::ofstream(dir + "/summary.json") << R"({"outcome": "completed", "verdict": "fail", "expectations": [
      {"name": "holds 2 m depth", "verdict": "FAIL", "when": "always", "worst": 1.292, "first_failing_step": 243,
       "first_failing_time_s": 2.44, "margin": -0.608},
      {"name": "no collision", "verdict": "PASS", "worst": 0, "first_failing_step": null, "margin": 0},
      {"name": "reaches", "verdict": "FAIL", "when": "eventually", "worst": 0.5, "first_failing_step": 499,
       "first_failing_time_s": 5.0}]})";
    std::ofstream(dir + "/report.html") << "<html></html>";
    end.wait_status = exited(6);
    const RunResult r = judge_run(plan, end, dir);
    CHECK(r.verdict == RunVerdict::fail);
    CHECK(r.outcome == "completed");
    REQUIRE(r.failures.size() == 2);
    CHECK(r.failures[0].message() == "holds 2 m depth: first failing at step 243 (t = 2.440 s), worst 1.292");
    CHECK(r.failures[1].message() == "reaches: first failing at step 499 (t = 5.000 s), closest 0.5");
    CHECK(r.reason == "2 expectations failed (exit 6): holds 2 m depth, reaches");
    CHECK(r.report == dir + "/report.html");
    // every expectation, passed or not, with its margin where the summary gives one
    REQUIRE(r.expectations.size() == 3);
    CHECK(r.expectations[0].name == "holds 2 m depth");
    CHECK(r.expectations[0].verdict == "FAIL");
    CHECK(r.expectations[0].margin == -0.608);
    CHECK(r.expectations[1].verdict == "PASS");
    CHECK(r.expectations[1].margin == 0.0);
    CHECK_FALSE(r.expectations[2].margin.has_value());
  }
  SUBCASE("exit 2: the run could not start; the reason is its error, not its log") {
    end.wait_status = exited(2);
    end.output_tail = "[2026-01-01 10:00:00.000] [info] something\n/x/missing.yaml: cannot open the file\n1 error\n";
    const RunResult r = judge_run(plan, end, dir);
    CHECK(r.verdict == RunVerdict::fail);
    CHECK(r.reason == "could not start (exit 2): /x/missing.yaml: cannot open the file");
  }
  SUBCASE("not started at all, killed by a signal, over its time") {
    RunEnd none;
    none.start_error = "cannot run /nope: No such file or directory";
    CHECK(judge_run(plan, none, dir).reason == "could not start: cannot run /nope: No such file or directory");
    end.wait_status = SIGKILL;  // killed: a wait status with the signal number in the low bits
    end.timed_out = true;
    const RunResult r = judge_run(plan, end, dir);
    CHECK(r.verdict == RunVerdict::fail);
    CHECK_FALSE(r.exit_code.has_value());
    CHECK(r.reason ==
          "timed out after 1.500 s (run_timeout_s) and was stopped; tether run was killed by signal 9 "
          "(SIGKILL)");
  }
  SUBCASE("exit 130 after an interruption: how far it got") {
    std::ofstream(dir + "/summary.json") << R"({"outcome": "stopped", "steps": 120, "steps_planned": 100000})";
    end.wait_status = exited(130);
    end.stopped = true;
    CHECK(judge_run(plan, end, dir).reason ==
          "stopped (exit 130) after 120 of 100000 steps: the campaign was "
          "interrupted");
  }
  SUBCASE("a replay whose new firmware diverged") {
    plan.replay = true;
    std::ofstream(dir + "/replay.json") << R"({"outcome": "completed", "identical": true, "firmware_regression": [
      {"endpoint": "firmware", "diverged": true, "first_divergent_step": 12, "channels": [
        {"name": "auv.hull.thruster_vfront", "first_divergent_step": 12, "first_recorded": 0.25, "first_new": 0.5},
        {"name": "auv.hull.thruster_left", "first_divergent_step": null}]}]})";
    end.wait_status = exited(1);
    const RunResult r = judge_run(plan, end, dir);
    REQUIRE(r.failures.size() == 1);
    CHECK(r.failures[0].message() ==
          "commands of endpoint \"firmware\" match the recorded firmware: first failing at step 12, "
          "auv.hull.thruster_vfront: recorded 0.25, new 0.5");
    CHECK(r.reason == "the replay diverged (exit 1)");
    CHECK(r.report == dir + "/replay.json");
  }
  std::filesystem::remove_all(dir);
}

namespace {

// a result of `runs` with verdicts chosen by index: every third fails
CampaignResult fake_result(const std::vector<PlannedRun>& all, const std::vector<PlannedRun>& runs,
                           const std::string& dir) {
  CampaignResult result;
  result.name = "dives";
  result.file = "c.yaml";
  result.fingerprint = "f00d";
  result.total_runs = all.size();
  result.jobs = 2;
  for (const auto& p : runs) {
    RunResult r;
    r.plan = p;
    r.folder = dir + "/" + p.folder;
    std::filesystem::create_directories(r.folder);
    r.report = r.folder + "/report.html";
    r.duration_s = 0.25;
    r.exit_code = p.index % 3 == 1 ? 6 : 0;
    r.outcome = "completed";
    r.verdict = p.index % 3 == 1 ? RunVerdict::fail : RunVerdict::pass;
    if (r.verdict == RunVerdict::fail) r.failures.push_back({"shallow <&\"'>", 40 + p.index, 0.41, 3.5, "worst 3.5"});
    result.runs.push_back(r);
  }
  return result;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("junit.xml and index.html: one testcase per run, a <failure> per failed expectation, escaped") {
  const std::string dir = temp_dir("junit");
  const auto all = expand_campaign(parse_campaign(campaign_text, "c.yaml"), {});
  CampaignResult result = fake_result(all, all, dir);
  result.runs[5] = not_run(all[5], "not started: the campaign was interrupted (SIGINT or SIGTERM)");
  std::string error;
  REQUIRE_MESSAGE(write_campaign_results(result, dir, &error), error);
  const std::string xml = slurp(dir + "/junit.xml");
  CHECK(xml.find("<testsuites name=\"dives\" tests=\"8\" failures=\"3\" errors=\"0\" skipped=\"1\"") !=
        std::string::npos);
  CHECK(xml.find("<testcase name=\"a fw=new faults=none seed=9\" classname=\"dives.a\" time=\"0.250\">") !=
        std::string::npos);
  CHECK(xml.find("<failure type=\"expectation\" message=\"shallow &lt;&amp;&quot;&apos;&gt;: first failing at step 41 "
                 "(t = 0.410 s), worst 3.5\">") != std::string::npos);
  CHECK(xml.find("<skipped message=\"not started: the campaign was interrupted (SIGINT or SIGTERM)\"/>") !=
        std::string::npos);
  CHECK(xml.find("<property name=\"report\" value=\"001-a-fw-new-faults-none-seed-9/report.html\"/>") !=
        std::string::npos);
  const std::string html = slurp(dir + "/index.html");
  CHECK(html.find("FAILED: 4 of 8 runs passed, 3 failed, 1 not run") != std::string::npos);
  CHECK(html.find("<a href=\"001-a-fw-new-faults-none-seed-9/report.html\">report</a>") != std::string::npos);
  CHECK(html.find("shallow &lt;&amp;&quot;&apos;&gt;: first failing at step 41") != std::string::npos);
  CHECK(html.find("<script src") == std::string::npos);  // self-contained, nothing to load
  // campaign.json reads back as it was written
  const CampaignResult back = read_campaign_json(dir);
  REQUIRE(back.runs.size() == 8);
  CHECK(back.runs[1].failures[0].message() == result.runs[1].failures[0].message());
  CHECK(back.runs[5].verdict == RunVerdict::not_run);
  CHECK(back.runs[2].report == dir + "/002-a-fw-new-faults-stuck-compass-seed-7/report.html");
  std::filesystem::remove_all(dir);
}

TEST_CASE("the results' links: relative to the folder they are written into, through a link or from outside it") {
  const std::string real = temp_dir("links_real");
  const std::string other = temp_dir("links_other");
  const std::string link = temp_dir("links_link");
  std::filesystem::remove_all(link);
  std::filesystem::create_directory_symlink(real, link);
  const auto all = expand_campaign(parse_campaign(campaign_text, "c.yaml"), {});
  // the campaign writes into the link (the name a user gave); its runs' files lie under it
  CampaignResult result = fake_result(all, all, link);
  result.runs[3].report = other + "/elsewhere/report.html";                      // a file outside the folder
  result.runs[4].report = link + "/./sub/../" + all[4].folder + "/report.html";  // ".." in the name
  // a merge's runs lie in the slices' folders, beside the merged one: plain, and through a link
  std::filesystem::create_directories(other + "/slice/run5");
  std::filesystem::create_directories(other + "/slice/run6");
  std::filesystem::create_directory_symlink(other + "/slice", other + "/slink");
  result.runs[5].report = other + "/slice/run5/report.html";
  result.runs[6].report = other + "/slink/run6/report.html";
  result.runs[6].log = other + "/slink/run6/log.txt";
  std::ofstream(other + "/slice/run6/real.txt") << "x";
  std::filesystem::create_symlink(other + "/slice/run6/real.txt", other + "/slice/run5/report-link.html");
  result.runs[5].log = other + "/slice/run5/report-link.html";  // the file itself a link
  for (const std::string& dir : {link, link + "/"}) {
    std::string error;
    REQUIRE_MESSAGE(write_campaign_results(result, dir, &error), error);
    const auto j = nlohmann::json::parse(slurp(real + "/campaign.json"));
    CHECK(j["runs"][0]["report"] == all[0].folder + "/report.html");
    CHECK(j["runs"][0]["folder"] == all[0].folder);
    const std::string outside = std::filesystem::path(other).filename().string();
    CHECK(j["runs"][3]["report"] == "../" + outside + "/elsewhere/report.html");
    CHECK(j["runs"][4]["report"] == all[4].folder + "/report.html");
    // as std::filesystem::relative has them, links resolved
    for (const std::size_t i : {5, 6}) {
      CAPTURE(i);
      CHECK(j["runs"][i]["report"] == std::filesystem::relative(result.runs[i].report, real).string());
      CHECK(j["runs"][i]["log"] == std::filesystem::relative(result.runs[i].log, real).string());
    }
    CHECK(j["runs"][6]["report"] == "../" + outside + "/slice/run6/report.html");
    CHECK(j["runs"][5]["log"] == "../" + outside + "/slice/run6/real.txt");
  }
  std::filesystem::remove(link);
  std::filesystem::remove_all(real);
  std::filesystem::remove_all(other);
}

TEST_CASE("the results are rewritten as runs finish, paced: at most a twentieth of the campaign's time") {
  using namespace std::chrono_literals;
  ResultsPacing pacing;  // factor 20
  const ResultsPacing::Clock::time_point t0{};
  CHECK(pacing.due(t0));       // the first finished run is written at once
  pacing.wrote(t0, t0 + 2ms);  // a rewrite of 2 ms
  CHECK_FALSE(pacing.due(t0 + 3ms));
  CHECK_FALSE(pacing.due(t0 + 41ms));
  CHECK(pacing.due(t0 + 42ms));                // 2 ms + 20 x 2 ms
  pacing.wrote(t0 + 42ms, t0 + 42ms + 100us);  // cheap rewrites: after (almost) every run
  CHECK(pacing.due(t0 + 44ms + 100us));
  ResultsPacing every(0);  // factor 0: after every run
  every.wrote(t0, t0 + 1s);
  CHECK(every.due(t0 + 1s));
}

TEST_CASE("index.html's matrix: fault set x expectation, runs passed and the least margin, linking to that run") {
  const std::string dir = temp_dir("matrix");
  const auto all = expand_campaign(parse_campaign(campaign_text, "c.yaml"), {});
  CampaignResult result = fake_result(all, all, dir);
  // "shallow" on every run: its margin from the run's index; "quick" only on scenario a
  for (auto& r : result.runs) {
    const double margin = r.verdict == RunVerdict::fail ? -0.5 - 0.1 * static_cast<double>(r.plan.index)
                                                        : 1.0 + 0.1 * static_cast<double>(r.plan.index);
    r.expectations.push_back({"shallow", r.verdict == RunVerdict::fail ? "FAIL" : "PASS", margin});
    if (r.plan.labels["scenario"] == "a") r.expectations.push_back({"quick", "SKIPPED", std::nullopt});
  }
  std::string error;
  REQUIRE_MESSAGE(write_campaign_results(result, dir, &error), error);
  const std::string html = slurp(dir + "/index.html");
  const auto matrix = html.find("<h2>Expectations by fault set</h2>");
  REQUIRE(matrix != std::string::npos);
  CHECK(matrix < html.find("<h2>Runs</h2>"));
  CHECK(html.find("<th>shallow</th><th>quick</th>") != std::string::npos);
  // one row per scenario x firmware x fault set, both seeds in it
  for (const auto& [row, runs] : std::vector<std::pair<std::string, std::vector<std::size_t>>>{
           {"scenario a, firmware new, faults none", {0, 1}}, {"scenario a, firmware new, faults stuck compass", {2, 3}},
           {"scenario bee, firmware new, faults none", {4, 5}},
           {"scenario bee, firmware new, faults stuck compass", {6, 7}}}) {
    const auto at = html.find("<td data-v=\"" + row + "\">" + row + "</td>");
    REQUIRE_MESSAGE(at != std::string::npos, row);
    const std::string tr = html.substr(at, html.find("</tr>", at) - at);
    std::size_t passed = 0;
    double least = 1e9;
    std::size_t worst = 0;
    for (const std::size_t i : runs) {
      passed += result.runs[i].verdict == RunVerdict::pass;
      const double m = *result.runs[i].expectations[0].margin;
      if (m < least) least = m, worst = i;
    }
    char margin[32];
    std::snprintf(margin, sizeof margin, "%.3g", least);
    CHECK_MESSAGE(tr.find(">" + std::to_string(passed) + " / 2<br><small>margin <a href=\"" + result.runs[worst].plan.folder +
                           "/report.html\"") != std::string::npos,
                  tr);
    CHECK(tr.find(std::string(">") + margin + "</a>") != std::string::npos);
    CHECK(tr.find(passed == 2 ? "class=\"cpass\"" : "class=\"cfail\"") != std::string::npos);
    // "quick": skipped on scenario a (judged by none), not part of bee
    CHECK(tr.find(row.find("bee") == std::string::npos ? "0 / 0 <small>(2 skipped)</small>" : "<td data-v=\"\"></td>") !=
          std::string::npos);
  }
  // the matrix survives campaign.json: a merge draws it again
  const CampaignResult back = read_campaign_json(dir);
  REQUIRE(back.runs[3].expectations.size() == 2);
  CHECK(back.runs[3].expectations[0].name == "shallow");
  CHECK(back.runs[3].expectations[0].margin == result.runs[3].expectations[0].margin);
  CHECK_FALSE(back.runs[3].expectations[1].margin.has_value());
  std::filesystem::remove_all(dir);
}

TEST_CASE("--merge: slices of one campaign make the whole, and other campaigns, overlaps and gaps are refused or failed") {
  const std::string dir = temp_dir("merge");
  const auto all = expand_campaign(parse_campaign(campaign_text, "c.yaml"), {});
  const CampaignResult whole = fake_result(all, all, dir + "/whole");
  std::vector<std::string> slices;
  for (std::size_t k = 1; k <= 3; ++k) {
    const std::string out = dir + "/s" + std::to_string(k);
    CampaignResult part = fake_result(all, shard_runs(all, k, 3), out);
    part.shard = std::make_pair(k, std::size_t{3});
    std::string error;
    REQUIRE(write_campaign_results(part, out, &error));
    slices.push_back(out);
  }
  const CampaignResult merged = merge_campaign_results(slices);
  REQUIRE(merged.runs.size() == whole.runs.size());
  for (std::size_t i = 0; i < merged.runs.size(); ++i) {
    CHECK(merged.runs[i].plan.name == whole.runs[i].plan.name);
    CHECK(merged.runs[i].verdict == whole.runs[i].verdict);
    CHECK(merged.runs[i].exit_code == whole.runs[i].exit_code);
  }
  // the merged page links into the slices' folders
  std::string error;
  REQUIRE(write_campaign_results(merged, dir + "/merged", &error));
  CHECK(slurp(dir + "/merged/junit.xml").find("value=\"../s2/001-a-fw-new-faults-none-seed-9/report.html\"") !=
        std::string::npos);

  CHECK_THROWS_WITH_AS(merge_campaign_results({slices[0], slices[0]}), doctest::Contains("is in both"),
                       std::runtime_error);
  // a slice missing: its runs fail
  const CampaignResult partial = merge_campaign_results({slices[0], slices[2]});
  CHECK(partial.runs.size() == 8);
  CHECK(partial.runs[1].verdict == RunVerdict::fail);
  CHECK(partial.runs[1].reason.find("not run by any merged slice") == 0);
  // another campaign's slice
  CampaignResult other = fake_result(all, shard_runs(all, 2, 3), dir + "/other");
  other.fingerprint = "beef";
  REQUIRE(write_campaign_results(other, dir + "/other", &error));
  CHECK_THROWS_WITH_AS(merge_campaign_results({slices[0], dir + "/other"}),
                       doctest::Contains("holds runs of a different campaign"), std::runtime_error);
  CHECK_THROWS_WITH_AS(merge_campaign_results({dir + "/nothing"}), doctest::Contains("campaign.json: not found"),
                       std::runtime_error);
  std::filesystem::remove_all(dir);
}
