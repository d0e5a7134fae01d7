// SPDX-License-Identifier: Apache-2.0
// The text `tether run` prints at the end of a session, from its summary (summary.json).
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

namespace tether::cli {

/// Writes the session summary `s` as text for people: the outcome, timings, each endpoint,
/// fault, expectation, vehicle, goal and feedback processor, the phase profile, the state hash.
void print_summary_text(const nlohmann::json& s, std::ostream& out);

}  // namespace tether::cli
