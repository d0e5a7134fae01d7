// SPDX-License-Identifier: Apache-2.0
// The recorder's derived per-step channels (vehicles, poses, timing, endpoints, feedback,
// sensors, actuators), written on the writer thread from each step item.
#include "tether/recording/recorder.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <numbers>

#include "tether/hal/device_bank.hpp"
#include "tether/hal/nmea.hpp"
#include "tether/physics/heading.hpp"

namespace tether::runtime {

namespace {

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
  // "timestamp": the log time t as a foxglove time
  void timestamp(std::uint64_t t) {
    key("timestamp");
    stamp(static_cast<std::int64_t>(t));
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
}  // namespace

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
  write_measured(t, step);
  write_vehicles(t, step);
  write_endpoints(t, step);
  if (!ch_wire_.empty()) write_wire(t, step);
  if (!processor_fields_.empty()) write_feedback(t, step);
}

// each fresh reply's wire frames on the endpoint's views of them
void Recorder::write_wire(std::uint64_t t, const StepItem& step) {
  for (std::size_t e = 0; e < step.record.slots.size() && e < ch_wire_.size(); ++e) {
    const SlotRecord& slot = step.record.slots[e];
    if (slot.outcome != SlotOutcome::fresh) continue;
    const std::vector<WireTopic>& views = wire_topics_[e];
    for (const WireFrame& f : slot.reply.wire) {
      for (std::size_t v = 0; v < views.size(); ++v) {
        if (views[v].to_peer != f.to_peer || !views[v].render) continue;
        text_.clear();
        if (views[v].render(step.record.step, slot.reply.wire_frame(f), text_)) out(ch_wire_[e][v], t, text_);
      }
    }
  }
}

// which vehicles a measurement came for this step (the last one counts, as before), each
// measured pose on the vehicle's /vehicles/V/measured
void Recorder::write_measured(std::uint64_t t, const StepItem& step) {
  const WorldModel& m = scenario_.model;
  JsonText j{text_};
  measured_.assign(m.vehicles.size(), nullptr);
  for (const SlotRecord& slot : step.record.slots) {
    if (slot.outcome != SlotOutcome::fresh) continue;
    for (const Measurement& meas : slot.reply.measurements) {
      if (!meas.has_pose || meas.body >= m.bodies.size()) continue;
      const int vi = m.bodies[meas.body].vehicle;
      if (vi < 0 || static_cast<std::size_t>(vi) >= m.vehicles.size()) continue;
      text_.clear();
      j.open();
      j.timestamp(t);
      j.comma();
      j.pose_in_world(meas.position_m, meas.orientation);
      j.close();
      out(ch_measured_[static_cast<std::size_t>(vi)], t, text_);
      measured_[static_cast<std::size_t>(vi)] = &meas;
    }
  }
}

// each vehicle after the step: its frame, pose, projected pose and state, and all of them
// on /tether/vehicles
void Recorder::write_vehicles(std::uint64_t t, const StepItem& step) {
  const WorldModel& m = scenario_.model;
  JsonText j{text_};
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
    j.timestamp(t);
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
      j.timestamp(t);
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
    // a cable: where each of its segments is (the live page's plan view draws the rope)
    if (std::find(scenario_.cables.begin(), scenario_.cables.end(), static_cast<int>(vi)) != scenario_.cables.end()) {
      ij.raw(",\"nodes\":[");
      for (std::size_t k = 0; k < v.bodies.size(); ++k) {
        if (k) ij.comma();
        const Vec3& at = step.actual.bodies[static_cast<std::size_t>(v.bodies[k])].position_m;
        ij.raw("[");
        ij.num(at.x());
        ij.comma();
        ij.num(at.y());
        ij.comma();
        ij.num(at.z());
        ij.raw("]");
      }
      ij.raw("]");
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
}

// each endpoint's round trip on /tether/timing, and on its own topic with what the loop
// applied for it
void Recorder::write_endpoints(std::uint64_t t, const StepItem& step) {
  JsonText j{text_};
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
}

// the feedback processors' record fields: all on /tether/feedback, each processor on its own
void Recorder::write_feedback(std::uint64_t t, const StepItem& step) {
  JsonText j{text_};
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

}  // namespace tether::runtime
