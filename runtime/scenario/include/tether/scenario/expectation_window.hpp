// SPDX-License-Identifier: Apache-2.0
// When an expectation is judged: the window its condition must hold in. One definition for
// the evaluator (runtime/loop) and the report's plots (runtime/report), so the two agree.
#pragma once

#include "tether/scenario/expectations.hpp"

namespace tether::runtime {

/// The window an expectation's condition must hold in, [from_s, to_s] in simulation time,
/// for a run from `first_s` to `last_s` (during the run: +infinity): the whole run (always,
/// eventually by the end), from t0 (after), [t0, t1] (during), until t1 (eventually before
/// t1), the last step (at end). The evaluator judges a step whose time lies in it
/// (`in_window`); the report draws it.
struct ExpectWindow {
  double from_s = 0, to_s = 0;
  /// With 1e-12 s of slack, so a step time computed as k × period is not lost to rounding.
  bool contains(double t_s) const { return t_s >= from_s - 1e-12 && t_s <= to_s + 1e-12; }
};
ExpectWindow expectation_window(const ExpectationConfig& c, double first_s, double last_s);

}  // namespace tether::runtime
