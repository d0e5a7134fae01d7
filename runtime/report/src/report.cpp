// SPDX-License-Identifier: Apache-2.0
#include "tether/recording/json_text.hpp"
#include "tether/report/report.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <numbers>
#include <optional>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "tether/hal/device_spec.hpp"
#include "tether/physics/heading.hpp"
#include "tether/recording/mcap_reader.hpp"
#include "tether/recording/recording.hpp"
#include "tether/scenario/scenario.hpp"
#include "tether/report/svg_plot.hpp"

namespace tether::runtime {

namespace report_assets {
std::string_view dygraphs_js();
std::string_view dygraphs_css();
}  // namespace report_assets

namespace {

using nlohmann::json;
const double nan_v = std::numeric_limits<double>::quiet_NaN();

// ---- what the report collects from the recording ------------------------------------

struct VehicleSeries {
  std::string name;
  std::vector<double> t, x, y, z, depth, heading, roll, pitch, speed, px, py, pz;
  bool has_depth = false;
  // measured pose of the vehicle's reference body, from the step records' replies
  std::vector<double> mt, mx, my, mz, mdepth, mheading;
};

// one plotted command value (a wrench component or an actuator payload value)
struct CommandChannel {
  std::string label;
  std::string plot;       // which plot it goes in: "forces", "torques", "thruster commands", ...
  std::string unit;       // that plot's y label
  std::vector<double> v;  // aligned with EndpointSeries::t (NaN when the endpoint sent nothing)
};

struct EndpointSeries {
  std::string name;
  std::vector<double> t;  // t_{k+1} of every step
  std::vector<double> cum_timeouts, cum_faults;
  std::vector<double> round_trip_us;  // fresh replies only
  std::uint64_t fresh = 0, timeouts = 0, faults = 0;
  std::map<std::string, CommandChannel> channels;  // by key, for lookup while reading
  std::vector<std::string> channel_order;          // keys in the order first seen
  std::vector<std::string> plot_order;             // plots in the order first seen
};

struct EventRow {
  double t_s = 0;
  int level = 0;
  std::string name, message;
};

struct Collected {
  std::string path;
  std::uint64_t file_size = 0;
  std::optional<Scenario> scenario;
  std::string scenario_error;
  std::string scenario_text;
  std::uint64_t created_ns = 0;
  std::map<std::string, std::string> meta;
  std::vector<std::string> endpoint_names;
  std::int64_t period_ns = 0;

  std::uint64_t steps = 0;
  std::uint64_t first_step = 0, last_step = 0;
  std::uint64_t step_gaps = 0;
  std::uint64_t bad_step_records = 0;
  std::uint64_t keyframes = 0;
  std::vector<double> step_t, step_time_us;
  std::vector<EndpointSeries> endpoints;
  std::vector<VehicleSeries> vehicles;
  std::map<std::string, std::vector<double>> feedback;  // "processor.field" -> values
  std::vector<std::string> feedback_order;
  std::vector<double> feedback_t;
  std::vector<EventRow> events;
  std::optional<json> summary;
  bool truncated = false;
  std::string truncation;
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> channels;
};

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
      c.scenario = parse_scenario(scenario_file->data, path + ":scenario.yaml");
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

// ---- formatting ---------------------------------------------------------------------

std::string fmt(double v, int decimals) {
  if (!std::isfinite(v)) return "–";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string fmt_us(double ns) {
  if (!std::isfinite(ns)) return "–";
  char buf[64];
  if (ns >= 1e6)
    std::snprintf(buf, sizeof buf, "%.2f ms", ns * 1e-6);
  else
    std::snprintf(buf, sizeof buf, "%.1f µs", ns * 1e-3);
  return buf;
}

std::string fmt_bytes(double b) {
  char buf[64];
  if (b >= 1e9)
    std::snprintf(buf, sizeof buf, "%.2f GB", b * 1e-9);
  else if (b >= 1e6)
    std::snprintf(buf, sizeof buf, "%.2f MB", b * 1e-6);
  else if (b >= 1e3)
    std::snprintf(buf, sizeof buf, "%.1f kB", b * 1e-3);
  else
    std::snprintf(buf, sizeof buf, "%.0f B", b);
  return buf;
}

double jnum(const json& j, const char* key) {
  if (!j.is_object()) return nan_v;
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : nan_v;
}

std::string jstr(const json& j, const char* key) {
  if (!j.is_object()) return "";
  const auto it = j.find(key);
  if (it == j.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  return runtime::json_text(*it);
}

// a JSON value as table text: numbers to 4 significant digits (what a reader can use), an
// object as "key value" pairs, an array as a list; never raw JSON
std::string cell(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_null()) return "—";
  if (v.is_number_integer() || v.is_number_unsigned()) return runtime::json_text(v);
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d == std::round(d) && std::abs(d) < 1e15) return std::to_string(static_cast<long long>(d));
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.4g", d);
    return buf;
  }
  std::string out;
  if (v.is_array()) {
    for (const auto& e : v) out += (out.empty() ? "" : ", ") + cell(e);
    return v.empty() ? "none" : out;
  }
  for (const auto& [k, e] : v.items()) out += (out.empty() ? "" : "; ") + k + " " + cell(e);
  return out.empty() ? "none" : out;
}

std::string esc(const std::string& s) { return svg::escape(s); }

std::string level_name(int level) {
  switch (level) {
    case 1: return "debug";
    case 2: return "info";
    case 3: return "warning";
    case 4: return "error";
    case 5: return "fatal";
  }
  return std::to_string(level);
}

// breaks a heading line where it wraps (360 to 0) instead of drawing across the plot
std::vector<double> break_wraps(const std::vector<double>& deg) {
  std::vector<double> out;
  out.reserve(deg.size());
  for (std::size_t i = 0; i < deg.size(); ++i) {
    if (i > 0 && std::isfinite(deg[i]) && std::isfinite(deg[i - 1]) && std::abs(deg[i] - deg[i - 1]) > 180)
      out.push_back(nan_v);
    out.push_back(deg[i]);
  }
  return out;
}

// the same time axis with a NaN where break_wraps inserted one
std::vector<double> break_wraps_x(const std::vector<double>& t, const std::vector<double>& deg) {
  std::vector<double> out;
  out.reserve(t.size());
  for (std::size_t i = 0; i < deg.size() && i < t.size(); ++i) {
    if (i > 0 && std::isfinite(deg[i]) && std::isfinite(deg[i - 1]) && std::abs(deg[i] - deg[i - 1]) > 180)
      out.push_back(nan_v);
    out.push_back(t[i]);
  }
  return out;
}

svg::Line line(std::string label, std::vector<double> x, std::vector<double> y, std::size_t color,
               bool dashed = false) {
  svg::Line l;
  l.label = std::move(label);
  l.x = std::move(x);
  l.y = std::move(y);
  l.color = svg::palette(color);
  l.dashed = dashed;
  return l;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return nan_v;
  const auto k = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

// ---- the page -----------------------------------------------------------------------

const char* style = R"(
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;margin:0;padding:20px 28px;color:#1d2330;background:#f4f5f7;font-size:14px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:17px;margin:28px 0 10px;padding-bottom:4px;border-bottom:2px solid #d8dce3}
h3{font-size:14px;margin:16px 0 8px}
.meta{color:#555;margin:0 0 12px}
.meta span{margin-right:18px;white-space:nowrap}
.banner{padding:10px 14px;border-radius:6px;margin:12px 0;border:1px solid}
.banner.warn{background:#fff4d6;border-color:#e3c25b}
.banner.bad{background:#fbe0e0;border-color:#d88}
.banner.ok{background:#e3f4e6;border-color:#8c8}
.plots{display:flex;flex-wrap:wrap;gap:14px}
.card{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:6px}
.card p{margin:2px 8px 6px;color:#555;font-size:12px;max-width:640px}
svg.plot{display:block}
.iplot .dg{display:none}
.iplot.live .dg{display:block;margin:4px}
.iplot.live svg.plot{display:none}
.iplot .dygraph-legend{font-size:11px;background:rgba(255,255,255,.85);left:70px!important;width:auto}
.iplot .dygraph-title{font-size:13px}
@media print{.iplot.live .dg{display:none}.iplot.live svg.plot{display:block}}
table{border-collapse:collapse;background:#fff;border:1px solid #dde1e7;margin:4px 0 12px}
th,td{padding:4px 10px;border-bottom:1px solid #eceef2;text-align:left;vertical-align:top}
td:last-child{max-width:560px;overflow-wrap:anywhere}  /* long lists of figures wrap instead of widening the page */
th{background:#f0f2f5;font-weight:600}
td.n{text-align:right;font-variant-numeric:tabular-nums}
table.kv th{background:none;font-weight:500;color:#555;min-width:170px}
.outcome-completed{color:#1a7f37;font-weight:600}
.outcome-stopped{color:#9a6700;font-weight:600}
.outcome-aborted,.outcome-truncated,.outcome-failed{color:#c62828;font-weight:600}
.outcome-completed_with_faults{color:#9a6700;font-weight:600}
.lvl-warning{color:#9a6700}.lvl-error,.lvl-fatal{color:#c62828;font-weight:600}
pre{background:#fff;border:1px solid #dde1e7;padding:10px;overflow:auto;font-size:12px}
details summary{cursor:pointer;color:#345}
footer{margin-top:30px;color:#888;font-size:12px}
)";

// a value as dygraphs shows it: six significant digits keep the page small
double six_digits(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return std::strtod(buf, nullptr);
}

// A time series for dygraphs (zoom by dragging, hover for values, double-click to reset):
// the lines' points on one x axis, each line down-sampled as the SVG draws it, null where a
// line has no point. Empty when the plot is not a time series (plan views, histograms).
std::string interactive_spec(const svg::Plot& plot) {
  if (plot.lines.empty() || !plot.bars.empty() || plot.equal_aspect) return "";
  for (const svg::Line& l : plot.lines)
    if (l.path) return "";
  // one line with a band (an estimate ±σ): dygraphs' error bars, each value [y, σ]
  const bool bars = plot.lines.size() == 1 && plot.lines[0].band.size() >= plot.lines[0].y.size();
  std::vector<std::tuple<double, std::size_t, std::size_t>> points;  // x, line, index
  for (std::size_t li = 0; li < plot.lines.size(); ++li) {
    const svg::Line& l = plot.lines[li];
    const std::size_t n = std::min(l.x.size(), l.y.size());
    for (std::size_t i :
         svg::downsample(std::span(l.x.data(), n), std::span(l.y.data(), n), plot.max_points_per_line, false))
      points.emplace_back(l.x[i], li, i);
  }
  std::sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
  json data = json::array();
  for (const auto& [x, li, i] : points) {
    if (data.empty() || data.back()[0].get<double>() != x) {
      json row = json::array({x});
      for (std::size_t k = 0; k < plot.lines.size(); ++k) row.push_back(nullptr);
      data.push_back(std::move(row));
    }
    const double y = plot.lines[li].y[i];
    if (!std::isfinite(y)) continue;
    const double sigma = bars ? plot.lines[li].band[i] : 0.0;
    data.back()[li + 1] =
        bars ? json::array({six_digits(y), std::isfinite(sigma) ? six_digits(sigma) : 0.0}) : json(six_digits(y));
  }
  json labels = json::array({plot.x_label});
  json colors = json::array(), step = json::array(), dashed = json::array(), dots = json::array();
  for (std::size_t li = 0; li < plot.lines.size(); ++li) {
    const svg::Line& l = plot.lines[li];
    // dygraphs needs distinct labels
    labels.push_back(l.label.empty() ? (plot.lines.size() == 1 ? plot.y_label : "series " + std::to_string(li + 1))
                                     : l.label);
    colors.push_back(l.color);
    step.push_back(l.step);
    dashed.push_back(l.dashed);
    dots.push_back(l.dots);
  }
  json refs = json::array();
  for (const svg::RefLine& r : plot.refs)
    refs.push_back({{"vertical", r.vertical}, {"value", r.value}, {"label", r.label}, {"color", r.color}});
  json spec{{"title", plot.title}, {"xlabel", plot.x_label}, {"ylabel", plot.y_label},  {"labels", labels},
            {"colors", colors},    {"step", step},           {"dashed", dashed},        {"dots", dots},
            {"data", data},        {"refs", refs},           {"log", plot.log_y},       {"invert", plot.invert_y},
            {"bars", bars},        {"width", plot.width_px}, {"height", plot.height_px}};
  if (plot.y_min && plot.y_max) spec["range"] = {*plot.y_min, *plot.y_max};
  // inside a <script> element: "</" must not end it early
  std::string text = runtime::json_text(spec);
  for (std::size_t at = text.find("</"); at != std::string::npos; at = text.find("</", at + 3))
    text.insert(at + 1, "\\");
  return text;
}

struct Page {
  std::string out;
  void add(const std::string& s) { out += s; }
  void card(const std::string& svg_text, const std::string& note = "") {
    out += "<div class=\"card\">" + svg_text;
    if (!note.empty()) out += "<p>" + note + "</p>";
    out += "</div>";
  }
  // a plot: the SVG (what prints, and what shows without scripts) and, for a time series,
  // the data dygraphs draws in its place with zoom and hover
  void plot(const svg::Plot& plot, const std::string& note = "") {
    const std::string spec = interactive_spec(plot);
    if (spec.empty()) return card(svg::render(plot), note);
    out += "<div class=\"card iplot\">" + svg::render(plot) +
           "<div class=\"dg\"></div><script type=\"application/json\">" + spec + "</script>";
    if (!note.empty()) out += "<p>" + note + "</p>";
    out += "</div>";
  }
};

// Draws each time series with dygraphs in place of its SVG (which stays for printing and
// for readers without scripts); window.tetherPlots lists them for the browser tests.
const char* interactive_script = R"js(
(function () {
  if (typeof Dygraph === "undefined") return;
  const plots = [];
  for (const holder of document.querySelectorAll("div.iplot")) {
    const spec = JSON.parse(holder.querySelector("script[type='application/json']").textContent);
    const inv = spec.invert;  // depth grows downward: draw -v, label v
    const data = inv ? spec.data.map((r) => r.map((v, i) => (i && v !== null ? -v : v))) : spec.data;
    const fmt = (v) => String(+(inv ? -v : v).toPrecision(6));
    const series = {};
    spec.labels.slice(1).forEach((l, i) => {
      series[l] = { stepPlot: spec.step[i], strokePattern: spec.dashed[i] ? [6, 3] : null,
                    drawPoints: spec.dots[i], strokeWidth: spec.dots[i] ? 0 : 1.5, pointSize: 2 };
    });
    const options = {
      labels: spec.labels, colors: spec.colors, title: spec.title, xlabel: spec.xlabel, ylabel: spec.ylabel,
      series, logscale: spec.log, legend: "always", width: spec.width, height: spec.height, titleHeight: 22,
      errorBars: spec.bars, sigma: 1, fillAlpha: 0.18,
      axes: { x: { valueFormatter: (v) => String(+v.toPrecision(6)) }, y: { axisLabelFormatter: fmt, valueFormatter: fmt } },
      underlayCallback: (ctx, area, g) => {
        for (const r of spec.refs) {
          ctx.save();
          ctx.strokeStyle = r.color;
          ctx.setLineDash([6, 4]);
          ctx.beginPath();
          if (r.vertical) {
            const x = g.toDomXCoord(r.value);
            ctx.moveTo(x, area.y);
            ctx.lineTo(x, area.y + area.h);
          } else {
            const y = g.toDomYCoord(inv ? -r.value : r.value);
            ctx.moveTo(area.x, y);
            ctx.lineTo(area.x + area.w, y);
          }
          ctx.stroke();
          ctx.restore();
        }
      },
    };
    if (spec.range) options.valueRange = inv ? [-spec.range[1], -spec.range[0]] : spec.range;
    const g = new Dygraph(holder.querySelector("div.dg"), data, options);
    holder.classList.add("live");
    plots.push(g);
  }
  window.tetherPlots = plots;
})();
)js";

// the verdict and the goals before anything else: what a reader opens the report for
void verdict_section(Page& p, const json& s) {
  const std::string verdict = jstr(s, "verdict"), outcome = jstr(s, "outcome");
  const bool ok = outcome == "completed" && verdict != "fail";
  std::string line = "<b>" + std::string(verdict == "pass" ? "PASS" : verdict == "fail" ? "FAIL" : outcome) + "</b>";
  line += verdict.empty() ? " (no expectations)" : " &mdash; session " + esc(outcome);
  if (s.contains("expectations") && s["expectations"].is_array()) {
    std::size_t passed = 0;
    for (const auto& x : s["expectations"]) passed += jstr(x, "verdict") == "PASS";
    line += ", " + std::to_string(passed) + " of " + std::to_string(s["expectations"].size()) + " expectations pass";
  }
  p.add("<div class=\"banner " + std::string(ok ? "ok" : "bad") + "\">" + line + "</div>");
  if (!s.contains("goals") || !s["goals"].is_array() || s["goals"].empty()) return;
  p.add(
      "<table><tr><th>vehicle</th><th>target depth</th><th>final depth</th><th>error</th><th>target "
      "heading</th><th>final heading</th><th>error</th></tr>");
  for (const auto& g : s["goals"]) {
    auto m = [&](const char* k, int decimals, const char* unit) {
      return g.contains(k) && g[k].is_number() ? fmt(g[k].get<double>(), decimals) + unit : std::string("&ndash;");
    };
    // depth to the centimetre, heading to a tenth of a degree: what the sensors resolve
    p.add("<tr><td>" + esc(jstr(g, "vehicle")) + "</td><td class=\"n\">" + m("target_depth_m", 2, " m") +
          "</td><td class=\"n\">" + m("final_depth_m", 2, " m") + "</td><td class=\"n\">" +
          m("depth_error_m", 2, " m") + "</td><td class=\"n\">" + m("target_heading_deg", 1, "°") +
          "</td><td class=\"n\">" + m("final_heading_deg", 1, "°") + "</td><td class=\"n\">" +
          m("heading_error_deg", 1, "°") + "</td></tr>");
  }
  p.add("</table>");
}

// the verdict of `expect:` first: what a test run is for
void expectations_section(Page& p, const json& s) {
  if (!s.contains("expectations") || !s["expectations"].is_array()) return;
  const json& list = s["expectations"];
  std::size_t failed = 0, skipped = 0;
  for (const auto& x : list) {
    failed += jstr(x, "verdict") == "FAIL";
    skipped += jstr(x, "verdict") == "SKIPPED";
  }
  p.add("<h2>Expectations</h2><p class=\"" + std::string(failed ? "outcome-failed" : "outcome-completed") + "\">" +
        std::to_string(list.size() - failed - skipped) + " of " + std::to_string(list.size()) + " passed" +
        (skipped ? ", " + std::to_string(skipped) + " skipped (the run ended before their window)" : std::string()) +
        (failed ? " &mdash; the run FAILED" : "") + "</p>");
  p.add(
      "<table><tr><th>verdict</th><th>expectation</th><th>value</th><th>condition</th><th>when</th><th>worst "
      "(closest)</th><th>first failing step</th><th>note</th></tr>");
  for (const auto& x : list) {
    const std::string verdict = jstr(x, "verdict");
    const bool has_worst = x.contains("worst") && x["worst"].is_number();
    const char* cls = verdict == "PASS"   ? "outcome-completed"
                      : verdict == "FAIL" ? "outcome-failed"
                                          : "outcome-stopped";
    p.add("<tr><td class=\"" + std::string(cls) + "\">" + esc(verdict) + "</td><td>" + esc(jstr(x, "name")) +
          "</td><td><code>" + esc(jstr(x, "value")) + "</code></td><td>" + esc(jstr(x, "that")) + "</td><td>" +
          esc(jstr(x, "when")) + "</td><td>" + (has_worst ? fmt(x["worst"].get<double>(), 4) : std::string("&ndash;")) +
          "</td><td>" +
          (x.contains("first_failing_step") && x["first_failing_step"].is_number()
               ? esc(jstr(x, "first_failing_step")) + " (t = " + fmt(jnum(x, "first_failing_time_s"), 3) + " s)"
               : std::string("&ndash;")) +
          "</td><td>" + esc(jstr(x, "reason")) + "</td></tr>");
  }
  p.add("</table>");
}

// `faults:` on one timeline with what followed: each fault's activations as bars under the
// endpoints' cumulative misses, each failed expectation's first failing step as a line
void faults_section(Page& p, const Collected& c, const ReportOptions& o) {
  if (!c.summary || !c.summary->contains("faults") || !(*c.summary)["faults"].is_array()) return;
  const json& faults = (*c.summary)["faults"];
  p.add(
      "<h2>Faults</h2><table><tr><th>fault</th><th>kind</th><th>on</th><th>activations</th><th>active "
      "steps</th><th>first (s)</th></tr>");
  for (const auto& f : faults) {
    const std::string on = f.contains("endpoint")
                               ? "endpoint " + jstr(f, "endpoint") + " (" + jstr(f, "direction") + ")"
                               : jstr(f, "device");
    const json& acts = f.contains("activations") ? f["activations"] : json::array();
    p.add("<tr><td>" + esc(jstr(f, "name")) + "</td><td>" + esc(jstr(f, "kind")) + "</td><td>" + esc(on) + "</td><td>" +
          esc(jstr(f, "activation_count")) + "</td><td>" + esc(jstr(f, "active_steps")) + "</td><td>" +
          (acts.empty() ? std::string("&ndash;") : fmt(jnum(acts[0], "start_s"), 3)) + "</td></tr>");
  }
  p.add("</table><div class=\"cards\">");
  svg::Plot plot;
  plot.title = "Faults (bars) and missed steps (cumulative)";
  plot.x_label = "sim time (s)";
  plot.y_label = "missed steps";
  plot.max_points_per_line = o.max_points_per_line;
  double most = 1;
  for (std::size_t i = 0; i < c.endpoints.size(); ++i) {
    const EndpointSeries& e = c.endpoints[i];
    most = std::max(most, static_cast<double>(e.timeouts + e.faults));
    std::vector<double> y(e.cum_timeouts.size());
    for (std::size_t k = 0; k < y.size(); ++k)
      y[k] = e.cum_timeouts[k] + (k < e.cum_faults.size() ? e.cum_faults[k] : 0);
    plot.lines.push_back(line(e.name + " missed", e.t, std::move(y), i));
  }
  const double lane = std::max(0.5, most * 0.06);
  for (std::size_t i = 0; i < faults.size(); ++i) {
    std::vector<double> x, y;
    const double at = -lane * static_cast<double>(i + 1);
    for (const auto& a : faults[i]["activations"]) {
      x.insert(x.end(), {jnum(a, "start_s"), jnum(a, "end_s"), std::nan("")});
      y.insert(y.end(), {at, at, std::nan("")});
    }
    svg::Line l = line(jstr(faults[i], "name"), std::move(x), std::move(y), c.endpoints.size() + i);
    l.width_px = 6;
    plot.lines.push_back(std::move(l));
  }
  if (c.summary->contains("expectations"))
    for (const auto& x : (*c.summary)["expectations"])
      if (jstr(x, "verdict") == "FAIL" && x.contains("first_failing_time_s") && x["first_failing_time_s"].is_number())
        plot.refs.push_back(
            svg::RefLine{true, x["first_failing_time_s"].get<double>(), "FAIL: " + jstr(x, "name"), "#d62728"});
  plot.y_min = -lane * static_cast<double>(faults.size() + 1);
  plot.y_max = most * 1.08;
  p.plot(plot,
         "Each bar is a fault while it was active (in the order of the scenario's list, top to "
         "bottom); the lines count the steps each endpoint missed; a red line marks where an "
         "expectation first failed.");
  p.add("</div>");
}

void summary_section(Page& p, const Collected& c, const ReportOptions& o) {
  if (c.summary) verdict_section(p, *c.summary);
  if (c.summary) expectations_section(p, *c.summary);
  faults_section(p, c, o);
  p.add("<h2>Summary</h2>");
  if (!c.summary) {
    p.add(
        "<table class=\"kv\"><tr><th>outcome</th><td class=\"outcome-truncated\">session did not finish "
        "(truncated)</td></tr>");
    p.add("<tr><th>steps recorded</th><td>" + std::to_string(c.steps) + "</td></tr></table>");
    p.add(
        "<p>The recording has no session summary: the recorder was stopped before the session ended "
        "(killed, crashed or power lost). Everything up to the last flushed chunk is shown below.</p>");
    return;
  }
  const json& s = *c.summary;
  const std::string outcome = jstr(s, "outcome");
  p.add("<table class=\"kv\">");
  auto row = [&](const std::string& k, const std::string& v, const std::string& cls = "") {
    p.add("<tr><th>" + esc(k) + "</th><td" + (cls.empty() ? "" : " class=\"" + cls + "\"") + ">" + v + "</td></tr>");
  };
  row("outcome", esc(outcome), "outcome-" + esc(outcome));
  if (s.contains("reason")) row("reason", esc(jstr(s, "reason")));
  row("steps", esc(jstr(s, "steps")) + " of " + esc(jstr(s, "steps_planned")) + " planned");
  row("simulated time", fmt(jnum(s, "sim_time_s"), 3) + " s");
  row("wall time", fmt(jnum(s, "wall_time_s"), 3) + " s");
  const double rtf = jnum(s, "real_time_factor");
  row("real-time factor", fmt(jnum(s, "achieved_real_time_factor"), 2) + " achieved" +
                              (rtf > 0 ? ", target " + fmt(rtf, 2) : std::string(", target 0 (as fast as possible)")));
  if (s.contains("step_time_ns")) {
    const json& st = s["step_time_ns"];
    row("step time", "p50 " + fmt_us(jnum(st, "p50")) + ", p99 " + fmt_us(jnum(st, "p99")) + ", max " +
                         fmt_us(jnum(st, "max")) + ", mean " + fmt_us(jnum(st, "mean")));
  }
  const double reanchors = jnum(s, "reanchors");
  row("overruns", esc(jstr(s, "overruns")) +
                      (reanchors > 0 ? " (the pacer re-anchored " + esc(jstr(s, "reanchors")) + "×)" : std::string()));
  if (s.contains("physics_substeps")) row("physics sub-steps", esc(jstr(s, "physics_substeps")));
  if (s.contains("recording") && s["recording"].is_object())
    row("recorder dropped items", esc(jstr(s["recording"], "dropped_items")));
  if (s.contains("state_hash") && s["state_hash"].is_number_unsigned()) {  // recordings before it was text
    char hash[32];
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(s["state_hash"].get<std::uint64_t>()));
    row("final state hash", std::string("<code>") + hash + "</code>");
  } else if (s.contains("state_hash") && s["state_hash"].is_string()) {
    row("final state hash", "<code>" + esc(s["state_hash"].get<std::string>()) + "</code>");
  }
  // anything else at the top level (newer summaries)
  static const std::set<std::string> shown = {"scenario",
                                              "outcome",
                                              "reason",
                                              "steps",
                                              "steps_planned",
                                              "sim_time_s",
                                              "wall_time_s",
                                              "real_time_factor",
                                              "achieved_real_time_factor",
                                              "step_time_ns",
                                              "overruns",
                                              "reanchors",
                                              "physics_substeps",
                                              "recording",
                                              "state_hash",
                                              "endpoints",
                                              "feedback",
                                              "vehicles",
                                              "expectations"};
  for (const auto& [k, v] : s.items())
    if (!shown.count(k) && !v.is_structured()) row(k, esc(cell(v)));
  p.add("</table>");

  if (s.contains("endpoints") && s["endpoints"].is_array() && !s["endpoints"].empty()) {
    p.add(
        "<h3>Endpoints</h3><table><tr><th>endpoint</th><th>type</th><th>policy</th><th>deadline</th><th>replies</th>"
        "<th>late</th><th>misses</th><th>stale</th><th>corrupt</th><th>faults</th><th>round trip p50</th>"
        "<th>p99</th><th>max</th><th>details</th></tr>");
    static const std::set<std::string> known = {"name",   "type",  "policy",  "deadline_ms", "replies",      "late",
                                                "misses", "stale", "corrupt", "faults",      "round_trip_ns"};
    for (const json& e : s["endpoints"]) {
      if (!e.is_object()) continue;
      std::string details;
      for (const auto& [k, v] : e.items())
        if (!known.count(k)) details += (details.empty() ? "" : "<br>") + esc(k) + " = " + esc(cell(v));
      const json rt = e.contains("round_trip_ns") ? e["round_trip_ns"] : json::object();
      p.add("<tr><td>" + esc(jstr(e, "name")) + "</td><td>" + esc(jstr(e, "type")) + "</td><td>" +
            esc(jstr(e, "policy")) + "</td><td class=\"n\">" + fmt(jnum(e, "deadline_ms"), 3) + " ms</td>");
      for (const char* k : {"replies", "late", "misses", "stale", "corrupt", "faults"})
        p.add("<td class=\"n\">" + esc(jstr(e, k)) + "</td>");
      p.add("<td class=\"n\">" + fmt_us(jnum(rt, "p50")) + "</td><td class=\"n\">" + fmt_us(jnum(rt, "p99")) +
            "</td><td class=\"n\">" + fmt_us(jnum(rt, "max")) + "</td><td>" + details + "</td></tr>");
    }
    p.add("</table>");
  }
  if (s.contains("feedback") && s["feedback"].is_array() && !s["feedback"].empty()) {
    p.add(
        "<h3>Feedback processors</h3><table><tr><th>processor</th><th>type</th><th>phase</th><th>vehicle</th>"
        "<th>figures</th></tr>");
    for (const json& f : s["feedback"]) {
      if (!f.is_object()) continue;
      std::string details;
      for (const auto& [k, v] : f.items())
        if (k != "name" && k != "type" && k != "phase" && k != "vehicle")
          details += (details.empty() ? "" : "<br>") + esc(k) + " = " + esc(cell(v));
      p.add("<tr><td>" + esc(jstr(f, "name")) + "</td><td>" + esc(jstr(f, "type")) + "</td><td>" +
            esc(jstr(f, "phase")) + "</td><td>" + esc(jstr(f, "vehicle")) + "</td><td>" + details + "</td></tr>");
    }
    p.add("</table>");
  }
  if (s.contains("vehicles") && s["vehicles"].is_array() && !s["vehicles"].empty()) {
    p.add(
        "<h3>Vehicles at the end</h3><table><tr><th>vehicle</th><th>position (m)</th><th>depth</th>"
        "<th>heading</th></tr>");
    for (const json& v : s["vehicles"]) {
      if (!v.is_object()) continue;
      std::string pos = "–";
      if (v.contains("position_m") && v["position_m"].is_array() && v["position_m"].size() == 3) {
        const json& q = v["position_m"];
        pos = "(" + fmt(q[0].is_number() ? q[0].get<double>() : nan_v, 3) + ", " +
              fmt(q[1].is_number() ? q[1].get<double>() : nan_v, 3) + ", " +
              fmt(q[2].is_number() ? q[2].get<double>() : nan_v, 3) + ")";
      }
      p.add("<tr><td>" + esc(jstr(v, "name")) + "</td><td class=\"n\">" + pos + "</td><td class=\"n\">" +
            (v.contains("depth_m") ? fmt(jnum(v, "depth_m"), 4) + " m" : std::string("–")) + "</td><td class=\"n\">" +
            fmt(jnum(v, "heading_deg"), 1) + "°</td></tr>");
    }
    p.add("</table>");
  }
}

void vehicle_section(Page& p, const Collected& c, const ReportOptions& o) {
  p.add("<h2>Vehicles</h2>");
  bool any = false;
  for (const VehicleSeries& v : c.vehicles) {
    if (v.t.empty() && v.mt.empty()) continue;
    any = true;
    const bool water = v.has_depth;
    p.add("<h3>" + esc(v.name) + "</h3><div class=\"plots\">");
    // measurements are a scatter under the lines: noisy, and absent on missed steps
    const bool measured = !v.mt.empty();
    auto measured_dots = [&](std::vector<double> x, std::vector<double> y, bool path) {
      svg::Line l = line("measured", std::move(x), std::move(y), 2);
      l.dots = true;
      l.path = path;
      l.width_px = 1.6;
      l.opacity = 0.5;
      return l;
    };
    {
      svg::Plot plot;
      plot.title = "Plan view (x–y)";
      plot.x_label = "x (m)";
      plot.y_label = "y (m)";
      plot.equal_aspect = true;
      plot.min_span_x = plot.min_span_y = 1.0;
      plot.max_points_per_line = o.max_points_per_line;
      svg::Line a = line("actual", v.x, v.y, 0);
      a.path = true;
      a.width_px = 2;
      svg::Line pr = line("projected", v.px, v.py, 1, true);
      pr.path = true;
      if (measured) plot.lines.push_back(measured_dots(v.mx, v.my, true));
      plot.lines.push_back(std::move(pr));
      plot.lines.push_back(std::move(a));
      if (!v.x.empty()) {
        svg::Line start = line("start", {v.x.front()}, {v.y.front()}, 3);
        start.dots = true;
        svg::Line end = line("end", {v.x.back()}, {v.y.back()}, 4);
        end.dots = true;
        plot.lines.push_back(std::move(start));
        plot.lines.push_back(std::move(end));
      }
      p.plot(plot);
    }
    {
      svg::Plot plot;
      // not to scale: a dive over a long run would be a flat line
      plot.title = water ? "Depth profile (side view, x–depth)" : "Side view (x–z)";
      plot.x_label = "x (m)";
      plot.y_label = water ? "depth (m)" : "z (m)";
      plot.invert_y = water;
      plot.min_span_x = plot.min_span_y = 1.0;
      plot.max_points_per_line = o.max_points_per_line;
      std::vector<double> pd = v.pz;
      double surface = 0;
      if (water && c.scenario) surface = c.scenario->model.water.surface_z_m;
      if (water)
        for (double& d : pd) d = surface - d;
      svg::Line a = line("actual", v.x, water ? v.depth : v.z, 0);
      a.path = true;
      a.width_px = 2;
      svg::Line pr = line("projected", v.px, pd, 1, true);
      pr.path = true;
      if (measured) plot.lines.push_back(measured_dots(v.mx, water ? v.mdepth : v.mz, true));
      plot.lines.push_back(std::move(pr));
      plot.lines.push_back(std::move(a));
      if (water) plot.refs.push_back(svg::RefLine{false, 0.0, "surface", "#4a7bd0"});
      p.plot(plot);
    }
    {
      svg::Plot plot;
      plot.title = water ? "Depth over time" : "Height over time";
      plot.x_label = "sim time (s)";
      plot.y_label = water ? "depth (m)" : "z (m)";
      plot.invert_y = water;
      plot.max_points_per_line = o.max_points_per_line;
      std::vector<double> pd = v.pz;
      if (water) {
        const double surface = c.scenario ? c.scenario->model.water.surface_z_m : 0.0;
        for (double& d : pd) d = surface - d;
      }
      if (measured) plot.lines.push_back(measured_dots(v.mt, water ? v.mdepth : v.mz, false));
      plot.lines.push_back(line("projected", v.t, pd, 1, true));
      plot.lines.push_back(line("actual", v.t, water ? v.depth : v.z, 0));
      plot.lines.back().width_px = 2;
      // the depth a controller was told to hold, when the summary says
      if (c.summary && (*c.summary).contains("endpoints") && (*c.summary)["endpoints"].is_array())
        for (const json& e : (*c.summary)["endpoints"])
          if (water && e.is_object() && e.contains("target_depth_m") && e["target_depth_m"].is_number() && c.scenario) {
            const int vi = c.scenario->model.find_vehicle(v.name);
            bool mine = false;
            for (const auto& ec : c.scenario->endpoints)
              if (ec.name == jstr(e, "name") && ec.vehicle_index == vi) mine = true;
            if (mine)
              plot.refs.push_back(svg::RefLine{false, e["target_depth_m"].get<double>(),
                                               "target (" + jstr(e, "name") + ")", "#2ca02c"});
          }
      // the depth the scenario's `goals:` names for this vehicle
      if (water && c.scenario)
        for (const auto& g : c.scenario->goals)
          if (g.depth_m && g.vehicle == v.name) plot.refs.push_back(svg::RefLine{false, *g.depth_m, "goal", "#2ca02c"});
      p.plot(plot);
    }
    {
      svg::Plot plot;
      plot.title = "Heading over time";
      plot.x_label = "sim time (s)";
      plot.y_label = "heading (° compass, 90 = east)";
      plot.max_points_per_line = o.max_points_per_line;
      plot.min_span_y = 2;
      if (measured) plot.lines.push_back(measured_dots(v.mt, v.mheading, false));
      plot.lines.push_back(line("actual", break_wraps_x(v.t, v.heading), break_wraps(v.heading), 0));
      p.plot(plot);
    }
    {
      svg::Plot plot;
      plot.title = "Roll and pitch over time";
      plot.x_label = "sim time (s)";
      plot.y_label = "angle (°)";
      plot.max_points_per_line = o.max_points_per_line;
      plot.min_span_y = 1;
      plot.lines.push_back(line("roll", v.t, v.roll, 5));
      plot.lines.push_back(line("pitch", v.t, v.pitch, 6));
      p.plot(plot);
    }
    {
      svg::Plot plot;
      plot.title = "Speed over time";
      plot.x_label = "sim time (s)";
      plot.y_label = "speed (m/s)";
      plot.max_points_per_line = o.max_points_per_line;
      plot.min_span_y = 0.01;
      plot.lines.push_back(line("", v.t, v.speed, 0));
      p.plot(plot);
    }
    p.add("</div>");
  }
  if (!any) p.add("<p>No vehicle data in this recording.</p>");
}

void commands_section(Page& p, const Collected& c, const ReportOptions& o) {
  p.add(
      "<h2>Commands</h2><p>What each endpoint sent, per step (gaps: no reply that step; the timeout "
      "policy then applied a held or safe command). Components that stayed zero are not drawn.</p>");
  bool any = false;
  for (const EndpointSeries& e : c.endpoints) {
    if (e.channel_order.empty()) continue;
    p.add("<h3>" + esc(e.name) + "</h3><div class=\"plots\">");
    // forces and torques first, then one plot per kind of actuator
    std::vector<std::string> plots = e.plot_order;
    std::stable_sort(plots.begin(), plots.end(), [](const std::string& a, const std::string& b) {
      auto rank = [](const std::string& s) { return s == "forces" ? 0 : s == "torques" ? 1 : 2; };
      return rank(a) < rank(b);
    });
    for (const std::string& name : plots) {
      // forces and torques share a plot per kind; actuators get one plot each, since
      // several switching commands drawn over each other cannot be told apart
      const bool per_channel = name != "forces" && name != "torques";
      std::vector<svg::Plot> cards;
      std::size_t color = 0;
      for (const std::string& key : e.channel_order) {
        const CommandChannel& ch = e.channels.at(key);
        if (ch.plot != name) continue;
        if (cards.empty() || per_channel) {
          cards.emplace_back();
          svg::Plot& plot = cards.back();
          plot.title = e.name + ": " + (per_channel ? ch.label : name);
          plot.x_label = "sim time (s)";
          plot.y_label = ch.unit;
          plot.max_points_per_line = o.max_points_per_line;
        }
        cards.back().lines.push_back(line(per_channel ? "" : ch.label, e.t, ch.v, color++));
        cards.back().lines.back().width_px = per_channel ? 1.0 : 1.5;
        cards.back().lines.back().step = true;  // a command holds until the next one
      }
      for (const svg::Plot& plot : cards) {
        any = true;
        p.plot(plot);
      }
    }
    p.add("</div>");
  }
  if (!any) p.add("<p>No endpoint sent forces or actuator commands.</p>");
}

void timing_section(Page& p, const Collected& c, const ReportOptions& o) {
  p.add("<h2>Timing</h2><div class=\"plots\">");
  {
    svg::Plot plot;
    plot.title = "Step time (phases 1–7)";
    plot.x_label = "sim time (s)";
    plot.y_label = "step time (µs)";
    plot.log_y = true;  // the body of the distribution and the rare long steps both stay visible
    plot.max_points_per_line = o.max_points_per_line;
    plot.lines.push_back(line("", c.step_t, c.step_time_us, 0));
    plot.lines.back().width_px = 1;
    const double p50 = quantile(c.step_time_us, 0.5), p99 = quantile(c.step_time_us, 0.99);
    if (std::isfinite(p99)) plot.refs.push_back(svg::RefLine{false, p99, "p99 " + fmt(p99, 1) + " µs", "#d62728"});
    p.plot(plot, "p50 " + fmt(p50, 1) + " µs, p99 " + fmt(p99, 1) + " µs over " +
                     std::to_string(c.step_time_us.size()) + " steps (min/max kept when down-sampled).");
  }
  // round-trip latency per endpoint
  for (std::size_t i = 0; i < c.endpoints.size(); ++i) {
    const EndpointSeries& e = c.endpoints[i];
    double deadline_ms = nan_v;
    if (c.scenario)
      for (const auto& ec : c.scenario->endpoints)
        if (ec.name == e.name) deadline_ms = static_cast<double>(ec.deadline_ns) * 1e-6;
    svg::Plot plot;
    plot.title = "Round trip: " + e.name;
    plot.x_label = "publish → reply (µs)";
    plot.y_label = "steps";
    plot.log_y = true;
    std::string note;
    if (e.round_trip_us.empty()) {
      note = "No replies on time.";
    } else {
      std::vector<double> v = e.round_trip_us;
      std::sort(v.begin(), v.end());
      const double lo = v.front(), max = v.back();
      const double q999 = v[static_cast<std::size_t>(0.999 * static_cast<double>(v.size() - 1))];
      // a long tail would squash the body of the histogram: it goes into an overflow count
      double hi = max > 2 * q999 && q999 > lo ? q999 * 1.2 : max;
      if (hi <= lo) hi = lo + 1;
      const int bins = 50;
      svg::Bars b;
      b.label = "";
      b.color = svg::palette(i);
      const double w = (hi - lo) / bins;
      for (int k = 0; k <= bins; ++k) b.edges.push_back(lo + w * k);
      b.counts.assign(bins, 0);
      std::size_t over = 0;
      for (double x : v) {
        if (x > hi) {
          ++over;
          continue;
        }
        b.counts[std::min<std::size_t>(bins - 1, static_cast<std::size_t>((x - lo) / w))] += 1;
      }
      plot.bars.push_back(std::move(b));
      if (over) {
        // the long tail past the body: one red bar right of it, so an outlier is never hidden
        svg::Bars tail;
        tail.label = std::to_string(over) + " above " + fmt(hi, 1) + " µs (max " + fmt(max, 1) + " µs)";
        tail.color = "#d62728";
        tail.edges = {hi + w, hi + 3 * w};
        tail.counts = {static_cast<double>(over)};
        plot.bars.push_back(std::move(tail));
      }
      plot.min_span_x = 1;
      if (std::isfinite(deadline_ms) && deadline_ms * 1e3 <= hi * 1.5)
        plot.refs.push_back(svg::RefLine{true, deadline_ms * 1e3, "deadline", "#d62728"});
      note = std::to_string(v.size()) + " replies on time: p50 " + fmt(v[v.size() / 2], 1) + " µs, p99 " +
             fmt(v[static_cast<std::size_t>(0.99 * static_cast<double>(v.size() - 1))], 1) + " µs, max " + fmt(max, 1) +
             " µs";
      if (over) note += "; " + std::to_string(over) + " above " + fmt(hi, 1) + " µs drawn as the red bar on the right";
      note += ".";
    }
    if (std::isfinite(deadline_ms)) note += " Deadline " + fmt(deadline_ms, 3) + " ms.";
    if (e.timeouts || e.faults)
      note += " " + std::to_string(e.timeouts) + " timeouts, " + std::to_string(e.faults) + " faults.";
    p.plot(plot, esc(note));
  }
  {
    svg::Plot plot;
    plot.title = "Deadline misses (cumulative)";
    plot.x_label = "sim time (s)";
    plot.y_label = "missed steps";
    plot.max_points_per_line = o.max_points_per_line;
    std::uint64_t total = 0, most = 0;
    for (std::size_t i = 0; i < c.endpoints.size(); ++i) {
      const EndpointSeries& e = c.endpoints[i];
      total += e.timeouts + e.faults;
      most = std::max(most, std::max(e.timeouts, e.faults));
      plot.lines.push_back(line(e.name + " timeouts", e.t, e.cum_timeouts, i * 2));
      if (e.faults) plot.lines.push_back(line(e.name + " faults", e.t, e.cum_faults, i * 2 + 1, true));
    }
    plot.y_min = 0;
    plot.y_max = std::max(1.0, static_cast<double>(most) * 1.08);
    p.plot(plot, total == 0 ? "No deadline was missed."
                            : std::to_string(total) + " missed steps in all (timeouts and faults).");
  }
  p.add("</div>");
}

// the hidden truth a `stand_in` endpoint knew for processor `proc`'s vehicle (its first
// body), from the session summary; null without one
const json* hidden_truth_for(const Collected& c, const std::string& proc) {
  if (!c.summary || !c.summary->contains("feedback") || !c.summary->contains("endpoints")) return nullptr;
  std::string vehicle;
  for (const json& f : (*c.summary)["feedback"])
    if (f.is_object() && f.value("name", "") == proc) vehicle = f.value("vehicle", "");
  if (vehicle.empty()) return nullptr;
  for (const json& e : (*c.summary)["endpoints"])
    if (e.is_object() && e.contains("hidden_truth") && e["hidden_truth"].is_object())
      for (const auto& [body, values] : e["hidden_truth"].items())
        if (body.rfind(vehicle + ".", 0) == 0 && values.is_object()) return &values;
  return nullptr;
}

void feedback_section(Page& p, const Collected& c, const ReportOptions& o) {
  p.add("<h2>Feedback</h2>");
  if (c.feedback_order.empty()) {
    p.add("<p>No feedback processor recorded corrections or estimates in this session.</p>");
    return;
  }
  // small multiples: one small plot per recorded figure, each on its own axis; a figure
  // with a `<name>_stddev` sibling (an estimate and its standard deviation) gets a ±σ band
  std::vector<std::string> procs;
  for (const std::string& key : c.feedback_order) {
    const std::string proc = key.substr(0, key.find('\x1f'));
    if (std::find(procs.begin(), procs.end(), proc) == procs.end()) procs.push_back(proc);
  }
  for (const std::string& proc : procs) {
    const json* truth = hidden_truth_for(c, proc);
    p.add("<h3>" + esc(proc) + "</h3><div class=\"plots\">");
    std::size_t color = 0;
    for (const std::string& key : c.feedback_order) {
      const auto sep = key.find('\x1f');
      const std::string field = key.substr(sep + 1);
      if (key.substr(0, sep) != proc) continue;
      if (field.size() > 7 && field.ends_with("_stddev") && c.feedback.count(key.substr(0, key.size() - 7)))
        continue;  // drawn as its estimate's band
      if (field.size() > 11 && field.ends_with("_identified") && c.feedback.count(key.substr(0, key.size() - 11)))
        continue;  // said in its estimate's note
      svg::Plot plot;
      plot.title = proc + ": " + field;
      plot.x_label = "sim time (s)";
      plot.y_label = field;
      plot.width_px = 320;
      plot.height_px = 210;
      plot.max_points_per_line = std::min<std::size_t>(o.max_points_per_line, 1000);
      plot.lines.push_back(line("", c.feedback_t, c.feedback.at(key), color++));
      const auto sigma = c.feedback.find(key + "_stddev");
      std::string note;
      if (sigma != c.feedback.end()) {
        plot.lines.back().band = sigma->second;
        plot.lines.back().label = "estimate ±σ";
        if (!sigma->second.empty() && !c.feedback.at(key).empty())
          note = "final " + esc(cell(c.feedback.at(key).back())) + " ± " + esc(cell(sigma->second.back()));
      }
      if (truth && truth->contains(field) && (*truth)[field].is_number()) {
        // the stand-in's hidden value, where the session had one (a `stand_in` endpoint)
        const double t = (*truth)[field].get<double>();
        plot.refs.push_back(svg::RefLine{false, t, "hidden truth", "#b03030"});
        note += std::string(note.empty() ? "" : "; ") + "hidden truth " + esc(cell(t));
      }
      const auto identified = c.feedback.find(key + "_identified");
      if (identified != c.feedback.end() && !identified->second.empty())
        note += std::string(note.empty() ? "" : "; ") +
                (identified->second.back() > 0.5 ? "identified by the data" : "not identified (docs/feedback.md)");
      p.plot(plot, note);
    }
    p.add("</div>");
  }
}

void events_section(Page& p, const Collected& c, const ReportOptions& o) {
  p.add("<h2>Events</h2>");
  if (c.events.empty()) {
    p.add("<p>No events (misses, faults, aborts, firmware log lines) were recorded.</p>");
    return;
  }
  p.add("<table><tr><th>time (s)</th><th>level</th><th>source</th><th>message</th></tr>");
  std::size_t shown = 0;
  for (const EventRow& e : c.events) {
    if (shown++ >= o.max_events) break;
    const std::string lvl = level_name(e.level);
    p.add("<tr><td class=\"n\">" + fmt(e.t_s, 3) + "</td><td class=\"lvl-" + esc(lvl) + "\">" + esc(lvl) + "</td><td>" +
          esc(e.name) + "</td><td>" + esc(e.message) + "</td></tr>");
  }
  p.add("</table>");
  if (c.events.size() > o.max_events)
    p.add("<p>… and " + std::to_string(c.events.size() - o.max_events) + " more (tether info lists the count).</p>");
}

std::string utc(std::uint64_t ns) {
  if (ns == 0) return "";
  const std::time_t t = static_cast<std::time_t>(ns / 1'000'000'000ULL);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

// `tether report A B`: A's and B's figures side by side, then their series overlaid (A solid,
// B dashed), so a change (new firmware, another seed, a tuned gain) shows at a glance
void comparison_section(Page& p, const Collected& a, const Collected& b, const ReportOptions& o) {
  p.add("<h2>Comparison: A and B</h2><p>A: <code>" + esc(a.path) + "</code><br>B: <code>" + esc(b.path) +
        "</code></p><table><tr><th></th><th>A</th><th>B</th></tr>");
  auto row = [&](const std::string& k, const std::string& va, const std::string& vb) {
    p.add("<tr><th>" + esc(k) + "</th><td>" + va + "</td><td>" + vb + "</td></tr>");
  };
  auto field = [](const Collected& c, const char* k) {
    return c.summary && c.summary->contains(k) ? esc(cell((*c.summary)[k])) : std::string("&ndash;");
  };
  row("scenario", esc(a.scenario ? a.scenario->name : "?"), esc(b.scenario ? b.scenario->name : "?"));
  for (const char* k : {"outcome", "verdict", "steps", "sim_time_s", "state_hash"}) row(k, field(a, k), field(b, k));
  row("step time p50 / p99",
      fmt(quantile(a.step_time_us, 0.5), 1) + " / " + fmt(quantile(a.step_time_us, 0.99), 1) + " µs",
      fmt(quantile(b.step_time_us, 0.5), 1) + " / " + fmt(quantile(b.step_time_us, 0.99), 1) + " µs");
  for (const EndpointSeries& ea : a.endpoints)
    for (const EndpointSeries& eb : b.endpoints)
      if (ea.name == eb.name)
        row("endpoint " + ea.name + ": fresh / misses",
            std::to_string(ea.fresh) + " / " + std::to_string(ea.timeouts + ea.faults),
            std::to_string(eb.fresh) + " / " + std::to_string(eb.timeouts + eb.faults));
  for (const VehicleSeries& va : a.vehicles)
    for (const VehicleSeries& vb : b.vehicles)
      if (va.name == vb.name && !va.t.empty() && !vb.t.empty()) {
        if (va.has_depth)
          row(va.name + ": final depth", fmt(va.depth.back(), 3) + " m", fmt(vb.depth.back(), 3) + " m");
        row(va.name + ": final heading", fmt(va.heading.back(), 1) + "°", fmt(vb.heading.back(), 1) + "°");
      }
  p.add("</table><div class=\"plots\">");
  // the same series of both runs on one axis: A solid, B dashed, in the same colour
  auto overlay = [&](const std::string& title, const std::string& unit, bool invert, auto&& pick) {
    svg::Plot plot;
    plot.title = title;
    plot.x_label = "sim time (s)";
    plot.y_label = unit;
    plot.invert_y = invert;
    plot.max_points_per_line = o.max_points_per_line;
    std::size_t color = 0;
    for (const VehicleSeries& va : a.vehicles)
      for (const VehicleSeries& vb : b.vehicles)
        if (va.name == vb.name) {
          auto [xa, ya] = pick(va);
          auto [xb, yb] = pick(vb);
          plot.lines.push_back(line(va.name + " A", std::move(xa), std::move(ya), color));
          plot.lines.push_back(line(va.name + " B", std::move(xb), std::move(yb), color++, true));
        }
    if (!plot.lines.empty()) p.plot(plot);
  };
  const bool water = a.vehicles.empty() || a.vehicles.front().has_depth;
  overlay(water ? "Depth over time, A and B" : "Height over time, A and B", water ? "depth (m)" : "z (m)", water,
          [&](const VehicleSeries& v) { return std::pair(v.t, water ? v.depth : v.z); });
  // a heading line breaks where it wraps (360 to 0) instead of crossing the plot
  overlay("Heading over time, A and B", "heading (° from north)", false,
          [](const VehicleSeries& v) { return std::pair(break_wraps_x(v.t, v.heading), break_wraps(v.heading)); });
  overlay("Speed over time, A and B", "speed (m/s)", false,
          [](const VehicleSeries& v) { return std::pair(v.t, v.speed); });
  {
    svg::Plot plot;
    plot.title = "Step time, A and B";
    plot.x_label = "sim time (s)";
    plot.y_label = "step time (µs)";
    plot.log_y = true;
    plot.max_points_per_line = o.max_points_per_line;
    plot.lines.push_back(line("A", a.step_t, a.step_time_us, 0));
    plot.lines.push_back(line("B", b.step_t, b.step_time_us, 1, true));
    p.plot(plot);
  }
  p.add("</div>");
}

std::string page(const Collected& c, const ReportOptions& o, const Collected* other = nullptr) {
  Page p;
  const std::string name = c.scenario ? c.scenario->name : (c.meta.count("scenario") ? c.meta.at("scenario") : "?");
  p.add(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>Tether report: " +
      esc(name) + "</title><style>" + style + "</style></head><body>\n");
  p.add("<h1>Tether session report: " + esc(name) + "</h1>");
  const double period_s = static_cast<double>(c.period_ns) * 1e-9;
  p.add("<p class=\"meta\"><span>recording <code>" + esc(c.path) + "</code> (" +
        fmt_bytes(static_cast<double>(c.file_size)) + ")</span>");
  if (c.created_ns) p.add("<span>recorded " + esc(utc(c.created_ns)) + "</span>");
  p.add("<span>" + std::to_string(c.steps) + " steps");
  if (c.steps) p.add(" (" + std::to_string(c.first_step) + "–" + std::to_string(c.last_step) + ")");
  p.add(", " + fmt(static_cast<double>(c.steps) * period_s, 2) + " s at " + fmt(period_s * 1e3, 3) + " ms</span>");
  p.add("<span>" + std::to_string(c.keyframes) + " keyframes</span>");
  if (c.meta.count("seed")) p.add("<span>seed " + esc(c.meta.at("seed")) + "</span>");
  p.add("</p>\n");

  // what the reader of the report must know first
  if (!c.summary)
    p.add("<div class=\"banner bad\"><b>Session did not finish (truncated).</b> The recording ends after step " +
          std::to_string(c.last_step) + (c.steps ? "" : " (no complete step)") + "; there is no session summary." +
          (c.truncation.empty() ? "" : " Reader: " + esc(c.truncation)) +
          " <code>tether replay --verify</code> still verifies the steps it holds.</div>");
  else if (c.truncated)
    p.add("<div class=\"banner warn\"><b>The file was cut short</b> after the summary: " + esc(c.truncation) +
          "</div>");
  else if (jstr(*c.summary, "outcome") == "aborted")
    p.add("<div class=\"banner bad\"><b>Session aborted:</b> " + esc(jstr(*c.summary, "reason")) + "</div>");
  if (c.step_gaps)
    p.add("<div class=\"banner warn\">Step records jump " + std::to_string(c.step_gaps) +
          " times (the recorder dropped steps when its queue was full); replay stops at the first gap.</div>");
  if (c.bad_step_records)
    p.add("<div class=\"banner warn\">" + std::to_string(c.bad_step_records) +
          " step records could not be decoded (written by another format version?).</div>");
  if (!c.scenario_error.empty())
    p.add(
        "<div class=\"banner warn\">The recorded scenario does not parse with this build; names and units "
        "may be missing: " +
        esc(c.scenario_error) + "</div>");

  if (other) comparison_section(p, c, *other, o);
  summary_section(p, c, o);
  vehicle_section(p, c, o);
  commands_section(p, c, o);
  timing_section(p, c, o);
  feedback_section(p, c, o);
  events_section(p, c, o);

  p.add("<h2>Recording</h2><p>" + fmt_bytes(static_cast<double>(c.file_size)) + " on disk" +
        (c.steps ? ", " + fmt(static_cast<double>(c.file_size) / static_cast<double>(c.steps), 0) + " bytes per step"
                 : std::string()) +
        " (compressed chunks); message bytes below are uncompressed.</p>"
        "<table><tr><th>channel</th><th>messages</th><th>bytes</th></tr>");
  for (const auto& [topic, stats] : c.channels)
    p.add("<tr><td><code>" + esc(topic) + "</code></td><td class=\"n\">" + std::to_string(stats.first) +
          "</td><td class=\"n\">" + std::to_string(stats.second) + "</td></tr>");
  p.add("</table>");
  if (!c.scenario_text.empty())
    p.add("<details><summary>Scenario as recorded</summary><pre>" + esc(c.scenario_text) + "</pre></details>");
  p.add(
      "<footer>Generated by <code>tether report</code>. Time series: drag to zoom, double-click to "
      "reset, hover for values (dygraphs, MIT licence, inlined). Open the recording in Foxglove for 3-D "
      "(docs/recording.md).</footer>\n");
  // the charting library and its stylesheet inlined: the file stays self-contained
  p.add("<style>" + std::string(report_assets::dygraphs_css()) + "</style>\n<script data-lib=\"dygraphs\">" +
        std::string(report_assets::dygraphs_js()) + "</script>\n<script>" + interactive_script +
        "</script>\n</body></html>\n");
  return std::move(p.out);
}

}  // namespace

bool render_report(const std::string& recording_path, std::string& html, std::string* error,
                   const ReportOptions& options) {
  Collected c;
  if (!collect(recording_path, c, error)) return false;
  if (options.compare.empty()) {
    html = page(c, options);
    return true;
  }
  Collected other;
  if (!collect(options.compare, other, error)) return false;
  html = page(c, options, &other);
  return true;
}

bool write_report(const std::string& recording_path, const std::string& html_path, std::string* error,
                  const ReportOptions& options) {
  std::string html;
  if (!render_report(recording_path, html, error, options)) return false;
  // written next to its final name, then renamed: a reader never sees half a report
  const std::string tmp = html_path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(html.data(), static_cast<std::streamsize>(html.size()));
    f.close();
    if (!f) {
      if (error) *error = "cannot write " + html_path;
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      return false;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, html_path, ec);
  if (ec) {
    if (error) *error = "cannot write " + html_path + ": " + ec.message();
    std::filesystem::remove(tmp, ec);
    return false;
  }
  return true;
}

}  // namespace tether::runtime
