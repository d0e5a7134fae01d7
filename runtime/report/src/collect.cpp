// SPDX-License-Identifier: Apache-2.0
// Reading a recording into the report's series (collected.hpp): the step records' commands,
// round trips and measured poses, the vehicles' and feedback processors' JSON views, the
// summary and the events.
#include "collected.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "tether/hal/device_spec.hpp"
#include "tether/physics/heading.hpp"
#include "tether/recording/mcap_reader.hpp"
#include "tether/recording/recording.hpp"
#include "tether/recording/replay.hpp"

namespace tether::runtime::report_detail {

namespace {

const char* component_names[12] = {"force_world.x",  "force_world.y",  "force_world.z", "torque_world.x",
                                   "torque_world.y", "torque_world.z", "force_body.x",  "force_body.y",
                                   "force_body.z",   "torque_body.x",  "torque_body.y", "torque_body.z"};

double wrench_component(const BodyWrench& w, int c) {
  const Vec3* v[4] = {&w.force_world_n, &w.torque_world_nm, &w.force_body_n, &w.torque_body_nm};
  return (*v[c / 3])[c % 3];
}

std::string body_name(const Collected& c, std::uint32_t body) {
  if (c.scenario && body < c.scenario->model.bodies.size()) return c.scenario->model.bodies[body].name;
  return "body " + std::to_string(body);
}

CommandChannel& channel(EndpointSeries& e, const std::string& key, const std::string& label, const std::string& plot,
                        const std::string& unit) {
  auto it = e.channels.find(key);
  if (it == e.channels.end()) {
    it = e.channels.emplace(key, CommandChannel{label, plot, unit, {}}).first;
    // the channel did not exist before this step: NaN for the steps so far
    it->second.v.assign(e.t.size(), nan_v);
    e.channel_order.push_back(key);
    if (std::find(e.plot_order.begin(), e.plot_order.end(), plot) == e.plot_order.end()) e.plot_order.push_back(plot);
  }
  return it->second;
}

// an actuator's name, plot and unit from the scenario's device table (index = device index)
void device_labels(const Collected& c, std::uint16_t device, std::string& name, std::string& plot, std::string& unit) {
  if (c.scenario && device < c.scenario->devices.size()) {
    const hal::DeviceSpec& d = c.scenario->devices[device];
    const hal::KindInfo& info = hal::kind_info(d.kind);
    name = d.name.full();
    plot = std::string(info.name) + " commands";
    unit = std::string(info.name) + " command" + (info.units[0] ? std::string(" (") + info.units + ")" : "");
    return;
  }
  name = "device #" + std::to_string(device);
  plot = "actuator commands";
  unit = "command value";
}

void add_step(Collected& c, const StepRecord& r, double t_s) {
  if (c.steps > 0 && r.step != c.last_step + 1) ++c.step_gaps;
  if (c.steps == 0) c.first_step = r.step;
  c.last_step = r.step;
  ++c.steps;
  c.step_t.push_back(t_s);
  c.step_time_us.push_back(static_cast<double>(r.step_time_ns) * 1e-3);
  for (std::size_t i = 0; i < r.slots.size(); ++i) {
    if (i >= c.endpoints.size()) {
      c.endpoints.resize(i + 1);
      c.endpoints[i].name = i < c.endpoint_names.size() ? c.endpoint_names[i] : "endpoint " + std::to_string(i);
    }
    EndpointSeries& e = c.endpoints[i];
    const SlotRecord& slot = r.slots[i];
    e.t.push_back(t_s);
    for (auto& [key, ch] : e.channels) ch.v.push_back(nan_v);
    switch (slot.outcome) {
      case SlotOutcome::fresh:
        ++e.fresh;
        e.round_trip_us.push_back(static_cast<double>(slot.round_trip_ns) * 1e-3);
        break;
      case SlotOutcome::timeout: ++e.timeouts; break;
      case SlotOutcome::fault: ++e.faults; break;
    }
    e.cum_timeouts.push_back(static_cast<double>(e.timeouts));
    e.cum_faults.push_back(static_cast<double>(e.faults));
    if (slot.outcome != SlotOutcome::fresh) continue;

    // what the endpoint asked for this step: wrench components per body, actuator values
    for (const auto& [body, w] : slot.reply.wrenches) {
      for (int comp = 0; comp < 12; ++comp) {
        const double v = wrench_component(w, comp);
        const std::string key = "w" + std::to_string(body) + "." + std::to_string(comp);
        auto it = e.channels.find(key);
        if (it == e.channels.end() && v == 0) continue;  // all-zero components stay out
        const bool torque = (comp / 3) % 2 == 1;
        CommandChannel& ch = it != e.channels.end()
                                 ? it->second
                                 : channel(e, key, body_name(c, body) + " " + component_names[comp],
                                           torque ? "torques" : "forces", torque ? "torque (N·m)" : "force (N)");
        double& slot_v = ch.v.back();
        slot_v = std::isnan(slot_v) ? v : slot_v + v;
      }
    }
    for (const DeviceCommand& cmd : slot.reply.commands) {
      // actuator payloads are little-endian f32 values (firmware_shim payloads.h)
      const std::size_t n = std::min<std::size_t>(cmd.size, cmd.bytes.size()) / 4;
      for (std::size_t k = 0; k < n; ++k) {
        float f;
        std::memcpy(&f, cmd.bytes.data() + 4 * k, 4);
        const std::string key = "d" + std::to_string(cmd.device) + "." + std::to_string(k);
        auto it = e.channels.find(key);
        if (it == e.channels.end()) {
          std::string name, plot, unit;
          device_labels(c, cmd.device, name, plot, unit);
          if (n > 1) name += "[" + std::to_string(k) + "]";
          channel(e, key, name, plot, unit);
          it = e.channels.find(key);
        }
        it->second.v.back() = static_cast<double>(f);
      }
    }
    // measured poses of each vehicle's reference body
    if (!c.scenario) continue;
    const WorldModel& m = c.scenario->model;
    for (const Measurement& meas : slot.reply.measurements) {
      if (!meas.has_pose || meas.body >= m.bodies.size()) continue;
      const int vi = m.bodies[meas.body].vehicle;
      if (vi < 0 || static_cast<std::size_t>(vi) >= c.vehicles.size()) continue;
      if (m.vehicles[static_cast<std::size_t>(vi)].bodies.front() != static_cast<int>(meas.body)) continue;
      VehicleSeries& v = c.vehicles[static_cast<std::size_t>(vi)];
      const double mt = meas.measured_time_ns != 0 ? static_cast<double>(meas.measured_time_ns) * 1e-9 : t_s;
      v.mt.push_back(mt);
      v.mx.push_back(meas.position_m.x());
      v.my.push_back(meas.position_m.y());
      v.mz.push_back(meas.position_m.z());
      v.mdepth.push_back(m.water.present ? m.water.surface_z_m - meas.position_m.z() : meas.position_m.z());
      // a compass heading, as the vehicles view records it (clockwise from north)
      v.mheading.push_back(compass_heading_deg(meas.orientation.normalized()));
    }
  }
}

double num_or_nan(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : nan_v;
}

void add_vehicles(Collected& c, const json& j, double t_s) {
  const auto it = j.find("vehicles");
  if (it == j.end() || !it->is_array()) return;
  for (const json& v : *it) {
    if (!v.is_object()) continue;
    const std::string name = v.value("name", std::string("?"));
    auto vs =
        std::find_if(c.vehicles.begin(), c.vehicles.end(), [&](const VehicleSeries& s) { return s.name == name; });
    if (vs == c.vehicles.end()) {
      c.vehicles.push_back(VehicleSeries{});
      c.vehicles.back().name = name;
      vs = c.vehicles.end() - 1;
    }
    vs->t.push_back(t_s);
    vs->x.push_back(num_or_nan(v, "x_m"));
    vs->y.push_back(num_or_nan(v, "y_m"));
    vs->z.push_back(num_or_nan(v, "z_m"));
    vs->depth.push_back(num_or_nan(v, "depth_m"));
    if (v.contains("depth_m")) vs->has_depth = true;
    vs->heading.push_back(num_or_nan(v, "heading_deg"));
    vs->roll.push_back(num_or_nan(v, "roll_deg"));
    vs->pitch.push_back(num_or_nan(v, "pitch_deg"));
    vs->speed.push_back(num_or_nan(v, "speed_m_s"));
    const auto p = v.find("projected");
    const bool has_p = p != v.end() && p->is_object();
    vs->px.push_back(has_p ? num_or_nan(*p, "x_m") : nan_v);
    vs->py.push_back(has_p ? num_or_nan(*p, "y_m") : nan_v);
    vs->pz.push_back(has_p ? num_or_nan(*p, "z_m") : nan_v);
  }
}

void add_feedback(Collected& c, const json& j, double t_s) {
  const auto it = j.find("processors");
  if (it == j.end() || !it->is_object()) return;
  const std::size_t n = c.feedback_t.size();
  c.feedback_t.push_back(t_s);
  for (auto& [key, values] : c.feedback) values.push_back(nan_v);
  for (const auto& [proc, fields] : it->items()) {
    if (!fields.is_object()) continue;
    for (const auto& [field, value] : fields.items()) {
      if (!value.is_number()) continue;
      const std::string key = proc + "\x1f" + field;
      auto f = c.feedback.find(key);
      if (f == c.feedback.end()) {
        f = c.feedback.emplace(key, std::vector<double>(n + 1, nan_v)).first;
        c.feedback_order.push_back(key);
      }
      f->second.back() = value.get<double>();
    }
  }
}

// a sensor reading, {"step", "valid", "value", "values": [...]} (docs/recording.md)
void add_reading(SensorSeries& s, const json& j, double t_s) {
  const auto values = j.find("values");
  const bool valid = j.value("valid", true) && values != j.end() && values->is_array();
  if (!valid) ++s.invalid;
  s.t.push_back(t_s);
  for (std::size_t k = 0; k < s.v.size(); ++k) {
    const bool has = valid && k < values->size() && (*values)[k].is_number();
    s.v[k].push_back(has ? (*values)[k].get<double>() : nan_v);
  }
}

// the sensors' channels by topic, in the order of the scenario's devices
std::map<std::string, std::size_t> sensor_topics(Collected& c) {
  std::map<std::string, std::size_t> topics;
  if (!c.scenario) return topics;
  for (std::size_t d = 0; d < c.scenario->devices.size(); ++d) {
    const hal::DeviceSpec& spec = c.scenario->devices[d];
    const hal::KindInfo& info = hal::kind_info(spec.kind);
    if (info.actuator || info.channels == 0) continue;
    topics.emplace("/devices/" + spec.name.vehicle + "/" + spec.name.part + "/" + spec.name.device, c.sensors.size());
    c.sensors.push_back(SensorSeries{});
    c.sensors.back().device = d;
    c.sensors.back().v.resize(static_cast<std::size_t>(info.channels));
  }
  return topics;
}

// the cables of the scenario, a shape about every sixth of the planned run
void cable_series(Collected& c) {
  if (!c.scenario) return;
  for (const int v : c.scenario->cables) {
    CableSeries cs;
    cs.vehicle = v;
    cs.name = c.scenario->model.vehicles[static_cast<std::size_t>(v)].name;
    cs.stride = std::max<std::uint64_t>(1, c.scenario->loop.steps / 6);
    c.cables.push_back(std::move(cs));
  }
}

// S_{k+1} of a step: each cable's shape on the first step and every `stride` steps; the
// latest state's shape stands in for the last (replaced by the next, dropped by an on-stride
// one) unless it is within a quarter stride of the one before
void add_cable_shapes(Collected& c, const WorldState& state, double t_s) {
  for (CableSeries& cs : c.cables) {
    const bool on_stride = cs.t.empty() || state.step % cs.stride == 0;
    if (!on_stride && state.step - cs.stride_step < cs.stride / 4) continue;
    if (cs.latest_is_stand_in) {
      cs.t.pop_back();
      cs.x.pop_back();
      cs.y.pop_back();
      cs.z.pop_back();
    }
    cs.latest_is_stand_in = !on_stride;
    if (on_stride) cs.stride_step = state.step;
    cs.t.push_back(t_s);
    cs.x.emplace_back();
    cs.y.emplace_back();
    cs.z.emplace_back();
    for (const int b : c.scenario->model.vehicles[static_cast<std::size_t>(cs.vehicle)].bodies) {
      if (b < 0 || static_cast<std::size_t>(b) >= state.bodies.size()) continue;
      const Vec3& p = state.bodies[static_cast<std::size_t>(b)].position_m;
      cs.x.back().push_back(p.x());
      cs.y.back().push_back(p.y());
      cs.z.back().push_back(p.z());
    }
  }
}

}  // namespace

bool collect(const std::string& path, Collected& c, std::string* error) {
  mcap::Reader reader;
  std::string why;
  if (!reader.open(path, &why)) {
    if (error) *error = why;
    return false;
  }
  c.path = path;
  const mcap::Info& info = reader.info();
  c.file_size = info.file_size_bytes;
  c.truncated = info.truncated;
  c.truncation = info.truncation;
  const mcap::Attachment* scenario_file = nullptr;
  for (const auto& a : reader.attachments())
    if (a.name == "scenario.yaml") scenario_file = &a;
  for (const auto& m : reader.metadata())
    if (m.name == "tether") c.meta = m.entries;
  if (!scenario_file && c.meta.empty()) {
    if (error) *error = path + ": not a Tether recording (no scenario.yaml attachment, no tether metadata)";
    return false;
  }
  if (scenario_file) {
    c.scenario_text = scenario_file->data;
    c.created_ns = scenario_file->create_time_ns;
    try {
      // with the run's --set options, as replay applies them
      c.scenario = parse_scenario(scenario_file->data, path + ":scenario.yaml", recorded_overrides(reader));
    } catch (const std::exception& e) {
      // the report still shows what the channels hold; names fall back to indices
      c.scenario_error = e.what();
    }
  }
  if (const auto it = c.meta.find("endpoints"); it != c.meta.end() && !it->second.empty()) {
    std::string list = it->second;
    for (std::size_t start = 0;;) {
      const auto comma = list.find(',', start);
      c.endpoint_names.push_back(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  } else if (c.scenario) {
    for (const auto& e : c.scenario->endpoints) c.endpoint_names.push_back(e.name);
  }
  if (c.scenario) {
    c.period_ns = c.scenario->loop.period_ns;
    for (const auto& v : c.scenario->model.vehicles) {
      c.vehicles.push_back(VehicleSeries{});
      c.vehicles.back().name = v.name;
    }
  } else if (const auto it = c.meta.find("period_ns"); it != c.meta.end()) {
    c.period_ns = std::strtoll(it->second.c_str(), nullptr, 10);
  }
  for (std::size_t i = 0; i < c.endpoint_names.size(); ++i) {
    c.endpoints.push_back(EndpointSeries{});
    c.endpoints.back().name = c.endpoint_names[i];
  }

  const std::map<std::string, std::size_t> sensors = sensor_topics(c);
  cable_series(c);
  WorldState state;
  mcap::MessageView msg;
  StepRecord record;
  while (reader.next(msg)) {
    const mcap::Channel* ch = reader.channel(msg.channel_id);
    if (!ch) continue;
    auto& stats = c.channels[ch->topic];
    ++stats.first;
    stats.second += msg.data.size();
    const std::string_view bytes(reinterpret_cast<const char*>(msg.data.data()), msg.data.size());
    const double t_s = static_cast<double>(msg.log_time_ns) * 1e-9;
    const std::string& topic = ch->topic;
    if (topic == topics::step) {
      if (decode_step(bytes, record, nullptr))
        add_step(c, record, t_s);
      else
        ++c.bad_step_records;
    } else if (const auto sensor = sensors.find(topic); sensor != sensors.end()) {
      json j = json::parse(bytes, nullptr, false);
      if (!j.is_discarded() && j.is_object()) add_reading(c.sensors[sensor->second], j, t_s);
    } else if (topic == topics::state) {
      if (!c.cables.empty() && decode_state(bytes, state, nullptr)) add_cable_shapes(c, state, t_s);
    } else if (topic == topics::keyframe) {
      ++c.keyframes;
    } else if (topic == topics::vehicles || topic == topics::feedback || topic == topics::summary ||
               topic == topics::events) {
      json j = json::parse(bytes, nullptr, false);
      if (j.is_discarded() || !j.is_object()) continue;
      if (topic == topics::vehicles)
        add_vehicles(c, j, t_s);
      else if (topic == topics::feedback)
        add_feedback(c, j, t_s);
      else if (topic == topics::summary)
        c.summary = std::move(j);
      else
        c.events.push_back(
            EventRow{t_s, j.value("level", 0), j.value("name", std::string()), j.value("message", std::string())});
    }
  }
  if (!reader.error().empty()) {
    if (error) *error = path + ": " + reader.error();
    return false;
  }
  return true;
}

}  // namespace tether::runtime::report_detail
