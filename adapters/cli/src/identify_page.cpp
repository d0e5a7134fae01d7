// SPDX-License-Identifier: Apache-2.0
// `tether identify --report fit.html`: the fit on one self-contained page (SVG only, nothing
// fetched): the estimates and the combinations the data pin down, the open-loop predictions
// of both models against the held-out (or validation) measurements, and the delay profile.
#include "identify_page.hpp"

#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "tether/report/svg_plot.hpp"

namespace tether::cli {

namespace {

namespace svg = runtime::svg;

std::string num(double v, const char* format = "%.6g") {
  char buf[48];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

svg::Line series(std::string label, const std::vector<double>& t, std::vector<double> y, std::size_t color) {
  svg::Line l;
  l.label = std::move(label);
  l.x = t;
  l.y = std::move(y);
  l.color = svg::palette(color);
  return l;
}

// one axis (0 x, 1 y, 2 z; z as depth when the scenario has water) of the predictions
svg::Plot axis_plot(const identify::Trial& trial, const identify::Prediction& p, int axis) {
  const bool water = trial.scenario.model.water.present;
  const double surface = trial.scenario.model.water.surface_z_m;
  const auto pick = [&](const std::vector<runtime::Vec3>& v) {
    std::vector<double> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = axis == 2 && water ? surface - v[i].z() : v[i][axis];
    return out;
  };
  svg::Plot plot;
  const char* names[3] = {"x (m)", "y (m)", water ? "depth (m)" : "z (m)"};
  plot.title = std::string("open loop from measured states: ") + names[axis];
  plot.x_label = "time in the trial (s)";
  plot.y_label = names[axis];
  plot.invert_y = axis == 2 && water;
  svg::Line measured = series("measured", p.t, pick(p.measured), 2);
  measured.dots = true;
  measured.width_px = 1.6;
  measured.opacity = 0.6;
  plot.lines.push_back(std::move(measured));
  svg::Line uncorrected = series("uncorrected model", p.t, pick(p.uncorrected), 1);
  uncorrected.dashed = true;
  plot.lines.push_back(std::move(uncorrected));
  plot.lines.push_back(series("fitted model", p.t, pick(p.fitted), 0));
  plot.lines.back().width_px = 2;
  return plot;
}

std::string esc(const std::string& s) { return svg::escape(s); }

void estimates_table(std::string& out, const identify::FitResult& fit) {
  out +=
      "<h2>Estimates</h2><table><tr><th>parameter</th><th>value</th><th>&sigma;</th><th>prior &sigma;</th>"
      "<th>scenario's</th><th>identified</th></tr>";
  for (const identify::ParameterEstimate& p : fit.parameters) {
    if (!p.estimated) continue;
    out += "<tr><td>" + esc(p.name) + "</td><td class=n>" + num(p.value) + "</td><td class=n>" + num(p.stddev, "%.3g") +
           "</td><td class=n>" + num(p.prior_stddev, "%.3g") + "</td><td class=n>" + num(p.nominal) + "</td><td>" +
           (p.identified ? "yes" : "<b>no</b>") + "</td></tr>";
  }
  out +=
      "</table><h2>Combinations the data pin down</h2><table><tr><th>combination</th><th>value</th>"
      "<th>&sigma;</th><th>identified</th><th>meaning</th></tr>";
  for (const identify::Combination& c : fit.combinations)
    out += "<tr><td>" + esc(c.name) + "</td><td class=n>" + num(c.value) + "</td><td class=n>" + num(c.stddev, "%.3g") +
           "</td><td>" + (c.identified ? "yes" : "<b>no</b>") + "</td><td>" + esc(c.meaning) + "</td></tr>";
  out += "</table>";
  for (const identify::WeakDirection& w : fit.weak) {
    out += "<p class=weak>Weak direction (&sigma; shrunk only " + num(w.shrink, "%.2g") + "&times;):";
    for (const auto& [n, l] : w.loadings) {
      out += ' ';
      out += num(l, "%+.2f");
      out += ' ';
      out += esc(n);
    }
    out += ". Strengthen with: " + esc(w.advice) + "</p>";
  }
}

}  // namespace

std::string identify_page(const identify::Trial& trial, const identify::FitResult& fit,
                          const std::optional<identify::Prediction>& prediction, const std::string& fit_yaml) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>tether identify: " + esc(trial.path) +
      "</title><style>body{font-family:system-ui,sans-serif;margin:1.5em;color:#1c2330;background:#f6f7f9}"
      "table{border-collapse:collapse;font-size:14px;background:#fff}td,th{border:1px solid #dde;padding:3px 8px;"
      "text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}.card{display:inline-block;"
      "background:#fff;border:1px solid #dde;border-radius:4px;margin:.4em;padding:.3em}pre{background:#fff;"
      "border:1px solid #dde;padding:.6em;font-size:12px}.weak{color:#9a6700}</style></head><body>\n";
  out += "<h1>Fit of " + esc(trial.scenario.model.vehicles[static_cast<std::size_t>(trial.vehicle)].name) + "</h1>";
  out += "<p>trial <code>" + esc(trial.path) + "</code>: " + std::to_string(trial.samples.size()) + " steps, " +
         std::to_string(trial.measured) + " measured; " + std::to_string(fit.windows) + " windows, " +
         std::to_string(fit.residuals) + " residuals, noise scale " + num(fit.noise_scale, "%.3g") +
         ", residual correlation " + num(fit.residual_correlation, "%.2f") + ", the scatter of " +
         std::to_string(fit.blocks) + " blocks of " + num(fit.block_s, "%.0f") + " s widening sigma up to " +
         num(fit.misfit_widening, "%.2f") + " times, " + std::to_string(fit.iterations) + " iterations" +
         (fit.converged ? "" : " (<b>not converged</b>)") + ", " + num(fit.seconds, "%.2f") + " s.</p>";
  out += "<h2>Prediction</h2>";
  if (!prediction || prediction->segments == 0) {
    out +=
        "<p>No held-out data was predicted (give <code>--holdout FRACTION</code> or <code>--validate REC</code>).</p>";
  } else {
    const identify::Prediction& p = *prediction;
    out += "<p>" + std::to_string(p.segments) + (p.segments == 1 ? " segment of " : " segments of ") +
           num(p.horizon_s, "%.3g") +
           " s, each started from a measured state and run open loop on the recorded commands: at the segments' "
           "ends the fitted model is off by " +
           num(p.fitted_m, "%.4f") + " m, the uncorrected model (the scenario's) by " + num(p.uncorrected_m, "%.4f") +
           " m (RMS over every step " + num(p.fitted_rms_m, "%.4f") + " vs " + num(p.uncorrected_rms_m, "%.4f") +
           " m): <b>" + num(p.gain(), "%.1f") + "&times; better</b>.</p>";
    for (int axis = 0; axis < 3; ++axis) out += "<div class=card>" + svg::render(axis_plot(trial, p, axis)) + "</div>";
  }
  estimates_table(out, fit);
  if (fit.delay_costs.size() > 1) {
    svg::Plot plot;
    plot.title = "measurement delay: cost per window, refitted at each";
    plot.x_label = "delay (steps)";
    plot.y_label = "cost per window";
    std::vector<double> d, c;
    for (const auto& [steps, cost] : fit.delay_costs) d.push_back(steps), c.push_back(cost);
    plot.lines.push_back(series("", d, c, 0));
    plot.lines.back().dots = true;
    plot.refs.push_back(svg::RefLine{true, static_cast<double>(fit.delay_steps), "chosen", "#d62728"});
    out += "<div class=card>" + svg::render(plot) + "</div>";
  }
  out += "<h2>The fit as written</h2><pre>" + esc(fit_yaml) + "</pre></body></html>\n";
  return out;
}

}  // namespace tether::cli
