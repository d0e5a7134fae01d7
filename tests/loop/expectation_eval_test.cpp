// SPDX-License-Identifier: Apache-2.0
// `expect:` evaluated by the session against a body whose motion is known exactly: a sphere
// coasting at 1 m/s along x with no forces, so x(t) = t.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "tether/loop/session.hpp"

using namespace tether::runtime;

namespace {

std::string coasting(const std::string& expect, int steps = 100) {
  return R"(name: coast
world: {gravity_m_s2: [0, 0, 0]}
vehicles:
  - name: auv
    bodies:
      - name: hull
        shape: {type: sphere, radius_m: 0.2}
        mass_kg: 10
        initial: {position_m: [0, 0, 0], velocity_m_s: [1, 0, 0]}
loop: {period_ms: 10, real_time_factor: 0, steps: )" +
         std::to_string(steps) + R"(}
expect:
)" + expect;
}

nlohmann::json run(const std::string& text, bool* passed = nullptr) {
  const Scenario sc = parse_scenario(text, "coast.yaml");
  Session session(sc, {});
  std::atomic<bool> stop{false};
  REQUIRE(session.run(stop) == Outcome::completed);
  if (passed) *passed = session.expectations_passed();
  const nlohmann::json s = session.summary();
  REQUIRE(s.contains("expectations"));
  return s;
}

}  // namespace

TEST_CASE("expect: each kind of `when` against x(t) = t") {
  bool passed = true;
  const nlohmann::json s = run(coasting(R"(  - {name: slow, value: auv.x_m, that: "< 0.555", when: always}
  - {value: auv.x_m, that: "within 0.02 of 1.0", when: at end}
  - {value: auv.speed_m_s, that: "> 0.9"}
  - {name: late, value: auv.x_m, that: "> 0.5", when: "eventually before 0.3 s"}
  - {value: auv.x_m, that: "> 0.5", when: "after 0.6 s"}
  - {value: auv.x_m, that: "between 0.099 and 0.205", when: "during [0.1 s, 0.2 s]"}
  - {value: auv.x_m, that: ">= 0.95", when: eventually}
  - {name: never, value: auv.x_m, that: "> 0", when: "after 5 s"}
)"),
                               &passed);
  CHECK_FALSE(passed);
  CHECK(s["verdict"] == "fail");
  const auto& e = s["expectations"];
  REQUIRE(e.size() == 8);
  // always x < 0.555: the state after step k is at t = (k + 1) 10 ms, x = t: fails at step 55
  CHECK(e[0]["name"] == "slow");
  CHECK(e[0]["verdict"] == "FAIL");
  CHECK(e[0]["first_failing_step"] == 55);
  CHECK(e[0]["first_failing_time_s"].get<double>() == doctest::Approx(0.56));
  CHECK(e[0]["worst"].get<double>() == doctest::Approx(1.0));  // the value furthest from < 0.555
  CHECK(e[1]["verdict"] == "PASS");
  CHECK(e[1]["worst"].get<double>() == doctest::Approx(1.0));
  CHECK(e[1]["evaluated_steps"] == 1);
  CHECK(e[2]["verdict"] == "PASS");
  CHECK(e[2]["evaluated_steps"] == 100);
  CHECK(e[3]["verdict"] == "FAIL");  // x reaches 0.5 only at 0.5 s
  CHECK(e[3]["first_failing_step"] == 30);
  CHECK(e[3]["worst"].get<double>() == doctest::Approx(0.3));  // the closest it came
  CHECK(e[4]["verdict"] == "PASS");
  CHECK(e[4]["evaluated_steps"] == 41);  // t = 0.60 .. 1.00
  CHECK(e[5]["verdict"] == "PASS");
  CHECK(e[5]["evaluated_steps"] == 11);
  CHECK(e[6]["verdict"] == "PASS");
  CHECK(e[7]["verdict"] == "SKIPPED");  // a 1 s run cannot judge "after 5 s"
  CHECK(e[7]["reason"].get<std::string>().find("before its window") != std::string::npos);
  CHECK(e[7]["name"] == "never");
  CHECK(e[2]["name"] == "auv.speed_m_s > 0.9 (always)");
}

TEST_CASE("expect: all passing gives verdict pass") {
  bool passed = false;
  const nlohmann::json s = run(coasting(R"(  - {value: auv.x_m, that: "<= 1.0000001"}
  - {value: auv.hull.vx_m_s, that: "within 1e-9 of 1"}
  - {value: auv.contacts, that: "== 0"}
  - {value: auv.x_m, that: "> 2", when: "eventually before 3 s"}
)"),
                               &passed);
  CHECK(passed);  // the last is skipped: the 1 s run ended before its deadline
  CHECK(s["expectations"][3]["verdict"] == "SKIPPED");
  CHECK(s["verdict"] == "pass");
}

TEST_CASE("expect: a run stopped before its first step judges nothing (all skipped, none passed)") {
  const Scenario sc = parse_scenario(coasting(R"(  - {value: auv.x_m, that: "< 5"}
  - {value: auv.x_m, that: "> -1", when: at end}
)"),
                                     "coast.yaml");
  Session session(sc, {});
  std::atomic<bool> stop{true};  // asked to stop before the first step
  REQUIRE(session.run(stop) == Outcome::stopped);
  const nlohmann::json s = session.summary();
  REQUIRE(s["expectations"].size() == 2);
  for (const auto& e : s["expectations"]) {
    CHECK(e["verdict"] == "SKIPPED");
    CHECK(e["reason"] == "the run ended before its first step");
  }
}

TEST_CASE("expect: a run shortened with --steps skips `at end` and an `eventually` not yet held, saying so") {
  const Scenario sc = parse_scenario(coasting(R"(  - {value: auv.x_m, that: "> 0.9", when: at end}
  - {value: auv.x_m, that: "> 0.9", when: eventually}
  - {value: auv.x_m, that: "> 0.05", when: eventually}
  - {value: auv.x_m, that: "< 0.5"}
)"),
                                     "coast.yaml");
  SessionOptions options;
  options.steps = 30;  // of the scenario's 100
  Session session(sc, {}, options);
  std::atomic<bool> stop{false};
  REQUIRE(session.run(stop) == Outcome::completed);
  const nlohmann::json e = session.summary()["expectations"];
  REQUIRE(e.size() == 4);
  // judged at the cut (x = 0.3) they would fail: the scenario's end is at x = 1
  CHECK(e[0]["verdict"] == "SKIPPED");
  CHECK(e[0]["reason"] == "run shortened (30 of 100 steps): judged only on the whole run");
  CHECK(e[1]["verdict"] == "SKIPPED");
  CHECK(e[2]["verdict"] == "PASS");  // it held already
  CHECK(e[3]["verdict"] == "PASS");  // always: judged on the steps that ran
  CHECK(session.expectations_passed());
  // the whole run judges them
  Session whole(sc, {});
  REQUIRE(whole.run(stop) == Outcome::completed);
  CHECK(whole.summary()["expectations"][0]["verdict"] == "PASS");
  CHECK(whole.summary()["expectations"][3]["verdict"] == "FAIL");
}

TEST_CASE("expect: bad entries are positioned config errors") {
  const std::string text = coasting(R"(  - {value: auv.x_m, that: "about 3"}
  - {value: rov.x_m, that: "< 1"}
  - {value: auv.x_m, that: "< 1", when: "later"}
  - {value: auv.hull.x_m, that: "within -1 of 2"}
  - {value: endpoints.fw.misses, that: "< 1"}
  - {value: auv.x_m, that: "matches \"depth reached\""}
  - {value: auv.x_m, that: "< 1", when: "during [3 s, 1 s]", colour: red}
  - 42
)");
  try {
    parse_scenario(text, "coast.yaml");
    FAIL("expected a ConfigError");
  } catch (const ConfigError& e) {
    std::string all;
    for (const auto& l : e.errors()) all += l + "\n";
    INFO(all);
    CHECK(all.find("coast.yaml:13:") != std::string::npos);  // the first entry's line
    CHECK(all.find("expect[0].that: expected a condition") != std::string::npos);
    CHECK(all.find("expect[1].value: expected no vehicle named \"rov\"") != std::string::npos);
    CHECK(all.find("expect[2].when: expected always, at end") != std::string::npos);
    CHECK(all.find("expect[3].that") != std::string::npos);
    CHECK(all.find("expect[4].value: expected no endpoint named \"fw\"") != std::string::npos);
    CHECK(all.find("expect[5].that: matches \"text\" is for endpoints.NAME.log") != std::string::npos);
    CHECK(all.find("expect[6].when") != std::string::npos);
    CHECK(all.find("expect[6].colour: unknown key") != std::string::npos);
    CHECK(all.find("expect[7]: expected an expectation") != std::string::npos);
  }
}
