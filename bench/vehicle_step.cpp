// SPDX-License-Identifier: Apache-2.0
// One vehicle's physics step, as the loop does it twice per step (docs/performance.md, "One
// vehicle's step"): the AUV of config/scenarios/default.yaml at its 10 ms period and the
// BlueROV2 of config/scenarios/ardusub_bluerov2.yaml at ArduSub's 2.5 ms, each under a steady
// thrust that keeps it cruising and turning (a new trajectory every simulated 5 s, from the
// scenario's start). Baseline in the same run: the same step with the sub-step rule of
// contact scenes everywhere (world.free_substep_s = world.max_substep_s), which is what every
// step cost before free sub-steps. Rounds alternate the two; the best of each is compared.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench_util.hpp"
#include "test_paths.hpp"
#include "tether/physics/physics.hpp"
#include "tether/scenario/scenario.hpp"

using namespace tether::runtime;

namespace {

struct Case {
  const char* label;
  const char* file;
};

// ns per step of `steps` steps from the scenario's start under a steady cruise wrench
double time_steps(const Scenario& sc, long steps, std::uint64_t& substeps) {
  WorldState state = sc.initial;
  StepInputs inputs;
  inputs.resize(sc.model.bodies.size());
  inputs.wrenches[0].force_body_n = Vec3(12.0, 0.0, -10.0);
  inputs.wrenches[0].torque_body_nm = Vec3(0.0, 0.0, 0.4);
  PhysicsScratch scratch;
  StepReport report;
  const double dt = static_cast<double>(sc.loop.period_ns) * 1e-9;
  const long restart = std::max(1L, static_cast<long>(5.0 / dt));
  substeps = 0;
  const auto t0 = tether::bench::Clock::now();
  for (long i = 0; i < steps; ++i) {
    if (i % restart == 0) state = sc.initial;
    if (step(sc.model, state, inputs, dt, &report, scratch) != StepStatus::ok) std::abort();
    substeps += report.substeps;
  }
  return tether::bench::seconds_since(t0) * 1e9 / static_cast<double>(steps);
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = tether::bench::quick_mode(argc, argv);
  const long steps = quick ? 20'000 : 400'000;
  const int rounds = quick ? 2 : 5;
  const Case cases[] = {{"AUV of default.yaml, 10 ms", "default.yaml"},
                        {"BlueROV2 of ardusub_bluerov2.yaml, 2.5 ms", "ardusub_bluerov2.yaml"}};
  for (const Case& c : cases) {
    const std::string path = TETHER_SOURCE_DIR + "/config/scenarios/" + c.file;
    const Scenario sc = load_scenario(path);
    Scenario fixed = sc;
    fixed.model.free_substep_s = fixed.model.max_substep_s;
    double best = 1e300, best_fixed = 1e300;
    std::uint64_t subs = 0, subs_fixed = 0;
    for (int r = 0; r < rounds; ++r) {
      best_fixed = std::min(best_fixed, time_steps(fixed, steps, subs_fixed));
      best = std::min(best, time_steps(sc, steps, subs));
    }
    std::printf("%s: %.0f ns a step (%.2f sub-steps), fixed %g ms sub-steps %.0f ns (%.2f sub-steps)\n", c.label, best,
                static_cast<double>(subs) / static_cast<double>(steps), sc.model.max_substep_s * 1e3, best_fixed,
                static_cast<double>(subs_fixed) / static_cast<double>(steps));
    tether::bench::figure(
        std::string("one vehicle's physics step, ") + c.label,
        tether::bench::format("%.0f ns; %.2f of the fixed sub-steps' %.0f ns", best, best / best_fixed, best_fixed),
        "<= 1 us (quiet machine)");
  }
  return 0;
}
