// SPDX-License-Identifier: Apache-2.0
// The scenario keys joints[], a body's locks and cables[]: what they build and the positioned
// message for each mistake.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "tether/physics/joints.hpp"
#include "tether/physics/physics.hpp"
#include "scenario_test_util.hpp"
#include "tether/scenario/scenario.hpp"

using namespace tether::runtime;
using tether::runtime::test::errors_of;
using tether::runtime::test::replace;

namespace {

// a two-part arm (a base and a link), and a float to tow
const char* valid = R"(name: t
world:
  water: {density_kg_m3: 1025, surface_z_m: 0}
  tank: {size_m: [40, 10, 8]}
vehicles:
  - name: arm
    bodies:
      - name: base
        shape: {type: box, size_m: [0.4, 0.4, 0.2]}
        mass_kg: 10
        initial: {position_m: [0, 0, -2]}
        locks: [x, y, z, roll, pitch, yaw]
      - name: link
        shape: {type: capsule, radius_m: 0.05, length_m: 0.5}
        mass_kg: 1
        initial: {position_m: [0.45, 0, -2]}
  - name: float
    bodies:
      - name: body
        shape: {type: sphere, radius_m: 0.2}
        mass_kg: 20
        initial: {position_m: [10, 0, -1]}
joints:
  - {name: elbow, type: hinge, body: arm.link, to: arm.base, anchor_m: [0.1, 0, -2], axis: [0, 0, 1], limits_deg: [-90, 45]}
cables:
  - {name: line, from: world, from_anchor_m: [0, 0, -0.5], to: float.body, to_anchor_m: [9.8, 0, -1], length_m: 12, segments: 12}
loop: {period_ms: 10, real_time_factor: 0, steps: 10}
endpoints:
  - {name: c, type: in_process, vehicle: float, controller: idle, deadline_ms: 3, timeout_policy: safe}
)";

std::string joint_line =
    "{name: elbow, type: hinge, body: arm.link, to: arm.base, anchor_m: [0.1, 0, -2], "
    "axis: [0, 0, 1], limits_deg: [-90, 45]}";

}  // namespace

TEST_CASE("joints, locks and cables build what the file says") {
  const Scenario sc = parse_scenario(valid, "s.yaml");
  // the lock, the elbow, 13 cable joints
  REQUIRE(sc.model.joints.size() == 15);
  const JointModel& lock = sc.model.joints[static_cast<std::size_t>(sc.model.find_joint("arm.base.locks"))];
  CHECK(lock.kind == JointKind::lock);
  CHECK(lock.locked == 0b111111);
  const JointModel& elbow = sc.model.joints[static_cast<std::size_t>(sc.model.find_joint("elbow"))];
  CHECK(elbow.kind == JointKind::hinge);
  CHECK(elbow.body_a == sc.model.find_body("arm.link"));
  CHECK(elbow.body_b == sc.model.find_body("arm.base"));
  CHECK(elbow.limited);
  CHECK(elbow.lower == doctest::Approx(-std::numbers::pi / 2));
  CHECK(elbow.upper == doctest::Approx(std::numbers::pi / 4));
  // the anchor, in the link's frame: 0.35 m behind its centre
  CHECK((elbow.anchor_a - Vec3(-0.35, 0, 0)).norm() < 1e-12);
  // the cable: a vehicle of 12 segments, joined end to end, from the world to the float
  const int line = sc.model.find_vehicle("line");
  REQUIRE(line >= 0);
  REQUIRE(sc.model.vehicles[static_cast<std::size_t>(line)].bodies.size() == 12);
  double length = 0;
  for (int b : sc.model.vehicles[static_cast<std::size_t>(line)].bodies) {
    const BodyModel& seg = sc.model.bodies[static_cast<std::size_t>(b)];
    CHECK(seg.shape.kind == ShapeKind::capsule);
    length += 2 * (seg.shape.half_length_m + seg.shape.radius_m);
  }
  CHECK(length <= 12.0 + 1e-9);
  CHECK(length > 11.9);  // the segment at the V's corner is a chord
  const JointModel& first = sc.model.joints[static_cast<std::size_t>(sc.model.find_joint("line.j0"))];
  CHECK(first.body_b == -1);
  const JointModel& last = sc.model.joints[static_cast<std::size_t>(sc.model.find_joint("line.j12"))];
  CHECK(last.body_a == sc.model.find_body("float.body"));
  // every joint holds at the initial poses
  for (const JointModel& j : sc.model.joints) {
    CAPTURE(j.name);
    CHECK(joint_error(j, sc.initial).linear_m < 1e-9);
    CHECK(joint_error(j, sc.initial).angular_rad < 1e-9);
  }
}

TEST_CASE("joints: positioned errors") {
  struct Case {
    std::string from, to, message;
  };
  const Case cases[] = {
      {"type: hinge", "type: weld",
       "s.yaml:24:25: joints[0].type: expected one of fixed, hinge, slider, ball, got \"weld\""},
      {"body: arm.link", "body: arm.lnk",
       "s.yaml:24:38: joints[0].body: no body named \"arm.lnk\" (bodies: arm.base, arm.link, float.body, line.s0, "
       "line.s1, line.s2, line.s3, line.s4 and 7 more)"},
      {"to: arm.base", "to: arm.link", "s.yaml:24:52: joints[0].to: a joint needs two different bodies"},
      {", axis: [0, 0, 1]", "",
       "s.yaml:24:5: joints[0].axis: missing; expected a direction [x, y, z] in the world frame at the initial poses"},
      {"axis: [0, 0, 1]", "axis: [0, 0, 0]", "s.yaml:24:92: joints[0].axis: expected a non-zero direction"},
      {"limits_deg: [-90, 45]", "limits_deg: [45, -90]",
       "s.yaml:24:115: joints[0].limits_deg: expected [lower, upper] with lower <= upper"},
      {"limits_deg: [-90, 45]", "limits_deg: [-190, 45]",
       "s.yaml:24:115: joints[0].limits_deg: expected limits within [-180, 180]"},
      {"limits_deg: [-90, 45]", "limits_m: [0, 1]",
       "s.yaml:24:113: joints[0].limits_m: only a slider has limits in metres (a hinge: limits_deg)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.to);
    const auto e = errors_of(replace(valid, c.from, c.to));
    REQUIRE(e.size() == 1);
    CHECK(e[0] == c.message);
  }
  // motors, brakes and springs: where they belong, with their units
  const Case more[] = {
      {"limits_deg: [-90, 45]}", "limits_deg: [-90, 45], brake_n: 3}",
       "s.yaml:24:135: joints[0].brake_n: a hinge's brake is brake_nm"},
      {"limits_deg: [-90, 45]}", "limits_deg: [-90, 45], spring: {stiffness_n_m: 10}}",
       "s.yaml:24:134: joints[0].spring: only a slider has a spring"},
      {"limits_deg: [-90, 45]}", "limits_deg: [-90, 45], motor: {speed_m_s: 1, max_force_n: 3}}",
       "s.yaml:24:134: joints[0].motor.speed_m_s: unknown key (allowed here: speed_rad_s, max_torque_nm)"},
      {"limits_deg: [-90, 45]}", "limits_deg: [-90, 45], motor: {speed_rad_s: 1, max_torque_nm: 0}}",
       "s.yaml:24:165: joints[0].motor.max_torque_nm: expected a number > 0, got \"0\""},
  };
  for (const Case& c : more) {
    CAPTURE(c.to);
    const auto e = errors_of(replace(valid, c.from, c.to));
    REQUIRE(!e.empty());  // the first says it (a motor in the wrong units also misses its keys)
    CHECK(e[0] == c.message);
  }
  const Scenario driven =
      parse_scenario(replace(valid, "limits_deg: [-90, 45]}",
                             "limits_deg: [-90, 45], brake_nm: 4, motor: {speed_rad_s: -2, max_torque_nm: 7}}"),
                     "s.yaml");
  const JointModel& elbow = driven.model.joints[static_cast<std::size_t>(driven.model.find_joint("elbow"))];
  CHECK(elbow.brake == 4);
  CHECK(elbow.motor_speed == -2);
  CHECK(elbow.motor_max == 7);
  // a ball has no axis
  const auto ball = errors_of(
      replace(valid, joint_line, "{name: j, type: ball, body: arm.link, anchor_m: [0, 0, -2], axis: [1, 0, 0]}"));
  REQUIRE(ball.size() == 1);
  CHECK(ball[0] == "s.yaml:24:71: joints[0].axis: only a hinge or a slider has an axis");
}

TEST_CASE("locks and cables: positioned errors") {
  auto one_error = [](const std::string& text) {
    const auto e = errors_of(text);
    REQUIRE(e.size() == 1);
    return e[0];
  };
  CHECK(one_error(replace(valid, "locks: [x, y, z, roll, pitch, yaw]", "locks: [x, up]")) ==
        "s.yaml:12:20: vehicles[0].bodies[0].locks[1]: expected one of x, y, z, roll, pitch, yaw, got \"up\"");
  CHECK(one_error(replace(valid, "locks: [x, y, z, roll, pitch, yaw]", "locks: [x, x]")) ==
        "s.yaml:12:20: vehicles[0].bodies[0].locks[1]: \"x\" is listed twice");
  CHECK(one_error(replace(valid, "length_m: 12,", "length_m: 9,")) ==
        "s.yaml:26:113: cables[0].length_m: the ends are 9.812747 m apart: longer than the cable");
  CHECK(one_error(replace(valid, "to: float.body", "to: world")) ==
        "s.yaml:26:64: cables[0].to: no body named \"world\" (bodies: arm.base, arm.link, float.body)");
  CHECK(one_error(replace(valid, "segments: 12}", "segments: 12, radius_m: 0.6}")) ==
        "s.yaml:26:141: cables[0].radius_m: expected a radius under half a segment (0.500000 m); use fewer segments");
  CHECK(one_error(replace(valid, "name: line,", "name: float,")) ==
        "s.yaml:26:12: cables[0].name: \"float\" is already a vehicle's or a cable's name");
}

namespace {

// a cable alone between two fixed points (and a float to tow), in still water
Scenario cable_world(const std::string& cable, const std::string& float_at = "[6, 0, -5]") {
  return parse_scenario(std::string(R"(name: c
world:
  water: {density_kg_m3: 1000, surface_z_m: 0}
vehicles:
  - name: float
    bodies:
      - name: body
        shape: {type: sphere, radius_m: 0.2}
        mass_kg: 33.51
        damping: {linear: [20, 20, 20]}
        initial: {position_m: )") +
                            float_at + R"(}
cables:
  - )" + cable + std::string(R"(
loop: {period_ms: 10, real_time_factor: 0, steps: 10}
endpoints:
  - {name: c, type: in_process, vehicle: float, controller: idle, deadline_ms: 3, timeout_policy: safe}
)"),
                        "c.yaml");
}

double run_physics(Scenario& sc, WorldState& state, double seconds, const StepInputs& inputs) {
  double worst = 0;
  StepReport report;
  for (int k = 0; k < static_cast<int>(seconds / 0.01); ++k) {
    REQUIRE(step(sc.model, state, inputs, 0.01, &report) == StepStatus::ok);
    worst = std::max(worst, report.max_joint_error_m);
  }
  return worst;
}

}  // namespace

TEST_CASE("a hanging cable settles into the catenary") {
  // 10 m of cable between two points 8 m apart at the same height; its weight in water is the
  // same per metre everywhere, so the shape is y = a cosh(x / a) with 10 = 2 a sinh(4 / a)
  Scenario sc = cable_world(
      "{name: line, from: world, from_anchor_m: [0, 0, -1], to: float.body, to_anchor_m: [8, 0, -1], length_m: 10, "
      "segments: 20, radius_m: 0.02, mass_per_m_kg: 2.0, drag_normal: 1.2}",
      "[8.2, 0, -1]");
  // the float's end held still: a fixed joint to the world
  JointSpec hold;
  hold.name = "hold";
  hold.kind = JointKind::fixed;
  hold.body_a = sc.model.find_body("float.body");
  WorldState state = sc.initial;
  sc.model.joints.push_back(make_joint(hold, state));
  StepInputs inputs;
  inputs.resize(sc.model.bodies.size());
  // 60 s: quadratic drag damps the last swings slowly
  const double worst = run_physics(sc, state, 60.0, inputs);
  // a = 1.6954 solves 10 = 2 a sinh(4 / a): sag = a (cosh(4 / a) - 1)
  double a = 2;
  for (int i = 0; i < 100; ++i)
    a -= (2 * a * std::sinh(4 / a) - 10) / (2 * std::sinh(4 / a) - 8 / a * std::cosh(4 / a));
  const double sag = a * (std::cosh(4 / a) - 1);
  // the lowest joint point: the middle of the cable (between segments 9 and 10)
  const BodyState& s9 = state.bodies[static_cast<std::size_t>(sc.model.find_body("line.s9"))];
  const BodyModel& m9 = sc.model.bodies[static_cast<std::size_t>(sc.model.find_body("line.s9"))];
  const Vec3 middle = s9.position_m + s9.orientation * Vec3(m9.shape.half_length_m + m9.shape.radius_m, 0, 0);
  CAPTURE(sag);
  CAPTURE(middle.transpose());
  CHECK(std::abs((-1 - middle.z()) / sag - 1) < 0.02);
  CHECK(std::abs(middle.x() - 4) < 0.02);
  CHECK(worst < 1e-3);
  // at rest (an unconverged joint solve would keep it jittering: 0.2 kg m/s with 8 sweeps)
  for (const BodyState& b : state.bodies) CHECK(b.linear_momentum.norm() < 2e-2);
}

TEST_CASE("a taut tether stops a pushed vehicle at the cable's length") {
  Scenario sc = cable_world(
      "{name: line, from: world, from_anchor_m: [0, 0, -5], to: float.body, to_anchor_m: [5.8, 0, -5], length_m: 8, "
      "segments: 16, radius_m: 0.01, mass_per_m_kg: 0.32}");
  WorldState state = sc.initial;
  StepInputs inputs;
  inputs.resize(sc.model.bodies.size());
  const int fl = sc.model.find_body("float.body");
  // the float is neutral (33.51 kg, 0.2 m sphere in fresh water); 20 N pushes it away
  inputs.wrenches[static_cast<std::size_t>(fl)].force_world_n = Vec3(20, 0, 0);
  double farthest = 0;
  StepReport report;
  for (int k = 0; k < 2000; ++k) {
    REQUIRE(step(sc.model, state, inputs, 0.01, &report) == StepStatus::ok);
    farthest = std::max(farthest, state.bodies[static_cast<std::size_t>(fl)].position_m.x());
  }
  // without the cable it would reach 5.8 + (20 N / 20 N s/m) * 20 s = 26 m; the cable holds
  // its near side at 8 m from the anchor: the centre at 8.2 m at most
  CAPTURE(farthest);
  CHECK(farthest <= 8.2 + 1e-3);
  CHECK(state.bodies[static_cast<std::size_t>(fl)].position_m.x() > 8.2 - 0.05);
}

TEST_CASE("a slack cable whose V would reach through the tank floor is refused") {
  // 20 m of cable between points 2 m apart hangs 9.9 m deep: through the 8 m tank's floor
  const auto e =
      errors_of(replace(valid, "to_anchor_m: [9.8, 0, -1], length_m: 12,", "to_anchor_m: [2, 0, -0.5], length_m: 20,"));
  REQUIRE(e.size() == 1);
  CHECK(e[0] ==
        "s.yaml:26:113: cables[0].length_m: laid out slack, the cable hangs in a V whose corner (1, 0, "
        "-10.4499) lies inside \"tank.floor\": bring the ends further apart or shorten the cable");
}

TEST_CASE("tension sensors: the joint they read, by name or by cable end, and positioned errors") {
  // a load cell on the float (the cable's far end), one on the link (the elbow), and one in
  // the cable's own devices (on its first segment: the anchor end)
  const std::string with = replace(replace(replace(valid, "        initial: {position_m: [10, 0, -1]}\n",
                                                   "        initial: {position_m: [10, 0, -1]}\n"
                                                   "        devices:\n"
                                                   "          - {name: pull, kind: tension, params: {cable: line}}\n"),
                                           "        initial: {position_m: [0.45, 0, -2]}\n",
                                           "        initial: {position_m: [0.45, 0, -2]}\n"
                                           "        devices:\n"
                                           "          - {name: elbow_load, kind: tension, params: {joint: elbow}}\n"),
                                   "length_m: 12, segments: 12}",
                                   "length_m: 12, segments: 12,\n"
                                   "     devices: [{name: winch, kind: tension, params: {cable: line}}]}");
  const Scenario sc = parse_scenario(with, "s.yaml");
  auto joint_of = [&](const std::string& device) {
    for (const auto& d : sc.devices)
      if (d.name.full() == device) return std::get<tether::hal::TensionParams>(d.params).joint;
    FAIL("no device " << device);
    return -2;
  };
  CHECK(joint_of("float.body.pull") == sc.model.find_joint("line.j12"));
  CHECK(joint_of("arm.link.elbow_load") == sc.model.find_joint("elbow"));
  CHECK(joint_of("line.s0.winch") == sc.model.find_joint("line.j0"));

  auto one_error = [](const std::string& text) {
    const auto e = errors_of(text);
    REQUIRE(e.size() == 1);
    return e[0];
  };
  const std::string pull = "{name: pull, kind: tension, params: {cable: line}}";
  CHECK(one_error(replace(with, pull, "{name: pull, kind: tension}")) ==
        "s.yaml:26:13: vehicles[1].bodies[0].devices[0]: a tension sensor needs `params.joint` (a joint of this "
        "body) or `params.cable` (a cable with an end on this body)");
  CHECK(one_error(replace(with, pull, "{name: pull, kind: tension, params: {joint: elbow, cable: line}}")) ==
        "s.yaml:26:49: vehicles[1].bodies[0].devices[0].params: give `joint` or `cable`, not both");
  CHECK(one_error(replace(with, pull, "{name: pull, kind: tension, params: {joint: knee}}")) ==
        "s.yaml:26:57: vehicles[1].bodies[0].devices[0].params.joint: no joint named \"knee\" (joints: arm.base.locks, "
        "line.j0, line.j1, line.j2, line.j3, line.j4, line.j5, line.j6, ...)");
  CHECK(one_error(replace(with, pull, "{name: pull, kind: tension, params: {joint: elbow}}")) ==
        "s.yaml:26:57: vehicles[1].bodies[0].devices[0].params.joint: joint \"elbow\" joins arm.link and arm.base, not "
        "float.body: a load cell reads a joint of the body it is mounted on");
  CHECK(one_error(replace(with, pull, "{name: pull, kind: tension, params: {cable: rope}}")) ==
        "s.yaml:26:57: vehicles[1].bodies[0].devices[0].params.cable: no cable named \"rope\"");
  CHECK(one_error(replace(with, "{name: elbow_load, kind: tension, params: {joint: elbow}}",
                          "{name: elbow_load, kind: tension, params: {cable: line}}")) ==
        "s.yaml:18:63: vehicles[0].bodies[1].devices[0].params.cable: cable \"line\" ends at world and float.body, not "
        "at arm.link: mount the load cell on an end's body (or in the cable's own `devices`)");
  CHECK(one_error(replace(with, pull, "{name: pull, kind: tension, params: {joint: line.j12, range_m: 3}}"))
            .find("params.range_m") != std::string::npos);
}

namespace {

// a 20 kg cart on four sprung wheels (k = 2000 N/m) on a floor
std::string cart(const std::string& extra_wheel_keys = "") {
  std::string text = R"(name: cart
world:
  statics:
    - {name: floor, shape: {type: plane, normal: [0, 0, 1], offset_m: 0}, friction: 0.9}
vehicles:
  - name: cart
    bodies:
      - name: chassis
        shape: {type: box, size_m: [0.8, 0.4, 0.1]}
        mass_kg: 20
        initial: {position_m: [0, 0, 0.4]}
wheels:
)";
  for (const char* w : {"fl: [0.3, 0.3", "fr: [0.3, -0.3", "rl: [-0.3, 0.3", "rr: [-0.3, -0.3"}) {
    const std::string s = w;
    text += "  - {name: " + s.substr(0, 2) + ", on: cart.chassis, hub_m" + s.substr(2) +
            ", 0.1], radius_m: 0.1, mass_kg: 1, suspension: {stiffness_n_m: 2000, damping_n_s_m: 150}" +
            extra_wheel_keys + "}\n";
  }
  text += "loop: {period_ms: 10, real_time_factor: 0, steps: 10}\n";
  return text;
}

}  // namespace

TEST_CASE("wheels: each becomes a wheel on an axle under a sprung upright, and settles at m g / 4k") {
  Scenario sc = parse_scenario(cart(), "w.yaml");
  const int wheel = sc.model.find_body("cart.fl"), upright = sc.model.find_body("cart.fl_upright");
  REQUIRE(wheel >= 0);
  REQUIRE(upright >= 0);
  CHECK(sc.model.vehicles[0].bodies.size() == 9);
  const int axle = sc.model.find_joint("cart.fl.axle"), spring = sc.model.find_joint("cart.fl.suspension");
  REQUIRE(axle >= 0);
  REQUIRE(spring >= 0);
  CHECK(sc.model.joints[static_cast<std::size_t>(axle)].kind == JointKind::hinge);
  CHECK(sc.model.joints[static_cast<std::size_t>(spring)].kind == JointKind::slider);
  // the wheel's axis (its cylinder's x) along the default axle, +y
  const Vec3 x = sc.initial.bodies[static_cast<std::size_t>(wheel)].orientation * Vec3::UnitX();
  CHECK((x - Vec3::UnitY()).norm() < 1e-12);
  // the upright clears the wheel's top
  CHECK(sc.initial.bodies[static_cast<std::size_t>(upright)].position_m.z() - 0.03 > 0.1 + 0.1);
  // on the floor for 3 s: the chassis' weight on four springs, 20 * 9.81 / 4 / 2000 = 24.5 mm
  // each (the travel of the chassis relative to the upright, rest 0)
  WorldState state = sc.initial;
  StepInputs inputs;
  inputs.resize(sc.model.bodies.size());
  for (int k = 0; k < 300; ++k) REQUIRE(step(sc.model, state, inputs, 0.01) == StepStatus::ok);
  for (const char* w : {"cart.fl.suspension", "cart.fr.suspension", "cart.rl.suspension", "cart.rr.suspension"}) {
    const double travel = joint_position(sc.model.joints[static_cast<std::size_t>(sc.model.find_joint(w))], state);
    CAPTURE(w);
    CHECK(travel == doctest::Approx(-20 * 9.81 / 4 / 2000).epsilon(0.01));
  }
  SUBCASE("steered 15 degrees: the axle turns left about up") {
    Scenario steered = parse_scenario(cart(", steer_deg: 15"), "w.yaml");
    const Vec3 a = steered.initial.bodies[static_cast<std::size_t>(steered.model.find_body("cart.fl"))].orientation *
                   Vec3::UnitX();
    CHECK(a.x() == doctest::Approx(-std::sin(15 * std::numbers::pi / 180)));
  }
}

TEST_CASE("wheels: positioned errors") {
  const std::string first = "{name: fl, on: cart.chassis, hub_m: [0.3, 0.3, 0.1]";
  struct Case {
    const char* to;
    const char* message;
  };
  const Case cases[] = {
      {"{name: fl, on: cart.body, hub_m: [0.3, 0.3, 0.1]",
       "s.yaml:13:20: wheels[0].on: no body named \"cart.body\" (bodies: cart.chassis)"},
      {"{name: fl, on: cart.chassis, hub_m: [0.3, 0.3, 0.1], axle: [0, 0, 0]",
       "s.yaml:13:64: wheels[0].axle: expected a direction, not zero"},
      {"{name: chassis, on: cart.chassis, hub_m: [0.3, 0.3, 0.1]",
       "s.yaml:13:12: wheels[0].name: \"cart.chassis\" is already a body's name"},
      {"{name: f.l, on: cart.chassis, hub_m: [0.3, 0.3, 0.1]",
       "s.yaml:13:12: wheels[0].name: \"f.l\" is not a valid part name (letters, digits, _ and -, starting with a "
       "letter or _)"},
      {"{name: fl, on: cart.chassis",
       "s.yaml:13:5: wheels[0].hub_m: missing; expected the wheel's centre [x, y, z], world frame at the initial "
       "poses"},
      {"{name: fl, on: cart.chassis, hub_m: [0.3, 0.3, 0.1], steer_deg: 120",
       "s.yaml:13:69: wheels[0].steer_deg: expected a number from -90 to 90, got \"120\""},
      {"{name: fl, on: cart.chassis, hub_m: [0.3, 0.3, 0.1], motor: {speed_rad_s: 3}",
       "s.yaml:13:65: wheels[0].motor.max_torque_nm: missing; expected a number > 0"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.to);
    const auto e = errors_of(replace(cart(), first, c.to));
    REQUIRE(e.size() == 1);
    CHECK(e[0] == c.message);
  }
  const auto e = errors_of(replace(cart(), "damping_n_s_m: 150}", "damping_n_s_m: 150, spring: 3}"));
  REQUIRE(e.size() == 1);
  CHECK(e[0] ==
        "s.yaml:13:139: wheels[0].suspension.spring: unknown key (allowed here: stiffness_n_m, damping_n_s_m, rest_m, "
        "travel_m)");
}

TEST_CASE("encoders: a hinge or slider of the device's vehicle, wheels' axles read from the chassis") {
  // a motor-driven wheel on each corner, an encoder on the chassis reading the front left axle
  const std::string text = replace(
      replace(cart(", motor: {speed_rad_s: 4, max_torque_nm: 8}"), "        initial: {position_m: [0, 0, 0.4]}\n",
              "        initial: {position_m: [0, 0, 0.4]}\n"
              "        devices:\n"
              "          - {name: odo_fl, kind: encoder, params: {joint: cart.fl.axle}}\n"),
      "steps: 10", "steps: 200");
  Scenario sc = parse_scenario(text, "w.yaml");
  REQUIRE(sc.devices.size() == 1);
  CHECK(std::get<tether::hal::EncoderParams>(sc.devices[0].params).joint == sc.model.find_joint("cart.fl.axle"));

  auto one_error = [](const std::string& t) {
    const auto e = errors_of(t);
    REQUIRE(e.size() == 1);
    return e[0];
  };
  const std::string odo = "{name: odo_fl, kind: encoder, params: {joint: cart.fl.axle}}";
  CHECK(one_error(replace(text, odo, "{name: odo_fl, kind: encoder}")) ==
        "s.yaml:13:13: vehicles[0].bodies[0].devices[0]: an encoder needs `params.joint` (a hinge or a slider of this "
        "vehicle)");
  CHECK(one_error(replace(text, odo, "{name: odo_fl, kind: encoder, params: {joint: cart.fl.axel}}"))
            .find("params.joint: no joint named \"cart.fl.axel\"") != std::string::npos);
  // a ball joint (a cable's) reads no coordinate
  CHECK(one_error(replace(valid, "        initial: {position_m: [10, 0, -1]}\n",
                          "        initial: {position_m: [10, 0, -1]}\n"
                          "        devices:\n"
                          "          - {name: odo, kind: encoder, params: {joint: line.j12}}\n")) ==
        "s.yaml:24:56: vehicles[1].bodies[0].devices[0].params.joint: joint \"line.j12\" is neither a hinge nor a "
        "slider: an encoder reads an angle or a travel");
  // another vehicle's joint
  CHECK(one_error(replace(valid, "        initial: {position_m: [10, 0, -1]}\n",
                          "        initial: {position_m: [10, 0, -1]}\n"
                          "        devices:\n"
                          "          - {name: odo, kind: encoder, params: {joint: elbow}}\n")) ==
        "s.yaml:24:56: vehicles[1].bodies[0].devices[0].params.joint: joint \"elbow\" joins arm.link and arm.base: "
        "not a joint of float.body's vehicle");
}
