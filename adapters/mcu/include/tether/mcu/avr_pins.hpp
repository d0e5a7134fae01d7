// SPDX-License-Identifier: Apache-2.0
// The ATmega328P as an Arduino Uno wires it: its pins by the names sketches use, which
// pins carry the ADC and the timers' compare outputs, and the waveform a timer puts on a
// compare output, computed from the timer's registers as the datasheet defines it
// (Microchip, "ATmega48A/PA/88A/PA/168A/PA/328/P datasheet", sections 15-18: timers 0, 1
// and 2, their modes and compare output modes). Pure functions: no simavr here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tether::adapters::mcu {

/// One pin of the chip.
struct AvrPin {
  char port = 'B';             // 'B', 'C' or 'D'
  std::uint8_t bit = 0;        // 0..7
  int arduino = -1;            // the Uno's pin number (0..19; A0 is 14), -1 if none
  int adc = -1;                // ADC channel (0..5), -1 if none
  int timer = -1;              // timer whose compare output this is (0, 1, 2), -1 if none
  int channel = -1;            // 0 = A, 1 = B
  const char* role = nullptr;  // what else the pin is ("the UART's RX (Serial)", "I2C SDA"), or null

  /// "D9 (PB1)", "A0 (PC0)"
  std::string label() const;
  bool operator==(const AvrPin& o) const { return port == o.port && bit == o.bit; }
};

/// The pin a scenario names: an Uno pin number (9), "D9", "A0".."A5" or a port bit ("PB1").
/// Empty with the reason in `why` for a pin the ATmega328P does not have or that cannot be
/// wired (XTAL, RESET).
std::optional<AvrPin> find_pin(std::string_view name, std::string* why);

/// The registers of one timer as the chip holds them (data-space values).
struct TimerRegisters {
  int timer = 0;           // 0, 1 or 2
  std::uint8_t tccra = 0;  // TCCRnA: compare output modes, WGMn1:0
  std::uint8_t tccrb = 0;  // TCCRnB: WGMn3:2, clock select
  std::uint16_t ocra = 0;  // OCRnA
  std::uint16_t ocrb = 0;  // OCRnB
  std::uint16_t icr = 0;   // ICR1 (timer 1 only)
};

/// What a compare output puts on its pin while the timer runs.
struct Waveform {
  bool connected = false;  // the timer drives the pin (compare output mode not 0)
  bool running = false;    // the timer's clock is on
  double duty = 0;         // fraction of the period the pin is high, 0..1
  double high_us = 0;      // the high time of one period, microseconds
  double period_us = 0;    // 0 for a static level
};

/// The waveform of compare output `channel` (0 A, 1 B) of the timer, at `f_cpu_hz`.
Waveform timer_waveform(const TimerRegisters& r, int channel, double f_cpu_hz);

/// Data-space addresses of the ATmega328P's registers that the endpoint reads.
namespace reg328p {
// PINx, DDRx, PORTx of port B (C and D follow at +3 and +6)
constexpr std::uint16_t pinb = 0x23;
constexpr std::uint16_t ddrb = 0x24;
constexpr std::uint16_t portb = 0x25;
constexpr std::uint16_t tccr0a = 0x44, tccr0b = 0x45, ocr0a = 0x47, ocr0b = 0x48;
constexpr std::uint16_t tccr1a = 0x80, tccr1b = 0x81, icr1 = 0x86, ocr1a = 0x88, ocr1b = 0x8A;
constexpr std::uint16_t tccr2a = 0xB0, tccr2b = 0xB1, ocr2a = 0xB3, ocr2b = 0xB4;
/// PINx, DDRx or PORTx (offset 0, 1, 2) of `port`.
constexpr std::uint16_t port_reg(char port, int offset) {
  return static_cast<std::uint16_t>(pinb + 3 * (port - 'B') + offset);
}
}  // namespace reg328p

}  // namespace tether::adapters::mcu
