// SPDX-License-Identifier: Apache-2.0
// Every example scenario (config/scenarios/*.yaml) as a user runs it, its recording checked
// the way Foxglove opens it (tests/mcap_validate/validate.mjs --foxglove): every channel in
// an encoding Foxglove decodes, every protobuf message decoded by protobufjs from the file's
// own descriptor, every JSON message valid against its schema, every foxglove.* schema the
// published one of @foxglove/schemas. A new example scenario is checked without a new test.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "mosquitto_util.hpp"
#include "serial_test_util.hpp"
#include "test_paths.hpp"

namespace {

namespace fs = std::filesystem;
using tether::adapters::test::binary_dir;
using tether::adapters::test::have_tool;
using tether::adapters::test::scratch_firmware;
using tether::adapters::test::source_dir;

bool node_available() {
  if (std::getenv("TETHER_SKIP_NODE_VALIDATION") != nullptr) return false;
  return have_tool("node") && have_tool("npm");
}

// a build folder laid out as the scenarios' launch lines expect (TETHER_BUILD_DIR): the host
// firmware and the stand-in vehicle of this build, the Cortex-M3 images if QEMU is here
std::string scenario_build_dir(const std::string& root, bool qemu) {
  const fs::path dir = fs::path(root) / "build";
  fs::create_directories(dir / "firmware" / "cortex_m3");
  fs::create_symlink(binary_dir + "/firmware/host", dir / "firmware" / "host");
  fs::create_symlink(binary_dir + "/tether-vehicle", dir / "tether-vehicle");
  fs::create_symlink(binary_dir + "/tether-ardupilot", dir / "tether-ardupilot");
  if (qemu)
    for (const char* elf : {"depth_heading_hold.elf", "wall_follow.elf"})
      fs::create_symlink(scratch_firmware("cortex_m3", std::string("cortex_m3/") + elf),
                         dir / "firmware" / "cortex_m3" / elf);
  return dir.string();
}

// the ArduPilot scenarios take ArduPilot's fixed ports (9002, 5760, + 10 per instance); here
// free ones, so that another test flying them at the same time does not collide
std::string free_ports(const std::string& scenario) {
  const char* endpoint = scenario == "ardusub_bluerov2" ? "ardusub"
                         : scenario == "ardurover_skid" ? "ardurover"
                                                        : nullptr;
  if (endpoint == nullptr) return {};
  const std::string e = std::string(" --set endpoints.") + endpoint;
  return e + ".port=0" + e + ".instance=0" + e + ".mavlink.address=tcp:127.0.0.1:0";
}

}  // namespace

TEST_CASE("every example scenario's recording opens in Foxglove without an error") {
  if (!node_available()) {
    MESSAGE("node/npm not found (or TETHER_SKIP_NODE_VALIDATION set): skipping the Foxglove check");
    return;
  }
  const bool qemu = have_tool("arm-none-eabi-gcc") && have_tool("qemu-system-arm");
  const std::string root =
      (fs::temp_directory_path() / ("tether_foxglove_examples_" + std::to_string(getpid()))).string();
  fs::remove_all(root);
  fs::create_directories(root);
  const std::string build = scenario_build_dir(root, qemu);
  tether::test::Mosquitto broker;

  std::vector<std::string> scenarios;
  for (const auto& e : fs::directory_iterator(source_dir + "/config/scenarios"))
    if (e.path().extension() == ".yaml") scenarios.push_back(e.path().stem().string());
  std::sort(scenarios.begin(), scenarios.end());
  REQUIRE(scenarios.size() >= 9);

  std::string files;
  std::vector<std::string> ran;
  for (const std::string& name : scenarios) {
    if (name.rfind("qemu_", 0) == 0 && !qemu) {
      MESSAGE("arm-none-eabi-gcc or qemu-system-arm not installed: " << name << " skipped");
      continue;
    }
    const std::string out = root + "/" + name;
    // a short run of each (300 steps): the channels and schemas are all there from the first
    // steps; the verdict of expectations about later times may fail (exit 6), not the file
    const auto r = tether::cli_test::run("TETHER_BUILD_DIR=" + build + " TETHER_MQTT_BROKER=" + broker.uri() +
                                         " TETHER_MQTT_SESSION=foxglove_" + name + " " + binary_dir + "/tether run " +
                                         source_dir + "/config/scenarios/" + name +
                                         ".yaml --rtf 0 --steps 300 --quiet" + free_ports(name) + " --out " + out);
    INFO(name << ": " << r.out);
    CHECK((r.exit_code == 0 || r.exit_code == 6));
    REQUIRE(fs::exists(out + "/recording.mcap"));
    files += " '" + out + "/recording.mcap'";
    ran.push_back(name);
  }

  const auto v = tether::cli_test::run("TETHER_BINARY_DIR=" + binary_dir + " bash " + source_dir +
                                       "/tests/mcap_validate/run.sh --foxglove" + files);
  INFO(v.out);
  CHECK(v.exit_code == 0);
  // one line per file; the topics a user plots are there by name
  std::istringstream lines(v.out);
  std::string line;
  std::set<std::string> ok;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] != '{') continue;
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.value("ok", false)) continue;
    const std::string file = j["file"];
    const std::string name = fs::path(file).parent_path().filename().string();
    ok.insert(name);
    const auto& topics = j["perTopic"];
    CHECK_MESSAGE(topics.contains("/tether/step"), name);
    if (name == "qemu_wall_follow") {
      // the PSD ranges the firmware saw
      CHECK(topics.contains("/devices/auv/hull/psd_front"));
      CHECK(topics.contains("/devices/auv/hull/psd_right"));
    }
    // every vehicle's state on its own topic (the AUV's, the rover's, the car's, a cable's)
    const std::string vehicle = name == "rover" || name == "rover_wall_follow" || name == "ardurover_skid" ? "rover"
                                : name == "car"                                                            ? name
                                : name == "ardusub_bluerov2"                                               ? "rov"
                                                                                                           : "auv";
    if (name == "ardusub_bluerov2") {
      // ArduSub's servo outputs, one channel per mapped motor
      CHECK(topics.contains("/devices/rov/frame/motor1"));
      CHECK(topics.contains("/devices/rov/frame/motor6"));
    }
    CHECK_MESSAGE(topics.contains("/vehicles/" + vehicle + "/state"), name);
    if (name == "rover") CHECK(topics.contains("/devices/rover/chassis/odometer_left"));  // wheel odometry
    if (name == "rover_wall_follow") {
      // the voltages the firmware set on the wheels' motors, and what its side beam saw
      CHECK(topics.contains("/devices/rover/chassis/motor_left"));
      CHECK(topics.contains("/devices/rover/chassis/psd_right"));
    }
    if (name == "tethered_rov") {
      CHECK(topics.contains("/vehicles/tether/state"));
      // what the load cells at the cable's two ends read
      CHECK(topics.contains("/devices/auv/hull/tether_load"));
      CHECK(topics.contains("/devices/tether/s0/winch_load"));
    }
    if (name == "default" || name == "qemu_depth_hold" || name == "in_process_depth_hold") {
      // the thruster commands, all together and each on its own topic
      CHECK_MESSAGE(topics.contains("/tether/actuators"), name);
      CHECK_MESSAGE(topics.contains("/devices/auv/hull/thruster_vfront"), name);
    }
    if (name == "default") CHECK(topics.contains("/endpoints/firmware"));
    if (name == "tank_trial") {
      // each feedback processor's figures, and the vehicle's endpoint
      CHECK(topics.contains("/feedback/model"));
      CHECK(topics.contains("/feedback/filter"));
      CHECK(topics.contains("/endpoints/tank"));
    }
  }
  for (const std::string& name : ran) CHECK_MESSAGE(ok.count(name) == 1, name << " failed the Foxglove check");
  fs::remove_all(root);
}
