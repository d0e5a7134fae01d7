// SPDX-License-Identifier: Apache-2.0
// The live services (docs/live.md, "Services"): one row per service in one table — its
// name, its request's keys (type, range, required or not) and its handler, which turns a
// request into a session request. The server dispatches through it, advertises the schemas
// it derives from the keys, and checks every request against them strictly before the
// handler runs: an unknown key, a missing required key, a wrong type or a value out of range
// is answered with what is wrong. `tether ctl` reads the same rows. Adding a service is a
// row (docs/extending.md, "A live service"; template: examples/live_service/).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tether/loop/control.hpp"

namespace tether::live {

enum class KeyType : std::uint8_t {
  integer,  // a whole number
  number,   // a finite number
  string,
  vec3,     // [x, y, z], finite numbers
  object,   // any JSON object
  boolean,  // true or false
};

/// One key of a service's request.
struct RequestKey {
  std::string name;
  KeyType type = KeyType::number;
  bool required = false;
  double min = -std::numeric_limits<double>::infinity();  // integer, number: inclusive
  double max = std::numeric_limits<double>::infinity();
  std::vector<std::string> choices;  // string: the values it may take (empty: any)
  std::string description;           // what it is, with its unit and default
  /// Not empty: the key is known but refused, with this reason (not advertised).
  std::string refused;
};

/// What a handler may need besides the request.
struct ServiceContext {
  const runtime::BodyNames& bodies;  // the names a request may give a body
};

/// Turns a request that passed the key check into what the session is asked; false with
/// the reason for what the keys cannot say (an unknown body, an empty name).
using ServiceHandler = std::function<bool(const nlohmann::json& request, const ServiceContext& context,
                                          runtime::ControlRequest::Action& out, std::string* why)>;

struct Service {
  std::string name;         // "/tether/step"
  std::string type;         // the schema's name: "tether/Step"
  std::string description;  // one line: what it does
  std::vector<RequestKey> keys;
  std::string response_schema;  // JSON Schema text of the answer
  bool changes_world = false;   // a replay served live refuses it
  ServiceHandler handler;
  std::uint32_t id = 0;  // given by ServiceTable::add, in order from 1
};

class ServiceTable {
 public:
  /// Makes a service known and gives it the next id; false (the first one stays) if the
  /// name is taken or it has no handler. Call before a server starts; not thread-safe.
  bool add(Service service);
  const Service* find(std::uint32_t id) const;
  const Service* find(std::string_view name) const;
  /// Every service, in id order.
  const std::vector<Service>& entries() const { return services_; }

 private:
  std::vector<Service> services_;
};

/// The services a live session offers: the built-ins (/tether/status, pause, resume, step,
/// run_until, set_rtf, apply_force, remove_force, shutdown, seek, inject_fault; ids 1..11;
/// the autopilot services autopilot_arm, autopilot_mode, autopilot_manual, autopilot_target;
/// ids 12..15) registered on first use, then whatever `add` was given.
ServiceTable& services();
const Service* find_service(std::uint32_t id);
const Service* find_service(std::string_view name);

/// Checks `request` against the service's keys: every problem, joined by "; ", in `why`.
bool validate_request(const Service& service, const nlohmann::json& request, std::string* why);
/// The request's JSON Schema (advertised to clients), derived from the keys.
std::string request_schema(const Service& service);

/// A service's JSON request as a session request (without its `done`): parsed, checked
/// against the keys, then handled. False with the reason.
bool build_request(const Service& service, std::string_view payload, const runtime::BodyNames& bodies,
                   runtime::ControlRequest& out, std::string* why);

/// Common response schemas: the session's status, and "accepted at step k".
extern const char* const status_response_schema;
extern const char* const accepted_response_schema;

}  // namespace tether::live
