// SPDX-License-Identifier: Apache-2.0
// Operator commands: what a live client asks that changes the world (a force, a gain, a
// fault). One struct per kind in one variant, so every switch over them is a std::visit the
// compiler checks (a kind added here without its case elsewhere does not build). One codec:
// JSON (the live services' requests) and the recording's fields (tether.OperatorCommand on
// /tether/commands, unchanged since format 2). Applied in phase 4 of the step they are
// recorded with, so replay applies them again at the same step (docs/live.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tether/physics/math.hpp"

namespace tether::runtime {

/// std::visit with one lambda per alternative: `std::visit(overloaded{[](const A&) {...}, ...}, v)`.
/// Write no `auto` catch-all, so a new alternative is a compile error where it is not handled.
template <class... F>
struct overloaded : F... {
  using F::operator()...;
};
template <class... F>
overloaded(F...) -> overloaded<F...>;

/// A named force (N) and torque (N·m) on a body from the step it applies, until removed or
/// for `duration_s` of simulation time. A force of the same name is replaced.
struct ApplyForce {
  static constexpr const char* kind = "apply_force";
  std::string name;
  std::uint32_t body = 0;   // the body's index
  bool body_frame = false;  // force, torque and point in the body frame (else world axes)
  Vec3 force_n{0, 0, 0};
  Vec3 torque_nm{0, 0, 0};
  Vec3 point_m{0, 0, 0};  // where the force acts, body frame, from the centre of mass
  double duration_s = 0;  // simulation seconds; 0 = until removed
};

/// Removes the force of that name from the step it applies.
struct RemoveForce {
  static constexpr const char* kind = "remove_force";
  std::string name;
};

/// A feedback processor's tunable parameter ("feedback.<processor>.<field>").
struct SetParameter {
  static constexpr const char* kind = "set_parameter";
  std::string name;
  double value = 0;
};

/// A seeded fault (docs/faults.md): the keys of a scenario's `faults:` entry, kept as the
/// text of a JSON object. The session parses it against its scenario as it parses its own
/// (endpoints and devices by name), at the step it applies: that is what replay repeats.
struct InjectFault {
  static constexpr const char* kind = "inject_fault";
  std::string entry;
};

/// A command for one endpoint, which the session hands to it (Endpoint::operator_command)
/// at the step it applies: an autopilot's arming, mode, pilot input, targets (docs/live.md,
/// "Autopilot services"). The endpoint checks the arguments; a replayed endpoint ignores
/// the command (its recorded replies hold what the command did).
struct EndpointCommand {
  static constexpr const char* kind = "endpoint_command";
  std::string endpoint;   // the endpoint's name
  std::string verb;       // what to do: the live service's short name ("autopilot_arm")
  std::string arguments;  // a JSON object's text: the request's other keys
};

/// What a feedback processor did with the result of its background work (the estimate's
/// refit) in a paced session (docs/feedback.md, "Background work"): deferred it at the step
/// it was due (not ready yet), or took it at the first step it was ready. The session makes
/// it, never a client (no live service sends it), and records it at its step; replay hands it
/// to the processor at the same step, so the result is taken where it was.
struct BackgroundTake {
  static constexpr const char* kind = "background_take";
  std::string processor;  // the processor's name
  bool taken = false;     // false: deferred; true: taken
};

/// The recording's kind numbers are the alternatives' indices + 1 (tether.CommandKind):
/// append new kinds at the end.
using OperatorCommand =
    std::variant<ApplyForce, RemoveForce, SetParameter, InjectFault, EndpointCommand, BackgroundTake>;

/// "apply_force", "remove_force", "set_parameter", "inject_fault", "endpoint_command",
/// "background_take".
const char* kind_name(const OperatorCommand& command);

/// The names a request may give a body ("vehicle.part", and "vehicle" for its first body)
/// with the body's index.
using BodyNames = std::vector<std::pair<std::string, std::uint32_t>>;

/// JSON: the command as the request of its live service (`/tether/<kind>`); the body by its
/// first name in `bodies` (its index when it has none there).
nlohmann::json command_to_json(const OperatorCommand& command, const BodyNames& bodies);
/// The command of kind `kind` from its request; false with what is wrong (a missing or
/// mistyped key, an unknown body: the known ones listed). Keys it does not read are not
/// checked here: the live service table rejects unknown keys before (adapters/live).
bool command_from_json(std::string_view kind, const nlohmann::json& request, const BodyNames& bodies,
                       OperatorCommand& out, std::string* why);

/// The recording's flat form (tether.OperatorCommand, docs/recording.md): every field,
/// those a kind does not use left at zero, so a recording is written as it always was.
struct OperatorCommandFields {
  std::uint8_t kind = 0;  // the variant's index + 1
  std::string
      name;  // a force's, parameter's or processor's name; the fault's entry or the endpoint command (JSON text)
  std::uint32_t body = 0;
  bool body_frame = false;
  Vec3 force_n{0, 0, 0};
  Vec3 torque_nm{0, 0, 0};
  Vec3 point_m{0, 0, 0};
  double duration_s = 0;
  double value = 0;  // a parameter's value; background_take: 1 taken, 0 deferred
};
OperatorCommandFields to_fields(const OperatorCommand& command);
/// False for a kind this build does not know.
bool from_fields(OperatorCommandFields fields, OperatorCommand& out);

}  // namespace tether::runtime
