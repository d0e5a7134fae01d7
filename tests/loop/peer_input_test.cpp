// SPDX-License-Identifier: Apache-2.0
// What a peer sends that the loop must not take at face value: absurd but finite
// measurements (the plausibility gate, loop.plausibility) and NaN/Inf actuator commands.
#include <doctest/doctest.h>

#include <atomic>
#include <climits>
#include <cmath>
#include <functional>

#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "tether/loop/plausibility.hpp"
#include "tether/loop/session.hpp"
#include "tether/recording/recorder.hpp"
#include "tether/loop/recorder_inputs.hpp"
#include "tether/recording/replay.hpp"

using namespace tether::runtime;

namespace {

// a body in a 4 x 20 x 10 m tank whose pose a `direct` processor sets to each measurement
std::string tank_scenario(const std::string& loop_extra = "") {
  return R"(name: gate
world:
  gravity_m_s2: [0, 0, 0]
  tank: {size_m: [4, 20, 10], floor_z_m: -10}
vehicles:
  - name: auv
    bodies:
      - name: hull
        shape: {type: sphere, radius_m: 0.2}
        mass_kg: 10
        initial: {position_m: [0, 0, -3]}
    feedback: [{type: direct}]
loop: {period_ms: 10, real_time_factor: 0, steps: 40)" +
         loop_extra + R"(}
endpoints:
  - {name: vehicle, type: scripted, vehicle: auv}
)";
}

Measurement at(std::uint64_t step, Vec3 p) {
  Measurement m;
  m.body = 0;
  m.measured_time_ns = static_cast<std::int64_t>(step + 1) * 10'000'000;
  m.has_pose = true;
  m.position_m = p;
  return m;
}

// answers every step with the measurement the script gives for it
class ScriptedEndpoint final : public Endpoint {
 public:
  ScriptedEndpoint(const EndpointConfig& c, std::function<Measurement(std::uint64_t)> script)
      : Endpoint(c), script_(std::move(script)) {}
  bool publish(const StepContext&, const WorldState&) override { return true; }
  GatherStatus gather(const StepContext& ctx, SteadyClock::time_point, Reply& reply) override {
    reply.clear();
    reply.step = ctx.step;
    reply.measurements.push_back(script_(ctx.step));
    return GatherStatus::ready;
  }

 private:
  std::function<Measurement(std::uint64_t)> script_;
};

// the truth moves 1 mm per step along x; some steps carry a lie
Measurement hostile(std::uint64_t k) {
  const Vec3 truth(0.001 * static_cast<double>(k), 0, -3);
  if (k == 5) return at(k, Vec3(1e308, 0, -3));  // finite, absurd: a numerical fault once applied
  if (k == 10) return at(k, Vec3(1e6, 0, -3));   // 1000 km out of the tank
  if (k == 20) return at(k, Vec3(1.9, 0, -3));   // inside the tank, but 188 m/s away
  return at(k, truth);
}

}  // namespace

TEST_CASE("plausibility: the world box comes from the tank's planes, widened by the margin") {
  const Scenario sc = parse_scenario(tank_scenario(), "gate.yaml");
  const WorldBox box = plausible_box(sc.model, sc.loop.plausibility);
  CHECK(box.min.x() == doctest::Approx(-3));
  CHECK(box.max.x() == doctest::Approx(3));
  CHECK(box.min.y() == doctest::Approx(-11));
  CHECK(box.max.y() == doctest::Approx(11));
  CHECK(box.min.z() == doctest::Approx(-11));
  CHECK(box.max.z() == doctest::Approx(10'001));  // open at the top: max_distance_m
  const PlausibilityConfig& g = sc.loop.plausibility;
  const Measurement ok = at(0, Vec3(0, 0, -3));
  CHECK(implausible(ok, nullptr, 10'000'000, box, g) == nullptr);
  CHECK(implausible(at(0, Vec3(3.5, 0, -3)), nullptr, 10'000'000, box, g) != nullptr);
  CHECK(implausible(at(0, Vec3(0, 0, NAN)), nullptr, 10'000'000, box, g) != nullptr);
  Measurement fast = ok;
  fast.has_velocity = true;
  fast.velocity_m_s = Vec3(150, 0, 0);
  CHECK(std::string(implausible(fast, nullptr, 10'000'000, box, g)).find("max_speed_m_s") != std::string::npos);
  // 0.5 m in 10 ms is 50 m/s: plausible at the default 100 m/s, not at 20 m/s
  const Measurement moved = at(1, Vec3(0.5, 0, -3));
  CHECK(implausible(moved, &ok, 10'000'000, box, g) == nullptr);
  PlausibilityConfig slow = g;
  slow.max_speed_m_s = 20;
  CHECK(implausible(moved, &ok, 10'000'000, box, slow) != nullptr);
  // times the peer made up cannot overflow the check
  Measurement odd = moved;
  odd.measured_time_ns = INT64_MIN;
  CHECK(implausible(odd, &ok, 10'000'000, box, g) == nullptr);  // 0.5 m over at least one period
  PlausibilityConfig off = g;
  off.enabled = false;
  CHECK(implausible(at(0, Vec3(1e6, 0, 0)), nullptr, 10'000'000, box, off) == nullptr);
}

TEST_CASE("plausibility: absurd measurements are rejected and counted, and the twin stays in the tank") {
  const Scenario sc = parse_scenario(tank_scenario(), "gate.yaml");
  std::vector<std::unique_ptr<Endpoint>> eps;
  eps.push_back(std::make_unique<ScriptedEndpoint>(sc.endpoints[0], hostile));
  std::vector<double> x;
  SessionOptions o;
  o.after_step = [&](const WorldState& s) {
    x.push_back(s.bodies[0].position_m.x());
    return true;
  };
  Session session(sc, std::move(eps), o);
  std::atomic<bool> stop{false};
  REQUIRE(session.run(stop) == Outcome::completed);  // 1e308 applied was a numerical fault
  // steps 5, 10 (outside the world), 20 (the jump there) and 21 (the jump back from it)
  const nlohmann::json s = session.summary();
  CHECK(s["endpoints"][0]["implausible"] == 4);
  for (double v : x) CHECK(std::abs(v) < 0.05);             // never 1e6, never 1.9
  CHECK(x.back() == doctest::Approx(0.039).epsilon(0.05));  // and the truth still corrects it

  // the gate switched off lets the 1e6 m through (what the gate is for)
  const Scenario off = parse_scenario(tank_scenario(", plausibility: {enabled: false}"), "gate.yaml");
  std::vector<std::unique_ptr<Endpoint>> eps2;
  eps2.push_back(std::make_unique<ScriptedEndpoint>(
      off.endpoints[0], [](std::uint64_t k) { return k == 10 ? at(k, Vec3(1e6, 0, -3)) : at(k, Vec3(0, 0, -3)); }));
  double worst = 0;
  SessionOptions o2;
  o2.after_step = [&](const WorldState& st) {
    worst = std::max(worst, std::abs(st.bodies[0].position_m.x()));
    return true;
  };
  Session unguarded(off, std::move(eps2), o2);
  REQUIRE(unguarded.run(stop) == Outcome::completed);
  CHECK(worst > 1e5);
}

TEST_CASE("plausibility: its keys are checked like the rest of the file") {
  try {
    parse_scenario(tank_scenario(", plausibility: {max_speed_m_s: -1, colour: red}"), "gate.yaml");
    FAIL("expected a ConfigError");
  } catch (const ConfigError& e) {
    std::string all;
    for (const auto& l : e.errors()) all += l + "\n";
    INFO(all);
    CHECK(all.find("gate.yaml:") != std::string::npos);
    CHECK(all.find("max_speed_m_s") != std::string::npos);
    CHECK(all.find("colour") != std::string::npos);
  }
}

namespace {

// a thruster on the body; the endpoint commands it, NaN or infinity on the steps given
class Commanding final : public Endpoint {
 public:
  Commanding(const EndpointConfig& c, std::uint16_t device) : Endpoint(c), device_(device) {}
  bool publish(const StepContext&, const WorldState&) override { return true; }
  GatherStatus gather(const StepContext& ctx, SteadyClock::time_point, Reply& reply) override {
    reply.clear();
    reply.step = ctx.step;
    float u = 0.5f;
    if (ctx.step == 3) u = std::numeric_limits<float>::quiet_NaN();
    if (ctx.step == 7) u = std::numeric_limits<float>::infinity();
    DeviceCommand c;
    c.device = device_;
    c.size = 4;
    std::memcpy(c.bytes.data(), &u, 4);
    reply.commands.push_back(c);
    return GatherStatus::ready;
  }

 private:
  std::uint16_t device_;
};

}  // namespace

TEST_CASE("peer input: NaN and infinite actuator commands are refused, each one in the events, counted") {
  std::string text = tank_scenario();
  text.replace(text.find("        initial:"), 0,
               "        devices: [{name: prop, kind: thruster, params: {max_thrust_n: 10}}]\n");
  text.replace(text.find("    feedback: [{type: direct}]\n"), 31, "");
  const Scenario sc = parse_scenario(text, "nan.yaml");
  std::vector<std::unique_ptr<Endpoint>> eps;
  eps.push_back(std::make_unique<Commanding>(sc.endpoints[0], 0));
  Session session(sc, std::move(eps));
  const std::string path =
      (std::filesystem::temp_directory_path() / ("tether_nan_" + std::to_string(::getpid()) + ".mcap")).string();
  Recorder recorder(sc, recorder_inputs(session));
  std::string error;
  REQUIRE_MESSAGE(recorder.open(path, &error), error);
  session.set_recorder(&recorder);
  std::atomic<bool> stop{false};
  REQUIRE(session.run(stop) == Outcome::completed);
  const nlohmann::json s = session.summary();
  REQUIRE(recorder.close(s, &error));
  CHECK(s["devices"]["nonfinite_commands"] == 2);
  CHECK(s["devices"]["invalid_commands"] == 2);
  Recording rec;
  REQUIRE_MESSAGE(load_recording(path, rec, &error), error);
  int events = 0;
  for (const auto& e : rec.events)
    if (e.value("message", std::string()).find("non-finite (NaN/Inf) command for auv.hull.prop refused") !=
        std::string::npos)
      ++events;
  CHECK(events == 2);
  std::filesystem::remove(path);
}
