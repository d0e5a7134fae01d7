// SPDX-License-Identifier: Apache-2.0
// The example in-process controller (examples/controllers/) through the controller
// registry, as the tether CLI registers it: the in-process depth-hold scenario holds its goal.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>

#include <nlohmann/json.hpp>

#include "../../../examples/firmware/depth_heading_law.h"
#include "example_controllers.hpp"
#include "test_paths.hpp"
#include "tether/endpoints/endpoint_factory.hpp"
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
    Scenario sc = load_scenario(TETHER_SOURCE_DIR + "/config/scenarios/in_process_depth_hold.yaml");
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

namespace {

// a reproducible noise sample, uniform in [-1, 1]
float noise(std::uint32_t& x) {
  x = x * 1664525u + 1013904223u;
  return static_cast<float>(x >> 8) / 8388608.0f - 1.0f;
}

}  // namespace

TEST_CASE("the example control law is smooth: filtered derivatives, rate limits, no kick on a new target") {
  dhh_state_t law;
  dhh_init(&law);
  dhh_commands_t cmd{};
  std::uint32_t seed = 7;
  // 20 s at 10 ms: a depth sensor every step with 3 mm of noise, a 20 Hz compass with
  // 0.01 rad; the vehicle holds still at the targets (the law alone is under test)
  float last_vertical = 0, last_turn = 0;
  double worst_vertical_step = 0, worst_turn_step = 0, sum_sq_vertical_step = 0;
  int counted = 0;
  for (int k = 1; k <= 2000; ++k) {
    const std::uint64_t now_us = static_cast<std::uint64_t>(k) * 10000u;
    const bool compass = k % 5 == 0;
    dhh_step(&law, now_us, 1, DHH_TARGET_DEPTH_M + 0.003f * noise(seed), compass ? 1 : 0,
             DHH_TARGET_HEADING_RAD + 0.01f * noise(seed), &cmd);
    worst_vertical_step = std::max(worst_vertical_step, static_cast<double>(std::abs(cmd.vfront - last_vertical)));
    worst_turn_step = std::max(worst_turn_step, static_cast<double>(std::abs((cmd.left - cmd.right) / 2 - last_turn)));
    if (k > 200) {
      sum_sq_vertical_step += static_cast<double>((cmd.vfront - last_vertical) * (cmd.vfront - last_vertical));
      ++counted;
    }
    last_vertical = cmd.vfront;
    last_turn = (cmd.left - cmd.right) / 2;
  }
  // rate limits: 2.5 /s and 1 /s at 10 ms steps
  CHECK(worst_vertical_step <= 0.025 + 1e-6);
  CHECK(worst_turn_step <= 0.010 + 1e-6);
  // the noise barely moves the vertical command once settled: differenced every 10 ms, this
  // noise is 0.24 m/s of "rate" (rms), which the unfiltered derivative (Kd 1.6) turned into
  // swings of about 0.4 a step; filtered, about 0.02
  CHECK(std::sqrt(sum_sq_vertical_step / counted) < 0.03);

  // the derivative is the measurement's rate over the sensor's own interval: a heading
  // turning at 0.2 rad/s sampled at 20 Hz reads 0.2 rad/s, not five times that
  dhh_init(&law);
  for (int k = 1; k <= 500; ++k) {
    const std::uint64_t now_us = static_cast<std::uint64_t>(k) * 10000u;
    const float heading = 1.0f + 0.2f * static_cast<float>(k) * 0.01f;
    dhh_step(&law, now_us, 0, 0.0f, k % 5 == 0 ? 1 : 0, heading, &cmd);
  }
  CHECK(law.heading_pid.rate == doctest::Approx(0.2).epsilon(0.01));

  // a new target moves the goal by the proportional gain's share, not by a derivative kick
  // (the derivative of the error would add 1.6 x 1 m / 10 ms)
  dhh_init(&law);
  for (int k = 1; k <= 300; ++k)
    dhh_step(&law, static_cast<std::uint64_t>(k) * 10000u, 1, DHH_TARGET_DEPTH_M, 0, 0.0f, &cmd);
  const float before = law.vertical_goal;
  law.target_depth_m += 1.0f;
  dhh_step(&law, 301u * 10000u, 1, DHH_TARGET_DEPTH_M, 0, 0.0f, &cmd);
  CHECK(law.vertical_goal - before == doctest::Approx(DHH_DEPTH_KP).epsilon(0.02));
  CHECK(cmd.vfront - before <= 0.025f + 1e-6f);  // and the command follows at its rate
}
