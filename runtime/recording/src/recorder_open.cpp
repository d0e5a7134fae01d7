// SPDX-License-Identifier: Apache-2.0
// Recorder::open: the file's attachments and metadata, the schemas and channels, and the
// scene (docs/recording.md lists the channels).
#include "tether/recording/foxglove_schemas.hpp"
#include "tether/recording/json_text.hpp"
#include "tether/recording/recorder.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <numbers>

#include <nlohmann/json.hpp>

#include "tether/recording/mcap_writer.hpp"
#include "tether/recording/protobuf.hpp"
#include "recorder_json.hpp"

namespace tether::runtime {

namespace {

using nlohmann::json;
using namespace recorder_json;

// the JSON channels' schemas, so a plot path can be picked from a list (docs/recording.md)
constexpr const char* timing_schema =
    R"({"title":"tether.Timing","description":"one step: its wall time and each endpoint's round trip",)"
    R"("type":"object","properties":{"step":{"type":"integer"},"step_time_ns":{"type":"integer"},)"
    R"("endpoints":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},)"
    R"("round_trip_ns":{"type":"integer"},"outcome":{"enum":["fresh","timeout","fault"]}}}}}})";
// a vehicle's fields, in /tether/vehicles' array and on /vehicles/V/state
#define TETHER_VEHICLE_FIELDS                                                                            \
  R"("name":{"type":"string"},"x_m":{"type":"number"},"y_m":{"type":"number"},"z_m":{"type":"number"},)" \
  R"("depth_m":{"type":"number"},"heading_deg":{"type":"number"},"yaw_deg":{"type":"number"},)"          \
  R"("roll_deg":{"type":"number"},"pitch_deg":{"type":"number"},"speed_m_s":{"type":"number"},)"         \
  R"("projected":{"type":"object","properties":{"x_m":{"type":"number"},"y_m":{"type":"number"},)"       \
  R"("z_m":{"type":"number"}}},"measured":{"type":"object","properties":{"x_m":{"type":"number"},)"      \
  R"("y_m":{"type":"number"},"z_m":{"type":"number"}}},"nodes":{"type":"array","description":"a cable's )"   \
  R"(nodes (m, world), from its first segment to its last: only a cable has them","items":{"type":"array",)" \
  R"("items":{"type":"number"}}})"
constexpr const char* vehicles_schema =
    R"({"title":"tether.Vehicles","description":"each vehicle after the step: position (m, world), depth below )"
    R"(the surface, compass heading (deg clockwise from north), yaw (deg counter-clockwise from east), roll, )"
    R"(pitch, speed, and the projected and measured positions","type":"object","properties":{)"
    R"("step":{"type":"integer"},"vehicles":{"type":"array","items":{"type":"object","properties":{)" TETHER_VEHICLE_FIELDS
    R"(}}}}})";
constexpr const char* vehicle_state_schema =
    R"({"title":"tether.VehicleState","description":"one vehicle after the step, as in tether.Vehicles",)"
    R"("type":"object","properties":{"step":{"type":"integer"},)" TETHER_VEHICLE_FIELDS R"(}})";
#undef TETHER_VEHICLE_FIELDS
constexpr const char* event_schema =
    R"({"title":"tether.Event","description":"a miss, a fault, an operator command, a firmware line, an abort",)"
    R"("type":"object","properties":{"level":{"type":"integer","description":"1 debug, 2 info, 3 warning, )"
    R"(4 error, 5 fatal"},"name":{"type":"string","description":"the source"},"message":{"type":"string"}}})";
constexpr const char* summary_schema =
    R"({"title":"tether.Summary","description":"the session summary, the same as summary.json",)"
    R"("type":"object","properties":{"scenario":{"type":"string"},"outcome":{"type":"string"},)"
    R"("reason":{"type":"string"},"verdict":{"type":"string"},"steps":{"type":"integer"},)"
    R"("steps_planned":{"type":"integer"},"sim_time_s":{"type":"number"},"wall_time_s":{"type":"number"},)"
    R"("real_time_factor":{"type":"number"},"achieved_real_time_factor":{"type":"number"},)"
    R"("step_time_ns":{"type":"object"},"overruns":{"type":"integer"},"reanchors":{"type":"integer"},)"
    R"("physics_substeps":{"type":"integer"},"physics_threads":{"type":"integer"},)"
    R"("phase_profile":{"type":"object","description":"loop.profile_phases: wall time per phase"},)"
    R"("realtime":{"type":"object"},"state_hash":{"type":"string","description":"16 hex digits"},)"
    R"("endpoints":{"type":"array"},"devices":{"type":"object"},"feedback":{"type":"array"},)"
    R"("vehicles":{"type":"array"},"goals":{"type":"array"},"expectations":{"type":"array"},)"
    R"("faults":{"type":"array"},"control":{"type":"object"},"live":{"type":"object"},)"
    R"("recording":{"type":"object"},"overrides":{"type":"array"}}})";
constexpr const char* feedback_schema =
    R"({"title":"tether.Feedback","description":"each feedback processor's figures after the step",)"
    R"("type":"object","properties":{"step":{"type":"integer"},"processors":{"type":"object",)"
    R"("additionalProperties":{"type":"object","additionalProperties":{"type":"number"}}}}})";

constexpr const char* endpoint_step_schema =
    R"({"title":"tether.EndpointStep","description":"one endpoint in one step: how its reply came and what )"
    R"(the loop applied","type":"object","properties":{"step":{"type":"integer"},)"
    R"("outcome":{"enum":["fresh","timeout","fault"]},"round_trip_ns":{"type":"integer",)"
    R"("description":"publish to reply; 0 unless fresh"},"action":{"enum":["reply","hold","safe","block","abort"],)"
    R"("description":"reply: its fresh reply; otherwise what its timeout policy applied"}}})";
constexpr const char* actuator_command_schema =
    R"({"title":"tether.ActuatorCommand","description":"an actuator's command as it came in an endpoint's )"
    R"(fresh reply (a firmware ACTUATE, an in-process controller), in the device's units, see docs/devices.md",)"
    R"("type":"object","properties":{"step":{"type":"integer"},"endpoint":{"type":"string"},)"
    R"("value":{"type":"number","description":"the first channel"},)"
    R"("values":{"type":"array","items":{"type":"number"}}}})";

// a processor's figures: its record fields by name
std::string processor_schema(const std::string& name, const std::vector<std::string>& fields) {
  std::string s = R"({"title":"tether.ProcessorFigures","description":"feedback processor )" + name +
                  R"( after the step, see docs/feedback.md","type":"object","properties":{"step":{"type":"integer"})";
  for (const auto& f : fields) s += ",\"" + f + R"(":{"type":"number"})";
  return s + "}}";
}

std::string sensor_reading_schema() {
  return R"({"title":"tether.SensorReading","description":"a sensor's new sample as the endpoints were sent it )"
         R"((after noise, delay, dropout and faults), channels in the wire convention and units of )"
         R"(docs/devices.md","type":"object","properties":{"step":{"type":"integer"},)"
         R"("valid":{"type":"boolean","description":"false: no data, e.g. a dropout or GPS under water"},)"
         R"("value":{"type":"number","description":"the first channel"},)"
         R"("values":{"type":"array","items":{"type":"number"}}}})";
}

std::string actuators_schema() {
  return R"({"title":"tether.Actuators","description":"each actuator's last command from an endpoint's fresh reply )"
         R"((a firmware ACTUATE, an in-process controller), in the device's units, see docs/devices.md",)"
         R"("type":"object","properties":{"step":{"type":"integer"},"actuators":{"type":"array","items":)"
         R"({"type":"object","properties":{"name":{"type":"string"},"value":{"type":"number",)"
         R"("description":"the first channel"},"values":{"type":"array","items":{"type":"number"}}}}}}})";
}
// "2026-11-24T23:51:31.123456789Z"
std::string utc_text(std::uint64_t unix_ns) {
  const std::time_t secs = static_cast<std::time_t>(unix_ns / 1'000'000'000ull);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char text[64];
  const std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(text + n, sizeof text - n, ".%09lluZ", static_cast<unsigned long long>(unix_ns % 1'000'000'000ull));
  return text;
}
// the part of the world the scene shows: the box the axis-aligned planes (a tank's floor and
// walls) close, each open side from the water surface or the vehicles' start, 20 m beyond
struct SceneBox {
  Vec3 lo, hi;
};

SceneBox scene_box(const WorldModel& m, const WorldState& initial) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  Vec3 lo = Vec3::Constant(-inf), hi = Vec3::Constant(inf);
  for (const StaticBody& st : m.statics) {
    if (st.shape.kind != ShapeKind::plane) continue;
    const Vec3 n = st.orientation * st.shape.normal;
    const Vec3 on_plane = st.position_m + n * st.shape.offset_m;  // a point of the plane
    for (int a = 0; a < 3; ++a) {
      if (std::abs(std::abs(n[a]) - 1) > 1e-9) continue;
      if (n[a] > 0)
        lo[a] = std::max(lo[a], on_plane[a]);  // the solid is below: the world starts here
      else
        hi[a] = std::min(hi[a], on_plane[a]);
    }
  }
  // what must be inside on open sides: the vehicles' start and the water surface
  Vec3 in_lo = Vec3::Constant(inf), in_hi = Vec3::Constant(-inf);
  for (const BodyState& b : initial.bodies) {
    in_lo = in_lo.cwiseMin(b.position_m);
    in_hi = in_hi.cwiseMax(b.position_m);
  }
  if (m.water.present) {
    in_lo.z() = std::min(in_lo.z(), m.water.surface_z_m);
    in_hi.z() = std::max(in_hi.z(), m.water.surface_z_m);
  }
  for (int a = 0; a < 3; ++a) {
    if (!std::isfinite(in_lo[a])) in_lo[a] = in_hi[a] = 0;
    if (!std::isfinite(lo[a])) lo[a] = std::min(in_lo[a], std::isfinite(hi[a]) ? hi[a] : in_lo[a]) - 20;
    if (!std::isfinite(hi[a]))
      // a tank open at the top ends at the water surface when there is one
      hi[a] = (a == 2 && m.water.present && m.water.surface_z_m > lo[a]) ? m.water.surface_z_m
                                                                         : std::max(in_hi[a], lo[a]) + 20;
  }
  return {lo, hi};
}

// the extent of the scene box along a direction that is a world axis (else its diagonal)
double extent_along(const SceneBox& box, const Vec3& u) {
  for (int a = 0; a < 3; ++a)
    if (std::abs(std::abs(u[a]) - 1) < 1e-9) return box.hi[a] - box.lo[a];
  return (box.hi - box.lo).norm();
}

// terrain as one triangle list: every grid vertex (at most 256 x 256, thinned evenly
// beyond) once, the cells' two triangles by index, split as the collision code splits them
void add_terrain(json& entity, const HeightField& h, const Vec3& p, const Quat& q, const json& rgba) {
  const int stride = std::max(1, (std::max(h.columns, h.rows) + 255) / 256);
  std::vector<int> cols, rows;
  for (int c = 0; c < h.columns; c += stride) cols.push_back(c);
  if (cols.back() != h.columns - 1) cols.push_back(h.columns - 1);
  for (int r = 0; r < h.rows; r += stride) rows.push_back(r);
  if (rows.back() != h.rows - 1) rows.push_back(h.rows - 1);
  json points = json::array(), indices = json::array();
  for (int r : rows)
    for (int c : cols) points.push_back(vec(Vec3(c * h.cell_size_m, r * h.cell_size_m, h.height(c, r))));
  const auto at = [&](std::size_t i, std::size_t j) { return j * cols.size() + i; };
  for (std::size_t j = 0; j + 1 < rows.size(); ++j)
    for (std::size_t i = 0; i + 1 < cols.size(); ++i)
      for (std::size_t v : {at(i, j), at(i + 1, j), at(i + 1, j + 1), at(i, j), at(i + 1, j + 1), at(i, j + 1)})
        indices.push_back(v);
  entity["triangles"].push_back({{"pose", pose(p, q)},
                                 {"points", std::move(points)},
                                 {"color", rgba},
                                 {"colors", json::array()},
                                 {"indices", std::move(indices)}});
}

// a primitive for a shape, in the frame `frame_id`, placed at `p`, `q`
void add_shape(json& entity, const Shape& s, const Vec3& p, const Quat& q, const json& rgba,
               const SceneBox* box = nullptr) {
  switch (s.kind) {
    case ShapeKind::sphere:
      entity["spheres"].push_back(
          {{"pose", pose(p, q)}, {"size", vec(Vec3::Constant(2 * s.radius_m))}, {"color", rgba}});
      break;
    case ShapeKind::box:
      entity["cubes"].push_back({{"pose", pose(p, q)}, {"size", vec(2 * s.half_extents_m)}, {"color", rgba}});
      break;
    case ShapeKind::cylinder:
    case ShapeKind::capsule: {
      // Foxglove cylinders stand along z; ours lie along body x
      const Quat along_x = q * Quat(Eigen::AngleAxisd(std::numbers::pi / 2, Vec3::UnitY()));
      const double len = 2 * s.half_length_m + (s.kind == ShapeKind::capsule ? 2 * s.radius_m : 0);
      entity["cylinders"].push_back({{"pose", pose(p, along_x)},
                                     {"size", vec(Vec3(2 * s.radius_m, 2 * s.radius_m, len))},
                                     {"bottom_scale", 1.0},
                                     {"top_scale", 1.0},
                                     {"color", rgba}});
      break;
    }
    case ShapeKind::plane: {
      // a thin slab standing for the half-space, its top face on the plane, as large as the
      // scene box's face it bounds (a tank's floor and walls at their true size)
      const Vec3 n = q * s.normal;
      const Quat align = Quat::FromTwoVectors(Vec3::UnitZ(), n);
      const SceneBox fallback{Vec3::Constant(-20), Vec3::Constant(20)};
      const SceneBox& b = box ? *box : fallback;
      const Vec3 mid = (b.lo + b.hi) / 2;
      const Vec3 on_plane = p + n * s.offset_m;
      const Vec3 centre = mid + n * (n.dot(on_plane - mid)) - n * 0.01;
      const Vec3 size(extent_along(b, align * Vec3::UnitX()), extent_along(b, align * Vec3::UnitY()), 0.02);
      entity["cubes"].push_back({{"pose", pose(centre, align)}, {"size", vec(size)}, {"color", rgba}});
      break;
    }
    case ShapeKind::heightfield: break;  // add_terrain (it needs the grid)
  }
}

json empty_entity(const std::string& frame, const std::string& id) {
  return json{{"timestamp", stamp(0)},      {"frame_id", frame},      {"id", id},
              {"lifetime", stamp(0)},       {"frame_locked", true},   {"metadata", json::array()},
              {"arrows", json::array()},    {"cubes", json::array()}, {"spheres", json::array()},
              {"cylinders", json::array()}, {"lines", json::array()}, {"triangles", json::array()},
              {"texts", json::array()},     {"models", json::array()}};
}
}  // namespace

bool Recorder::open(const std::string& path, std::string* error) {
  path_ = keep_file_ ? path : "";
  mcap::WriterOptions options;
  options.profile = "x-tether";
  options.library = "tether 0.1";
  options.compress = scenario_.recording.compress && keep_file_;
  options.chunk_size_bytes = 512 * 1024;
  if (!writer_->open(path, options, error)) return false;

  const auto now_ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  writer_->add_attachment("scenario.yaml", "application/yaml", 0, now_ns, scenario_.source_text);
  // --set overrides, one per line: replay applies them to scenario.yaml again
  if (!scenario_.overrides.empty()) {
    std::string lines;
    for (const auto& o : scenario_.overrides) lines += o + "\n";
    writer_->add_attachment("overrides.txt", "text/plain", 0, now_ns, lines);
  }
  std::string endpoints;
  for (const auto& n : endpoint_names_) endpoints += (endpoints.empty() ? "" : ",") + n;
  writer_->add_metadata("tether", {{"format_version", std::to_string(recording_format_version)},
                                   // the physics' sub-step rule (docs/physics.md, "Free sub-steps"):
                                   // recordings without this key replay with the fixed rule they had
                                   {"substep_rule", "free"},
                                   {"scenario", scenario_.name},
                                   {"scenario_path", scenario_.path},
                                   {"seed", std::to_string(scenario_.loop.seed)},
                                   {"period_ns", std::to_string(scenario_.loop.period_ns)},
                                   {"endpoints", endpoints},
                                   // the wall-clock anchor: log times are simulation time from
                                   // sim_time_start_ns; this is when the recording opened, just
                                   // before the first step (docs/recording.md)
                                   {"wall_clock_start_ns", std::to_string(now_ns)},
                                   {"wall_clock_start_utc", utc_text(now_ns)},
                                   {"sim_time_start_ns", std::to_string(scenario_.initial.time_ns)}});

  // the replay channels: protobuf, each schema record carrying the FileDescriptorSet of
  // tether/recording.proto (docs/recording.md says why protobuf)
  auto proto = [&](const char* message) { return schema(message, "protobuf", pb::descriptor_set()); };
  // Foxglove's well-known types with their official schemas (recording/schemas/README.md)
  auto foxglove = [&](const char* name) { return schema(name, "jsonschema", std::string(foxglove_schema(name))); };
  const auto tf_schema = foxglove("foxglove.FrameTransform");
  const auto pose_schema = foxglove("foxglove.PoseInFrame");
  const auto log_s = foxglove("foxglove.Log");
  const auto scene_s = foxglove("foxglove.SceneUpdate");
  ch_step_ = channel(proto("tether.StepRecord"), topics::step, "protobuf");
  ch_state_ = channel(proto("tether.WorldState"), topics::state, "protobuf");
  ch_keyframe_ = channel(proto("tether.Keyframe"), topics::keyframe, "protobuf");
  ch_timing_ = channel(schema("tether.Timing", "jsonschema", timing_schema), topics::timing, "json");
  ch_vehicles_ = channel(schema("tether.Vehicles", "jsonschema", vehicles_schema), topics::vehicles, "json");
  ch_events_ = channel(schema("tether.Event", "jsonschema", event_schema), topics::events, "json");
  ch_summary_ = channel(schema("tether.Summary", "jsonschema", summary_schema), topics::summary, "json");
  ch_feedback_ = channel(schema("tether.Feedback", "jsonschema", feedback_schema), topics::feedback, "json");
  ch_tf_ = channel(tf_schema, topics::tf, "json");
  ch_scene_ = channel(scene_s, topics::scene, "json");
  ch_log_ = channel(log_s, topics::log, "json");
  open_device_channels();
  ch_commands_ = channel(proto("tether.StepCommands"), topics::commands, "protobuf");
  const auto state_s = schema("tether.VehicleState", "jsonschema", vehicle_state_schema);
  const auto endpoint_s = schema("tether.EndpointStep", "jsonschema", endpoint_step_schema);
  for (const auto& name : endpoint_names_) ch_endpoint_.push_back(channel(endpoint_s, "/endpoints/" + name, "json"));
  // the endpoints' wire frames as their views show them (topics of one schema share it)
  std::map<std::string, std::uint16_t> wire_schemas;
  ch_wire_.resize(std::min(wire_topics_.size(), endpoint_names_.size()));
  for (std::size_t e = 0; e < ch_wire_.size(); ++e) {
    for (const WireTopic& w : wire_topics_[e]) {
      auto [it, added] = wire_schemas.try_emplace(w.schema_name, 0);
      if (added) it->second = schema(w.schema_name, "jsonschema", w.schema);
      ch_wire_[e].push_back(channel(it->second, "/endpoints/" + endpoint_names_[e] + "/" + w.suffix, "json"));
    }
  }
  for (const auto& [name, fields] : processor_fields_)
    ch_processor_.push_back(channel(schema("tether.ProcessorFigures", "jsonschema", processor_schema(name, fields)),
                                    "/feedback/" + name, "json"));
  for (const auto& v : scenario_.model.vehicles) {
    ch_vehicle_state_.push_back(channel(state_s, "/vehicles/" + v.name + "/state", "json"));
    ch_pose_.push_back(channel(pose_schema, "/vehicles/" + v.name + "/pose", "json"));
    ch_projected_.push_back(channel(pose_schema, "/vehicles/" + v.name + "/projected", "json"));
    ch_measured_.push_back(channel(pose_schema, "/vehicles/" + v.name + "/measured", "json"));
  }
  if (tap_) tap_->opened(channels_);
  write_scene();
  if (!safe_replies_.empty()) {
    const auto ch = channel(proto("tether.SafeReplies"), topics::safe_replies, "protobuf");
    std::string bytes;
    encode_safe_replies(safe_replies_, bytes);
    out(ch, 0, bytes);
  }
  if (!writer_->ok()) {
    if (error) *error = writer_->error();
    return false;
  }
  writer_->flush_chunk();
  thread_ = std::thread([this] { writer_loop(); });
  return true;
}
// the devices' channels: what the firmware saw (a sensor's readings), what it did (an
// actuator's commands), a GPS's fixes, and all actuators' last commands on one
void Recorder::open_device_channels() {
  // what the firmware saw: one channel per sensor, `/devices/VEHICLE/PART/DEVICE`
  ch_sensor_.assign(scenario_.devices.size(), 0);
  std::uint16_t sensor_schema = 0;
  for (std::size_t d = 0; d < scenario_.devices.size(); ++d) {
    const auto& spec = scenario_.devices[d];
    if (hal::kind_info(spec.kind).actuator || hal::kind_info(spec.kind).channels == 0) continue;
    if (!sensor_schema) sensor_schema = schema("tether.SensorReading", "jsonschema", sensor_reading_schema());
    ch_sensor_[d] =
        channel(sensor_schema, "/devices/" + spec.name.vehicle + "/" + spec.name.part + "/" + spec.name.device, "json");
  }
  // what the firmware did: one channel per actuator, a message per command received
  std::uint16_t command_schema = 0;
  for (std::size_t d = 0; d < scenario_.devices.size(); ++d) {
    const auto& spec = scenario_.devices[d];
    if (!hal::kind_info(spec.kind).actuator) continue;
    if (!command_schema) command_schema = schema("tether.ActuatorCommand", "jsonschema", actuator_command_schema);
    ch_sensor_[d] = channel(command_schema,
                            "/devices/" + spec.name.vehicle + "/" + spec.name.part + "/" + spec.name.device, "json");
  }
  // a GPS's fixes as Foxglove's LocationFix too (its Map panel)
  ch_fix_.assign(scenario_.devices.size(), 0);
  std::uint16_t fix_schema = 0;
  for (std::size_t d = 0; d < scenario_.devices.size(); ++d) {
    const auto& spec = scenario_.devices[d];
    if (spec.kind != TETHER_KIND_GPS) continue;
    if (!fix_schema)
      fix_schema = schema("foxglove.LocationFix", "jsonschema", std::string(foxglove_schema("foxglove.LocationFix")));
    ch_fix_[d] = channel(
        fix_schema, "/devices/" + spec.name.vehicle + "/" + spec.name.part + "/" + spec.name.device + "/fix", "json");
  }
  actuator_values_.assign(scenario_.devices.size(), {});
  actuator_names_.clear();
  for (const auto& spec : scenario_.devices) actuator_names_.push_back(spec.name.full());
  actuator_channels_.assign(scenario_.devices.size(), -1);
  for (const auto& d : scenario_.devices)
    if (hal::kind_info(d.kind).actuator) {
      ch_actuators_ = channel(schema("tether.Actuators", "jsonschema", actuators_schema()), topics::actuators, "json");
      break;
    }
}

void Recorder::write_scene() {
  const WorldModel& m = scenario_.model;
  json update{{"deletions", json::array()}, {"entities", json::array()}};
  json tank = empty_entity("world", "static");
  const SceneBox box = scene_box(m, scenario_.initial);
  for (const StaticBody& s : m.statics) {
    if (s.shape.kind == ShapeKind::heightfield && s.shape.heightfield >= 0 &&
        static_cast<std::size_t>(s.shape.heightfield) < m.heightfields.size())
      add_terrain(tank, m.heightfields[static_cast<std::size_t>(s.shape.heightfield)], s.position_m, s.orientation,
                  color(0.45, 0.4, 0.3, 0.9));
    else
      add_shape(tank, s.shape, s.position_m, s.orientation, color(0.5, 0.55, 0.6, 0.35), &box);
  }
  if (m.water.present) {
    // the surface over the scene box, as large as the tank
    json water = empty_entity("world", "water_surface");
    const Vec3 mid = (box.lo + box.hi) / 2;
    water["cubes"].push_back({{"pose", pose(Vec3(mid.x(), mid.y(), m.water.surface_z_m), Quat::Identity())},
                              {"size", vec(Vec3(box.hi.x() - box.lo.x(), box.hi.y() - box.lo.y(), 0.001))},
                              {"color", color(0.2, 0.4, 0.9, 0.15)}});
    update["entities"].push_back(std::move(water));
  }
  update["entities"].push_back(std::move(tank));
  for (const VehicleModel& v : m.vehicles) {
    json e = empty_entity(v.name, "vehicle/" + v.name);
    for (int b : v.bodies)
      add_shape(e, m.bodies[static_cast<std::size_t>(b)].shape, Vec3::Zero(), Quat::Identity(),
                color(1.0, 0.75, 0.1, 1.0));
    update["entities"].push_back(std::move(e));
  }
  out(ch_scene_, 0, json_text(update));
}
}  // namespace tether::runtime
