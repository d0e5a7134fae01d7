// SPDX-License-Identifier: Apache-2.0
// A scenario file, parsed: the world model, the initial state, the loop, the endpoints.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tether/hal/device_spec.hpp"
#include "tether/scenario/config.hpp"
#include "tether/scenario/expectations.hpp"
#include "tether/scenario/faults.hpp"
#include "tether/scenario/goals.hpp"
#include "tether/scenario/identify.hpp"
#include "tether/physics/world_model.hpp"
#include "tether/physics/world_state.hpp"

namespace tether::runtime {

/// What the loop does when an endpoint's reply misses its deadline (docs/architecture.md, "Timeout policies").
enum class TimeoutPolicy : std::uint8_t { block, hold, safe, abort };

const char* to_string(TimeoutPolicy policy);

/// `loop.plausibility`: the gate every measurement passes before the feedback processors see
/// it (docs/scenario.md). A measurement outside the world box (the tank's walls and floor,
/// else `max_distance_m` from the origin, widened by `margin_m`) or implying a speed beyond
/// the bounds is rejected and counted against its endpoint.
struct PlausibilityConfig {
  bool enabled = true;
  double margin_m = 1.0;
  double max_distance_m = 10'000.0;
  double max_speed_m_s = 100.0;
  double max_angular_speed_rad_s = 100.0;
};

/// `loop.realtime`: what the loop thread asks of the operating system (docs/scenario.md).
/// Each option the system refuses is a warning naming what to grant, never a failure.
struct RealtimeConfig {
  bool lock_memory = false;  // mlockall: no page faults on the loop's memory
  int priority = 0;          // SCHED_FIFO at this priority (1..99); 0: the normal scheduler
  int cpu = -1;              // pin the loop thread to this CPU; -1: anywhere
  std::int64_t spin_us = 0;  // the pacer spins the last spin_us of each wait instead of sleeping
  bool any() const { return lock_memory || priority > 0 || cpu >= 0; }  // what RealtimeGuard applies
};

struct LoopConfig {
  std::int64_t period_ns = 10'000'000;
  double real_time_factor = 1.0;  // 0 = as fast as the participants allow
  std::uint64_t steps = 1000;
  std::uint64_t seed = 1;
  std::uint32_t history_steps = 256;  // states the session keeps for rewind and state_at(t)
  PlausibilityConfig plausibility;
  RealtimeConfig realtime;
  bool profile_phases = false;  // time every phase of every step (summary "phases")
};

/// The keys every endpoint has; type-specific keys stay in `node` for the endpoint's own parser.
struct EndpointConfig {
  std::string name;
  std::string type;
  std::string vehicle;
  int vehicle_index = -1;
  std::int64_t deadline_ns = 0;
  TimeoutPolicy policy = TimeoutPolicy::hold;
  ConfigNode node;
};

/// The `recording` section: where and how `tether run` records (docs/recording.md).
struct RecordingConfig {
  bool enabled = true;
  bool compress = true;
  std::uint32_t keyframe_every_steps = 100;
  double flush_interval_s = 1.0;                   // at most this much recording is lost on SIGKILL
  std::uint32_t queue_slots = 4096;                // steps buffered between the loop and the writer thread
  std::uint32_t state_every_step_max_bodies = 64;  // full state per step up to this many bodies
  /// `on_write_error`: what the session does once the recording cannot be written (a full
  /// disk, a file size limit, an I/O error): `stop` ends it cleanly after the step with the
  /// outcome `recording_failed`; `continue` goes on without recording, loudly
  /// (docs/recording.md, "When the disk is full").
  bool stop_on_write_error = true;
};

/// `live:`: the live server (docs/live.md). `tether run --live [HOST:]PORT` turns it on too.
struct LiveConfig {
  bool enabled = false;
  std::string host = "127.0.0.1";  // loopback unless told; any other address needs a token
  std::uint16_t port = 8765;       // 0: any free port (printed)
  std::string token;               // clients present it (?token= or Authorization: Bearer)
  std::uint32_t max_clients = 8;
  std::uint32_t queue_messages = 1024;  // per client; the oldest data is dropped beyond it
  std::uint32_t max_frame_bytes = 65536;
  double max_rate_hz = 1000;  // per channel: the most messages a second clients get (0: every one)
  bool start_paused = false;
};

/// One feedback processor entry of a vehicle (vehicles[i].feedback[j]); parsed by the processor.
struct FeedbackConfig {
  std::string name;
  std::string type;
  int vehicle = -1;
  ConfigNode node;
};

struct Scenario {
  std::string name;
  std::string path;
  std::string source_text;             // the file as read, kept for the recording
  std::vector<std::string> overrides;  // `--set PATH=VALUE` applied on top of it, in order
  WorldModel model;
  WorldState initial;
  LoopConfig loop;
  std::vector<EndpointConfig> endpoints;
  std::vector<FeedbackConfig> feedback;         // in the order the file lists them
  std::vector<hal::DeviceSpec> devices;         // every body's devices; index = device index
  std::vector<int> cables;                      // `cables:` as the vehicles they became (model.vehicles index)
  std::vector<GoalConfig> goals;                // `goals:`, reported in the session summary
  std::vector<ExpectationConfig> expectations;  // `expect:`, the run's verdict
  std::vector<FaultConfig> faults;              // `faults:`, injected by the loop
  IdentifyPlan identify;                        // `identify:`, flown by an in-process controller
  RecordingConfig recording;
  LiveConfig live;
  std::shared_ptr<ConfigContext> context;  // for errors found later (endpoint parsers)

  /// Throws ConfigError if anything has recorded an error against this scenario's file.
  void throw_if_errors() const;
};

/// The key names each endpoint entry may always have; endpoint parsers add their own.
inline constexpr const char* endpoint_common_keys[] = {"name", "type", "vehicle", "deadline_ms", "timeout_policy"};

/// Reads and validates a scenario file. Throws ConfigError listing every problem found.
Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides = {});
/// Same, from text; `label` names the file in messages.
Scenario parse_scenario(const std::string& text, const std::string& label,
                        const std::vector<std::string>& overrides = {});

}  // namespace tether::runtime
