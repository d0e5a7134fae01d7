// SPDX-License-Identifier: Apache-2.0
// Firmware regression replay (`tether replay REC --firmware ENDPOINT=LAUNCH`, docs/recording.md):
// a new firmware build takes the place of a recorded serial endpoint. Each step it gets the
// SENSORS the recorded firmware got — recomputed by the replay from the recorded states with
// the same device noise streams, which is exact while the replayed states stay bit-identical
// to the recording — and its ACTUATE commands are compared with the recorded ones, channel by
// channel. Open loop (the default): the world follows the recording, the new commands are only
// compared. Closed loop: the new commands drive the world; the other endpoints (a vehicle's
// measurements over MQTT, say) are still replayed from the recording.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tether/serial/serial_endpoint.hpp"
#include "tether/loop/endpoint.hpp"
#include "tether/loop/replay_endpoint.hpp"

namespace tether::adapters {

/// `--firmware ENDPOINT=LAUNCH`: which recorded endpoint, and what to launch in its place.
struct FirmwareSpec {
  std::string endpoint;
  std::string launch;  // "path/to/host_build [args]" or "qemu:path/to/image.elf"
};

/// Parses `ENDPOINT=LAUNCH`; false with a message saying what was expected.
bool parse_firmware_spec(const std::string& text, FirmwareSpec& out, std::string* error);

/// The launch for LAUNCH: a host program (split at spaces; a path with a slash is made
/// absolute against the current folder) on a pty the runtime creates, or with `qemu:` a
/// Cortex-M image under qemu-system-arm. False with a message for an empty launch.
bool launch_from_spec(const std::string& launch, SerialLaunchConfig& out, std::string* error);

enum class RegressionMode : std::uint8_t { open_loop, closed_loop };

const char* to_string(RegressionMode mode);

/// One actuator value compared over the run: a device's command, or one float of a
/// multi-float payload (`auv.base.wheels[1]`).
struct ChannelComparison {
  std::string name;
  std::uint16_t device = 0;            // index in the scenario's device table
  std::uint8_t component = 0;          // which f32 of the payload
  std::uint64_t compared = 0;          // steps where both firmwares commanded it
  std::uint64_t beyond_tolerance = 0;  // of those, |new - recorded| > tolerance (or NaN on one side)
  std::uint64_t missing = 0;           // steps where only one of the two commanded it
  std::optional<std::uint64_t> first_divergent_step;
  double first_recorded = 0;  // the values at the first divergent step (NaN: no command)
  double first_new = 0;
  double max_abs_diff = 0;
  std::uint64_t max_abs_diff_step = 0;
  double sum_sq_diff = 0;

  /// Root mean square of (new - recorded) over the compared steps; 0 if none.
  double rms_diff() const;
};

/// Compares two firmwares' ACTUATE commands step by step (no allocation per step).
class CommandComparison {
 public:
  /// One channel per float of every actuator in `table` (names from the device table).
  CommandComparison(const std::vector<SerialDevice>& table, double tolerance);

  /// Step k: both firmwares answered; compares every channel.
  void compare(std::uint64_t step, const std::vector<runtime::DeviceCommand>& recorded,
               const std::vector<runtime::DeviceCommand>& fresh);
  /// Step k was not compared: the recorded firmware had no reply in time for it.
  void recorded_missing() { ++recorded_missing_; }
  /// Step k was not compared: the new firmware failed (it is not asked again).
  void new_failed(std::uint64_t step, const std::string& why);
  /// Counts a step after the new firmware failed.
  void not_compared_after_failure() { ++after_failure_; }

  bool failed() const { return failure_.has_value(); }
  /// Some channel differed beyond the tolerance, went missing, or the new firmware failed.
  bool diverged() const;
  /// The first step where any channel diverged (or the new firmware failed).
  std::optional<std::uint64_t> first_divergent_step() const;
  std::uint64_t steps_compared() const { return steps_compared_; }
  const std::vector<ChannelComparison>& channels() const { return channels_; }
  double tolerance() const { return tolerance_; }

  /// {tolerance, steps_compared, steps_not_compared: {...}, diverged, first_divergent_step,
  /// new_firmware_failure, channels: [...]}
  nlohmann::json to_json() const;

 private:
  std::vector<ChannelComparison> channels_;
  std::vector<int> first_channel_;                      // per device index: its first channel, or -1
  std::vector<std::uint8_t> seen_recorded_, seen_new_;  // per channel, this step
  std::vector<double> value_recorded_, value_new_;
  double tolerance_;
  std::uint64_t steps_compared_ = 0;
  std::uint64_t recorded_missing_ = 0;
  std::uint64_t after_failure_ = 0;
  std::optional<std::pair<std::uint64_t, std::string>> failure_;
};

/// Stands in for a recorded serial endpoint during replay: plays the recorded replies back
/// (open loop) or the new firmware's (closed loop), and feeds every step to both sides of
/// the comparison. The new firmware is given `reply_timeout_ns` per step (the deadline the
/// session sees); the timing of the recording does not apply to it.
class RegressionEndpoint final : public runtime::Endpoint {
 public:
  static constexpr std::int64_t default_reply_timeout_ns = 10'000'000'000;

  RegressionEndpoint(const runtime::EndpointConfig& recorded, const runtime::Recording& recording, std::size_t index,
                     std::unique_ptr<SerialEndpoint> fresh, RegressionMode mode, double tolerance,
                     std::int64_t reply_timeout_ns = default_reply_timeout_ns);

  /// Starts the new firmware (throws as SerialEndpoint::start does).
  void start(const runtime::WorldModel& model, const runtime::WorldState& initial) override;
  [[nodiscard]] bool publish(const runtime::StepContext& ctx, const runtime::WorldState& projected) override;
  /// The new firmware's reply first (compared), then the recorded one; returns the
  /// recorded outcome (open loop) or the new firmware's (closed loop).
  [[nodiscard]] runtime::GatherStatus gather(const runtime::StepContext& ctx, runtime::SteadyClock::time_point deadline,
                                             runtime::Reply& reply) override;
  void emit(const runtime::StepContext& ctx, const runtime::WorldState& actual) override;
  void safe_reply(runtime::Reply& reply) const override;
  void stop() override;
  /// Adds "regression" (the comparison) and "new_firmware" (the serial endpoint's summary).
  void summarize(nlohmann::json& out) const override;

  const CommandComparison& comparison() const { return comparison_; }
  /// The recorded firmware as the recording's summary names it ("name, build 0x...").
  std::string recorded_firmware() const;
  /// The new firmware as its HELLO named it, after start().
  std::string new_firmware_description() const;
  RegressionMode mode() const { return mode_; }
  SerialEndpoint& new_firmware() { return *fresh_; }

 private:
  const runtime::Recording& recording_;
  std::size_t index_;
  runtime::ReplayEndpoint recorded_;
  std::unique_ptr<SerialEndpoint> fresh_;
  RegressionMode mode_;
  CommandComparison comparison_;
  runtime::Reply recorded_reply_;
  runtime::Reply fresh_reply_;
  runtime::GatherStatus recorded_status_ = runtime::GatherStatus::ready;
  runtime::GatherStatus fresh_status_ = runtime::GatherStatus::ready;
  std::uint64_t gathered_step_ = ~std::uint64_t{0};  // a `block` policy gathers a step again
  std::uint64_t fresh_replies_ = 0;                   // the new firmware's answered steps
  std::uint64_t fresh_faults_ = 0;                    // and those it was faulted on
};

/// Builds the stand-in for `spec.endpoint` of the recording: the recorded endpoint's serial
/// settings and device table with the launch replaced. Throws std::invalid_argument (no
/// such endpoint, not a serial endpoint, bad launch) with a message for the user.
std::unique_ptr<RegressionEndpoint> make_regression_endpoint(const runtime::Recording& recording,
                                                             const FirmwareSpec& spec, RegressionMode mode,
                                                             double tolerance);

/// The comparison as text for people: what ran, how many steps, the verdict, one line per
/// channel (first divergent step, max |diff| and its step, RMS, steps beyond tolerance).
std::string regression_report_text(const RegressionEndpoint& endpoint, const std::string& launch);

}  // namespace tether::adapters
