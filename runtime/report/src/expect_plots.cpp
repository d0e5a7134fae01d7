// SPDX-License-Identifier: Apache-2.0
// Each expectation on its own plot: the quantity it judged over time, the band or limit it
// had to keep, the window it had to keep it in, and — for one that failed — a red line at its
// first failing step. Drawn for the quantities the recording holds a series of (a vehicle's
// pose figures, a sensor's channel, a feedback processor's figure).
#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "page.hpp"
#include "tether/scenario/expectation_window.hpp"

namespace tether::runtime::report_detail {

namespace {

struct Series {
  std::vector<double> t, y;
  std::string unit;
  bool wraps = false;  // a compass heading in degrees
};

// a vehicle's figure from the vehicles view: only for the vehicle's reference body
std::optional<Series> body_series(const Collected& c, const ExpectationConfig& e) {
  const WorldModel& m = c.scenario->model;
  if (e.body < 0 || static_cast<std::size_t>(e.body) >= m.bodies.size()) return std::nullopt;
  const int vi = m.bodies[static_cast<std::size_t>(e.body)].vehicle;
  if (vi < 0 || static_cast<std::size_t>(vi) >= c.vehicles.size() ||
      m.vehicles[static_cast<std::size_t>(vi)].bodies.front() != e.body)
    return std::nullopt;
  const VehicleSeries& v = c.vehicles[static_cast<std::size_t>(vi)];
  Series s;
  s.t = v.t;
  switch (e.figure) {
    case BodyFigure::x_m: s.y = v.x, s.unit = "x (m)"; break;
    case BodyFigure::y_m: s.y = v.y, s.unit = "y (m)"; break;
    case BodyFigure::z_m: s.y = v.z, s.unit = "z (m)"; break;
    case BodyFigure::depth_m: s.y = v.depth, s.unit = "depth (m)"; break;
    case BodyFigure::heading_deg: s.y = v.heading, s.unit = "heading (°)", s.wraps = true; break;
    case BodyFigure::roll_deg: s.y = v.roll, s.unit = "roll (°)"; break;
    case BodyFigure::pitch_deg: s.y = v.pitch, s.unit = "pitch (°)"; break;
    case BodyFigure::speed_m_s: s.y = v.speed, s.unit = "speed (m/s)"; break;
    case BodyFigure::yaw_deg:
    case BodyFigure::vx_m_s:
    case BodyFigure::vy_m_s:
    case BodyFigure::vz_m_s: return std::nullopt;  // not in the vehicles view
  }
  return s;
}

// the series the expectation judged, where the recording holds one
std::optional<Series> expectation_series(const Collected& c, const ExpectationConfig& e) {
  switch (e.kind) {
    case QuantityKind::body: return body_series(c, e);
    case QuantityKind::device:
      for (const SensorSeries& s : c.sensors)
        if (static_cast<int>(s.device) == e.device && static_cast<std::size_t>(e.channel) < s.v.size())
          return Series{s.t, s.v[static_cast<std::size_t>(e.channel)], e.value, false};
      return std::nullopt;
    case QuantityKind::feedback: {
      const auto f = c.feedback.find(e.processor + "\x1f" + e.field);
      if (f == c.feedback.end()) return std::nullopt;
      return Series{c.feedback_t, f->second, e.field, false};
    }
    case QuantityKind::endpoint:
    case QuantityKind::log:
    case QuantityKind::contacts: return std::nullopt;
  }
  return std::nullopt;
}

// the window the condition had to hold in, [from, to] in sim time (the evaluator's)
std::pair<double, double> window(const ExpectationConfig& e, double first, double last) {
  const ExpectWindow w = expectation_window(e, first, last);
  return {w.from_s, w.to_s};
}

// the band (within, between) or the limit (the others) the value had to keep
void draw_condition(svg::Plot& plot, const ExpectationConfig& e, std::pair<double, double> w, const char* color) {
  const bool band = e.op == ExpectOp::within || e.op == ExpectOp::between;
  if (band) {
    const double mid = e.op == ExpectOp::within ? e.b : (e.a + e.b) / 2;
    const double half = e.op == ExpectOp::within ? e.a : std::abs(e.b - e.a) / 2;
    // at_end: a short band at the end, wide enough to see
    const double from = w.first < w.second ? w.first : w.second - std::max(0.02 * w.second, 1e-3);
    svg::Line l = line("allowed", {from, w.second}, {mid, mid}, 2, true);
    l.band = {half, half};
    l.color = color;
    plot.lines.insert(plot.lines.begin(), std::move(l));
  } else if (e.op != ExpectOp::matches) {
    plot.refs.push_back(svg::RefLine{false, e.a, "limit", color});
  }
}

svg::Plot expectation_plot(const Collected& c, const ExpectationConfig& e, const json& x, const Series& s,
                           const ReportOptions& o) {
  const std::string verdict = jstr(x, "verdict");
  const bool failed = verdict == "FAIL";
  svg::Plot plot;
  plot.title = verdict + ": " + e.name;
  plot.x_label = "sim time (s)";
  plot.y_label = s.unit;
  plot.max_points_per_line = o.max_points_per_line;
  const double first = c.step_t.empty() ? 0.0 : c.step_t.front();
  const double last = c.step_t.empty() ? 0.0 : c.step_t.back();
  const std::pair<double, double> w = window(e, first, last);
  draw_condition(plot, e, w, failed ? "#d62728" : "#2ca02c");
  if (s.wraps)
    plot.lines.push_back(line(e.value, break_wraps_x(s.t, s.y), break_wraps(s.y), 0));
  else
    plot.lines.push_back(line(e.value, s.t, s.y, 0));
  plot.lines.back().width_px = 1.8;
  // the window, where it is not the whole run, and the first failing step (one label where
  // they coincide: a value already outside its band when the window opens)
  const bool fail_at = failed && x.contains("first_failing_time_s") && x["first_failing_time_s"].is_number();
  const double fail_t = fail_at ? x["first_failing_time_s"].get<double>() : nan_v;
  const bool fails_at_open = fail_at && std::abs(fail_t - w.first) < 1e-9;
  if (w.first > first + 1e-9 && e.when != ExpectWhen::at_end && !fails_at_open)
    plot.refs.push_back(svg::RefLine{true, w.first, "from " + fmt(w.first, 2) + " s", "#777777"});
  if (w.second < last - 1e-9) plot.refs.push_back(svg::RefLine{true, w.second, fmt(w.second, 2) + " s", "#777777"});
  if (e.when == ExpectWhen::at_end && !fail_at) plot.refs.push_back(svg::RefLine{true, last, "at end", "#777777"});
  if (fail_at)
    plot.refs.push_back(
        svg::RefLine{true, fail_t,
                     (fails_at_open && w.first > first + 1e-9 ? "from " + fmt(w.first, 2) + " s: " : "") +
                         std::string("first failing step ") + jstr(x, "first_failing_step"),
                     "#d62728"});
  return plot;
}

}  // namespace

void expectation_plots(Page& p, const Collected& c, const ReportOptions& o) {
  if (!c.scenario || !c.summary || !c.summary->contains("expectations") || !(*c.summary)["expectations"].is_array())
    return;
  const json& list = (*c.summary)["expectations"];
  const std::vector<ExpectationConfig>& configs = c.scenario->expectations;
  bool any = false;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& x = list[i];
    // the summary lists them in the scenario's order; the name guards a scenario edited since
    const std::string name = jstr(x, "name");
    auto e = i < configs.size() && configs[i].name == name
                 ? configs.begin() + static_cast<std::ptrdiff_t>(i)
                 : std::find_if(configs.begin(), configs.end(), [&](const auto& ec) { return ec.name == name; });
    if (e == configs.end()) continue;
    const std::optional<Series> s = expectation_series(c, *e);
    if (!s || s->t.empty()) continue;
    if (!any) p.add("<div class=\"plots\">");
    any = true;
    std::string note = "<code>" + esc(e->value) + "</code> " + esc(jstr(x, "that")) + ", " + esc(jstr(x, "when"));
    if (x.contains("worst") && x["worst"].is_number())
      note += "; closest to failing: " + fmt(x["worst"].get<double>(), 4);
    // drawn as SVG: the band, the window and the failing step are part of what it shows
    p.card(svg::render(expectation_plot(c, *e, x, *s, o)), note);
  }
  if (any) p.add("</div>");
}

}  // namespace tether::runtime::report_detail
