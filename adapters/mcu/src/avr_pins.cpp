// SPDX-License-Identifier: Apache-2.0
// The ATmega328P's pins as an Arduino Uno names them, and its timers' compare outputs.
#include "tether/mcu/avr_pins.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>

namespace tether::adapters::mcu {

namespace {

// the Uno's pins 0..19 (A0..A5 are 14..19): port, bit, ADC channel, timer, channel, role
// (Arduino's pins_arduino.h for the "standard" variant says the same, as does the Uno's
// schematic; the timers' compare outputs are the datasheet's OC0A/B, OC1A/B, OC2A/B)
constexpr std::array<AvrPin, 20> uno_pins = {{
    {'D', 0, 0, -1, -1, -1, "the UART's RX (Serial)"},
    {'D', 1, 1, -1, -1, -1, "the UART's TX (Serial)"},
    {'D', 2, 2, -1, -1, -1, nullptr},
    {'D', 3, 3, -1, 2, 1, nullptr},  // OC2B
    {'D', 4, 4, -1, -1, -1, nullptr},
    {'D', 5, 5, -1, 0, 1, nullptr},  // OC0B
    {'D', 6, 6, -1, 0, 0, nullptr},  // OC0A
    {'D', 7, 7, -1, -1, -1, nullptr},
    {'B', 0, 8, -1, -1, -1, nullptr},
    {'B', 1, 9, -1, 1, 0, nullptr},   // OC1A
    {'B', 2, 10, -1, 1, 1, nullptr},  // OC1B
    {'B', 3, 11, -1, 2, 0, nullptr},  // OC2A
    {'B', 4, 12, -1, -1, -1, nullptr},
    {'B', 5, 13, -1, -1, -1, nullptr},
    {'C', 0, 14, 0, -1, -1, nullptr},
    {'C', 1, 15, 1, -1, -1, nullptr},
    {'C', 2, 16, 2, -1, -1, nullptr},
    {'C', 3, 17, 3, -1, -1, nullptr},
    {'C', 4, 18, 4, -1, -1, "I2C SDA (Wire)"},
    {'C', 5, 19, 5, -1, -1, "I2C SCL (Wire)"},
}};

bool parse_int(std::string_view s, int& out) {
  if (s.empty() || s.size() > 3) return false;
  int v = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}

// the prescaler of clock select `cs` (TCCRnB bits 2:0); 0: stopped or an external clock
int prescale(int timer, int cs) {
  static constexpr int t01[8] = {0, 1, 8, 64, 256, 1024, 0, 0};  // 6, 7: external clock on T0/T1
  static constexpr int t2[8] = {0, 1, 8, 32, 64, 128, 256, 1024};
  return timer == 2 ? t2[cs & 7] : t01[cs & 7];
}

enum class Kind { normal, ctc, fast, phase_correct, reserved };

struct Mode {
  Kind kind = Kind::normal;
  std::uint32_t top = 0xFF;
  bool top_is_ocra = false;
};

Mode mode_of(const TimerRegisters& r) {
  if (r.timer == 1) {
    const int wgm = (r.tccra & 3) | (((r.tccrb >> 3) & 3) << 2);
    switch (wgm) {
      case 0: return {Kind::normal, 0xFFFF, false};
      case 1: return {Kind::phase_correct, 0xFF, false};
      case 2: return {Kind::phase_correct, 0x1FF, false};
      case 3: return {Kind::phase_correct, 0x3FF, false};
      case 4: return {Kind::ctc, r.ocra, true};
      case 5: return {Kind::fast, 0xFF, false};
      case 6: return {Kind::fast, 0x1FF, false};
      case 7: return {Kind::fast, 0x3FF, false};
      case 8: return {Kind::phase_correct, r.icr, false};  // phase and frequency correct
      case 9: return {Kind::phase_correct, r.ocra, true};  // phase and frequency correct
      case 10: return {Kind::phase_correct, r.icr, false};
      case 11: return {Kind::phase_correct, r.ocra, true};
      case 12: return {Kind::ctc, r.icr, false};
      case 14: return {Kind::fast, r.icr, false};
      case 15: return {Kind::fast, r.ocra, true};
      default: return {Kind::reserved, 0, false};
    }
  }
  const int wgm = (r.tccra & 3) | (((r.tccrb >> 3) & 1) << 2);
  switch (wgm) {
    case 0: return {Kind::normal, 0xFF, false};
    case 1: return {Kind::phase_correct, 0xFF, false};
    case 2: return {Kind::ctc, static_cast<std::uint8_t>(r.ocra), true};
    case 3: return {Kind::fast, 0xFF, false};
    case 5: return {Kind::phase_correct, static_cast<std::uint8_t>(r.ocra), true};
    case 7: return {Kind::fast, static_cast<std::uint8_t>(r.ocra), true};
    default: return {Kind::reserved, 0, false};
  }
}

}  // namespace

std::string AvrPin::label() const {
  char out[32];
  if (arduino < 0)
    std::snprintf(out, sizeof out, "P%c%d", port, bit);
  else
    std::snprintf(out, sizeof out, "%c%d (P%c%d)", arduino >= 14 ? 'A' : 'D', arduino >= 14 ? arduino - 14 : arduino,
                  port, bit);
  return out;
}

std::optional<AvrPin> find_pin(std::string_view name, std::string* why) {
  auto fail = [&](const std::string& reason) -> std::optional<AvrPin> {
    if (why) *why = reason;
    return std::nullopt;
  };
  const std::string known = "the ATmega328P's pins are D0..D13, A0..A5 (or 0..19) and PB0..PB5, PC0..PC5, PD0..PD7";
  int n = -1;
  if (parse_int(name, n) || (name.size() > 1 && (name[0] == 'D' || name[0] == 'd') && parse_int(name.substr(1), n))) {
    if (n < 0 || n >= static_cast<int>(uno_pins.size())) return fail("no pin " + std::string(name) + ": " + known);
    return uno_pins[static_cast<std::size_t>(n)];
  }
  if (name.size() > 1 && (name[0] == 'A' || name[0] == 'a') && parse_int(name.substr(1), n)) {
    if (n > 5)
      return fail("no pin " + std::string(name) +
                  ": the ATmega328P in its DIP package (the Uno's) has analog inputs A0..A5; ADC6 and ADC7 "
                  "exist only on the TQFP/QFN packages and are not wired here");
    return uno_pins[static_cast<std::size_t>(14 + n)];
  }
  if (name.size() == 3 && (name[0] == 'P' || name[0] == 'p')) {
    const char port = static_cast<char>(std::toupper(static_cast<unsigned char>(name[1])));
    const int bit = name[2] - '0';
    if ((port == 'B' || port == 'C' || port == 'D') && bit >= 0 && bit <= 7) {
      if (port == 'B' && bit >= 6)
        return fail("pin " + std::string(name) + " is the crystal (XTAL" + std::to_string(bit - 5) +
                    "): the chip's clock, not a pin a sketch can use");
      if (port == 'C' && bit == 6) return fail("pin PC6 is RESET, not a pin a sketch can use");
      if (port == 'C' && bit == 7) return fail("no pin PC7: " + known);
      for (const AvrPin& p : uno_pins)
        if (p.port == port && p.bit == bit) return p;
    }
  }
  return fail("no pin \"" + std::string(name) + "\": " + known);
}

Waveform timer_waveform(const TimerRegisters& r, int channel, double f_cpu_hz) {
  Waveform w;
  const int com = channel == 0 ? (r.tccra >> 6) & 3 : (r.tccra >> 4) & 3;
  if (com == 0) return w;
  w.connected = true;
  const int ps = prescale(r.timer, r.tccrb & 7);
  w.running = ps > 0;
  const Mode m = mode_of(r);
  const std::uint32_t ocr = channel == 0 ? r.ocra : r.ocrb;
  const double tick_us = ps > 0 ? 1e6 * ps / f_cpu_hz : 0;
  auto set = [&](double high_ticks, double period_ticks) {
    period_ticks = std::max(period_ticks, 1.0);
    high_ticks = std::clamp(high_ticks, 0.0, period_ticks);
    w.duty = high_ticks / period_ticks;
    w.high_us = high_ticks * tick_us;
    w.period_us = period_ticks * tick_us;
  };
  switch (m.kind) {
    case Kind::reserved: w.connected = false; return w;
    case Kind::normal:
    case Kind::ctc:
      // COM 1 toggles on every match: a square wave of twice the period (mode 4/12 and
      // normal mode); 2 and 3 clear or set once: a static level
      if (com == 1) {
        set(m.top + 1.0, 2.0 * (m.top + 1.0));
      } else {
        w.duty = com == 3 ? 1 : 0;
      }
      break;
    case Kind::fast:
      if (com == 1) {
        // toggles OCnA on match when TOP is OCRnA (50 %, half the frequency); else disconnected
        if (channel == 0 && m.top_is_ocra) {
          set(m.top + 1.0, 2.0 * (m.top + 1.0));
        } else {
          w.connected = false;
        }
        break;
      }
      {
        // non-inverting: set at BOTTOM, cleared at the match: high for OCR + 1 ticks of
        // TOP + 1 (OCR = TOP: high throughout); inverting: the complement
        const double period = m.top + 1.0;
        const double high = ocr >= m.top ? period : ocr + 1.0;
        set(com == 3 ? period - high : high, period);
      }
      break;
    case Kind::phase_correct:
      if (com == 1) {
        if (channel == 0 && m.top_is_ocra) {
          set(2.0 * m.top, 4.0 * m.top);
        } else {
          w.connected = false;
        }
        break;
      }
      {
        // non-inverting: cleared on the match counting up, set on the match counting down:
        // high for 2 OCR ticks of a 2 TOP period; inverting: the complement
        const double period = 2.0 * m.top;
        const double high = 2.0 * std::min<double>(ocr, m.top);
        set(com == 3 ? period - high : high, period);
      }
      break;
  }
  if (!w.running) w.high_us = w.period_us = 0;
  return w;
}

}  // namespace tether::adapters::mcu
