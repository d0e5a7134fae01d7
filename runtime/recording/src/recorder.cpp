// SPDX-License-Identifier: Apache-2.0
#include "tether/recording/foxglove_schemas.hpp"
#include "tether/recording/json_text.hpp"
#include "tether/recording/recorder.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <limits>
#include <numbers>

#include <nlohmann/json.hpp>

#include "tether/hal/device_bank.hpp"
#include "tether/hal/nmea.hpp"
#include "tether/physics/heading.hpp"
#include "tether/recording/mcap_writer.hpp"
#include "tether/recording/protobuf.hpp"

namespace tether::runtime {

namespace {

using nlohmann::json;

json stamp(std::int64_t time_ns) { return json{{"sec", time_ns / 1'000'000'000}, {"nsec", time_ns % 1'000'000'000}}; }

json vec(const Vec3& v) { return json{{"x", v.x()}, {"y", v.y()}, {"z", v.z()}}; }

json quat(const Quat& q) { return json{{"x", q.x()}, {"y", q.y()}, {"z", q.z()}, {"w", q.w()}}; }

json pose(const Vec3& p, const Quat& q) { return json{{"position", vec(p)}, {"orientation", quat(q)}}; }

json color(double r, double g, double b, double a) { return json{{"r", r}, {"g", g}, {"b", b}, {"a", a}}; }

// Compact JSON appended to a reused string, for the per-step channels. Numbers use the
// shortest text that reads back to the same double (std::to_chars); NaN and infinities,
// which JSON cannot hold, are written as null (as nlohmann::json does).
struct JsonText {
  std::string& s;
  void raw(std::string_view v) { s.append(v); }
  void comma() { s.push_back(','); }
  void open() { s.push_back('{'); }
  void close() { s.push_back('}'); }
  void num(double v) {
    if (!std::isfinite(v)) {
      s.append("null");
      return;
    }
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    s.append(buf, r.ptr);
  }
  void num(std::uint64_t v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    s.append(buf, r.ptr);
  }
  void num(std::int64_t v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    s.append(buf, r.ptr);
  }
  void str(std::string_view v) {
    s.push_back('"');
    for (const char c : v) {
      if (c == '"' || c == '\\') {
        s.push_back('\\');
        s.push_back(c);
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
        s.append(buf);
      } else {
        s.push_back(c);
      }
    }
    s.push_back('"');
  }
  void key(const char* k) {
    s.push_back('"');
    s.append(k);
    s.append("\":");
  }
  void field(const char* k, double v) {
    s.push_back(',');
    key(k);
    num(v);
  }
  // ,"value":v[0],"values":[v...]: a device's reading or command, its first channel apart
  void values(const double* v, int n) {
    if (n > 0) field("value", v[0]);
    raw(",\"values\":[");
    for (int i = 0; i < n; ++i) {
      if (i) comma();
      num(v[i]);
    }
    raw("]");
  }
  void stamp(std::int64_t time_ns) {
    s.append("{\"sec\":");
    num(static_cast<std::int64_t>(time_ns / 1'000'000'000));
    s.append(",\"nsec\":");
    num(static_cast<std::int64_t>(time_ns % 1'000'000'000));
    s.push_back('}');
  }
  void vec(const Vec3& v) {
    s.append("{\"x\":");
    num(v.x());
    s.append(",\"y\":");
    num(v.y());
    s.append(",\"z\":");
    num(v.z());
    s.push_back('}');
  }
  void xyz_m(const Vec3& v) {
    s.append("{\"x_m\":");
    num(v.x());
    s.append(",\"y_m\":");
    num(v.y());
    s.append(",\"z_m\":");
    num(v.z());
    s.push_back('}');
  }
  void quat(const Quat& q) {
    s.append("{\"x\":");
    num(q.x());
    s.append(",\"y\":");
    num(q.y());
    s.append(",\"z\":");
    num(q.z());
    s.append(",\"w\":");
    num(q.w());
    s.push_back('}');
  }
  // the rest of a foxglove.PoseInFrame after its timestamp
  void pose_in_world(const Vec3& p, const Quat& q) {
    s.append("\"frame_id\":\"world\",\"pose\":{\"position\":");
    vec(p);
    s.append(",\"orientation\":");
    quat(q);
    s.push_back('}');
  }
};

// what an endpoint's timeout policy applied on a miss, as /endpoints/NAME's action
const char* policy_word(TimeoutPolicy p) {
  switch (p) {
    case TimeoutPolicy::block: return "\"block\"";
    case TimeoutPolicy::hold: return "\"hold\"";
    case TimeoutPolicy::safe: return "\"safe\"";
    case TimeoutPolicy::abort: return "\"abort\"";
  }
  return "\"hold\"";
}

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
  R"("y_m":{"type":"number"},"z_m":{"type":"number"}}})"
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

// a primitive for a shape, in the frame `frame_id`, placed at `p`, `q`
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

Recorder::Recorder(const Scenario& scenario, std::vector<std::string> endpoint_names,
                   std::vector<std::pair<std::string, std::vector<std::string>>> processor_fields)
    : Recorder(scenario, RecorderInputs{std::move(endpoint_names), std::move(processor_fields), {}}) {}

Recorder::Recorder(const Scenario& scenario, RecorderInputs inputs)
    : scenario_(scenario), endpoint_names_(std::move(inputs.endpoint_names)),
      processor_fields_(std::move(inputs.processor_fields)), safe_replies_(std::move(inputs.safe_replies)),
      writer_(std::make_unique<mcap::Writer>()) {
  ring_.resize(scenario.recording.queue_slots);
  const std::size_t keyframes_in_ring =
      scenario.recording.queue_slots / std::max<std::uint64_t>(1, scenario.recording.keyframe_every_steps) + 2;
  keyframes_.resize(std::clamp<std::size_t>(keyframes_in_ring, 4, 64));
  keyframe_queued_.assign(keyframes_.size(), 0);
  // the buffers the loop fills are grown here, not in the loop's first lap through the ring
  reserve(step_staging_);
  for (Slot& slot : ring_) reserve(slot.step_item);
}

void Recorder::reserve(StepItem& item) const {
  const std::size_t bodies = scenario_.model.bodies.size();
  item.record.slots.resize(endpoint_names_.size());
  for (SlotRecord& s : item.record.slots) {
    s.reply.wrenches.reserve(bodies);
    s.reply.commands.reserve(scenario_.devices.size());
    // a pose per vehicle is the usual reply; more grow the buffer once, on first use
    s.reply.measurements.reserve(scenario_.model.vehicles.size());
  }
  item.actual.bodies.reserve(bodies);
  item.projected.bodies.reserve(bodies);
  std::size_t fields = 0;
  for (const auto& p : processor_fields_) fields += p.second.size();
  item.values.reserve(fields);
  item.sensors.reserve(scenario_.devices.size());
}

Recorder::~Recorder() {
  if (thread_.joinable()) {
    {
      std::lock_guard lock(mutex_);
      closing_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
}

std::uint64_t Recorder::bytes_written() const { return writer_->bytes_written(); }

std::uint16_t Recorder::schema(const std::string& name, const std::string& encoding, const std::string& text) {
  schemas_.push_back({name, encoding, text});
  return writer_->add_schema(name, encoding, text);
}

std::uint16_t Recorder::channel(std::uint16_t schema, const std::string& topic, const std::string& encoding) {
  const std::uint16_t id = writer_->add_channel(schema, topic, encoding);
  RecordedChannel c;
  c.id = id;
  c.topic = topic;
  c.encoding = encoding;
  if (schema > 0 && schema <= schemas_.size()) {
    c.schema_name = schemas_[schema - 1u][0];
    c.schema_encoding = schemas_[schema - 1u][1];
    c.schema = schemas_[schema - 1u][2];
  }
  channels_.push_back(std::move(c));
  return id;
}

// every message goes to the file and, if someone listens, to the tap
void Recorder::out(std::uint16_t channel, std::uint64_t log_time, std::string_view bytes) {
  writer_->write(channel, sequence_++, log_time, log_time, bytes);
  if (tap_ && tap_->wants(channel)) tap_->message(channel, log_time, bytes);
}

bool Recorder::open_without_file(std::string* error) {
  keep_file_ = false;
  return open("/dev/null", error);
}

void Recorder::commands(const StepCommands& commands, std::int64_t time_ns) {
  staging_.clear();
  encode_step_commands(commands, staging_);
  push(ItemKind::commands, commands.step, time_ns);
}

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
    if (!fix_schema) fix_schema = foxglove("foxglove.LocationFix");
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
  ch_commands_ = channel(proto("tether.StepCommands"), topics::commands, "protobuf");
  const auto state_s = schema("tether.VehicleState", "jsonschema", vehicle_state_schema);
  const auto endpoint_s = schema("tether.EndpointStep", "jsonschema", endpoint_step_schema);
  for (const auto& name : endpoint_names_) ch_endpoint_.push_back(channel(endpoint_s, "/endpoints/" + name, "json"));
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

void Recorder::StepItem::take_sensors(const hal::DeviceBank& bank) {
  sensors.clear();
  for (std::size_t d = 0; d < bank.size() && d <= 0xFFFF; ++d) {
    const hal::KindInfo& info = hal::kind_info(bank.spec(d).kind);
    if (info.actuator || !bank.fresh(d)) continue;
    const hal::Sample& s = bank.sample(d);
    SensorReading& r = sensors.emplace_back();
    r.device = static_cast<std::uint16_t>(d);
    r.valid = s.valid;
    r.channels = static_cast<std::uint8_t>(info.channels);
    r.ch = s.ch;
    // the depth sensor carries density * |g| and the wire the absolute pressure from it
    if (bank.spec(d).kind == TETHER_KIND_DEPTH)
      r.ch[1] = std::get<hal::DepthParams>(bank.spec(d).params).atmospheric_pa + s.ch[1] * s.ch[0];
  }
}

// under the lock: the next ring slot to fill, or nullptr when the ring is full (the item is
// dropped and counted, or waited for with set_wait_when_full)
Recorder::Slot* Recorder::claim_slot(std::unique_lock<std::mutex>& lock) {
  if (count_ == ring_.size() && wait_when_full_ && thread_.joinable())
    room_.wait(lock, [this] { return count_ < ring_.size(); });
  if (count_ == ring_.size()) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  Slot& slot = ring_[head_];
  head_ = (head_ + 1) % ring_.size();
  ++count_;
  return &slot;
}

void Recorder::push(ItemKind kind, std::uint64_t step, std::int64_t time_ns) {
  {
    std::unique_lock lock(mutex_);
    Slot* slot = claim_slot(lock);
    if (!slot) return;
    slot->kind = kind;
    slot->step = step;
    slot->time_ns = time_ns;
    slot->keyframe = -1;
    if (kind == ItemKind::step)
      std::swap(slot->step_item, step_staging_);
    else
      slot->bytes.swap(staging_);
    // the writer polls every few milliseconds; waking it for every step would cost the
    // loop a system call and a context switch per step
    if (count_ * 4 < ring_.size()) return;
  }
  wake_.notify_one();
}

std::string* Recorder::keyframe_buffer() {
  std::unique_lock lock(mutex_);
  auto free_buffer = [this] {
    for (std::size_t i = 0; i < keyframes_.size(); ++i)
      if (!keyframe_queued_[i]) return static_cast<int>(i);
    return -1;
  };
  int i = free_buffer();
  if (i < 0 && wait_when_full_ && thread_.joinable()) {
    wake_.notify_one();  // the writer may be sleeping out its poll interval
    room_.wait(lock, [&] { return (i = free_buffer()) >= 0; });
  }
  if (i < 0) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  std::string& b = keyframes_[static_cast<std::size_t>(i)];
  b.clear();
  return &b;
}

void Recorder::push_keyframe(std::string* buffer, std::uint64_t step, std::int64_t time_ns) {
  const auto index = static_cast<std::size_t>(buffer - keyframes_.data());
  {
    std::unique_lock lock(mutex_);
    // the free buffers grow to this keyframe's size now (the first keyframe, in the warm-up),
    // not the first time a slow writer makes the loop take one of them
    for (std::size_t j = 0; j < keyframes_.size(); ++j)
      if (j != index && !keyframe_queued_[j] && keyframes_[j].capacity() < buffer->size())
        keyframes_[j].reserve(buffer->size() + buffer->size() / 2);
    Slot* slot = claim_slot(lock);
    if (!slot) return;
    slot->kind = ItemKind::keyframe;
    slot->step = step;
    slot->time_ns = time_ns;
    slot->keyframe = static_cast<int>(index);
    keyframe_queued_[index] = 1;
    // wake the writer when the ring is a quarter full, or when half the keyframe buffers
    // wait for it: at rtf 0 keyframes can come faster than the writer's poll, and a loop
    // that finds none free would wait out the rest of that poll (docs/performance.md)
    std::size_t queued = 0;
    for (char q : keyframe_queued_) queued += q ? 1 : 0;
    if (count_ * 4 < ring_.size() && queued * 2 < keyframes_.size()) return;
  }
  wake_.notify_one();
}

void Recorder::event(std::uint64_t step, std::int64_t time_ns, int level, const std::string& source,
                     const std::string& text) {
  staging_ = json_text(json{{"level", level}, {"name", source}, {"message", text}});
  push(ItemKind::event, step, time_ns);
}

void Recorder::writer_loop() {
  const auto flush_every = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(scenario_.recording.flush_interval_s));
  // how long queued items may wait for the writer when the queue is not filling up
  constexpr auto poll = std::chrono::milliseconds(5);
  auto next_flush = std::chrono::steady_clock::now() + flush_every;
  // this buffer joins the ring at the first swap and reaches the loop later: size it like
  // the ring's, or the loop would grow it
  Slot item;
  reserve(item.step_item);
  for (;;) {
    bool took = false;
    {
      std::unique_lock lock(mutex_);
      wake_.wait_until(lock, std::min(next_flush, std::chrono::steady_clock::now() + poll),
                       [this] { return count_ > 0 || closing_; });
      if (count_ == 0 && closing_) return;
      if (count_ > 0) {
        Slot& slot = ring_[tail_];
        std::swap(item, slot);
        tail_ = (tail_ + 1) % ring_.size();
        --count_;
        took = true;
      }
    }
    if (took && wait_when_full_) room_.notify_one();
    // (nothing taken: the poll ran out; the flush below still runs)
    if (took && item.keyframe >= 0) {
      // a keyframe's bytes stay in their own buffer; give it back once written
      write_item(item);
      written_.fetch_add(1, std::memory_order_relaxed);
      {
        std::lock_guard lock(mutex_);
        keyframe_queued_[static_cast<std::size_t>(item.keyframe)] = 0;
      }
      item.keyframe = -1;
      item.bytes.clear();
      if (wait_when_full_) room_.notify_one();
    } else if (took && (item.kind == ItemKind::step || !item.bytes.empty())) {
      write_item(item);
      written_.fetch_add(1, std::memory_order_relaxed);
    }
    // bound what a SIGKILL can lose: the open chunk is written at least this often
    if (std::chrono::steady_clock::now() >= next_flush) {
      writer_->flush_chunk();
      next_flush = std::chrono::steady_clock::now() + flush_every;
    }
  }
}

void Recorder::write_item(Slot& item) {
  const auto log_time = static_cast<std::uint64_t>(item.time_ns);
  switch (item.kind) {
    case ItemKind::keyframe:
      out(ch_keyframe_, log_time,
          item.keyframe >= 0 ? keyframes_[static_cast<std::size_t>(item.keyframe)] : item.bytes);
      return;
    case ItemKind::summary: out(ch_summary_, log_time, item.bytes); return;
    case ItemKind::commands: out(ch_commands_, log_time, item.bytes); return;
    case ItemKind::event: {
      out(ch_events_, log_time, item.bytes);
      json e = json::parse(item.bytes, nullptr, false);
      if (!e.is_discarded())
        out(ch_log_, log_time,
            json_text(json{{"timestamp", stamp(item.time_ns)},
                           {"level", e["level"]},
                           {"message", e["message"]},
                           {"name", e["name"]},
                           {"file", ""},
                           {"line", 0}}));
      return;
    }
    case ItemKind::step: break;
  }

  // a step item: the binary record for replay, then the derived views (the item stays this
  // thread's until its next swap with the ring)
  StepItem& step = item.step_item;
  step.record.state_hash = hash_state(step.actual);  // S_{k+1}, hashed here rather than on the loop
  // log time of step k's record: t_{k+1}, when its result exists
  const std::uint64_t t = log_time + static_cast<std::uint64_t>(scenario_.loop.period_ns);
  step_bytes_.clear();
  encode_step(step.record, step_bytes_);
  out(ch_step_, t, step_bytes_);
  const WorldModel& m = scenario_.model;
  if (m.bodies.size() <= scenario_.recording.state_every_step_max_bodies) {
    state_bytes_.clear();
    encode_state(step.actual, state_bytes_);
    out(ch_state_, t, state_bytes_);
  }
  if (step.actual.bodies.size() != m.bodies.size() || step.projected.bodies.size() != m.bodies.size()) return;
  write_views(t, step);
  if (ch_actuators_) write_actuators(t, step.record);
  write_sensors(t, step);
}

// The derived per-step channels, written as text into reused buffers: this is the writer
// thread's hot path, and building a JSON document per message (one allocation per node)
// made the writer slower than the loop it records.
// each sensor's new sample, as the endpoints got it, on the device's own channel
void Recorder::write_sensors(std::uint64_t t, const StepItem& step) {
  for (const SensorReading& r : step.sensors) {
    const std::size_t d = r.device;
    if (d >= ch_sensor_.size() || ch_sensor_[d] == 0) continue;
    const int channels = std::min<int>(r.channels, hal::max_channels);
    text_.clear();
    JsonText j{text_};
    j.raw("{\"step\":");
    j.num(step.record.step);
    j.raw(r.valid ? ",\"valid\":true" : ",\"valid\":false");
    j.values(r.ch.data(), channels);
    j.close();
    out(ch_sensor_[d], t, text_);
    if (ch_fix_[d] && r.valid && channels >= 3) write_fix(t, d, r.ch.data());
  }
}

// a GPS fix as foxglove.LocationFix: the reading's metres east, north and up from the datum
// converted as the device converts them for its NMEA sentence
void Recorder::write_fix(std::uint64_t t, std::size_t device, const double* enu) {
  const hal::DeviceSpec& spec = scenario_.devices[device];
  const auto& gps = std::get<hal::GpsParams>(spec.params);
  const hal::GeoPoint p =
      hal::local_to_geodetic(gps.datum_lat_deg, gps.datum_lon_deg, gps.datum_alt_m, enu[0], enu[1], enu[2]);
  text_.clear();
  JsonText j{text_};
  j.open();
  j.key("timestamp");
  j.stamp(static_cast<std::int64_t>(t));
  j.raw(",\"frame_id\":");
  j.str(spec.name.vehicle);
  j.field("latitude", p.lat_deg);
  j.field("longitude", p.lon_deg);
  j.field("altitude", p.alt_m);
  // no covariance is known to the reader: type 0 (unknown), zeros
  j.raw(",\"position_covariance\":[0,0,0,0,0,0,0,0,0],\"position_covariance_type\":0");
  j.close();
  out(ch_fix_[device], t, text_);
}

// the actuators' last commands: what the firmware (or controller) asked for, to plot
void Recorder::write_actuators(std::uint64_t t, const StepRecord& record) {
  JsonText j{text_};
  for (std::size_t e = 0; e < record.slots.size(); ++e) {
    const SlotRecord& slot = record.slots[e];
    if (slot.outcome != SlotOutcome::fresh) continue;
    for (const DeviceCommand& c : slot.reply.commands) {
      if (c.device >= scenario_.devices.size()) continue;
      const hal::DeviceKind kind = scenario_.devices[c.device].kind;
      if (c.size != tether_kind_payload_size(static_cast<std::uint8_t>(kind))) continue;  // refused by the bank too
      double v[hal::max_channels] = {};
      const int n = hal::decode_command(kind, c.bytes.data(), v);
      if (n <= 0) continue;
      std::copy(v, v + n, actuator_values_[c.device].begin());
      actuator_channels_[c.device] = n;
      // the command as received, on the actuator's own topic
      if (!ch_sensor_[c.device]) continue;
      text_.clear();
      j.raw("{\"step\":");
      j.num(record.step);
      j.raw(",\"endpoint\":");
      j.str(e < endpoint_names_.size() ? std::string_view(endpoint_names_[e]) : std::string_view("?"));
      j.values(v, n);
      j.close();
      out(ch_sensor_[c.device], t, text_);
    }
  }
  text_.clear();
  j.raw("{\"step\":");
  j.num(record.step);
  j.raw(",\"actuators\":[");
  bool first = true;
  for (std::size_t d = 0; d < actuator_channels_.size(); ++d) {
    const int n = actuator_channels_[d];
    if (n <= 0) continue;
    if (!first) j.comma();
    first = false;
    j.raw("{\"name\":");
    j.str(actuator_names_[d]);
    j.values(actuator_values_[d].data(), n);
    j.close();
  }
  j.raw("]}");
  out(ch_actuators_, t, text_);
}

void Recorder::write_views(std::uint64_t t, const StepItem& step) {
  const WorldModel& m = scenario_.model;
  JsonText j{text_};
  const auto stamp_at = [&] {
    j.key("timestamp");
    j.stamp(static_cast<std::int64_t>(t));
  };
  // which vehicles a measurement came for this step (the last one counts, as before)
  measured_.assign(m.vehicles.size(), nullptr);
  for (const SlotRecord& slot : step.record.slots) {
    if (slot.outcome != SlotOutcome::fresh) continue;
    for (const Measurement& meas : slot.reply.measurements) {
      if (!meas.has_pose || meas.body >= m.bodies.size()) continue;
      const int vi = m.bodies[meas.body].vehicle;
      if (vi < 0 || static_cast<std::size_t>(vi) >= m.vehicles.size()) continue;
      text_.clear();
      j.open();
      stamp_at();
      j.comma();
      j.pose_in_world(meas.position_m, meas.orientation);
      j.close();
      out(ch_measured_[static_cast<std::size_t>(vi)], t, text_);
      measured_[static_cast<std::size_t>(vi)] = &meas;
    }
  }

  vehicles_text_.clear();
  JsonText vj{vehicles_text_};
  vj.raw("{\"step\":");
  vj.num(step.record.step);
  vj.raw(",\"vehicles\":[");
  for (std::size_t vi = 0; vi < m.vehicles.size(); ++vi) {
    const VehicleModel& v = m.vehicles[vi];
    const int b = v.bodies.front();
    const BodyState& s = step.actual.bodies[static_cast<std::size_t>(b)];
    const BodyState& p = step.projected.bodies[static_cast<std::size_t>(b)];
    text_.clear();
    j.open();
    stamp_at();
    j.raw(",\"parent_frame_id\":\"world\",\"child_frame_id\":");
    j.str(v.name);
    j.raw(",\"translation\":");
    j.vec(s.position_m);
    j.raw(",\"rotation\":");
    j.quat(s.orientation);
    j.close();
    out(ch_tf_, t, text_);
    for (const auto& [channel, body] : {std::pair{ch_pose_[vi], &s}, std::pair{ch_projected_[vi], &p}}) {
      text_.clear();
      j.open();
      stamp_at();
      j.comma();
      j.pose_in_world(body->position_m, body->orientation);
      j.close();
      out(channel, t, text_);
    }
    const Vec3 vel = linear_velocity(m, step.actual, b);
    const Vec3 rpy = rpy_from_quat(s.orientation) * (180 / std::numbers::pi);
    // the vehicle's fields once: in /tether/vehicles' array and on its own /vehicles/V/state
    item_text_.clear();
    JsonText ij{item_text_};
    ij.raw("\"name\":");
    ij.str(v.name);
    ij.field("x_m", s.position_m.x());
    ij.field("y_m", s.position_m.y());
    ij.field("z_m", s.position_m.z());
    if (m.water.present) ij.field("depth_m", m.water.surface_z_m - s.position_m.z());
    // a compass heading (clockwise from north, [0, 360)) as goals and expectations use; yaw
    // counter-clockwise from east
    ij.field("heading_deg", compass_from_yaw_deg(rpy.z()));
    ij.field("yaw_deg", rpy.z());
    ij.field("roll_deg", rpy.x());
    ij.field("pitch_deg", rpy.y());
    ij.field("speed_m_s", vel.norm());
    ij.raw(",\"projected\":");
    ij.xyz_m(p.position_m);
    if (measured_[vi]) {
      ij.raw(",\"measured\":");
      ij.xyz_m(measured_[vi]->position_m);
    }
    if (vi) vj.comma();
    vj.raw("{");
    vj.raw(item_text_);
    vj.raw("}");
    text_.clear();
    j.raw("{\"step\":");
    j.num(step.record.step);
    j.raw(",");
    j.raw(item_text_);
    j.raw("}");
    out(ch_vehicle_state_[vi], t, text_);
  }
  vj.raw("]}");
  out(ch_vehicles_, t, vehicles_text_);

  text_.clear();
  j.raw("{\"step\":");
  j.num(step.record.step);
  j.raw(",\"step_time_ns\":");
  j.num(step.record.step_time_ns);
  j.raw(",\"endpoints\":[");
  for (std::size_t i = 0; i < step.record.slots.size(); ++i) {
    const SlotRecord& slot = step.record.slots[i];
    if (i) j.comma();
    j.raw("{\"name\":");
    j.str(i < endpoint_names_.size() ? std::string_view(endpoint_names_[i]) : std::string_view("?"));
    j.raw(",\"round_trip_ns\":");
    j.num(slot.round_trip_ns);
    j.raw(slot.outcome == SlotOutcome::fresh     ? ",\"outcome\":\"fresh\"}"
          : slot.outcome == SlotOutcome::timeout ? ",\"outcome\":\"timeout\"}"
                                                 : ",\"outcome\":\"fault\"}");
  }
  j.raw("]}");
  out(ch_timing_, t, text_);

  // each endpoint on its own topic, with what the loop applied for it
  for (std::size_t i = 0; i < step.record.slots.size() && i < ch_endpoint_.size(); ++i) {
    const SlotRecord& slot = step.record.slots[i];
    text_.clear();
    j.raw("{\"step\":");
    j.num(step.record.step);
    j.raw(slot.outcome == SlotOutcome::fresh     ? ",\"outcome\":\"fresh\""
          : slot.outcome == SlotOutcome::timeout ? ",\"outcome\":\"timeout\""
                                                 : ",\"outcome\":\"fault\"");
    j.raw(",\"round_trip_ns\":");
    j.num(slot.round_trip_ns);
    j.raw(",\"action\":");
    j.raw(slot.outcome == SlotOutcome::fresh ? "\"reply\"" : policy_word(scenario_.endpoints[i].policy));
    j.raw("}");
    out(ch_endpoint_[i], t, text_);
  }

  if (!processor_fields_.empty()) {
    text_.clear();
    j.raw("{\"step\":");
    j.num(step.record.step);
    j.raw(",\"processors\":{");
    std::size_t at = 0;
    for (std::size_t pi = 0; pi < processor_fields_.size(); ++pi) {
      const auto& [name, fields] = processor_fields_[pi];
      if (pi) j.comma();
      j.str(name);
      j.raw(":{");
      for (std::size_t fi = 0; fi < fields.size(); ++fi) {
        if (fi) j.comma();
        j.str(fields[fi]);
        j.raw(":");
        j.num(at < step.values.size() ? step.values[at++] : 0.0);
      }
      j.raw("}");
    }
    j.raw("}}");
    out(ch_feedback_, t, text_);
    // each processor on its own topic: `/feedback/NAME.FIELD` plots without an index
    std::size_t from = 0;
    for (std::size_t pi = 0; pi < processor_fields_.size() && pi < ch_processor_.size(); ++pi) {
      const auto& fields = processor_fields_[pi].second;
      text_.clear();
      j.raw("{\"step\":");
      j.num(step.record.step);
      for (const std::string& f : fields) {
        j.raw(",");
        j.str(f);
        j.raw(":");
        j.num(from < step.values.size() ? step.values[from++] : 0.0);
      }
      j.raw("}");
      out(ch_processor_[pi], t, text_);
    }
  }
}

bool Recorder::close(const nlohmann::json& summary, std::string* error) {
  if (thread_.joinable()) {
    staging_ = json_text(summary);
    // the summary must not be dropped: wait for room if the ring is full
    for (;;) {
      {
        std::lock_guard lock(mutex_);
        if (count_ < ring_.size()) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    push(ItemKind::summary, 0,
         summary.value("sim_time_s", 0.0) > 0 ? static_cast<std::int64_t>(summary.value("sim_time_s", 0.0) * 1e9) : 0);
    {
      std::lock_guard lock(mutex_);
      closing_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  return writer_->close(error);
}

}  // namespace tether::runtime
