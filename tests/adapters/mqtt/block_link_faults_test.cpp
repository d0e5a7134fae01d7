// SPDX-License-Identifier: Apache-2.0
// An MQTT endpoint under timeout_policy block with a link fault: the vehicle answers each
// projected message once and the session does not send its step again, so a step the fault
// falls on waited for ever (tried: drop, delay, corrupt, reorder and disconnect each stopped
// tank_trial.yaml at its first faulted step until killed). Refused at check and run with a
// positioned error at the fault, as for serial; duplicate lets messages through and is accepted.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "cli_test_util.hpp"
#include "test_paths.hpp"

namespace {

using tether::cli_test::run;
using tether::cli_test::temp_dir;
using tether::cli_test::tether_fw;

const std::string scenario = TETHER_SOURCE_DIR + "/config/scenarios/tank_trial.yaml";

std::string with(const std::string& policy, const std::string& fault) {
  return scenario + " --set endpoints.tank.timeout_policy=" + policy + " --set 'faults=[{endpoint: tank, " + fault +
         ", at_s: 1, duration_steps: 5}]'";
}

}  // namespace

TEST_CASE("mqtt: a link fault under timeout_policy block is refused (it would stall), duplicate and hold are not") {
  const std::string dir = temp_dir("mqtt_block_faults");
  for (const std::string kind :
       {"kind: drop", "kind: delay, steps: 2", "kind: corrupt", "kind: reorder", "kind: disconnect"}) {
    CAPTURE(kind);
    const auto check = run(tether_fw + " check " + with("block", kind));
    CHECK(check.exit_code == 2);
    CHECK(check.out.find("faults[0].kind: a `") != std::string::npos);
    CHECK(check.out.find("link fault on endpoint \"tank\" (mqtt) under its timeout_policy block would stall the "
                         "session") != std::string::npos);
    // `run` refuses it before it connects to anything (the broker in the file is not there)
    const auto r = run("timeout 60 env TETHER_MQTT_BROKER=tcp://127.0.0.1:9 " + tether_fw + " run " +
                       with("block", kind) + " --rtf 0 --steps 300 -q --out " + dir + "/refused");
    CHECK(r.exit_code == 2);
    CHECK(r.out.find("would stall the session") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir + "/refused/summary.json"));
  }
  // duplicate lets every message through; the same drop under hold makes its steps misses
  const auto dup = run(tether_fw + " check " + with("block", "kind: duplicate"));
  CAPTURE(dup.out);
  CHECK(dup.exit_code == 0);
  const auto hold = run(tether_fw + " check " + with("hold", "kind: drop"));
  CAPTURE(hold.out);
  CHECK(hold.exit_code == 0);
  std::filesystem::remove_all(dir);
}
