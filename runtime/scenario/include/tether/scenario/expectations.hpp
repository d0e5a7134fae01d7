// SPDX-License-Identifier: Apache-2.0
// `expect:` — what must hold for a run to pass (docs/scenario.md): a quantity, a condition
// with its tolerance, and when it must hold. The loop evaluates each one every step from
// the step's data (never the wall clock), so a replay reaches the same verdict.
#pragma once

#include <string>
#include <vector>

#include "tether/physics/world_model.hpp"
#include "tether/scenario/config.hpp"

namespace tether::runtime {

struct Scenario;

/// The condition, `that:`.
enum class ExpectOp : std::uint8_t { lt, le, gt, ge, eq, ne, within, between, matches };
/// When it must hold, `when:`.
enum class ExpectWhen : std::uint8_t { always, after, during, eventually, at_end };

/// What `value:` names, resolved against the scenario.
enum class QuantityKind : std::uint8_t {
  body,      // a vehicle's (first) body or a named part: pose, velocity, depth, angles
  device,    // a device's current reading (sensor, after noise) or effective command
  endpoint,  // an endpoint's counter
  feedback,  // a feedback processor's recorded figure (resolved by the loop)
  log,       // an endpoint's firmware LOG lines (with `matches`)
  contacts   // touching pairs involving a vehicle this step
};

/// The body figures a `value:` may name (VEHICLE[.PART].FIGURE).
enum class BodyFigure : std::uint8_t {
  x_m,
  y_m,
  z_m,
  depth_m,
  heading_deg,
  roll_deg,
  pitch_deg,
  yaw_deg,
  speed_m_s,
  vx_m_s,
  vy_m_s,
  vz_m_s
};

struct ExpectationConfig {
  std::string name;   // as given, or built from value/that/when
  std::string value;  // the quantity path as written
  std::string where;  // "file:line:column" of the entry, for messages found later
  QuantityKind kind = QuantityKind::body;
  int body = -1;     // body figures
  int vehicle = -1;  // contacts
  BodyFigure figure = BodyFigure::x_m;
  int device = -1;  // device readings
  int channel = 0;
  int endpoint = -1;      // counters and log
  std::string counter;    // replies, late, misses, stale, corrupt, faults, implausible
  std::string processor;  // feedback: the processor's name
  std::string field;      //           and its figure (checked by the loop)
  ExpectOp op = ExpectOp::lt;
  double a = 0, b = 0;  // the numbers of the condition (within: tolerance a of b)
  std::string pattern;  // matches: a substring the LOG line must contain
  ExpectWhen when = ExpectWhen::always;
  double t0_s = 0, t1_s = 0;  // after t0; during [t0, t1]; eventually before t1 (<= 0: by the end)
};

/// The endpoint counters `endpoints.NAME.COUNTER` may name.
const std::vector<std::string>& expect_counters();

/// Parses `expect:` (positioned errors on the node's context) against the scenario's
/// vehicles, devices, endpoints and feedback processors.
std::vector<ExpectationConfig> parse_expectations(const ConfigNode& node, const Scenario& scenario);

/// Parses a condition `{value: ..., that: ...}` (a fault's `if:`): the same quantities and
/// conditions as an expectation, evaluated at one step (no `when`, no log lines).
ExpectationConfig parse_condition(const ConfigNode& node, const Scenario& scenario);

}  // namespace tether::runtime
