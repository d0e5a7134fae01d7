// SPDX-License-Identifier: Apache-2.0
// The page's sensors: every sensor's readings as the firmware was sent them (after noise,
// delay, dropout and faults), grouped by vehicle and part, each quantity on its own axis
// with its unit (docs/devices.md).
#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>

#include "page.hpp"
#include "tether/hal/device_spec.hpp"

namespace tether::runtime::report_detail {

namespace {

// channels of one reading that share a unit, drawn on one plot
struct ChannelGroup {
  const char* title;
  const char* unit;  // the y label
  std::size_t first;
  std::vector<const char*> names;
  bool angle_wraps = false;  // a heading in [0, 2π): the line breaks where it wraps
};

// No default case: a kind added to payloads.h without a line here stops the build, with or
// without TETHER_WERROR (as hal's kind table does)
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wswitch"
// what a sensor kind's reading channels are (docs/devices.md, docs/recording.md)
std::vector<ChannelGroup> channel_groups(hal::DeviceKind kind) {
  switch (kind) {
    case TETHER_KIND_RANGE:
    case TETHER_KIND_SONAR: return {{"distance", "distance (m)", 0, {"distance"}}};
    case TETHER_KIND_ALTIMETER: return {{"altitude", "altitude (m)", 0, {"altitude"}}};
    case TETHER_KIND_DEPTH:
      return {{"depth", "depth (m)", 0, {"depth"}}, {"pressure", "absolute pressure (Pa)", 1, {"pressure"}}};
    case TETHER_KIND_GYRO: return {{"angular rate", "rate (rad/s)", 0, {"wx", "wy", "wz"}}};
    case TETHER_KIND_ACCEL: return {{"specific force", "acceleration (m/s²)", 0, {"ax", "ay", "az"}}};
    case TETHER_KIND_IMU:
      return {{"angular rate", "rate (rad/s)", 0, {"wx", "wy", "wz"}},
              {"specific force", "acceleration (m/s²)", 3, {"ax", "ay", "az"}}};
    case TETHER_KIND_INCLINOMETER: return {{"roll and pitch", "angle (rad)", 0, {"roll", "pitch"}}};
    case TETHER_KIND_COMPASS: return {{"heading", "heading (rad, 0 north)", 0, {"heading"}, true}};
    case TETHER_KIND_DVL:
      return {{"velocity over ground", "velocity (m/s)", 0, {"vx", "vy", "vz"}},
              {"altitude", "altitude (m)", 3, {"altitude"}}};
    case TETHER_KIND_GPS:
      return {{"position", "position (m)", 0, {"x", "y", "z"}}, {"velocity", "velocity (m/s)", 3, {"vx", "vy"}}};
    case TETHER_KIND_CONTACT: return {{"contact force", "force (N)", 0, {"force"}}};
    case TETHER_KIND_TENSION: return {{"load", "force (N)", 0, {"tension", "fx", "fy", "fz"}}};
    case TETHER_KIND_ENCODER:
      return {{"position", "angle (rad) or travel (m)", 0, {"position"}}, {"rate", "rate (rad/s or m/s)", 1, {"rate"}}};
    case TETHER_KIND_NONE:
    case TETHER_KIND_CLOCK:
    case TETHER_KIND_THRUSTER:
    case TETHER_KIND_DC_MOTOR:
    case TETHER_KIND_FIN:
    case TETHER_KIND_SERVO:
    case TETHER_KIND_WHEEL_DRIVE: break;
  }
  return {};
}
#pragma GCC diagnostic pop

// at most this many samples in a run: drawn as dots
constexpr std::size_t sparse_samples = 60;
// a channel that changes faster than the plot can show: this many means with their envelopes
constexpr std::size_t envelope_buckets = 150;

// channel i of group g as a line; an envelope (mean, least to most) when it chatters
svg::Line channel_line(const SensorSeries& s, const ChannelGroup& g, std::size_t i, bool legend, bool* enveloped) {
  const std::vector<double>& y = s.v[g.first + i];
  const std::string label = legend ? g.names[i] : "";
  svg::Line l;
  if (g.angle_wraps) {
    // break_wraps works in degrees: a jump of more than half a turn is a wrap
    std::vector<double> deg(y.size());
    for (std::size_t k = 0; k < y.size(); ++k) deg[k] = y[k] * 180.0 / std::numbers::pi;
    std::vector<double> rad = break_wraps(deg);
    for (double& v : rad) v *= std::numbers::pi / 180.0;
    l = line(label, break_wraps_x(s.t, deg), std::move(rad), i);
  } else {
    l = line(label, s.t, y, i);
  }
  l.width_px = 1.2;
  // a sensor that sampled a few times (a GPS fix only at the surface): dots, seen alone
  l.dots = s.t.size() <= sparse_samples;
  *enveloped = svg::make_envelope(l, envelope_buckets);
  return l;
}

svg::Plot small_plot(std::string title, const char* unit, const std::vector<double>& run_t, const ReportOptions& o) {
  svg::Plot plot;
  plot.title = std::move(title);
  plot.x_label = "sim time (s)";
  plot.y_label = unit;
  plot.width_px = 320;
  plot.height_px = 210;
  plot.max_points_per_line = std::min<std::size_t>(o.max_points_per_line, 1000);
  // every sensor on the run's time axis, whatever its rate
  if (!run_t.empty()) {
    plot.x_min = std::floor(run_t.front());
    plot.x_max = std::max(run_t.back(), *plot.x_min + 1e-3);
  }
  return plot;
}

// a group's channels on one plot; when one of them chatters, one plot per channel, each
// its mean in a band from its least to its most (several bands on one axis hide each other)
void group_plots(Page& p, const hal::DeviceSpec& spec, const SensorSeries& s, const ChannelGroup& g,
                 const std::vector<double>& run_t, const ReportOptions& o, const std::string& note) {
  const std::size_t n = std::min(g.names.size(), s.v.size() - std::min(s.v.size(), g.first));
  std::vector<svg::Line> lines;
  std::vector<bool> enveloped(n);
  bool any = false;
  for (std::size_t i = 0; i < n; ++i) {
    bool e = false;
    lines.push_back(channel_line(s, g, i, n > 1, &e));
    enveloped[i] = e;
    any = any || e;
  }
  const std::string period = s.t.size() > 1 ? fmt((s.t.back() - s.t.front()) / envelope_buckets, 2) : "0";
  const std::string band_note = "; mean, band least to most per " + period + " s";
  if (!any) {
    svg::Plot plot = small_plot(spec.name.device + ": " + g.title, g.unit, run_t, o);
    plot.lines = std::move(lines);
    p.plot(plot, esc(note));
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    svg::Plot plot = small_plot(spec.name.device + ": " + (n > 1 ? g.names[i] : g.title), g.unit, run_t, o);
    lines[i].label.clear();  // alone on its plot: the title names it
    plot.lines.push_back(std::move(lines[i]));
    p.plot(plot, esc(note) + (enveloped[i] ? band_note : std::string()));
  }
}

}  // namespace

void sensors_section(Page& p, const Collected& c, const ReportOptions& o) {
  if (!c.scenario || c.sensors.empty()) return;
  p.add(
      "<h2>Sensors</h2><p>What the firmware was sent: each sensor's readings after noise, delay, "
      "dropout and injected faults, at its own rate, in the units of its payload (docs/devices.md). "
      "A gap is a sample with no data.</p>");
  // by vehicle and part, in the order the scenario first names them
  std::vector<std::pair<std::string, std::string>> parts;
  for (const SensorSeries& s : c.sensors) {
    const auto& n = c.scenario->devices[s.device].name;
    if (std::find(parts.begin(), parts.end(), std::make_pair(n.vehicle, n.part)) == parts.end())
      parts.emplace_back(n.vehicle, n.part);
  }
  for (const auto& [vehicle, part] : parts) {
    p.add("<h3>" + esc(vehicle) + " / " + esc(part) + "</h3><div class=\"plots\">");
    for (const SensorSeries& s : c.sensors) {
      const hal::DeviceSpec& spec = c.scenario->devices[s.device];
      if (spec.name.vehicle != vehicle || spec.name.part != part) continue;
      std::string note = std::string(hal::kind_info(spec.kind).name) + ", " + std::to_string(s.t.size()) + " samples";
      if (s.invalid) note += ", " + std::to_string(s.invalid) + " without data";
      if (s.t.empty()) {
        p.card("<p><b>" + esc(spec.name.device) + "</b></p>", esc(note) + ": no reading was recorded");
        continue;
      }
      for (const ChannelGroup& g : channel_groups(spec.kind)) group_plots(p, spec, s, g, c.step_t, o, note);
    }
    p.add("</div>");
  }
}

}  // namespace tether::runtime::report_detail
