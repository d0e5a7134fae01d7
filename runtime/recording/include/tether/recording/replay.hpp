// SPDX-License-Identifier: Apache-2.0
// Reading a recording back and re-running it without hardware (Rule 1 of the "Simulator
// Architecture" notes, 2024: from any recorded state s_m the same sequence s_m..s_q is
// produced).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tether/recording/recording.hpp"
#include "tether/scenario/scenario.hpp"

namespace tether::runtime::mcap {
class Reader;
}

namespace tether::runtime {

/// A recording, loaded for replay, info and report.
struct Recording {
  std::string path;
  Scenario scenario;
  std::vector<std::string> endpoint_names;
  std::vector<StepRecord> steps;                // in step order, contiguous from steps.front().step
  std::map<std::uint64_t, Keyframe> keyframes;  // by the step they precede
  std::vector<std::string> states;              // S_{k+1} per step, if recorded (else empty)
  std::vector<Reply> safe_replies;              // per endpoint, if recorded (else empty: no forces)
  std::vector<StepCommands> commands;           // operator commands, in step order (live sessions)
  std::optional<nlohmann::json> summary;        // absent if the session was killed
  std::vector<nlohmann::json> events;
  bool truncated = false;
  std::string truncation;
  std::uint64_t file_size_bytes = 0;
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> channels;  // topic -> (messages, bytes)
  struct ChannelFormat {
    std::string encoding, schema, schema_encoding;  // schema empty: none
  };
  std::map<std::string, ChannelFormat> channel_formats;       // topic -> how its messages are encoded
  std::uint64_t first_log_time_ns = 0, last_log_time_ns = 0;  // over every message
  // counted whether or not they are kept (LoadOptions)
  std::uint64_t step_count = 0, first_step = 0, keyframe_count = 0, event_count = 0;

  /// The step record for step k, or nullptr.
  const StepRecord* step(std::uint64_t k) const;
};

/// What load_recording keeps in memory besides the scenario, commands, summary and counts.
/// Every record is decoded and checked either way; what is not kept is only counted, so a
/// recording of any length loads in the memory of one chunk (`tether info`).
struct LoadOptions {
  bool steps = true, states = true, keyframes = true, events = true;
};

/// Loads a recording; false with a clear reason for anything that is not a readable
/// Tether recording (never crashes on corrupt input). A truncated file loads what it has.
bool load_recording(const std::string& path, Recording& out, std::string* error, const LoadOptions& keep = {});

/// The `--set` options a recording was made with (its `overrides.txt` attachment, one a
/// line), in order; empty without. Its scenario is `scenario.yaml` with these applied.
std::vector<std::string> recorded_overrides(const mcap::Reader& reader);

/// Where a replayed state first differs from the recorded one.
struct Divergence {
  std::uint64_t step = 0;  // the step whose result differs
  std::string field;       // e.g. "bodies[0].position_m.z" (empty if only the hash is recorded)
  double recorded = 0;
  double replayed = 0;
  std::uint64_t recorded_hash = 0;
  std::uint64_t replayed_hash = 0;
  std::string describe() const;
};

/// Compares a replayed S_{k+1} with the recording; nullopt if bit-identical.
std::optional<Divergence> compare_state(const Recording& recording, const WorldState& replayed);

}  // namespace tether::runtime
