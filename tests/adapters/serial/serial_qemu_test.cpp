// SPDX-License-Identifier: Apache-2.0
// Firmware in emulation: the Cortex-M3 build of depth_heading_hold runs under
// qemu-system-arm (lm3s6965evb, UART0 on a pty QEMU announces) and dives the AUV to 2 m in
// lock-step with the runtime. Skipped, with a message, without the ARM tools.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "serial_test_util.hpp"

using namespace tether;
using namespace tether::adapters;
using namespace tether::adapters::test;

namespace {

// the ELF from scripts/build_firmware.sh cortex_m3, built once into the tests' scratch folder
// (later runs reuse it while it is newer than the firmware sources)
std::string cortex_m3_firmware() { return scratch_firmware("cortex_m3", "cortex_m3/depth_heading_hold.elf"); }

}  // namespace

TEST_CASE("serial: Cortex-M3 firmware under QEMU reaches the target depth in 2,000 lock-step exchanges") {
  if (!have_tool("arm-none-eabi-gcc") || !have_tool("qemu-system-arm")) {
    MESSAGE("arm-none-eabi-gcc or qemu-system-arm not installed: QEMU test skipped");
    return;
  }
  const std::string elf = cortex_m3_firmware();
  double max_depth_m = 0;
  SessionRun* self = nullptr;
  runtime::SessionOptions options;
  options.after_step = [&](const runtime::WorldState& s) {
    max_depth_m = std::max(max_depth_m, -s.bodies[0].position_m.z());
    return self != nullptr;
  };
  // 20 ms steps: 40 s of simulated time, enough for the dive and the overshoot to settle
  SessionRun run(auv_scenario("  - name: fw\n    type: serial\n    vehicle: auv\n    launch: {qemu: '" + elf +
                                  "'}\n    deadline_ms: 5000\n    timeout_policy: block\n",
                              2000, 20),
                 options);
  self = &run;
  REQUIRE(run.run() == runtime::Outcome::completed);
  SerialEndpoint& ep = run.endpoint();
  CHECK(ep.firmware_name() == "depth_heading_hold");
  CHECK(run.counters().replies + run.counters().late == 2000);
  CHECK(run.counters().faults == 0);
  CHECK(ep.serial_counters().logs >= 1);  // "depth_heading_hold: target depth reached"
  CHECK(max_depth_m > 1.9);
  CHECK(run.depth_m() == doctest::Approx(2.0).epsilon(0.1));
  const nlohmann::json s = run.session->summary()["endpoints"][0]["serial"];
  CHECK(s["opened_with"] == "termios");  // QEMU's pty, found on its output
  CHECK(s["line"].get<std::string>().rfind("/dev/pts/", 0) == 0);
}

namespace {

// config/scenarios/qemu_wall_follow.yaml with its launch replaced; returns the share of the
// second half of the run in which the hull kept 1 m +- 0.5 m from the nearest wall, and the
// closest it came to any wall
struct WallFollow {
  double within_share = 0;
  double closest_m = 1e9;
  std::uint64_t replies = 0;
};

WallFollow run_wall_follow(const std::string& launch) {
  std::ifstream in(source_dir + "/config/scenarios/qemu_wall_follow.yaml");
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  const std::size_t at = text.find("    launch:\n");
  REQUIRE(at != std::string::npos);
  const std::size_t end = text.find("    deadline_ms:", at);
  text.replace(at, end - at, "    launch: " + launch + "\n");
  text.replace(text.find("deadline_ms: 15"), 15, "deadline_ms: 5000");  // lock-step, whatever the load
  text.replace(text.find("timeout_policy: hold"), 20, "timeout_policy: block");
  // unpaced: lock-step alone decides what the firmware sees (the scenario's pacing at 1 made
  // this test wait two minutes doing nothing)
  text.replace(text.find("real_time_factor: 1.0"), 21, "real_time_factor: 0");
  WallFollow r;
  std::uint64_t second_half = 0, within = 0, k = 0;
  runtime::SessionOptions options;
  options.after_step = [&](const runtime::WorldState& s) {
    const runtime::Vec3& p = s.bodies[0].position_m;
    // the tank is 20 x 10 m around the origin
    const double wall_m = std::min({p.x() + 10, 10 - p.x(), p.y() + 5, 5 - p.y()});
    r.closest_m = std::min(r.closest_m, wall_m);
    if (++k > 1500) {
      ++second_half;
      within += std::abs(wall_m - 1.0) <= 0.5;
    }
    return true;
  };
  SessionRun run(text, options);
  REQUIRE(run.run() == runtime::Outcome::completed);
  r.replies = run.counters().replies + run.counters().late;
  CHECK(run.endpoint().firmware_name() == "wall_follow");
  r.within_share = second_half ? static_cast<double>(within) / static_cast<double>(second_half) : 0;
  return r;
}

}  // namespace

TEST_CASE(
    "serial: wall_follow keeps the wall at 1 m through its PSD beams, host build on a pty and Cortex-M3 build under "
    "QEMU") {
  const std::string host = binary_dir + "/firmware/host/wall_follow";
  REQUIRE(std::filesystem::exists(host));
  SUBCASE("host build") {
    const WallFollow r = run_wall_follow("{command: ['" + host + "']}");
    CHECK(r.replies == 3000);
    CHECK(r.closest_m > 0.3);     // never touched a wall
    CHECK(r.within_share > 0.7);  // followed it
  }
  SUBCASE("Cortex-M3 build under QEMU") {
    if (!have_tool("arm-none-eabi-gcc") || !have_tool("qemu-system-arm")) {
      MESSAGE("arm-none-eabi-gcc or qemu-system-arm not installed: QEMU case skipped");
      return;
    }
    const WallFollow r =
        run_wall_follow("{qemu: '" + scratch_firmware("cortex_m3", "cortex_m3/wall_follow.elf") + "'}");
    CHECK(r.replies == 3000);
    CHECK(r.closest_m > 0.3);
    CHECK(r.within_share > 0.7);
  }
}
