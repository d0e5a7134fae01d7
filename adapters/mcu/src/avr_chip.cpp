// SPDX-License-Identifier: Apache-2.0
// simavr behind AvrChip (docs/mcu.md).
#include "avr_chip.hpp"

extern "C" {
#include <simavr/avr_adc.h>
#include <simavr/avr_ioport.h>
#include <simavr/avr_twi.h>
#include <simavr/avr_uart.h>
#include <simavr/sim_avr.h>
#include <simavr/sim_elf.h>
#include <simavr/sim_io.h>
#include <simavr/sim_irq.h>
}

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace tether::adapters::mcu {

namespace {

// simavr logs through one process-wide function; its lines are kept here until a chip takes them
std::string& simavr_log() {
  static std::string log;
  return log;
}

void log_to_buffer(avr_t*, const int level, const char* format, va_list ap) {
  if (level > LOG_WARNING) return;  // its trace and debug chatter ("Loaded 3168 .text")
  char line[512];
  std::vsnprintf(line, sizeof line, format, ap);
  simavr_log() += line;
}

// no real time inside the chip: simavr's default sleep waits on the host's clock
void no_sleep(avr_t*, avr_cycle_count_t) {}

std::uint16_t le16(const unsigned char* p) { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }
std::uint32_t le32(const unsigned char* p) {
  return static_cast<std::uint32_t>(p[0] | (p[1] << 8) | (p[2] << 16)) | (static_cast<std::uint32_t>(p[3]) << 24);
}

}  // namespace

namespace {
// the chip inside avr_run() on this thread: simavr's reset hook has no user pointer
thread_local AvrChip* running = nullptr;
// the MCU's own reset, which ours wraps (one chip type: the same for every instance)
void (*core_reset)(avr_t*) = nullptr;
}  // namespace

struct AvrChip::Sim {
  avr_t* avr = nullptr;
  avr_irq_t* uart_input = nullptr;
  avr_irq_t* twi_input = nullptr;
};

struct AvrChipHooks {
  static void uart_output(avr_irq_t*, std::uint32_t value, void* param) {
    static_cast<AvrChip*>(param)->uart_out_ += static_cast<char>(value & 0xFF);
  }
  static void uart_xon(avr_irq_t*, std::uint32_t, void* param) {
    auto* chip = static_cast<AvrChip*>(param);
    chip->uart_xoff_ = false;
    chip->feed_uart();
  }
  static void uart_xoff(avr_irq_t*, std::uint32_t, void* param) { static_cast<AvrChip*>(param)->uart_xoff_ = true; }
  // simavr's TWI master as bus messages: START carries the address (7 bits << 1 | read), a
  // chip answers with ACK; WRITE carries a byte (ACK it); READ asks for one (answer with it)
  static void twi_message(avr_irq_t*, std::uint32_t value, void* param) {
    auto* chip = static_cast<AvrChip*>(param);
    avr_twi_msg_irq_t m;
    m.u.v = value;
    const std::uint64_t now = chip->cycle();
    const std::uint8_t msg = m.u.twi.msg;
    if (msg & TWI_COND_STOP) {
      if (chip->i2c_selected_) chip->i2c_selected_->stop(now);
      chip->i2c_selected_ = nullptr;
    }
    if (msg & TWI_COND_START) {
      chip->i2c_selected_ = nullptr;
      const std::uint8_t addr = m.u.twi.addr;
      for (I2cDevice* d : chip->i2c_) {
        if (d->address() != (addr >> 1)) continue;
        if (!d->silent && d->start((addr & 1) != 0, now)) {
          ++d->transactions;
          chip->i2c_selected_ = d;
          avr_raise_irq(chip->sim_->twi_input, avr_twi_irq_msg(TWI_COND_ACK, addr, 1));
        } else {
          ++d->nacks;
        }
        break;
      }
    }
    I2cDevice* d = chip->i2c_selected_;
    if (!d) return;
    if (msg & TWI_COND_WRITE) {
      if (d->write(m.u.twi.data, now))
        avr_raise_irq(chip->sim_->twi_input, avr_twi_irq_msg(TWI_COND_ACK, m.u.twi.addr, 1));
    }
    if (msg & TWI_COND_READ)
      avr_raise_irq(chip->sim_->twi_input, avr_twi_irq_msg(TWI_COND_READ, m.u.twi.addr, d->read(now)));
  }
  static void reset(avr_t* avr) {
    if (AvrChip* chip = running) {
      ++chip->resets_;
      chip->reset_at_[2] = chip->reset_at_[1];
      chip->reset_at_[1] = chip->reset_at_[0];
      chip->reset_at_[0] = avr->cycle;
    }
    if (core_reset) core_reset(avr);
  }
  static void pin_changed(avr_irq_t*, std::uint32_t value, void* param) {
    auto* w = static_cast<AvrChip::Watch*>(param);
    const bool level = (value & 1) != 0;
    PinTrace& t = w->trace;
    if (level == t.level) return;
    const std::uint64_t now = w->chip->cycle();
    if (t.level) {
      t.high_in_step += now - t.since;
      if (t.rose_at != 0) t.high_cycles = now - t.rose_at;
    } else {
      if (t.rose_at != 0) t.period_cycles = now - t.rose_at;
      t.rose_at = now == 0 ? 1 : now;
    }
    t.since = now;
    t.level = level;
    t.changed_at = now;
    ++t.edges;
  }
};

std::string avr_elf_problem(const std::string& path, const std::string& mcu) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "firmware " + path + " cannot be read";
  unsigned char h[52] = {};
  in.read(reinterpret_cast<char*>(h), sizeof h);
  if (in.gcount() < static_cast<std::streamsize>(sizeof h) || std::memcmp(h,
                                                                          "\x7f"
                                                                          "ELF",
                                                                          4) != 0)
    return "firmware " + path + " is not an ELF file";
  if (h[4] != 1 || h[5] != 1) return "firmware " + path + " is not a 32-bit little-endian ELF (an AVR image is)";
  const std::uint16_t machine = le16(h + 18);
  if (machine != 83) {
    const char* what = machine == 40 ? "ARM" : machine == 62 ? "x86-64" : machine == 3 ? "x86" : nullptr;
    return "firmware " + path + " is built for " + (what ? std::string(what) : "machine " + std::to_string(machine)) +
           ", not an AVR (" + mcu + ")";
  }
  const std::uint32_t arch = le32(h + 36) & 0x7F;
  // the ATmega328P is avr5 (avr-gcc's -mmcu=atmega328p); other families are other chips
  if (mcu == "atmega328p" && arch != 5)
    return "firmware " + path + " is built for the AVR family avr" + std::to_string(arch) +
           " (another MCU), not the atmega328p (avr5): build it with -mmcu=atmega328p";
  return "";
}

AvrChip::AvrChip() : sim_(std::make_unique<Sim>()) {}

AvrChip::~AvrChip() {
  if (sim_->avr) {
    avr_terminate(sim_->avr);
    std::free(sim_->avr);
  }
}

void AvrChip::load(const std::string& elf, const std::string& mcu, std::uint64_t f_cpu_hz, double avcc_v,
                   double aref_v) {
  if (const std::string problem = avr_elf_problem(elf, mcu); !problem.empty()) throw std::runtime_error(problem);
  avr_global_logger_set(log_to_buffer);
  elf_firmware_t f;
  std::memset(&f, 0, sizeof f);
  if (elf_read_firmware(elf.c_str(), &f) != 0)
    throw std::runtime_error("simavr cannot read firmware " + elf + ": " + take_log());
  auto free_firmware = [&f] {
    std::free(f.flash);
    std::free(f.eeprom);
    std::free(f.fuse);
    std::free(f.lockbits);
#if ELF_SYMBOLS
    for (std::uint32_t i = 0; i < f.symbolcount; ++i) std::free(f.symbol[i]);
    std::free(f.symbol);
#endif
  };
  if (f.mmcu[0] != '\0' && mcu != f.mmcu) {
    const std::string named = f.mmcu;
    free_firmware();
    throw std::runtime_error("firmware " + elf + " names the MCU " + named + " (its .mmcu section), not " + mcu);
  }
  avr_t* avr = avr_make_mcu_by_name(mcu.c_str());
  if (!avr) {
    free_firmware();
    throw std::runtime_error("simavr does not know the MCU " + mcu);
  }
  if (avr_init(avr) != 0) {
    std::free(avr);
    free_firmware();
    throw std::runtime_error("simavr cannot start the " + mcu + ": " + take_log());
  }
  sim_->avr = avr;
  avr->log = LOG_WARNING;
  avr->sleep = no_sleep;
  avr->frequency = static_cast<std::uint32_t>(f_cpu_hz);
  avr_load_firmware(avr, &f);
  free_firmware();
  // the firmware's .mmcu section may set them; the scenario's values win
  avr->frequency = static_cast<std::uint32_t>(f_cpu_hz);
  avr->vcc = avr->avcc = static_cast<std::uint32_t>(avcc_v * 1000.0 + 0.5);
  avr->aref = static_cast<std::uint32_t>(aref_v * 1000.0 + 0.5);
  // the UART neither prints on our console nor sleeps while the firmware polls it
  std::uint32_t flags = 0;
  avr_ioctl(avr, AVR_IOCTL_UART_GET_FLAGS('0'), &flags);
  flags &= ~static_cast<std::uint32_t>(AVR_UART_FLAG_STDIO | AVR_UART_FLAG_POLL_SLEEP);
  avr_ioctl(avr, AVR_IOCTL_UART_SET_FLAGS('0'), &flags);
  avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_OUTPUT), AvrChipHooks::uart_output,
                          this);
  avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_OUT_XON), AvrChipHooks::uart_xon,
                          this);
  avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_OUT_XOFF), AvrChipHooks::uart_xoff,
                          this);
  sim_->uart_input = avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_INPUT);
  // count the resets that come while it runs (the watchdog's)
  if (avr->reset != AvrChipHooks::reset) core_reset = avr->reset;
  avr->reset = AvrChipHooks::reset;
}

void AvrChip::set_adc(int channel, double volts) {
  const double mv = volts < 0 ? 0 : volts * 1000.0;
  avr_raise_irq(avr_io_getirq(sim_->avr, AVR_IOCTL_ADC_GETIRQ, ADC_IRQ_ADC0 + channel),
                static_cast<std::uint32_t>(mv + 0.5));
}

void AvrChip::set_input(const AvrPin& pin, bool high) {
  avr_raise_irq(avr_io_getirq(sim_->avr, AVR_IOCTL_IOPORT_GETIRQ(pin.port), pin.bit), high ? 1 : 0);
}

void AvrChip::attach_i2c(std::vector<I2cDevice*> devices) {
  i2c_ = std::move(devices);
  if (i2c_.empty() || sim_->twi_input) return;
  avr_irq_register_notify(avr_io_getirq(sim_->avr, AVR_IOCTL_TWI_GETIRQ(0), TWI_IRQ_OUTPUT), AvrChipHooks::twi_message,
                          this);
  sim_->twi_input = avr_io_getirq(sim_->avr, AVR_IOCTL_TWI_GETIRQ(0), TWI_IRQ_INPUT);
}

int AvrChip::watch(const AvrPin& pin) {
  auto w = std::make_unique<Watch>();
  w->chip = this;
  w->trace.level = is_output(pin) && port_bit(pin);
  w->trace.since = cycle();
  avr_irq_register_notify(avr_io_getirq(sim_->avr, AVR_IOCTL_IOPORT_GETIRQ(pin.port), pin.bit),
                          AvrChipHooks::pin_changed, w.get());
  watches_.push_back(std::move(w));
  return static_cast<int>(watches_.size()) - 1;
}

void AvrChip::begin_step() {
  const std::uint64_t now = cycle();
  for (auto& w : watches_) {
    w->trace.high_in_step = 0;
    w->trace.since = now;
  }
}

AvrChip::RunStatus AvrChip::run_until(std::uint64_t target) {
  avr_t* avr = sim_->avr;
  running = this;
  while (avr->cycle < target) {
    const int state = avr_run(avr);
    if (state == cpu_Crashed || state == cpu_Done) {
      running = nullptr;
      return state == cpu_Crashed ? RunStatus::crashed : RunStatus::stopped;
    }
  }
  running = nullptr;
  // the cycles the pins stayed at their level up to now count into this step
  for (auto& w : watches_) {
    if (w->trace.level) w->trace.high_in_step += avr->cycle - w->trace.since;
    w->trace.since = avr->cycle;
  }
  return RunStatus::ok;
}

std::uint64_t AvrChip::cycle() const { return sim_->avr ? sim_->avr->cycle : 0; }
std::uint32_t AvrChip::pc() const { return sim_->avr ? sim_->avr->pc : 0; }
std::uint8_t AvrChip::data(std::uint16_t address) const { return sim_->avr->data[address]; }

TimerRegisters AvrChip::timer(int t) const {
  using namespace reg328p;
  TimerRegisters r;
  r.timer = t;
  auto u16 = [this](std::uint16_t a) { return static_cast<std::uint16_t>(data(a) | (data(a + 1) << 8)); };
  if (t == 0) {
    r.tccra = data(tccr0a), r.tccrb = data(tccr0b), r.ocra = data(ocr0a), r.ocrb = data(ocr0b);
  } else if (t == 1) {
    r.tccra = data(tccr1a), r.tccrb = data(tccr1b), r.ocra = u16(ocr1a), r.ocrb = u16(ocr1b), r.icr = u16(icr1);
  } else {
    r.tccra = data(tccr2a), r.tccrb = data(tccr2b), r.ocra = data(ocr2a), r.ocrb = data(ocr2b);
  }
  return r;
}

bool AvrChip::is_output(const AvrPin& pin) const { return (data(reg328p::port_reg(pin.port, 1)) >> pin.bit) & 1; }
bool AvrChip::port_bit(const AvrPin& pin) const { return (data(reg328p::port_reg(pin.port, 2)) >> pin.bit) & 1; }

void AvrChip::uart_input(std::string_view bytes) {
  if (uart_in_at_ == uart_in_.size()) {
    uart_in_.clear();
    uart_in_at_ = 0;
  }
  uart_in_.append(bytes);
  feed_uart();
}

void AvrChip::feed_uart() {
  // simavr's receive FIFO takes bytes until it says XOFF; it says XON when there is room again
  while (!uart_xoff_ && uart_in_at_ < uart_in_.size() && sim_->uart_input) {
    const auto byte = static_cast<std::uint8_t>(uart_in_[uart_in_at_++]);
    avr_raise_irq(sim_->uart_input, byte);
  }
}

std::string AvrChip::take_log() {
  std::string out;
  out.swap(simavr_log());
  return out;
}

}  // namespace tether::adapters::mcu

#if defined(__SANITIZE_ADDRESS__)
// simavr 1.6 does not free the IRQs its peripherals allocate (avr_init_irq, avr_alloc_irq,
// avr_irq_register_notify) when a chip is terminated: a few kB per chip, once, not ours.
// LeakSanitizer reads this hook of the program's; nothing else in Tether defines it
extern "C" const char* __lsan_default_suppressions() { return "leak:libsimavr.so\n"; }
// and not a table of them at every exit of every program that links the endpoint
extern "C" const char* __lsan_default_options() { return "print_suppressions=0"; }
#endif
