// SPDX-License-Identifier: Apache-2.0
// The lock-step loop's own cost per step with one in-process endpoint that does nothing,
// as fast as possible. Baseline in the same run: exactly the physics the loop does per step
// on the same trajectory — the projection (a copy of S_k stepped) and the advance (S_k
// stepped) — so overhead = loop - baseline measures the rest of the loop. (An earlier baseline,
// 2 x one physics step timed on another trajectory, could come out larger than the loop: the
// sub-step count depends on the state, and the line printed negative overheads.) Rounds
// alternate loop and baseline; the best of each is compared.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstdio>

#include "bench_util.hpp"
#include "tether/loop/in_process.hpp"
#include "tether/loop/session.hpp"

using namespace tether::runtime;

namespace {

const char* scenario_text = R"(name: overhead
world: {water: {density_kg_m3: 1025}}
vehicles:
  - name: auv
    bodies: [{name: hull, shape: {type: cylinder, radius_m: 0.1, length_m: 1.2}, mass_kg: 38,
              initial: {position_m: [0, 0, -2]}}]
loop: {period_ms: 10, real_time_factor: 0, steps: 1}
endpoints:
  - {name: idle, type: in_process, vehicle: auv, controller: idle}
)";

}  // namespace

int main(int argc, char** argv) {
  const bool quick = tether::bench::quick_mode(argc, argv);
  const Scenario sc = parse_scenario(scenario_text, "overhead.yaml");
  const long steps = quick ? 20'000 : 1'000'000;

  const int rounds = quick ? 2 : 5;
  // baseline: the loop's two physics steps per step, from the scenario's initial state
  auto baseline_round = [&] {
    WorldState state = sc.initial, projected = sc.initial;
    StepInputs inputs;
    inputs.resize(sc.model.bodies.size());
    const auto t0 = tether::bench::Clock::now();
    for (long i = 0; i < steps; ++i) {
      projected.step = state.step;
      projected.time_ns = state.time_ns;
      projected.bodies.assign(state.bodies.begin(), state.bodies.end());
      if (step(sc.model, projected, inputs, 0.01) != StepStatus::ok) std::abort();
      if (step(sc.model, state, inputs, 0.01) != StepStatus::ok) std::abort();
    }
    return tether::bench::seconds_since(t0) / static_cast<double>(steps);
  };
  // the loop with one endpoint that answers at once with nothing
  double p50 = 0, p99 = 0;
  auto loop_round = [&] {
    std::vector<std::unique_ptr<Endpoint>> eps;
    eps.push_back(std::make_unique<InProcessEndpoint>(sc.endpoints[0], sc.model));
    SessionOptions options;
    options.steps = static_cast<std::uint64_t>(steps);
    options.real_time_factor = 0;
    Session session(sc, std::move(eps), options);
    std::atomic<bool> stop{false};
    const auto t0 = tether::bench::Clock::now();
    if (session.run(stop) != Outcome::completed) std::abort();
    const double s = tether::bench::seconds_since(t0) / static_cast<double>(steps);
    p50 = static_cast<double>(session.step_time_ns().percentile(0.5));
    p99 = static_cast<double>(session.step_time_ns().percentile(0.99));
    return s;
  };
  double physics_s = 1e300, loop_s = 1e300;
  for (int r = 0; r < rounds; ++r) {
    physics_s = std::min(physics_s, baseline_round());
    loop_s = std::min(loop_s, loop_round());
  }

  const double overhead_ns = (loop_s - physics_s) * 1e9;
  std::printf("loop_overhead: 1 vehicle, 1 in-process endpoint (idle), %ld steps at rtf 0, best of %d rounds\n", steps,
              rounds);
  std::printf("  physics per step (baseline)  %10.0f ns   (projection + advance on the loop's trajectory)\n",
              physics_s * 1e9);
  std::printf("  loop step                    %10.0f ns   (%.2f x the baseline; goal <= 1.3)\n", loop_s * 1e9,
              loop_s / physics_s);
  std::printf("  loop overhead per step       %10.0f ns   (goal < 2000 ns)\n", overhead_ns);
  std::printf("  step time p50 %.0f ns, p99 %.0f ns (as the loop measures itself, last round)\n", p50, p99);
  tether::bench::figure(
      "loop step / one physics step (1 vehicle)",
      tether::bench::format("%.2f (%.0f vs %.0f ns)", loop_s / physics_s, loop_s * 1e9, physics_s * 1e9), "<= 1.3");
  return 0;
}
