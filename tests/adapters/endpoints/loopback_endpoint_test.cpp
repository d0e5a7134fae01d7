// SPDX-License-Identifier: Apache-2.0
// The endpoint template (examples/endpoint/loopback.cpp), registered from outside the
// library and built by name like the built-in types, runs a real session.
#include <doctest/doctest.h>

#include <atomic>
#include <string>

#include <nlohmann/json.hpp>

#include "loopback.hpp"
#include "tether/endpoints/endpoint_factory.hpp"
#include "tether/loop/session.hpp"
#include "tether/scenario/endpoint_types.hpp"

using namespace tether::runtime;

namespace {

std::string scenario_text(const std::string& endpoint) {
  return R"(name: loopback
world: {gravity_m_s2: [0, 0, 0]}
vehicles:
  - name: auv
    bodies: [{name: hull, shape: {type: sphere, radius_m: 0.2}, mass_kg: 2}]
    feedback: [{type: direct}]
loop: {period_ms: 10, real_time_factor: 0, steps: 100}
endpoints:
  - )" + endpoint +
         "\n";
}

}  // namespace

TEST_CASE("loopback endpoint: registered by name, it pushes the vehicle and echoes its pose every step") {
  REQUIRE(tether::examples::register_loopback_endpoint());
  CHECK(tether::examples::register_loopback_endpoint());  // a second call keeps the first
  const Scenario sc =
      parse_scenario(scenario_text("{name: lb, type: loopback, vehicle: auv, force_n: [4, 0, 0]}"), "lb.yaml");
  Session session(sc, tether::adapters::make_endpoints(sc));
  std::atomic<bool> stop{false};
  REQUIRE(session.run(stop) == Outcome::completed);
  const auto s = session.summary();
  // 4 N on 2 kg for 1 s from rest: 2 m/s and about 1 m along +x
  const BodyState& b = session.state().bodies[0];
  CHECK(b.linear_momentum.x() / 2.0 == doctest::Approx(2.0).epsilon(1e-6));
  CHECK(b.position_m.x() == doctest::Approx(1.0).epsilon(0.02));
  CHECK(b.position_m.y() == doctest::Approx(0.0));
  const auto& ep = s["endpoints"][0];
  CHECK(ep["type"] == "loopback");
  CHECK(ep["replies"] == 100);
  CHECK(ep["misses"] == 0);
  CHECK(ep["stale"] == 0);
  CHECK(ep["loopback"]["echoed"] == 100);
  // the measurement is the projected pose: `direct` moves nothing
  CHECK(s["feedback"][0]["type"] == "direct");
}

TEST_CASE("loopback endpoint: config mistakes are positioned and the known types include it") {
  REQUIRE(tether::examples::register_loopback_endpoint());
  auto errors_of = [](const std::string& endpoint) {
    try {
      const Scenario sc = parse_scenario(scenario_text(endpoint), "lb.yaml");
      tether::adapters::make_endpoints(sc);
    } catch (const ConfigError& e) {
      return e.errors();
    }
    return std::vector<std::string>{};
  };
  auto has = [](const std::vector<std::string>& errors, const std::string& part) {
    for (const auto& e : errors)
      if (e.find(part) != std::string::npos) return true;
    return false;
  };
  const auto e1 = errors_of("{name: lb, type: loopback, force_n: [1, 2], colour: red}");
  CHECK(has(e1, "endpoints[0]: a loopback endpoint needs `vehicle`"));
  CHECK(has(e1, "endpoints[0].force_n: expected a list of 3 numbers"));
  CHECK(has(e1, "endpoints[0].colour: unknown key"));
  const auto e2 = errors_of("{name: lb, type: loopbak, vehicle: auv}");
  CHECK(has(e2,
            "lb.yaml:9:22: endpoints[0].type: unknown endpoint type \"loopbak\" (known: in_process, serial, mqtt, "
            "stand_in, ardupilot_json, mcu, loopback)"));
}

TEST_CASE("endpoint types: one registration carries a type's facts, and the scenario learns them from it") {
  REQUIRE(tether::examples::register_loopback_endpoint());
  const auto& facts = endpoint_type_facts();
  // every registered type is in the scenario's table with the keys and link-fault flag it registered
  for (const auto& e : tether::adapters::endpoint_kinds().entries()) {
    const auto f = facts.find(e.name);
    REQUIRE_MESSAGE(f != facts.end(), e.name);
    CHECK(f->second.keys.size() == e.factory.keys.size());
    for (std::size_t i = 0; i < f->second.keys.size(); ++i) CHECK(f->second.keys[i] == e.factory.keys[i]);
    CHECK(f->second.link_faults == e.factory.link_faults);
  }
  CHECK(link_fault_types_text() == "ardupilot_json, mqtt, serial");
  CHECK_FALSE(facts.at("loopback").link_faults);
  CHECK(facts.at("loopback").keys == std::vector<std::string>{"force_n"});

  // an unknown key names the types that take it, from the table
  auto errors_of = [](const std::string& endpoint) {
    try {
      tether::adapters::make_endpoints(parse_scenario(scenario_text(endpoint), "lb.yaml"));
    } catch (const ConfigError& e) {
      return e.errors();
    }
    return std::vector<std::string>{};
  };
  const auto e = errors_of("{name: lb, type: loopback, vehicle: auv, broker: tcp://127.0.0.1:1883}");
  REQUIRE(e.size() == 1);
  CHECK_MESSAGE(e[0].find("endpoints[0].broker: unknown key (allowed here: name, type, vehicle, deadline_ms, "
                          "timeout_policy, force_n); endpoint types that take it: mqtt") != std::string::npos,
                e[0]);
  // a link fault on a type that takes none is refused, naming those that do
  const auto f = errors_of("{name: lb, type: loopback, vehicle: auv}\nfaults:\n  - {endpoint: lb, kind: drop, at_s: 0.1}");
  REQUIRE(f.size() == 1);
  CHECK_MESSAGE(f[0].find("is of type loopback, whose link takes none (endpoint types that take them: ardupilot_json, "
                          "mqtt, serial)") != std::string::npos,
                f[0]);
}
