// SPDX-License-Identifier: Apache-2.0
// What a recording holds that replay depends on, and its encodings (docs/recording.md):
// the replay channels are protobuf messages of tether/recording.proto (docs/recording.proto),
// doubles as fixed64, so every number's bit pattern round-trips exactly.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tether/recording/operator_command.hpp"
#include "tether/scenario/step_data.hpp"

namespace tether::runtime {

/// Topics of the channels a recording has.
namespace topics {
inline constexpr const char* step = "/tether/step";                  // StepRecord per step (binary)
inline constexpr const char* state = "/tether/state";                // S_{k+1} per step (binary), small worlds
inline constexpr const char* keyframe = "/tether/keyframe";          // Keyframe every K steps (binary)
inline constexpr const char* timing = "/tether/timing";              // JSON: step time, round trips
inline constexpr const char* vehicles = "/tether/vehicles";          // JSON: depth, heading, speed per vehicle
inline constexpr const char* events = "/tether/events";              // JSON: misses, faults, aborts
inline constexpr const char* summary = "/tether/summary";            // JSON: the session summary, at the end
inline constexpr const char* feedback = "/tether/feedback";          // JSON: processors' corrections/estimates
inline constexpr const char* safe_replies = "/tether/safe_replies";  // each endpoint's safe reply (binary), once
inline constexpr const char* tf = "/tf";                             // foxglove.FrameTransform
inline constexpr const char* scene = "/scene";                       // foxglove.SceneUpdate
inline constexpr const char* log = "/log";                           // foxglove.Log
inline constexpr const char* commands = "/tether/commands";          // operator commands of a step (binary)
inline constexpr const char* actuators = "/tether/actuators";        // JSON: the actuators' last commands
}  // namespace topics

/// 1: little-endian layouts of our own (x-tether-binary); 2: protobuf (tether/recording.proto).
inline constexpr std::uint32_t recording_format_version = 2;

/// How a step's gather went for one endpoint, and what was applied.
enum class SlotOutcome : std::uint8_t { fresh = 0, timeout = 1, fault = 2 };

struct SlotRecord {
  SlotOutcome outcome = SlotOutcome::fresh;
  std::uint64_t round_trip_ns = 0;
  Reply reply;  // this step's reply if fresh (else empty)
};

/// Everything from outside that step k consumed, plus the hash of what it produced.
struct StepRecord {
  std::uint64_t step = 0;
  std::int64_t time_ns = 0;        // t_k
  std::uint64_t state_hash = 0;    // hash_state(S_{k+1}) after post-advance processors
  std::uint64_t step_time_ns = 0;  // wall time of phases 1-7
  std::vector<SlotRecord> slots;   // one per endpoint, in scenario order
};

/// A full snapshot from which replay can continue: taken after step `state.step - 1`.
struct Keyframe {
  WorldState state;                          // S_k
  StepInputs held_inputs;                    // inputs of step k-1 (the projection uses them)
  std::vector<Reply> last_replies;           // per endpoint: the reply `hold` would reuse
  std::string model_params;                  // serialize_model_params of the session's model
  std::vector<std::string> processor_state;  // per feedback processor
  std::string devices;                       // hal::DeviceBank::snapshot (noise streams, actuator states)
  std::string faults;                        // FaultInjector::snapshot (active faults); empty without
};

/// The operator commands step k applied (`/tether/commands`, only for steps that had any).
struct StepCommands {
  std::uint64_t step = 0;
  std::vector<OperatorCommand> commands;
};

void encode_step_commands(const StepCommands& commands, std::string& out);
bool decode_step_commands(std::string_view bytes, StepCommands& out, std::string* error);

/// Appends a tether.WorldState message to `out`.
void encode_state(const WorldState& state, std::string& out);
bool decode_state(std::string_view bytes, WorldState& state, std::string* error);
/// Appends a tether.Reply message (wrenches, commands and measurements) to `out`.
void encode_reply(const Reply& reply, std::string& out);
void encode_step(const StepRecord& record, std::string& out);
void encode_keyframe(const Keyframe& keyframe, std::string& out);
/// Parsers: false with a reason (offset and what was wrong) on malformed input; never read
/// past the end. Unknown fields are skipped; a field Tether always writes must be there, so
/// a record cut short anywhere is refused.
bool decode_step(std::string_view bytes, StepRecord& out, std::string* error);
bool decode_keyframe(std::string_view bytes, Keyframe& out, std::string* error);
/// What each endpoint's `safe` policy applies (tether.SafeReplies), so replay
/// applies exactly that on the recorded misses.
void encode_safe_replies(const std::vector<Reply>& replies, std::string& out);
bool decode_safe_replies(std::string_view bytes, std::vector<Reply>& out, std::string* error);

/// The model parameters online estimation may change (mass, volume, centre of buoyancy,
/// damping per body; water density and current), exactly.
std::string serialize_model_params(const WorldModel& model);
/// Same, into `out` (cleared first; its capacity is reused).
void serialize_model_params(const WorldModel& model, std::string& out);
bool restore_model_params(std::string_view bytes, WorldModel& model, std::string* error);

/// Little-endian byte writer/reader: model parameters and the recorder's own queue items.
class ByteWriter {
 public:
  explicit ByteWriter(std::string& out) : out_(out) {}
  void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u16(std::uint16_t v);
  void u32(std::uint32_t v);
  void u64(std::uint64_t v);
  void i64(std::int64_t v) { u64(static_cast<std::uint64_t>(v)); }
  void f64(double v);
  void vec3(const Vec3& v) {
    f64(v.x());
    f64(v.y());
    f64(v.z());
  }

 private:
  std::string& out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}
  bool u8(std::uint8_t& v);
  bool u16(std::uint16_t& v);
  bool u32(std::uint32_t& v);
  bool u64(std::uint64_t& v);
  bool i64(std::int64_t& v);
  bool f64(double& v);
  bool vec3(Vec3& v) { return f64(v.x()) && f64(v.y()) && f64(v.z()); }
  bool bytes(std::string_view& v);
  std::size_t offset() const { return pos_; }
  bool done() const { return pos_ == in_.size(); }

 private:
  std::string_view in_;
  std::size_t pos_ = 0;
};

}  // namespace tether::runtime
