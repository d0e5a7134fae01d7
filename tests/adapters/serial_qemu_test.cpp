// SPDX-License-Identifier: Apache-2.0
// Firmware in emulation: the Cortex-M3 build of depth_heading_hold runs under
// qemu-system-arm (lm3s6965evb, UART0 on a pty QEMU announces) and dives the AUV to 2 m in
// lock-step with the runtime. Skipped, with a message, without the ARM tools.
#include <doctest/doctest.h>

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
  CHECK(ep.counters.replies + ep.counters.late == 2000);
  CHECK(ep.counters.faults == 0);
  CHECK(ep.serial_counters().logs >= 1);  // "depth_heading_hold: target depth reached"
  CHECK(max_depth_m > 1.9);
  CHECK(run.depth_m() == doctest::Approx(2.0).epsilon(0.1));
  const nlohmann::json s = run.session->summary()["endpoints"][0]["serial"];
  CHECK(s["opened_with"] == "termios");  // QEMU's pty, found on its output
  CHECK(s["line"].get<std::string>().rfind("/dev/pts/", 0) == 0);
}
