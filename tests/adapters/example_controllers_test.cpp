// SPDX-License-Identifier: Apache-2.0
// The example in-process controller (examples/controllers/) through the controller
// registry, as the tether CLI registers it: the in-process depth-hold scenario holds its goal.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>

#include <nlohmann/json.hpp>

#include "example_controllers.hpp"
#include "tether/adapters/endpoint_factory.hpp"
#include "tether/loop/in_process.hpp"
#include "tether/loop/session.hpp"

using namespace tether::runtime;

TEST_CASE("example controllers: depth_heading_hold is registered once and built by name") {
  CHECK(tether::examples::register_example_controllers());
  CHECK(tether::examples::register_example_controllers());  // a second call changes nothing
  const auto names = controllers().names();
  CHECK(std::count(names.begin(), names.end(), "depth_heading_hold") == 1);
  CHECK(make_controller("depth_heading_hold") != nullptr);
}

TEST_CASE("the in-process depth_heading_hold scenario holds its goal depth and heading and runs deterministically") {
  tether::examples::register_example_controllers();
  auto run = [](std::uint64_t steps) {
    Scenario sc = load_scenario(TETHER_SOURCE_DIR "/config/scenarios/in_process_depth_hold.yaml");
    SessionOptions o;
    o.steps = steps;
    o.real_time_factor = 0;
    Session s(sc, tether::adapters::make_endpoints(sc), o);
    std::atomic<bool> stop{false};
    REQUIRE(s.run(stop) == Outcome::completed);
    return s.summary();
  };
  const auto a = run(3000);
  const auto b = run(3000);
  CHECK(a["state_hash"] == b["state_hash"]);
  REQUIRE(a["goals"].size() == 1);
  CHECK(std::abs(a["goals"][0]["depth_error_m"].get<double>()) < 0.05);
  CHECK(std::abs(a["goals"][0]["heading_error_deg"].get<double>()) < 2.0);
  CHECK(a["steps"] == 3000);
}
