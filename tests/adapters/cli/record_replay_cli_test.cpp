// SPDX-License-Identifier: Apache-2.0
// Recording and replay as a user meets them: tether run leaves a recording, a summary and
// a report; tether replay --verify, --from-step; tether info; the file passes the reference
// MCAP readers; a session killed with SIGKILL leaves a truncated file that still loads,
// verifies and reports; corrupt files are refused with a message and exit code 2.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>
#include <set>
#include <sstream>
#include <thread>

#include <csignal>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "test_paths.hpp"

namespace {

using CliResult = tether::cli_test::Result;

// a shell command line, stdout and stderr together
CliResult sh(const std::string& command) { return tether::cli_test::run(command); }

const std::string tether_bin = TETHER_BINARY_DIR + "/tether";
// the in-process variant of the default scenario: nothing to launch, so these tests are about recording
const std::string in_process_scenario = TETHER_SOURCE_DIR + "/config/scenarios/in_process_depth_hold.yaml";

std::string fresh_dir(const char* name) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("tether_rr_cli_test_" + std::to_string(getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// the reference TypeScript readers (tests/mcap_validate); empty if skipped
std::string validate_with_mcap_core(const std::string& file, bool truncated) {
  if (std::getenv("TETHER_SKIP_NODE_VALIDATION")) return "";
  const auto r = sh("TETHER_BINARY_DIR=" + TETHER_BINARY_DIR + " " + TETHER_SOURCE_DIR +
                    "/tests/mcap_validate/run.sh " + std::string(truncated ? "--truncated " : "") + file);
  CHECK_MESSAGE(r.exit_code == 0, r.out);
  CHECK(contains(r.out, "\"ok\":true"));
  return r.out;
}

// a recording made once for the tests that only read it
const std::string& shared_recording() {
  static const std::string path = [] {
    const std::string dir = fresh_dir("shared");
    const auto r = sh(tether_bin + " run " + in_process_scenario + " --rtf 0 --steps 2000 --quiet --out " + dir);
    REQUIRE_MESSAGE(r.exit_code == 0, r.out);
    return dir + "/recording.mcap";
  }();
  return path;
}

// the words of `tether info`'s line for a channel, but its byte count, joined by one space
std::string channel_line(const std::string& out, const std::string& topic) {
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    if (w.size() < 2 || w.front() != topic) continue;
    w.pop_back();
    std::string joined;
    for (const auto& x : w) joined += (joined.empty() ? "" : " ") + x;
    return joined;
  }
  return "no line for " + topic;
}

// the offset of the first top-level record with `opcode` after the magic, or 0
std::size_t find_record(const std::string& file, unsigned char opcode) {
  std::size_t at = 8;
  while (at + 9 <= file.size()) {
    std::uint64_t len;
    std::memcpy(&len, file.data() + at + 1, 8);
    if (static_cast<unsigned char>(file[at]) == opcode) return at;
    if (len > file.size() - at - 9) return 0;
    at += 9 + len;
  }
  return 0;
}

}  // namespace

TEST_CASE("tether run leaves a recording, a summary and a report") {
  const std::string dir = fresh_dir("run");
  const auto r = sh(tether_bin + " run " + in_process_scenario + " --rtf 0 --steps 1500 --quiet --out " + dir);
  REQUIRE_MESSAGE(r.exit_code == 0, r.out);
  CHECK(contains(r.out, "  recording: " + dir + "/recording.mcap\n  report: " + dir + "/report.html\n"));
  CHECK(std::filesystem::file_size(dir + "/recording.mcap") > 10'000);
  const auto summary = nlohmann::json::parse(slurp(dir + "/summary.json"));
  CHECK(summary["steps"] == 1500);
  CHECK(summary["recording"]["dropped_items"] == 0);
  std::string html = slurp(dir + "/report.html");
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(contains(html, "<svg"));
  CHECK(contains(html, "1500 of 1500 planned"));
  // nothing to fetch: the charting library is inlined (its licence comment names a web
  // address, which is no reference); outside it, no address at all
  const auto lib = html.find("<script data-lib=\"dygraphs\">");
  REQUIRE(lib != std::string::npos);
  html.erase(lib, html.find("</script>", lib) - lib);
  CHECK_FALSE(contains(html, "<script src"));
  CHECK_FALSE(contains(html, "http://"));
  CHECK_FALSE(contains(html, "https://"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("tether replay --verify reproduces every state bit for bit") {
  const std::string& rec = shared_recording();
  const auto r = sh(tether_bin + " replay " + rec + " --verify --quiet");
  CHECK_MESSAGE(r.exit_code == 0, r.out);
  CHECK(contains(r.out, "replayed 2000 steps from step 0"));
  CHECK(contains(r.out, "verify: all 2000 replayed states are bit-identical to the recording"));

  const auto j = sh(tether_bin + " replay " + rec + " --verify --json");
  REQUIRE(j.exit_code == 0);
  const auto result = nlohmann::json::parse(j.out);
  CHECK(result["identical"] == true);
  CHECK(result["verified_steps"] == 2000);
  const auto summary = nlohmann::json::parse(slurp(std::filesystem::path(rec).parent_path() / "summary.json"));
  CHECK(result["final_state_hash"] == summary["state_hash"]);
}

TEST_CASE("tether replay --from-step starts at the keyframe at or before the step") {
  const std::string& rec = shared_recording();
  const auto r = sh(tether_bin + " replay " + rec + " --verify --quiet --from-step 1234");
  CHECK_MESSAGE(r.exit_code == 0, r.out);
  CHECK(contains(r.out, "replayed 800 steps from step 1200"));
  CHECK(contains(r.out, "verify: all 800 replayed states are bit-identical to the recording"));
  const auto full = nlohmann::json::parse(sh(tether_bin + " replay " + rec + " --json").out);
  const auto part = nlohmann::json::parse(sh(tether_bin + " replay " + rec + " --json --from-step 1999").out);
  CHECK(part["from_step"] == 1900);
  CHECK(part["final_state_hash"] == full["final_state_hash"]);
  // past the last step (1999): an error naming the range, not a silent clamp to the end
  const auto past = sh(tether_bin + " replay " + rec + " --verify --quiet --from-step 2000");
  CHECK(past.exit_code == 2);
  CHECK_MESSAGE(contains(past.out, "--from-step 2000: " + rec + " has steps 0 .. 1999"), past.out);
}

TEST_CASE("a session with faults replays bit for bit, from the start and from a keyframe inside a fault") {
  // the default scenario (the host firmware on a pty) with a fault of every device kind and
  // link faults that make misses; keyframes every 50 steps, one taken while the compass is
  // stuck and the depth drifts
  const std::string dir = fresh_dir("faults");
  const std::string faults =
      "[{name: compass stuck, device: auv.hull.compass, kind: stuck, at_step: 140, duration_steps: 40},"
      " {device: auv.hull.depth, kind: drift, rate: 0.5, at_step: 130, duration_steps: 60},"
      " {device: auv.hull.depth, kind: noise, sigma: 0.05, probability: 0.05, duration_steps: 3},"
      " {device: auv.hull.depth, kind: dropout, at_step: 250, duration_steps: 5},"
      " {device: auv.hull.compass, kind: bias, value: 0.1, at_step: 260, duration_steps: 5},"
      " {device: auv.hull.depth, kind: scale, factor: 1.1, at_step: 270, duration_steps: 5},"
      " {device: auv.hull.depth, kind: saturation, min: 0, max: 0.5, if: {value: auv.depth_m, that: \"> 0.9\"},"
      " duration_steps: 2},"
      " {name: silence, endpoint: firmware, kind: drop, at_step: 200, duration_steps: 5},"
      " {endpoint: firmware, kind: corrupt, direction: out, probability: 0.02}]";
  const auto run =
      sh("TETHER_BUILD_DIR=" + TETHER_BINARY_DIR + " " + tether_bin + " run " + TETHER_SOURCE_DIR +
         "/config/scenarios/default.yaml --rtf 0 --steps 400 --quiet --set 'recording={keyframe_every_steps: 50}'"
         " --set 'endpoints.firmware.deadline_ms=200' --set 'faults=" +
         faults + "' --out " + dir);
  // the run is judged by the default scenario's expectations (a 4 s run skips most of them)
  CHECK_MESSAGE((run.exit_code == 0 || run.exit_code == 6), run.out);
  const auto summary = nlohmann::json::parse(slurp(dir + "/summary.json"));
  REQUIRE(summary["faults"].size() == 9);
  CHECK(summary["faults"][0]["activations"][0]["start_step"] == 140);
  CHECK(summary["faults"][7]["active_steps"] == 5);
  CHECK(summary["endpoints"][0]["misses"].get<int>() >= 5);
  const std::string rec = dir + "/recording.mcap";
  const auto r = sh(tether_bin + " replay " + rec + " --verify --quiet");
  CHECK_MESSAGE(r.exit_code == 0, r.out);
  CHECK(contains(r.out, "verify: all 400 replayed states are bit-identical to the recording"));
  const auto k = sh(tether_bin + " replay " + rec + " --verify --quiet --from-step 150");
  CHECK_MESSAGE(k.exit_code == 0, k.out);
  CHECK(contains(k.out, "verify: all 250 replayed states are bit-identical to the recording"));
  // the starts and ends are events of the recording; the report draws them
  const auto report = sh(tether_bin + " report " + rec + " --output " + dir + "/report2.html");
  CHECK_MESSAGE(report.exit_code == 0, report.out);
  const std::string html = slurp(dir + "/report2.html");
  CHECK(contains(html, "<h2>Faults</h2>"));
  CHECK(contains(html, "compass stuck"));
  CHECK(contains(html, "fault &quot;silence&quot; (drop on endpoint &quot;firmware&quot;) starts at step 200"));
}

TEST_CASE("tether info describes the recording") {
  const std::string& rec = shared_recording();
  const auto r = sh(tether_bin + " info " + rec);
  REQUIRE_MESSAGE(r.exit_code == 0, r.out);
  CHECK_FALSE(contains(r.out, "TRUNCATED"));
  CHECK(contains(r.out, "scenario    in_process_depth_hold\n"));
  CHECK(contains(r.out, "steps       2000 from step 0, 20.000 s at 10 ms; 20 keyframes\n"));
  CHECK(contains(r.out, "outcome     completed\n"));
  CHECK(contains(r.out, "endpoint    controller (in_process, policy hold): replies 2000, misses 0"));
  CHECK(contains(r.out, "/tether/step"));
  CHECK(contains(r.out, "/tether/safe_replies"));
  // each channel with its encoding and schema, the log-time range
  CHECK(contains(r.out, "log time    0.000 .. 20.000 s (simulation time)\n"));
  CHECK(contains(r.out, "/tether/step"));
  CHECK(channel_line(r.out, "/tether/step") == "/tether/step protobuf tether.StepRecord (protobuf) 2000");
  {
    // the channel table lines up: every row (and the header) as long as the others
    std::istringstream lines(r.out.substr(r.out.find("\nchannels ") + 1));
    std::string line;
    std::getline(lines, line);  // "channels    N"
    std::set<std::size_t> widths;
    while (std::getline(lines, line) && line.rfind("  ", 0) == 0) widths.insert(line.size());
    CHECK(widths.size() == 1);
  }
  CHECK(channel_line(r.out, "/vehicles/auv/pose") == "/vehicles/auv/pose json foxglove.PoseInFrame (jsonschema) 2000");
  CHECK(channel_line(r.out, "/tether/timing") == "/tether/timing json tether.Timing (jsonschema) 2000");
  const auto j = nlohmann::json::parse(sh(tether_bin + " info --json " + rec).out);
  CHECK(j["complete"] == true);
  CHECK(j["steps"] == 2000);
  CHECK(j["keyframes"] == 20);
  bool pose = false;
  for (const auto& c : j["channels"])
    if (c["topic"] == "/vehicles/auv/pose") {
      pose = true;
      CHECK(c["encoding"] == "json");
      CHECK(c["schema"] == "foxglove.PoseInFrame");
      CHECK(c["schema_encoding"] == "jsonschema");
    }
  CHECK(pose);
  // the session folder stands for its recording, in info, replay and report
  const std::string folder = std::filesystem::path(rec).parent_path().string();
  CHECK(sh(tether_bin + " info --json " + folder).out ==
        sh(tether_bin + " info --json " + folder + "/recording.mcap").out);
  const auto v = sh(tether_bin + " replay " + folder + " --verify --quiet --from-step 1900");
  CHECK_MESSAGE(v.exit_code == 0, v.out);
  const auto none = sh(tether_bin + " info " + fresh_dir("empty"));
  CHECK(none.exit_code == 2);
  CHECK_MESSAGE(contains(none.out, "recording.mcap"), none.out);
}

TEST_CASE("tether report writes the HTML where it is told, and next to the recording by default") {
  const std::string& rec = shared_recording();
  const std::string dir = fresh_dir("report");
  const auto r = sh(tether_bin + " report " + rec + " -o " + dir + "/r.html");
  CHECK_MESSAGE(r.exit_code == 0, r.out);
  CHECK(r.out == "report: " + dir + "/r.html\n");
  CHECK(contains(slurp(dir + "/r.html"), "Tether session report: in_process_depth_hold"));
  std::filesystem::copy_file(rec, dir + "/copy.mcap");
  CHECK(sh(tether_bin + " report " + dir + "/copy.mcap").exit_code == 0);
  CHECK(std::filesystem::exists(dir + "/copy.html"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("the recording passes the reference MCAP readers (@mcap/core)") {
  const std::string out = validate_with_mcap_core(shared_recording(), false);
  if (!out.empty()) CHECK(contains(out, "\"mode\":\"complete\""));
}

TEST_CASE("a session killed with SIGKILL leaves a truncated recording that loads, verifies and reports") {
  const std::string dir = fresh_dir("kill");
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, STDOUT_FILENO);
    dup2(devnull, STDERR_FILENO);
    execl(tether_bin.c_str(), tether_bin.c_str(), "run", in_process_scenario.c_str(), "--rtf", "1", "--steps", "100000",
          "--quiet", "--out", dir.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // the recorder flushes every second: kill once the file on disk holds 50 steps (asked of
  // `tether info` on the live file; a fixed 1.5 s wait was short for a loaded machine, whose
  // paced loop re-anchors instead of catching up), or after 8 s
  const std::string rec = dir + "/recording.mcap";
  for (int i = 0; i < 80; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!std::filesystem::exists(rec)) continue;
    const auto live = sh(tether_bin + " info --json " + rec + " 2>/dev/null");
    if (live.exit_code != 0) continue;
    const auto j = nlohmann::json::parse(live.out, nullptr, false);
    if (j.is_object() && j.contains("steps") && j["steps"].get<std::uint64_t>() >= 50) break;
  }
  REQUIRE(kill(pid, SIGKILL) == 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status));
  CHECK_FALSE(std::filesystem::exists(dir + "/summary.json"));

  const auto info = sh(tether_bin + " info --json " + rec);
  REQUIRE_MESSAGE(info.exit_code == 0, info.out);
  const auto j = nlohmann::json::parse(info.out);
  CHECK(j["complete"] == false);
  CHECK(j.contains("truncation"));
  const std::uint64_t steps = j["steps"];
  CHECK(steps >= 50);   // at least the first second's flush
  CHECK(steps < 1000);  // ... and not the whole planned run
  CHECK(contains(sh(tether_bin + " info " + rec).out, "TRUNCATED (the session did not finish)"));

  const auto replay = sh(tether_bin + " replay --verify --quiet " + rec);
  CHECK_MESSAGE(replay.exit_code == 0, replay.out);
  CHECK(contains(replay.out, "verify: all " + std::to_string(steps) + " replayed states are bit-identical"));

  const auto report = sh(tether_bin + " report " + rec + " -o " + dir + "/report.html");
  CHECK_MESSAGE(report.exit_code == 0, report.out);
  CHECK(contains(slurp(dir + "/report.html"), "session did not finish (truncated)"));

  validate_with_mcap_core(rec, true);
  std::filesystem::remove_all(dir);
}

TEST_CASE("corrupt and cut files are refused with a message and exit code 2, never a crash") {
  const std::string dir = fresh_dir("corrupt");
  const std::string good = slurp(shared_recording());
  std::mt19937 rng(99);
  std::string noise(20'000, '\0');
  for (char& c : noise) c = static_cast<char>(rng());
  std::string flipped = good;
  const std::size_t chunk = find_record(good, 0x06);
  REQUIRE(chunk > 0);
  for (int k = 0; k < 8; ++k) flipped[chunk + 200 + static_cast<std::size_t>(k) * 37] ^= 0x5a;
  std::string bad_magic = good;
  bad_magic[1] = 'X';

  struct Case {
    std::string name;
    std::string bytes;
    std::string says;
  };
  const Case cases[] = {
      {"empty", "", "shorter than the 8-byte MCAP magic"},
      {"random bytes", noise, "not an MCAP file"},
      {"a cut header", good.substr(0, 20), "the file ends inside its header"},
      {"a bad magic", bad_magic, "not an MCAP file"},
      {"flipped bytes in a chunk", flipped, "chunk at offset " + std::to_string(chunk) + ": "},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const std::string file = dir + "/bad.mcap";
    spit(file, c.bytes);
    for (const std::string& command : {tether_bin + " replay --verify --quiet " + file, tether_bin + " info " + file,
                                       tether_bin + " report " + file + " -o " + dir + "/bad.html"}) {
      CAPTURE(command);
      const auto r = sh(command);
      CHECK_FALSE(r.signalled);
      CHECK(r.exit_code == 2);
      CHECK_MESSAGE(contains(r.out, c.says), r.out);
      CHECK(r.out.rfind("tether: " + file, 0) == 0);
    }
  }
  CHECK_FALSE(std::filesystem::exists(dir + "/bad.html"));
  // a file cut anywhere after its first chunk is a truncated recording, not an error
  for (double fraction : {0.3, 0.77}) {
    const std::string file = dir + "/cut.mcap";
    spit(file, good.substr(0, static_cast<std::size_t>(static_cast<double>(good.size()) * fraction)));
    const auto r = sh(tether_bin + " replay --verify --quiet " + file);
    CHECK_MESSAGE(r.exit_code == 0, r.out);
    CHECK(contains(r.out, "bit-identical"));
  }
  std::filesystem::remove_all(dir);
}
