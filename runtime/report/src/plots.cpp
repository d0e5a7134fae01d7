// SPDX-License-Identifier: Apache-2.0
// The page's plots: the faults timeline, each vehicle's paths and attitude, each endpoint's
// commands, timing, the feedback processors' figures, and two recordings compared.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <utility>

#include "page.hpp"

namespace tether::runtime::report_detail {

namespace {

// a chattering command is drawn as this many means with their envelopes: few enough that
// each mean takes many samples (a command flipping every step averages to a smooth line;
// 500 buckets of 3 samples still zigzagged), many enough for the plot's 550 pixels
constexpr std::size_t envelope_buckets = 150;

// the time one envelope point stands for, for the plot's title ("0.03 s")
std::string envelope_period(const std::vector<double>& t) {
  if (t.size() < 2) return "point";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g s", (t.back() - t.front()) / static_cast<double>(envelope_buckets));
  return buf;
}

}  // namespace

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

namespace {

// measurements are a scatter under the lines: noisy, and absent on missed steps
svg::Line measured_dots(std::vector<double> x, std::vector<double> y, bool path) {
  svg::Line l = line("measured", std::move(x), std::move(y), 2);
  l.dots = true;
  l.path = path;
  l.width_px = 1.6;
  l.opacity = 0.5;
  return l;
}

// the vehicle's path seen from above: actual, projected and measured, start and end, and
// every cable's shape at the end of the run
void plan_view(Page& p, const Collected& c, const VehicleSeries& v, const ReportOptions& o) {
  const bool measured = !v.mt.empty();
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
  for (const CableSeries& cs : c.cables) {
    if (cs.t.empty()) continue;
    svg::Line l = line("cable " + cs.name + " at the end", cs.x.back(), cs.y.back(), 7);
    l.path = true;
    l.width_px = 2.5;
    plot.lines.push_back(std::move(l));
  }
  p.plot(plot);
}

// the path seen from the side: depth (or height) along x
void side_view(Page& p, const Collected& c, const VehicleSeries& v, const ReportOptions& o) {
  const bool water = v.has_depth;
  const bool measured = !v.mt.empty();
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

// depth (or height) over time, with the depth a controller or a goal asked for
void depth_over_time(Page& p, const Collected& c, const VehicleSeries& v, const ReportOptions& o) {
  const bool water = v.has_depth;
  const bool measured = !v.mt.empty();
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
          plot.refs.push_back(
              svg::RefLine{false, e["target_depth_m"].get<double>(), "target (" + jstr(e, "name") + ")", "#2ca02c"});
      }
  // the depth the scenario's `goals:` names for this vehicle
  if (water && c.scenario)
    for (const auto& g : c.scenario->goals)
      if (g.depth_m && g.vehicle == v.name) plot.refs.push_back(svg::RefLine{false, *g.depth_m, "goal", "#2ca02c"});
  p.plot(plot);
}

// compass heading over time
void heading_over_time(Page& p, const VehicleSeries& v, const ReportOptions& o) {
  const bool measured = !v.mt.empty();
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

// roll and pitch over time
void attitude_over_time(Page& p, const VehicleSeries& v, const ReportOptions& o) {
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

// speed over time
void speed_over_time(Page& p, const VehicleSeries& v, const ReportOptions& o) {
  svg::Plot plot;
  plot.title = "Speed over time";
  plot.x_label = "sim time (s)";
  plot.y_label = "speed (m/s)";
  plot.max_points_per_line = o.max_points_per_line;
  plot.min_span_y = 0.01;
  plot.lines.push_back(line("", v.t, v.speed, 0));
  p.plot(plot);
}

}  // namespace

void vehicle_section(Page& p, const Collected& c, const ReportOptions& o) {
  p.add("<h2>Vehicles</h2>");
  bool any = false;
  for (const VehicleSeries& v : c.vehicles) {
    if (v.t.empty() && v.mt.empty()) continue;
    // a cable is a chain of segments, not a vehicle: its shape is drawn below
    if (std::any_of(c.cables.begin(), c.cables.end(), [&](const CableSeries& cs) { return cs.name == v.name; }))
      continue;
    any = true;
    p.add("<h3>" + esc(v.name) + "</h3><div class=\"plots\">");
    plan_view(p, c, v, o);
    side_view(p, c, v, o);
    depth_over_time(p, c, v, o);
    heading_over_time(p, v, o);
    attitude_over_time(p, v, o);
    speed_over_time(p, v, o);
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
        // a command that changes faster than the plot can show (a controller that chatters
        // every step) is its mean in a band from its least to its most, never a barcode
        if (svg::make_envelope(cards.back().lines.back(), envelope_buckets) &&
            cards.back().title.find("(mean") == std::string::npos)
          cards.back().title += " (mean; band: least to most per " + envelope_period(e.t) + ")";
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

namespace {

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

}  // namespace

// the combinations the data pinned down by the end (an `estimate` processor that considered
// the added mass: thrust, drags and buoyancy over the effective mass), from the summary
void combinations_table(Page& p, const Collected& c, const std::string& proc) {
  if (!c.summary || !c.summary->contains("feedback") || !(*c.summary)["feedback"].is_array()) return;
  for (const json& f : (*c.summary)["feedback"]) {
    if (!f.is_object() || f.value("name", "") != proc || !f.contains("combinations") || !f["combinations"].is_object())
      continue;
    p.add(
        "<p>Combinations the data pin down, at the end of the run (docs/feedback.md):</p><table><tr><th>"
        "combination</th><th>value</th><th>&sigma;</th></tr>");
    for (const auto& [name, v] : f["combinations"].items())
      p.add("<tr><td>" + esc(name) + "</td><td class=\"n\">" + esc(cell(v.value("value", json()))) +
            "</td><td class=\"n\">" + esc(cell(v.value("stddev", json()))) + "</td></tr>");
    p.add("</table>");
  }
}

// the batch refit of an `estimate` processor (refit_every_s): how many fits of the trial so
// far it took, and why the last that failed could not be made
void refit_note(Page& p, const Collected& c, const std::string& proc) {
  if (!c.summary || !c.summary->contains("feedback") || !(*c.summary)["feedback"].is_array()) return;
  for (const json& f : (*c.summary)["feedback"]) {
    if (!f.is_object() || f.value("name", "") != proc || !f.contains("refits")) continue;
    std::string text =
        "<p>Batch refits of the trial so far (docs/feedback.md, &ldquo;The refit&rdquo;): " + esc(cell(f["refits"])) +
        " taken (the last over " + esc(cell(f.value("refit_windows", json()))) + " windows), " +
        esc(cell(f.value("refit_failures", json()))) + " failed";
    if (f.contains("refit_error") && f["refit_error"].is_string())
      text += " (the last: " + esc(f["refit_error"].get<std::string>()) + ")";
    p.add(text + ".</p>");
  }
}

// the directions the trial left weak (an `estimate` processor's summary), each with the
// manoeuvre that would strengthen it
void weak_directions_list(Page& p, const Collected& c, const std::string& proc) {
  if (!c.summary || !c.summary->contains("feedback") || !(*c.summary)["feedback"].is_array()) return;
  for (const json& f : (*c.summary)["feedback"]) {
    if (!f.is_object() || f.value("name", "") != proc || !f.contains("weak") || !f["weak"].is_array() ||
        f["weak"].empty())
      continue;
    p.add("<p>Directions the trial left weak, and the manoeuvre that would strengthen each:</p><ul>");
    for (const json& w : f["weak"]) {
      if (!w.is_object()) continue;
      std::string loads;
      if (w.contains("loadings") && w["loadings"].is_object())
        for (const auto& [name, l] : w["loadings"].items())
          if (l.is_number()) {
            char num[32];
            std::snprintf(num, sizeof num, "%+.2f ", l.get<double>());
            loads += (loads.empty() ? "" : ", ") + std::string(num) + name;
          }
      char shrink[32];
      std::snprintf(shrink, sizeof shrink, "%.2g", w.value("shrink", 1.0));
      p.add("<li>&sigma; shrunk " + std::string(shrink) + "&times;: " + esc(loads) + " &mdash; " +
            esc(w.value("advice", std::string())) + "</li>");
    }
    p.add("</ul>");
  }
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
    refit_note(p, c, proc);
    combinations_table(p, c, proc);
    weak_directions_list(p, c, proc);
  }
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

}  // namespace tether::runtime::report_detail
