// SPDX-License-Identifier: Apache-2.0
// The report page: the recording read (collect.cpp), then the page assembled from its sections
// (summary.cpp: the summary tables, plots.cpp: the plots, format.cpp: formatting), with the
// stylesheet and the script that draws the time series interactively.
#include "tether/report/report.hpp"

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "collected.hpp"
#include "page.hpp"
#include "tether/recording/write_whole.hpp"

namespace tether::runtime {

namespace report_assets {
std::string_view dygraphs_js();
std::string_view dygraphs_css();
}  // namespace report_assets

namespace {

using report_detail::collect;
using report_detail::Collected;
using report_detail::esc;
using report_detail::fmt;
using report_detail::fmt_bytes;
using report_detail::jstr;
using report_detail::Page;

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
.iplot .dygraph-ylabel{font-size:11px;white-space:nowrap}
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

// Draws each time series with dygraphs in place of its SVG (which stays for printing and
// for readers without scripts); window.tetherPlots lists them for the browser tests.
const char* interactive_script = R"js(
(function () {
  if (typeof Dygraph === "undefined") return;
  const plots = [];
  for (const holder of document.querySelectorAll("div.iplot")) {
    const spec = JSON.parse(holder.querySelector("script[type='application/json']").textContent);
    const inv = spec.invert;  // depth grows downward: draw -v, label v
    // a value may be [y, sigma] (error bars) or [low, mean, high] (an envelope)
    const flip = (v) => (Array.isArray(v) ? (v.length === 3 ? [-v[2], -v[1], -v[0]] : [-v[0], v[1]]) : -v);
    // the times once ({first, step, count} when evenly spaced), a column per series
    const xs = Array.isArray(spec.x) ? spec.x : Array.from({ length: spec.x.count }, (_, i) => spec.x.first + i * spec.x.step);
    const rows = xs.map((x, i) => [x, ...spec.columns.map((c) => c[i])]);
    const data = inv ? rows.map((r) => r.map((v, i) => (i && v !== null ? flip(v) : v))) : rows;
    const fmt = (v) => String(+(inv ? -v : v).toPrecision(6));
    const series = {};
    spec.labels.slice(1).forEach((l, i) => {
      series[l] = { stepPlot: spec.step[i], strokePattern: spec.dashed[i] ? [6, 3] : null,
                    drawPoints: spec.dots[i], strokeWidth: spec.dots[i] ? 0 : 1.5, pointSize: 2 };
    });
    const options = {
      labels: spec.labels, colors: spec.colors, title: spec.title, xlabel: spec.xlabel, ylabel: spec.ylabel,
      series, logscale: spec.log, legend: "always", width: spec.width, height: spec.height, titleHeight: 22,
      errorBars: spec.bars, customBars: !!spec.custom, sigma: 1, fillAlpha: spec.custom ? 0.25 : 0.18,
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

std::string utc(std::uint64_t ns) {
  if (ns == 0) return "";
  const std::time_t t = static_cast<std::time_t>(ns / 1'000'000'000ULL);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
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

  if (other) report_detail::comparison_section(p, c, *other, o);
  report_detail::summary_section(p, c, o);
  report_detail::expectation_plots(p, c, o);
  report_detail::vehicle_section(p, c, o);
  report_detail::cables_section(p, c, o);
  report_detail::sensors_section(p, c, o);
  report_detail::commands_section(p, c, o);
  report_detail::timing_section(p, c, o);
  report_detail::feedback_section(p, c, o);
  report_detail::events_section(p, c, o);

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
      "reset, hover for values (dygraphs, MIT licence, " +
      (o.assets_url.empty() ? std::string("inlined") : "from " + esc(o.assets_url) + "/") +
      "). Open the recording in Foxglove for 3-D (docs/recording.md).</footer>\n");
  if (o.assets_url.empty())  // the charting library and its stylesheet inlined: the file stands alone
    p.add("<style>" + std::string(report_assets::dygraphs_css()) + "</style>\n<script data-lib=\"dygraphs\">" +
          std::string(report_assets::dygraphs_js()) + "</script>\n");
  else  // one copy shared by many reports (a campaign's runs)
    p.add("<link rel=\"stylesheet\" href=\"" + esc(o.assets_url) +
          "/dygraph.min.css\">\n<script data-lib=\"dygraphs\" src=\"" + esc(o.assets_url) +
          "/dygraph.min.js\"></script>\n");
  p.add("<script>" + std::string(interactive_script) + "</script>\n</body></html>\n");
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

namespace {}  // namespace

bool write_report(const std::string& recording_path, const std::string& html_path, std::string* error,
                  const ReportOptions& options) {
  std::string html;
  if (!render_report(recording_path, html, error, options)) return false;
  return write_whole_file(html_path, html, error);
}

bool write_report_assets(const std::string& dir, std::string* error) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    if (error) *error = "cannot create " + dir + ": " + ec.message();
    return false;
  }
  return write_whole_file(dir + "/dygraph.min.js", report_assets::dygraphs_js(), error) &&
         write_whole_file(dir + "/dygraph.min.css", report_assets::dygraphs_css(), error);
}

}  // namespace tether::runtime
