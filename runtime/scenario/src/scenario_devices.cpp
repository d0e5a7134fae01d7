// SPDX-License-Identifier: Apache-2.0
#include "tether/scenario/scenario_devices.hpp"

#include <cctype>
#include <numbers>

#include "tether/hal/device_name.hpp"
#include "tether/hal/nmea.hpp"
#include "tether/physics/math.hpp"

namespace tether::runtime {

namespace {

constexpr double deg = std::numbers::pi / 180.0;

hal::NoiseSpec parse_noise(const ConfigNode& n) {
  hal::NoiseSpec s;
  if (!n.yaml().IsDefined()) return s;
  if (!n.expect_map(
          {"offset", "scale", "stddev", "uniform", "bias_walk_stddev", "resolution", "dropout", "delay_steps"}))
    return s;
  s.offset = n.number_or("offset", s.offset);
  s.scale = n.number_or("scale", s.scale);
  s.stddev = n.number_or("stddev", s.stddev, Range::non_negative());
  s.uniform = n.number_or("uniform", s.uniform, Range::non_negative());
  s.bias_walk_stddev = n.number_or("bias_walk_stddev", s.bias_walk_stddev, Range::non_negative());
  s.resolution = n.number_or("resolution", s.resolution, Range::non_negative());
  s.dropout = n.number_or("dropout", s.dropout, Range::between(0, 1));
  s.delay_steps = static_cast<std::uint32_t>(n.integer_or("delay_steps", 0, 0, 1000));
  return s;
}

// each kind's `params:` map (a number in degrees kept as degrees, a range in metres, ...): one
// call per parameter struct of hal::DeviceParams, so a new struct without its reader does not build
struct ParamsReader {
  const ConfigNode& n;
  hal::DeviceKind kind;
  bool present;

  void operator()(hal::RayParams& p) const {
    if (!present) return;
    if (kind == TETHER_KIND_SONAR) {
      n.expect_map({"min_range_m", "max_range_m", "beam_width_deg", "rays"});
      p.beam_width_deg = n.number_or("beam_width_deg", p.beam_width_deg, Range{0, 180, false});
      p.rays = static_cast<std::uint32_t>(n.integer_or("rays", p.rays, 1, 64));
    } else {
      n.expect_map({"min_range_m", "max_range_m"});
    }
    p.min_range_m = n.number_or("min_range_m", p.min_range_m, Range::non_negative());
    p.max_range_m = n.number_or("max_range_m", p.max_range_m, Range::positive());
    if (p.min_range_m >= p.max_range_m) n["min_range_m"].error("must be below max_range_m");
  }

  void operator()(hal::DepthParams& p) const {
    if (!present || !n.expect_map({"atmospheric_pa"})) return;
    p.atmospheric_pa = n.number_or("atmospheric_pa", p.atmospheric_pa, Range::non_negative());
  }

  void operator()(hal::CompassParams& p) const {
    if (!present || !n.expect_map({"declination_deg"})) return;
    p.declination_deg = n.number_or("declination_deg", p.declination_deg, Range::between(-180, 180));
  }

  void operator()(hal::GpsParams& p) const {
    if (!present || !n.expect_map({"datum_lat_deg", "datum_lon_deg", "datum_alt_m", "surface_tolerance_m", "utc_start",
                                   "satellites", "hdop"}))
      return;
    p.datum_lat_deg = n.number_or("datum_lat_deg", p.datum_lat_deg, Range::between(-89, 89));
    p.datum_lon_deg = n.number_or("datum_lon_deg", p.datum_lon_deg, Range::between(-180, 180));
    p.datum_alt_m = n.number_or("datum_alt_m", p.datum_alt_m);
    p.surface_tolerance_m = n.number_or("surface_tolerance_m", p.surface_tolerance_m, Range::non_negative());
    if (n.has("utc_start")) {
      const std::string text = n.string("utc_start");
      if (!parse_utc_seconds(text, p.utc_start_s)) n.expected("utc_start", "a UTC time like \"2024-06-01T12:00:00Z\"");
    }
    p.satellites = static_cast<std::uint32_t>(n.integer_or("satellites", p.satellites, 0, 99));
    p.hdop = n.number_or("hdop", p.hdop, Range{0, 99.9, false});
  }

  void operator()(hal::ContactParams& p) const {
    if (!present || !n.expect_map({"radius_m", "min_force_n"})) return;
    p.radius_m = n.number_or("radius_m", p.radius_m, Range::non_negative());
    p.min_force_n = n.number_or("min_force_n", p.min_force_n, Range::non_negative());
  }

  void operator()(hal::TensionParams&) const {
    // which joint it reads is resolved once every joint is known (resolve_device_links)
    if (present) n.expect_map({"joint", "cable"});
  }

  void operator()(hal::EncoderParams&) const {
    if (present) n.expect_map({"joint"});
  }

  void operator()(hal::ThrusterParams& p) const {
    if (!present || !n.expect_map({"model", "max_thrust_n", "max_speed_rad_s", "time_constant_s", "ct", "alpha", "beta",
                                   "dead_band", "reverse_ratio", "reaction_torque_nm_per_n"}))
      return;
    p.model = n.choice_or("model", "first_order", {"first_order", "yoerger"}) == "yoerger"
                  ? hal::RotorModel::yoerger
                  : hal::RotorModel::first_order;
    p.max_thrust_n = n.number_or("max_thrust_n", p.max_thrust_n, Range::positive());
    p.max_speed_rad_s = n.number_or("max_speed_rad_s", p.max_speed_rad_s, Range::positive());
    p.time_constant_s = n.number_or("time_constant_s", p.time_constant_s, Range::positive());
    p.ct = n.number_or("ct", p.ct, Range::positive());
    p.alpha = n.number_or("alpha", p.alpha, Range::positive());
    p.beta = n.number_or("beta", p.beta, Range::positive());
    p.dead_band = n.number_or("dead_band", p.dead_band, Range{0, 1, false});
    if (p.dead_band >= 1) n["dead_band"].error("must be below 1");
    p.reverse_ratio = n.number_or("reverse_ratio", p.reverse_ratio, Range::non_negative());
    p.reaction_torque_nm_per_n = n.number_or("reaction_torque_nm_per_n", p.reaction_torque_nm_per_n);
  }

  void operator()(hal::DcMotorParams& p) const {
    // `drives` (the body the shaft turns) is read once every body is known (resolve_device_links)
    if (!present || !n.expect_map({"kt_nm_per_a", "ke_v_s_per_rad", "resistance_ohm", "inertia_kg_m2",
                                   "damping_nm_s_per_rad", "supply_v", "ct", "cq", "drives"}))
      return;
    p.kt_nm_per_a = n.number_or("kt_nm_per_a", p.kt_nm_per_a, Range::positive());
    p.ke_v_s_per_rad = n.number_or("ke_v_s_per_rad", p.ke_v_s_per_rad, Range::non_negative());
    p.resistance_ohm = n.number_or("resistance_ohm", p.resistance_ohm, Range::positive());
    p.inertia_kg_m2 = n.number_or("inertia_kg_m2", p.inertia_kg_m2, Range::positive());
    p.damping_nm_s_per_rad = n.number_or("damping_nm_s_per_rad", p.damping_nm_s_per_rad, Range::non_negative());
    p.supply_v = n.number_or("supply_v", p.supply_v, Range::positive());
    p.ct = n.number_or("ct", p.ct, Range::non_negative());
    p.cq = n.number_or("cq", p.cq, Range::non_negative());
  }

  void operator()(hal::FinParams& p) const {
    if (!present || !n.expect_map({"area_m2", "cl_alpha_per_rad", "stall_angle_deg", "cd0", "cd_alpha", "max_angle_deg",
                                   "rate_deg_s", "air_density_kg_m3"}))
      return;
    p.area_m2 = n.number_or("area_m2", p.area_m2, Range::positive());
    p.cl_alpha_per_rad = n.number_or("cl_alpha_per_rad", p.cl_alpha_per_rad, Range::non_negative());
    p.stall_angle_deg = n.number_or("stall_angle_deg", p.stall_angle_deg, Range{0, 90, true});
    p.cd0 = n.number_or("cd0", p.cd0, Range::non_negative());
    p.cd_alpha = n.number_or("cd_alpha", p.cd_alpha, Range::non_negative());
    p.max_angle_deg = n.number_or("max_angle_deg", p.max_angle_deg, Range::between(0, 90));
    p.rate_deg_s = n.number_or("rate_deg_s", p.rate_deg_s, Range::non_negative());
    p.air_density_kg_m3 = n.number_or("air_density_kg_m3", p.air_density_kg_m3, Range::positive());
  }

  void operator()(hal::ServoParams& p) const {
    if (!present || !n.expect_map({"min_angle_deg", "max_angle_deg", "max_rate_deg_s"})) return;
    p.min_angle_deg = n.number_or("min_angle_deg", p.min_angle_deg, Range::between(-360, 360));
    p.max_angle_deg = n.number_or("max_angle_deg", p.max_angle_deg, Range::between(-360, 360));
    p.max_rate_deg_s = n.number_or("max_rate_deg_s", p.max_rate_deg_s, Range::positive());
    if (p.min_angle_deg > p.max_angle_deg) n["min_angle_deg"].error("must not exceed max_angle_deg");
  }

  void operator()(hal::WheelDriveParams& p) const {
    if (!present || !n.expect_map({"track_m", "wheel_radius_m", "max_wheel_speed_rad_s", "time_constant_s", "friction",
                                   "slip_speed_m_s"}))
      return;
    p.track_m = n.number_or("track_m", p.track_m, Range::positive());
    p.wheel_radius_m = n.number_or("wheel_radius_m", p.wheel_radius_m, Range::positive());
    p.max_wheel_speed_rad_s = n.number_or("max_wheel_speed_rad_s", p.max_wheel_speed_rad_s, Range::positive());
    p.time_constant_s = n.number_or("time_constant_s", p.time_constant_s, Range::positive());
    p.friction = n.number_or("friction", p.friction, Range::non_negative());
    p.slip_speed_m_s = n.number_or("slip_speed_m_s", p.slip_speed_m_s, Range::positive());
  }

  void operator()(std::monostate) const {
    // gyro, accel, imu, inclinometer, clock: nothing to set
    if (present && n.size() > 0) n.error(std::string("a ") + hal::kind_info(kind).name + " has no parameters");
  }
};

void parse_params(const ConfigNode& n, hal::DeviceKind kind, hal::DeviceParams& params) {
  const bool present = n.yaml().IsDefined();
  if (present && !n.is_map()) {
    n.error("expected a map of parameters, got " + describe_value(n.yaml()));
    return;
  }
  std::visit(ParamsReader{n, kind, present}, params);
}

void parse_device(const ConfigNode& d, const std::string& vehicle, const std::string& part, int body_index,
                  std::vector<hal::DeviceSpec>& out) {
  if (!d.is_map()) {
    d.error("expected a device map (name, kind, mount, rate_hz, params, noise), got " + describe_value(d.yaml()));
    return;
  }
  const std::size_t errors_at_start = d.context().errors.size();
  hal::DeviceSpec spec;
  spec.body = body_index;
  spec.name = {vehicle, part, d.string("name")};
  const std::string kind_name = d.string_or("kind", "");
  spec.kind = hal::kind_from_name(kind_name);
  if (spec.kind == TETHER_KIND_NONE)  // missing, not a string, or not a known kind
    d.expected("kind", "a device kind, one of " + hal::device_kinds().known_list() + " (tether kinds)");
  const hal::KindInfo& info = hal::kind_info(spec.kind);
  if (info.noise_b_key)
    d.expect_map({"name", "kind", "mount", "rate_hz", "params", "noise", info.noise_b_key});
  else
    d.expect_map({"name", "kind", "mount", "rate_hz", "params", "noise"});

  const std::string& device = spec.name.device;
  if (!device.empty() && !hal::valid_name_segment(device))
    d["name"].error("\"" + device +
                    "\" is not a valid device name (letters, digits, _ and -, starting with a "
                    "letter or _, at most 31)");
  const std::string full = spec.name.full();
  if (full.size() > TETHER_MAX_DEVICE_NAME_LEN)
    d["name"].error("\"" + full + "\" is longer than " + std::to_string(TETHER_MAX_DEVICE_NAME_LEN) + " characters");
  for (const hal::DeviceSpec& other : out)
    if (other.name.full() == full) d["name"].error("duplicate device name \"" + full + "\"");

  if (d.has("mount")) {
    const ConfigNode m = d["mount"];
    if (m.expect_map({"position_m", "orientation_rpy_deg"})) {
      spec.mount.position_m = m.vec3_or("position_m", Vec3::Zero());
      const Vec3 rpy = m.vec3_or("orientation_rpy_deg", Vec3::Zero());
      spec.mount.orientation = quat_from_rpy(rpy.x() * deg, rpy.y() * deg, rpy.z() * deg);
    }
  }
  if (d.has("rate_hz")) {
    if (info.actuator)
      d["rate_hz"].error("rate_hz applies to sensors only (an actuator acts every loop step)");
    else
      spec.rate_hz = d.number("rate_hz", Range::positive());
  }
  if (spec.kind == TETHER_KIND_NONE) return;  // the kind error is recorded; the rest needs it
  spec.params = hal::default_params(spec.kind);
  parse_params(d["params"], spec.kind, spec.params);
  spec.noise = parse_noise(d["noise"]);
  if (info.noise_b_key && d.has(info.noise_b_key)) {
    const ConfigNode nb = d[info.noise_b_key];
    spec.noise_b = parse_noise(nb);
    if (spec.noise_b.dropout != 0 || spec.noise_b.delay_steps != 0)
      nb.error("dropout and delay_steps apply to the whole reading: give them in `noise`");
    spec.noise_b.dropout = 0;
    spec.noise_b.delay_steps = 0;
  }
  if (spec.kind == TETHER_KIND_CLOCK && d.has("noise")) d["noise"].error("a clock takes no noise");

  // whatever the field checks above did not catch (when they found nothing themselves)
  std::string why;
  if (d.context().errors.size() == errors_at_start && !hal::validate_spec(spec, &why)) d.error(why);
  out.push_back(std::move(spec));
}

}  // namespace

bool parse_utc_seconds(const std::string& text, std::int64_t& out) {
  // YYYY-MM-DDThh:mm:ss[Z]
  const std::string t = !text.empty() && text.back() == 'Z' ? text.substr(0, text.size() - 1) : text;
  if (t.size() != 19 || t[4] != '-' || t[7] != '-' || (t[10] != 'T' && t[10] != ' ') || t[13] != ':' || t[16] != ':')
    return false;
  auto field = [&](std::size_t at, std::size_t len, int& v) {
    v = 0;
    for (std::size_t i = at; i < at + len; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(t[i]))) return false;
      v = v * 10 + (t[i] - '0');
    }
    return true;
  };
  int year, month, day, hour, minute, second;
  if (!field(0, 4, year) || !field(5, 2, month) || !field(8, 2, day) || !field(11, 2, hour) || !field(14, 2, minute) ||
      !field(17, 2, second))
    return false;
  if (year < 1970 || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 60) return false;
  const hal::CivilDate check = hal::civil_from_days(hal::days_from_civil(year, month, day));
  if (check.day != day || check.month != month) return false;  // 31 February
  out = hal::days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second;
  return true;
}

namespace {

// a scalar's text, or "" for anything else (reading a missing key of a YAML node throws)
std::string scalar_of(const ConfigNode& n) {
  const YAML::Node& y = n.yaml();
  return y.IsDefined() && y.IsScalar() ? y.as<std::string>() : std::string();
}

std::string body_name(const WorldModel& model, int body) {
  return body < 0 ? "world" : model.bodies[static_cast<std::size_t>(body)].name;
}

// a dc_motor's `params.drives: vehicle.part`
void resolve_drives(const ConfigNode& drives, int body, const WorldModel& model, hal::DeviceSpec& spec) {
  auto* p = std::get_if<hal::DcMotorParams>(&spec.params);
  if (!p) {
    drives.error("only a dc_motor drives another body");
    return;
  }
  p->driven_body = model.find_body(scalar_of(drives));
  if (p->driven_body < 0)
    drives.error("expected a body (\"vehicle.part\") the shaft turns, got " + describe_value(drives.yaml()));
  else if (p->driven_body == body)
    drives.error("a motor cannot drive its own body");
}

// the joint `n` names, or -1 with a positioned error listing some joints
int joint_named(const ConfigNode& n, const WorldModel& model) {
  const int k = model.find_joint(scalar_of(n));
  if (k >= 0) return k;
  std::string known;
  for (std::size_t i = 0; i < model.joints.size() && i < 8; ++i) known += (i ? ", " : "") + model.joints[i].name;
  n.error("no joint named " + describe_value(n.yaml()) + " (joints: " + (known.empty() ? "none" : known) +
          (model.joints.size() > 8 ? ", ..." : "") + ")");
  return -1;
}

// an encoder's `params.joint: NAME`: a hinge or a slider with a body of the device's vehicle
// (a wheel from wheels[] has no device list of its own: its encoder sits on the chassis)
void resolve_encoder(const ConfigNode& d, int body, const WorldModel& model, hal::EncoderParams& p) {
  const ConfigNode params = d["params"];
  if (!params.is_map() || !params.has("joint")) {
    d.error("an encoder needs `params.joint` (a hinge or a slider of this vehicle)");
    return;
  }
  const ConfigNode n = params["joint"];
  const int k = joint_named(n, model);
  if (k < 0) return;
  const JointModel& j = model.joints[static_cast<std::size_t>(k)];
  if (j.kind != JointKind::hinge && j.kind != JointKind::slider) {
    n.error("joint \"" + j.name + "\" is neither a hinge nor a slider: an encoder reads an angle or a travel");
    return;
  }
  const int vehicle = model.bodies[static_cast<std::size_t>(body)].vehicle;
  auto of = [&](int b) { return b >= 0 ? model.bodies[static_cast<std::size_t>(b)].vehicle : -2; };
  if (of(j.body_a) != vehicle && of(j.body_b) != vehicle) {
    n.error("joint \"" + j.name + "\" joins " + body_name(model, j.body_a) + " and " + body_name(model, j.body_b) +
            ": not a joint of " + body_name(model, body) + "'s vehicle");
    return;
  }
  p.joint = k;
  p.joint_name = j.name;
}

// a tension sensor's `params.joint: NAME` or `params.cable: NAME` (the cable's end on its body)
void resolve_tension(const ConfigNode& d, int body, const WorldModel& model, hal::TensionParams& p) {
  const ConfigNode params = d["params"];
  const bool by_joint = params.is_map() && params.has("joint"), by_cable = params.is_map() && params.has("cable");
  if (by_joint == by_cable) {
    (by_joint ? params : d)
        .error(by_joint ? "give `joint` or `cable`, not both"
                        : "a tension sensor needs `params.joint` (a joint of this body) or `params.cable` (a cable "
                          "with an end on this body)");
    return;
  }
  const std::string here = body_name(model, body);
  if (by_joint) {
    const ConfigNode n = params["joint"];
    const std::string name = scalar_of(n);
    const int k = joint_named(n, model);
    if (k < 0) return;
    const JointModel& j = model.joints[static_cast<std::size_t>(k)];
    if (j.body_a != body && j.body_b != body) {
      n.error("joint \"" + name + "\" joins " + body_name(model, j.body_a) + " and " + body_name(model, j.body_b) +
              ", not " + here + ": a load cell reads a joint of the body it is mounted on");
      return;
    }
    p.joint = k;
    p.joint_name = name;
    return;
  }
  const ConfigNode n = params["cable"];
  const std::string name = scalar_of(n);
  const int vehicle = model.find_vehicle(name);
  const int first = model.find_joint(name + ".j0");
  if (vehicle < 0 || first < 0) {
    n.error("no cable named " + describe_value(n.yaml()));
    return;
  }
  // joint 0 holds the first segment to the `from` end, joint `segments` the `to` body to the last
  const auto segments = model.vehicles[static_cast<std::size_t>(vehicle)].bodies.size();
  const std::string last_name = name + ".j" + std::to_string(segments);
  const int last = model.find_joint(last_name);
  for (const int k : {first, last}) {
    if (k < 0) continue;
    const JointModel& j = model.joints[static_cast<std::size_t>(k)];
    if (j.body_a == body || j.body_b == body) {
      p.joint = k;
      p.joint_name = j.name;
      return;
    }
  }
  const JointModel& j0 = model.joints[static_cast<std::size_t>(first)];
  n.error("cable \"" + name + "\" ends at " + body_name(model, j0.body_b) + " and " +
          (last >= 0 ? body_name(model, model.joints[static_cast<std::size_t>(last)].body_a) : std::string("?")) +
          ", not at " + here + ": mount the load cell on an end's body (or in the cable's own `devices`)");
}

// what a device's params name elsewhere in the scenario, for the devices of one body
void resolve_links(const ConfigNode& devices_node, int body, const WorldModel& model,
                   std::vector<hal::DeviceSpec>& devices) {
  if (!devices_node.is_sequence()) return;
  for (std::size_t k = 0; k < devices_node.size(); ++k) {
    const ConfigNode d = devices_node.at(k);
    if (!d.is_map()) continue;
    const std::string device = d.has("name") ? scalar_of(d["name"]) : std::string();
    for (hal::DeviceSpec& spec : devices) {
      if (spec.body != body || spec.name.device != device) continue;
      if (d["params"].is_map() && d["params"].has("drives")) resolve_drives(d["params"]["drives"], body, model, spec);
      if (auto* p = std::get_if<hal::TensionParams>(&spec.params)) resolve_tension(d, body, model, *p);
      if (auto* p = std::get_if<hal::EncoderParams>(&spec.params)) resolve_encoder(d, body, model, *p);
    }
  }
}

}  // namespace

void resolve_device_links(const ConfigNode& vehicles, const ConfigNode& cables, const WorldModel& model,
                          std::vector<hal::DeviceSpec>& devices) {
  for (const ConfigNode* list : {&vehicles, &cables}) {
    if (!list->is_sequence()) continue;
    for (std::size_t i = 0; i < list->size(); ++i) {
      const ConfigNode v = list->at(i);
      if (!v.is_map()) continue;
      const std::string name = v.has("name") ? scalar_of(v["name"]) : std::string();
      if (list == &cables) {  // a cable's own devices sit on its first segment
        resolve_links(v["devices"], model.find_body(name + ".s0"), model, devices);
        continue;
      }
      if (!v["bodies"].is_sequence()) continue;
      for (std::size_t j = 0; j < v["bodies"].size(); ++j) {
        const ConfigNode b = v["bodies"].at(j);
        if (!b.is_map()) continue;
        const std::string part = b.has("name") ? scalar_of(b["name"]) : std::string();
        resolve_links(b["devices"], model.find_body(name + "." + part), model, devices);
      }
    }
  }
}

void parse_devices(const ConfigNode& devices_node, const std::string& vehicle, const std::string& part, int body_index,
                   std::vector<hal::DeviceSpec>& out) {
  if (!devices_node.expect_sequence()) return;
  if (!devices_node.yaml().IsDefined()) return;
  for (std::size_t i = 0; i < devices_node.size(); ++i)
    parse_device(devices_node.at(i), vehicle, part, body_index, out);
}

}  // namespace tether::runtime
