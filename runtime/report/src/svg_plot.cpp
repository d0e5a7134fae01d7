// SPDX-License-Identifier: Apache-2.0
#include "tether/report/svg_plot.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <utility>

namespace tether::runtime::svg {

const char* palette(std::size_t i) {
  static const char* colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                 "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return colors[i % 10];
}

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  std::vector<double> ticks;
  if (!std::isfinite(lo) || !std::isfinite(hi) || hi <= lo || target < 1) return ticks;
  const double raw = (hi - lo) / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  const double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
  // integer multiples of the step, so that 0.1 + 0.2 does not print as 0.30000000000000004
  const double first = std::ceil(lo / step - 1e-9);
  const double last = std::floor(hi / step + 1e-9);
  for (double k = first; k <= last && ticks.size() < 100; k += 1) ticks.push_back(k * step);
  return ticks;
}

std::string format_tick(double value, double step) {
  char buf[32];
  const double a = std::abs(value);
  if (value == 0) return "0";
  if (a >= 1e6 || a < 1e-4) {
    std::snprintf(buf, sizeof buf, "%.3g", value);
    return buf;
  }
  const int decimals = step > 0 ? std::clamp(static_cast<int>(-std::floor(std::log10(step) + 1e-9)), 0, 8) : 3;
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

namespace {

bool finite_point(std::span<const double> x, std::span<const double> y, std::size_t i) {
  return std::isfinite(x[i]) && std::isfinite(y[i]);
}

// keeps first, last and per bucket the extremes of y (and of x on a path), in index order
void downsample_run(std::span<const double> x, std::span<const double> y, std::size_t a, std::size_t b,
                    std::size_t budget, bool path, std::vector<std::size_t>& out) {
  const std::size_t n = b - a;
  if (n <= budget || budget < 3) {
    if (n <= budget) {
      for (std::size_t i = a; i < b; ++i) out.push_back(i);
    } else {
      out.push_back(a);
      if (budget >= 2) out.push_back(b - 1);
    }
    return;
  }
  const std::size_t per_bucket = path ? 4 : 2;
  const std::size_t buckets = std::max<std::size_t>(1, (budget - 2) / per_bucket);
  out.push_back(a);
  std::size_t kept[4];
  for (std::size_t k = 0; k < buckets; ++k) {
    const std::size_t lo = a + 1 + (n - 2) * k / buckets;
    const std::size_t hi = a + 1 + (n - 2) * (k + 1) / buckets;
    if (lo >= hi) continue;
    std::size_t ymin = lo, ymax = lo, xmin = lo, xmax = lo;
    for (std::size_t i = lo; i < hi; ++i) {
      if (y[i] < y[ymin]) ymin = i;
      if (y[i] > y[ymax]) ymax = i;
      if (x[i] < x[xmin]) xmin = i;
      if (x[i] > x[xmax]) xmax = i;
    }
    std::size_t m = 0;
    kept[m++] = ymin;
    kept[m++] = ymax;
    if (path) {
      kept[m++] = xmin;
      kept[m++] = xmax;
    }
    std::sort(kept, kept + m);
    for (std::size_t j = 0; j < m; ++j)
      if (j == 0 || kept[j] != kept[j - 1]) out.push_back(kept[j]);
  }
  out.push_back(b - 1);
}

}  // namespace

std::vector<std::size_t> downsample(std::span<const double> x, std::span<const double> y, std::size_t max_points,
                                    bool path) {
  const std::size_t n = std::min(x.size(), y.size());
  std::vector<std::size_t> out;
  // runs of finite points; a NaN between them is a break in the line
  std::vector<std::pair<std::size_t, std::size_t>> runs;
  std::size_t total = 0;
  for (std::size_t i = 0; i < n;) {
    if (!finite_point(x, y, i)) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < n && finite_point(x, y, j)) ++j;
    runs.emplace_back(i, j);
    total += j - i;
    i = j;
  }
  if (max_points == 0 || total == 0) return out;
  if (total <= max_points) {
    for (const auto& [a, b] : runs)
      for (std::size_t i = a; i < b; ++i) out.push_back(i);
    return out;
  }
  // too many separate runs for even two points each: keep every k-th run's ends
  if (runs.size() * 2 > max_points) {
    const std::size_t stride = (runs.size() * 2 + max_points - 1) / max_points;
    for (std::size_t r = 0; r < runs.size(); r += stride) {
      out.push_back(runs[r].first);
      if (runs[r].second - runs[r].first > 1 && out.size() < max_points) out.push_back(runs[r].second - 1);
    }
    if (out.size() > max_points) out.resize(max_points);
    return out;
  }
  // share the budget by run length; every run keeps at least its two ends
  std::size_t spare = max_points - runs.size() * 2;
  const std::size_t extra_total = total - std::min(total, runs.size() * 2);
  for (const auto& [a, b] : runs) {
    const std::size_t len = b - a;
    const std::size_t extra = extra_total ? spare * (len > 2 ? len - 2 : 0) / extra_total : 0;
    downsample_run(x, y, a, b, std::min(len, 2 + extra), path, out);
  }
  return out;
}

namespace {

struct Axis {
  double lo = 0, hi = 1;
  double px_lo = 0, px_hi = 1;  // pixel positions of lo and hi
  bool log = false;
  double map(double v) const {
    const double t = log ? std::log10(v) : v;
    return px_lo + (t - lo) / (hi - lo) * (px_hi - px_lo);
  }
};

void extend(double& lo, double& hi, double v) {
  if (!std::isfinite(v)) return;
  lo = std::min(lo, v);
  hi = std::max(hi, v);
}

// a padded range that is never empty and at least `min_span` wide
void settle(double& lo, double& hi, double min_span) {
  if (!(lo <= hi)) {
    lo = 0;
    hi = 1;
  }
  double span = hi - lo;
  const double mid = 0.5 * (lo + hi);
  if (span <= 0) span = std::max(std::abs(mid) * 0.1, 1e-9);
  span = std::max(span * 1.08, min_span);
  lo = mid - span / 2;
  hi = mid + span / 2;
}

// a coordinate to 0.1 px, without a trailing ".0"
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  std::string t(buf);
  if (t.size() > 2 && t.compare(t.size() - 2, 2, ".0") == 0) t.resize(t.size() - 2);
  return t == "-0" ? "0" : t;
}

std::string num2(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// A path's `d` as short as the picture allows: each sub-path simplified first (a point
// within 0.2 px of the line its neighbours make is left out: Ramer-Douglas-Peucker, so a
// smooth curve keeps a point where it bends, a noisy one nearly all), then each point
// relative to the one before, both rounded to 0.1 px (so no error adds up), without a
// leading or trailing zero ("l1.1-.6"); a point that rounds onto the last one dropped; a
// straight horizontal or vertical run one segment (h or v), only where it keeps its
// direction, so a path that turns back (a plan view) keeps its turning points.
class PathData {
 public:
  void move_to(double x, double y) {
    end_subpath();
    points_.push_back({x, y});
  }
  void line_to(double x, double y) {
    if (points_.empty()) return move_to(x, y);
    points_.push_back({x, y});
  }
  // a command that holds until the next: across at the old value, then up or down
  void step_to(double x, double y) {
    if (points_.empty()) return move_to(x, y);
    points_.push_back({x, points_.back()[1]});
    points_.push_back({x, y});
  }
  void close() {
    end_subpath();
    d_ += 'Z';
  }
  std::string take() {
    end_subpath();
    return std::move(d_);
  }

 private:
  using P = std::array<double, 2>;
  struct Point {
    long long x = 0, y = 0;  // tenths of a pixel
  };
  static constexpr double tolerance_px = 0.2;

  static long long tenths(double v) { return std::llround(std::clamp(v, -1e9, 1e9) * 10); }
  // how far p is from the segment a-b, in pixels
  static double distance(const P& p, const P& a, const P& b) {
    const double dx = b[0] - a[0], dy = b[1] - a[1], len2 = dx * dx + dy * dy;
    double t = len2 > 0 ? ((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / len2 : 0;
    t = std::clamp(t, 0.0, 1.0);
    return std::hypot(p[0] - a[0] - t * dx, p[1] - a[1] - t * dy);
  }
  // which points the simplified sub-path keeps (the ends always)
  std::vector<bool> simplified() const {
    const std::size_t n = points_.size();
    std::vector<bool> keep(n, n <= 2);
    if (n <= 2) return keep;
    keep.front() = keep.back() = true;
    std::vector<std::pair<std::size_t, std::size_t>> spans{{0, n - 1}};
    while (!spans.empty()) {
      const auto [a, b] = spans.back();
      spans.pop_back();
      double worst = -1;
      std::size_t at = a;
      for (std::size_t i = a + 1; i < b; ++i)
        if (const double d = distance(points_[i], points_[a], points_[b]); d > worst) worst = d, at = i;
      if (worst <= tolerance_px) continue;
      keep[at] = true;
      spans.emplace_back(a, at);
      spans.emplace_back(at, b);
    }
    return keep;
  }
  // same_run: b lies on the straight horizontal or vertical run from a to c, c beyond b
  static bool same_run(const Point& a, const Point& b, const Point& c) {
    if (a.y == b.y && b.y == c.y) return (b.x - a.x) * (c.x - b.x) > 0;
    if (a.x == b.x && b.x == c.x) return (b.y - a.y) * (c.y - b.y) > 0;
    return false;
  }
  // tenths as a decimal: 12 "1.2", -6 "-.6", 30 "3"
  void put(long long t) {
    if (t < 0) d_ += '-';
    const unsigned long long a = t < 0 ? static_cast<unsigned long long>(-t) : static_cast<unsigned long long>(t);
    if (a >= 10 || a == 0) d_ += std::to_string(a / 10);
    if (a % 10 != 0) {
      d_ += '.';
      d_ += static_cast<char>('0' + a % 10);
    }
  }
  void put_segment(const Point& from, const Point& to) {
    const long long dx = to.x - from.x, dy = to.y - from.y;
    if (dy == 0) {
      d_ += 'h';
      put(dx);
    } else if (dx == 0) {
      d_ += 'v';
      put(dy);
    } else {
      d_ += 'l';
      put(dx);
      if (dy > 0) d_ += ' ';
      put(dy);
    }
  }
  void end_subpath() {
    if (points_.empty()) return;
    const std::vector<bool> keep = simplified();
    Point last{tenths(points_[0][0]), tenths(points_[0][1])};
    d_ += 'M';
    put(last.x);
    d_ += ' ';
    put(last.y);
    std::optional<Point> pending;
    for (std::size_t i = 1; i < points_.size(); ++i) {
      if (!keep[i]) continue;
      const Point p{tenths(points_[i][0]), tenths(points_[i][1])};
      const Point& from = pending ? *pending : last;
      if (p.x == from.x && p.y == from.y) continue;
      if (pending && same_run(last, *pending, p)) {
        pending = p;
        continue;
      }
      if (pending) {
        put_segment(last, *pending);
        last = *pending;
      }
      pending = p;
    }
    if (pending) put_segment(last, *pending);
    points_.clear();
  }

  std::string d_;
  std::vector<P> points_;  // the sub-path being drawn, in pixels
};

void text(std::string& out, double x, double y, const char* anchor, const std::string& s, const char* extra = "") {
  out += "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" text-anchor=\"" + anchor + "\"" + extra + ">" + escape(s) +
         "</text>";
}

const char* font_family = "system-ui,-apple-system,Segoe UI,Roboto,Helvetica Neue,Arial,sans-serif";
const char* title_attrs = " font-size=\"13\" font-weight=\"600\" fill=\"#1d2330\"";
const char* legend_attrs = " font-size=\"11\" fill=\"#333\"";
const char* axis_attrs = " font-size=\"11.5\" fill=\"#444\"";
const char* ref_attrs = " font-size=\"10.5\" fill=\"#555\"";

std::string decade_label(int e) {
  static const char* names[] = {"1", "10", "100", "1k", "10k", "100k", "1M", "10M", "100M", "1G"};
  if (e >= 0 && e <= 9) return names[e];
  char buf[16];
  std::snprintf(buf, sizeof buf, "1e%d", e);
  return buf;
}

// a legend entry: 0 line, 1 dashed line, 2 dot, 3 bar
struct LegendItem {
  std::string label, color;
  int kind;
};

// what render() works out before it draws: the data's ranges, the legend's rows, the plot
// area and the axes
struct Layout {
  double xlo = 0, xhi = 0, ylo = 0, yhi = 0;
  bool any = false;  // any point or bar to draw
  std::vector<LegendItem> legend;
  std::vector<std::vector<std::size_t>> rows;  // legend items per row
  std::vector<double> item_w;
  double W = 0, H = 0, left = 0, right = 0, top = 0, bottom = 0, pw = 0, ph = 0;
  Axis ax, ay;
};

// data ranges
void data_ranges(const Plot& p, Layout& f) {
  const double inf = std::numeric_limits<double>::infinity();
  double xlo = inf, xhi = -inf, ylo = inf, yhi = -inf;
  bool any = false;
  for (const Line& l : p.lines)
    for (std::size_t i = 0; i < std::min(l.x.size(), l.y.size()); ++i)
      if (std::isfinite(l.x[i]) && std::isfinite(l.y[i]) && (!p.log_y || l.y[i] > 0)) {
        extend(xlo, xhi, l.x[i]);
        extend(ylo, yhi, l.y[i]);
        if (i < l.band.size() && std::isfinite(l.band[i]) && !p.log_y) {
          extend(ylo, yhi, l.y[i] - l.band[i]);
          extend(ylo, yhi, l.y[i] + l.band[i]);
        }
        any = true;
      }
  for (const Bars& b : p.bars) {
    for (double e : b.edges) extend(xlo, xhi, e);
    for (double c : b.counts)
      if (!p.log_y || c > 0) {
        extend(ylo, yhi, c);
        any = true;
      }
    if (!p.log_y && !b.counts.empty()) extend(ylo, yhi, 0.0);
  }
  for (const RefLine& r : p.refs) {
    if (r.vertical)
      extend(xlo, xhi, r.value);
    else
      extend(ylo, yhi, r.value);
  }
  f.xlo = xlo;
  f.xhi = xhi;
  f.ylo = ylo;
  f.yhi = yhi;
  f.any = any;
}

// layout: title, legend rows, plot area, x label
void lay_out(const Plot& p, Layout& f) {
  auto& legend = f.legend;
  for (const Line& l : p.lines)
    if (!l.label.empty()) legend.push_back({l.label, l.color, l.dots ? 2 : l.dashed ? 1 : 0});
  for (const Bars& b : p.bars)
    if (!b.label.empty()) legend.push_back({b.label, b.color, 3});
  const double W = p.width_px, H0 = p.height_px;
  const double left = 62, right = 14;
  auto& rows = f.rows;
  rows.resize(1);
  double row_w = 0;
  auto& item_w = f.item_w;
  for (std::size_t i = 0; i < legend.size(); ++i) {
    const double w = 28 + 6.2 * static_cast<double>(legend[i].label.size()) + 14;
    item_w.push_back(w);
    if (row_w + w > W - left - right && !rows.back().empty()) {
      rows.emplace_back();
      row_w = 0;
    }
    rows.back().push_back(i);
    row_w += w;
  }
  const double legend_h = legend.empty() ? 0 : 16.0 * static_cast<double>(rows.size());
  const double top = 26 + legend_h + 6;
  const double bottom = 40;
  const double H = H0 + legend_h;
  f.W = W;
  f.H = H;
  f.left = left;
  f.right = right;
  f.top = top;
  f.bottom = bottom;
  f.pw = W - left - right;
  f.ph = H - top - bottom;
}

// the axes' ranges (padded, log decades, equal aspect, the plot's own limits) and pixels
void fit_axes(const Plot& p, Layout& f) {
  double &xlo = f.xlo, &xhi = f.xhi, &ylo = f.ylo, &yhi = f.yhi;
  const double pw = f.pw, ph = f.ph;
  Axis &ax = f.ax, &ay = f.ay;
  if (p.log_y) {
    ay.log = true;
    ylo = f.any ? std::floor(std::log10(std::max(ylo, 1e-12))) : 0;
    yhi = f.any ? std::ceil(std::log10(std::max(yhi, 1e-12)) + 1e-9) : 1;
    // bars stand on 0.5 so that a count of 1 is a visible bar, not a line on the axis
    if (!p.bars.empty()) ylo = std::min(ylo, std::log10(0.5));
    if (yhi <= ylo) yhi = ylo + 1;
  } else {
    settle(ylo, yhi, p.min_span_y);
  }
  settle(xlo, xhi, p.min_span_x);
  if (p.equal_aspect && !p.log_y) {
    // the same metres per pixel on both axes: widen the narrower range about its centre
    const double sx = (xhi - xlo) / pw, sy = (yhi - ylo) / ph;
    const double s = std::max(sx, sy);
    const double cx = 0.5 * (xlo + xhi), cy = 0.5 * (ylo + yhi);
    xlo = cx - s * pw / 2;
    xhi = cx + s * pw / 2;
    ylo = cy - s * ph / 2;
    yhi = cy + s * ph / 2;
  }
  if (p.x_min) xlo = *p.x_min;
  if (p.x_max) xhi = *p.x_max;
  if (p.y_min) ylo = p.log_y ? std::log10(*p.y_min) : *p.y_min;
  if (p.y_max) yhi = p.log_y ? std::log10(*p.y_max) : *p.y_max;
  if (!(xhi > xlo)) xhi = xlo + 1;
  if (!(yhi > ylo)) yhi = ylo + 1;
  ax.lo = xlo;
  ax.hi = xhi;
  ax.px_lo = f.left;
  ax.px_hi = f.left + pw;
  ay.lo = ylo;
  ay.hi = yhi;
  ay.px_lo = p.invert_y ? f.top : f.top + ph;
  ay.px_hi = p.invert_y ? f.top + ph : f.top;
}

// legend
void draw_legend(std::string& s, const Layout& f) {
  for (std::size_t r = 0; r < f.rows.size(); ++r) {
    double x = f.left;
    const double y = 26 + 16.0 * static_cast<double>(r) + 8;
    for (std::size_t i : f.rows[r]) {
      const LegendItem& it = f.legend[i];
      if (it.kind == 3)
        s += "<rect x=\"" + num(x) + "\" y=\"" + num(y - 5) + "\" width=\"20\" height=\"10\" fill=\"" + it.color +
             "\" fill-opacity=\"0.6\"/>";
      else if (it.kind == 2)
        s += "<circle cx=\"" + num(x + 10) + "\" cy=\"" + num(y) + "\" r=\"3\" fill=\"" + it.color + "\"/>";
      else
        s += "<line x1=\"" + num(x) + "\" y1=\"" + num(y) + "\" x2=\"" + num(x + 20) + "\" y2=\"" + num(y) +
             "\" stroke=\"" + it.color + "\" stroke-width=\"2\"" + (it.kind == 1 ? " stroke-dasharray=\"5 3\"" : "") +
             "/>";
      text(s, x + 25, y + 4, "start", it.label, legend_attrs);
      x += f.item_w[i];
    }
  }
}

// grid, ticks and labels
void draw_grid(std::string& s, const Plot& p, const Layout& f) {
  const double xlo = f.xlo, xhi = f.xhi, ylo = f.ylo, yhi = f.yhi;
  const double left = f.left, top = f.top, pw = f.pw, ph = f.ph;
  const Axis &ax = f.ax, &ay = f.ay;
  // the grid: one path, a vertical line per x tick and a horizontal one per y tick
  PathData grid;
  std::vector<double> xt = nice_ticks(xlo, xhi, std::max(2, static_cast<int>(pw / 90)));
  const double xstep = xt.size() > 1 ? xt[1] - xt[0] : xhi - xlo;
  for (double v : xt) {
    grid.move_to(ax.map(v), top);
    grid.line_to(ax.map(v), top + ph);
  }
  std::vector<double> yt;
  std::vector<std::string> ylabels;
  if (p.log_y) {
    for (int e = static_cast<int>(std::ceil(ylo)); e <= static_cast<int>(std::floor(yhi)); ++e) {
      yt.push_back(std::pow(10.0, e));
      ylabels.push_back(decade_label(e));
    }
  } else {
    yt = nice_ticks(ylo, yhi, std::max(2, static_cast<int>(ph / 45)));
    const double ystep = yt.size() > 1 ? yt[1] - yt[0] : yhi - ylo;
    for (double v : yt) ylabels.push_back(format_tick(v, ystep));
  }
  for (double v : yt) {
    grid.move_to(left, ay.map(v));
    grid.line_to(left + pw, ay.map(v));
  }
  s += "<path class=\"grid\" d=\"" + grid.take() + "\" stroke=\"#e8eaee\" stroke-width=\"1\" fill=\"none\"/>";
  s += "<g class=\"ticks\" fill=\"#333\">";
  for (double v : xt) text(s, ax.map(v), top + ph + 14, "middle", format_tick(v, xstep));
  for (std::size_t i = 0; i < yt.size(); ++i) text(s, left - 5, ay.map(yt[i]) + 4, "end", ylabels[i]);
  s += "</g>";
  text(s, left + pw / 2, f.H - 6, "middle", p.x_label, axis_attrs);
  {
    const double cy = top + ph / 2;
    s += "<text x=\"14\" y=\"" + num(cy) + "\" text-anchor=\"middle\" transform=\"rotate(-90 14 " + num(cy) + ")\"" +
         axis_attrs + ">" + escape(p.y_label) + "</text>";
  }
}

// the histograms' bars and the reference lines
void draw_bars_and_refs(std::string& s, const Plot& p, const Layout& f) {
  const double left = f.left, top = f.top, pw = f.pw, ph = f.ph;
  const Axis &ax = f.ax, &ay = f.ay;
  const double base_y = p.log_y ? ay.px_lo : ay.map(std::clamp(0.0, f.ylo, f.yhi));
  for (const Bars& b : p.bars) {
    s += "<g fill=\"" + b.color + "\" fill-opacity=\"0.6\" stroke=\"" + b.color + "\" stroke-width=\"0.5\">";
    for (std::size_t i = 0; i + 1 < b.edges.size() && i < b.counts.size(); ++i) {
      const double c = b.counts[i];
      if (!(c > 0)) continue;
      const double x0 = ax.map(b.edges[i]), x1 = ax.map(b.edges[i + 1]);
      const double yv = ay.map(c);
      s += "<rect x=\"" + num(x0) + "\" y=\"" + num(std::min(yv, base_y)) + "\" width=\"" +
           num(std::max(0.5, x1 - x0)) + "\" height=\"" + num(std::abs(base_y - yv)) + "\"/>";
    }
    s += "</g>";
  }
  for (const RefLine& r : p.refs) {
    if (r.vertical) {
      const double x = ax.map(r.value);
      s += "<line x1=\"" + num(x) + "\" y1=\"" + num(top) + "\" x2=\"" + num(x) + "\" y2=\"" + num(top + ph) +
           "\" stroke=\"" + r.color + "\" stroke-width=\"1.2\" stroke-dasharray=\"6 4\"/>";
      if (!r.label.empty()) text(s, x - 4, top + 12, "end", r.label, ref_attrs);
    } else {
      const double y = ay.map(r.value);
      s += "<line x1=\"" + num(left) + "\" y1=\"" + num(y) + "\" x2=\"" + num(left + pw) + "\" y2=\"" + num(y) +
           "\" stroke=\"" + r.color + "\" stroke-width=\"1.2\" stroke-dasharray=\"6 4\"/>";
      // the label sits above the line, or below it when the line runs along the top
      if (!r.label.empty()) text(s, left + pw - 4, y - 4 < top + 10 ? y + 12 : y - 4, "end", r.label, ref_attrs);
    }
  }
}

// a shaded area between two curves over the kept points: along `top`, back along `bottom`;
// a point where either is not finite ends one area and starts the next
template <class Top, class Bottom>
void draw_area(std::string& s, const Line& l, const std::vector<std::size_t>& keep, const Layout& f, Top top,
               Bottom bottom, const std::string& opening, const char* opacity) {
  const Axis &ax = f.ax, &ay = f.ay;
  std::vector<std::size_t> run;
  auto flush = [&] {
    if (run.size() >= 2) {
      PathData a;
      for (std::size_t i : run) a.line_to(ax.map(l.x[i]), ay.map(top(i)));
      for (std::size_t k = run.size(); k-- > 0;) a.line_to(ax.map(l.x[run[k]]), ay.map(bottom(run[k])));
      a.close();
      s += opening + " d=\"" + a.take() + "\" fill=\"" + l.color + "\" fill-opacity=\"" + opacity +
           "\" stroke=\"none\"/>";
    }
    run.clear();
  };
  for (std::size_t i : keep) {
    if (std::isfinite(l.x[i]) && std::isfinite(top(i)) && std::isfinite(bottom(i)))
      run.push_back(i);
    else
      flush();
  }
  flush();
}

// the ±band (an estimate's ±σ) under the line
void draw_band(std::string& s, const Line& l, const std::vector<double>& yv, const std::vector<std::size_t>& keep,
               const Layout& f) {
  draw_area(
      s, l, keep, f, [&](std::size_t i) { return yv[i] + l.band[i]; }, [&](std::size_t i) { return yv[i] - l.band[i]; },
      "<path", "0.18");
}

// an envelope (make_envelope): from the least to the most of each point's samples
void draw_envelope(std::string& s, const Line& l, const std::vector<std::size_t>& keep, const Layout& f) {
  draw_area(
      s, l, keep, f, [&](std::size_t i) { return l.high[i]; }, [&](std::size_t i) { return l.low[i]; },
      "<path class=\"envelope\"", "0.25");
}

// one line: its dots, or its band or envelope and its path
void draw_line(std::string& s, const Plot& p, const Line& l, const Layout& f) {
  const Axis &ax = f.ax, &ay = f.ay;
  const std::size_t n = std::min(l.x.size(), l.y.size());
  std::vector<double> yv(l.y.begin(), l.y.begin() + static_cast<std::ptrdiff_t>(n));
  if (p.log_y)
    for (double& v : yv)
      if (!(v > 0)) v = std::nan("");
  const auto keep = downsample(std::span(l.x.data(), n), yv, p.max_points_per_line, l.path);
  if (keep.empty()) return;
  if (l.dots) {
    s += "<g fill=\"" + l.color + "\"" + (l.opacity < 1 ? " fill-opacity=\"" + num2(l.opacity) + "\"" : "") + ">";
    for (std::size_t i : keep)
      s += "<circle cx=\"" + num(ax.map(l.x[i])) + "\" cy=\"" + num(ay.map(yv[i])) + "\" r=\"" +
           num(std::max(1.0, l.width_px)) + "\"/>";
    s += "</g>";
    return;
  }
  if (l.band.size() >= n && !p.log_y) draw_band(s, l, yv, keep, f);
  if (l.low.size() >= n && l.high.size() >= n && !p.log_y) draw_envelope(s, l, keep, f);
  PathData d;
  std::size_t prev = 0;
  bool first = true;
  for (std::size_t i : keep) {
    // a gap in the indices that crosses a NaN starts a new sub-path
    bool broken = first;
    if (!first && i != prev + 1)
      for (std::size_t j = prev + 1; j < i && !broken; ++j)
        if (!std::isfinite(l.x[j]) || !std::isfinite(yv[j])) broken = true;
    const double x = ax.map(l.x[i]), y = ay.map(yv[i]);
    if (broken)
      d.move_to(x, y);
    else if (l.step)
      d.step_to(x, y);
    else
      d.line_to(x, y);
    prev = i;
    first = false;
  }
  s += "<path d=\"" + d.take() + "\" fill=\"none\" stroke=\"" + l.color + "\" stroke-width=\"" + num(l.width_px) +
       "\" stroke-linejoin=\"round\"" + (l.dashed ? " stroke-dasharray=\"6 3\"" : "") +
       (l.opacity < 1 ? " stroke-opacity=\"" + num2(l.opacity) + "\"" : "") + "/>";
}

}  // namespace

bool make_envelope(Line& l, std::size_t buckets) {
  const std::size_t n = std::min(l.x.size(), l.y.size());
  if (buckets < 2 || n <= 2 * buckets || l.path || l.dots) return false;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (std::size_t i = 0; i < n; ++i)
    if (std::isfinite(l.y[i])) lo = std::min(lo, l.y[i]), hi = std::max(hi, l.y[i]);
  if (!(hi > lo)) return false;
  std::vector<double> x, y, low, high;
  double spread = 0;
  std::size_t filled = 0;
  for (std::size_t b = 0; b < buckets; ++b) {
    const std::size_t from = b * n / buckets, to = (b + 1) * n / buckets;
    double sum = 0, sx = 0, mn = std::numeric_limits<double>::infinity(), mx = -mn;
    std::size_t count = 0;
    for (std::size_t i = from; i < to; ++i) {
      if (!std::isfinite(l.y[i]) || !std::isfinite(l.x[i])) continue;
      sum += l.y[i];
      sx += l.x[i];
      mn = std::min(mn, l.y[i]);
      mx = std::max(mx, l.y[i]);
      ++count;
    }
    if (count == 0) {  // a gap stays a gap
      x.push_back(l.x[from]);
      y.push_back(std::nan(""));
      low.push_back(std::nan(""));
      high.push_back(std::nan(""));
      continue;
    }
    x.push_back(sx / static_cast<double>(count));
    y.push_back(sum / static_cast<double>(count));
    low.push_back(mn);
    high.push_back(mx);
    spread += mx - mn;
    ++filled;
  }
  if (filled == 0 || spread / static_cast<double>(filled) <= 0.05 * (hi - lo)) return false;
  l.x = std::move(x);
  l.y = std::move(y);
  l.low = std::move(low);
  l.high = std::move(high);
  l.step = false;  // a mean of held values is not itself held
  return true;
}

std::string render(const Plot& p) {
  Layout f;
  data_ranges(p, f);
  lay_out(p, f);
  fit_axes(p, f);
  const double W = f.W, H = f.H, left = f.left, top = f.top, pw = f.pw, ph = f.ph;

  static std::atomic<int> plot_counter{0};
  const std::string clip = "clip" + std::to_string(++plot_counter);
  std::string s;
  s.reserve(16 * 1024);
  // every colour, font and stroke is an attribute here: the plot renders the same in any page,
  // with or without the report's stylesheet (bench/correction writes plots into its own page)
  s += "<svg class=\"plot\" width=\"" + num(W) + "\" height=\"" + num(H) + "\" viewBox=\"0 0 " + num(W) + " " + num(H) +
       "\" role=\"img\" aria-label=\"" + escape(p.title) + "\" font-family=\"" + font_family + "\" font-size=\"11\">";
  s += "<defs><clipPath id=\"" + clip + "\"><rect x=\"" + num(left) + "\" y=\"" + num(top) + "\" width=\"" + num(pw) +
       "\" height=\"" + num(ph) + "\"/></clipPath></defs>";
  s += "<rect x=\"0\" y=\"0\" width=\"" + num(W) + "\" height=\"" + num(H) + "\" fill=\"#ffffff\"/>";
  text(s, left, 17, "start", p.title, title_attrs);
  draw_legend(s, f);
  draw_grid(s, p, f);
  // data, clipped to the plot area
  s += "<g clip-path=\"url(#" + clip + ")\">";
  draw_bars_and_refs(s, p, f);
  for (const Line& l : p.lines) draw_line(s, p, l, f);
  s += "</g>";
  if (!f.any) text(s, left + pw / 2, top + ph / 2, "middle", "no data", " font-size=\"13\" fill=\"#999\"");
  s += "<rect class=\"frame\" x=\"" + num(left) + "\" y=\"" + num(top) + "\" width=\"" + num(pw) + "\" height=\"" +
       num(ph) + "\" fill=\"none\" stroke=\"#9aa1ad\" stroke-width=\"1\"/>";
  s += "</svg>";
  return s;
}

}  // namespace tether::runtime::svg
