// SPDX-License-Identifier: Apache-2.0
// Physics steps per second and ns per body-step for N free bodies in water, then the same
// world on 1, 2, 4 … threads. Baselines in the same run: the per-body cost at N = 1 (scaling
// should be flat) and one thread (the speed-up); the state hash must not change with threads.
//
//   world_step [--quick] [--max-threads T]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.hpp"
#include "tether/physics/physics.hpp"

using namespace tether::runtime;

namespace {

// `spacing_m` apart on a 100 x 100 grid per layer: 2.5 m keeps every pair's bounding boxes
// apart (free flight only); 1 m leaves neighbours 0.1 m apart, so the narrow phase runs for
// every neighbour in every sub-step
void make_world(int n, double spacing_m, WorldModel& model, WorldState& state, StepInputs& inputs) {
  model = WorldModel{};
  // the per-body cost of the full sub-step rule, five sub-steps a step, as this benchmark has
  // always measured it: free sub-steps would take these bodies in one (bench/vehicle_step)
  model.free_substep_s = model.max_substep_s;
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
    s.position_m = Vec3(spacing_m * (i % 100), spacing_m * ((i / 100) % 100), -1.0 - spacing_m * (i / 10000));
    s.orientation = quat_from_rpy(0.01 * i, 0.02, 0.03 * i);
    state.bodies.push_back(s);
  }
  inputs.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    inputs.wrenches[static_cast<std::size_t>(i)].add_body_force_at(Vec3(5, 0, -2), Vec3(-0.6, 0, 0));
}

constexpr double dt = 0.01;  // 10 ms loop step, default 2 ms physics sub-steps: 5 RK4 steps

// seconds per step of a world built with make_world(n, spacing) on `threads` threads
double time_world(int n, double spacing_m, int threads, double min_s, std::uint64_t* hash_after = nullptr,
                  int hash_steps = 0) {
  WorldModel model;
  WorldState state;
  StepInputs inputs;
  make_world(n, spacing_m, model, state, inputs);
  model.threads = threads;
  PhysicsScratch scratch;
  if (hash_after) {
    for (int k = 0; k < hash_steps; ++k)
      if (step(model, state, inputs, dt, nullptr, scratch) != StepStatus::ok) std::abort();
    *hash_after = hash_state(state);
  }
  // every 1 s of world time the bodies start over: left to drift for minutes (a long timing
  // run of a small world) they would meet, and the figure would be of collisions
  const WorldState initial = state;
  return tether::bench::time_per_iteration(
      [&](long iterations) {
        for (long i = 0; i < iterations; ++i) {
          if (i % 100 == 0) state.bodies.assign(initial.bodies.begin(), initial.bodies.end());
          if (step(model, state, inputs, dt, nullptr, scratch) != StepStatus::ok) std::abort();
        }
      },
      min_s);
}

void table(const char* title, double spacing_m, bool quick, bool figures) {
  std::printf("%s\n", title);
  std::printf("%8s %14s %16s %22s %10s\n", "bodies", "steps/s", "ns/body-step", "x real time (1 core)", "vs N=1");
  double per_body_1 = 0;
  for (int n : {1, 10, 100, 1000, 10000}) {
    if (quick && n > 100) break;
    const double s = time_world(n, spacing_m, 1, quick ? 0.02 : 0.5);
    const double per_body_ns = s * 1e9 / n;
    if (n == 1) per_body_1 = per_body_ns;
    std::printf("%8d %14.0f %16.1f %22.2f %10.2f\n", n, 1.0 / s, per_body_ns, dt / s, per_body_ns / per_body_1);
    if (figures && (n == 1 || n == 10000))
      tether::bench::figure(tether::bench::format("free bodies, N = %d: ns per body-step", n),
                            tether::bench::format("%.0f", per_body_ns), "<= 1500");
    if (figures && n == 10000)
      tether::bench::figure("free bodies, N = 10000, 1 core: x real time", tether::bench::format("%.2f", dt / s),
                            ">= 1");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = tether::bench::quick_mode(argc, argv);
  int max_threads = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--max-threads") max_threads = std::max(1, std::atoi(argv[i + 1]));
  std::printf("world_step: bodies in water (gravity, buoyancy, damping, body thrust), dt = 10 ms, 5 RK4 sub-steps\n");
  table("free bodies, 2.5 m apart (no two bounding boxes meet):", 2.5, quick, true);
  if (!quick) table("packed, 1 m apart (neighbours 0.1 m apart: narrow phase every sub-step):", 1.0, quick, false);

  const int n = quick ? 1000 : 10000;
  std::printf("threads: %d free bodies (wall time; %u hardware threads)\n", n, std::thread::hardware_concurrency());
  std::printf("%8s %14s %16s %14s %10s %18s\n", "threads", "steps/s", "ns/body-step", "x real time", "speed-up",
              "state vs 1 thread");
  double one = 0;
  std::uint64_t hash_one = 0;
  std::vector<int> counts;
  for (int t = 1; t < max_threads; t *= 2) counts.push_back(t);
  counts.push_back(max_threads);
  for (int t : counts) {
    std::uint64_t hash = 0;
    const double s = time_world(n, 2.5, t, quick ? 0.02 : 0.5, &hash, 20);
    if (t == 1) one = s, hash_one = hash;
    std::printf("%8d %14.0f %16.1f %14.2f %10.2f %18s\n", t, 1.0 / s, s * 1e9 / n, dt / s, one / s,
                hash == hash_one ? "bit-identical" : "DIFFERENT");
    if (hash != hash_one) return 1;
    if (t == counts.back() && t > 1)
      tether::bench::figure(tether::bench::format("free bodies, N = %d, %d threads: x real time", n, t),
                            tether::bench::format("%.2f (%.2f x 1 thread)", dt / s, one / s), "-");
  }
  return 0;
}
