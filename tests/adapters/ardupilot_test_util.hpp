// SPDX-License-Identifier: Apache-2.0
// A session with an ardupilot_json endpoint flown by the stand-in autopilot on a thread:
// the session starts (its endpoint binds a free port: `port: 0`), the stand-in flies it
// until the run ends. Shared by the ArduPilot tests that fly whole sessions.
#pragma once

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "tether/ardupilot/ardupilot_endpoint.hpp"
#include "tether/ardupilot_standin/ardupilot_standin.hpp"
#include "tether/endpoints/endpoint_factory.hpp"
#include "tether/loop/session.hpp"

namespace tether::ardupilot_test {

/// The ArduPilot tests' world: a 5 kg sphere with one thruster (`thruster`, and `devices`
/// more, each a "          - {...}" line) in zero gravity, `steps` of 10 ms at real-time
/// factor `rtf`; the text ends with "endpoints:\n" for the caller's endpoints.
inline std::string one_thruster_world(const std::string& name, int steps, const std::string& loop_extra = "",
                                      const std::string& devices = "", int rtf = 0) {
  return "name: " + name + R"(
world: {gravity_m_s2: [0, 0, 0], water: {density_kg_m3: 1000, surface_z_m: 10}}
vehicles:
  - name: auv
    bodies:
      - name: hull
        shape: {type: sphere, radius_m: 0.2}
        mass_kg: 5
        devices:
          - {name: thruster, kind: thruster, params: {max_thrust_n: 20, time_constant_s: 0.02}}
)" + devices +
         "loop: {period_ms: 10, real_time_factor: " + std::to_string(rtf) + ", steps: " + std::to_string(steps) +
         loop_extra + "}\nendpoints:\n";
}

struct StandInFlight {
  runtime::Outcome outcome = runtime::Outcome::failed;
  nlohmann::json summary;
  adapters::ardupilot::StandInCounters autopilot;
  std::uint32_t frame_count = 0;
  adapters::ardupilot::SensorReading last;  // the last reply the stand-in read
};

/// Runs the scenario (its first endpoint an ardupilot_json one with `port: 0`) with the
/// stand-in flying `law`; `options.port` is set to where the stand-in sends (the endpoint's
/// port, or what `route(port)` returns: a relay in between).
inline StandInFlight fly_with_standin(const runtime::Scenario& sc, adapters::ardupilot::ControlLaw& law,
                                      adapters::ardupilot::StandInOptions options,
                                      const std::function<std::uint16_t(std::uint16_t)>& route = {}) {
  namespace ap = adapters::ardupilot;
  auto endpoints = adapters::make_endpoints(sc);
  auto* endpoint = dynamic_cast<adapters::ArduPilotJsonEndpoint*>(endpoints[0].get());
  REQUIRE(endpoint != nullptr);
  runtime::Session session(sc, std::move(endpoints));
  std::atomic<bool> stop{false};
  StandInFlight out;
  std::thread runner([&] { out.outcome = session.run(stop); });
  // the endpoint binds its port in start(): wait for it (a bound), then fly
  std::uint16_t port = 0;
  for (int i = 0; i < 1000 && (port = endpoint->bound_port()) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (port == 0) stop = true;
  REQUIRE(port != 0);
  options.port = route ? route(port) : port;
  ap::ArduPilotStandIn autopilot(options, law);
  std::thread flying([&] {
    while (autopilot.frame(std::chrono::steady_clock::now() + std::chrono::seconds(30)) ==
           ap::ArduPilotStandIn::FrameResult::replied) {
    }
  });
  runner.join();
  autopilot.cancel();
  flying.join();
  out.summary = session.summary();
  out.autopilot = autopilot.counters;
  out.frame_count = autopilot.frame_count();
  out.last = autopilot.last();
  return out;
}

/// The configuration errors of building `text`'s endpoints, one per line ("" when it builds).
inline std::string endpoint_config_errors(const std::string& text, const std::string& file) {
  try {
    const runtime::Scenario sc = runtime::parse_scenario(text, file);
    adapters::make_endpoints(sc);
  } catch (const runtime::ConfigError& e) {
    std::string all;
    for (const auto& line : e.errors()) all += line + "\n";
    return all;
  }
  return std::string();
}

}  // namespace tether::ardupilot_test
