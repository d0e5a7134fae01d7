// SPDX-License-Identifier: Apache-2.0
// `type: mcu`: a microcontroller emulated in the loop at the pin level (docs/mcu.md). The
// firmware is an ELF (or an Arduino sketch folder that Tether builds), run unchanged on an
// emulated ATmega328P (simavr linked in). The scenario wires its pins to the vehicle's
// devices: sensor readings become ADC voltages and input levels, the timers' PWM and the
// output pins' pulses become actuator commands, and the UART's lines go into the log.
//
//   start()    load the ELF into the chip (building the sketch first)
//   publish    this step's readings become the pins' inputs
//   gather     the chip runs exactly period x f_cpu cycles (no wall clock inside it); its
//              output pins as they are at the end of those cycles are the step's commands,
//              its Serial lines since the last step the reply's log lines
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tether/loop/endpoint.hpp"
#include "tether/mcu/avr_pins.hpp"

namespace tether::adapters {

/// The keys of an `mcu` entry beside the common ones (docs/mcu.md).
inline constexpr const char* mcu_endpoint_keys[] = {"mcu",    "f_cpu_hz", "firmware", "sketch",   "avcc_v",
                                                    "aref_v", "pins",     "i2c",      "serial_in"};

/// What one pin is wired to.
struct McuPinConfig {
  enum class Role { analog_in, digital_in, pwm_out, pulse_out, digital_out };
  Role role = Role::analog_in;
  mcu::AvrPin pin;
  std::string pin_name;  // as the scenario wrote it
  int device = -1;       // index into the scenario's devices
  int channel = 0;       // inputs: the reading's channel
  int field = 0;         // outputs: the command's float field
  double from[2] = {0, 1};
  double to[2] = {0, 1};
  double above = 0.5;                  // digital_in: high when the reading is above this
  bool invert = false;                 // digital_in: high when below
  std::optional<mcu::AvrPin> reverse;  // outputs: the command's sign flips while this pin is high
};

/// One chip on the I2C bus (A4 SDA, A5 SCL).
struct McuI2cConfig {
  std::string chip;          // mpu6050, ms5837, srf08
  std::uint8_t address = 0;  // 7 bits
  int device = -1;           // index into the scenario's devices: what feeds it
  double temperature_c = 20;
  double atmospheric_pa = 101325;
};

/// Bytes into the UART's receiver at a time of the run (`serial_in.script`).
struct McuSerialText {
  std::int64_t at_ns = 0;
  std::string text;
};

struct McuEndpointConfig {
  std::string mcu = "atmega328p";
  std::uint64_t f_cpu_hz = 16'000'000;
  std::string firmware;  // an ELF
  std::string sketch;    // or a sketch folder to build
  double avcc_v = 5.0;
  double aref_v = 5.0;
  std::int64_t period_ns = 10'000'000;
  std::vector<McuPinConfig> pins;
  std::vector<McuI2cConfig> i2c;
  int serial_gps = -1;                       // a GPS device whose NMEA sentences go into the UART
  std::vector<McuSerialText> serial_script;  // text into the UART, in time order
};

/// Reads an `mcu` entry (positioned errors on the entry's node).
McuEndpointConfig parse_mcu_config(const runtime::EndpointConfig& config, const runtime::Scenario& scenario);

class McuEndpoint final : public runtime::Endpoint {
 public:
  McuEndpoint(const runtime::EndpointConfig& config, const runtime::Scenario& scenario);
  ~McuEndpoint() override;

  std::vector<std::string> launch_problems() const override;
  void start(const runtime::WorldModel& model, const runtime::WorldState& initial) override;
  [[nodiscard]] bool publish(const runtime::StepContext& ctx, const runtime::WorldState& projected) override;
  [[nodiscard]] runtime::GatherStatus gather(const runtime::StepContext& ctx, runtime::SteadyClock::time_point deadline,
                                             runtime::Reply& reply) override;
  /// `serial` {text}: the text goes into the UART's receiver before the next step runs.
  bool operator_command(std::string_view verb, const nlohmann::json& arguments, bool apply, std::string* why) override;
  void stop() override;
  void summarize(nlohmann::json& out) const override;
  /// `pins`, `pins/D9`, ... and `i2c` under /endpoints/NAME/ (docs/mcu.md, "What a person sees").
  std::vector<runtime::WireTopic> wire_topics() const override;

  const McuEndpointConfig& config() const { return config_; }

 private:
  struct Impl;
  McuEndpointConfig config_;
  std::vector<std::string> device_names_;  // by device index, full names
  std::unique_ptr<Impl> impl_;
};

}  // namespace tether::adapters
