// SPDX-License-Identifier: Apache-2.0
// N equal spheres in a closed box, each pushed toward its own target point (re-drawn every
// 2 s) so they keep colliding; 10 s of world time at a 10 ms loop period, in Tether and, when
// built with Bullet (TETHER_HAVE_BULLET), in Bullet. Prints wall time of the step calls,
// the ratio, Tether's sub-steps, and interpenetrations deeper than 1 % of a radius counted at
// the end of every loop step. Also times the three broad phases on the final scene.
//
//   collisions [max_bodies] [seconds]     e.g. `collisions 1000 1` for a quick smoke run
// Environment: NOBULLET=1 skips Bullet, ONLY=<N> runs one size, NOBP=1 skips the broad-phase
// timing, VERBOSE=1 prints overlaps per loop step, THREADS=<T> (default: the cores) runs Tether
// again on T threads (wall time; the final state must be bit-identical), THREADS=1 skips that.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <numbers>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.hpp"
#include "tether/physics/broadphase.hpp"
#include "tether/physics/collision.hpp"
#include "tether/physics/physics.hpp"

#ifdef TETHER_HAVE_BULLET
#include <btBulletDynamicsCommon.h>
#endif

using namespace tether::runtime;
using Clock = std::chrono::steady_clock;

// CPU time of this thread: less disturbed than wall time on a shared machine
double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

namespace {

constexpr double radius_m = 0.05;
constexpr double mass_kg = 1.0;
constexpr double restitution = 0.5;  // per pair, both engines
constexpr double friction = 0.3;     // per pair, both engines
constexpr double period_s = 0.01;
constexpr double retarget_s = 2.0;
constexpr double stiffness = 4.0;  // 1/s^2: push toward the target
constexpr double damping = 2.0;    // 1/s
constexpr double max_accel = 5.0;  // m/s^2

struct Scene {
  int n = 0;
  double half_m = 0;  // the box is [-half, half]^3
  std::vector<Vec3> start;
  std::vector<std::vector<Vec3>> targets;  // per body, one per retarget period
};

Scene make_scene(int n, double seconds) {
  Scene s;
  s.n = n;
  // 20 % of the box filled with spheres
  const double volume = n * 4.0 / 3.0 * std::numbers::pi * std::pow(radius_m, 3) / 0.2;
  s.half_m = 0.5 * std::cbrt(volume);
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> u(-1, 1);
  // jittered lattice start: no overlaps
  const int side = static_cast<int>(std::ceil(std::cbrt(static_cast<double>(n))));
  const double pitch = 2 * s.half_m / side;
  for (int i = 0; i < n; ++i) {
    const int x = i % side, y = (i / side) % side, z = i / (side * side);
    const double j = 0.5 * std::max(0.0, pitch - 2.2 * radius_m);
    s.start.emplace_back(-s.half_m + (x + 0.5) * pitch + j * u(rng), -s.half_m + (y + 0.5) * pitch + j * u(rng),
                         -s.half_m + (z + 0.5) * pitch + j * u(rng));
  }
  const int periods = static_cast<int>(std::ceil(seconds / retarget_s)) + 2;
  const double reach = s.half_m - 2 * radius_m;
  s.targets.resize(static_cast<std::size_t>(n));
  for (auto& t : s.targets)
    for (int p = 0; p < periods; ++p) t.emplace_back(reach * u(rng), reach * u(rng), reach * u(rng));
  return s;
}

Vec3 push_force(const Scene& s, int i, int step, const Vec3& x, const Vec3& v) {
  // each body changes target on its own phase, so the crowd never settles
  const int phase = (i * 37) % static_cast<int>(retarget_s / period_s);
  const auto period = static_cast<std::size_t>((step + phase) * period_s / retarget_s);
  const Vec3& target = s.targets[static_cast<std::size_t>(i)][period];
  Vec3 a = stiffness * (target - x) - damping * v;
  const double len = a.norm();
  if (len > max_accel) a *= max_accel / len;
  return mass_kg * a;
}

// interpenetrations deeper than 1 % of a radius (pairs and walls), and the deepest, over r
struct Overlaps {
  long count = 0;
  double deepest = 0;
};

Overlaps count_overlaps(const Scene& s, const std::vector<Vec3>& x, std::vector<int>& cell_start,
                        std::vector<int>& cell_items) {
  Overlaps o;
  const double limit = 0.01 * radius_m;
  const double cell = 2 * radius_m;
  const int side = static_cast<int>(std::ceil(2 * s.half_m / cell)) + 1;
  auto cell_of = [&](const Vec3& p, int k) {
    return std::clamp(static_cast<int>((p[k] + s.half_m) / cell), 0, side - 1);
  };
  cell_start.assign(static_cast<std::size_t>(side * side * side) + 1, 0);
  cell_items.resize(x.size());
  auto index = [&](int a, int b, int c) { return static_cast<std::size_t>((c * side + b) * side + a); };
  for (const Vec3& p : x) ++cell_start[index(cell_of(p, 0), cell_of(p, 1), cell_of(p, 2)) + 1];
  for (std::size_t k = 1; k < cell_start.size(); ++k) cell_start[k] += cell_start[k - 1];
  std::vector<int> fill(cell_start.begin(), cell_start.end() - 1);
  for (std::size_t i = 0; i < x.size(); ++i)
    cell_items[static_cast<std::size_t>(fill[index(cell_of(x[i], 0), cell_of(x[i], 1), cell_of(x[i], 2))]++)] =
        static_cast<int>(i);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const Vec3& p = x[i];
    for (int k = 0; k < 3; ++k) {
      const double depth = std::abs(p[k]) + radius_m - s.half_m;
      o.deepest = std::max(o.deepest, depth / radius_m);
      if (depth > limit) ++o.count;
    }
    const int cx = cell_of(p, 0), cy = cell_of(p, 1), cz = cell_of(p, 2);
    for (int dz = -1; dz <= 1; ++dz)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          const int a = cx + dx, b = cy + dy, c = cz + dz;
          if (a < 0 || b < 0 || c < 0 || a >= side || b >= side || c >= side) continue;
          const std::size_t ci = index(a, b, c);
          for (int k = cell_start[ci]; k < cell_start[ci + 1]; ++k) {
            const auto j = static_cast<std::size_t>(cell_items[static_cast<std::size_t>(k)]);
            if (j <= i) continue;
            const double depth = 2 * radius_m - (x[j] - p).norm();
            o.deepest = std::max(o.deepest, depth / radius_m);
            if (depth > limit) ++o.count;
          }
        }
  }
  return o;
}

struct Result {
  double wall_s = 0;
  double cpu_s = 0;
  std::uint64_t substeps = 0;
  std::uint32_t max_substeps = 0;
  long overlaps = 0;
  double deepest = 0;
  std::uint64_t outrunners = 0;
  std::uint64_t solves = 0, points = 0;
  std::uint32_t max_sweeps = 0;
  std::vector<Vec3> final_positions;
};

Result run_tether(const Scene& s, int steps, int threads = 1) {
  WorldModel model;
  model.gravity_m_s2 = Vec3::Zero();
  model.max_substep_s = period_s;  // sub-steps come from the motion rule alone
  model.threads = threads;
  const double h = s.half_m;
  const Vec3 normals[6] = {{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1}};
  for (const Vec3& nrm : normals) {
    StaticBody wall;
    wall.shape.kind = ShapeKind::plane;
    wall.shape.normal = nrm;
    wall.shape.offset_m = -h;
    wall.restitution = restitution;
    wall.friction = friction;
    model.statics.push_back(wall);
  }
  WorldState state;
  for (int i = 0; i < s.n; ++i) {
    BodyModel b;
    b.shape.kind = ShapeKind::sphere;
    b.shape.radius_m = radius_m;
    b.mass_kg = mass_kg;
    b.restitution = restitution;
    b.friction = friction;
    finish_body_model(b, nullptr, nullptr);
    model.bodies.push_back(b);
    BodyState bs;
    bs.position_m = s.start[static_cast<std::size_t>(i)];
    state.bodies.push_back(bs);
  }
  StepInputs inputs;
  inputs.resize(model.bodies.size());
  PhysicsScratch scratch;
  StepReport report;
  Result r;
  std::vector<Vec3> x(static_cast<std::size_t>(s.n));
  std::vector<int> cs, ci;
  Clock::duration busy{};
  for (int k = 0; k < steps; ++k) {
    for (int i = 0; i < s.n; ++i) {
      const BodyState& b = state.bodies[static_cast<std::size_t>(i)];
      inputs.wrenches[static_cast<std::size_t>(i)].force_world_n =
          push_force(s, i, k, b.position_m, b.linear_momentum / mass_kg);
    }
    const auto t0 = Clock::now();
    const double c0 = thread_cpu_s();
    if (step(model, state, inputs, period_s, &report, scratch) != StepStatus::ok) {
      std::printf("tether: numerical fault at step %d\n", k);
      std::exit(1);
    }
    r.cpu_s += thread_cpu_s() - c0;
    busy += Clock::now() - t0;
    r.substeps += report.substeps;
    r.max_substeps = std::max(r.max_substeps, report.substeps);
    r.outrunners += report.outrunners;
    r.solves += report.contact_solves;
    r.points += report.contact_points;
    r.max_sweeps = std::max(r.max_sweeps, report.max_sweeps);
    for (int i = 0; i < s.n; ++i) x[static_cast<std::size_t>(i)] = state.bodies[static_cast<std::size_t>(i)].position_m;
    const Overlaps o = count_overlaps(s, x, cs, ci);
    r.overlaps += o.count;
    r.deepest = std::max(r.deepest, o.deepest);
    if (std::getenv("VERBOSE") && (o.count > 0 || k % 25 == 0))
      std::printf("step %d overlaps %ld deepest %.4f r, engine says %.4f r, outrunners %u\n", k, o.count, o.deepest,
                  report.max_penetration_m / radius_m, report.outrunners);
  }
  r.wall_s = std::chrono::duration<double>(busy).count();
  r.final_positions = x;
  return r;
}

#ifdef TETHER_HAVE_BULLET
Result run_bullet(const Scene& s, int steps) {
  btDefaultCollisionConfiguration config;
  btCollisionDispatcher dispatcher(&config);
  btDbvtBroadphase broadphase;
  btSequentialImpulseConstraintSolver solver;
  btDiscreteDynamicsWorld world(&dispatcher, &broadphase, &solver, &config);
  world.setGravity(btVector3(0, 0, 0));
  // Bullet multiplies the two bodies' coefficients: give each the square root
  const btScalar e = static_cast<btScalar>(std::sqrt(restitution));
  const btScalar mu = static_cast<btScalar>(std::sqrt(friction));
  std::vector<std::unique_ptr<btCollisionShape>> shapes;
  std::vector<std::unique_ptr<btRigidBody>> bodies;
  std::vector<std::unique_ptr<btDefaultMotionState>> motions;
  const btScalar h = static_cast<btScalar>(s.half_m);
  const btVector3 normals[6] = {{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1}};
  for (const btVector3& nrm : normals) {
    shapes.push_back(std::make_unique<btStaticPlaneShape>(nrm, -h));
    btRigidBody::btRigidBodyConstructionInfo info(0, nullptr, shapes.back().get());
    info.m_restitution = e;
    info.m_friction = mu;
    bodies.push_back(std::make_unique<btRigidBody>(info));
    world.addRigidBody(bodies.back().get());
  }
  auto sphere = std::make_unique<btSphereShape>(static_cast<btScalar>(radius_m));
  btVector3 inertia(0, 0, 0);
  sphere->calculateLocalInertia(static_cast<btScalar>(mass_kg), inertia);
  std::vector<btRigidBody*> dyn;
  for (int i = 0; i < s.n; ++i) {
    const Vec3& p = s.start[static_cast<std::size_t>(i)];
    btTransform t;
    t.setIdentity();
    t.setOrigin(btVector3(static_cast<btScalar>(p.x()), static_cast<btScalar>(p.y()), static_cast<btScalar>(p.z())));
    motions.push_back(std::make_unique<btDefaultMotionState>(t));
    btRigidBody::btRigidBodyConstructionInfo info(static_cast<btScalar>(mass_kg), motions.back().get(), sphere.get(),
                                                  inertia);
    info.m_restitution = e;
    info.m_friction = mu;
    bodies.push_back(std::make_unique<btRigidBody>(info));
    bodies.back()->setActivationState(DISABLE_DEACTIVATION);
    world.addRigidBody(bodies.back().get());
    dyn.push_back(bodies.back().get());
  }
  Result r;
  std::vector<Vec3> x(static_cast<std::size_t>(s.n));
  std::vector<int> cs, ci;
  Clock::duration busy{};
  for (int k = 0; k < steps; ++k) {
    for (int i = 0; i < s.n; ++i) {
      btRigidBody* b = dyn[static_cast<std::size_t>(i)];
      const btVector3& bp = b->getCenterOfMassPosition();
      const btVector3& bv = b->getLinearVelocity();
      const Vec3 f = push_force(s, i, k, Vec3(bp.x(), bp.y(), bp.z()), Vec3(bv.x(), bv.y(), bv.z()));
      b->applyCentralForce(
          btVector3(static_cast<btScalar>(f.x()), static_cast<btScalar>(f.y()), static_cast<btScalar>(f.z())));
    }
    const auto t0 = Clock::now();
    const double c0 = thread_cpu_s();
    // one internal step of exactly the loop period
    world.stepSimulation(static_cast<btScalar>(period_s), 1, static_cast<btScalar>(period_s));
    r.cpu_s += thread_cpu_s() - c0;
    busy += Clock::now() - t0;
    r.substeps += 1;
    for (int i = 0; i < s.n; ++i) {
      const btVector3& bp = dyn[static_cast<std::size_t>(i)]->getCenterOfMassPosition();
      x[static_cast<std::size_t>(i)] = Vec3(bp.x(), bp.y(), bp.z());
    }
    const Overlaps o = count_overlaps(s, x, cs, ci);
    r.overlaps += o.count;
    r.deepest = std::max(r.deepest, o.deepest);
  }
  for (auto& b : bodies) world.removeRigidBody(b.get());
  r.wall_s = std::chrono::duration<double>(busy).count();
  return r;
}
#endif

// the broad phases on the final scene, boxes grown by a typical sub-step's motion
void time_broad_phases(const std::vector<Vec3>& x) {
  std::vector<Aabb> boxes;
  for (const Vec3& p : x) {
    Aabb b{p, p};
    b.inflate(radius_m * 1.3);
    boxes.push_back(b);
  }
  BroadPhase bp;
  std::vector<BoxPair> pairs;
  std::printf("  broad phase on %zu boxes:", boxes.size());
  for (BroadPhaseKind kind : {BroadPhaseKind::grid, BroadPhaseKind::sweep_and_prune, BroadPhaseKind::brute_force}) {
    if (kind == BroadPhaseKind::brute_force && boxes.size() > 2000) continue;
    bp.find_pairs(boxes, kind, pairs);  // warm-up
    const int reps = std::max(1, static_cast<int>(200000 / static_cast<double>(boxes.size())));
    const auto t0 = Clock::now();
    for (int k = 0; k < reps; ++k) bp.find_pairs(boxes, kind, pairs);
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / reps;
    const char* name = kind == BroadPhaseKind::grid              ? "grid"
                       : kind == BroadPhaseKind::sweep_and_prune ? "sap"
                                                                 : "brute";
    std::printf("  %s %.1f us (%zu pairs)", name, us, pairs.size());
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  const int max_n = argc > 1 ? std::atoi(argv[1]) : 10000;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 10.0;
  const int steps = static_cast<int>(std::llround(seconds / period_s));
  std::printf(
      "collisions: equal spheres r = %.2f m in a closed box (20 %% filled), pushed to targets; "
      "%.1f s at %.0f ms loop period\n",
      radius_m, seconds, period_s * 1e3);
  std::printf(
      "T = Tether, B = Bullet; times are of the step calls only, cpu = this thread's CPU time (wall time\n"
      "suffers on a shared machine); ratio = T/B; T_rt_cpu = simulated s per CPU s; overlaps = pairs (and\n"
      "walls) deeper than 1 %% of a radius, summed over the ends of all loop steps (-1: not run)\n");
  std::printf("%6s | %9s %9s %9s %9s | %7s %7s | %8s | %9s %7s | %10s %9s | %10s %9s\n", "N", "T_wall_s", "B_wall_s",
              "T_cpu_s", "B_cpu_s", "ratio_w", "ratio_c", "T_rt_cpu", "T_substep", "max/stp", "T_overlaps", "T_deep/r",
              "B_overlaps", "B_deep/r");
  for (int n : {100, 1000, 10000}) {
    if (n > max_n) break;
    if (const char* only = std::getenv("ONLY"); only && std::atoi(only) != n) continue;
    const Scene s = make_scene(n, seconds);
    const Result t = run_tether(s, steps);
    Result b;
    b.overlaps = -1;
#ifdef TETHER_HAVE_BULLET
    if (!std::getenv("NOBULLET")) b = run_bullet(s, steps);
#endif
    std::printf("%6d | %9.3f %9.3f %9.3f %9.3f | %7.2f %7.2f | %7.2fx | %9llu %7u | %10ld %9.4f | %10ld %9.4f\n", n,
                t.wall_s, b.wall_s, t.cpu_s, b.cpu_s, b.wall_s > 0 ? t.wall_s / b.wall_s : 0.0,
                b.cpu_s > 0 ? t.cpu_s / b.cpu_s : 0.0, seconds / t.cpu_s, static_cast<unsigned long long>(t.substeps),
                t.max_substeps, t.overlaps, t.deepest, b.overlaps, b.deepest);
    std::printf("       tether: outrunners %llu, contact points/step %.1f, solver updates/point %.1f, max sweeps %u\n",
                static_cast<unsigned long long>(t.outrunners), double(t.points) / steps,
                double(t.solves) / std::max<double>(1, double(t.points)), t.max_sweeps);
    using tether::bench::figure;
    using tether::bench::format;
    const std::string label = format("colliding spheres, N = %d, 1 core", n);
    figure(label + ": x real time (CPU)", format("%.2f", seconds / t.cpu_s), n <= 1000 ? ">= 10" : "-");
    figure(label + ": overlaps > 1 % r", format("%ld", t.overlaps), "0");
    if (b.cpu_s > 0) figure(label + ": Tether / Bullet CPU", format("%.2f", t.cpu_s / b.cpu_s), "< 1");
    const char* env_threads = std::getenv("THREADS");
    const int threads =
        env_threads ? std::max(1, std::atoi(env_threads)) : static_cast<int>(std::thread::hardware_concurrency());
    if (threads > 1) {
      const Result tt = run_tether(s, steps, threads);
      const bool same = tt.final_positions == t.final_positions;
      std::printf(
          "       %d threads: wall %.3f s (%.2f x real time), %.2f x the one-thread wall time; final state %s\n",
          threads, tt.wall_s, seconds / tt.wall_s, t.wall_s / tt.wall_s, same ? "bit-identical" : "DIFFERENT");
      figure(format("colliding spheres, N = %d, %d threads: x real time (wall)", n, threads),
             format("%.2f (%.2f x 1 thread)", seconds / tt.wall_s, t.wall_s / tt.wall_s), n >= 10000 ? ">= 1" : "-");
      if (!same) return 1;
    }
    if (!std::getenv("NOBP")) time_broad_phases(t.final_positions);
  }
  return 0;
}
