// SPDX-License-Identifier: Apache-2.0
// Joints: a 50-link chain released horizontally from a fixed point, and a 20-segment tether
// hung slack between two fixed points and pushed by a side force, 10 s each at a 10 ms loop
// period with 2 ms sub-steps, in Tether and, when built with Bullet (TETHER_HAVE_BULLET), in
// Bullet (btPoint2PointConstraint, its default sequential-impulse solver, the same 2 ms steps).
// Prints the CPU time per simulated second, the ratio, and the largest joint error (distance
// between the two bodies' anchor points) seen at the end of any loop step.
//
//   joints [--quick]      Environment: NOBULLET=1 runs Tether alone.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "tether/physics/joints.hpp"
#include "tether/physics/physics.hpp"

#ifdef TETHER_HAVE_BULLET
#include <btBulletDynamicsCommon.h>
#endif

using namespace tether::runtime;
using namespace tether::bench;

namespace {

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

constexpr double period_s = 0.01;
constexpr double substep_s = 0.002;
constexpr double radius_m = 0.02;
constexpr double damping = 0.5;  // N per m/s on every link, from outside (both engines)

// links: capsules along x between consecutive joint points; joint k joins link k to link k-1
// (link 0 to the world at points[0]); `tail`: the last link also joins the world at the end
struct Scene {
  std::string name;
  std::vector<Vec3> points;  // joint points, one more than the links
  bool tail = false;
  Vec3 push{0, 0, 0};  // a constant side force on every link
  double link_mass = 0.1;
  double joint_tolerance_m = 0;  // Tether's post-stabilisation stops within this (0: the default, 1e-9)
};

Scene chain(int links) {
  Scene s;
  s.name = std::to_string(links) + "-link chain";
  for (int k = 0; k <= links; ++k) s.points.emplace_back(0.1 * k, 0, 0);
  return s;
}

Scene tether_cable(int segments) {
  // 20 m of cable between two points 16 m apart: a V 6 m deep, pushed sideways
  Scene s;
  s.name = std::to_string(segments) + "-segment tether";
  s.tail = true;
  s.push = Vec3(0, 0.05, 0);
  s.link_mass = 0.5;
  const Vec3 a(0, 0, 0), b(16, 0, 0), corner(8, 0, -6);
  for (int k = 0; k <= segments; ++k) {
    const double t = 2.0 * k / segments;
    s.points.push_back(t <= 1 ? Vec3(a + (corner - a) * t) : Vec3(corner + (b - corner) * (t - 1)));
  }
  return s;
}

struct Result {
  double cpu_s = 0;
  double worst_m = 0;
  bool ok = true;
  std::uint32_t max_sweeps = 0;  // Tether: most solver sweeps in any sub-step
  std::uint64_t solves = 0, substeps = 0;
  std::uint64_t state_hash = 0;  // Tether: hash_state at the end (same bits: same hash)
};

Result run_tether(const Scene& s, double seconds) {
  WorldModel model;
  WorldState state;
  model.max_substep_s = substep_s;
  if (s.joint_tolerance_m > 0) model.contact.joint_tolerance = s.joint_tolerance_m;
  const std::size_t links = s.points.size() - 1;
  for (std::size_t k = 0; k < links; ++k) {
    const Vec3 chord = s.points[k + 1] - s.points[k];
    BodyModel b;
    b.name = "link" + std::to_string(k);
    b.shape.kind = ShapeKind::capsule;
    b.shape.radius_m = radius_m;
    b.shape.half_length_m = 0.5 * chord.norm() - radius_m;
    b.mass_kg = s.link_mass;
    finish_body_model(b, nullptr, nullptr);
    model.bodies.push_back(b);
    BodyState st;
    st.position_m = 0.5 * (s.points[k] + s.points[k + 1]);
    st.orientation = Quat::FromTwoVectors(Vec3::UnitX(), chord.normalized());
    state.bodies.push_back(st);
  }
  for (std::size_t k = 0; k <= links; ++k) {
    if (k == links && !s.tail) break;
    JointSpec spec;
    spec.kind = JointKind::ball;
    spec.body_a = static_cast<int>(std::min(k, links - 1));
    spec.body_b = k == 0 || k == links ? -1 : static_cast<int>(k - 1);
    spec.anchor_world_m = s.points[k];
    model.joints.push_back(make_joint(spec, state));
  }
  StepInputs inputs;
  inputs.resize(links);
  StepReport report;
  Result r;
  const int steps = static_cast<int>(std::lround(seconds / period_s));
  for (int k = 0; k < steps; ++k) {
    for (std::size_t i = 0; i < links; ++i)
      inputs.wrenches[i].force_world_n = s.push - damping * linear_velocity(model, state, static_cast<int>(i));
    const double t0 = thread_cpu_s();
    r.ok = r.ok && step(model, state, inputs, period_s, &report) == StepStatus::ok;
    r.cpu_s += thread_cpu_s() - t0;
    r.max_sweeps = std::max(r.max_sweeps, report.max_sweeps);
    r.solves += report.contact_solves;
    r.substeps += report.substeps;
    for (const JointModel& j : model.joints) r.worst_m = std::max(r.worst_m, joint_error(j, state).linear_m);
  }
  r.state_hash = hash_state(state);
  return r;
}

#ifdef TETHER_HAVE_BULLET
btVector3 bt(const Vec3& v) {
  return {static_cast<btScalar>(v.x()), static_cast<btScalar>(v.y()), static_cast<btScalar>(v.z())};
}
Vec3 ei(const btVector3& v) { return {v.x(), v.y(), v.z()}; }

Result run_bullet(const Scene& s, double seconds) {
  btDefaultCollisionConfiguration config;
  btCollisionDispatcher dispatcher(&config);
  btDbvtBroadphase broadphase;
  btSequentialImpulseConstraintSolver solver;
  btDiscreteDynamicsWorld world(&dispatcher, &broadphase, &solver, &config);
  world.setGravity(btVector3(0, 0, static_cast<btScalar>(-9.81)));
  const std::size_t links = s.points.size() - 1;
  std::vector<std::unique_ptr<btCollisionShape>> shapes;
  std::vector<std::unique_ptr<btDefaultMotionState>> motions;
  std::vector<std::unique_ptr<btRigidBody>> bodies;
  std::vector<std::unique_ptr<btTypedConstraint>> joints;
  struct Pin {
    btRigidBody* a;
    btRigidBody* b;
    Vec3 in_a, in_b;  // body frames (b: world when null)
  };
  std::vector<Pin> pins;
  for (std::size_t k = 0; k < links; ++k) {
    const Vec3 chord = s.points[k + 1] - s.points[k];
    const double len = chord.norm();
    // Bullet's capsule lies along its y axis: turn y onto the chord
    shapes.push_back(
        std::make_unique<btCapsuleShape>(static_cast<btScalar>(radius_m), static_cast<btScalar>(len - 2 * radius_m)));
    const Quat q = Quat::FromTwoVectors(Vec3::UnitY(), chord / len);
    btTransform t;
    t.setIdentity();
    t.setOrigin(bt(0.5 * (s.points[k] + s.points[k + 1])));
    t.setRotation(btQuaternion(static_cast<btScalar>(q.x()), static_cast<btScalar>(q.y()), static_cast<btScalar>(q.z()),
                               static_cast<btScalar>(q.w())));
    motions.push_back(std::make_unique<btDefaultMotionState>(t));
    btVector3 inertia(0, 0, 0);
    shapes.back()->calculateLocalInertia(static_cast<btScalar>(s.link_mass), inertia);
    btRigidBody::btRigidBodyConstructionInfo info(static_cast<btScalar>(s.link_mass), motions.back().get(),
                                                  shapes.back().get(), inertia);
    bodies.push_back(std::make_unique<btRigidBody>(info));
    bodies.back()->setActivationState(DISABLE_DEACTIVATION);
    world.addRigidBody(bodies.back().get());
  }
  auto local = [&](std::size_t body, const Vec3& p) {
    const btTransform& t = bodies[body]->getCenterOfMassTransform();
    return ei(t.inverse() * bt(p));
  };
  for (std::size_t k = 0; k <= links; ++k) {
    if (k == links && !s.tail) break;
    const std::size_t a = std::min(k, links - 1);
    const Vec3 in_a = local(a, s.points[k]);
    if (k == 0 || k == links) {
      joints.push_back(std::make_unique<btPoint2PointConstraint>(*bodies[a], bt(in_a)));
      pins.push_back({bodies[a].get(), nullptr, in_a, s.points[k]});
    } else {
      const Vec3 in_b = local(k - 1, s.points[k]);
      joints.push_back(std::make_unique<btPoint2PointConstraint>(*bodies[a], *bodies[k - 1], bt(in_a), bt(in_b)));
      pins.push_back({bodies[a].get(), bodies[k - 1].get(), in_a, in_b});
    }
    world.addConstraint(joints.back().get(), true);  // joined links do not collide
  }
  Result r;
  const int steps = static_cast<int>(std::lround(seconds / period_s));
  for (int k = 0; k < steps; ++k) {
    for (auto& b : bodies) b->applyCentralForce(bt(s.push - damping * ei(b->getLinearVelocity())));
    const double t0 = thread_cpu_s();
    world.stepSimulation(static_cast<btScalar>(period_s), 10, static_cast<btScalar>(substep_s));
    r.cpu_s += thread_cpu_s() - t0;
    for (const Pin& p : pins) {
      const Vec3 pa = ei(p.a->getCenterOfMassTransform() * bt(p.in_a));
      const Vec3 pb = p.b ? ei(p.b->getCenterOfMassTransform() * bt(p.in_b)) : p.in_b;
      r.worst_m = std::max(r.worst_m, (pa - pb).norm());
    }
  }
  for (auto& j : joints) world.removeConstraint(j.get());
  for (auto& b : bodies) world.removeRigidBody(b.get());
  return r;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  const bool quick = quick_mode(argc, argv);
  const double seconds = quick ? 0.5 : 10.0;
  std::printf(
      "Joints: %.1f s of world time at a %.0f ms loop period, %.0f ms sub-steps; CPU time of the step calls per\n"
      "simulated second (this thread), and the largest joint error at the end of any loop step\n\n",
      seconds, period_s * 1e3, substep_s * 1e3);
  std::printf("%-22s %14s %14s %12s %14s %14s\n", "scene", "Tether ms/s", "Bullet ms/s", "T/B", "Tether err m",
              "Bullet err m");
  const char* only = std::getenv("JOINTS_ONLY");  // a scene's name contains this (profiling one scene)
  // the tether again with joints held to a micrometre instead of a nanometre (still three
  // orders below Bullet's error): what the post-stabilisation's tolerance costs
  Scene loose = tether_cable(20);
  loose.name += ", 1 um";
  loose.joint_tolerance_m = 1e-6;
  for (const Scene& s : {chain(50), tether_cable(20), loose}) {
    if (only && s.name.find(only) == std::string::npos) continue;
    const Result t = run_tether(s, seconds);
    Result b;
    b.cpu_s = -1;
#ifdef TETHER_HAVE_BULLET
    if (!std::getenv("NOBULLET")) b = run_bullet(s, seconds);
#endif
    const double t_ms = 1e3 * t.cpu_s / seconds;
    const double b_ms = b.cpu_s >= 0 ? 1e3 * b.cpu_s / seconds : -1;
    std::printf("%-22s %14.2f %14s %12s %14.2e %14s%s\n", s.name.c_str(), t_ms,
                b_ms >= 0 ? format("%.2f", b_ms).c_str() : "-", b_ms > 0 ? format("%.2f", t_ms / b_ms).c_str() : "-",
                t.worst_m, b_ms >= 0 ? format("%.2e", b.worst_m).c_str() : "-", t.ok ? "" : "  (numerical fault)");
    // Bullet takes a fixed period / sub-step sub-steps; Tether may take more (a body moves at
    // most half its size per sub-step: no tunnelling)
    std::printf(
        "%-22s Tether: %.1f sub-steps per loop step (Bullet %.0f), %.0f row updates per sub-step, at most %u "
        "sweeps in one; state hash %016llx\n",
        "", static_cast<double>(t.substeps) / std::round(seconds / period_s), std::round(period_s / substep_s),
        static_cast<double>(t.solves) / static_cast<double>(std::max<std::uint64_t>(1, t.substeps)), t.max_sweeps,
        static_cast<unsigned long long>(t.state_hash));
    figure(s.name + ": Tether CPU ms per simulated s", format("%.2f", t_ms), "-");
    figure(s.name + ": Tether largest joint error m", format("%.1e", t.worst_m), "<= Bullet's");
    if (b_ms > 0) {
      figure(s.name + ": Tether / Bullet CPU", format("%.2f", t_ms / b_ms), "<= 1");
      figure(s.name + ": Bullet largest joint error m", format("%.1e", b.worst_m), "-");
    }
  }
  return 0;
}
