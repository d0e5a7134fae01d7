// SPDX-License-Identifier: Apache-2.0
// An endpoint is one participant of the lock-step: firmware, a vehicle, an observer.
// Each step the loop publishes the projected state to every endpoint, then gathers
// each endpoint's reply for that step until its deadline (docs/architecture.md, "One step", phases 2 and 3).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tether/loop/fault_injector.hpp"
#include "tether/feedback/feedback.hpp"
#include "tether/scenario/step_data.hpp"
#include "tether/loop/histogram.hpp"
#include "tether/physics/physics.hpp"
#include "tether/scenario/scenario.hpp"

namespace tether::hal {
class DeviceBank;
}

namespace tether::runtime {

using SteadyClock = std::chrono::steady_clock;

enum class GatherStatus : std::uint8_t {
  ready,    // `reply` holds the reply for this step
  timeout,  // nothing for this step before the deadline
  fault,    // the endpoint is broken (peer died, port gone); see fault_message()
};

/// What an endpoint's link saw that the session cannot: counted by the endpoint alone and
/// reported by Endpoint::link_counts(); in the summary beside the session's counters.
struct LinkCounts {
  std::uint64_t stale = 0;    // replies for another step, not applied
  std::uint64_t corrupt = 0;  // undecodable input
};

/// What the session sees of an endpoint's steps, counted by the session alone
/// (Session::endpoint_counters()); in the summary and the recording.
struct EndpointCounters {
  std::uint64_t replies = 0;      // replies applied on time
  std::uint64_t late = 0;         // replies that came after the deadline (policy block)
  std::uint64_t misses = 0;       // steps without a reply (policy hold/safe/abort applied)
  std::uint64_t implausible = 0;  // measurements the plausibility gate rejected (loop.plausibility)
  std::uint64_t faults = 0;       // steps the endpoint was faulted
  Histogram round_trip_ns;        // publish -> reply
};

class Endpoint {
 public:
  explicit Endpoint(const EndpointConfig& config)
      : name_(config.name), type_(config.type), vehicle_(config.vehicle_index), deadline_ns_(config.deadline_ns),
        policy_(config.policy) {}
  virtual ~Endpoint() = default;
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  const std::string& name() const { return name_; }
  const std::string& type() const { return type_; }
  int vehicle() const { return vehicle_; }
  std::int64_t deadline_ns() const { return deadline_ns_; }
  TimeoutPolicy policy() const { return policy_; }

  /// The session's devices, before start(): sensors are sampled on the projected state
  /// before publish(), so an endpoint reads this step's readings from the bank there;
  /// its actuator commands go back as Reply::commands (device index + payload bytes).
  void attach_devices(const hal::DeviceBank* devices) { devices_ = devices; }

  /// The session paused (true) or resumed (false) between steps, steered by an operator
  /// (docs/live.md); nothing is published while it is paused. The default does nothing: a
  /// firmware keeps its link and simply gets no frame until the next step.
  virtual void paused(bool on) { (void)on; }

  /// What start() would fail on that can be seen before anything starts: a program or a
  /// firmware image it would launch that is not there. One message each, naming the
  /// endpoint (adapters/launch_check.hpp); `tether check` prints them for every endpoint.
  /// Default: nothing to check.
  virtual std::vector<std::string> launch_problems() const { return {}; }

  /// Connects, launches or opens what the endpoint talks to. Off the hot path; throws
  /// std::runtime_error with a message naming the endpoint on failure.
  virtual void start(const WorldModel& model, const WorldState& initial) {
    (void)model;
    (void)initial;
  }
  /// This step's link faults (docs/faults.md), handed over before publish(). Endpoints
  /// with a transport (serial, MQTT) apply them to the bytes they send and receive through
  /// LinkShaper; the default ignores them (replay applies what the recording holds).
  virtual void set_link_faults(const LinkFaults& faults) { (void)faults; }
  /// Phase 2: hands over the projected state S'_{k+1} for step k. Never blocks past the
  /// endpoint's deadline; false on a fault (see fault_message()).
  [[nodiscard]] virtual bool publish(const StepContext& ctx, const WorldState& projected) = 0;
  /// Phase 3: waits until the reply for ctx.step is in `reply` or `deadline` passes.
  [[nodiscard]] virtual GatherStatus gather(const StepContext& ctx, SteadyClock::time_point deadline, Reply& reply) = 0;
  /// Phase 7: the actual state S_{k+1} after the advance, for observers.
  virtual void emit(const StepContext& ctx, const WorldState& actual) {
    (void)ctx;
    (void)actual;
  }
  /// The reply applied under the `safe` policy (e.g. thrusters off). Default: no forces.
  virtual void safe_reply(Reply& reply) const { reply.clear(); }
  /// An operator's command for this endpoint (EndpointCommand, docs/live.md): `verb` with its
  /// `arguments` (a JSON object). `apply` false: only checked, when the request comes; true:
  /// done, between steps, at the step it is recorded with. False with the reason in `why`.
  /// Default: refused, this endpoint takes none.
  virtual bool operator_command(std::string_view verb, const nlohmann::json& arguments, bool apply, std::string* why) {
    (void)verb;
    (void)arguments;
    (void)apply;
    if (why) *why = "endpoint \"" + name_ + "\" (type " + type_ + ") takes no operator commands";
    return false;
  }
  /// Stops what start() started. Must be safe to call twice.
  virtual void stop() {}
  /// How the recording shows the frames this endpoint puts in Reply::wire (Foxglove topics
  /// under `/endpoints/NAME/`). Default: none (its frames, if any, are only in the steps).
  virtual std::vector<WireTopic> wire_topics() const { return {}; }
  /// What its link saw (stale replies, undecodable input), for the summary. Default: nothing.
  virtual LinkCounts link_counts() const { return {}; }
  /// Adds endpoint-specific figures to the summary (a JSON object).
  virtual void summarize(nlohmann::json& out) const { (void)out; }
  /// Why the endpoint faulted, for the summary and the log.
  const std::string& fault_message() const { return fault_message_; }
  /// The loop records why the endpoint faulted when one of its calls threw.
  void set_fault_message(std::string message) { fault_message_ = std::move(message); }


 protected:
  std::string fault_message_;
  const hal::DeviceBank* devices_ = nullptr;

 private:
  std::string name_;
  std::string type_;
  int vehicle_;
  std::int64_t deadline_ns_;
  TimeoutPolicy policy_;
};

}  // namespace tether::runtime
