// SPDX-License-Identifier: Apache-2.0
// `type: mcu`: firmware on an emulated ATmega328P, in lock-step by clock cycles (docs/mcu.md).
#include "tether/mcu/mcu_endpoint.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "avr_chip.hpp"
#include "mcu_wire.hpp"
#include "tether/firmware_shim/payloads.h"
#include "tether/hal/device_bank.hpp"
#include "tether/mcu/i2c_devices.hpp"
#include "tether/mcu/sketch_build.hpp"

namespace tether::adapters {

namespace {

using Role = McuPinConfig::Role;

double map_linear(double x, const double (&from)[2], const double (&to)[2]) {
  return to[0] + (x - from[0]) * (to[1] - to[0]) / (from[1] - from[0]);
}

char hex_digit(int v) { return static_cast<char>(v < 10 ? '0' + v : 'a' + v - 10); }

}  // namespace

struct McuEndpoint::Impl {
  mcu::AvrChip chip;
  std::vector<int> traces;         // per pin: its trace in the chip (outputs), -1 for inputs
  std::vector<double> last_value;  // per pin: what the pin last measured (duty, µs, level)
  std::uint64_t target_cycle = 0;  // where the current step ends
  std::uint64_t pending_step = 0;
  bool has_pending = false;
  bool loaded = false;
  bool started = false;
  std::uint64_t first_step = 0;         // the session's first step: cycle 0
  std::string line;                     // the Serial line being printed
  std::vector<runtime::LogLine> lines;  // complete lines since the last reply
  std::string elf;
  mutable std::optional<mcu::SketchBuild> built;
  std::vector<std::unique_ptr<mcu::I2cDevice>> i2c;
  std::size_t script_at = 0;     // the next serial_in.script entry
  std::array<char, 512> nmea{};  // the GPS's sentences
  std::uint64_t serial_in_bytes = 0;
  std::uint64_t resets_seen = 0;
  std::vector<bool> i2c_needs_echo;  // per chip: fed from a ray sensor whose reading needs a hit (srf08)

  // the Serial lines printed during the step into the reply's log lines
  void take_serial_lines(runtime::Reply& reply) {
    for (char c : chip.uart_output()) {
      ++serial_bytes;
      if (c == '\n' || line.size() >= 240) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        reply.logs.push_back({0, line});
        last_line = line;
        ++serial_lines;
        line.clear();
        if (c == '\n') continue;
      }
      if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\r') {
        line += "\\x";
        line += hex_digit((c >> 4) & 0xF);
        line += hex_digit(c & 0xF);
      } else {
        line += c;
      }
    }
    chip.uart_output().clear();  // keeps its capacity: no allocation per step
  }
  McuFrame frame;                        // the step's pins and chips, for the recording
  std::vector<double> input_changed_us;  // per pin: 0 when an input changed at this step's start
  std::vector<std::uint64_t> i2c_seen;   // per chip: transactions and NACKs already framed
  // figures for the summary
  std::uint64_t steps = 0;
  std::uint64_t serial_lines = 0;
  std::uint64_t serial_bytes = 0;
  std::string last_line;
};

McuEndpoint::McuEndpoint(const runtime::EndpointConfig& config, const runtime::Scenario& scenario)
    : Endpoint(config), config_(parse_mcu_config(config, scenario)), impl_(std::make_unique<Impl>()) {
  for (const hal::DeviceSpec& d : scenario.devices) device_names_.push_back(d.name.full());
}

std::vector<runtime::WireTopic> McuEndpoint::wire_topics() const { return mcu_wire_topics(config_, device_names_); }

McuEndpoint::~McuEndpoint() = default;

std::vector<std::string> McuEndpoint::launch_problems() const {
  const std::string who = "endpoint \"" + name() + "\": ";
  if (!config_.sketch.empty()) {
    if (!impl_->built) impl_->built = mcu::build_sketch(config_.sketch, config_.mcu, config_.f_cpu_hz);
    if (!impl_->built->ok) return {who + "sketch " + config_.sketch + " does not build: " + impl_->built->error};
    const std::string problem = mcu::avr_elf_problem(impl_->built->elf, config_.mcu);
    if (!problem.empty()) return {who + problem};
    return {};
  }
  if (!std::filesystem::exists(config_.firmware))
    return {who + "firmware " + config_.firmware + " does not exist (not built yet?)"};
  const std::string problem = mcu::avr_elf_problem(config_.firmware, config_.mcu);
  if (!problem.empty()) return {who + problem};
  return {};
}

void McuEndpoint::start(const runtime::WorldModel&, const runtime::WorldState&) {
  Impl& s = *impl_;
  const std::string who = "endpoint \"" + name() + "\": ";
  if (!config_.sketch.empty()) {
    if (!s.built) s.built = mcu::build_sketch(config_.sketch, config_.mcu, config_.f_cpu_hz);
    if (!s.built->ok) throw std::runtime_error(who + "sketch " + config_.sketch + " does not build: " + s.built->error);
    s.elf = s.built->elf;
  } else {
    s.elf = config_.firmware;
  }
  try {
    s.chip.load(s.elf, config_.mcu, config_.f_cpu_hz, config_.avcc_v, config_.aref_v);
  } catch (const std::exception& e) {
    throw std::runtime_error(who + e.what());
  }
  s.loaded = true;
  s.traces.assign(config_.pins.size(), -1);
  s.last_value.assign(config_.pins.size(), 0.0);
  for (std::size_t i = 0; i < config_.pins.size(); ++i)
    if (config_.pins[i].role == Role::pwm_out || config_.pins[i].role == Role::pulse_out ||
        config_.pins[i].role == Role::digital_out)
      s.traces[i] = s.chip.watch(config_.pins[i].pin);
  std::vector<mcu::I2cDevice*> bus;
  for (const McuI2cConfig& c : config_.i2c) {
    mcu::I2cChipOptions o;
    o.temperature_c = c.temperature_c;
    o.atmospheric_pa = c.atmospheric_pa;
    s.i2c.push_back(mcu::make_i2c_device(c.chip, c.address, static_cast<double>(config_.f_cpu_hz), o));
    bus.push_back(s.i2c.back().get());
  }
  s.chip.attach_i2c(std::move(bus));
  for (const McuI2cConfig& c : config_.i2c) s.i2c_needs_echo.push_back(c.chip == "srf08");
  s.lines.reserve(64);
  s.input_changed_us.assign(config_.pins.size(), -1.0);
  s.i2c_seen.assign(2 * config_.i2c.size(), 0);
  s.frame.bytes.reserve(2 + 16 * config_.pins.size() + 8 * config_.i2c.size());
  s.line.reserve(256);
}

bool McuEndpoint::publish(const runtime::StepContext& ctx, const runtime::WorldState&) {
  Impl& s = *impl_;
  if (!s.loaded) return false;
  // this step's readings on the input pins, held for the whole step
  for (std::size_t i = 0; i < config_.pins.size(); ++i) {
    const McuPinConfig& p = config_.pins[i];
    if (p.role != Role::analog_in && p.role != Role::digital_in) continue;
    if (!devices_ || static_cast<std::size_t>(p.device) >= devices_->size()) continue;
    const hal::Sample& sample = devices_->sample(static_cast<std::size_t>(p.device));
    if (!sample.valid) continue;  // no new reading: the pin keeps its level
    const double x = sample.ch[static_cast<std::size_t>(p.channel)];
    if (p.role == Role::analog_in) {
      const double v = std::clamp(map_linear(x, p.from, p.to), 0.0, config_.avcc_v);
      s.input_changed_us[i] = v != s.last_value[i] ? 0.0 : -1.0;
      s.last_value[i] = v;
      s.chip.set_adc(p.pin.adc, v);
    } else {
      const bool high = (x > p.above) != p.invert;
      s.input_changed_us[i] = (high ? 1 : 0) != s.last_value[i] ? 0.0 : -1.0;
      s.last_value[i] = high ? 1 : 0;
      s.chip.set_input(p.pin, high);
    }
  }
  // bytes for the UART's receiver: the script's due text, the GPS's new sentences
  while (s.script_at < config_.serial_script.size() && config_.serial_script[s.script_at].at_ns <= ctx.time_ns) {
    const std::string& text = config_.serial_script[s.script_at++].text;
    s.chip.uart_input(text);
    s.serial_in_bytes += text.size();
  }
  if (config_.serial_gps >= 0 && devices_ && devices_->fresh(static_cast<std::size_t>(config_.serial_gps))) {
    const std::size_t n =
        devices_->gps_sentences(static_cast<std::size_t>(config_.serial_gps), s.nmea.data(), s.nmea.size());
    s.chip.uart_input(std::string_view(s.nmea.data(), n));
    s.serial_in_bytes += n;
  }
  // this step's readings in the I2C chips' registers
  for (std::size_t i = 0; i < config_.i2c.size(); ++i) {
    if (!devices_ || static_cast<std::size_t>(config_.i2c[i].device) >= devices_->size()) continue;
    const hal::Sample& sample = devices_->sample(static_cast<std::size_t>(config_.i2c[i].device));
    mcu::I2cInput in;
    in.valid = sample.valid && (!s.i2c_needs_echo[i] || sample.flags != 0);
    for (std::size_t c = 0; c < in.ch.size() && c < sample.ch.size(); ++c) in.ch[c] = sample.ch[c];
    // a device with no data (a dropout fault) is a chip gone from the bus: it stops acknowledging
    s.i2c[i]->silent = !sample.valid;
    s.i2c[i]->update(in);
  }
  // the n-th step since the start ends at cycle n * period * f_cpu, exactly (no drift from
  // rounding per step)
  if (!s.started) {
    s.first_step = ctx.step;
    s.started = true;
  }
  const unsigned __int128 end = static_cast<unsigned __int128>(ctx.step - s.first_step + 1) *
                                static_cast<unsigned __int128>(config_.period_ns) * config_.f_cpu_hz / 1'000'000'000u;
  s.target_cycle = static_cast<std::uint64_t>(end);
  s.pending_step = ctx.step;
  s.has_pending = true;
  return true;
}

runtime::GatherStatus McuEndpoint::gather(const runtime::StepContext& ctx, runtime::SteadyClock::time_point,
                                          runtime::Reply& reply) {
  Impl& s = *impl_;
  if (!s.has_pending || s.pending_step != ctx.step) return runtime::GatherStatus::timeout;
  s.has_pending = false;
  s.chip.begin_step();
  const std::uint64_t step_start = s.chip.cycle();
  const mcu::AvrChip::RunStatus status = s.chip.run_until(s.target_cycle);
  if (status != mcu::AvrChip::RunStatus::ok) {
    char pc[16];
    std::snprintf(pc, sizeof pc, "0x%04x", s.chip.pc());
    const std::string said = s.chip.take_log();
    fault_message_ =
        status == mcu::AvrChip::RunStatus::crashed
            ? "the " + config_.mcu + " crashed at PC " + pc + " (cycle " + std::to_string(s.chip.cycle()) + ")" +
                  (said.empty() ? "" : ": " + said)
            : "the firmware stopped at PC " + std::string(pc) + " (interrupts off and asleep: main returned?)";
    return runtime::GatherStatus::fault;
  }
  ++s.steps;
  reply.clear();
  reply.step = ctx.step;
  // resets in the step: each one said; three within a second of chip time is a reset loop (a
  // watchdog the firmware never feeds), the endpoint's fault
  if (s.chip.resets() != s.resets_seen) {
    const std::uint64_t* at = s.chip.reset_cycles();
    s.resets_seen = s.chip.resets();
    if (s.chip.resets() >= 3 && at[0] - at[2] <= config_.f_cpu_hz) {
      char every[32];
      std::snprintf(every, sizeof every, "%.1f ms",
                    0.5e3 * static_cast<double>(at[0] - at[2]) / static_cast<double>(config_.f_cpu_hz));
      fault_message_ = "the " + config_.mcu + " is in a reset loop: " + std::to_string(s.chip.resets()) +
                       " resets, the last three every " + every + " (a watchdog the firmware does not reset in time?)";
      return runtime::GatherStatus::fault;
    }
    reply.logs.push_back({1, "the " + config_.mcu + " reset at cycle " + std::to_string(at[0]) + " (" +
                                 std::to_string(s.chip.resets()) + " so far)"});
  }
  s.take_serial_lines(reply);
  // the output pins as the step leaves them, as actuator commands
  const double step_cycles = static_cast<double>(std::max<std::uint64_t>(1, s.chip.cycle() - step_start));
  const double us_per_cycle = 1e6 / static_cast<double>(config_.f_cpu_hz);
  for (std::size_t i = 0; i < config_.pins.size(); ++i) {
    const McuPinConfig& p = config_.pins[i];
    if (s.traces[i] < 0) continue;
    const mcu::PinTrace& t = s.chip.trace(s.traces[i]);
    const bool output = s.chip.is_output(p.pin);
    mcu::Waveform w;
    if (p.pin.timer >= 0 && output)
      w = mcu::timer_waveform(s.chip.timer(p.pin.timer), p.pin.channel, static_cast<double>(config_.f_cpu_hz));
    double measured = 0;
    if (p.role == Role::digital_out) {
      measured = output && t.level ? 1 : 0;
    } else if (p.role == Role::pwm_out) {
      if (w.connected)
        measured = w.running ? w.duty : (s.chip.port_bit(p.pin) ? 1 : 0);
      else
        measured = output ? static_cast<double>(t.high_in_step) / step_cycles : 0;
    } else {  // pulse_out: the last pulse's width, 0 (no signal) when no pulse came in 100 ms
      if (w.connected && w.running && w.period_us > 0) {
        measured = w.high_us;
      } else if (output && t.rose_at != 0 && t.high_cycles > 0 &&
                 static_cast<double>(s.chip.cycle() - t.rose_at) * us_per_cycle < 100'000.0) {
        measured = static_cast<double>(t.high_cycles) * us_per_cycle;
      }
    }
    s.last_value[i] = measured;
  }
  // the step's frame: every pin's value and when it changed, the chips' transactions
  s.frame.begin(config_.pins.size());
  for (std::size_t i = 0; i < config_.pins.size(); ++i) {
    double changed = s.input_changed_us[i];
    if (s.traces[i] >= 0) {
      const mcu::PinTrace& t = s.chip.trace(s.traces[i]);
      changed = t.edges > 0 && t.changed_at >= step_start
                    ? static_cast<double>(t.changed_at - step_start) * us_per_cycle
                    : -1.0;
    }
    s.frame.pin(s.last_value[i], changed);
    s.input_changed_us[i] = -1.0;
  }
  s.frame.chips(s.i2c.size());
  for (std::size_t i = 0; i < s.i2c.size(); ++i) {
    const mcu::I2cDevice& d = *s.i2c[i];
    s.frame.chip(static_cast<std::uint32_t>(d.transactions - s.i2c_seen[2 * i]),
                 static_cast<std::uint32_t>(d.nacks - s.i2c_seen[2 * i + 1]));
    s.i2c_seen[2 * i] = d.transactions;
    s.i2c_seen[2 * i + 1] = d.nacks;
  }
  reply.add_wire(false, s.frame.bytes);
  // one command per device, its fields from the pins that drive them
  for (std::size_t i = 0; i < config_.pins.size(); ++i) {
    const McuPinConfig& p = config_.pins[i];
    if (s.traces[i] < 0) continue;
    runtime::DeviceCommand* cmd = nullptr;
    for (auto& c : reply.commands)
      if (c.device == p.device) cmd = &c;
    if (!cmd) {
      runtime::DeviceCommand c;
      c.device = static_cast<std::uint16_t>(p.device);
      c.size = devices_ ? static_cast<std::uint8_t>(devices_->payload_size(static_cast<std::size_t>(p.device))) : 4;
      reply.commands.push_back(c);
      cmd = &reply.commands.back();
    }
    double value = 0;
    const bool no_signal = p.role == Role::pulse_out && s.last_value[i] == 0;
    if (!no_signal) value = map_linear(s.last_value[i], p.from, p.to);
    if (p.reverse && s.chip.is_output(*p.reverse) && s.chip.port_bit(*p.reverse)) value = -value;
    tether_put_f32le(cmd->bytes.data() + 4 * p.field, static_cast<float>(value));
  }
  return runtime::GatherStatus::ready;
}

bool McuEndpoint::operator_command(std::string_view verb, const nlohmann::json& arguments, bool apply,
                                   std::string* why) {
  if (verb != "serial") {
    if (why) *why = "endpoint \"" + name() + "\" (type mcu) takes `serial` {text}, not \"" + std::string(verb) + "\"";
    return false;
  }
  if (!arguments.is_object() || !arguments.contains("text") || !arguments["text"].is_string() ||
      arguments.size() != 1) {
    if (why) *why = "`serial` takes {\"text\": \"...\"}: the bytes for the firmware's Serial";
    return false;
  }
  if (!apply) return true;
  const std::string& text = arguments["text"].get_ref<const std::string&>();
  impl_->chip.uart_input(text);
  impl_->serial_in_bytes += text.size();
  return true;
}

void McuEndpoint::stop() {}

void McuEndpoint::summarize(nlohmann::json& out) const {
  const Impl& s = *impl_;
  nlohmann::json pins = nlohmann::json::object();
  for (std::size_t i = 0; i < config_.pins.size() && i < s.last_value.size(); ++i)
    pins[config_.pins[i].pin.label()] = s.last_value[i];
  nlohmann::json i2c = nlohmann::json::array();
  for (const auto& d : s.i2c)
    i2c.push_back(
        {{"chip", d->chip()}, {"address", d->address()}, {"transactions", d->transactions}, {"nacks", d->nacks}});
  out["mcu"] = {{"chip", config_.mcu},
                {"i2c", i2c},
                {"f_cpu_hz", config_.f_cpu_hz},
                {"firmware", s.elf},
                {"cycles", s.chip.cycle()},
                {"steps", s.steps},
                {"resets", s.chip.resets()},
                {"serial_lines", s.serial_lines},
                {"serial_bytes", s.serial_bytes},
                {"serial_last_line", s.last_line},
                {"serial_in_bytes", s.serial_in_bytes},
                {"serial_in_pending", s.chip.uart_input_pending()},
                {"pins_last", pins}};
}

}  // namespace tether::adapters
