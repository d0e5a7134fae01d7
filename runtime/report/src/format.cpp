// SPDX-License-Identifier: Apache-2.0
// Formatting for the page: numbers, JSON values as table text, series helpers, and a plot's
// data for dygraphs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <tuple>
#include <utility>

#include "tether/recording/json_text.hpp"
#include "page.hpp"

namespace tether::runtime::report_detail {

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

svg::Line line(std::string label, std::vector<double> x, std::vector<double> y, std::size_t color, bool dashed) {
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

namespace {

// a value as dygraphs shows it: six significant digits keep the page small
double digits(double v, int n) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", n, v);
  return std::strtod(buf, nullptr);
}
double six_digits(double v) { return digits(v, 6); }
double nine_digits(double v) { return digits(v, 9); }

// the rows' times: {first, step, count} when they are evenly spaced (to nine digits), else
// the list
json x_column(const json& rows) {
  const std::size_t n = rows.size();
  std::vector<double> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = rows[i][0].get<double>();
  if (n >= 3) {
    const double step = nine_digits((x[n - 1] - x[0]) / static_cast<double>(n - 1));
    bool even = step > 0;
    for (std::size_t i = 0; i < n && even; ++i) even = nine_digits(x[0] + static_cast<double>(i) * step) == x[i];
    if (even) return json{{"first", x[0]}, {"step", step}, {"count", n}};
  }
  return json(x);
}

}  // namespace

std::string interactive_spec(const svg::Plot& plot) {
  if (plot.lines.empty() || !plot.bars.empty() || plot.equal_aspect) return "";
  for (const svg::Line& l : plot.lines)
    if (l.path) return "";
  // one line with a band (an estimate ±σ): dygraphs' error bars, each value [y, σ]
  const bool bars = plot.lines.size() == 1 && plot.lines[0].band.size() >= plot.lines[0].y.size();
  // lines with an envelope (make_envelope): dygraphs' custom bars, each value [low, mean, high]
  // (a line without one gives [y, y, y])
  bool custom = false;
  for (const svg::Line& l : plot.lines) custom = custom || (!l.low.empty() && l.low.size() >= l.y.size());
  if (custom && bars) return "";
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
    // times to nine digits: 0.03, not the product's 0.030000000000000002
    const double t = nine_digits(x);
    if (data.empty() || data.back()[0].get<double>() != t) {
      json row = json::array({t});
      for (std::size_t k = 0; k < plot.lines.size(); ++k) row.push_back(nullptr);
      data.push_back(std::move(row));
    }
    const double y = plot.lines[li].y[i];
    if (!std::isfinite(y)) continue;
    const double sigma = bars ? plot.lines[li].band[i] : 0.0;
    if (custom) {
      const svg::Line& l = plot.lines[li];
      const bool has = l.low.size() > i && l.high.size() > i && std::isfinite(l.low[i]) && std::isfinite(l.high[i]);
      data.back()[li + 1] =
          json::array({six_digits(has ? l.low[i] : y), six_digits(y), six_digits(has ? l.high[i] : y)});
      continue;
    }
    data.back()[li + 1] =
        bars ? json::array({six_digits(y), std::isfinite(sigma) ? six_digits(sigma) : 0.0}) : json(six_digits(y));
  }
  // by column, the times once: a per-step series is as long as its values alone
  json columns = json::array();
  for (std::size_t k = 0; k < plot.lines.size(); ++k) {
    json c = json::array();
    for (json& row : data) c.push_back(std::move(row[k + 1]));
    columns.push_back(std::move(c));
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
  json spec{{"title", plot.title},     {"xlabel", plot.x_label}, {"ylabel", plot.y_label}, {"labels", labels},
            {"colors", colors},        {"step", step},           {"dashed", dashed},       {"dots", dots},
            {"x", x_column(data)},     {"columns", columns},     {"refs", refs},           {"log", plot.log_y},
            {"invert", plot.invert_y}, {"bars", bars},           {"custom", custom},       {"width", plot.width_px},
            {"height", plot.height_px}};
  if (plot.y_min && plot.y_max) spec["range"] = {*plot.y_min, *plot.y_max};
  // inside a <script> element: "</" must not end it early
  std::string text = runtime::json_text(spec);
  for (std::size_t at = text.find("</"); at != std::string::npos; at = text.find("</", at + 3))
    text.insert(at + 1, "\\");
  return text;
}

}  // namespace tether::runtime::report_detail
