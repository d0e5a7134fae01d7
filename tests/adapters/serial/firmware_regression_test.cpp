// SPDX-License-Identifier: Apache-2.0
// Firmware regression replay: `tether replay REC --firmware ENDPOINT=LAUNCH` against a
// recording of the default scenario (the host firmware on a pty). The same firmware
// reproduces every recorded command; a build with a changed depth gain (Kp 0.9 -> 1.8,
// tests/CMakeLists.txt) is reported with its first divergent step, on the vertical
// thrusters only; the Cortex-M3 build under QEMU reproduces the host build's commands.
// Also: --verify on a firmware recording, closed loop, and bad input.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>

#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "serial_test_util.hpp"
#include "test_paths.hpp"
#include "tether/serial/firmware_regression.hpp"
#include "tether/firmware_shim/payloads.h"

using namespace tether;
using namespace tether::adapters;

namespace {

using Cli = tether::cli_test::Result;

// stdout only: --json must parse; stderr (the log) goes to the test's output on failure
Cli sh(const std::string& command, bool with_stderr = false) { return tether::cli_test::run(command, with_stderr); }

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

const std::string tether_bin = TETHER_BINARY_DIR + "/tether";
const std::string host_fw = TETHER_BINARY_DIR + "/firmware/host/depth_heading_hold";
const std::string variant_fw = TETHER_BINARY_DIR + "/firmware/test/depth_heading_hold_kp18";
constexpr int recorded_steps = 600;

std::string scratch(const char* name) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("tether_fwreg_test_" + std::to_string(getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::string record(const std::string& scenario, const char* name) {
  const std::string dir = scratch(name);
  const auto r = sh("TETHER_BUILD_DIR=" + TETHER_BINARY_DIR + " " + tether_bin + " run " + scenario +
                        " --rtf 0 --steps " + std::to_string(recorded_steps) + " --quiet --out " + dir,
                    true);
  REQUIRE_MESSAGE(r.exit_code == 0, r.out);
  return dir + "/recording.mcap";
}

// the default scenario (host firmware over a pty) with strict lock-step (policy block), so
// that the recorded firmware answered every step whatever the machine's load: recorded
// once, unpaced
const std::string& firmware_recording() {
  static const std::string path = [] {
    std::ifstream in(TETHER_SOURCE_DIR + "/config/scenarios/default.yaml");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (const auto& [from, to] : {std::pair<std::string, std::string>{"deadline_ms: 8 ", "deadline_ms: 5000 "},
                                   {"timeout_policy: safe ", "timeout_policy: block "}}) {
      REQUIRE(text.find(from) != std::string::npos);
      text.replace(text.find(from), from.size(), to);
    }
    // an expectation the 6 s recording can judge: the dive has begun by 4 s (a build whose
    // depth gain has the wrong sign fails it)
    REQUIRE(text.find("expect:\n") != std::string::npos);
    text.insert(text.find("expect:\n") + 8,
                "  - {name: diving by 4 s, value: auv.depth_m, that: \"> 0.3\", when: \"after 4 s\"}\n");
    // the firmware path is relative to the scenario's folder unless TETHER_BUILD_DIR is set
    const std::string file = scratch("scenario") + "/default_block.yaml";
    std::ofstream(file) << text;
    return record(file, "rec");
  }();
  return path;
}

runtime::DeviceCommand thruster(std::uint16_t device, float value) {
  runtime::DeviceCommand c;
  c.device = device;
  c.size = TETHER_THRUSTER_SIZE;
  tether_put_f32le(c.bytes.data(), value);
  return c;
}

std::vector<SerialDevice> two_thrusters() {
  return {SerialDevice{0, 1, TETHER_DIRECTION_SENSOR, 8, "auv.hull.depth"},
          SerialDevice{2, 64, TETHER_DIRECTION_ACTUATOR, 4, "auv.hull.left"},
          SerialDevice{3, 64, TETHER_DIRECTION_ACTUATOR, 4, "auv.hull.right"}};
}

}  // namespace

TEST_CASE("firmware regression: --firmware specs") {
  FirmwareSpec spec;
  std::string error;
  REQUIRE(parse_firmware_spec("firmware=build/fw --fast", spec, &error));
  CHECK(spec.endpoint == "firmware");
  CHECK(spec.launch == "build/fw --fast");
  for (const char* bad : {"firmware", "=build/fw", "firmware=", ""}) {
    CHECK_FALSE(parse_firmware_spec(bad, spec, &error));
    CHECK(contains(error, "expected ENDPOINT=LAUNCH"));
  }
  SerialLaunchConfig launch;
  REQUIRE(launch_from_spec("build/fw --fast", launch, &error));
  REQUIRE(launch.command.size() == 2);
  CHECK(launch.command[0].front() == '/');  // made absolute against the current folder
  CHECK(launch.command[1] == "--fast");
  CHECK(launch.pty);
  REQUIRE(launch_from_spec("qemu:/x/fw.elf", launch, &error));
  CHECK(launch.qemu_elf == "/x/fw.elf");
  CHECK_FALSE(launch.pty);
  CHECK(launch.command.front() == "qemu-system-arm");
  CHECK_FALSE(launch_from_spec("qemu:", launch, &error));
  CHECK_FALSE(launch_from_spec("  ", launch, &error));
}

TEST_CASE("firmware regression: commands compared channel by channel") {
  CommandComparison c(two_thrusters(), 0.01);
  REQUIRE(c.channels().size() == 2);  // the sensor has no channel
  c.compare(0, {thruster(2, 0.5f), thruster(3, 0.5f)}, {thruster(2, 0.5f), thruster(3, 0.5f)});
  c.compare(1, {thruster(2, 0.5f), thruster(3, 0.5f)}, {thruster(2, 0.505f), thruster(3, 0.5f)});  // within
  CHECK_FALSE(c.diverged());
  c.compare(2, {thruster(2, 0.5f), thruster(3, 0.5f)}, {thruster(2, 0.6f), thruster(3, 0.5f)});
  c.compare(3, {thruster(2, 0.5f), thruster(3, 0.5f)}, {thruster(2, 0.3f)});  // right missing
  c.recorded_missing();
  REQUIRE(c.diverged());
  CHECK(*c.first_divergent_step() == 2);
  CHECK(c.steps_compared() == 4);
  const ChannelComparison& left = c.channels()[0];
  CHECK(left.name == "auv.hull.left");
  CHECK(left.compared == 4);
  CHECK(left.beyond_tolerance == 2);
  CHECK(*left.first_divergent_step == 2);
  CHECK(left.first_recorded == doctest::Approx(0.5));
  CHECK(left.first_new == doctest::Approx(0.6));
  CHECK(left.max_abs_diff == doctest::Approx(0.2));
  CHECK(left.max_abs_diff_step == 3);
  CHECK(left.rms_diff() == doctest::Approx(std::sqrt((0.005 * 0.005 + 0.1 * 0.1 + 0.2 * 0.2) / 4)).epsilon(1e-4));
  const ChannelComparison& right = c.channels()[1];
  CHECK(right.missing == 1);
  CHECK(*right.first_divergent_step == 3);
  CHECK(std::isnan(right.first_new));
  const nlohmann::json j = c.to_json();
  CHECK(j["steps_not_compared"]["recorded_firmware_missed"] == 1);
  CHECK(j["channels"][1]["first_new"].is_null());
  c.new_failed(7, "exited");
  CHECK(*c.first_divergent_step() == 2);
  CHECK(c.to_json()["new_firmware_failure"]["step"] == 7);
}

TEST_CASE("firmware regression: tether replay --verify passes on a firmware-over-pty recording") {
  // the default scenario as it is (policy safe): misses, if the machine was busy, replay too
  const std::string rec = record(TETHER_SOURCE_DIR + "/config/scenarios/default.yaml", "verify");
  const auto r = sh(tether_bin + " replay " + rec + " --verify --quiet", true);
  CHECK_MESSAGE(r.exit_code == 0, r.out);
  CHECK(contains(
      r.out, "verify: all " + std::to_string(recorded_steps) + " replayed states are bit-identical to the recording"));
}

TEST_CASE("firmware regression: the recorded firmware, replayed in the loop, reproduces every command") {
  const auto r = sh(tether_bin + " replay " + firmware_recording() + " --json --quiet --firmware firmware=" + host_fw);
  REQUIRE_MESSAGE(r.exit_code == 0, r.out);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["identical"] == true);  // open loop: the world followed the recording
  CHECK(j["complete"] == true);
  REQUIRE(j["firmware_regression"].size() == 1);
  const auto& reg = j["firmware_regression"][0];
  CHECK(reg["endpoint"] == "firmware");
  CHECK(reg["mode"] == "open loop");
  CHECK(reg["diverged"] == false);
  CHECK(reg["first_divergent_step"].is_null());
  CHECK(reg["steps_compared"] == recorded_steps);  // policy block: the recorded firmware answered every step
  CHECK(reg["new_firmware"].get<std::string>().rfind("depth_heading_hold, build 0x", 0) == 0);
  REQUIRE(reg["channels"].size() == 4);
  for (const auto& ch : reg["channels"]) {
    CHECK(ch["compared"].get<int>() > 0);
    CHECK(ch["max_abs_diff"] == 0.0);
    CHECK(ch["beyond_tolerance"] == 0);
  }
}

TEST_CASE("firmware regression: a changed depth gain is reported with its first divergent step") {
  const std::string cmd = tether_bin + " replay " + firmware_recording() + " --quiet --firmware firmware=" + variant_fw;
  const auto r = sh(cmd + " --json");
  REQUIRE_MESSAGE(r.exit_code == 1, r.out);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["identical"] == true);  // the commands are only compared: the world still follows the recording
  const auto& reg = j["firmware_regression"][0];
  CHECK(reg["diverged"] == true);
  REQUIRE(reg["first_divergent_step"].is_number());
  const auto first = reg["first_divergent_step"].get<std::uint64_t>();
  CHECK(first > 0);  // the first step has no rate yet: both laws command the same
  CHECK(first < recorded_steps);
  for (const auto& ch : reg["channels"]) {
    const std::string name = ch["name"];
    if (contains(name, "thruster_v")) {
      // the depth loop drives both vertical thrusters with the same command
      CHECK(ch["first_divergent_step"] == first);
      CHECK(ch["beyond_tolerance"].get<int>() > 0);
      CHECK(ch["max_abs_diff"].get<double>() > 1e-3);
      CHECK(ch["rms_diff"].get<double>() > 0);
      CHECK(ch["first_recorded"] != ch["first_new"]);
    } else {
      // the heading loop did not change, and gets the recorded compass readings
      CHECK(ch["first_divergent_step"].is_null());
      CHECK(ch["max_abs_diff"] == 0.0);
    }
  }
  // the same, for people
  const auto text = sh(cmd);
  CHECK(text.exit_code == 1);
  CHECK(contains(text.out, "firmware regression (open loop): endpoint \"firmware\""));
  CHECK(contains(text.out,
                 "result: DIVERGED, first at step " + std::to_string(first) + "; auv.hull.thruster_vfront recorded "));
  CHECK(contains(text.out, "auv.hull.thruster_left"));
}

TEST_CASE("firmware regression: the Cortex-M3 build under QEMU commands exactly what the host build did") {
  if (!adapters::test::have_tool("arm-none-eabi-gcc") || !adapters::test::have_tool("qemu-system-arm")) {
    MESSAGE("arm-none-eabi-gcc or qemu-system-arm not installed: QEMU regression test skipped");
    return;
  }
  const std::string elf = adapters::test::scratch_firmware("cortex_m3", "cortex_m3/depth_heading_hold.elf");
  const auto r = sh(tether_bin + " replay " + firmware_recording() + " --json --quiet --firmware firmware=qemu:" + elf);
  REQUIRE_MESSAGE(r.exit_code == 0, r.out);
  const auto reg = nlohmann::json::parse(r.out)["firmware_regression"][0];
  CHECK(reg["steps_compared"] == recorded_steps);
  CHECK(reg["diverged"] == false);
  // the same C source, IEEE-754 single precision on both (SSE on the host, libgcc soft
  // float on the M3), each operation correctly rounded: not one bit differs
  for (const auto& ch : reg["channels"]) CHECK(ch["max_abs_diff"] == 0.0);
}

TEST_CASE("firmware regression: closed loop, the new firmware drives the world") {
  SUBCASE("the same firmware lands on the recorded final state") {
    const auto rec = sh(tether_bin + " replay " + firmware_recording() + " --json --quiet");
    REQUIRE(rec.exit_code == 0);
    const auto r = sh(tether_bin + " replay " + firmware_recording() +
                      " --json --quiet --closed-loop --firmware firmware=" + host_fw);
    REQUIRE_MESSAGE(r.exit_code == 0, r.out);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["firmware_regression"][0]["mode"] == "closed loop");
    CHECK(j["firmware_regression"][0]["diverged"] == false);
    CHECK(j["final_state_hash"] == nlohmann::json::parse(rec.out)["final_state_hash"]);
    // the expectations judged again: the plain replay and the new build agree with the recording
    for (const auto& out : {nlohmann::json::parse(rec.out), j}) {
      REQUIRE(out.contains("expectations"));
      CHECK(out["expectations"]["verdict"] == "pass");
      CHECK(out["expectations"]["agree_with_recording"] == true);
      CHECK(out["expectations"]["expectations"].size() == 6);
    }
  }
  SUBCASE("a build whose depth gain has the wrong sign fails the dive's expectation, and says it differs") {
    const std::string broken = TETHER_BINARY_DIR + "/firmware/host/depth_heading_hold_broken";
    const auto r =
        sh(tether_bin + " replay " + firmware_recording() + " --quiet --closed-loop --firmware firmware=" + broken);
    CHECK_MESSAGE(r.exit_code == 1, r.out);  // its commands diverge
    CHECK_MESSAGE(contains(r.out, "on the new build's run; differ from the recording:"), r.out);
    CHECK_MESSAGE(contains(r.out, "\"diving by 4 s\" PASS then, FAIL now"), r.out);
  }
  SUBCASE("the changed gain changes the dive") {
    const auto r = sh(tether_bin + " replay " + firmware_recording() +
                      " --json --quiet --closed-loop --firmware firmware=" + variant_fw);
    REQUIRE_MESSAGE(r.exit_code == 1, r.out);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["firmware_regression"][0]["diverged"] == true);
    CHECK_FALSE(j.contains("identical"));  // nothing to verify in closed loop
    CHECK(j["complete"] == true);
  }
}

TEST_CASE("firmware regression: new firmware that dies mid-run is reported with the step") {
  // the scriptable stand-in (commands (k % 1000) / 1000, so it diverges at once) exits at step 50
  const auto r = sh(tether_bin + " replay " + firmware_recording() + " --json --quiet --firmware 'firmware=python3 " +
                    adapters::test::fake_firmware() + " --exit-at 50 --status 3'");
  REQUIRE_MESSAGE(r.exit_code == 1, r.out);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["complete"] == true);  // open loop: the recording is replayed to its end regardless
  const auto& reg = j["firmware_regression"][0];
  CHECK(reg["new_firmware_failure"]["step"] == 50);
  CHECK(contains(reg["new_firmware_failure"]["reason"].get<std::string>(), "exited with status 3"));
  CHECK(reg["steps_compared"] == 50);
  CHECK(reg["steps_not_compared"]["after_new_firmware_failed"] == recorded_steps - 50);
  CHECK(reg["first_divergent_step"] == 0);
}

TEST_CASE("firmware regression: bad input is refused with a message and exit 2 or 3") {
  const std::string rec = firmware_recording();
  SUBCASE("a spec without =") {
    const auto r = sh(tether_bin + " replay " + rec + " --firmware " + host_fw, true);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.out, "expected ENDPOINT=LAUNCH"));
  }
  SUBCASE("an endpoint the recording does not have") {
    const auto r = sh(tether_bin + " replay " + rec + " --firmware fw=" + host_fw, true);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.out, "has no endpoint \"fw\" (its endpoints: firmware)"));
  }
  SUBCASE("--closed-loop without --firmware, --from-step with it") {
    CHECK(sh(tether_bin + " replay " + rec + " --closed-loop").exit_code == 2);
    const auto r = sh(tether_bin + " replay " + rec + " --from-step 100 --firmware firmware=" + host_fw, true);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.out, "new firmware starts from reset"));
  }
  SUBCASE("a firmware that does not start") {
    const auto r = sh(tether_bin + " replay " + rec + " --quiet --firmware firmware=/nonexistent/firmware", true);
    CHECK(r.exit_code == 3);
    CHECK(contains(r.out, "endpoint \"firmware\" (serial) could not start"));
  }
  SUBCASE("a QEMU image that does not exist") {
    const auto r = sh(tether_bin + " replay " + rec + " --quiet --firmware firmware=qemu:/nonexistent/fw.elf", true);
    CHECK(r.exit_code == 3);
    CHECK(contains(r.out, "firmware image /nonexistent/fw.elf not found"));
  }
  SUBCASE("an endpoint that is not a serial one") {
    const std::string dir = scratch("inproc");
    REQUIRE(sh(tether_bin + " run " + TETHER_SOURCE_DIR +
               "/config/scenarios/in_process_depth_hold.yaml --rtf 0 "
               "--steps 20 --quiet --out " +
               dir)
                .exit_code == 0);
    const auto r = sh(tether_bin + " replay " + dir + "/recording.mcap --firmware controller=" + host_fw, true);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.out, "endpoint \"controller\" is a in_process endpoint"));
    std::filesystem::remove_all(dir);
  }
}
