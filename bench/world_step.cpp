// SPDX-License-Identifier: Apache-2.0
// Physics steps per second and ns per body-step for N free bodies in water.
// Baseline in the same run: the per-body cost at N = 1 (scaling should be flat).
#include <cstdio>
#include <vector>

#include "bench_util.hpp"
#include "tether/physics/physics.hpp"

using namespace tether::runtime;

namespace {

void make_world(int n, WorldModel& model, WorldState& state, StepInputs& inputs) {
  model = WorldModel{};
  model.water.present = true;
  model.water.density_kg_m3 = 1025;
  model.water.current_m_s = Vec3(0.1, 0, 0);
  state = WorldState{};
  for (int i = 0; i < n; ++i) {
    BodyModel b;
    b.name = "v" + std::to_string(i) + ".hull";
    b.shape.kind = i % 2 ? ShapeKind::box : ShapeKind::cylinder;
    b.shape.radius_m = 0.1;
    b.shape.half_length_m = 0.6;
    b.shape.half_extents_m = Vec3(0.3, 0.2, 0.1);
    b.mass_kg = 30;
    b.damping = {Vec3(10, 30, 30), Vec3(20, 80, 80), Vec3(2, 6, 6), Vec3(1, 4, 4)};
    b.centre_of_buoyancy_m = Vec3(0, 0, 0.02);
    finish_body_model(b, nullptr, nullptr);
    model.bodies.push_back(b);
    BodyState s;
    s.position_m = Vec3(i % 100, (i / 100) % 100, -1.0 - i / 10000);
    s.orientation = quat_from_rpy(0.01 * i, 0.02, 0.03 * i);
    state.bodies.push_back(s);
  }
  inputs.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    inputs.wrenches[static_cast<std::size_t>(i)].add_body_force_at(Vec3(5, 0, -2), Vec3(-0.6, 0, 0));
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = tether::bench::quick_mode(argc, argv);
  const double dt = 0.01;  // 10 ms loop step, default 2 ms physics sub-steps: 5 RK4 steps
  std::printf(
      "world_step: free bodies in water (gravity, buoyancy, damping, body thrust), dt = 10 ms, 5 RK4 sub-steps\n");
  std::printf("%8s %14s %16s %18s %12s\n", "bodies", "steps/s", "ns/body-step", "x real time (1 core)", "vs N=1");
  double per_body_1 = 0;
  for (int n : {1, 10, 100, 1000, 10000}) {
    if (quick && n > 100) break;
    WorldModel model;
    WorldState state;
    StepInputs inputs;
    make_world(n, model, state, inputs);
    const double s = tether::bench::time_per_iteration(
        [&](long iterations) {
          for (long i = 0; i < iterations; ++i)
            if (step(model, state, inputs, dt) != StepStatus::ok) std::abort();
        },
        quick ? 0.02 : 0.5);
    const double per_body_ns = s * 1e9 / n;
    if (n == 1) per_body_1 = per_body_ns;
    std::printf("%8d %14.0f %16.1f %18.1f %12.2f\n", n, 1.0 / s, per_body_ns, dt / s, per_body_ns / per_body_1);
  }
  return 0;
}
