// SPDX-License-Identifier: Apache-2.0
// One emulated AVR (simavr linked in, docs/mcu.md): its firmware loaded from an ELF, run to
// a cycle count, its pins, ADC and UART wired to the endpoint. simavr's headers stay in
// avr_chip.cpp. Deterministic: the same inputs at the same cycles give the same outputs;
// nothing here reads a clock (simavr's own sleep, which waits in real time, is replaced).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tether/mcu/avr_pins.hpp"
#include "tether/mcu/i2c_devices.hpp"

namespace tether::adapters::mcu {

/// Why an ELF cannot run on `mcu` (another architecture, another AVR family, another MCU
/// named in its .mmcu section), or "" when it can. `what` names the file in the message.
std::string avr_elf_problem(const std::string& path, const std::string& mcu);

/// What a watched output pin did, in cycles.
struct PinTrace {
  bool level = false;               // now
  std::uint64_t changed_at = 0;     // the cycle of the last change
  std::uint64_t rose_at = 0;        // the last rising edge (0: none yet)
  std::uint64_t high_cycles = 0;    // the last complete high pulse
  std::uint64_t period_cycles = 0;  // between the last two rising edges
  std::uint64_t high_in_step = 0;   // cycles high since the step began
  std::uint64_t since = 0;          // the cycle high_in_step counts from
  std::uint64_t edges = 0;          // all changes so far
};

class AvrChip {
 public:
  enum class RunStatus { ok, crashed, stopped };

  AvrChip();
  ~AvrChip();
  AvrChip(const AvrChip&) = delete;
  AvrChip& operator=(const AvrChip&) = delete;

  /// Makes `mcu` at `f_cpu_hz` with AVCC and AREF in volts and loads the ELF. Throws
  /// std::runtime_error saying what failed.
  void load(const std::string& elf, const std::string& mcu, std::uint64_t f_cpu_hz, double avcc_v, double aref_v);

  /// The voltage on ADC channel `channel` from now on.
  void set_adc(int channel, double volts);
  /// Drives an input pin high or low from now on.
  void set_input(const AvrPin& pin, bool high);
  /// Starts following an output pin; the trace's index.
  int watch(const AvrPin& pin);
  const PinTrace& trace(int index) const { return watches_[static_cast<std::size_t>(index)]->trace; }
  /// Starts a new step for every watched pin's high_in_step.
  void begin_step();

  /// Runs until the cycle counter reaches `cycle` (or the chip stops).
  RunStatus run_until(std::uint64_t cycle);
  std::uint64_t cycle() const;
  /// The program counter, a byte address in flash.
  std::uint32_t pc() const;
  /// A data-space byte (registers, I/O, RAM).
  std::uint8_t data(std::uint16_t address) const;
  /// Timer `t`'s registers.
  TimerRegisters timer(int t) const;
  /// Whether a port bit is an output (DDR) and its PORT value.
  bool is_output(const AvrPin& pin) const;
  bool port_bit(const AvrPin& pin) const;

  /// Bytes the UART (USART0) sent; the caller clears what it has taken (the buffer keeps its
  /// capacity from step to step).
  std::string& uart_output() { return uart_out_; }
  /// Bytes for the UART's receiver: delivered at the line's pace as the chip takes them.
  void uart_input(std::string_view bytes);
  std::size_t uart_input_pending() const { return uart_in_.size() - uart_in_at_; }

  /// Puts I2C chips on the TWI bus (owned by the caller, alive while the chip runs). An
  /// address no chip has is not acknowledged.
  void attach_i2c(std::vector<I2cDevice*> devices);

  /// Resets since load (the watchdog's, or the firmware's own), and the cycle of the last three.
  std::uint64_t resets() const { return resets_; }
  const std::uint64_t* reset_cycles() const { return reset_at_; }

  /// What simavr said (its log lines), moved out.
  std::string take_log();

  struct Sim;
  struct Watch {
    AvrChip* chip = nullptr;
    PinTrace trace;
  };

 private:
  friend struct AvrChipHooks;
  std::unique_ptr<Sim> sim_;
  std::vector<std::unique_ptr<Watch>> watches_;
  std::string uart_out_;
  std::string uart_in_;
  std::size_t uart_in_at_ = 0;
  bool uart_xoff_ = false;
  std::vector<I2cDevice*> i2c_;
  std::uint64_t resets_ = 0;
  std::uint64_t reset_at_[3] = {0, 0, 0};  // newest first
  I2cDevice* i2c_selected_ = nullptr;
  void feed_uart();
};

}  // namespace tether::adapters::mcu
