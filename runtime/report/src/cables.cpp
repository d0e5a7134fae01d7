// SPDX-License-Identifier: Apache-2.0
// The page's cables: each cable as what it is, a chain of segments, drawn from above and from
// the side at a few times of the run, and the tension its load cells measured over time.
#include <algorithm>
#include <cmath>
#include <string_view>
#include <utility>

#include "page.hpp"
#include "tether/hal/device_spec.hpp"

namespace tether::runtime::report_detail {

namespace {

// the cable's shapes in one view: x along, `across` the other axis (y, or depth with `depth`)
svg::Plot shapes_plot(const Collected& c, const CableSeries& cs, bool side, const ReportOptions& o) {
  const bool water = c.scenario && c.scenario->model.water.present;
  const double surface = water ? c.scenario->model.water.surface_z_m : 0.0;
  svg::Plot plot;
  plot.title =
      "cable " + cs.name + (side ? (water ? ": side view (x–depth)" : ": side view (x–z)") : ": plan view (x–y)");
  plot.x_label = "x (m)";
  plot.y_label = side ? (water ? "depth (m)" : "z (m)") : "y (m)";
  plot.invert_y = side && water;
  plot.equal_aspect = !side;
  plot.min_span_x = plot.min_span_y = 1.0;
  plot.max_points_per_line = o.max_points_per_line;
  for (std::size_t k = 0; k < cs.t.size(); ++k) {
    std::vector<double> across = side ? cs.z[k] : cs.y[k];
    if (side && water)
      for (double& v : across) v = surface - v;
    svg::Line l = line("t = " + fmt(cs.t[k], 1) + " s", cs.x[k], std::move(across), k);
    l.path = true;
    l.width_px = k + 1 == cs.t.size() ? 2.5 : 1.2;  // the last shape stands out
    plot.lines.push_back(std::move(l));
  }
  if (side && water) plot.refs.push_back(svg::RefLine{false, 0.0, "surface", "#4a7bd0"});
  return plot;
}

// a load cell measures this cable: it sits on one of its segments, or on a joint with one of
// its segments on either side (the joints that tie its ends to the world or a vehicle)
bool measures(const CableSeries& cs, const WorldModel& model, const hal::DeviceSpec& spec) {
  if (spec.name.vehicle == cs.name) return true;
  const auto* p = std::get_if<hal::TensionParams>(&spec.params);
  if (!p || p->joint < 0 || static_cast<std::size_t>(p->joint) >= model.joints.size()) return false;
  const JointModel& j = model.joints[static_cast<std::size_t>(p->joint)];
  const auto on_cable = [&](int body) {
    return body >= 0 && static_cast<std::size_t>(body) < model.bodies.size() &&
           model.bodies[static_cast<std::size_t>(body)].vehicle == cs.vehicle;
  };
  return on_cable(j.body_a) || on_cable(j.body_b);
}

// the tension of the cable's load cells over time (channel 0: the magnitude)
void tension_plot(Page& p, const Collected& c, const CableSeries& cs, const ReportOptions& o) {
  svg::Plot plot;
  plot.title = "cable " + cs.name + ": tension";
  plot.x_label = "sim time (s)";
  plot.y_label = "tension (N)";
  plot.max_points_per_line = o.max_points_per_line;
  std::size_t color = 0;
  for (const SensorSeries& s : c.sensors) {
    const hal::DeviceSpec& spec = c.scenario->devices[s.device];
    if (spec.kind != TETHER_KIND_TENSION || s.v.empty() || !measures(cs, c.scenario->model, spec)) continue;
    plot.lines.push_back(line(spec.name.full(), s.t, s.v[0], color++));
  }
  if (plot.lines.empty()) return;
  p.plot(plot, "What the load cells on this cable and its ends measured (after their noise).");
}

}  // namespace

void cables_section(Page& p, const Collected& c, const ReportOptions& o) {
  for (const CableSeries& cs : c.cables) {
    p.add("<h3>cable " + esc(cs.name) + "</h3><div class=\"plots\">");
    if (cs.t.empty()) {
      p.add("<p>This recording has no world states (/tether/state), so the cable's shape is not drawn.</p>");
    } else {
      p.plot(shapes_plot(c, cs, false, o), "Its segments' centres at " + std::to_string(cs.t.size()) +
                                               " times of the run; the thickest line is the last.");
      p.plot(shapes_plot(c, cs, true, o));
    }
    tension_plot(p, c, cs, o);
    p.add("</div>");
  }
}

}  // namespace tether::runtime::report_detail
