// SPDX-License-Identifier: Apache-2.0
// The MQTT endpoint's topics and payloads (docs/mqtt.md), JSON or protobuf, shared by the
// endpoint, the stand-in vehicle program, tests and benchmarks. Parsing never throws: every
// problem is a counted reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tether/loop/endpoint.hpp"
#include "tether/feedback/feedback.hpp"

namespace tether::hal {
class DeviceBank;
}

namespace tether::adapters::mqtt {

/// The payload schema version every message carries as "schema".
inline constexpr int schema_version = 1;
/// Payloads longer than this are rejected unread.
inline constexpr std::size_t default_max_payload_bytes = 64 * 1024;

/// tether/<session>/<vehicle_id>/{projected,feedback,actual,status} and the runtime's own
/// tether/<session>/runtime/status.
struct Topics {
  std::string projected;
  std::string feedback;
  std::string actual;
  std::string status;
  std::string runtime_status;
};
Topics topics_for(const std::string& session, const std::string& vehicle_id);

/// One actuator's command as numbers ("auv.hull.thruster_left": [0.5]).
struct NamedCommand {
  std::string device;
  std::vector<double> values;
};

/// What the vehicle reads from a projected message.
struct Projected {
  std::uint64_t step = 0;
  std::int64_t time_ns = 0;
  std::int64_t period_ns = 0;
  std::vector<NamedCommand> commands;
};

/// Why a message was rejected (none: accepted).
enum class Reject : std::uint8_t { none, oversize, not_json, schema, wrong_vehicle, bad_field, not_protobuf };
const char* to_string(Reject reason);

/// A feedback message, parsed.
struct Feedback {
  std::uint64_t step = 0;
  std::vector<runtime::Measurement> measurements;
};

/// What projected, actual and feedback payloads are written in (docs/mqtt.md, "Payloads"):
/// JSON, readable, the default; or protobuf (`tether/mqtt.proto`), smaller and cheaper to read
/// and write. Status messages are always JSON.
enum class Payload : std::uint8_t { json, protobuf };
const char* to_string(Payload format);
/// A protobuf payload begins with its `schema` field, tag byte 0x08, which no JSON text can:
/// the decoders below read either format by this first byte.
inline Payload payload_of(std::string_view bytes) {
  return !bytes.empty() && bytes.front() == '\x08' ? Payload::protobuf : Payload::json;
}

/// The actuators of `vehicle` (all, for -1) in the device table: the commands a vehicle obeys.
std::vector<std::size_t> vehicle_actuators(const hal::DeviceBank& devices, const runtime::WorldModel& model,
                                           int vehicle);

/// Writes the projected message for step ctx.step: the vehicle's predicted bodies and the
/// actuator commands the projection used (the effective commands held in `devices`).
void encode_projected(std::string& out, const std::string& vehicle_id, const runtime::StepContext& ctx,
                      const runtime::WorldModel& model, const runtime::WorldState& projected, int vehicle,
                      const hal::DeviceBank* devices, const std::vector<std::size_t>& actuators,
                      Payload format = Payload::json);
/// Writes the actual message (the state after the advance) for observers.
void encode_actual(std::string& out, const std::string& vehicle_id, const runtime::StepContext& ctx,
                   const runtime::WorldModel& model, const runtime::WorldState& actual, int vehicle,
                   Payload format = Payload::json);
/// Writes a feedback message; body names come from `model`.
void encode_feedback(std::string& out, const std::string& vehicle_id, std::uint64_t step,
                     const runtime::WorldModel& model, const std::vector<runtime::Measurement>& measurements,
                     Payload format = Payload::json);
/// Writes a status message ("online" / "offline"); `run` (the runtime's) names one session run.
std::string encode_status(const std::string& state, const std::string& client_id, const std::string& run = {});

/// Parses a projected message (JSON or protobuf) addressed to `vehicle_id`; `reason` says why not.
Reject parse_projected(std::string_view text, const std::string& vehicle_id, Projected& out, std::string& reason,
                       std::size_t max_bytes = default_max_payload_bytes);
/// Parses feedback (JSON or protobuf) from `vehicle_id` about bodies of `vehicle` in `model`.
Reject parse_feedback(std::string_view text, const std::string& vehicle_id, const runtime::WorldModel& model,
                      int vehicle, Feedback& out, std::string& reason,
                      std::size_t max_bytes = default_max_payload_bytes);
/// The "state" of a status message, or empty if it is not one; `run` gets its run id if any.
std::string parse_status(std::string_view text, std::string* run = nullptr);

}  // namespace tether::adapters::mqtt
