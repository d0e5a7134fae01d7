// SPDX-License-Identifier: Apache-2.0
// A `type: mcu` entry's keys: the chip, its firmware and what its pins are wired to
// (docs/mcu.md, "Scenario keys").
#include <cstdio>
#include <filesystem>

#include "tether/firmware_shim/payloads.h"
#include "tether/hal/device_spec.hpp"
#include "tether/mcu/i2c_devices.hpp"
#include "tether/mcu/mcu_endpoint.hpp"
#include "tether/process/config_text.hpp"
#include "tether/scenario/endpoint_types.hpp"

namespace tether::adapters {

namespace {

using Role = McuPinConfig::Role;

struct RoleKey {
  const char* key;
  Role role;
};
constexpr RoleKey role_keys[] = {{"analog_in", Role::analog_in},
                                 {"digital_in", Role::digital_in},
                                 {"pwm_out", Role::pwm_out},
                                 {"pulse_out", Role::pulse_out},
                                 {"digital_out", Role::digital_out}};

bool is_output(Role r) { return r == Role::pwm_out || r == Role::pulse_out || r == Role::digital_out; }

// `from: [a, b]` / `to: [a, b]`: two different numbers
void pair_or(const runtime::ConfigNode& p, const char* key, double (&out)[2]) {
  if (!p.has(key)) return;
  const std::vector<double> v = p.numbers_or(key, {out[0], out[1]}, 2);
  if (v.size() != 2) return;
  if (v[0] == v[1] && std::string(key) == "from") {
    p[key].error("the two ends of `from` must differ");
    return;
  }
  out[0] = v[0];
  out[1] = v[1];
}

void parse_pin(const runtime::ConfigNode& p, const runtime::EndpointConfig& config, const runtime::Scenario& scenario,
               McuEndpointConfig& out) {
  if (!p.expect_map({"pin", "analog_in", "digital_in", "pwm_out", "pulse_out", "digital_out", "channel", "field",
                     "from", "to", "above", "invert", "reverse_pin"}))
    return;
  McuPinConfig c;
  if (!p.has("pin")) {
    p.expected("pin", "the pin's name (9, D9, A0 or PB1)");
    return;
  }
  c.pin_name = config_scalar(p["pin"]);
  std::string why;
  const std::optional<mcu::AvrPin> pin = mcu::find_pin(c.pin_name, &why);
  if (!pin) {
    p["pin"].error(why);
    return;
  }
  c.pin = *pin;
  int roles = 0;
  const char* role_key = nullptr;
  for (const RoleKey& r : role_keys)
    if (p.has(r.key)) {
      ++roles;
      c.role = r.role;
      role_key = r.key;
    }
  if (roles != 1) {
    p.error(
        "a pin needs exactly one of analog_in, digital_in (a sensor drives it) and pwm_out, pulse_out, digital_out "
        "(it drives an actuator), each naming the device");
    return;
  }
  if (c.pin.role != nullptr && c.pin.port == 'D' && c.pin.bit <= 1) {
    p["pin"].error(c.pin.label() + " is " + c.pin.role + ": the endpoint already wires it to the UART");
    return;
  }
  if (c.role == Role::analog_in && c.pin.adc < 0) {
    p["pin"].error(c.pin.label() + " has no ADC channel: analog inputs are A0..A5");
    return;
  }
  for (const McuPinConfig& other : out.pins)
    if (other.pin == c.pin) {
      p["pin"].error(c.pin.label() + " is wired twice (also as \"" + other.pin_name + "\")");
      return;
    }
  const std::string device = config_scalar(p[role_key]);
  const int d = find_vehicle_device(scenario, config.vehicle, device);
  if (d < 0) {
    p[role_key].error(d == -1 ? "no device \"" + device + "\" on vehicle \"" + config.vehicle + "\""
                              : "\"" + device + "\" is ambiguous: write the full name");
    return;
  }
  c.device = d;
  const hal::DeviceSpec& spec = scenario.devices[static_cast<std::size_t>(d)];
  const hal::KindInfo& info = hal::kind_info(spec.kind);
  if (is_output(c.role)) {
    if (!info.actuator) {
      p[role_key].error("\"" + device + "\" is a " + info.name + " (a sensor): an output pin drives an actuator");
      return;
    }
    const int floats = static_cast<int>(tether_kind_payload_size(static_cast<std::uint8_t>(spec.kind)) / 4);
    c.field = static_cast<int>(p.integer_or("field", 0, 0, 15));
    if (c.field >= floats) {
      p["field"].error("a " + std::string(info.name) + "'s command has " + std::to_string(floats) + " field" +
                       (floats == 1 ? "" : "s") + " (0.." + std::to_string(floats - 1) + ")");
      return;
    }
    if (c.role == Role::pulse_out) c.from[0] = 1000, c.from[1] = 2000, c.to[0] = -1, c.to[1] = 1;
    if (p.has("reverse_pin")) {
      const std::optional<mcu::AvrPin> r = mcu::find_pin(config_scalar(p["reverse_pin"]), &why);
      if (!r)
        p["reverse_pin"].error(why);
      else
        c.reverse = r;
    }
    if (p.has("channel") || p.has("above") || p.has("invert"))
      p.error("`channel`, `above` and `invert` go with inputs (analog_in, digital_in)");
  } else {
    if (info.actuator) {
      p[role_key].error("\"" + device + "\" is a " + info.name + " (an actuator): an input pin is driven by a sensor");
      return;
    }
    c.channel = static_cast<int>(p.integer_or("channel", 0, 0, 63));
    if (c.channel >= info.channels) {
      p["channel"].error("a " + std::string(info.name) + "'s reading has " + std::to_string(info.channels) +
                         " channel" + (info.channels == 1 ? "" : "s"));
      return;
    }
    if (c.role == Role::analog_in) c.to[1] = out.avcc_v;
    c.above = p.number_or("above", c.above);
    c.invert = p.boolean_or("invert", false);
    if (p.has("field") || p.has("reverse_pin")) p.error("`field` and `reverse_pin` go with outputs");
    if (c.role == Role::digital_in && (p.has("from") || p.has("to")))
      p.error("a digital input is high above `above` (low with `invert`): `from` and `to` go with analog_in");
  }
  pair_or(p, "from", c.from);
  pair_or(p, "to", c.to);
  out.pins.push_back(c);
}

// `i2c: [{chip: mpu6050, device: imu, address: 0x68}, ...]`
void parse_i2c(const runtime::ConfigNode& list, const runtime::EndpointConfig& config,
               const runtime::Scenario& scenario, McuEndpointConfig& out) {
  if (!list.is_sequence()) {
    list.error("expected a list of I2C chips ({chip: mpu6050, device: imu}), got " +
               runtime::describe_value(list.yaml()));
    return;
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    const runtime::ConfigNode e = list.at(i);
    if (!e.expect_map({"chip", "device", "address", "temperature_c"})) continue;
    McuI2cConfig c;
    c.chip = e.choice_or("chip", "", {"mpu6050", "ms5837", "srf08"});
    if (c.chip.empty()) {
      if (!e.has("chip")) e.expected("chip", "one of mpu6050, ms5837, srf08");
      continue;
    }
    c.address = static_cast<std::uint8_t>(e.integer_or("address", mcu::i2c_default_address(c.chip), 0x08, 0x77));
    for (const McuI2cConfig& other : out.i2c)
      if (other.address == c.address) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", c.address);
        (e.has("address") ? e["address"] : e)
            .error(std::string("address ") + hex + " is taken by the " + other.chip + " before it");
      }
    c.temperature_c = e.number_or("temperature_c", c.temperature_c, runtime::Range::between(-40, 85));
    const std::string device = config_scalar(e["device"]);
    if (device.empty()) {
      e.expected("device", std::string("the ") + mcu::i2c_chip_feeds(c.chip) + " device that feeds it");
      continue;
    }
    const int d = find_vehicle_device(scenario, config.vehicle, device);
    if (d < 0) {
      e["device"].error(d == -1 ? "no device \"" + device + "\" on vehicle \"" + config.vehicle + "\""
                                : "\"" + device + "\" is ambiguous: write the full name");
      continue;
    }
    const hal::DeviceSpec& spec = scenario.devices[static_cast<std::size_t>(d)];
    const std::string kind = hal::kind_info(spec.kind).name;
    const std::string feeds = mcu::i2c_chip_feeds(c.chip);
    if (feeds.find(kind) == std::string::npos) {
      e["device"].error("\"" + device + "\" is a " + kind + ": a " + c.chip + " is fed from a " + feeds + " device");
      continue;
    }
    if (spec.kind == TETHER_KIND_DEPTH) c.atmospheric_pa = std::get<hal::DepthParams>(spec.params).atmospheric_pa;
    c.device = d;
    out.i2c.push_back(c);
  }
}

// `serial_in: {gps: DEVICE, script: [{at_s: 0.5, text: "..."}]}`
void parse_serial_in(const runtime::ConfigNode& n, const runtime::EndpointConfig& config,
                     const runtime::Scenario& scenario, McuEndpointConfig& out) {
  if (!n.expect_map({"gps", "script"})) return;
  if (n.has("gps")) {
    const std::string device = config_scalar(n["gps"]);
    const int d = find_vehicle_device(scenario, config.vehicle, device);
    if (d < 0)
      n["gps"].error(d == -1 ? "no device \"" + device + "\" on vehicle \"" + config.vehicle + "\""
                             : "\"" + device + "\" is ambiguous: write the full name");
    else if (scenario.devices[static_cast<std::size_t>(d)].kind != TETHER_KIND_GPS)
      n["gps"].error("\"" + device + "\" is a " +
                     std::string(hal::kind_info(scenario.devices[static_cast<std::size_t>(d)].kind).name) +
                     ": `gps` names a gps device (its NMEA sentences go into the UART)");
    else
      out.serial_gps = d;
  }
  if (!n.has("script")) return;
  const runtime::ConfigNode list = n["script"];
  if (!list.is_sequence()) {
    list.error("expected a list of {at_s: TIME, text: \"...\"}, got " + runtime::describe_value(list.yaml()));
    return;
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    const runtime::ConfigNode e = list.at(i);
    if (!e.expect_map({"at_s", "text"})) continue;
    McuSerialText t;
    t.at_ns = static_cast<std::int64_t>(e.number("at_s", runtime::Range::non_negative()) * 1e9 + 0.5);
    t.text = e.string("text");
    if (!out.serial_script.empty() && t.at_ns < out.serial_script.back().at_ns)
      e["at_s"].error("the script's entries go in time order");
    out.serial_script.push_back(t);
  }
}

}  // namespace

McuEndpointConfig parse_mcu_config(const runtime::EndpointConfig& config, const runtime::Scenario& scenario) {
  const runtime::ConfigNode& n = config.node;
  runtime::expect_endpoint_keys(n, mcu_endpoint_keys);
  McuEndpointConfig c;
  c.period_ns = scenario.loop.period_ns;
  c.mcu = n.choice_or("mcu", c.mcu, {"atmega328p"});
  c.f_cpu_hz = static_cast<std::uint64_t>(n.integer_or("f_cpu_hz", 16'000'000, 1'000'000, 32'000'000));
  c.avcc_v = n.number_or("avcc_v", c.avcc_v, runtime::Range::between(1.8, 5.5));
  c.aref_v = n.number_or("aref_v", c.avcc_v, runtime::Range::between(1.0, 5.5));
  if (c.aref_v > c.avcc_v) n["aref_v"].error("AREF cannot be above AVCC (" + std::to_string(c.avcc_v) + " V)");
  const std::string base = scenario_dir(scenario);
  if (n.has("firmware") == n.has("sketch")) {
    n.error("an mcu endpoint needs exactly one of `firmware` (an ELF) and `sketch` (an Arduino sketch folder)");
  } else if (n.has("firmware")) {
    c.firmware = resolve_config_text(n["firmware"], n.string("firmware"), base, true);
    if (!c.firmware.empty() && c.firmware.front() != '/')
      c.firmware = (std::filesystem::path(base) / c.firmware).lexically_normal().string();
  } else {
    c.sketch = resolve_config_text(n["sketch"], n.string("sketch"), base, true);
    if (!c.sketch.empty() && c.sketch.front() != '/')
      c.sketch = (std::filesystem::path(base) / c.sketch).lexically_normal().string();
  }
  if (config.vehicle_index < 0) {
    if (!n.has("vehicle")) n.error("an mcu endpoint needs `vehicle`: the vehicle whose devices its pins are wired to");
    return c;
  }
  if (n.has("pins")) {
    const runtime::ConfigNode pins = n["pins"];
    if (!pins.is_sequence()) {
      pins.error("expected a list of pins ({pin: A0, analog_in: depth, ...}), got " +
                 runtime::describe_value(pins.yaml()));
    } else {
      for (std::size_t i = 0; i < pins.size(); ++i) parse_pin(pins.at(i), config, scenario, c);
    }
  }
  if (n.has("serial_in")) parse_serial_in(n["serial_in"], config, scenario, c);
  if (n.has("i2c")) {
    parse_i2c(n["i2c"], config, scenario, c);
    for (const McuPinConfig& p : c.pins)
      if (p.pin.port == 'C' && (p.pin.bit == 4 || p.pin.bit == 5) && !c.i2c.empty())
        n["pins"].error(p.pin.label() + " is " + p.pin.role + ": the I2C bus (`i2c:`) uses it");
  }
  for (const McuPinConfig& p : c.pins)
    if (p.reverse)
      for (const McuPinConfig& other : c.pins)
        if (other.pin == *p.reverse && !is_output(other.role))
          n["pins"].error("reverse_pin " + p.reverse->label() + " of " + p.pin.label() +
                          " is an input here: it must be a pin the firmware drives");
  return c;
}

}  // namespace tether::adapters
