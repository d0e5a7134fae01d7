// SPDX-License-Identifier: Apache-2.0
// What the report reads from a recording (internal to the report room): the series, counts
// and summary that collect() gathers and the page's sections draw.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tether/scenario/scenario.hpp"

namespace tether::runtime::report_detail {

using nlohmann::json;
inline constexpr double nan_v = std::numeric_limits<double>::quiet_NaN();

// ---- what the report collects from the recording ------------------------------------

struct VehicleSeries {
  std::string name;
  std::vector<double> t, x, y, z, depth, heading, roll, pitch, speed, px, py, pz;
  bool has_depth = false;
  // measured pose of the vehicle's reference body, from the step records' replies
  std::vector<double> mt, mx, my, mz, mdepth, mheading;
};

// one plotted command value (a wrench component or an actuator payload value)
struct CommandChannel {
  std::string label;
  std::string plot;       // which plot it goes in: "forces", "torques", "thruster commands", ...
  std::string unit;       // that plot's y label
  std::vector<double> v;  // aligned with EndpointSeries::t (NaN when the endpoint sent nothing)
};

struct EndpointSeries {
  std::string name;
  std::vector<double> t;  // t_{k+1} of every step
  std::vector<double> cum_timeouts, cum_faults;
  std::vector<double> round_trip_us;  // fresh replies only
  std::uint64_t fresh = 0, timeouts = 0, faults = 0;
  std::map<std::string, CommandChannel> channels;  // by key, for lookup while reading
  std::vector<std::string> channel_order;          // keys in the order first seen
  std::vector<std::string> plot_order;             // plots in the order first seen
};

// one sensor's readings as the firmware was sent them (its /devices/VEHICLE/PART/DEVICE
// channel): a sample each time the sensor took one; NaN in every channel where it had no data
struct SensorSeries {
  std::size_t device = 0;  // index in the scenario's device list
  std::vector<double> t;
  std::vector<std::vector<double>> v;  // v[channel][sample]
  std::uint64_t invalid = 0;           // samples with valid: false
};

// a cable's shape (its segments' centres) at a few times of the run, from /tether/state
struct CableSeries {
  int vehicle = -1;  // its index in the model's vehicles
  std::string name;
  std::vector<double> t;                     // the time of each shape
  std::vector<std::vector<double>> x, y, z;  // [shape][segment]
  std::uint64_t stride = 1;                  // a shape every `stride` steps, and the last
  std::uint64_t stride_step = 0;             // the step of the last shape on the stride
  bool latest_is_stand_in = false;           // the last shape is the latest state's, off the stride
};

struct EventRow {
  double t_s = 0;
  int level = 0;
  std::string name, message;
};

struct Collected {
  std::string path;
  std::uint64_t file_size = 0;
  std::optional<Scenario> scenario;
  std::string scenario_error;
  std::string scenario_text;
  std::uint64_t created_ns = 0;
  std::map<std::string, std::string> meta;
  std::vector<std::string> endpoint_names;
  std::int64_t period_ns = 0;

  std::uint64_t steps = 0;
  std::uint64_t first_step = 0, last_step = 0;
  std::uint64_t step_gaps = 0;
  std::uint64_t bad_step_records = 0;
  std::uint64_t keyframes = 0;
  std::vector<double> step_t, step_time_us;
  std::vector<EndpointSeries> endpoints;
  std::vector<VehicleSeries> vehicles;
  std::map<std::string, std::vector<double>> feedback;  // "processor.field" -> values
  std::vector<std::string> feedback_order;
  std::vector<double> feedback_t;
  std::vector<EventRow> events;
  std::vector<SensorSeries> sensors;  // in the scenario's device order
  std::vector<CableSeries> cables;    // in the scenario's order
  std::optional<json> summary;
  bool truncated = false;
  std::string truncation;
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> channels;
};

/// Reads the recording at `path` into `c`: its scenario, metadata, step records, vehicle,
/// feedback, summary and event channels. Returns false with *error set when the file cannot
/// be read or is not a Tether recording.
bool collect(const std::string& path, Collected& c, std::string* error);

}  // namespace tether::runtime::report_detail
