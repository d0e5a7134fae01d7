// SPDX-License-Identifier: Apache-2.0
// The lock-step loop's own cost per step with one in-process endpoint that does nothing,
// as fast as possible. Baseline in the same run: the bare physics of that step (the loop
// runs it twice: projection and advance), so overhead = loop - 2 x physics.
#include <atomic>
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

  // baseline: the physics alone
  WorldState state = sc.initial;
  StepInputs inputs;
  inputs.resize(sc.model.bodies.size());
  const double physics_s = tether::bench::time_per_iteration(
      [&](long n) {
        for (long i = 0; i < n; ++i)
          if (step(sc.model, state, inputs, 0.01) != StepStatus::ok) std::abort();
      },
      quick ? 0.02 : 0.5);

  // the loop with one endpoint that answers at once with nothing
  std::vector<std::unique_ptr<Endpoint>> eps;
  eps.push_back(std::make_unique<InProcessEndpoint>(sc.endpoints[0], sc.model));
  SessionOptions options;
  options.steps = static_cast<std::uint64_t>(steps);
  options.real_time_factor = 0;
  Session session(sc, std::move(eps), options);
  std::atomic<bool> stop{false};
  const auto t0 = tether::bench::Clock::now();
  if (session.run(stop) != Outcome::completed) return 1;
  const double loop_s = tether::bench::seconds_since(t0) / static_cast<double>(steps);

  const double overhead_ns = (loop_s - 2 * physics_s) * 1e9;
  std::printf("loop_overhead: 1 vehicle, 1 in-process endpoint (idle), %ld steps at rtf 0\n", steps);
  std::printf("  physics step (baseline)      %10.0f ns\n", physics_s * 1e9);
  std::printf("  loop step (project+advance)  %10.0f ns   (%.2f x the physics step)\n", loop_s * 1e9,
              loop_s / physics_s);
  std::printf("  loop overhead per step       %10.0f ns   (goal < 2000 ns)\n", overhead_ns);
  std::printf("  step time p50 %.0f ns, p99 %.0f ns (as the loop measures itself)\n",
              static_cast<double>(session.step_time_ns().percentile(0.5)),
              static_cast<double>(session.step_time_ns().percentile(0.99)));
  return 0;
}
