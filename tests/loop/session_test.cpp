// SPDX-License-Identifier: Apache-2.0
// The lock-step loop with test-double endpoints that go silent, fault or answer late.
#include <doctest/doctest.h>

#include <cstring>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "test_paths.hpp"
#include "tether/firmware_shim/payloads.h"
#include "tether/hal/device_bank.hpp"

#include "tether/loop/in_process.hpp"
#include "tether/loop/session.hpp"
#include "example_controllers.hpp"

using namespace tether::runtime;
namespace hal = tether::hal;

namespace {

const char* scenario_text = R"(name: loop
world: {gravity_m_s2: [0, 0, 0]}
vehicles:
  - name: v
    bodies: [{name: b, shape: {type: sphere, radius_m: 0.5}, mass_kg: 1}]
loop: {period_ms: 10, real_time_factor: 0, steps: 10}
endpoints:
  - {name: e, type: scripted, vehicle: v, deadline_ms: 1}
)";

// answers step k with force (k + 1, 0, 0) so tests can tell which reply was applied;
// goes silent, late or broken as told
class ScriptedEndpoint final : public Endpoint {
 public:
  ScriptedEndpoint(const EndpointConfig& config, TimeoutPolicy policy) : Endpoint(with_policy(config, policy)) {}

  std::uint64_t silent_at = UINT64_MAX;         // no reply for exactly this step
  std::uint64_t silent_from = UINT64_MAX;       // no reply from this step on
  std::uint64_t fault_from = UINT64_MAX;        // broken from this step on
  std::uint64_t late_at = UINT64_MAX;           // reply only on the 3rd gather call of this step
  std::uint64_t throw_publish_at = UINT64_MAX;  // publish throws at this step
  std::uint64_t throw_gather_at = UINT64_MAX;   // gather throws at this step
  std::atomic<bool>* stop_after_calls = nullptr;
  int gather_calls = 0;
  int publishes = 0;
  bool stopped = false;

  bool publish(const StepContext& ctx, const WorldState&) override {
    ++publishes;
    if (ctx.step == throw_publish_at) throw std::runtime_error("publish exploded");
    if (ctx.step >= fault_from) {
      fault_message_ = "peer went away";
      return false;
    }
    return true;
  }
  GatherStatus gather(const StepContext& ctx, SteadyClock::time_point, Reply& reply) override {
    ++gather_calls;
    if (ctx.step == throw_gather_at) throw std::runtime_error("gather exploded");
    if (ctx.step >= fault_from) return GatherStatus::fault;
    if (ctx.step == silent_at || ctx.step >= silent_from) {
      if (stop_after_calls && gather_calls >= 3) stop_after_calls->store(true);
      return GatherStatus::timeout;
    }
    if (ctx.step == late_at && ++late_calls_ < 3) return GatherStatus::timeout;
    reply.clear();
    reply.step = ctx.step;
    BodyWrench w;
    w.force_world_n = Vec3(static_cast<double>(ctx.step + 1), 0, 0);
    reply.wrenches.emplace_back(0, w);
    return GatherStatus::ready;
  }
  void safe_reply(Reply& reply) const override {
    reply.clear();
    BodyWrench w;
    w.force_world_n = Vec3(-1, 0, 0);
    reply.wrenches.emplace_back(0, w);
  }
  void stop() override { stopped = true; }

 private:
  static EndpointConfig with_policy(EndpointConfig c, TimeoutPolicy p) {
    c.policy = p;
    return c;
  }
  int late_calls_ = 0;
};

struct Rig {
  Scenario scenario = parse_scenario(scenario_text, "loop.yaml");
  ScriptedEndpoint* ep = nullptr;
  std::unique_ptr<Session> session;
  std::atomic<bool> stop{false};

  Rig(TimeoutPolicy policy, std::uint64_t steps, void (*setup)(ScriptedEndpoint&)) {
    std::vector<std::unique_ptr<Endpoint>> eps;
    auto e = std::make_unique<ScriptedEndpoint>(scenario.endpoints[0], policy);
    ep = e.get();
    setup(*ep);
    eps.push_back(std::move(e));
    SessionOptions options;
    options.steps = steps;
    session = std::make_unique<Session>(scenario, std::move(eps), options);
  }
  double applied_force() const { return session->last_inputs().wrenches[0].force_world_n.x(); }
};

}  // namespace

TEST_CASE("every step's reply is applied in its own step") {
  Rig rig(TimeoutPolicy::hold, 10, [](ScriptedEndpoint&) {});
  CHECK(rig.session->run(rig.stop) == Outcome::completed);
  CHECK(rig.session->steps_done() == 10);
  CHECK(rig.applied_force() == 10.0);  // step 9's reply
  CHECK(rig.session->endpoint_counters(0).replies == 10);
  CHECK(rig.session->endpoint_counters(0).misses == 0);
  CHECK(rig.ep->stopped);
  // momentum is the sum of F dt over the steps: (1 + 2 + ... + 10) * 0.01
  CHECK(rig.session->state().bodies[0].linear_momentum.x() == doctest::Approx(0.55));
}

TEST_CASE("policy hold: a silent step reuses the last reply and counts a miss") {
  Rig rig(TimeoutPolicy::hold, 6, [](ScriptedEndpoint& e) { e.silent_at = 5; });
  CHECK(rig.session->run(rig.stop) == Outcome::completed);
  CHECK(rig.applied_force() == 5.0);  // step 4's reply, held
  CHECK(rig.session->endpoint_counters(0).misses == 1);
  CHECK(rig.session->endpoint_counters(0).replies == 5);
}

TEST_CASE("policy safe: a silent step applies the endpoint's safe command") {
  Rig rig(TimeoutPolicy::safe, 6, [](ScriptedEndpoint& e) { e.silent_at = 5; });
  CHECK(rig.session->run(rig.stop) == Outcome::completed);
  CHECK(rig.applied_force() == -1.0);
  CHECK(rig.session->endpoint_counters(0).misses == 1);
}

TEST_CASE("policy abort: a silent step stops the session before advancing it") {
  Rig rig(TimeoutPolicy::abort, 10, [](ScriptedEndpoint& e) { e.silent_at = 5; });
  CHECK(rig.session->run(rig.stop) == Outcome::aborted);
  CHECK(rig.session->steps_done() == 5);
  CHECK(rig.session->state().step == 5);
  CHECK(rig.session->abort_reason() ==
        "endpoint \"e\" missed its deadline at step 5; policy abort stopped the session");
  CHECK(rig.ep->stopped);
  const auto summary = rig.session->summary();
  CHECK(summary["outcome"] == "aborted");
  CHECK(summary["endpoints"][0]["misses"] == 1);
}

TEST_CASE("policy block: a late reply is waited for, applied and counted late") {
  Rig rig(TimeoutPolicy::block, 8, [](ScriptedEndpoint& e) { e.late_at = 3; });
  CHECK(rig.session->run(rig.stop) == Outcome::completed);
  CHECK(rig.session->endpoint_counters(0).late == 1);
  CHECK(rig.session->endpoint_counters(0).misses == 0);
  CHECK(rig.session->endpoint_counters(0).replies == 7);
  CHECK(rig.session->state().bodies[0].linear_momentum.x() == doctest::Approx(0.36));
}

TEST_CASE("policy block: a silent endpoint can still be stopped") {
  std::atomic<bool>* flag = nullptr;
  Rig rig(TimeoutPolicy::block, 10, [](ScriptedEndpoint& e) { e.silent_at = 2; });
  flag = &rig.stop;
  rig.ep->stop_after_calls = flag;
  CHECK(rig.session->run(rig.stop) == Outcome::stopped);
  CHECK(rig.session->steps_done() == 2);
}

TEST_CASE("a faulted endpoint: hold keeps going and counts, block aborts") {
  SUBCASE("hold") {
    Rig rig(TimeoutPolicy::hold, 10, [](ScriptedEndpoint& e) { e.fault_from = 4; });
    CHECK(rig.session->run(rig.stop) == Outcome::faulted);  // all steps ran, not with every endpoint
    CHECK(rig.session->endpoint_counters(0).misses == 6);
    CHECK(rig.session->endpoint_counters(0).faults == 6);
    CHECK(rig.ep->publishes == 5);  // never published to again once broken
    CHECK(rig.applied_force() == 4.0);
    CHECK(rig.session->summary()["endpoints"][0]["fault"] == "peer went away");
  }
  SUBCASE("block") {
    Rig rig(TimeoutPolicy::block, 10, [](ScriptedEndpoint& e) { e.fault_from = 4; });
    CHECK(rig.session->run(rig.stop) == Outcome::aborted);
    CHECK(rig.session->abort_reason() ==
          "endpoint \"e\" faulted (peer went away) at step 4; policy block stopped the session");
  }
}

TEST_CASE("tank_obstacles: the seabed rises under the altimeter, the sonar sees the block, the hull stops at it") {
  tether::examples::register_example_controllers();  // the scenario's depth_heading_hold
  Scenario sc = load_scenario(TETHER_SOURCE_DIR + "/config/scenarios/tank_obstacles.yaml");
  REQUIRE(sc.model.heightfields.size() == 1);
  std::vector<std::unique_ptr<Endpoint>> eps;
  eps.push_back(std::make_unique<InProcessEndpoint>(sc.endpoints[0], sc.model));
  SessionOptions o;
  o.steps = 4000;  // 40 s: dive, cruise east 19 m, run into the block
  o.real_time_factor = 0;
  const Session* session = nullptr;
  const WorldState crates_start = sc.initial;
  const double block_face_x = 8.0, hull_half_length = 0.6;
  double max_front_x = -1e9, early_altitude = -1, late_altitude = -1, worst_sonar_error = 0;
  int sonar_checks = 0;
  bool bumped = false;
  float f = 0;
  o.after_step = [&](const WorldState& s) {
    const hal::DeviceBank& bank = session->devices();
    const double x = s.bodies[0].position_m.x();
    max_front_x = std::max(max_front_x, x + hull_half_length);
    const std::uint8_t* data = nullptr;
    std::size_t size = 0;
    if (bank.reading(static_cast<std::size_t>(bank.find("auv.hull.bump")), data, size) == hal::Status::ok &&
        (data[TETHER_CONTACT_OFFSET_FLAGS] & TETHER_CONTACT_FLAG_CONTACT))
      bumped = true;
    if (bank.reading(static_cast<std::size_t>(bank.find("auv.hull.altimeter")), data, size) == hal::Status::ok) {
      std::memcpy(&f, data + TETHER_ALTIMETER_OFFSET_ALTITUDE_M, sizeof f);
      if (x < -2 && s.bodies[0].position_m.z() < -1.95) early_altitude = f;  // over the flat part
      if (x > 6.5) late_altitude = f;
    }
    if (x > -4 && x < 4 &&
        bank.reading(static_cast<std::size_t>(bank.find("auv.hull.sonar")), data, size) == hal::Status::ok) {
      std::memcpy(&f, data + TETHER_SONAR_OFFSET_DISTANCE_M, sizeof f);
      worst_sonar_error = std::max(worst_sonar_error, std::abs(f - (block_face_x - (x + hull_half_length))));
      ++sonar_checks;
    }
    return true;
  };
  Session s(sc, std::move(eps), o);
  session = &s;
  std::atomic<bool> stop{false};
  REQUIRE(s.run(stop) == Outcome::completed);
  CAPTURE(max_front_x);
  CHECK(max_front_x > block_face_x - 0.05);   // it got there
  CHECK(max_front_x < block_face_x + 0.005);  // and did not pass into the block
  CHECK(bumped);
  // seabed at -6 m in the west, -5.2 m at x = 7; the hull holds 2 m depth
  CHECK(early_altitude == doctest::Approx(3.9).epsilon(0.05));
  CHECK(late_altitude < early_altitude - 0.5);
  CHECK(sonar_checks > 100);
  CHECK(worst_sonar_error < 0.3);  // the sonar's noise-free range to the block face, within the cone's spread
  // the crates and the drum rest where they were put
  for (std::size_t i = 1; i < 4; ++i)
    CHECK((s.state().bodies[i].position_m - crates_start.bodies[i].position_m).norm() < 0.01);
}

TEST_CASE("the session keeps loop.history_steps states: state_at(t) between them, a rewind re-advances bit for bit") {
  std::string text = scenario_text;
  text.replace(text.find("steps: 10}"), 10, "steps: 10, history_steps: 4}");
  Scenario sc = parse_scenario(text, "loop.yaml");
  std::vector<std::unique_ptr<Endpoint>> eps;
  eps.push_back(std::make_unique<ScriptedEndpoint>(sc.endpoints[0], TimeoutPolicy::hold));
  SessionOptions o;
  o.steps = 10;
  std::vector<WorldState> seen;
  o.after_step = [&](const WorldState& s) {
    seen.push_back(s);
    return true;
  };
  Session s(sc, std::move(eps), o);
  std::atomic<bool> stop{false};
  REQUIRE(s.run(stop) == Outcome::completed);
  const StateStore& h = s.history();
  REQUIRE(h.size() == 4);
  CHECK(h.newest()->step == 10);
  CHECK(h.oldest()->step == 7);
  CHECK(hash_state(*h.newest()) == hash_state(s.state()));
  CHECK(hash_state(*h.at_step(8)) == hash_state(seen[7]));
  // halfway between steps 8 and 9 (force k + 1 along x: positions differ)
  WorldState mid;
  REQUIRE(h.state_at((h.at_step(8)->time_ns + h.at_step(9)->time_ns) / 2, mid));
  CHECK(mid.bodies[0].position_m.x() ==
        doctest::Approx((h.at_step(8)->bodies[0].position_m.x() + h.at_step(9)->bodies[0].position_m.x()) / 2));
  CHECK_FALSE(h.state_at(h.oldest()->time_ns - 1, mid));
  // step 8 -> 9 again with the reply step 8 got (force 9 along x): the stored step 9 exactly
  StateStore copy = h;
  WorldState again;
  REQUIRE(copy.rewind(8, again));
  StepInputs in;
  in.resize(1);
  in.wrenches[0].force_world_n = Vec3(9, 0, 0);
  REQUIRE(step(s.model(), again, in, static_cast<double>(sc.loop.period_ns) * 1e-9) == StepStatus::ok);
  CHECK(hash_state(again) == hash_state(seen[8]));
}

TEST_CASE("pacing at a real-time factor keeps sim time close to wall time") {
  // behaviour, not speed: at rtf 1 the loop must not finish faster than real time
  Scenario sc = parse_scenario(scenario_text, "loop.yaml");
  std::vector<std::unique_ptr<Endpoint>> eps;
  eps.push_back(std::make_unique<InProcessEndpoint>(sc.endpoints[0], sc.model, make_controller("idle")));
  SessionOptions opts;
  opts.real_time_factor = 1.0;
  opts.steps = 20;
  Session s(sc, std::move(eps), opts);
  std::atomic<bool> stop{false};
  const auto t0 = SteadyClock::now();
  REQUIRE(s.run(stop) == Outcome::completed);
  CHECK(SteadyClock::now() - t0 >= std::chrono::milliseconds(190));
}

// the exception boundary: a throw from an endpoint is that endpoint's fault, handled by its
// policy; a throw from a feedback processor fails the session naming it and the step

TEST_CASE("an endpoint whose gather throws is faulted and policy hold carries on") {
  Rig rig(TimeoutPolicy::hold, 8, [](ScriptedEndpoint& e) { e.throw_gather_at = 3; });
  CHECK(rig.session->run(rig.stop) == Outcome::faulted);
  CHECK(rig.session->steps_done() == 8);
  CHECK(rig.session->endpoint_counters(0).faults == 5);  // steps 3..7: a faulted endpoint stays faulted
  CHECK(rig.ep->fault_message() == "gather threw at step 3: gather exploded");
  CHECK(rig.applied_force() == 3.0);  // step 2's reply, held
  const auto s = rig.session->summary();
  CHECK(s["outcome"] == "completed_with_faults");
  CHECK(s["reason"].get<std::string>().find("gather exploded") != std::string::npos);
  CHECK(s["endpoints"][0]["fault"] == "gather threw at step 3: gather exploded");
}

TEST_CASE("an endpoint whose publish throws under policy abort stops the session naming it and the step") {
  Rig rig(TimeoutPolicy::abort, 8, [](ScriptedEndpoint& e) { e.throw_publish_at = 4; });
  CHECK(rig.session->run(rig.stop) == Outcome::aborted);
  CHECK(rig.session->steps_done() == 4);
  const std::string& why = rig.session->abort_reason();
  CAPTURE(why);
  CHECK(why.find("endpoint \"e\"") != std::string::npos);
  CHECK(why.find("publish threw at step 4: publish exploded") != std::string::npos);
  CHECK(rig.ep->stopped);
}

namespace {

// a processor that throws at a given step, in the phase it declares
class ThrowingProcessor final : public FeedbackProcessor {
 public:
  void configure(const ConfigNode& node, const WorldModel&, int) override {
    at_ = static_cast<std::uint64_t>(node.integer_or("at_step", 0, 0, 1'000'000));
    phase_ = node.string_or("when", "post") == "pre" ? FeedbackPhase::pre : FeedbackPhase::post;
  }
  FeedbackPhase phase() const override { return phase_; }
  void pre(const FeedbackContext& ctx, const WorldModel&, const WorldState&, StepInputs&) override {
    if (ctx.step == at_) throw std::runtime_error("covariance not positive definite");
  }
  void post(const FeedbackContext& ctx, const WorldModel&, const WorldState&, WorldState&) override {
    if (ctx.step == at_) throw std::runtime_error("covariance not positive definite");
  }

 private:
  std::uint64_t at_ = 0;
  FeedbackPhase phase_ = FeedbackPhase::post;
};

}  // namespace

TEST_CASE("a feedback processor that throws fails the session at that step with its name and message") {
  register_feedback_processor("test_throwing", [] { return std::make_unique<ThrowingProcessor>(); });
  for (const char* when : {"pre", "post"}) {
    CAPTURE(when);
    std::string text = scenario_text;
    const std::string body = "bodies: [{name: b, shape: {type: sphere, radius_m: 0.5}, mass_kg: 1}]";
    text.replace(text.find(body), body.size(),
                 body + "\n    feedback: [{name: bad, type: test_throwing, when: " + when + ", at_step: 6}]");
    const Scenario sc = parse_scenario(text, "loop.yaml");
    std::vector<std::unique_ptr<Endpoint>> eps;
    auto e = std::make_unique<ScriptedEndpoint>(sc.endpoints[0], TimeoutPolicy::hold);
    ScriptedEndpoint* ep = e.get();
    eps.push_back(std::move(e));
    SessionOptions options;
    options.steps = 20;
    Session session(sc, std::move(eps), options);
    std::atomic<bool> stop{false};
    CHECK(session.run(stop) == Outcome::failed);
    CHECK(session.steps_done() == 6);  // steps 0..5 completed; step 6 did not
    const std::string& why = session.abort_reason();
    CAPTURE(why);
    CHECK(why.find("feedback processor \"bad\" (test_throwing) threw at step 6") != std::string::npos);
    CHECK(why.find("covariance not positive definite") != std::string::npos);
    CHECK(why.find(std::string("in phase ") + when) != std::string::npos);
    CHECK(session.summary()["outcome"] == "failed");
    CHECK(session.summary()["reason"] == why);
    CHECK(ep->stopped);  // endpoints are stopped as after any other ending
  }
}

TEST_CASE("loop.profile_phases: the summary says the wall time of each phase, and nothing when it is off") {
  Rig off(TimeoutPolicy::hold, 20, [](ScriptedEndpoint&) {});
  CHECK(off.session->run(off.stop) == Outcome::completed);
  CHECK_FALSE(off.session->phase_profile().enabled());
  CHECK_FALSE(off.session->summary().contains("phase_profile"));

  Rig rig(TimeoutPolicy::hold, 20, [](ScriptedEndpoint&) {});
  rig.scenario.loop.profile_phases = true;
  std::vector<std::unique_ptr<Endpoint>> eps;
  auto e = std::make_unique<ScriptedEndpoint>(rig.scenario.endpoints[0], TimeoutPolicy::hold);
  e->late_at = 7;  // gather polls three times at step 7
  eps.push_back(std::move(e));
  SessionOptions options;
  options.steps = 20;
  Session session(rig.scenario, std::move(eps), options);
  CHECK(session.run(rig.stop) == Outcome::completed);
  const auto summary = session.summary();
  REQUIRE(summary.contains("phase_profile"));
  const auto& p = summary["phase_profile"];
  CHECK(p["steps"] == 20);
  // the phases that ran, in loop order; the ones with nothing to do (no devices, faults,
  // recorder, expectations) are absent
  const std::vector<std::string> order = p["order"];
  CHECK(order == std::vector<std::string>{"loop", "project", "publish", "gather", "pre", "advance", "post", "emit",
                                          "after_step", "pace"});
  double shares = 0;
  for (const auto& name : order) {
    const auto& ph = p["phases"][name];
    CHECK(ph["mean_ns_per_step"].get<double>() >= 0);
    // each runs once a step: its longest run is at least its mean
    CHECK(static_cast<double>(ph["max_ns"].get<std::uint64_t>()) >= ph["mean_ns_per_step"].get<double>());
    shares += ph["share"].get<double>();
  }
  CHECK(shares == doctest::Approx(1.0));
  // the physics phases do real work every step
  CHECK(p["phases"]["project"]["mean_ns_per_step"].get<double>() > 0);
  CHECK(p["phases"]["advance"]["mean_ns_per_step"].get<double>() > 0);
}
