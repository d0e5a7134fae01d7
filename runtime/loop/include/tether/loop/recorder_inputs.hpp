// SPDX-License-Identifier: Apache-2.0
// What a session's recorder is told besides the scenario, taken from the session in one
// place: the CLI's run and replay, the benchmarks and the tests all build it here.
#pragma once

#include "tether/loop/session.hpp"
#include "tether/recording/recorder.hpp"

namespace tether::runtime {

/// The session's endpoints' names and safe replies (Endpoint::safe_reply) and its feedback
/// processors' record fields, in the session's order. Call after the session is built
/// (its processors exist) and before open(): Recorder(scenario, recorder_inputs(session)).
RecorderInputs recorder_inputs(const Session& session);

}  // namespace tether::runtime
