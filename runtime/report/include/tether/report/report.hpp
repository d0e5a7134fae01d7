// SPDX-License-Identifier: Apache-2.0
// `tether report`: one self-contained HTML file (inline CSS and SVG, nothing fetched) that
// shows what a recording holds: trajectories, depth and attitude over time, commands,
// round-trip latency, deadline misses, feedback corrections, events and the summary.
#pragma once

#include <cstddef>
#include <string>

namespace tether::runtime {

struct ReportOptions {
  /// Long series are down-sampled (min/max preserving) to at most this many points per line.
  std::size_t max_points_per_line = 2000;
  /// At most this many events are listed (the rest are counted).
  std::size_t max_events = 200;
  /// A second recording to compare with (`tether report A.mcap B.mcap`): a comparison
  /// section first, A's figures beside B's and the vehicles' and step times' series of both
  /// runs overlaid; the rest of the page is A's report. Empty: none.
  std::string compare;
  /// Where the page loads its charting library from: a folder relative to the report
  /// (`../assets`) that write_report_assets() filled. Empty: inlined, the file stands alone.
  /// A campaign's runs share one copy (docs/campaigns.md); without it the SVG plots remain.
  std::string assets_url;
};

/// Renders the report of the recording at `recording_path` into `html`; false with a reason
/// if the file is not a readable Tether recording. A truncated recording (session killed)
/// renders what it holds and says that the session did not finish.
bool render_report(const std::string& recording_path, std::string& html, std::string* error,
                   const ReportOptions& options = {});

/// Renders the report and writes it to `html_path` (replacing it); false with a reason on failure.
bool write_report(const std::string& recording_path, const std::string& html_path, std::string* error,
                  const ReportOptions& options = {});

/// Writes the charting library a report with `assets_url` loads (dygraph.min.js and
/// dygraph.min.css) into `dir`, creating it; false with a reason on failure.
bool write_report_assets(const std::string& dir, std::string* error);

}  // namespace tether::runtime
