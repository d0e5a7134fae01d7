// SPDX-License-Identifier: Apache-2.0
// A physical vehicle in the loop over MQTT (docs/mqtt.md). Each step the endpoint publishes
// the projected state and the actuator commands to tether/<session>/<vehicle>/projected and
// waits, until its deadline, for the vehicle's feedback for that step on .../feedback; the
// reply carries the vehicle's Measurements. Paho's callbacks only parse and queue; the loop
// waits on a condition variable with the step's deadline. Stale, duplicate, out-of-order and
// malformed messages are counted and never applied. Paho reconnects by itself; while the
// broker is away the endpoint's timeout policy applies.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tether/process/config_text.hpp"
#include "tether/mqtt/mqtt_messages.hpp"
#include "tether/loop/endpoint.hpp"
#include "tether/scenario/scenario.hpp"

namespace tether::adapters {

/// `launch:`: a program the endpoint starts before connecting (e.g. tether-vehicle).
/// `launch:`; in its command {broker} {session} {vehicle_id} {scenario} are replaced at start.
using MqttLaunchConfig = ProgramLaunchConfig;

/// Everything an MQTT endpoint needs besides the common endpoint keys.
/// An mqtt endpoint entry's own keys, beside runtime::endpoint_common_keys (docs/mqtt.md).
inline constexpr const char* mqtt_endpoint_keys[] = {
    "broker",         "client_id",    "username",           "password",       "ca_file",           "session",
    "vehicle_id",     "qos",          "tcp_nodelay",        "publish_actual", "keep_alive_s",      "connect_timeout_ms",
    "wait_online_ms", "max_payload_bytes", "payload",       "resend_ms",      "launch"};

struct MqttEndpointConfig {
  std::string broker = "tcp://127.0.0.1:1883";
  std::string client_id;  // default: tether-<session>-<vehicle_id>-runtime
  std::string username;
  std::string password;
  std::string ca_file;  // ssl:// brokers: the CA certificate file
  std::string session = "default";
  std::string vehicle_id;  // default: the endpoint's vehicle name
  std::string scenario_path;
  int qos = 1;              // projected and feedback
  bool tcp_nodelay = true;  // on Paho's socket (docs/mqtt.md)
  bool publish_actual = true;
  std::int64_t keep_alive_s = 5;
  std::int64_t connect_timeout_ms = 5000;
  std::int64_t wait_online_ms = 10000;  // start() waits for the vehicle's "online" status; 0: not
  std::int64_t resend_ms = 500;         // projected(k) again after this long without feedback(k); 0: never
  std::size_t max_payload_bytes = 64 * 1024;
  mqtt::Payload payload = mqtt::Payload::json;  // projected and actual; feedback is read in either
  std::optional<MqttLaunchConfig> launch;
};

/// Reads a `type: mqtt` endpoint's keys; records positioned errors in the scenario's context.
MqttEndpointConfig parse_mqtt_config(const runtime::EndpointConfig& config, const runtime::Scenario& scenario);

/// What the endpoint saw, beyond EndpointCounters.
struct MqttCounters {
  std::uint64_t published = 0;       // projected messages handed to Paho
  std::uint64_t publish_errors = 0;  // publishes refused (broker away)
  std::uint64_t received = 0;        // feedback messages received
  std::uint64_t applied = 0;         // feedback messages applied (one per step at most)
  std::uint64_t stale = 0;           // for an earlier step
  std::uint64_t duplicate = 0;       // for the step already applied
  std::uint64_t out_of_order = 0;    // for a step not published yet when it arrived
  std::uint64_t retained = 0;        // a retained message (left on the broker), never applied
  std::uint64_t malformed = 0;       // not JSON, wrong schema or types, oversize
  std::uint64_t wrong_vehicle = 0;   // another vehicle's id or bodies
  std::uint64_t queue_overflow = 0;  // dropped because the loop did not keep up
  std::uint64_t connects = 0;        // successful connections (1 + reconnects)
  std::uint64_t republished = 0;     // projected sent again after a refused publish or a reconnect
  std::uint64_t connection_lost = 0;
  std::uint64_t vehicle_offline = 0;  // "offline" status messages (last will or clean exit)
  int nodelay_sockets = 0;            // sockets TCP_NODELAY was set on
};

/// Hides the MQTT endpoints' info lines (progress, the vehicle program's output); warnings
/// and errors still show. For benchmarks.
void set_mqtt_logs_quiet(bool quiet);

class MqttEndpoint final : public runtime::Endpoint {
 public:
  MqttEndpoint(const runtime::EndpointConfig& config, const runtime::Scenario& scenario);
  /// For tests and benchmarks: an endpoint from an already built configuration.
  MqttEndpoint(const runtime::EndpointConfig& config, MqttEndpointConfig mqtt);
  ~MqttEndpoint() override;

  /// The launched vehicle program is there (launch_check.hpp).
  std::vector<std::string> launch_problems() const override;
  /// Launches the vehicle program if configured, connects (throws std::runtime_error naming
  /// the broker and the reason: unreachable, not authorized, TLS), subscribes, publishes the
  /// runtime's status and waits up to wait_online_ms for the vehicle's "online" status.
  void start(const runtime::WorldModel& model, const runtime::WorldState& initial) override;
  /// The step's link faults act on the projected messages and the feedback (docs/faults.md).
  void set_link_faults(const runtime::LinkFaults& faults) override;
  /// Publishes .../projected for ctx.step. Never blocks; a refused publish (broker away) is
  /// counted and the step's gather times out.
  [[nodiscard]] bool publish(const runtime::StepContext& ctx, const runtime::WorldState& projected) override;
  /// Waits until the feedback for ctx.step arrives or `deadline`; fault only if the launched
  /// vehicle program has exited.
  [[nodiscard]] runtime::GatherStatus gather(const runtime::StepContext& ctx, runtime::SteadyClock::time_point deadline,
                                             runtime::Reply& reply) override;
  /// Publishes .../actual (QoS 0) when publish_actual is set.
  void emit(const runtime::StepContext& ctx, const runtime::WorldState& actual) override;
  /// Publishes "offline", disconnects, stops the launched program.
  void stop() override;
  /// Tells the vehicle on the runtime's status topic: "paused", then "online" again.
  void paused(bool on) override;
  /// Adds an "mqtt" object: broker, topics, counters, reconnects.
  /// Replies for other steps and undecodable input, as of the last gather.
  runtime::LinkCounts link_counts() const override { return link_counts_; }
  void summarize(nlohmann::json& out) const override;

  MqttCounters mqtt_counters() const;
  const MqttEndpointConfig& config() const { return config_; }

 private:
  runtime::LinkCounts link_counts_;  // updated by gather(), on the loop thread
  void send_projected(std::uint64_t step);
  void on_feedback(std::string_view payload, bool retained);
  // start(), in order
  void launch_program();
  void create_client();
  void connect_and_subscribe();
  void wait_vehicle_online();

  struct Impl;
  MqttEndpointConfig config_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tether::adapters
