// SPDX-License-Identifier: Apache-2.0
// Link faults (docs/faults.md) on a real serial line: the host build of depth_heading_hold
// on a pseudo-terminal, with the runtime dropping, corrupting, duplicating, delaying and
// reordering the bytes that cross it. What each fault must cost is known exactly: a step
// whose SENSORS never arrives whole is a miss (policy hold), and nothing else is.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "serial_test_util.hpp"

using namespace tether;
using namespace tether::adapters;
using namespace tether::adapters::test;
using runtime::Outcome;

namespace {

// the host firmware under policy hold; a deadline long enough that only a fault makes a miss
std::string faulted(const std::string& faults, int steps = 120) {
  return auv_scenario("  - name: fw\n    type: serial\n    vehicle: auv\n    launch: {command: ['" + host_firmware() +
                          "']}\n    deadline_ms: 300\n    timeout_policy: hold\n",
                      steps) +
         "faults:\n" + faults;
}

struct Result {
  runtime::EndpointCounters counters;  // the session's
  runtime::LinkCounts link;            // the endpoint's
  nlohmann::json summary;
};

Result run(const std::string& text) {
  SessionRun run(text);
  const Outcome outcome = run.run();
  CHECK(outcome == Outcome::completed);
  Result r;
  r.counters = run.counters();
  r.link = run.endpoint().link_counts();
  r.summary = run.session->summary();
  return r;
}

}  // namespace

TEST_CASE("link faults: no fault, no miss (the baseline of the cases below)") {
  const Result r = run(faulted("  - {endpoint: fw, kind: drop, at_step: 1000000}\n"));
  CHECK(r.counters.misses == 0);
  CHECK(r.counters.replies == 120);
  CHECK(r.summary["endpoints"][0]["serial"].count("link_faults") == 0);
}

TEST_CASE("link faults: drop, either way, for 5 steps is 5 misses, and the firmware carries on") {
  for (const char* dir : {"out", "in", "both"}) {
    CAPTURE(dir);
    const Result r = run(faulted("  - {endpoint: fw, kind: drop, direction: " + std::string(dir) +
                                 ", at_step: 40, duration_steps: 5}\n"));
    CHECK(r.counters.misses == 5);
    CHECK(r.counters.replies == 115);
    const auto& lf = r.summary["endpoints"][0]["serial"]["link_faults"];
    if (std::string(dir) != "in") CHECK(lf["out"]["dropped"].get<int>() >= 5);  // SENSORS and its re-sends
    // with both ways dropped the firmware hears nothing, so has nothing to answer
    if (std::string(dir) == "in") CHECK(lf["in"]["dropped"].get<int>() >= 5);
    const auto& act = r.summary["faults"][0]["activations"];
    REQUIRE(act.size() == 1);
    CHECK(act[0]["start_step"] == 40);
    CHECK(act[0]["end_step"] == 45);
  }
}

TEST_CASE("link faults: a disconnect of 0.1 s silences 10 steps") {
  const Result r = run(faulted("  - {endpoint: fw, kind: disconnect, at_s: 0.5, duration_s: 0.1}\n"));
  CHECK(r.counters.misses == 10);
  CHECK(r.counters.replies == 110);
}

TEST_CASE("link faults: corrupted SENSORS frames fail the firmware's CRC check: misses, then lock-step resumes") {
  const Result r =
      run(faulted("  - {endpoint: fw, kind: corrupt, direction: out, bits: 3, at_step: 30, duration_steps: 3}\n"));
  // a frame with bits flipped is refused by the firmware (CRC-16) and never answered; the
  // re-sends of the step are corrupted too while the fault lasts
  CHECK(r.counters.misses == 3);
  CHECK(r.counters.replies == 117);
  CHECK(r.summary["endpoints"][0]["serial"]["link_faults"]["out"]["corrupted"].get<int>() >= 3);
}

TEST_CASE("link faults: corrupted replies are dropped by the runtime's decoder and counted") {
  const Result r = run(faulted("  - {endpoint: fw, kind: corrupt, direction: in, at_step: 30, duration_steps: 2}\n"));
  CHECK(r.counters.misses == 2);
  CHECK(r.link.corrupt >= 2);
}

TEST_CASE("link faults: a duplicated SENSORS is answered twice, and the second answer is counted, not applied") {
  const Result r =
      run(faulted("  - {endpoint: fw, kind: duplicate, direction: out, at_step: 30, duration_steps: 4}\n"));
  CHECK(r.counters.misses == 0);
  CHECK(r.counters.replies == 120);
  CHECK(r.link.stale >= 4);
}

TEST_CASE("link faults: a reply delayed by 3 steps misses its step and arrives stale") {
  const Result r = run(faulted("  - {endpoint: fw, kind: delay, direction: in, steps: 3, at_step: 30}\n"));
  CHECK(r.counters.misses == 1);
  CHECK(r.counters.replies == 119);
  CHECK(r.link.stale >= 1);
  CHECK(r.summary["endpoints"][0]["serial"]["link_faults"]["in"]["delayed"].get<int>() >= 1);
}

TEST_CASE("link faults: a reordered SENSORS crosses after the next step's: a miss, then the old one is stale") {
  const Result r = run(faulted("  - {endpoint: fw, kind: reorder, direction: out, at_step: 30}\n"));
  CHECK(r.counters.misses == 1);
  CHECK(r.counters.replies == 119);
  CHECK(r.summary["endpoints"][0]["serial"]["link_faults"]["out"]["reordered"].get<int>() >= 1);
}

TEST_CASE("link faults: a probability per step from the seed: the same seed, the same faulted steps") {
  const std::string text = faulted("  - {endpoint: fw, kind: drop, probability: 0.05}\n", 400);
  const Result a = run(text), b = run(text);
  CHECK(a.summary["faults"][0]["activations"] == b.summary["faults"][0]["activations"]);
  const auto n = a.summary["faults"][0]["activations"].size();
  CHECK(n >= 8);  // 20 expected
  CHECK(n <= 35);
  CHECK(a.counters.misses == n);
}
