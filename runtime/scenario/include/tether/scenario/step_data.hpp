// SPDX-License-Identifier: Apache-2.0
// One step as data: what the loop tells a participant about the step in progress and what
// the participant answers. The loop produces and consumes these; the recording stores them;
// neither needs the other to know them.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tether/physics/physics.hpp"

namespace tether::runtime {

/// What a physical vehicle (or a tracking system) reports about one body for one step.
struct Measurement {
  std::uint32_t body = 0;
  std::int64_t measured_time_ns = 0;  // sim time the measurement refers to (normally t_{k+1})
  bool has_pose = false;
  bool has_velocity = false;
  bool has_covariance = false;
  Vec3 position_m{0, 0, 0};
  Quat orientation = Quat::Identity();
  Vec3 velocity_m_s{0, 0, 0};            // world frame
  Vec3 angular_velocity_rad_s{0, 0, 0};  // world frame
  /// Pose covariance: position (m^2) then orientation as a rotation vector (rad^2).
  Eigen::Matrix<double, 6, 6> pose_covariance = Eigen::Matrix<double, 6, 6>::Identity();
};

/// What the loop tells an endpoint about the step in progress.
struct StepContext {
  std::uint64_t step = 0;      // k: the step being computed, S_k -> S_{k+1}
  std::int64_t time_ns = 0;    // t_k
  std::int64_t period_ns = 0;  // T
};

/// One actuator command: the device's index in the scenario's device table and its
/// payload bytes, laid out as firmware_shim/include/tether/firmware_shim/payloads.h says.
struct DeviceCommand {
  static constexpr std::size_t max_bytes = 16;
  std::uint16_t device = 0;
  std::uint8_t size = 0;
  std::array<std::uint8_t, max_bytes> bytes{};
};

/// A line of text an endpoint produced (firmware LOG): shown in the log and recorded.
struct LogLine {
  std::uint8_t level = 0;  // 0 info, 1 warning, 2 error
  std::string text;
};

/// Bytes that crossed an endpoint's link for this step, as they went (ArduPilot's servo
/// packet and Tether's JSON reply): recorded with the step, handed back unchanged by replay.
/// The bytes live in the reply's `wire_bytes` (one buffer, reused from step to step).
struct WireFrame {
  bool to_peer = false;  // false: from the other side; true: sent by Tether
  std::uint32_t offset = 0;
  std::uint32_t size = 0;
};

/// A Foxglove view of an endpoint's wire frames: the recorder writes one JSON message on
/// `/endpoints/NAME/SUFFIX` for each frame of the step that `render` accepts
/// (Endpoint::wire_topics, docs/recording.md "Wire frames").
struct WireTopic {
  std::string suffix;       // "servo", "servo/ch3", "reply"
  bool to_peer = false;     // which frames it shows
  std::string schema_name;  // its messages' JSON Schema (topics of one name share it)
  std::string schema;
  /// Appends one JSON object for `bytes` (the frame of step `step`) to `json`; false: this
  /// frame has nothing for the topic (and `json` is left as it was).
  std::function<bool(std::uint64_t step, std::string_view bytes, std::string& json)> render;
};

/// An endpoint's answer for one step. Buffers are reserved at configure time and reused.
struct Reply {
  std::uint64_t step = 0;
  /// Forces the endpoint asks to apply this step: (body index, wrench).
  std::vector<std::pair<std::uint32_t, BodyWrench>> wrenches;
  /// Actuator commands (firmware ACTUATE, in-process controllers using devices).
  std::vector<DeviceCommand> commands;
  /// What the endpoint measured of the real world this step (for feedback processors).
  std::vector<Measurement> measurements;
  /// Text the endpoint produced since its last reply (not part of the physics).
  std::vector<LogLine> logs;
  /// What crossed the link for this step, for the recording (not part of the physics):
  /// frames in order, their bytes in `wire_bytes` (add_wire, wire_frame).
  std::vector<WireFrame> wire;
  std::string wire_bytes;

  void add_wire(bool to_peer, std::string_view bytes) {
    wire.push_back(WireFrame{to_peer, static_cast<std::uint32_t>(wire_bytes.size()),
                             static_cast<std::uint32_t>(bytes.size())});
    wire_bytes.append(bytes);
  }
  std::string_view wire_frame(const WireFrame& f) const {
    return std::string_view(wire_bytes).substr(f.offset, f.size);
  }
  /// Copies another reply's wire frames (the buffers keep their capacity).
  void copy_wire(const Reply& from) {
    wire.assign(from.wire.begin(), from.wire.end());
    wire_bytes.assign(from.wire_bytes);
  }

  void clear() {
    wrenches.clear();
    commands.clear();
    measurements.clear();
    logs.clear();
    wire.clear();
    wire_bytes.clear();
  }
};

}  // namespace tether::runtime
