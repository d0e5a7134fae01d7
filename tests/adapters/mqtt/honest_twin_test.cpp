// SPDX-License-Identifier: Apache-2.0
// The honest twin (docs/feedback.md): the in-process stand-in endpoint, the `identify:`
// excitation plan flown by the example controller, and the estimate processor's
// identifiability flags and sigmas against a vehicle that is not the model.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "example_controllers.hpp"
#include "test_paths.hpp"
#include "tether/endpoints/endpoint_factory.hpp"
#include "tether/feedback/feedback.hpp"
#include "tether/loop/session.hpp"
#include "tether/loop/stand_in_vehicle.hpp"

using namespace tether::runtime;
namespace fs = std::filesystem;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// tank_identify.yaml with its MQTT vehicle replaced by the in-process stand-in (`stand_in`
// carrying `extra` keys), the plan's text replaced by `plan` when given, and without the
// feedback processors if told. The estimate's batch refit (`refit_*` keys) is taken out: these
// tests are of its windows, and the refit lives in the identify library (tests/identify)
std::string tank_identify_in_process(const std::string& extra, const char* plan = nullptr, bool feedback = true) {
  std::string text = read_file(TETHER_SOURCE_DIR + "/config/scenarios/tank_identify.yaml");
  for (auto at = text.find("        refit_"); at != std::string::npos; at = text.find("        refit_"))
    text.erase(at, text.find('\n', at) + 1 - at);
  if (!feedback) {
    const auto a = text.find("    feedback:\n");
    const auto b = text.find("\nloop:");
    REQUIRE(a != std::string::npos);
    REQUIRE(b != std::string::npos);
    text.erase(a, b - a);
  }
  const auto from = text.find("  - name: tank\n");
  const auto to = text.find("\n# the excitation plan");
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  text.replace(from, to - from, "  - name: tank\n    type: stand_in\n    vehicle: auv\n" + extra);
  if (plan) text = text.substr(0, text.find("\n# the excitation plan")) + "\n" + plan;
  return text;
}

nlohmann::json estimate_summary(const Session& s) {
  nlohmann::json j;
  for (const auto& p : s.processors())
    if (p->type() == "estimate") p->summarize(j);
  return j;
}

Outcome run_session(Session& s) {
  std::atomic<bool> stop{false};
  return s.run(stop);
}

}  // namespace

TEST_CASE("stand_in endpoint: config mistakes are positioned, the hidden truth is in the summary") {
  tether::examples::register_example_controllers();
  {
    const Scenario sc =
        parse_scenario(tank_identify_in_process("    hidden: {drag_scale: -1, bogus: 2}\n"), "stand_in_bad.yaml");
    try {
      (void)tether::adapters::make_endpoints(sc);
      FAIL("expected a config error");
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      CHECK(what.find("drag_scale") != std::string::npos);
      CHECK(what.find("bogus") != std::string::npos);
      CHECK(what.find("stand_in_bad.yaml:") != std::string::npos);
    }
  }
  {
    const Scenario sc = parse_scenario(tank_identify_in_process("    exact: true\n    hidden: {drag_scale: 2}\n"),
                                       "stand_in_both.yaml");
    CHECK_THROWS_WITH_AS((void)tether::adapters::make_endpoints(sc), doctest::Contains("do not go together"),
                         ConfigError);
  }
  // the truth the estimate should find: the scenario's values with the hidden differences
  const Scenario sc =
      parse_scenario(tank_identify_in_process("    seed: 3\n    hidden: {thrust_scale: 0.8}\n"), "stand_in.yaml");
  auto eps = tether::adapters::make_endpoints(sc);
  SessionOptions o;
  o.steps = 50;
  o.real_time_factor = 0;
  Session s(sc, std::move(eps), o);
  CHECK(run_session(s) == Outcome::completed);
  const nlohmann::json summary = s.summary();
  const auto& truth = summary["endpoints"][1]["hidden_truth"]["auv.hull"];
  CHECK(truth["thrust_coefficient"].get<double>() == 0.8);
  const HiddenParams h = default_hidden_params();
  CHECK(truth["linear_drag_x"].get<double>() == doctest::Approx(10 * h.drag_scale * h.linear_drag_axis_scale.x()));
  CHECK(truth["buoyancy_offset_n"].get<double>() == h.buoyancy_offset_n);
  // every step answered with a measurement the processors used
  CHECK(summary["endpoints"][1]["replies"].get<std::uint64_t>() == 50);
  CHECK(summary["feedback"][1]["updates"].get<std::uint64_t>() == 50);
}

TEST_CASE("identify: the plan's timeline, its config mistakes, and a setpoint the controller does not have") {
  tether::examples::register_example_controllers();
  const Scenario sc = parse_scenario(tank_identify_in_process(""), "plan.yaml");
  const IdentifyPlan& p = sc.identify;
  REQUIRE(p.enabled);
  CHECK(p.endpoint_index == 0);
  REQUIRE(p.manoeuvres.size() == 8);
  CHECK(p.manoeuvre_at(3.9) == -1);  // before start_s
  CHECK(p.manoeuvre_at(4.0) == 0);
  CHECK(p.manoeuvre_at(9.5) == 1);         // 5 s into the plan: the second manoeuvre
  CHECK(p.manoeuvre_at(4 + 35 + 1) == 0);  // the cycle is 35 s: repeated
  CHECK(p.manoeuvres[2].setpoints == std::vector<std::pair<std::string, double>>{{"surge", 0.45}, {"depth_m", 3.5}});

  auto error_of = [](const std::string& plan) {
    try {
      (void)parse_scenario(tank_identify_in_process("", plan.c_str()), "plan_bad.yaml");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error_of("identify: {endpoint: nobody, manoeuvres: [{hold_s: 1, surge: 0.5}]}\n").find("no endpoint named") !=
        std::string::npos);
  CHECK(error_of("identify: {endpoint: tank, manoeuvres: [{hold_s: 1, surge: 0.5}]}\n").find("stand_in") !=
        std::string::npos);
  CHECK(error_of("identify: {endpoint: controller, manoeuvres: []}\n").find("at least one manoeuvre") !=
        std::string::npos);
  CHECK(error_of("identify: {endpoint: controller, manoeuvres: [{surge: 0.5}]}\n").find("hold_s") != std::string::npos);
  CHECK(error_of("identify: {endpoint: controller, manoeuvres: [{hold_s: 1}]}\n").find("at least one setpoint") !=
        std::string::npos);
  CHECK(error_of("identify: {endpoint: controller, manoeuvres: [{hold_s: 1, surge: fast}]}\n").find("surge") !=
        std::string::npos);

  // a setpoint name only the controller can check: at session start, positioned, with the known ones
  const Scenario wrong = parse_scenario(
      tank_identify_in_process("", "identify: {endpoint: controller, manoeuvres: [{hold_s: 1, speed_m_s: 1}]}\n"),
      "plan_speed.yaml");
  try {
    Session s(wrong, tether::adapters::make_endpoints(wrong));
    FAIL("expected a config error");
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    CHECK(what.find("plan_speed.yaml:") != std::string::npos);
    CHECK(what.find("no setpoint \"speed_m_s\"") != std::string::npos);
    CHECK(what.find("surge, depth_m, heading_deg") != std::string::npos);
  }
}

TEST_CASE("identify: the in-process controller flies the manoeuvres (speed, depth, heading, coast-down)") {
  tether::examples::register_example_controllers();
  auto final_state = [](const char* plan) {
    const Scenario sc = parse_scenario(tank_identify_in_process("    exact: true\n", plan, false), "fly.yaml");
    SessionOptions o;
    o.steps = 2000;  // 20 s
    o.real_time_factor = 0;
    Session s(sc, tether::adapters::make_endpoints(sc), o);
    REQUIRE(run_session(s) == Outcome::completed);
    return s.state().bodies[0];
  };
  const BodyState cruise = final_state("identify: {endpoint: controller, manoeuvres: [{hold_s: 100, surge: 0.3}]}\n");
  const BodyState fast = final_state("identify: {endpoint: controller, manoeuvres: [{hold_s: 100, surge: 0.8}]}\n");
  const BodyState deep =
      final_state("identify: {endpoint: controller, manoeuvres: [{hold_s: 100, surge: 0.3, depth_m: 4}]}\n");
  const BodyState north =
      final_state("identify: {endpoint: controller, manoeuvres: [{hold_s: 100, surge: 0.3, heading_deg: 0}]}\n");
  CHECK(fast.position_m.x() > cruise.position_m.x() + 3);   // faster along the tank (east, +x)
  CHECK(-deep.position_m.z() > 3.5);                        // the new depth reached
  CHECK(-cruise.position_m.z() < 2.5);                      // the law's own 2 m
  CHECK(north.position_m.y() > cruise.position_m.y() + 2);  // turned north (+y)
  // a coast-down: every thruster off for 10 s from t = 10 s (the plan starts at 0 here); the
  // vehicle slows on drag alone and, slightly buoyant, rises, where the law would have held
  const BodyState coast = final_state(
      "identify: {endpoint: controller, manoeuvres: [{hold_s: 10, surge: 0.8}, {hold_s: 100, coast_s: 10}]}\n");
  CHECK(coast.position_m.x() < fast.position_m.x() - 1);      // slower than cruising on at 0.8
  CHECK(coast.position_m.x() > cruise.position_m.x());        // but it had way on from 0.8
  CHECK(-coast.position_m.z() < -fast.position_m.z() - 0.1);  // nothing held its depth
}

TEST_CASE("estimate: a trial that cannot tell parameters apart leaves them at their prior, flagged") {
  tether::examples::register_example_controllers();
  // one cruise speed, no plan: linear and quadratic drag along x are not separable, and
  // nothing moves the vehicle sideways
  const Scenario sc = parse_scenario(
      tank_identify_in_process("    seed: 5\n    hidden: {thrust_scale: 1, drag_scale: 1.2}\n",
                               "identify: {endpoint: controller, manoeuvres: [{hold_s: 100, surge: 0.5}]}\n"),
      "cruise.yaml");
  SessionOptions o;
  o.steps = 2000;
  o.real_time_factor = 0;
  Session s(sc, tether::adapters::make_endpoints(sc), o);
  REQUIRE(run_session(s) == Outcome::completed);
  const nlohmann::json j = estimate_summary(s);
  CAPTURE(j.dump());
  REQUIRE(j.contains("identified"));
  for (const char* name : {"linear_drag_x", "quadratic_drag_x", "linear_drag_y", "quadratic_drag_y"}) {
    CAPTURE(name);
    CHECK_FALSE(j["identified"][name].get<bool>());
  }
  // held exactly where the scenario put them: the model's own values
  CHECK(j["estimates"]["linear_drag_y"].get<double>() == 30.0);
  CHECK(j["estimates"]["quadratic_drag_y"].get<double>() == 80.0);
  // their sigma is the prior's, not a confident number
  CHECK(j["stddev"]["linear_drag_y"].get<double>() >= 14.0);
}

TEST_CASE(
    "estimate against the stand-in over the identification plan: the CLI shows value, sigma, identified and "
    "the hidden truth, and no identified estimate is 2 sigma off") {
  tether::examples::register_example_controllers();
  const fs::path dir = fs::temp_directory_path() / ("tether_honest_twin_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string scenario = (dir / "tank_identify_in_process.yaml").string();
  // seed 1: tether-vehicle's default, so this is the demo's trial (scripts/demo.sh tank) without the broker
  std::ofstream(scenario) << tank_identify_in_process("    seed: 1\n");
  const auto r = tether::cli_test::run(tether::cli_test::tether_exe + " run " + scenario + " --rtf 0 --out " +
                                       (dir / "run").string() + " --quiet");
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("  identified") != std::string::npos);
  CHECK(r.out.find("not identified") != std::string::npos);
  CHECK(r.out.find("(hidden truth 0.9, ") != std::string::npos);  // the thrust coefficient's
  const auto summary = nlohmann::json::parse(read_file((dir / "run" / "summary.json").string()));
  const auto& f = summary["feedback"][0];
  CHECK(f["thruster_lag_model"] == "filter");  // the key left out: the default
  const auto& truth = summary["endpoints"][1]["hidden_truth"]["auv.hull"];
  int identified = 0;
  for (const auto& [name, value] : f["estimates"].items()) {
    if (!f["identified"][name].get<bool>()) continue;
    ++identified;
    const double sd = f["stddev"][name].get<double>();
    CAPTURE(name);
    CHECK(std::abs(value.get<double>() - truth[name].get<double>()) <= 2 * sd);
  }
  CHECK(identified >= 3);  // the plan identifies some: thrust, buoyancy, the current
  // what the trial left weak, each with the manoeuvre that would strengthen it
  REQUIRE(f["weak"].is_array());
  CHECK(!f["weak"].empty());
  for (const auto& w : f["weak"]) {
    CHECK(w["shrink"].get<double>() >= 1);
    CHECK(w["shrink"].get<double>() < 10);  // sqrt(identify_information)
    CHECK(!w["loadings"].empty());
    CHECK(!w["advice"].get<std::string>().empty());
  }
  CHECK(r.out.find("weak (sigma shrunk ") != std::string::npos);
  CHECK(r.out.find("strengthen with: ") != std::string::npos);
  // the report: each estimate's plot notes the hidden truth and whether the data identified it
  const std::string report = read_file((dir / "run" / "report.html").string());
  CHECK(report.find("hidden truth 0.9") != std::string::npos);
  CHECK(report.find("identified by the data") != std::string::npos);
  CHECK(report.find("not identified (docs/feedback.md)") != std::string::npos);
  // the estimator's state (information, noise scale, flags) is in the keyframes: a replay from
  // the middle continues bit for bit
  const auto replay = tether::cli_test::run(tether::cli_test::tether_exe + " replay " + (dir / "run").string() +
                                            "/recording.mcap --verify --from-step 3000 --quiet");
  INFO(replay.out);
  CHECK(replay.exit_code == 0);
  CHECK(replay.out.find("bit-identical") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE(
    "estimate: thruster_lag_model rotors finds slower rotors (the stand-in's thruster_lag_s), which the filter "
    "cannot represent, and its rotors' history is in the keyframes") {
  tether::examples::register_example_controllers();
  const fs::path dir = fs::temp_directory_path() / ("tether_rotor_lag_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  // the model's vehicle but for thrust x0.9 and rotors twice as slow (time constant 0.1 ->
  // 0.2 s: thruster_lag_s 0.1); only the thrust gain and the lag estimated
  const std::string hidden =
      "    hidden: {drag_scale: 1, linear_drag_axis_scale: [1, 1, 1], quadratic_drag_axis_scale: [1, 1, 1],\n"
      "             thrust_scale: 0.9, thruster_time_constant_scale: 2, thruster_dead_band: 0.02,\n"
      "             added_mass_fraction: 0, buoyancy_offset_n: 0, current_m_s: [0, 0, 0],\n"
      "             current_swing_m_s: [0, 0, 0],\n"
      "             velocity_bias_m_s: [0, 0, 0]}\n";
  const auto run = [&](const std::string& lag_model) {
    std::string text = tank_identify_in_process(hidden);
    const std::string all =
        "[thrust, linear_drag, quadratic_drag, buoyancy, current, thruster_lag, added_mass, angular_drag]";
    const auto at = text.find(all);
    REQUIRE(at != std::string::npos);
    text.replace(at, all.size(),
                 "[thrust, thruster_lag]\n        model_structure: exact\n        thruster_lag_model: " + lag_model);
    const std::string scenario = (dir / (lag_model + ".yaml")).string();
    std::ofstream(scenario) << text;
    const auto r = tether::cli_test::run(tether::cli_test::tether_exe + " run " + scenario +
                                         " --rtf 0 --steps 3000 --out " + (dir / lag_model).string() + " --quiet");
    INFO(r.out);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("[" + lag_model + "]") != std::string::npos);  // the lag's line says which ran
    return nlohmann::json::parse(read_file((dir / lag_model / "summary.json").string()))["feedback"][0];
  };
  const nlohmann::json rotors = run("rotors");
  CAPTURE(rotors.dump());
  CHECK(rotors["thruster_lag_model"] == "rotors");
  CHECK_FALSE(rotors["misfit"].get<bool>());
  CHECK(rotors["identified"]["thruster_lag_s"].get<bool>());
  CHECK(std::abs(rotors["estimates"]["thruster_lag_s"].get<double>() - 0.1) < 0.01);  // 0.094 after 30 s
  CHECK(std::abs(rotors["estimates"]["thrust_coefficient"].get<double>() - 0.9) < 0.01);
  // a keyframe in the middle holds the rotors' history: the replay from it continues bit for bit
  const auto replay = tether::cli_test::run(tether::cli_test::tether_exe + " replay " + (dir / "rotors").string() +
                                            "/recording.mcap --verify --from-step 1500 --quiet");
  INFO(replay.out);
  CHECK(replay.exit_code == 0);
  CHECK(replay.out.find("bit-identical") != std::string::npos);
  // the first-order filter on the whole input (the default) cannot represent the slower rotors:
  // it flags the misfit and its lag is far off
  const nlohmann::json filter = run("filter");
  CAPTURE(filter.dump());
  CHECK(filter["thruster_lag_model"] == "filter");
  CHECK(filter["misfit"].get<bool>());
  CHECK(filter["estimates"]["thruster_lag_s"].get<double>() > 0.15);  // 0.198
  fs::remove_all(dir);
}

TEST_CASE("estimate with thruster_lag_model rotors: a keyframe's rotors' history is checked before it is used") {
  tether::examples::register_example_controllers();
  std::string text = tank_identify_in_process("    seed: 3\n");
  const std::string delay = "        input_delay_steps: 1";
  const auto at = text.find(delay);
  REQUIRE(at != std::string::npos);
  text.insert(at, "        thruster_lag_model: rotors\n");
  const Scenario sc = parse_scenario(text, "rotors.yaml");
  SessionOptions o;
  o.steps = 300;
  o.real_time_factor = 0;
  Session s(sc, tether::adapters::make_endpoints(sc), o);
  REQUIRE(run_session(s) == Outcome::completed);
  REQUIRE(s.processors().front()->type() == "estimate");
  std::string snap;
  s.processors().front()->snapshot(snap);
  // 4 thrusters: their speeds at the last step's end and the live twin's, then each ring
  // slot's commands and speeds (the ring: horizon 50 + warm-up 100 + delay 1 + 2 = 153 slots)
  const std::size_t rotors = sizeof(double) * 4 * (2 + 2 * 153);
  REQUIRE(snap.size() > rotors + 4);
  const std::size_t count_at = snap.size() - rotors - 4;
  std::uint32_t n = 0;
  std::memcpy(&n, snap.data() + count_at, 4);
  CHECK(n == 4);
  const auto restores = [&](const std::string& bytes) {
    auto fresh = make_feedback_processors(sc);
    return fresh.front()->restore(bytes);
  };
  CHECK(restores(snap));
  CHECK_FALSE(restores(snap.substr(0, snap.size() - 1)));  // short
  CHECK_FALSE(restores(snap + "x"));                       // long
  for (const std::uint32_t bad : {3U, 5U, 0xFFFFFFF0U}) {  // another vehicle's count, or garbage
    std::string b = snap;
    std::memcpy(b.data() + count_at, &bad, 4);
    INFO(bad);
    CHECK_FALSE(restores(b));
  }
}
