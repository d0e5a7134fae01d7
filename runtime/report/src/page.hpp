// SPDX-License-Identifier: Apache-2.0
// The page as the sections build it (internal to the report room): the formatting helpers,
// Page, and the sections, each defined in the file named above it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tether/report/report.hpp"
#include "tether/report/svg_plot.hpp"
#include "collected.hpp"

namespace tether::runtime::report_detail {

// ---- formatting (format.cpp) ---------------------------------------------------------

std::string fmt(double v, int decimals);
std::string fmt_us(double ns);
std::string fmt_bytes(double b);
double jnum(const json& j, const char* key);
std::string jstr(const json& j, const char* key);
// a JSON value as table text: numbers to 4 significant digits (what a reader can use), an
// object as "key value" pairs, an array as a list; never raw JSON
std::string cell(const json& v);
std::string esc(const std::string& s);
std::string level_name(int level);
// breaks a heading line where it wraps (360 to 0) instead of drawing across the plot
std::vector<double> break_wraps(const std::vector<double>& deg);
// the same time axis with a NaN where break_wraps inserted one
std::vector<double> break_wraps_x(const std::vector<double>& t, const std::vector<double>& deg);
svg::Line line(std::string label, std::vector<double> x, std::vector<double> y, std::size_t color, bool dashed = false);
double quantile(std::vector<double> v, double q);
// A time series for dygraphs (zoom by dragging, hover for values, double-click to reset):
// the lines' points on one x axis, each line down-sampled as the SVG draws it, null where a
// line has no point. Empty when the plot is not a time series (plan views, histograms).
std::string interactive_spec(const svg::Plot& plot);

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

// ---- the summary and its tables (summary.cpp) ----------------------------------------

// verdict, expectations, faults, then the run's figures and its endpoints', processors' and
// vehicles' tables
void summary_section(Page& p, const Collected& c, const ReportOptions& o);
void events_section(Page& p, const Collected& c, const ReportOptions& o);

// ---- each expectation over time, its band and first failing step (expect_plots.cpp) ----

void expectation_plots(Page& p, const Collected& c, const ReportOptions& o);

// ---- each cable's shape at a few times and its tension (cables.cpp) -----------------

void cables_section(Page& p, const Collected& c, const ReportOptions& o);

// ---- every sensor's readings, by vehicle and part (sensors.cpp) ----------------------

void sensors_section(Page& p, const Collected& c, const ReportOptions& o);

// ---- the plots (plots.cpp) -----------------------------------------------------------

void faults_section(Page& p, const Collected& c, const ReportOptions& o);
void vehicle_section(Page& p, const Collected& c, const ReportOptions& o);
void commands_section(Page& p, const Collected& c, const ReportOptions& o);
void timing_section(Page& p, const Collected& c, const ReportOptions& o);
void feedback_section(Page& p, const Collected& c, const ReportOptions& o);
void comparison_section(Page& p, const Collected& a, const Collected& b, const ReportOptions& o);

}  // namespace tether::runtime::report_detail
