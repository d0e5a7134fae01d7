// SPDX-License-Identifier: Apache-2.0
// A small SVG plotter for the session report (tether report): axes, ticks, labels, a
// legend, lines (broken at NaN), dots, histogram bars and reference lines. The output is
// an inline <svg> element with no external references, for a self-contained HTML file.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tether::runtime::svg {

/// The report's colour palette; cycles after 10 colours.
const char* palette(std::size_t i);

/// One data series. A NaN in x or y breaks the line there.
struct Line {
  std::string label;  // legend text ("" = not in the legend)
  std::vector<double> x, y;
  std::string color = "#1f77b4";
  bool dashed = false;
  bool dots = false;           // draw a dot per point instead of a line
  bool path = false;           // x is not monotonic (a trajectory): down-sample on x and y
  bool step = false;           // a held value (a command): drawn as steps, not ramps between points
  std::vector<double> band{};  // if as long as y: a shaded ±band[i] around y[i] (an estimate's ±σ)
  // if as long as y: an envelope, shaded from low[i] to high[i], the least and the most of the
  // samples that point y[i] (their mean) stands for (make_envelope)
  std::vector<double> low{}, high{};
  double width_px = 1.5;
  double opacity = 1.0;
};

/// Histogram bars: counts[i] between edges[i] and edges[i + 1].
struct Bars {
  std::string label;
  std::vector<double> edges;
  std::vector<double> counts;
  std::string color = "#1f77b4";
};

/// A horizontal or vertical reference line (a target, a deadline).
struct RefLine {
  bool vertical = false;
  double value = 0;
  std::string label;
  std::string color = "#555555";
};

struct Plot {
  std::string title;
  std::string x_label;
  std::string y_label;
  int width_px = 640;
  int height_px = 300;
  bool equal_aspect = false;                         // one metre is as long across as up (plan and side views)
  bool invert_y = false;                             // y grows downward (depth)
  bool log_y = false;                                // decades on y (histogram counts)
  std::optional<double> x_min, x_max, y_min, y_max;  // fixed limits (else from the data)
  double min_span_x = 0;                             // autoscaled ranges are at least this wide
  double min_span_y = 0;
  std::size_t max_points_per_line = 2000;
  std::vector<Line> lines;
  std::vector<Bars> bars;
  std::vector<RefLine> refs;
};

/// Renders the plot as an <svg> element (no xmlns or links: meant to be inlined in HTML).
/// Every colour, font and stroke is an attribute: no page stylesheet is needed.
std::string render(const Plot& plot);

/// Indices of the points to keep so that at most `max_points` remain, keeping each
/// bucket's minimum and maximum (and on `path` lines also x's) so spikes survive; runs
/// between NaNs are kept apart and each keeps its first and last point.
std::vector<std::size_t> downsample(std::span<const double> x, std::span<const double> y, std::size_t max_points,
                                    bool path);

/// A line that changes faster than a plot can show (a command that chatters every step) as
/// `buckets` points: each the mean of its samples, with their least and most as its envelope
/// (Line::low, Line::high); a held command's steps become the mean. It does so only when the
/// line has more than 2 x `buckets` points and, bucket by bucket, its samples spread on
/// average over more than 5 % of its whole range: a smooth line keeps its points. True if it
/// did.
bool make_envelope(Line& line, std::size_t buckets);

/// About `target` round tick values (1, 2, 5 × 10^k steps) covering [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int target);

/// A tick label: as many decimals as the tick step needs.
std::string format_tick(double value, double step);

/// Escapes &, <, >, " and ' for HTML/XML text and attributes.
std::string escape(std::string_view text);

}  // namespace tether::runtime::svg
