// SPDX-License-Identifier: Apache-2.0
// `launch:` of the ardupilot_json endpoint: the program is started once the port is bound,
// with {port} and {instance} in its command line; its end before the first packet, or in
// the middle of a run, is a clear error with its last output; a missing program is found
// by `tether check`. The program here is a small Python stand-in for ArduPilot
// (tests/adapters/ardupilot/ardupilot_fake_sitl.py). Loopback only; every wait bounded.
#include <doctest/doctest.h>

#include <atomic>
#include <string>

#include <nlohmann/json.hpp>

#include "test_paths.hpp"
#include "tether/ardupilot/ardupilot_endpoint.hpp"
#include "tether/endpoints/endpoint_factory.hpp"
#include "tether/process/launch_check.hpp"
#include "tether/loop/session.hpp"
#include "ardupilot_test_util.hpp"

using namespace tether;
using namespace tether::runtime;

namespace {

const std::string fake_sitl = TETHER_SOURCE_DIR + "/tests/adapters/ardupilot/ardupilot_fake_sitl.py";

std::string launch_scenario(const std::string& command, int steps) {
  return ardupilot_test::one_thruster_world("ardupilot_launch", steps) + R"(  - name: ap
    type: ardupilot_json
    vehicle: auv
    deadline_ms: 5000
    port: 0
    connect_timeout_ms: 20000
    channels: [{channel: 1, actuator: thruster}]
    launch:
      command: )" +
         command + "\n";
}

}  // namespace

TEST_CASE("ardupilot launch: the program gets the bound port, flies the run and is stopped at its end") {
  const Scenario sc = parse_scenario(
      launch_scenario("[python3, \"" + fake_sitl + "\", \"{port}\", \"1000000\", \"{instance}\"]", 60), "ap.yaml");
  Session session(sc, adapters::make_endpoints(sc));
  std::atomic<bool> stop{false};
  REQUIRE(session.run(stop) == Outcome::completed);
  const auto s = session.summary();
  const auto& e = s["endpoints"][0];
  CHECK(e["replies"] == 60);
  CHECK(e["ardupilot"]["frames"] == 60);
  const std::string command = e["ardupilot"]["program"]["command"];
  CHECK(command.find("{port}") == std::string::npos);
  CHECK(command.find(" 0") != std::string::npos);  // {instance}
  // it ran until the end and was stopped then (SIGTERM: python ends by the signal)
  CHECK(std::string(e["ardupilot"]["program"]["ended"]).find("signal 15") != std::string::npos);
}

TEST_CASE("ardupilot launch: a program that ends first is a clear error with its output") {
  SUBCASE("before its first packet") {
    const Scenario sc = parse_scenario(launch_scenario("[python3, \"" + fake_sitl + "\", \"--fail\"]", 10), "ap.yaml");
    adapters::ArduPilotJsonEndpoint ep(sc.endpoints[0], sc);
    CHECK_THROWS_WITH_AS(ep.start(sc.model, sc.initial),
                         doctest::Contains("exited with status 3 before its first servo packet; its last output:\n  "
                                           "| fake sitl: no such frame 'bluerov9'"),
                         std::runtime_error);
    ep.stop();
  }
  SUBCASE("in the middle of the run: the endpoint faults, saying so") {
    const Scenario sc =
        parse_scenario(launch_scenario("[python3, \"" + fake_sitl + "\", \"{port}\", \"20\"]", 500), "ap.yaml");
    Session session(sc, adapters::make_endpoints(sc));
    std::atomic<bool> stop{false};
    CHECK(session.run(stop) != Outcome::completed);
    const auto s = session.summary();
    const auto& e = s["endpoints"][0];
    INFO(s.dump(2));
    CHECK(e["ardupilot"]["frames"] >= 19);
    CHECK(e["ardupilot"]["frames"] <= 21);
    CHECK(s.dump().find("the autopilot program exited with status 0 at step") != std::string::npos);
    CHECK(s.dump().find("fake sitl: 20 frames") != std::string::npos);
  }
}

TEST_CASE("ardupilot launch: a missing program is named before anything starts") {
  const Scenario sc = parse_scenario(launch_scenario("[./no/such/ardusub, --model, JSON]", 10), "ap.yaml");
  const auto endpoints = adapters::make_endpoints(sc);
  const auto problems = adapters::launch_problems(endpoints);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("endpoint \"ap\": launch: the program") != std::string::npos);
  CHECK(problems[0].find("no/such/ardusub does not exist") != std::string::npos);
}
