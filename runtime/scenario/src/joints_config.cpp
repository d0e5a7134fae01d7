// SPDX-License-Identifier: Apache-2.0
#include "tether/scenario/joints_config.hpp"

#include <cmath>
#include <numbers>
#include <optional>
#include <sstream>

#include "tether/hal/device_name.hpp"
#include "tether/physics/joints.hpp"
#include "tether/scenario/scenario_devices.hpp"

namespace tether::runtime {

namespace {

constexpr double deg = std::numbers::pi / 180.0;

// a body named in the file: "vehicle.part", or -1 for "world"; -2 (with an error) when unknown
int body_or_world(const ConfigNode& n, const char* key, const WorldModel& model, bool world_allowed) {
  const std::string name = n.string_or(key, world_allowed ? "world" : "");
  if (world_allowed && name == "world") return -1;
  if (!n.has(key)) {
    n.expected(key, world_allowed ? "a body (\"vehicle.part\") or world" : "a body (\"vehicle.part\")");
    return -2;
  }
  const int index = model.find_body(name);
  if (index < 0) {
    std::string known;
    for (std::size_t i = 0; i < model.bodies.size() && i < 8; ++i) known += (i ? ", " : "") + model.bodies[i].name;
    if (model.bodies.size() > 8) known += " and " + std::to_string(model.bodies.size() - 8) + " more";
    n[key].error("no body named \"" + name + "\" (bodies: " + (known.empty() ? "none" : known) + ")");
    return -2;
  }
  return index;
}

// [lower, upper] with lower <= upper, scaled (degrees to radians); false when absent or wrong
bool parse_limits(const ConfigNode& j, const char* key, double scale, double lo_bound, double hi_bound,
                  JointSpec& spec) {
  if (!j.has(key)) return false;
  const auto v = j.numbers_or(key, {}, 2);
  if (v.size() != 2) return false;
  if (!(v[0] <= v[1])) {
    j[key].error("expected [lower, upper] with lower <= upper");
    return false;
  }
  if (v[0] < lo_bound || v[1] > hi_bound) {
    std::ostringstream s;
    s << "expected limits within [" << lo_bound << ", " << hi_bound << "]";
    j[key].error(s.str());
    return false;
  }
  spec.limited = true;
  spec.lower = v[0] * scale;
  spec.upper = v[1] * scale;
  return true;
}

}  // namespace

void parse_joints(const ConfigNode& list, WorldModel& model, const WorldState& initial) {
  if (!list.expect_sequence()) return;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const ConfigNode j = list.at(i);
    if (!j.expect_map({"name", "type", "body", "to", "anchor_m", "axis", "limits_deg", "limits_m", "motor", "brake_nm",
                       "brake_n", "spring"}))
      continue;
    JointSpec spec;
    spec.name = j.string("name");
    if (model.find_joint(spec.name) >= 0) j["name"].error("duplicate joint name \"" + spec.name + "\"");
    const std::string type = j.choice_or("type", "", {"fixed", "hinge", "slider", "ball"});
    if (!j.has("type")) j.expected("type", "one of fixed, hinge, slider, ball");
    if (type.empty()) continue;  // what else the entry needs depends on its type
    spec.kind = type == "fixed"    ? JointKind::fixed
                : type == "hinge"  ? JointKind::hinge
                : type == "slider" ? JointKind::slider
                                   : JointKind::ball;
    spec.body_a = body_or_world(j, "body", model, false);
    spec.body_b = body_or_world(j, "to", model, true);
    if (spec.body_a >= 0 && spec.body_a == spec.body_b) j["to"].error("a joint needs two different bodies");
    spec.anchor_world_m = j.vec3_or("anchor_m", Vec3::Zero());
    if (!j.has("anchor_m") && spec.kind != JointKind::slider)
      j.expected("anchor_m", "the joint's point [x, y, z] in the world frame at the initial poses");
    const bool axial = spec.kind == JointKind::hinge || spec.kind == JointKind::slider;
    if (axial) {
      spec.axis_world = j.vec3_or("axis", Vec3::Zero());
      if (!j.has("axis"))
        j.expected("axis", "a direction [x, y, z] in the world frame at the initial poses");
      else if (!(spec.axis_world.norm() > 1e-12) || !spec.axis_world.allFinite())
        j["axis"].error("expected a non-zero direction");
      if (spec.kind == JointKind::slider) spec.anchor_world_m = j.vec3_or("anchor_m", Vec3::Zero());
    } else if (j.has("axis")) {
      j["axis"].error("only a hinge or a slider has an axis");
    }
    if (spec.kind == JointKind::hinge)
      parse_limits(j, "limits_deg", deg, -180, 180, spec);
    else if (j.has("limits_deg"))
      j["limits_deg"].error("only a hinge has limits in degrees (a slider: limits_m)");
    if (spec.kind == JointKind::slider)
      parse_limits(j, "limits_m", 1.0, -1e6, 1e6, spec);
    else if (j.has("limits_m"))
      j["limits_m"].error("only a slider has limits in metres (a hinge: limits_deg)");
    // motor and brake (hinge: N·m and rad/s; slider: N and m/s), spring (slider)
    const bool hinge = spec.kind == JointKind::hinge, slider = spec.kind == JointKind::slider;
    const char* brake_key = hinge ? "brake_nm" : "brake_n";
    for (const char* key : {"brake_nm", "brake_n"})
      if (j.has(key) && (!axial || std::string(key) != brake_key))
        j[key].error(axial ? std::string("a ") + type + "'s brake is " + brake_key
                           : std::string("only a hinge (brake_nm) or a slider (brake_n) has a brake"));
    if (axial) spec.brake = j.number_or(brake_key, 0, Range::non_negative());
    if (j.has("motor")) {
      const ConfigNode m = j["motor"];
      if (!axial) {
        m.error("only a hinge or a slider has a motor");
      } else if (m.expect_map({hinge ? "speed_rad_s" : "speed_m_s", hinge ? "max_torque_nm" : "max_force_n"})) {
        spec.motor_speed = m.number(hinge ? "speed_rad_s" : "speed_m_s");
        spec.motor_max = m.number(hinge ? "max_torque_nm" : "max_force_n", Range::positive());
      }
    }
    if (j.has("spring")) {
      const ConfigNode sp = j["spring"];
      if (!slider) {
        sp.error("only a slider has a spring");
      } else if (sp.expect_map({"stiffness_n_m", "damping_n_s_m", "rest_m"})) {
        spec.spring_n_m = sp.number_or("stiffness_n_m", 0, Range::non_negative());
        spec.damper_n_s_m = sp.number_or("damping_n_s_m", 0, Range::non_negative());
        spec.spring_rest_m = sp.number_or("rest_m", 0);
      }
    }
    if (spec.body_a < 0 || spec.body_b < -1 || (spec.body_a == spec.body_b) ||
        (axial && !(spec.axis_world.norm() > 1e-12)))
      continue;
    model.joints.push_back(make_joint(spec, initial));
  }
}

std::uint8_t parse_locks(const ConfigNode& list) {
  if (!list.yaml().IsDefined() || !list.expect_sequence()) return 0;
  static constexpr const char* names[] = {"x", "y", "z", "roll", "pitch", "yaw"};
  std::uint8_t mask = 0;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const ConfigNode n = list.at(i);
    const std::string v = n.yaml().IsScalar() ? n.yaml().as<std::string>() : std::string();
    int bit = -1;
    for (int k = 0; k < 6; ++k)
      if (v == names[k]) bit = k;
    if (bit < 0) {
      n.error("expected one of x, y, z, roll, pitch, yaw, got " + describe_value(n.yaml()));
      continue;
    }
    if (mask & (1u << bit)) n.error("\"" + v + "\" is listed twice");
    mask |= static_cast<std::uint8_t>(1u << bit);
  }
  return mask;
}

namespace {

// the corner of the V a slack cable is laid out as, hanging below the straight line p0-p1:
// two straight legs whose lengths add up to `length`; none when the V would start inside a
// plane (the tank's floor or walls), which is said on length_m
std::optional<Vec3> slack_corner(const ConfigNode& c, const WorldModel& model, const Vec3& p0, const Vec3& p1,
                                 double length, double radius) {
  const double span = (p1 - p0).norm();
  const Vec3 mid = 0.5 * (p0 + p1);
  Vec3 down = -model.gravity_m_s2;
  down = down.norm() > 0 ? Vec3(-down.normalized()) : Vec3(0, 0, -1);
  const Vec3 along = span > 0 ? Vec3((p1 - p0) / span) : Vec3::Zero();
  Vec3 sag_dir = down - down.dot(along) * along;
  if (sag_dir.norm() < 1e-9) sag_dir = along.cross(std::abs(along.x()) < 0.57 ? Vec3::UnitX() : Vec3::UnitY());
  sag_dir.normalize();
  const double half = 0.5 * length, half_span = 0.5 * span;
  const Vec3 corner = mid + std::sqrt(std::max(0.0, half * half - half_span * half_span)) * sag_dir;
  for (const StaticBody& st : model.statics) {
    if (st.shape.kind != ShapeKind::plane) continue;
    const Vec3 n = st.orientation * st.shape.normal;
    const double offset = n.dot(st.position_m) + st.shape.offset_m;
    if (n.dot(corner) >= offset + radius) continue;  // clear of the solid n·p <= offset
    std::ostringstream m;
    m << "laid out slack, the cable hangs in a V whose corner (" << corner.x() << ", " << corner.y() << ", "
      << corner.z() << ") lies inside \"" << st.name << "\": bring the ends further apart or shorten the cable";
    c["length_m"].error(m.str());
    return std::nullopt;
  }
  return corner;
}

}  // namespace

void parse_cables(const ConfigNode& list, WorldModel& model, WorldState& initial,
                  std::vector<hal::DeviceSpec>& devices) {
  if (!list.expect_sequence()) return;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const ConfigNode c = list.at(i);
    if (!c.expect_map({"name", "from", "from_anchor_m", "to", "to_anchor_m", "length_m", "segments", "radius_m",
                       "mass_per_m_kg", "drag_normal", "drag_tangential", "restitution", "friction", "devices"}))
      continue;
    const std::string name = c.string("name");
    if (name.find('.') != std::string::npos) c["name"].error("a cable name cannot contain '.'");
    if (model.find_vehicle(name) >= 0) c["name"].error("\"" + name + "\" is already a vehicle's or a cable's name");
    const int from = body_or_world(c, "from", model, true);
    const int to = body_or_world(c, "to", model, false);
    if (!c.has("from_anchor_m")) c.expected("from_anchor_m", "the cable's first end [x, y, z], world frame");
    if (!c.has("to_anchor_m")) c.expected("to_anchor_m", "the cable's last end [x, y, z], world frame");
    const Vec3 p0 = c.vec3_or("from_anchor_m", Vec3::Zero());
    const Vec3 p1 = c.vec3_or("to_anchor_m", Vec3::Zero());
    const double length = c.number("length_m", Range::positive());
    const auto segments = static_cast<int>(c.integer_or("segments", 20, 2, 1000));
    const double radius = c.number_or("radius_m", 0.01, Range::positive());
    const double mass_per_m = c.number_or("mass_per_m_kg", 0.1, Range::positive());
    const double cd_n = c.number_or("drag_normal", 1.2, Range::non_negative());
    const double cd_t = c.number_or("drag_tangential", 0.02, Range::non_negative());
    const double restitution = c.number_or("restitution", 0.1, Range::between(0, 1));
    const double friction = c.number_or("friction", 0.5, Range::non_negative());
    const double span = (p1 - p0).norm();
    if (c.has("length_m") && length > 0 && span > length)
      c["length_m"].error("the ends are " + std::to_string(span) + " m apart: longer than the cable");
    if (from < -1 || to < 0 || !(length > 0) || span > length || !(radius > 0) || !(mass_per_m > 0)) continue;
    const double segment = length / segments;
    if (2 * radius >= segment) {
      c["radius_m"].error("expected a radius under half a segment (" + std::to_string(segment / 2) +
                          " m); use fewer segments");
      continue;
    }
    // the slack cable is laid out as a V hanging below the straight line: two straight legs
    // whose lengths add up to length_m; the joints sit on the V, one segment apart
    const std::optional<Vec3> v_corner = slack_corner(c, model, p0, p1, length, radius);
    if (!v_corner) continue;
    const Vec3 corner = *v_corner;
    auto on_v = [&](double s) {  // the point at arc length s along p0 -> corner -> p1
      const double leg0 = (corner - p0).norm();
      if (s <= leg0) return Vec3(leg0 > 0 ? Vec3(p0 + (corner - p0) * (s / leg0)) : p0);
      const double leg1 = (p1 - corner).norm();
      return Vec3(leg1 > 0 ? Vec3(corner + (p1 - corner) * std::min(1.0, (s - leg0) / leg1)) : corner);
    };
    // joint k: a ball joint at `at` between segment k (or the far body) and what comes before
    auto link = [&](int k, int body, int before, const Vec3& at) {
      JointSpec spec;
      spec.name = name + ".j" + std::to_string(k);
      spec.kind = JointKind::ball;
      spec.body_a = body;
      spec.body_b = before;
      spec.anchor_world_m = at;
      model.joints.push_back(make_joint(spec, initial));
    };
    VehicleModel vehicle;
    vehicle.name = name;
    const int vehicle_index = static_cast<int>(model.vehicles.size());
    model.vehicles.push_back(vehicle);
    const double density = model.water.present ? model.water.density_kg_m3 : 0.0;
    int previous = from;
    Vec3 start = p0;
    for (int k = 0; k < segments; ++k) {
      const Vec3 end = on_v(segment * (k + 1));
      const Vec3 chord = end - start;
      const double len = chord.norm();
      BodyModel b;
      b.name = name + ".s" + std::to_string(k);
      b.vehicle = vehicle_index;
      b.shape.kind = ShapeKind::capsule;
      b.shape.radius_m = radius;
      b.shape.half_length_m = std::max(0.5 * len - radius, 0.1 * len);
      b.mass_kg = mass_per_m * len;
      b.restitution = restitution;
      b.friction = friction;
      finish_body_model(b, nullptr, nullptr);
      // drag of a cylinder in cross flow and along its axis (quadratic, body axes: x along)
      const double across = 0.5 * density * cd_n * 2 * radius * len;
      const double lengthwise = 0.5 * density * cd_t * std::numbers::pi * 2 * radius * len;
      b.damping.quadratic = Vec3(lengthwise, across, across);
      const int index = static_cast<int>(model.bodies.size());
      model.vehicles[static_cast<std::size_t>(vehicle_index)].bodies.push_back(index);
      model.bodies.push_back(b);
      BodyState s;
      s.position_m = 0.5 * (start + end);
      s.orientation = len > 0 ? Quat::FromTwoVectors(Vec3::UnitX(), chord / len) : Quat::Identity();
      initial.bodies.push_back(s);
      link(k, index, previous, start);
      // the cable's own devices (a winch's load cell) ride on its first segment
      if (k == 0) parse_devices(c["devices"], name, "s0", index, devices);
      previous = index;
      start = end;
    }
    link(segments, to, previous, p1);
  }
}

void parse_wheels(const ConfigNode& list, WorldModel& model, WorldState& initial) {
  if (!list.expect_sequence()) return;
  Vec3 up = -model.gravity_m_s2;
  up = up.norm() > 0 ? Vec3(up.normalized()) : Vec3::UnitZ();
  for (std::size_t i = 0; i < list.size(); ++i) {
    const ConfigNode w = list.at(i);
    if (!w.expect_map({"name", "on", "hub_m", "axle", "steer_deg", "radius_m", "width_m", "mass_kg", "friction",
                       "restitution", "suspension", "motor", "brake_nm"}))
      continue;
    const std::string name = w.string("name");
    if (w.has("name") && !hal::valid_name_segment(name))
      w["name"].error("\"" + name +
                      "\" is not a valid part name (letters, digits, _ and -, starting with a letter or _)");
    const int chassis = body_or_world(w, "on", model, false);
    if (!w.has("hub_m")) w.expected("hub_m", "the wheel's centre [x, y, z], world frame at the initial poses");
    const Vec3 hub = w.vec3_or("hub_m", Vec3::Zero());
    Vec3 axle = w.vec3_or("axle", Vec3(0, 1, 0));
    if (!(axle.norm() > 1e-9)) w["axle"].error("expected a direction, not zero");
    const double steer = w.number_or("steer_deg", 0.0, Range::between(-90, 90));
    const double radius = w.number_or("radius_m", 0.1, Range::positive());
    const double width = w.number_or("width_m", 0.05, Range::positive());
    const double mass = w.number_or("mass_kg", 1.0, Range::positive());
    const double friction = w.number_or("friction", 0.9, Range::non_negative());
    const double restitution = w.number_or("restitution", 0.1, Range::between(0, 1));
    const double brake = w.number_or("brake_nm", 0.0, Range::non_negative());
    double motor_speed = 0, motor_max = 0;
    if (w.has("motor") && w["motor"].expect_map({"speed_rad_s", "max_torque_nm"})) {
      motor_speed = w["motor"].number("speed_rad_s");
      motor_max = w["motor"].number("max_torque_nm", Range::positive());
    }
    const bool sprung = w.has("suspension");
    double stiffness = 0, damping = 0, rest = 0, travel = 0.05;
    if (sprung && w["suspension"].expect_map({"stiffness_n_m", "damping_n_s_m", "rest_m", "travel_m"})) {
      const ConfigNode sp = w["suspension"];
      stiffness = sp.number("stiffness_n_m", Range::positive());
      damping = sp.number_or("damping_n_s_m", 0.0, Range::non_negative());
      rest = sp.number_or("rest_m", 0.0);
      travel = sp.number_or("travel_m", travel, Range::positive());
    }
    if (chassis < 0 || !(axle.norm() > 1e-9) || !hal::valid_name_segment(name)) continue;
    const BodyModel& on = model.bodies[static_cast<std::size_t>(chassis)];
    const int vehicle = on.vehicle;
    const std::string prefix = on.name.substr(0, on.name.find('.') + 1);  // "vehicle."
    if (model.find_body(prefix + name) >= 0 || (sprung && model.find_body(prefix + name + "_upright") >= 0)) {
      w["name"].error("\"" + prefix + name + "\" is already a body's name");
      continue;
    }
    // steering turns the axle about the up direction (left for positive angles)
    axle = Eigen::AngleAxisd(steer * deg, up) * axle.normalized();
    auto add_body = [&](const std::string& part, const Shape& shape, double kg, const Vec3& at, const Quat& q) {
      BodyModel b;
      b.name = prefix + part;
      b.vehicle = vehicle;
      b.shape = shape;
      b.mass_kg = kg;
      b.friction = friction;
      b.restitution = restitution;
      finish_body_model(b, nullptr, nullptr);
      const int index = static_cast<int>(model.bodies.size());
      if (vehicle >= 0) model.vehicles[static_cast<std::size_t>(vehicle)].bodies.push_back(index);
      model.bodies.push_back(b);
      BodyState st;
      st.position_m = at;
      st.orientation = q;
      initial.bodies.push_back(st);
      return index;
    };
    // a joint of this wheel, named VEHICLE.NAME.WHAT, between a and b at `at` along `axis`
    auto joint = [&](const char* what, JointKind kind, int a, int b, const Vec3& at, const Vec3& axis) {
      JointSpec spec;
      spec.name = prefix + name + "." + what;
      spec.kind = kind;
      spec.body_a = a;
      spec.body_b = b;
      spec.anchor_world_m = at;
      spec.axis_world = axis;
      return spec;
    };
    // sprung: an upright above the wheel's top (clear of it: only bodies joined directly never
    // collide) on a slider along the up direction, the wheel on a hinge under it
    int holder = chassis;
    if (sprung) {
      Shape box;
      box.kind = ShapeKind::box;
      box.half_extents_m = Vec3::Constant(0.03);
      const Vec3 at = hub + (radius + 0.06) * up;
      holder = add_body(name + "_upright", box, 0.25 * mass, at, Quat::Identity());
      JointSpec slider = joint("suspension", JointKind::slider, holder, chassis, at, up);
      slider.limited = true;
      slider.lower = -travel;
      slider.upper = travel;
      slider.spring_n_m = stiffness;
      slider.damper_n_s_m = damping;
      slider.spring_rest_m = rest;
      model.joints.push_back(make_joint(slider, initial));
    }
    Shape tyre;
    tyre.kind = ShapeKind::cylinder;
    tyre.radius_m = radius;
    tyre.half_length_m = 0.5 * width;
    const int wheel = add_body(name, tyre, mass, hub, Quat::FromTwoVectors(Vec3::UnitX(), axle));
    JointSpec hinge = joint("axle", JointKind::hinge, holder, wheel, hub, axle);
    hinge.motor_speed = motor_speed;
    hinge.motor_max = motor_max;
    hinge.brake = brake;
    model.joints.push_back(make_joint(hinge, initial));
  }
}

}  // namespace tether::runtime
