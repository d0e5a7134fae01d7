// SPDX-License-Identifier: Apache-2.0
// A recording that cannot be written (a file over RLIMIT_FSIZE, a full file system) as a
// user meets it: by default the session stops cleanly after the step it finds out at, with
// the outcome `recording_failed` and exit code 7, the message naming the file and the error;
// the recording up to its last whole chunk loads, verifies bit for bit and passes the
// reference reader. `recording.on_write_error: continue` runs every step without recording.
// A full disk that also refuses summary.json leaves no half-written summary behind.
#include <doctest/doctest.h>

#include <sys/mount.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "test_paths.hpp"

namespace {

using tether::cli_test::run;
using tether::cli_test::temp_dir;

const std::string tether_bin = TETHER_BINARY_DIR + "/tether";
const std::string scenario = TETHER_SOURCE_DIR + "/config/scenarios/in_process_depth_hold.yaml";
constexpr int planned = 30000;

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), path);
  return nlohmann::json::parse(in);
}

// what every cut recording must still be: loadable, truncated, bit-exact as far as it goes
std::uint64_t check_cut_recording(const std::string& rec) {
  const auto info = run(tether_bin + " info --json " + rec, false);
  REQUIRE_MESSAGE(info.exit_code == 0, info.out);
  const auto j = nlohmann::json::parse(info.out);
  CHECK(j["complete"] == false);
  const std::uint64_t steps = j["steps"];
  CHECK(steps > 0);
  const auto replay = run(tether_bin + " replay --verify --quiet " + rec);
  CHECK_MESSAGE(replay.exit_code == 0, replay.out);
  CHECK(contains(replay.out, "verify: all " + std::to_string(steps) + " replayed states are bit-identical"));
  if (!std::getenv("TETHER_SKIP_NODE_VALIDATION")) {
    const auto r = run("TETHER_BINARY_DIR=" + TETHER_BINARY_DIR + " " + TETHER_SOURCE_DIR +
                       "/tests/mcap_validate/run.sh --truncated " + rec);
    CHECK_MESSAGE(r.exit_code == 0, r.out);
  }
  return steps;
}

}  // namespace

TEST_CASE("a recording over the file size limit stops the session cleanly: recording_failed, exit 7, nothing lost") {
  // the limit is met early, midway and late in the recording (a step is ~1 kB of it)
  for (const std::string limit : {"200000", "1500000", "6000000"}) {
    CAPTURE(limit);
    const std::string dir = temp_dir(("fsize_" + limit).c_str());
    const auto r = run("prlimit --fsize=" + limit + " " + tether_bin + " run " + scenario + " --rtf 0 --steps " +
                       std::to_string(planned) + " --quiet --out " + dir);
    CHECK_MESSAGE(r.exit_code == 7, r.out);
    // the message names the file and the error
    CHECK_MESSAGE(contains(r.out, dir + "/recording.mcap"), r.out);
    CHECK_MESSAGE(contains(r.out, "File too large"), r.out);
    CHECK(contains(r.out, "recording_failed"));
    const auto summary = read_json(dir + "/summary.json");
    CHECK(summary["outcome"] == "recording_failed");
    CHECK(summary["recording"]["on_write_error"] == "stop");
    CHECK(contains(summary["recording"]["write_error"].get<std::string>(), "File too large"));
    const std::uint64_t ran = summary["steps"];
    CHECK(ran < static_cast<std::uint64_t>(planned));
    CHECK(summary["recording"]["write_failed_after_step"].get<std::uint64_t>() + 1 == ran);
    const std::uint64_t recorded = check_cut_recording(dir + "/recording.mcap");
    CHECK(recorded <= ran);
    std::filesystem::remove_all(dir);
  }
}

TEST_CASE("recording.on_write_error: continue runs every step without recording, and says so") {
  const std::string dir = temp_dir("fsize_continue");
  // 80 s of the scenario (its expectations pass; it meets the far wall at 134 s); the file
  // fails a fifth of the way in, the writer behind the loop by at most the ring's 4,096 items
  const auto r = run("prlimit --fsize=600000 " + tether_bin + " run " + scenario +
                     " --rtf 0 --steps 8000 --set recording.on_write_error=continue --out " + dir);
  CHECK_MESSAGE(r.exit_code == 0, r.out);
  CHECK(contains(r.out, "WITHOUT RECORDING"));
  CHECK(contains(r.out, "WARNING: nothing was recorded after step"));
  const auto summary = read_json(dir + "/summary.json");
  CHECK(summary["outcome"] == "completed");
  CHECK(summary["steps"] == summary["steps_planned"]);
  CHECK(summary["recording"]["on_write_error"] == "continue");
  CHECK(summary["recording"]["write_failed_after_step"].get<std::uint64_t>() < summary["steps"].get<std::uint64_t>());
  check_cut_recording(dir + "/recording.mcap");
  std::filesystem::remove_all(dir);
}

TEST_CASE("a full file system: the session stops, summary.json is refused whole, never left half written") {
  const std::string dir = temp_dir("tmpfs");
  const std::string mnt = dir + "/small";
  std::filesystem::create_directories(mnt);
  if (geteuid() != 0 || ::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=400k") != 0) {
    MESSAGE(
        "skipped: cannot mount a 400 kB tmpfs here (needs root and a mount namespace that allows it); "
        "the file size limit above covers the same write errors");
    std::filesystem::remove_all(dir);
    return;
  }
  const std::string out = mnt + "/session";
  const auto r =
      run(tether_bin + " run " + scenario + " --rtf 0 --steps " + std::to_string(planned) + " --quiet --out " + out);
  CHECK_MESSAGE(r.exit_code == 7, r.out);
  CHECK_MESSAGE(contains(r.out, "No space left on device"), r.out);
  CHECK(contains(r.out, out + "/recording.mcap"));
  // the disk stays full: the summary is refused (said, with its path), not left empty or cut
  if (!std::filesystem::exists(out + "/summary.json")) {
    CHECK(contains(r.out, "cannot write " + out + "/summary.json: No space left on device"));
    CHECK_FALSE(contains(r.out, "  summary: "));
  } else {
    CHECK(read_json(out + "/summary.json")["outcome"] == "recording_failed");
  }
  // what is on the disk is readable; a copy out of the full disk verifies bit for bit
  std::filesystem::copy_file(out + "/recording.mcap", dir + "/recording.mcap");
  CHECK(::umount(mnt.c_str()) == 0);
  check_cut_recording(dir + "/recording.mcap");
  std::filesystem::remove_all(dir);
}

TEST_CASE("recording.on_write_error: a value it does not know is refused with its position, before anything runs") {
  struct Bad {
    const char* set;
    const char* says;
  };
  for (const Bad b :
       {Bad{"recording.on_write_error=maybe", "expected one of stop, continue, got \"maybe\""},
        Bad{"recording.on_write_error=Stop", "expected one of stop, continue, got \"Stop\""},
        Bad{"recording.on_write_error=1e308", "expected one of stop, continue, got"},
        Bad{"recording.on_write_error=.nan", "expected one of stop, continue, got"},
        Bad{"recording.on_write_error=[stop]", "got a list"}, Bad{"recording.on_write_eror=stop", "on_write_eror"}}) {
    CAPTURE(b.set);
    const auto r = run(tether_bin + " check " + scenario + " --set '" + b.set + "'");
    CHECK(r.exit_code == 2);
    CHECK_MESSAGE(contains(r.out, b.says), r.out);
  }
  // both known values check, and a run with one steps to its end
  for (const char* v : {"stop", "continue"})
    CHECK(run(tether_bin + " check " + scenario + " --set recording.on_write_error=" + v).exit_code == 0);
  const std::string dir = temp_dir("on_write_error_ok");
  const auto r = run(tether_bin + " run " + scenario +
                     " --rtf 0 --steps 200 --quiet --set recording.on_write_error=continue --out " + dir);
  CHECK_MESSAGE(r.exit_code == 0, r.out);
  CHECK(read_json(dir + "/summary.json")["steps"] == 200);
  CHECK_FALSE(read_json(dir + "/summary.json")["recording"].contains("write_error"));
  std::filesystem::remove_all(dir);
}
