// SPDX-License-Identifier: Apache-2.0
// Firmware in the loop over a serial line (docs/serial.md). The endpoint opens a real
// serial port (libserialport) or a pseudo-terminal (termios), or launches the firmware
// itself: a host build on a pty pair the runtime creates, or an emulator (QEMU) that
// announces its own pty. It speaks the shim's wire protocol (docs/protocol.md): HELLO ->
// DEVICES -> READY at start(), then one SENSORS(k) / ACTUATE(k) exchange per step, STOP at
// stop(). A Boost.Asio I/O thread shared by every serial endpoint reads the lines during the
// handshake and between steps; from publish() to the end of gather() the loop thread reads
// its line itself, so a reply wakes one thread (docs/serial.md, "Threads").
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tether/serial/serial_port.hpp"
#include "tether/serial/serial_protocol.hpp"
#include "tether/loop/endpoint.hpp"
#include "tether/scenario/scenario.hpp"

namespace tether::adapters {

/// `launch:`: the program the endpoint starts and supervises.
/// A serial endpoint entry's own keys, beside runtime::endpoint_common_keys (docs/serial.md).
inline constexpr const char* serial_endpoint_keys[] = {
    "port",      "baud",    "data_bits", "parity",  "stop_bits",       "flow_control", "launch",
    "safe",      "devices", "handshake_timeout_ms", "resend_ms",       "busy_poll_us", "log_lines_per_s",
    "log_burst", "goal"};

struct SerialLaunchConfig {
  std::vector<std::string> command;  // argv; "{port}" is replaced by the line's path at start
  bool pty = true;                   // the runtime creates the pty; false: the program announces one
  std::string qemu_elf;              // with `qemu:`, the firmware image (checked before QEMU starts)
  std::vector<std::pair<std::string, std::string>> env;
  std::string cwd;
  std::int64_t exit_wait_ms = 1000;   // after STOP, how long the program may take to exit by itself
  std::int64_t kill_after_ms = 2000;  // after SIGTERM, how long before SIGKILL
};

/// Everything a serial endpoint needs besides the common endpoint keys.
struct SerialEndpointConfig {
  std::string port;  // `port:`, empty with `launch:`
  SerialSettings settings;
  std::optional<SerialLaunchConfig> launch;
  std::int64_t handshake_timeout_ms = 5000;
  std::int64_t resend_ms = 20;  // re-send SENSORS(k) after this long without ACTUATE(k); 0: never
  std::int64_t busy_poll_us = 0;  // gather() polls the line without sleeping this long after SENSORS(k)
  std::uint32_t log_lines_per_s = SerialProtocol::default_log_lines_per_s;  // firmware LOG rate limit; 0: none
  std::uint32_t log_burst = SerialProtocol::default_log_burst;              // lines let through at once
  std::vector<SerialDevice> table;                                          // devices offered in DEVICES
  std::vector<runtime::DeviceCommand> safe;                                 // the reply under the `safe` policy
};

/// Reads a `type: serial` endpoint's keys; records positioned errors in the scenario's
/// context (the caller throws). Paths are resolved against the scenario file's folder.
SerialEndpointConfig parse_serial_config(const runtime::EndpointConfig& config, const runtime::Scenario& scenario);

/// The launch of a Cortex-M firmware image under QEMU (`launch: {qemu: ELF}`): `elf` as
/// given (make it absolute first); empty `machine`/`binary` mean lm3s6965evb and
/// qemu-system-arm.
SerialLaunchConfig qemu_launch_config(const std::string& elf, const std::string& machine = {},
                                      const std::string& binary = {});

/// Hides the serial endpoints' info lines (progress, the programs' output); warnings and
/// errors still show. For benchmarks.
void set_serial_logs_quiet(bool quiet);

class SerialEndpoint final : public runtime::Endpoint {
 public:
  /// Parses the endpoint's keys (errors go to the scenario's context).
  SerialEndpoint(const runtime::EndpointConfig& config, const runtime::Scenario& scenario);
  /// For tests and benchmarks: an endpoint from an already built configuration.
  SerialEndpoint(const runtime::EndpointConfig& config, SerialEndpointConfig serial);
  ~SerialEndpoint() override;

  /// The launched program (and QEMU's firmware image) is there (launch_check.hpp).
  std::vector<std::string> launch_problems() const override;
  /// Opens or launches, then HELLO -> DEVICES -> READY within handshake_timeout_ms. Throws
  /// std::runtime_error: no HELLO, version mismatch (naming both versions), the program
  /// could not start or exited (with its last output), the port could not be opened.
  void start(const runtime::WorldModel& model, const runtime::WorldState& initial) override;
  /// Sends SENSORS(k) with this step's readings from the device bank. Never blocks: what
  /// the line does not take at once is written by the I/O thread.
  void set_link_faults(const runtime::LinkFaults& faults) override;
  [[nodiscard]] bool publish(const runtime::StepContext& ctx, const runtime::WorldState& projected) override;
  /// Waits for ACTUATE(k) until `deadline`, re-sending SENSORS(k) every resend_ms.
  /// fault: the program exited, the line closed or hung up (a launched program closed its
  /// end of the pty), or the firmware ended the session.
  [[nodiscard]] runtime::GatherStatus gather(const runtime::StepContext& ctx, runtime::SteadyClock::time_point deadline,
                                             runtime::Reply& reply) override;
  /// The configured safe commands (default: every actuator offered, all-zero payload).
  void safe_reply(runtime::Reply& reply) const override;
  /// STOP to the firmware; the program gets exit_wait_ms to exit, then SIGTERM, SIGKILL.
  void stop() override;
  /// Adds a "serial" object: port, firmware, devices, line and protocol counters, program.
  /// Replies for other steps and undecodable input, as of the last gather.
  runtime::LinkCounts link_counts() const override { return link_counts_; }
  void summarize(nlohmann::json& out) const override;

  /// Protocol and line counters so far (thread-safe copy).
  SerialCounters serial_counters() const;
  /// The line in use ("/dev/pts/7", "pty master of /dev/pts/7"), after start().
  std::string line_description() const;
  /// The launched program's process id, if one runs.
  std::optional<int> child_pid() const;
  /// The firmware's name from HELLO, after start().
  std::string firmware_name() const;

  const SerialEndpointConfig& config() const { return config_; }

 private:
  runtime::LinkCounts link_counts_;  // updated by gather(), on the loop thread
  struct Impl;
  SerialEndpointConfig config_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tether::adapters
