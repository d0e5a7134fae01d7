// SPDX-License-Identifier: Apache-2.0
// The physics step on several threads: the same bits as on one, for any thread count.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "shape_test_util.hpp"
#include "tether/physics/physics.hpp"
#include "tether/physics/terrain.hpp"
#include "tether/physics/workers.hpp"

using namespace tether::runtime;
using namespace tether::runtime::test;

namespace {

void add_body(WorldModel& model, WorldState& state, const Shape& shape, double mass, const Vec3& pos, const Vec3& vel,
              const Quat& q) {
  BodyModel b;
  b.name = "body" + std::to_string(model.bodies.size());
  b.shape = shape;
  b.mass_kg = mass;
  b.restitution = 0.4;
  b.friction = 0.5;
  finish_body_model(b, nullptr, nullptr);
  model.bodies.push_back(b);
  BodyState s;
  s.position_m = pos;
  s.orientation = q;
  state.bodies.push_back(s);
  set_velocity(model, state, static_cast<int>(model.bodies.size()) - 1, vel, Vec3(0.3, -0.2, 0.5));
}

// a busy world under water: a walled pit with terrain and a pipe, 600 bodies of every shape
// sinking into it and onto each other (many islands, big ones, impacts, resting piles), and 100
// swimmers above pushed by thrust that turns with them
struct Busy {
  WorldModel model;
  WorldState state;
  StepInputs inputs;

  explicit Busy(int threads) {
    model.threads = threads;
    model.water.present = true;
    model.water.surface_z_m = 8.0;
    model.water.current_m_s = Vec3(0.2, 0.1, 0);
    std::vector<std::vector<double>> rows;
    for (int j = 0; j < 12; ++j) {
      std::vector<double> row;
      for (int i = 0; i < 12; ++i) row.push_back(0.05 * ((i * 7 + j * 3) % 5));
      rows.push_back(row);
    }
    model.heightfields.push_back(make_heightfield(rows, 0.5, 0.5, "floor"));
    StaticBody floor;
    floor.name = "floor";
    floor.shape.kind = ShapeKind::heightfield;
    floor.shape.heightfield = 0;
    floor.position_m = Vec3(-2.75, -2.75, 0);
    model.statics.push_back(floor);
    const Vec3 walls[4] = {{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}};
    for (const Vec3& n : walls) {
      StaticBody w;
      w.name = "wall";
      w.shape = half_space(n, -2.5);  // solid beyond 2.5 m
      model.statics.push_back(w);
    }
    StaticBody pipe;
    pipe.name = "pipe";
    pipe.shape = cylinder(0.15, 2.0);
    pipe.position_m = Vec3(0, 0, 0.6);
    model.statics.push_back(pipe);
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<double> u(-1, 1);
    const Shape shapes[4] = {sphere(0.09), half_box(0.08, 0.07, 0.06), capsule(0.06, 0.08), cylinder(0.07, 0.07)};
    for (int i = 0; i < 600; ++i) {
      const Vec3 p(2.2 * u(rng), 2.2 * u(rng), 0.4 + 0.3 * (i / 40) + 0.05 * u(rng));
      add_body(model, state, shapes[i % 4], 8.0 + 0.1 * (i % 13), p, Vec3(u(rng), u(rng), -1.0),
               quat_from_rpy(u(rng), u(rng), u(rng)));
    }
    for (int i = 0; i < 100; ++i)
      add_body(model, state, half_box(0.15, 0.1, 0.1), 6.5, Vec3(-2 + 0.44 * (i % 10), -2 + 0.44 * (i / 10), 5.5),
               Vec3(0.5, 0, 0), quat_from_rpy(0.1 * i, 0.05, 0.02 * i));
    inputs.resize(model.bodies.size());
    for (std::size_t i = 600; i < model.bodies.size(); ++i)
      inputs.wrenches[i].add_body_force_at(Vec3(8, 0, -3), Vec3(-0.3, 0, 0.05));
  }
};

bool same_report(const StepReport& a, const StepReport& b) {
  if (a.substeps != b.substeps || a.toi_cuts != b.toi_cuts || a.impacts != b.impacts || a.outrunners != b.outrunners ||
      a.pairs_tested != b.pairs_tested || a.contact_points != b.contact_points ||
      a.contact_solves != b.contact_solves || a.max_sweeps != b.max_sweeps ||
      a.max_penetration_m != b.max_penetration_m || a.contacts.size() != b.contacts.size())
    return false;
  for (std::size_t k = 0; k < a.contacts.size(); ++k) {
    const ContactEvent& p = a.contacts[k];
    const ContactEvent& q = b.contacts[k];
    if (p.body_a != q.body_a || p.body_b != q.body_b || p.static_index != q.static_index || p.point_m != q.point_m ||
        p.normal != q.normal || p.impulse_n_s != q.impulse_n_s)
      return false;
  }
  return true;
}

}  // namespace

TEST_CASE("the worker pool runs every part exactly once per call, on whichever thread is free") {
  for (int threads : {1, 2, 3, 5}) {
    CAPTURE(threads);
    WorkerPool pool(threads);
    CHECK(pool.threads() == threads);
    std::vector<std::atomic<int>> hits(12);
    int expected[12] = {};
    for (int round = 0; round < 3000; ++round) {
      const int parts = 1 + round % 11;  // fewer, as many and more parts than threads
      pool.run(parts, [&](int part) { hits[static_cast<std::size_t>(part)].fetch_add(1); });
      for (int p = 0; p < parts; ++p) ++expected[p];
    }
    for (int p = 0; p < 12; ++p) CHECK(hits[static_cast<std::size_t>(p)].load() == expected[p]);
  }
  // the caller and the workers share the parts: with parts that wait for each other, two
  // threads must be running them at once
  WorkerPool pool(2);
  std::atomic<int> arrived{0};
  std::thread::id who[2];
  pool.run(2, [&](int part) {
    who[part] = std::this_thread::get_id();
    arrived.fetch_add(1);
    while (arrived.load() < 2) std::this_thread::yield();
  });
  CHECK(who[0] != who[1]);
}

TEST_CASE("a busy world gives the same state, counters and contacts at 1, 2, 3 and 4 threads") {
  Busy one(1);
  std::vector<Busy> many;
  for (int t : {2, 3, 4}) many.emplace_back(t);
  StepReport r1;
  r1.reserve_contacts(4096);
  std::vector<StepReport> rs(many.size());
  for (auto& r : rs) r.reserve_contacts(4096);
  std::uint64_t contacts = 0, impacts = 0;
  std::uint32_t biggest_sweeps = 0;
  std::size_t most_events = 0;
  for (int k = 0; k < 50; ++k) {
    REQUIRE(step(one.model, one.state, one.inputs, 0.01, &r1) == StepStatus::ok);
    contacts += r1.contact_points;
    impacts += r1.impacts;
    biggest_sweeps = std::max(biggest_sweeps, r1.max_sweeps);
    most_events = std::max(most_events, r1.contacts.size());
    const std::uint64_t h = hash_state(one.state);
    for (std::size_t m = 0; m < many.size(); ++m) {
      CAPTURE(k);
      CAPTURE(many[m].model.threads);
      REQUIRE(step(many[m].model, many[m].state, many[m].inputs, 0.01, &rs[m]) == StepStatus::ok);
      REQUIRE(hash_state(many[m].state) == h);
      REQUIRE(same_report(rs[m], r1));
    }
  }
  // the world did exercise contacts, impacts and the solver
  MESSAGE(contacts, " contact points, ", impacts, " impacts, ", biggest_sweeps, " sweeps, ", most_events,
          " touching pairs at most");
  CHECK(contacts > 10000);
  CHECK(impacts > 100);
  CHECK(biggest_sweeps > 1);
  CHECK(most_events > 30);
}

TEST_CASE("the thread count can change between steps without changing the result") {
  Busy fixed(1);
  Busy changing(1);
  PhysicsScratch scratch;  // the pool is rebuilt in the same scratch when the count changes
  for (int k = 0; k < 30; ++k) {
    changing.model.threads = 1 + k % 4;
    REQUIRE(step(fixed.model, fixed.state, fixed.inputs, 0.01) == StepStatus::ok);
    REQUIRE(step(changing.model, changing.state, changing.inputs, 0.01, nullptr, scratch) == StepStatus::ok);
    REQUIRE(hash_state(changing.state) == hash_state(fixed.state));
  }
}
