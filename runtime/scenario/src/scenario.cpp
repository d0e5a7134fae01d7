// SPDX-License-Identifier: Apache-2.0
#include "tether/scenario/scenario.hpp"
#include "tether/scenario/goals.hpp"
#include "tether/scenario/endpoint_types.hpp"

#include "tether/physics/joints.hpp"
#include "tether/scenario/joints_config.hpp"
#include "tether/scenario/scenario_devices.hpp"
#include "tether/scenario/terrain_config.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <set>
#include <sstream>

namespace tether::runtime {

namespace {

// sizes and masses a body may have: beyond these, the derived inverse mass, inertia and
// volume stop being finite (1e-320 kg, a radius of 1e300 m). Checked after the usual
// "a number > 0", so that the common mistakes keep their short message.
double bounded(const ConfigNode& n, const char* key, double v, double lo, double hi, const char* unit) {
  if (n.has(key) && v > 0 && (v < lo || v > hi)) {
    std::ostringstream s;
    s << "expected a value from " << lo << " " << unit << " to " << hi << " " << unit << ", got " << v;
    n[key].error(s.str());
  }
  return v;
}

constexpr double deg = std::numbers::pi / 180.0;

Shape parse_shape(const ConfigNode& n, bool allow_plane) {
  Shape s;
  if (!n.is_map()) {
    n.error("expected a map with a type (sphere, box, cylinder, capsule" + std::string(allow_plane ? ", plane" : "") +
            "), got " + describe_value(n.yaml()));
    return s;
  }
  const std::string type = allow_plane ? n.choice_or("type", "", {"sphere", "box", "cylinder", "capsule", "plane"})
                                       : n.choice_or("type", "", {"sphere", "box", "cylinder", "capsule"});
  if (type.empty() && !n.has("type")) n.expected("type", "a shape type");
  if (type == "sphere") {
    n.expect_map({"type", "radius_m"});
    s.kind = ShapeKind::sphere;
    s.radius_m = bounded(n, "radius_m", n.number("radius_m", Range::positive()), 1e-6, 1e6, "m");
  } else if (type == "box") {
    n.expect_map({"type", "size_m"});
    s.kind = ShapeKind::box;
    const auto size = n.numbers_or("size_m", {}, 3, Range::positive());
    if (!n.has("size_m")) n.expected("size_m", "a list of 3 numbers (each a number > 0)");
    for (double v : size) bounded(n, "size_m", v, 1e-6, 1e6, "m");
    if (size.size() == 3) s.half_extents_m = Vec3(size[0], size[1], size[2]) * 0.5;
  } else if (type == "cylinder" || type == "capsule") {
    n.expect_map({"type", "radius_m", "length_m"});
    s.kind = type == "cylinder" ? ShapeKind::cylinder : ShapeKind::capsule;
    s.radius_m = bounded(n, "radius_m", n.number("radius_m", Range::positive()), 1e-6, 1e6, "m");
    s.half_length_m = 0.5 * bounded(n, "length_m", n.number("length_m", Range::positive()), 1e-6, 1e6, "m");
  } else if (type == "plane") {
    n.expect_map({"type", "normal", "offset_m"});
    s.kind = ShapeKind::plane;
    const Vec3 normal = n.vec3_or("normal", Vec3(0, 0, 1));
    if (normal.norm() < 1e-9)
      n["normal"].error("expected a non-zero vector");
    else
      s.normal = normal.normalized();
    s.offset_m = n.number_or("offset_m", 0.0);
  }
  return s;
}

Quat parse_orientation(const ConfigNode& n) {
  const Vec3 rpy = n.vec3_or("orientation_rpy_deg", Vec3::Zero());
  return quat_from_rpy(rpy.x() * deg, rpy.y() * deg, rpy.z() * deg);
}

// the tank: floor and four walls as half-spaces, open at the top
void add_tank(const ConfigNode& t, WorldModel& model) {
  if (!t.expect_map({"size_m", "floor_z_m", "restitution", "friction"})) return;
  const auto size = t.numbers_or("size_m", {}, 3, Range::positive());
  if (!t.has("size_m")) t.expected("size_m", "a list of 3 numbers (each a number > 0)");
  if (size.size() != 3) return;
  const double floor_z = t.number_or("floor_z_m", -size[2]);
  const double restitution = t.number_or("restitution", 0.3, Range::between(0, 1));
  const double friction = t.number_or("friction", 0.5, Range::non_negative());
  auto plane = [&](const char* name, Vec3 normal, double offset) {
    StaticBody b;
    b.name = std::string("tank.") + name;
    b.shape.kind = ShapeKind::plane;
    b.shape.normal = normal;
    b.shape.offset_m = offset;
    b.restitution = restitution;
    b.friction = friction;
    model.statics.push_back(b);
  };
  // solid where normal·p <= offset
  plane("floor", {0, 0, 1}, floor_z);
  plane("wall_x_min", {1, 0, 0}, -size[0] / 2);
  plane("wall_x_max", {-1, 0, 0}, -size[0] / 2);
  plane("wall_y_min", {0, 1, 0}, -size[1] / 2);
  plane("wall_y_max", {0, -1, 0}, -size[1] / 2);
}

// `base_dir`: the scenario file's folder, for files it names (terrain images)
void parse_world(const ConfigNode& w, WorldModel& model, const std::string& base_dir) {
  if (!w.has("gravity_m_s2") && !w.yaml().IsDefined()) return;
  if (!w.expect_map({"gravity_m_s2", "water", "tank", "statics", "terrain", "max_substep_s", "free_substep_s",
                     "broad_phase", "physics_threads"}))
    return;
  model.gravity_m_s2 = w.vec3_or("gravity_m_s2", model.gravity_m_s2);
  model.max_substep_s = w.number_or("max_substep_s", model.max_substep_s, Range::positive());
  // a scenario that sets max_substep_s alone asked for that limit everywhere: it gets it
  if (w.has("max_substep_s") && !w.has("free_substep_s")) model.free_substep_s = model.max_substep_s;
  model.free_substep_s = w.number_or("free_substep_s", model.free_substep_s, Range::positive());
  model.threads = static_cast<int>(w.integer_or("physics_threads", model.threads, 1, 256));
  if (w.has("broad_phase")) {
    const std::string kind = w.string("broad_phase");
    if (kind == "grid")
      model.contact.broad_phase = BroadPhaseKind::grid;
    else if (kind == "sweep_and_prune")
      model.contact.broad_phase = BroadPhaseKind::sweep_and_prune;
    else if (kind == "brute_force")
      model.contact.broad_phase = BroadPhaseKind::brute_force;
    else
      w["broad_phase"].error("expected one of grid, sweep_and_prune, brute_force, got \"" + kind + "\"");
  }
  if (w.has("water")) {
    const ConfigNode water = w["water"];
    if (water.expect_map({"density_kg_m3", "surface_z_m", "current_m_s"})) {
      model.water.present = true;
      model.water.density_kg_m3 = water.number_or("density_kg_m3", 1000.0, Range::positive());
      model.water.surface_z_m = water.number_or("surface_z_m", 0.0);
      model.water.current_m_s = water.vec3_or("current_m_s", Vec3::Zero());
    }
  }
  if (w.has("tank")) add_tank(w["tank"], model);
  const ConfigNode statics = w["statics"];
  if (statics.expect_sequence()) {
    for (std::size_t i = 0; i < statics.size(); ++i) {
      const ConfigNode s = statics.at(i);
      if (!s.expect_map({"name", "shape", "position_m", "orientation_rpy_deg", "restitution", "friction"})) continue;
      StaticBody b;
      b.name = s.string("name");
      b.shape = parse_shape(s["shape"], true);
      b.position_m = s.vec3_or("position_m", Vec3::Zero());
      b.orientation = parse_orientation(s);
      b.restitution = s.number_or("restitution", 0.3, Range::between(0, 1));
      b.friction = s.number_or("friction", 0.5, Range::non_negative());
      model.statics.push_back(b);
    }
  }
  if (w.has("terrain")) parse_terrain(w["terrain"], model, base_dir);
}

void parse_body(const ConfigNode& b, const std::string& vehicle, int vehicle_index, WorldModel& model,
                WorldState& state, std::vector<hal::DeviceSpec>& devices) {
  if (!b.expect_map({"name", "shape", "mass_kg", "inertia_kg_m2", "volume_m3", "centre_of_buoyancy_m", "damping",
                     "restitution", "friction", "initial", "devices", "locks"}))
    return;
  BodyModel body;
  body.name = vehicle + "." + b.string("name");
  body.vehicle = vehicle_index;
  body.shape = parse_shape(b["shape"], false);
  if (!b.has("shape")) b.expected("shape", "a shape map");
  body.mass_kg = bounded(b, "mass_kg", b.number("mass_kg", Range::positive()), 1e-6, 1e12, "kg");
  std::optional<Mat3> inertia;
  if (b.has("inertia_kg_m2")) {
    const auto d = b.numbers_or("inertia_kg_m2", {1, 1, 1}, 3, Range::positive());
    inertia = Mat3(Vec3(d[0], d[1], d[2]).asDiagonal());
  }
  std::optional<double> volume;
  if (b.has("volume_m3")) volume = b.number("volume_m3", Range::non_negative());
  finish_body_model(body, inertia ? &*inertia : nullptr, volume ? &*volume : nullptr);
  body.centre_of_buoyancy_m = b.vec3_or("centre_of_buoyancy_m", Vec3::Zero());
  if (b.has("damping")) {
    const ConfigNode d = b["damping"];
    if (d.expect_map({"linear", "quadratic", "angular_linear", "angular_quadratic"})) {
      body.damping.linear = d.vec3_or("linear", Vec3::Zero(), Range::non_negative());
      body.damping.quadratic = d.vec3_or("quadratic", Vec3::Zero(), Range::non_negative());
      body.damping.angular_linear = d.vec3_or("angular_linear", Vec3::Zero(), Range::non_negative());
      body.damping.angular_quadratic = d.vec3_or("angular_quadratic", Vec3::Zero(), Range::non_negative());
    }
  }
  body.restitution = b.number_or("restitution", 0.3, Range::between(0, 1));
  body.friction = b.number_or("friction", 0.5, Range::non_negative());

  BodyState s;
  Vec3 v = Vec3::Zero(), w = Vec3::Zero();
  if (b.has("initial")) {
    const ConfigNode init = b["initial"];
    if (init.expect_map({"position_m", "orientation_rpy_deg", "velocity_m_s", "angular_velocity_rad_s"})) {
      s.position_m = init.vec3_or("position_m", Vec3::Zero());
      s.orientation = parse_orientation(init);
      v = init.vec3_or("velocity_m_s", Vec3::Zero());
      w = init.vec3_or("angular_velocity_rad_s", Vec3::Zero());
    }
  }
  if (model.find_body(body.name) >= 0) b["name"].error("duplicate body name \"" + body.name + "\"");
  model.vehicles[static_cast<std::size_t>(vehicle_index)].bodies.push_back(static_cast<int>(model.bodies.size()));
  const int body_index = static_cast<int>(model.bodies.size());
  parse_devices(b["devices"], vehicle, body.name.substr(vehicle.size() + 1), body_index, devices);
  model.bodies.push_back(body);
  state.bodies.push_back(s);
  set_velocity(model, state, static_cast<int>(model.bodies.size() - 1), v, w);
  if (const std::uint8_t locked = parse_locks(b["locks"])) {
    JointSpec lock;
    lock.name = body.name + ".locks";
    lock.kind = JointKind::lock;
    lock.body_a = body_index;
    lock.locked = locked;
    model.joints.push_back(make_joint(lock, state));
  }
}

void parse_feedback(const ConfigNode& fs, int vehicle, std::vector<FeedbackConfig>& out) {
  if (!fs.expect_sequence()) return;
  for (std::size_t i = 0; i < fs.size(); ++i) {
    const ConfigNode f = fs.at(i);
    if (!f.is_map()) {
      f.error("expected a map with a type, got " + describe_value(f.yaml()));
      continue;
    }
    FeedbackConfig fc{{}, {}, vehicle, f};
    fc.type = f.string("type");
    fc.name = f.string_or("name", fc.type);
    out.push_back(std::move(fc));
  }
}

void parse_vehicles(const ConfigNode& vs, WorldModel& model, WorldState& state, std::vector<FeedbackConfig>& feedback,
                    std::vector<hal::DeviceSpec>& devices) {
  if (!vs.yaml().IsDefined()) {
    vs.error("missing; expected a list of vehicles");
    return;
  }
  if (!vs.expect_sequence()) return;
  for (std::size_t i = 0; i < vs.size(); ++i) {
    const ConfigNode v = vs.at(i);
    if (!v.expect_map({"name", "bodies", "feedback"})) continue;
    VehicleModel vehicle;
    vehicle.name = v.string("name");
    if (vehicle.name.find('.') != std::string::npos) v["name"].error("a vehicle name cannot contain '.'");
    if (model.find_vehicle(vehicle.name) >= 0) v["name"].error("duplicate vehicle name \"" + vehicle.name + "\"");
    const int index = static_cast<int>(model.vehicles.size());
    model.vehicles.push_back(vehicle);
    const ConfigNode bodies = v["bodies"];
    if (!bodies.is_sequence() || bodies.size() == 0) {
      v.expected("bodies", "a list of at least one body");
      continue;
    }
    for (std::size_t j = 0; j < bodies.size(); ++j)
      parse_body(bodies.at(j), vehicle.name, index, model, state, devices);
    parse_feedback(v["feedback"], index, feedback);
  }
}

void parse_loop(const ConfigNode& l, LoopConfig& loop) {
  if (!l.yaml().IsDefined()) return;
  if (!l.expect_map({"period_ms", "real_time_factor", "steps", "duration_s", "seed", "history_steps", "plausibility",
                     "realtime", "profile_phases"}))
    return;
  const double period_ms = l.number_or("period_ms", 10.0, Range{0.01, 60'000, false});
  loop.period_ns = std::llround(period_ms * 1e6);
  loop.real_time_factor = l.number_or("real_time_factor", 1.0, Range::between(0, 1000));
  if (l.has("steps") && l.has("duration_s")) l["duration_s"].error("give either steps or duration_s, not both");
  loop.steps = l.unsigned_or("steps", loop.steps);
  if (l.has("duration_s")) {
    // at most 10^9 s (31 years): the step count must fit its integer
    const double d = l.number("duration_s", Range{0, 1e9, true});
    loop.steps = static_cast<std::uint64_t>(std::ceil(d * 1e9 / static_cast<double>(loop.period_ns) - 1e-9));
  }
  loop.seed = l.unsigned_or("seed", loop.seed);
  loop.profile_phases = l.boolean_or("profile_phases", loop.profile_phases);
  loop.history_steps = static_cast<std::uint32_t>(l.integer_or("history_steps", loop.history_steps, 1, 1'000'000));
  const ConfigNode p = l["plausibility"];
  if (p.yaml().IsDefined() &&
      p.expect_map({"enabled", "margin_m", "max_distance_m", "max_speed_m_s", "max_angular_speed_rad_s"})) {
    PlausibilityConfig& g = loop.plausibility;
    g.enabled = p.boolean_or("enabled", g.enabled);
    g.margin_m = p.number_or("margin_m", g.margin_m, Range::non_negative());
    g.max_distance_m = p.number_or("max_distance_m", g.max_distance_m, Range::positive());
    g.max_speed_m_s = p.number_or("max_speed_m_s", g.max_speed_m_s, Range::positive());
    g.max_angular_speed_rad_s = p.number_or("max_angular_speed_rad_s", g.max_angular_speed_rad_s, Range::positive());
  }
  const ConfigNode rt = l["realtime"];
  if (rt.yaml().IsDefined() && rt.expect_map({"lock_memory", "priority", "cpu", "spin_us"})) {
    RealtimeConfig& r = loop.realtime;
    r.lock_memory = rt.boolean_or("lock_memory", r.lock_memory);
    r.priority = static_cast<int>(rt.integer_or("priority", r.priority, 0, 99));
    r.cpu = static_cast<int>(rt.integer_or("cpu", r.cpu, -1, 1023));
    r.spin_us = rt.integer_or("spin_us", r.spin_us, 0, 100'000);
  }
}

void parse_recording(const ConfigNode& r, RecordingConfig& rec) {
  if (!r.yaml().IsDefined()) return;
  if (!r.expect_map({"enabled", "compress", "keyframe_every_steps", "flush_interval_s", "queue_slots",
                     "state_every_step_max_bodies", "on_write_error"}))
    return;
  rec.enabled = r.boolean_or("enabled", rec.enabled);
  rec.compress = r.boolean_or("compress", rec.compress);
  rec.keyframe_every_steps =
      static_cast<std::uint32_t>(r.integer_or("keyframe_every_steps", rec.keyframe_every_steps, 1, 1'000'000));
  rec.flush_interval_s = r.number_or("flush_interval_s", rec.flush_interval_s, Range{0.01, 3600, false});
  rec.queue_slots = static_cast<std::uint32_t>(r.integer_or("queue_slots", rec.queue_slots, 16, 1'000'000));
  rec.state_every_step_max_bodies = static_cast<std::uint32_t>(
      r.integer_or("state_every_step_max_bodies", rec.state_every_step_max_bodies, 0, 1'000'000));
  rec.stop_on_write_error = r.choice_or("on_write_error", "stop", {"stop", "continue"}) == "stop";
}

void parse_live(const ConfigNode& l, LiveConfig& live) {
  if (!l.yaml().IsDefined()) return;
  if (!l.expect_map({"enabled", "host", "port", "token", "max_clients", "queue_messages", "max_frame_bytes",
                     "max_rate_hz", "start_paused"}))
    return;
  live.enabled = l.boolean_or("enabled", true);
  live.host = l.string_or("host", live.host);
  live.port = static_cast<std::uint16_t>(l.integer_or("port", live.port, 0, 65535));
  live.token = l.string_or("token", "");
  live.max_clients = static_cast<std::uint32_t>(l.integer_or("max_clients", live.max_clients, 1, 1000));
  live.queue_messages = static_cast<std::uint32_t>(l.integer_or("queue_messages", live.queue_messages, 16, 1'000'000));
  live.max_frame_bytes =
      static_cast<std::uint32_t>(l.integer_or("max_frame_bytes", live.max_frame_bytes, 1024, 16 * 1024 * 1024));
  live.max_rate_hz = l.number_or("max_rate_hz", live.max_rate_hz, Range::between(0, 1e6));
  live.start_paused = l.boolean_or("start_paused", false);
}

void parse_endpoints(const ConfigNode& es, Scenario& sc) {
  if (!es.expect_sequence()) return;
  std::set<std::string> names;
  for (std::size_t i = 0; i < es.size(); ++i) {
    const ConfigNode e = es.at(i);
    if (!e.is_map()) {
      e.error("expected a map, got " + describe_value(e.yaml()));
      continue;
    }
    EndpointConfig ep{{}, {}, {}, -1, 0, TimeoutPolicy::hold, e};
    ep.name = e.string("name");
    if (!ep.name.empty() && !names.insert(ep.name).second)
      e["name"].error("duplicate endpoint name \"" + ep.name + "\"");
    ep.type = e.string("type");
    ep.vehicle = e.string_or("vehicle", "");
    if (!ep.vehicle.empty()) {
      ep.vehicle_index = sc.model.find_vehicle(ep.vehicle);
      if (ep.vehicle_index < 0) e["vehicle"].error("no vehicle named \"" + ep.vehicle + "\" in this scenario");
    }
    ep.deadline_ns = std::llround(
        e.number_or("deadline_ms", static_cast<double>(sc.loop.period_ns) / 1e6, Range::between(0, 3.6e6)) * 1e6);
    const auto facts = endpoint_type_facts().find(ep.type);
    const char* fallback = facts != endpoint_type_facts().end() ? facts->second.default_policy : "hold";
    const std::string policy = e.choice_or("timeout_policy", fallback, {"block", "hold", "safe", "abort"});
    ep.policy = policy == "block"   ? TimeoutPolicy::block
                : policy == "safe"  ? TimeoutPolicy::safe
                : policy == "abort" ? TimeoutPolicy::abort
                                    : TimeoutPolicy::hold;
    sc.endpoints.push_back(std::move(ep));
  }
}

}  // namespace

const char* to_string(TimeoutPolicy policy) {
  switch (policy) {
    case TimeoutPolicy::block: return "block";
    case TimeoutPolicy::hold: return "hold";
    case TimeoutPolicy::safe: return "safe";
    case TimeoutPolicy::abort: return "abort";
  }
  return "?";
}

void Scenario::throw_if_errors() const {
  if (context && !context->errors.empty()) throw ConfigError(context->errors);
}

Scenario parse_scenario(const std::string& text, const std::string& label, const std::vector<std::string>& overrides) {
  const ConfigNode root = load_config_text(text, label);
  apply_overrides(root, overrides);
  Scenario sc;
  sc.overrides = overrides;
  sc.path = label;
  sc.source_text = text;
  sc.context = root.context_ptr();
  const ConfigNode& top = root;
  if (!top.is_map()) {
    top.error("expected a scenario map (world, vehicles, loop, endpoints), got " + describe_value(top.yaml()));
    sc.throw_if_errors();
  }
  top.expect_map({"name", "description", "world", "vehicles", "wheels", "joints", "cables", "loop", "endpoints",
                  "goals", "expect", "faults", "identify", "recording", "live"});
  sc.name = top.string_or("name", std::filesystem::path(label).stem().string());
  top.string_or("description", "");
  parse_world(top["world"], sc.model, std::filesystem::path(label).parent_path().string());
  parse_vehicles(top["vehicles"], sc.model, sc.initial, sc.feedback, sc.devices);
  parse_wheels(top["wheels"], sc.model, sc.initial);
  const auto vehicles_before = static_cast<int>(sc.model.vehicles.size());
  parse_cables(top["cables"], sc.model, sc.initial, sc.devices);
  for (auto v = vehicles_before; v < static_cast<int>(sc.model.vehicles.size()); ++v) sc.cables.push_back(v);
  parse_joints(top["joints"], sc.model, sc.initial);
  resolve_device_links(top["vehicles"], top["cables"], sc.model, sc.devices);
  parse_loop(top["loop"], sc.loop);
  parse_endpoints(top["endpoints"], sc);
  sc.goals = parse_goals(top["goals"], sc.model);
  sc.expectations = parse_expectations(top["expect"], sc);
  sc.faults = parse_faults(top["faults"], sc);
  sc.identify = parse_identify(top["identify"], sc.endpoints);
  parse_recording(top["recording"], sc.recording);
  parse_live(top["live"], sc.live);
  sc.throw_if_errors();
  return sc;
}

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError({path + ": cannot open the file"});
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_scenario(buffer.str(), path, overrides);
}

}  // namespace tether::runtime
