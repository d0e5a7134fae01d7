// SPDX-License-Identifier: Apache-2.0
// The lock-step loop with test-double endpoints that go silent, fault or answer late.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tether/runtime/in_process.hpp"
#include "tether/runtime/session.hpp"

using namespace tether::runtime;

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
  ScriptedEndpoint(const EndpointConfig& config, TimeoutPolicy policy)
      : Endpoint(with_policy(config, policy)) {}

  std::uint64_t silent_at = UINT64_MAX;      // no reply for exactly this step
  std::uint64_t silent_from = UINT64_MAX;    // no reply from this step on
  std::uint64_t fault_from = UINT64_MAX;     // broken from this step on
  std::uint64_t late_at = UINT64_MAX;        // reply only on the 3rd gather call of this step
  std::atomic<bool>* stop_after_calls = nullptr;
  int gather_calls = 0;
  int publishes = 0;
  bool stopped = false;

  bool publish(const StepContext& ctx, const WorldState&) override {
    ++publishes;
    if (ctx.step >= fault_from) {
      fault_message_ = "peer went away";
      return false;
    }
    return true;
  }
  GatherStatus gather(const StepContext& ctx, SteadyClock::time_point, Reply& reply) override {
    ++gather_calls;
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
  CHECK(rig.ep->counters.replies == 10);
  CHECK(rig.ep->counters.misses == 0);
  CHECK(rig.ep->stopped);
  // momentum is the sum of F dt over the steps: (1 + 2 + ... + 10) * 0.01
  CHECK(rig.session->state().bodies[0].linear_momentum.x() == doctest::Approx(0.55));
}

TEST_CASE("policy hold: a silent step reuses the last reply and counts a miss") {
  Rig rig(TimeoutPolicy::hold, 6, [](ScriptedEndpoint& e) { e.silent_at = 5; });
  CHECK(rig.session->run(rig.stop) == Outcome::completed);
  CHECK(rig.applied_force() == 5.0);  // step 4's reply, held
  CHECK(rig.ep->counters.misses == 1);
  CHECK(rig.ep->counters.replies == 5);
}

TEST_CASE("policy safe: a silent step applies the endpoint's safe command") {
  Rig rig(TimeoutPolicy::safe, 6, [](ScriptedEndpoint& e) { e.silent_at = 5; });
  CHECK(rig.session->run(rig.stop) == Outcome::completed);
  CHECK(rig.applied_force() == -1.0);
  CHECK(rig.ep->counters.misses == 1);
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
  CHECK(rig.ep->counters.late == 1);
  CHECK(rig.ep->counters.misses == 0);
  CHECK(rig.ep->counters.replies == 7);
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
    CHECK(rig.session->run(rig.stop) == Outcome::completed);
    CHECK(rig.ep->counters.misses == 6);
    CHECK(rig.ep->counters.faults == 6);
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

TEST_CASE("the in-process depth_heading_hold scenario holds its target depth and runs deterministically") {
  auto run = [](std::uint64_t steps) {
    Scenario sc = load_scenario(TETHER_SOURCE_DIR "/config/scenarios/in_process_depth_hold.yaml");
    std::vector<std::unique_ptr<Endpoint>> eps;
    eps.push_back(std::make_unique<InProcessEndpoint>(sc.endpoints[0], sc.model));
    SessionOptions o;
    o.steps = steps;
    o.real_time_factor = 0;
    Session s(sc, std::move(eps), o);
    std::atomic<bool> stop{false};
    REQUIRE(s.run(stop) == Outcome::completed);
    return s.summary();
  };
  const auto a = run(3000);
  const auto b = run(3000);
  CHECK(a["state_hash"] == b["state_hash"]);
  CHECK(std::abs(a["endpoints"][0]["depth_error_m"].get<double>()) < 0.05);
  CHECK(a["steps"] == 3000);
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
