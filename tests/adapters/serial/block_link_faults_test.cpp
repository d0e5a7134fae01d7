// SPDX-License-Identifier: Apache-2.0
// A serial endpoint under timeout_policy block with a link fault: the step would wait for a
// reply the fault never lets through (the re-sent SENSORS are faulted too), so the session
// hung at its first faulted step. Refused at check and run with a positioned error; the
// fault that lets messages through (duplicate) and the same fault under hold run.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "cli_test_util.hpp"
#include "test_paths.hpp"

namespace {

using tether::cli_test::run;
using tether::cli_test::temp_dir;
using tether::cli_test::tether_fw;

const std::string scenario = TETHER_SOURCE_DIR + "/config/scenarios/default.yaml";

std::string with(const std::string& policy, const std::string& fault) {
  return scenario + " --set endpoints.firmware.timeout_policy=" + policy + " --set 'faults=[{endpoint: firmware, " +
         fault + ", at_s: 1, duration_steps: 5}]'";
}

}  // namespace

TEST_CASE("serial: a link fault under timeout_policy block is refused (it would stall), duplicate runs") {
  const std::string dir = temp_dir("block_faults");
  for (const std::string kind :
       {"kind: drop", "kind: delay, steps: 2", "kind: corrupt", "kind: reorder", "kind: disconnect"}) {
    CAPTURE(kind);
    const auto check = run(tether_fw + " check " + with("block", kind));
    CHECK(check.exit_code == 2);
    CHECK(check.out.find("faults[0].kind: a `") != std::string::npos);
    CHECK(check.out.find("link fault on endpoint \"firmware\" (serial) under its timeout_policy block would stall the "
                         "session") != std::string::npos);
    // and `run` refuses it before anything starts (it hung at step 100 for ever)
    const auto r = run("timeout 60 env " + tether_fw + " run " + with("block", kind) +
                       " --rtf 0 --steps 300 -q --out " + dir + "/refused");
    CHECK(r.exit_code == 2);
    CHECK_FALSE(std::filesystem::exists(dir + "/refused/summary.json"));
  }
  // duplicate lets every message through: the session completes under block
  const auto dup = run("timeout 120 env " + tether_fw + " run " + with("block", "kind: duplicate") +
                       " --rtf 0 --steps 300 -q --out " + dir + "/dup");
  CAPTURE(dup.out);
  CHECK(dup.exit_code == 0);
  // the same drop under hold: its steps are misses, the session completes
  const auto hold = run("timeout 120 env " + tether_fw + " run " + with("hold", "kind: drop") +
                        " --rtf 0 --steps 300 -q --out " + dir + "/hold");
  CAPTURE(hold.out);
  CHECK(hold.exit_code == 0);
  std::filesystem::remove_all(dir);
}
