// SPDX-License-Identifier: Apache-2.0
// loop.realtime: the options parse with positioned errors, each is applied or refused with
// what to grant (never a failure), and the loop thread gets its scheduling and CPUs back.
#include <doctest/doctest.h>

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "tether/loop/in_process.hpp"
#include "tether/loop/session.hpp"

using namespace tether::runtime;

namespace {

std::string scenario_with(const std::string& realtime) {
  return R"(name: rt
world: {gravity_m_s2: [0, 0, -9.81], water: {density_kg_m3: 1000}}
vehicles:
  - name: auv
    bodies:
      - {name: hull, shape: {type: sphere, radius_m: 0.2}, mass_kg: 30}
loop:
  period_ms: 10
  steps: 5
  realtime: )" +
         realtime + "\n";
}

std::string error_of(const std::string& realtime) {
  try {
    (void)parse_scenario(scenario_with(realtime), "rt.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("loop.realtime: mistakes are positioned") {
  CHECK(error_of("{priority: 100}").find("rt.yaml:10:") != std::string::npos);
  CHECK(error_of("{priority: 100}").find("priority") != std::string::npos);
  CHECK(error_of("{cpu: -2}").find("cpu") != std::string::npos);
  CHECK(error_of("{lock_memory: maybe}").find("lock_memory") != std::string::npos);
  CHECK(error_of("{nice: 3}").find("nice: unknown key") != std::string::npos);
  CHECK(error_of("{spin_us: -1}").find("spin_us") != std::string::npos);
  CHECK(error_of("{spin_us: 200000}").find("spin_us") != std::string::npos);
  CHECK(error_of("{spin_us: 0.5}").find("spin_us") != std::string::npos);
  CHECK(parse_scenario(scenario_with("{spin_us: 150}"), "rt.yaml").loop.realtime.spin_us == 150);
  const Scenario sc = parse_scenario(scenario_with("{lock_memory: true, priority: 20, cpu: 1}"), "rt.yaml");
  CHECK(sc.loop.realtime.lock_memory);
  CHECK(sc.loop.realtime.priority == 20);
  CHECK(sc.loop.realtime.cpu == 1);
  CHECK(parse_scenario(scenario_with("{}"), "rt.yaml").loop.realtime.any() == false);
}

TEST_CASE("loop.realtime: each option applied or refused with what to grant, the thread restored afterwards") {
  // no lock_memory here: under AddressSanitizer mlockall would try to lock its shadow memory
  const Scenario sc = parse_scenario(scenario_with("{priority: 5, cpu: 1023}"), "rt.yaml");
  int policy_before = -1;
  sched_param param_before{};
  pthread_getschedparam(pthread_self(), &policy_before, &param_before);
  cpu_set_t cpus_before;
  pthread_getaffinity_np(pthread_self(), sizeof cpus_before, &cpus_before);

  SessionOptions o;
  o.real_time_factor = 0;
  Session s(sc, {}, o);
  std::atomic<bool> stop{false};
  CHECK(s.run(stop) == Outcome::completed);  // a refusal never fails the run
  const nlohmann::json rt = s.summary()["realtime"];
  CAPTURE(rt.dump());
  const std::string priority = rt["priority"];
  CHECK((priority == "applied" || (priority.rfind("refused: SCHED_FIFO at priority 5", 0) == 0 &&
                                   priority.find("CAP_SYS_NICE") != std::string::npos)));
  // CPU 1023 exists on no machine this runs on: refused, naming the CPUs there are
  const std::string cpu = rt["cpu"];
  CHECK(cpu.rfind("refused: CPU 1023", 0) == 0);
  CHECK(cpu.find("online") != std::string::npos);
  CHECK_FALSE(rt.contains("lock_memory"));

  int policy_after = -1;
  sched_param param_after{};
  pthread_getschedparam(pthread_self(), &policy_after, &param_after);
  CHECK(policy_after == policy_before);
  CHECK(param_after.sched_priority == param_before.sched_priority);
  cpu_set_t cpus_after;
  pthread_getaffinity_np(pthread_self(), sizeof cpus_after, &cpus_after);
  CHECK(CPU_EQUAL(&cpus_before, &cpus_after));
}

TEST_CASE(
    "loop.realtime.spin_us: a paced loop spins the end of its waits, the same steps, and unpaced it says it is "
    "unused") {
  auto run = [](const std::string& realtime, double rtf) {
    std::string text = scenario_with(realtime);
    text.replace(text.find("steps: 5"), 8, "steps: 20");
    const Scenario sc = parse_scenario(text, "rt.yaml");
    SessionOptions o;
    o.real_time_factor = rtf;
    Session s(sc, {}, o);
    std::atomic<bool> stop{false};
    CHECK(s.run(stop) == Outcome::completed);
    return s.summary();
  };
  const nlohmann::json plain = run("{}", 1);
  // 5 ms of every 10 ms wait spun: a wait whose sleep overshot by 5 ms does not spin, so
  // not every one need have, but a loop that never spins fails; a step that overran its
  // period (a loaded machine: seen once in a -j 4 run) has no wait, so up to 20 waits
  const nlohmann::json spun = run("{spin_us: 5000}", 1);
  const std::string status = spun["realtime"]["spin_us"];
  CAPTURE(status);
  unsigned spun_waits = 0, waits = 0;
  char rest[32] = {};
  REQUIRE(std::sscanf(status.c_str(), "applied: %u of %u waits ended %31s", &spun_waits, &waits, rest) == 3);
  CHECK(std::string(rest) == "spinning");
  CHECK(waits >= 1);
  CHECK(waits <= 20);
  CHECK(spun_waits >= 1);
  CHECK(spun_waits <= waits);
  CHECK_FALSE(plain.contains("realtime"));
  // pacing decides when, never what: the same state at the end
  CHECK(spun["state_hash"] == plain["state_hash"]);
  const nlohmann::json unpaced = run("{spin_us: 5000}", 0);
  CHECK(unpaced["realtime"]["spin_us"].get<std::string>().rfind("not used: nothing waited", 0) == 0);
}
