// SPDX-License-Identifier: Apache-2.0
// `faults:` (docs/faults.md): the parser's positioned errors, the injector's schedule (when a
// fault is active, from the seed alone), the link shaper (what a link fault does to the
// messages that cross it), and device faults as the session delivers them: a body resting
// at a known depth, so every reading's true value is known.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tether/loop/fault_injector.hpp"
#include "tether/loop/session.hpp"
#include "tether/scenario/endpoint_types.hpp"

using namespace tether::runtime;

namespace {

// a body held at 3 m depth (neutral, no forces), a depth sensor without noise and a compass
std::string resting(const std::string& faults, int steps = 100) {
  return R"(name: rest
world: {gravity_m_s2: [0, 0, 0], water: {density_kg_m3: 1000, surface_z_m: 0}}
vehicles:
  - name: auv
    bodies:
      - name: hull
        shape: {type: sphere, radius_m: 0.2}
        mass_kg: 10
        initial: {position_m: [0, 0, -3]}
        devices:
          - {name: depth, kind: depth}
          - {name: compass, kind: compass, rate_hz: 20}
          - {name: thruster, kind: thruster}
loop: {period_ms: 10, real_time_factor: 0, steps: )" +
         std::to_string(steps) + R"(, seed: 7}
faults:
)" + faults;
}

std::string config_error(const std::string& text) {
  try {
    (void)parse_scenario(text, "rest.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// the depth readings delivered at each step (NaN: no data)
std::vector<double> depth_readings(const std::string& text, nlohmann::json* summary = nullptr) {
  const Scenario sc = parse_scenario(text, "rest.yaml");
  std::vector<double> out;
  Session* self = nullptr;
  SessionOptions options;
  options.after_step = [&](const WorldState&) {
    const auto& dev = self->devices();
    const auto& s = dev.sample(static_cast<std::size_t>(dev.find("auv.hull.depth")));
    out.push_back(s.valid ? s.ch[0] : std::nan(""));
    return true;
  };
  Session session(sc, {}, options);
  self = &session;
  std::atomic<bool> stop{false};
  REQUIRE(session.run(stop) == Outcome::completed);
  if (summary) *summary = session.summary();
  return out;
}

}  // namespace

TEST_CASE("faults: every key is checked and errors name the entry's position") {
  CHECK(config_error(resting("  - {device: auv.hull.depth, kind: bias, value: 1, at_s: 0.1, duration_s: 0.1}\n")) ==
        "");
  const std::pair<const char*, const char*> bad[] = {
      {"  - {device: auv.hull.nope, kind: stuck, at_s: 1}\n", "rest.yaml:16:14: faults[0].device: no device named"},
      {"  - {endpoint: fw, kind: drop, at_s: 1}\n", "faults[0].endpoint: no endpoint named \"fw\""},
      {"  - {device: auv.hull.thruster, kind: stuck, at_s: 1}\n", "is an actuator"},
      {"  - {device: auv.hull.depth, kind: drop, at_s: 1}\n", "expected a device fault kind"},
      {"  - {device: auv.hull.depth, kind: bias, value: 1, sigma: 2, at_s: 1}\n", "a bias fault takes no `sigma`"},
      {"  - {device: auv.hull.depth, kind: bias, at_s: 1}\n", "faults[0].value"},
      {"  - {device: auv.hull.depth, kind: stuck}\n", "expected a trigger: at_s, at_step, probability or if"},
      {"  - {device: auv.hull.depth, kind: stuck, at_s: 1, at_step: 3}\n", "expected one trigger"},
      {"  - {device: auv.hull.depth, kind: stuck, probability: 1.5}\n", "faults[0].probability"},
      {"  - {device: auv.hull.depth, kind: stuck, at_s: 1, duration_s: 1, duration_steps: 3}\n", "not both"},
      {"  - {device: auv.hull.depth, kind: saturation, min: 2, max: 1, at_s: 1}\n", "expected max >= min"},
      {"  - {device: auv.hull.depth, kind: stuck, at_s: 1, direction: in}\n", "`direction` is for link faults"},
      {"  - {device: auv.hull.depth, kind: stuck, if: {value: auv.nope_m, that: '> 1'}}\n", "faults[0].if.value"},
      {"  - {device: auv.hull.depth, kind: stuck, if: {value: auv.depth_m, that: 'about 1'}}\n", "faults[0].if.that"},
      {"  - {device: auv.hull.depth, kind: noise, sigma: 1, channel: 3, at_s: 1}\n", "faults[0].channel"},
      {"  - {device: auv.hull.depth, endpoint: fw, kind: stuck, at_s: 1}\n", "not both"},
      {"  - stuck\n", "expected a fault"},
      {"  - {device: auv.hull.depth, kind: stuck, at_s: 1, colour: red}\n", "colour"},
  };
  for (const auto& [entry, expected] : bad) {
    CAPTURE(entry);
    const std::string e = config_error(resting(entry));
    CHECK_MESSAGE(e.find(expected) != std::string::npos, e);
  }
}

TEST_CASE("faults: a link fault needs an endpoint type whose registration says its link takes them") {
  const std::string text = resting("  - {endpoint: ctl, kind: drop, at_s: 0.1}\n") +
                           "endpoints:\n  - {name: ctl, type: in_process, vehicle: auv}\n";
  // the types that take link faults come from the registered types' facts, never a literal
  auto& facts = endpoint_type_facts();
  facts["fault_test_link"].link_faults = true;
  facts["in_process"].link_faults = false;  // as the endpoint table registers it
  const std::string e = config_error(text);
  facts.erase("fault_test_link");
  facts.erase("in_process");
  // a type this program never registered is not judged here (the endpoint table refuses
  // unknown types): a program that only reads the scenario, as tether-vehicle does, parses it
  CHECK_NOTHROW((void)parse_scenario(text, "unregistered.yaml"));
  CHECK_MESSAGE(e.find("link faults act on the bytes of an endpoint's link; endpoint \"ctl\" is of type in_process, "
                       "whose link takes none (endpoint types that take them: fault_test_link)") != std::string::npos,
                e);
}

TEST_CASE(
    "faults: under timeout_policy block a link fault that lets nothing through is refused unless the peer "
    "sends its step again") {
  // the facts come from the registered types (serial and mqtt: no repeats; ardupilot_json: repeats)
  auto& facts = endpoint_type_facts();
  facts["fault_test_wire"].link_faults = true;
  facts["fault_test_repeating"].link_faults = true;
  facts["fault_test_repeating"].peer_repeats = true;
  const auto with = [](const std::string& type, const std::string& policy, const std::string& kind) {
    return resting("  - {endpoint: link, kind: " + kind + ", at_s: 0.1, duration_steps: 3}\n") +
           "endpoints:\n  - {name: link, type: " + type + ", vehicle: auv, timeout_policy: " + policy + "}\n";
  };
  std::vector<std::string> errors;
  for (const char* kind : {"drop", "corrupt", "reorder", "disconnect", "delay"})
    errors.push_back(config_error(with("fault_test_wire", "block", kind)));
  const std::string dup = config_error(with("fault_test_wire", "block", "duplicate"));
  const std::string hold = config_error(with("fault_test_wire", "hold", "drop"));
  const std::string repeating = config_error(with("fault_test_repeating", "block", "drop"));
  facts.erase("fault_test_wire");
  facts.erase("fault_test_repeating");
  for (const std::string& e : errors) {
    CAPTURE(e);
    CHECK(e.find("rest.yaml:") == 0);
    CHECK(e.find("faults[0].kind: a `") != std::string::npos);
    CHECK(e.find("link fault on endpoint \"link\" (fault_test_wire) under its timeout_policy block would stall the "
                 "session") != std::string::npos);
  }
  CHECK(errors[0].find("a `drop` link fault") != std::string::npos);
  CHECK_MESSAGE(dup.empty(), dup);
  CHECK_MESSAGE(hold.empty(), hold);
  CHECK_MESSAGE(repeating.empty(), repeating);
}

TEST_CASE("faults: at_s, at_step and duration give exactly the active steps") {
  std::vector<FaultConfig> f(2);
  f[0].device = 0;
  f[0].trigger = FaultTrigger::at_time;
  f[0].at_s = 0.25;  // period 10 ms: step 25
  f[0].duration_steps = 5;
  f[1].endpoint = 0;
  f[1].kind = FaultKind::drop;
  f[1].direction = FaultDirection::in;
  f[1].trigger = FaultTrigger::at_step;
  f[1].at_step = 40;
  f[1].duration_steps = 3;
  FaultInjector inj(f, 1, 1, 0, 10'000'000);
  tether::hal::DeviceBank bank;
  std::vector<FaultTransition> tr;
  std::vector<int> active0, dropped_in, dropped_out;
  for (std::uint64_t k = 0; k < 60; ++k) {
    inj.begin_step(k, {}, bank, tr);
    if (inj.active(0)) active0.push_back(static_cast<int>(k));
    if (inj.link(0).in.drop) dropped_in.push_back(static_cast<int>(k));
    if (inj.link(0).out.drop) dropped_out.push_back(static_cast<int>(k));
  }
  CHECK(active0 == std::vector<int>{25, 26, 27, 28, 29});
  CHECK(dropped_in == std::vector<int>{40, 41, 42});
  CHECK(dropped_out.empty());  // direction in only
}

TEST_CASE("faults: a probability trigger is drawn from the seed alone, at the rate asked") {
  std::vector<FaultConfig> f(1);
  f[0].endpoint = 0;
  f[0].kind = FaultKind::corrupt;
  f[0].bits = 2;
  f[0].trigger = FaultTrigger::probability;
  f[0].probability = 0.05;
  auto schedule = [&](std::uint64_t seed) {
    FaultInjector inj(f, 1, seed, 0, 10'000'000);
    tether::hal::DeviceBank bank;
    std::vector<FaultTransition> tr;
    std::vector<std::uint64_t> on;
    for (std::uint64_t k = 0; k < 20'000; ++k) {
      inj.begin_step(k, {}, bank, tr);
      if (inj.link(0).out.corrupt_bits > 0) {
        CHECK(inj.link(0).out.corrupt_bits == 2);
        on.push_back(k);
      }
    }
    return on;
  };
  const auto a = schedule(11), b = schedule(11), c = schedule(12);
  CHECK(a == b);
  CHECK(a != c);
  // 20,000 steps at 5 %: 1,000 expected, the binomial's sigma is about 31
  CHECK(a.size() > 850);
  CHECK(a.size() < 1150);
}

TEST_CASE("faults: the injector's state survives a snapshot (replay from a keyframe)") {
  std::vector<FaultConfig> f(1);
  f[0].device = 0;
  f[0].trigger = FaultTrigger::probability;
  f[0].probability = 0.02;
  f[0].duration_steps = 50;
  FaultInjector a(f, 0, 3, 0, 10'000'000), b(f, 0, 3, 0, 10'000'000);
  tether::hal::DeviceBank bank;
  std::vector<FaultTransition> tr;
  std::uint64_t k = 0;
  while (!a.active(0)) a.begin_step(k++, {}, bank, tr);
  a.begin_step(k++, {}, bank, tr);  // mid-activation
  std::string snap;
  a.snapshot(snap);
  std::string error;
  REQUIRE(b.restore(snap, &error));
  for (int i = 0; i < 500; ++i, ++k) {
    a.begin_step(k, {}, bank, tr);
    b.begin_step(k, {}, bank, tr);
    REQUIRE(a.active(0) == b.active(0));
  }
  CHECK_FALSE(b.restore(snap.substr(0, snap.size() - 3), &error));
  CHECK(error.find("truncated") != std::string::npos);
}

TEST_CASE("faults: the link shaper drops, duplicates, corrupts, delays and reorders messages") {
  LinkShaper s;
  std::vector<std::string> got;
  auto deliver = [&](std::string_view b) { got.emplace_back(b); };
  LinkFaultPlan none, plan;
  s.begin_step(0, 99, none, deliver);
  s.pass("a", deliver);
  CHECK(got == std::vector<std::string>{"a"});

  got.clear();
  plan = {};
  plan.drop = true;
  s.begin_step(1, 99, plan, deliver);
  s.pass("b", deliver);
  CHECK(got.empty());
  CHECK(s.counters.dropped == 1);

  plan = {};
  plan.duplicate = true;
  s.begin_step(2, 99, plan, deliver);
  s.pass("c", deliver);
  CHECK(got == std::vector<std::string>{"c", "c"});

  got.clear();
  plan = {};
  plan.corrupt_bits = 3;
  s.begin_step(3, 99, plan, deliver);
  const std::string msg(64, '\0');
  s.pass(msg, deliver);
  REQUIRE(got.size() == 1);
  int flipped = 0;
  for (char ch : got[0]) flipped += __builtin_popcount(static_cast<unsigned char>(ch));
  CHECK(flipped >= 1);  // three draws; two may land on the same bit and cancel
  CHECK(flipped <= 3);
  CHECK(flipped % 2 == 1);

  got.clear();
  plan = {};
  plan.delay_steps = 2;
  s.begin_step(4, 99, plan, deliver);
  s.pass("d4", deliver);
  CHECK(got.empty());
  s.begin_step(5, 99, none, deliver);
  CHECK(got.empty());
  s.begin_step(6, 99, none, deliver);  // due: crosses before anything of step 6
  CHECK(got == std::vector<std::string>{"d4"});

  got.clear();
  plan = {};
  plan.reorder = true;
  s.begin_step(7, 99, plan, deliver);
  s.pass("r7", deliver);
  s.pass("r7 again", deliver);
  CHECK(got.empty());
  s.begin_step(8, 99, none, deliver);
  s.pass("r8", deliver);  // the next step's first message overtakes the held ones
  CHECK(got == std::vector<std::string>{"r8", "r7", "r7 again"});
  CHECK(s.holding() == 0);
}

TEST_CASE("faults: device faults change what the sensor delivers, only while active") {
  SUBCASE("bias, then back") {
    const auto r = depth_readings(
        resting("  - {device: auv.hull.depth, kind: bias, value: 0.5, at_step: 10, duration_steps: 5}\n"));
    CHECK(r[9] == doctest::Approx(3.0));
    for (int k = 10; k < 15; ++k) CHECK(r[static_cast<std::size_t>(k)] == doctest::Approx(3.5));
    CHECK(r[15] == doctest::Approx(3.0));
  }
  SUBCASE("drift grows with the time since the start") {
    const auto r =
        depth_readings(resting("  - {device: auv.hull.depth, kind: drift, rate: 1.0, at_step: 10, duration_s: 0.5}\n"));
    CHECK(r[10] == doctest::Approx(3.0));
    CHECK(r[20] == doctest::Approx(3.1));
    CHECK(r[59] == doctest::Approx(3.49));
    CHECK(r[60] == doctest::Approx(3.0));
  }
  SUBCASE("dropout: no data") {
    const auto r =
        depth_readings(resting("  - {device: auv.hull.depth, kind: dropout, at_step: 10, duration_steps: 3}\n"));
    CHECK(std::isnan(r[10]));
    CHECK(std::isnan(r[12]));
    CHECK(r[13] == doctest::Approx(3.0));
  }
  SUBCASE("scale and saturation") {
    const auto r = depth_readings(
        resting("  - {device: auv.hull.depth, kind: scale, factor: 2, at_step: 10, duration_steps: 2}\n"
                "  - {device: auv.hull.depth, kind: saturation, min: 0, max: 1.5, at_step: 20, duration_steps: 2}\n"));
    CHECK(r[10] == doctest::Approx(6.0));
    CHECK(r[20] == doctest::Approx(1.5));
    CHECK(r[22] == doctest::Approx(3.0));
  }
  SUBCASE("noise: seeded, so two runs agree; the spread is the sigma asked") {
    const std::string text =
        resting("  - {device: auv.hull.depth, kind: noise, sigma: 0.2, at_step: 0, duration_steps: 1000}\n", 1000);
    const auto a = depth_readings(text), b = depth_readings(text);
    CHECK(a == b);
    double sum = 0, sq = 0;
    for (double v : a) {
      sum += v - 3.0;
      sq += (v - 3.0) * (v - 3.0);
    }
    const double mean = sum / 1000, sd = std::sqrt(sq / 1000 - mean * mean);
    CHECK(std::abs(mean) < 0.05);
    CHECK(sd == doctest::Approx(0.2).epsilon(0.15));
  }
}

TEST_CASE("faults: a stuck sensor holds the reading it had when the fault started") {
  // the body sinks at 1 m/s: the true depth grows 1 cm a step
  std::string text = resting("  - {device: auv.hull.depth, kind: stuck, at_step: 30, duration_steps: 20}\n");
  const std::string at = "initial: {position_m: [0, 0, -3]}";
  text.replace(text.find(at), at.size(), "initial: {position_m: [0, 0, -3], velocity_m_s: [0, 0, -1]}");
  const auto r = depth_readings(text);
  for (int k = 30; k < 50; ++k) CHECK(r[static_cast<std::size_t>(k)] == r[29]);
  CHECK(r[50] > r[29] + 0.15);
}

TEST_CASE("faults: a condition trigger starts the fault when it holds, and the summary lists each activation") {
  std::string text = resting(
      "  - {name: deep, device: auv.hull.depth, kind: bias, value: -1, if: {value: auv.depth_m, that: '> 3.205'},"
      " duration_steps: 10}\n",
      80);
  const std::string at = "initial: {position_m: [0, 0, -3]}";
  text.replace(text.find(at), at.size(), "initial: {position_m: [0, 0, -3], velocity_m_s: [0, 0, -1]}");
  nlohmann::json summary;
  const auto r = depth_readings(text, &summary);
  // S_k's depth is 3 + k/100: it first exceeds 3.205 at k = 21 (the condition is read on S_k)
  CHECK(r[20] == doctest::Approx(3.21));
  CHECK(r[21] == doctest::Approx(3.22 - 1));
  const auto& f = summary["faults"][0];
  CHECK(f["name"] == "deep");
  CHECK(f["kind"] == "bias");
  CHECK(f["device"] == "auv.hull.depth");
  // it holds every step from then on: it re-arms each time its 10 steps end
  REQUIRE(f["activations"].size() >= 5);
  CHECK(f["activations"][0]["start_step"] == 21);
  CHECK(f["activations"][0]["end_step"] == 31);
  CHECK(f["activations"][1]["start_step"] == 31);
  CHECK(f["active_steps"] == 80 - 21);
}
