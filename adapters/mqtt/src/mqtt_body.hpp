// SPDX-License-Identifier: Apache-2.0
// What the JSON and the protobuf decoders of the MQTT payloads share (internal to
// mqtt_messages.cpp and mqtt_protobuf.cpp): a feedback body as the payload gave it, checked
// by one function so both formats accept and refuse the same things with the same reasons.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "tether/mqtt/mqtt_messages.hpp"

namespace tether::adapters::mqtt::detail {

/// A list of numbers as a payload gave it, before any check.
struct Numbers {
  bool present = false;
  bool ok = true;  // every element was a number and there were at most 36
  std::size_t n = 0;
  double v[36] = {};
  void add(double x) {
    if (n < 36)
      v[n++] = x;
    else
      ok = false;
  }
  /// present with exactly `count` finite numbers
  bool exactly(std::size_t count) const;
};

/// One body of a feedback message, unchecked.
struct RawBody {
  bool has_name = false;
  std::string name;
  bool has_time = false;
  std::int64_t measured_time_ns = 0;
  Numbers position, orientation, velocity, angular_velocity, covariance;
};

/// Checks a body against the model and fills the measurement; `reason` says why not.
Reject check_body(const RawBody& b, const runtime::WorldModel& model, int vehicle, runtime::Measurement& m,
                  std::string& reason);

/// At most 4 finite numbers: an actuator command's channels.
bool command_values(const Numbers& values);

/// The protobuf encoders and decoders (mqtt_protobuf.cpp); the size limit is checked by the
/// caller.
void encode_projected_protobuf(std::string& out, const std::string& vehicle_id, const runtime::StepContext& ctx,
                               const runtime::WorldModel& model, const runtime::WorldState& projected, int vehicle,
                               const hal::DeviceBank* devices, const std::vector<std::size_t>& actuators);
void encode_actual_protobuf(std::string& out, const std::string& vehicle_id, const runtime::StepContext& ctx,
                            const runtime::WorldModel& model, const runtime::WorldState& actual, int vehicle);
void encode_feedback_protobuf(std::string& out, const std::string& vehicle_id, std::uint64_t step,
                              const runtime::WorldModel& model, const std::vector<runtime::Measurement>& measurements);
Reject parse_projected_protobuf(std::string_view bytes, const std::string& vehicle_id, Projected& out,
                                std::string& reason);
Reject parse_feedback_protobuf(std::string_view bytes, const std::string& vehicle_id, const runtime::WorldModel& model,
                               int vehicle, Feedback& out, std::string& reason);

}  // namespace tether::adapters::mqtt::detail
