// SPDX-License-Identifier: Apache-2.0
// A `type: serial` endpoint's configuration: the port or the program to launch, the line
// settings, the devices offered and the safe reply (docs/serial.md).
#include "tether/serial/serial_endpoint.hpp"

#include <fnmatch.h>

#include <cstring>
#include <filesystem>

#include "tether/process/config_text.hpp"
#include "tether/firmware_shim/payloads.h"
#include "tether/scenario/endpoint_types.hpp"

namespace tether::adapters {

namespace {

constexpr const char* default_qemu_machine = "lm3s6965evb";
constexpr const char* default_qemu_binary = "qemu-system-arm";

// a `safe:` value: a number (one f32), a list of numbers (f32s) or {bytes: [..]}
bool parse_safe_value(const runtime::ConfigNode& v, std::uint16_t size, runtime::DeviceCommand& c) {
  const YAML::Node& y = v.yaml();
  std::vector<std::uint8_t> bytes;
  if (y.IsMap()) {
    if (!v.expect_map({"bytes"})) return false;
    const YAML::Node& b = y["bytes"];
    if (!b.IsSequence()) {
      v.expected("bytes", "a list of byte values 0..255");
      return false;
    }
    for (const auto& e : b) {
      int x = -1;
      try {
        x = e.as<int>();
      } catch (const YAML::Exception&) {
      }
      if (x < 0 || x > 255) {
        v.expected("bytes", "a list of byte values 0..255");
        return false;
      }
      bytes.push_back(static_cast<std::uint8_t>(x));
    }
  } else {
    std::vector<double> numbers;
    try {
      if (y.IsScalar()) {
        numbers.push_back(y.as<double>());
      } else if (y.IsSequence()) {
        for (const auto& e : y) numbers.push_back(e.as<double>());
      }
    } catch (const YAML::Exception&) {
      numbers.clear();
    }
    if (numbers.empty()) {
      v.error("expected a number, a list of numbers or {bytes: [...]}, got " + runtime::describe_value(y));
      return false;
    }
    for (double x : numbers) {
      std::uint8_t f[4];
      tether_put_f32le(f, static_cast<float>(x));
      bytes.insert(bytes.end(), f, f + 4);
    }
  }
  if (bytes.size() != size) {
    v.error("this device's command is " + std::to_string(size) + " bytes (" + std::to_string(size / 4) + " float" +
            (size / 4 == 1 ? "" : "s") + "), the value gives " + std::to_string(bytes.size()));
    return false;
  }
  c.size = static_cast<std::uint8_t>(size);
  std::copy(bytes.begin(), bytes.end(), c.bytes.begin());
  return true;
}

}  // namespace

SerialLaunchConfig qemu_launch_config(const std::string& elf, const std::string& machine, const std::string& binary) {
  SerialLaunchConfig launch;
  // clang-format off
  launch.command = {binary.empty() ? default_qemu_binary : binary, "-M",
                    machine.empty() ? default_qemu_machine : machine, "-nographic", "-monitor", "none",
                    "-serial", "pty", "-serial", "stdio", "-kernel", elf};
  // clang-format on
  launch.pty = false;  // QEMU makes the pty and says which
  launch.qemu_elf = elf;
  launch.exit_wait_ms = 0;  // QEMU does not exit when the firmware returns
  return launch;
}

namespace {

// `launch:`: a command line or a firmware image for QEMU, its environment and timing
SerialLaunchConfig parse_launch(const runtime::ConfigNode& l, const std::string& base) {
  SerialLaunchConfig launch;
  if (l.expect_map(
          {"command", "pty", "qemu", "machine", "qemu_binary", "env", "cwd", "exit_wait_ms", "kill_after_ms"})) {
    const bool has_command = l.has("command");
    const bool has_qemu = l.has("qemu");
    if (has_command == has_qemu) l.error("`launch` needs exactly one of `command` and `qemu`");
    if (has_command) {
      parse_launch_command(l["command"], base, launch.command);
      launch.pty = l.boolean_or("pty", true);
      if (l.has("machine") || l.has("qemu_binary")) l.error("`machine` and `qemu_binary` go with `qemu`");
    }
    if (has_qemu) {
      const std::string elf = resolve_config_text(l["qemu"], l.string("qemu"), base, true);
      const std::string elf_abs =
          elf.empty() || elf.front() == '/' ? elf : (std::filesystem::path(base) / elf).lexically_normal().string();
      launch = qemu_launch_config(elf_abs, l.string_or("machine", default_qemu_machine),
                                  l.string_or("qemu_binary", default_qemu_binary));
      if (l.has("pty")) l["pty"].error("with `qemu`, QEMU creates the pseudo-terminal itself; remove `pty`");
    }
    parse_launch_env_cwd(l, base, launch.env, launch.cwd);
    launch.exit_wait_ms = l.integer_or("exit_wait_ms", launch.exit_wait_ms, 0, 600'000);
    launch.kill_after_ms = l.integer_or("kill_after_ms", launch.kill_after_ms, 0, 600'000);
  }
  return launch;
}

// the devices offered: the endpoint's vehicle's (all, without a vehicle), optionally filtered
// by `devices:` patterns
std::vector<SerialDevice> offered_devices(const runtime::ConfigNode& n, const runtime::EndpointConfig& config,
                                          const runtime::Scenario& scenario) {
  std::vector<SerialDevice> table;
  std::vector<std::string> patterns;
  if (n.has("devices")) {
    const runtime::ConfigNode d = n["devices"];
    if (!d.is_sequence())
      d.error("expected a list of device names (`*` matches anything), got " + runtime::describe_value(d.yaml()));
    else
      for (std::size_t i = 0; i < d.size(); ++i) patterns.push_back(config_scalar(d.at(i)));
  }
  std::vector<bool> pattern_used(patterns.size(), false);
  for (std::size_t i = 0; i < scenario.devices.size(); ++i) {
    const hal::DeviceSpec& spec = scenario.devices[i];
    if (!config.vehicle.empty() && spec.name.vehicle != config.vehicle) continue;
    const std::string full = spec.name.full();
    if (!patterns.empty()) {
      bool match = false;
      for (std::size_t p = 0; p < patterns.size(); ++p)
        if (fnmatch(patterns[p].c_str(), full.c_str(), 0) == 0) match = pattern_used[p] = true;
      if (!match) continue;
    }
    const std::uint16_t size = tether_kind_payload_size(static_cast<std::uint8_t>(spec.kind));
    const std::uint8_t direction = tether_kind_direction(static_cast<std::uint8_t>(spec.kind));
    if (size == 0 || direction == 0 || i > 0xFFFF) continue;
    table.push_back(
        SerialDevice{static_cast<std::uint16_t>(i), static_cast<std::uint8_t>(spec.kind), direction, size, full});
  }
  for (std::size_t p = 0; p < patterns.size(); ++p)
    if (!pattern_used[p])
      n["devices"].error(
          "\"" + patterns[p] + "\" matches no device of " +
          (config.vehicle.empty() ? std::string("this scenario") : "vehicle \"" + config.vehicle + "\""));
  return table;
}

// the safe reply: every actuator offered at zero unless `safe:` says otherwise
std::vector<runtime::DeviceCommand> safe_commands(const runtime::ConfigNode& n, const runtime::Scenario& scenario,
                                                  const std::vector<SerialDevice>& table) {
  std::vector<runtime::DeviceCommand> safe;
  for (const SerialDevice& d : table) {
    if (d.direction != TETHER_DIRECTION_ACTUATOR || d.payload_size > runtime::DeviceCommand::max_bytes) continue;
    runtime::DeviceCommand c;
    c.device = d.index;
    c.size = static_cast<std::uint8_t>(d.payload_size);
    safe.push_back(c);
  }
  if (n.has("safe")) {
    const runtime::ConfigNode s = n["safe"];
    if (!s.is_map()) {
      s.error("expected a map of device name: value, got " + runtime::describe_value(s.yaml()));
    } else {
      for (const auto& kv : s.yaml()) {
        const std::string key = kv.first.as<std::string>();
        const runtime::ConfigNode v = s[key.c_str()];
        // the full name, or its tail after a dot ("thruster_left", "hull.thruster_left") if unique
        std::vector<runtime::DeviceCommand*> found;
        for (runtime::DeviceCommand& c : safe) {
          const int match = device_name_match(scenario.devices[c.device].name.full(), key);
          if (match == 2) {
            found.assign(1, &c);
            break;
          }
          if (match == 1) found.push_back(&c);
        }
        if (found.empty()) {
          v.error("no actuator \"" + key + "\" among this endpoint's devices");
          continue;
        }
        if (found.size() > 1) {
          v.error("\"" + key + "\" is ambiguous: write the full name (vehicle.part.device)");
          continue;
        }
        parse_safe_value(v, found.front()->size, *found.front());
      }
    }
  }
  return safe;
}

}  // namespace

SerialEndpointConfig parse_serial_config(const runtime::EndpointConfig& config, const runtime::Scenario& scenario) {
  const runtime::ConfigNode& n = config.node;
  SerialEndpointConfig out;
  runtime::expect_endpoint_keys(n, serial_endpoint_keys);
  const std::string base = scenario_dir(scenario);

  // where the firmware is: a port, or a program to launch
  const bool has_port = n.has("port");
  const bool has_launch = n.has("launch");
  if (has_port == has_launch) n.error("a serial endpoint needs exactly one of `port` and `launch`");
  if (has_port) out.port = resolve_config_text(n["port"], n.string("port"), base, true);
  out.settings.baud = static_cast<int>(n.integer_or("baud", 115200, 50, 4'000'000));
  out.settings.data_bits = static_cast<int>(n.integer_or("data_bits", 8, 5, 8));
  out.settings.stop_bits = static_cast<int>(n.integer_or("stop_bits", 1, 1, 2));
  const std::string parity = n.choice_or("parity", "none", {"none", "odd", "even", "mark", "space"});
  out.settings.parity = parity == "odd"     ? Parity::odd
                        : parity == "even"  ? Parity::even
                        : parity == "mark"  ? Parity::mark
                        : parity == "space" ? Parity::space
                                            : Parity::none;
  const std::string flow = n.choice_or("flow_control", "none", {"none", "xonxoff", "rtscts", "dtrdsr"});
  out.settings.flow_control = flow == "xonxoff"  ? FlowControl::xonxoff
                              : flow == "rtscts" ? FlowControl::rtscts
                              : flow == "dtrdsr" ? FlowControl::dtrdsr
                                                 : FlowControl::none;
  out.handshake_timeout_ms = n.integer_or("handshake_timeout_ms", 5000, 1, 3'600'000);
  out.resend_ms = n.integer_or("resend_ms", 20, 0, 3'600'000);
  out.busy_poll_us = n.integer_or("busy_poll_us", 0, 0, 100'000);
  out.log_lines_per_s = static_cast<std::uint32_t>(
      n.integer_or("log_lines_per_s", SerialProtocol::default_log_lines_per_s, 0, 1'000'000));
  out.log_burst =
      static_cast<std::uint32_t>(n.integer_or("log_burst", SerialProtocol::default_log_burst, 1, 1'000'000));
  // the demo's depth/heading goal moved to the scenario, where every endpoint type shares it
  if (n.has("goal"))
    n["goal"].error(
        "`goal` moved to the scenario's top-level `goals:` list: - {vehicle: NAME, depth_m: D, "
        "heading_deg: H}");

  if (has_launch) out.launch = parse_launch(n["launch"], base);

  out.table = offered_devices(n, config, scenario);

  out.safe = safe_commands(n, scenario, out.table);
  return out;
}

}  // namespace tether::adapters
