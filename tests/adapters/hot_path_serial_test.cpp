// SPDX-License-Identifier: Apache-2.0
// The hot path with firmware in the loop: the host build of depth_heading_hold on a
// pseudo-terminal, 10,000 counted steps after a 300-step warm-up, no heap allocation on
// the loop thread (the endpoint's reader thread is not the step).
#include "../alloc_count.hpp"

#include <doctest/doctest.h>

#include "serial_test_util.hpp"

using namespace tether::adapters;
using namespace tether::adapters::test;
using tether::runtime::Outcome;
using tether::runtime::Session;
using tether::runtime::SessionOptions;
using tether::runtime::WorldState;

namespace {

const char* session_phase(const void* session) {
  const char* p = static_cast<const Session*>(session)->phase();
  return p ? p : "between steps";
}

}  // namespace

TEST_CASE("serial: a session with the host firmware on a pty allocates nothing per step after warm-up") {
  constexpr std::uint64_t warm_up = 300, counted = 10'000;
  tether::test::AllocCount count;
  const Session* session = nullptr;
  // a firmware LOG line is an event, not a step: its text is one allocation (the example
  // firmware logs once, "target depth reached", about 3 s in: near the end of the warm-up)
  std::uint64_t logs_before = 0, logs_counted = 0;
  SessionRun* run_ptr = nullptr;
  SessionOptions options;
  options.after_step = [&](const WorldState& s) {
    if (s.step == warm_up) {
      logs_before = run_ptr->endpoint().serial_counters().logs;
      count.phase_of = &session_phase;
      count.context = session;
      tether::test::arm(count);
    } else if (s.step == warm_up + counted) {
      tether::test::disarm();
      logs_counted = run_ptr->endpoint().serial_counters().logs - logs_before;
    }
    return true;
  };
  SessionRun run(auv_scenario("  - name: fw\n    type: serial\n    vehicle: auv\n    launch: {command: ['" +
                                  host_firmware() + "']}\n    deadline_ms: 2000\n    timeout_policy: block\n",
                              static_cast<int>(warm_up + counted + 5)),
                 options);
  session = run.session.get();
  run_ptr = &run;
  REQUIRE(run.run() == Outcome::completed);
  tether::test::disarm();
  INFO(count.describe());
  // nothing allocates in a step but a LOG line's text, once per line
  CHECK(logs_counted <= 1);
  CHECK(count.total <= logs_counted);
  CHECK(run.endpoint().counters.replies + run.endpoint().counters.late == warm_up + counted + 5);
}
