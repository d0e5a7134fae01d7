// SPDX-License-Identifier: Apache-2.0
// I2C chips as their datasheets describe them (docs/mcu.md, "I2C devices"):
//   mpu6050  InvenSense, "MPU-6000 and MPU-6050 Register Map and Descriptions" (RM-MPU-6000A-00)
//   ms5837   TE Connectivity, "MS5837-30BA Ultra-small, gel-filled, pressure sensor" datasheet, and
//            its application note AN520 for the PROM's CRC-4
//   srf08    Devantech, "SRF08 Ultra sonic range finder" technical specification
#include "tether/mcu/i2c_devices.hpp"

#include <algorithm>
#include <cmath>

namespace tether::adapters::mcu {

namespace {

constexpr double pi = 3.14159265358979323846;
constexpr double g0 = 9.80665;

std::int16_t saturate16(double v) { return static_cast<std::int16_t>(std::clamp(std::lround(v), -32768L, 32767L)); }

// ---- MPU-6050 ------------------------------------------------------------------------------
// Registers: 0x1B GYRO_CONFIG (FS_SEL bits 4:3: ±250/500/1000/2000 °/s), 0x1C ACCEL_CONFIG
// (AFS_SEL bits 4:3: ±2/4/8/16 g), 0x3B..0x40 ACCEL_[XYZ]OUT, 0x41..0x42 TEMP_OUT, 0x43..0x48
// GYRO_[XYZ]OUT (big-endian, two's complement), 0x6B PWR_MGMT_1 (reset value 0x40: SLEEP; bit
// 7 DEVICE_RESET), 0x75 WHO_AM_I (0x68). A write's first byte sets the register pointer, the
// next bytes write from there; reads continue from the pointer; both auto-increment.
class Mpu6050 final : public I2cDevice {
 public:
  Mpu6050(std::uint8_t address, double f_cpu_hz, const I2cChipOptions& o)
      : I2cDevice(address, f_cpu_hz), temperature_c_(o.temperature_c) {
    reset();
  }
  const char* chip() const override { return "mpu6050"; }
  bool start(bool read, std::uint64_t) override {
    first_ = !read;
    return true;
  }
  bool write(std::uint8_t byte, std::uint64_t) override {
    if (first_) {
      pointer_ = byte & 0x7F;
      first_ = false;
      return true;
    }
    const bool read_only = (pointer_ >= 0x3B && pointer_ <= 0x60) || pointer_ == 0x75;
    if (!read_only) regs_[pointer_] = byte;
    if (pointer_ == 0x6B && (byte & 0x80)) reset();  // DEVICE_RESET: every register to its reset value
    pointer_ = (pointer_ + 1) & 0x7F;
    return true;
  }
  std::uint8_t read(std::uint64_t) override {
    const std::uint8_t v = regs_[pointer_];
    pointer_ = (pointer_ + 1) & 0x7F;
    return v;
  }
  void update(const I2cInput& in) override {
    if ((regs_[0x6B] & 0x40) || !in.valid) return;  // asleep: the data registers hold their values
    const int afs = (regs_[0x1C] >> 3) & 3;
    const int fs = (regs_[0x1B] >> 3) & 3;
    const double accel_lsb_per_g = 16384.0 / (1 << afs);
    const double gyro_lsb_per_dps = 131.0 / (1 << fs);
    // the wire convention (x forward, y right, z down) into the chip's axes (x forward, y left,
    // z up: a chip lying flat reads +1 g on z at rest)
    const double sign[3] = {1, -1, -1};
    for (int i = 0; i < 3; ++i) {
      put16(0x3B + 2 * i, saturate16(sign[i] * in.ch[static_cast<std::size_t>(3 + i)] / g0 * accel_lsb_per_g));
      put16(0x43 + 2 * i, saturate16(sign[i] * in.ch[static_cast<std::size_t>(i)] * 180.0 / pi * gyro_lsb_per_dps));
    }
    put16(0x41, saturate16((temperature_c_ - 36.53) * 340.0));  // °C = TEMP_OUT / 340 + 36.53
  }

 private:
  void reset() {
    regs_.fill(0);
    regs_[0x6B] = 0x40;
    regs_[0x75] = 0x68;
  }
  void put16(int reg, std::int16_t v) {
    regs_[static_cast<std::size_t>(reg)] = static_cast<std::uint8_t>((static_cast<std::uint16_t>(v) >> 8) & 0xFF);
    regs_[static_cast<std::size_t>(reg) + 1] = static_cast<std::uint8_t>(static_cast<std::uint16_t>(v) & 0xFF);
  }
  std::array<std::uint8_t, 128> regs_{};
  std::uint8_t pointer_ = 0;
  bool first_ = false;
  double temperature_c_;
};

// ---- MS5837-30BA ---------------------------------------------------------------------------
// Commands: 0x1E reset; 0x40 + 2i convert D1 (pressure) and 0x50 + 2i convert D2 (temperature)
// at OSR 256 << i (i = 0..5); 0x00 ADC read (24 bits, MSB first: 0 if no conversion was done,
// during a conversion, or read again); 0xA0 + 2i PROM read (16 bits of word i). Conversion
// times are the datasheet's maxima: 0.6, 1.17, 2.28, 4.54, 9.04, 18.08 ms.
class Ms5837 final : public I2cDevice {
 public:
  Ms5837(std::uint8_t address, double f_cpu_hz, const I2cChipOptions& o)
      : I2cDevice(address, f_cpu_hz), temperature_c_(o.temperature_c), atmospheric_pa_(o.atmospheric_pa),
        pressure_pa_(o.atmospheric_pa) {
    // a typical part's calibration (the datasheet's example values), version 0x1A (30BA26)
    // in C0 bits 11:5, and the CRC-4 in C0 bits 15:12 as the drivers check it
    prom_ = {static_cast<std::uint16_t>(0x1A << 5), 34982, 36352, 20328, 22354, 26646, 26146, 0};
    prom_[0] = static_cast<std::uint16_t>(prom_[0] | (ms5837_crc4(prom_) << 12));
  }
  const char* chip() const override { return "ms5837"; }
  bool start(bool, std::uint64_t) override {
    first_ = true;
    at_ = 0;
    return true;
  }
  bool write(std::uint8_t cmd, std::uint64_t cycle) override {
    if (!first_) return true;  // a command is one byte; more are acknowledged and ignored
    first_ = false;
    out_len_ = 0;
    if (cmd == 0x1E) {
      converting_ = ready_ = false;
    } else if ((cmd & 0xF0) == 0x40 || (cmd & 0xF0) == 0x50) {
      const int i = std::min((cmd & 0x0F) / 2, 5);
      static constexpr double ms[6] = {0.6, 1.17, 2.28, 4.54, 9.04, 18.08};
      converting_ = true;
      ready_ = false;
      done_at_ = cycle + cycles(ms[i] * 1e-3);
      result_ = (cmd & 0xF0) == 0x40 ? d1() : d2();
    } else if (cmd == 0x00) {
      settle(cycle);
      const std::uint32_t v = ready_ ? result_ : 0;  // before, during or after a read: 0
      ready_ = false;
      out_ = {static_cast<std::uint8_t>(v >> 16), static_cast<std::uint8_t>(v >> 8), static_cast<std::uint8_t>(v)};
      out_len_ = 3;
    } else if ((cmd & 0xF0) == 0xA0) {
      const std::uint16_t w = prom_[static_cast<std::size_t>((cmd & 0x0F) / 2)];
      out_ = {static_cast<std::uint8_t>(w >> 8), static_cast<std::uint8_t>(w), 0};
      out_len_ = 2;
    }
    return true;
  }
  std::uint8_t read(std::uint64_t) override { return at_ < out_len_ ? out_[at_++] : 0; }
  void update(const I2cInput& in) override {
    // a depth device: ch[0] the depth, ch[1] the water's ρg
    if (in.valid) pressure_pa_ = atmospheric_pa_ + in.ch[1] * std::max(0.0, in.ch[0]);
  }

 private:
  void settle(std::uint64_t cycle) {
    if (converting_ && cycle >= done_at_) {
      converting_ = false;
      ready_ = true;
    }
    if (converting_) ready_ = false;
  }
  double dT() const { return (temperature_c_ * 100.0 - 2000.0) * 8388608.0 / prom_[6]; }
  std::uint32_t d2() const {
    return static_cast<std::uint32_t>(std::clamp(std::llround(prom_[5] * 256.0 + dT()), 0LL, 16777215LL));
  }
  // the D1 whose pressure, as the driver computes it with this D2, is nearest the true one
  std::uint32_t d1() const {
    const std::uint32_t t = d2();
    const double target = pressure_pa_;
    double p = 0, c = 0;
    ms5837_compute(prom_, 8'000'000, t, p, c);
    double p2 = 0;
    ms5837_compute(prom_, 9'000'000, t, p2, c);
    const double slope = (p2 - p) / 1'000'000.0;
    long long best = std::llround(8'000'000 + (target - p) / slope);
    best = std::clamp(best, 0LL, 16777215LL);
    return static_cast<std::uint32_t>(best);
  }
  std::array<std::uint16_t, 8> prom_{};
  double temperature_c_, atmospheric_pa_, pressure_pa_;
  bool first_ = false, converting_ = false, ready_ = false;
  std::uint64_t done_at_ = 0;
  std::uint32_t result_ = 0;
  std::array<std::uint8_t, 3> out_{};
  std::size_t out_len_ = 0, at_ = 0;
};

// ---- SRF08 ---------------------------------------------------------------------------------
// Writes: register 0 the command (0x50 inches, 0x51 centimetres, 0x52 microseconds), 1 the
// maximum gain, 2 the range register. Reads: 0 the software revision, 1 the light sensor, 2..3
// the first echo (high byte first), 4..35 later echoes (none here). While ranging (65 ms) it
// does not answer on the bus at all: the master's START is not acknowledged.
class Srf08 final : public I2cDevice {
 public:
  Srf08(std::uint8_t address, double f_cpu_hz) : I2cDevice(address, f_cpu_hz) {
    regs_.fill(0);
    regs_[0] = 10;    // software revision
    regs_[1] = 0x80;  // light sensor
  }
  const char* chip() const override { return "srf08"; }
  bool start(bool read, std::uint64_t cycle) override {
    if (cycle < busy_until_) return false;
    first_ = !read;
    return true;
  }
  bool write(std::uint8_t byte, std::uint64_t cycle) override {
    if (first_) {
      pointer_ = byte;
      first_ = false;
      return true;
    }
    if (pointer_ == 0 && byte >= 0x50 && byte <= 0x52) {
      std::uint32_t v = 0;
      if (echo_) {
        const double m = range_m_;
        v = byte == 0x50   ? static_cast<std::uint32_t>(std::lround(m / 0.0254))
            : byte == 0x51 ? static_cast<std::uint32_t>(std::lround(m * 100.0))
                           : static_cast<std::uint32_t>(std::lround(2.0 * m / 343.0 * 1e6));  // in air
      }
      v = std::min<std::uint32_t>(v, 0xFFFF);
      regs_[2] = static_cast<std::uint8_t>(v >> 8);
      regs_[3] = static_cast<std::uint8_t>(v & 0xFF);
      busy_until_ = cycle + cycles(0.065);
    } else if (pointer_ == 1 || pointer_ == 2) {
      // gain and range registers: kept, not modelled (the ranging time stays 65 ms)
    }
    ++pointer_;
    return true;
  }
  std::uint8_t read(std::uint64_t) override {
    const std::uint8_t v = pointer_ < regs_.size() ? regs_[pointer_] : 0;
    ++pointer_;
    return v;
  }
  void update(const I2cInput& in) override {
    echo_ = in.valid;
    range_m_ = in.ch[0];
  }

 private:
  std::array<std::uint8_t, 36> regs_{};
  std::uint8_t pointer_ = 0;
  bool first_ = false;
  bool echo_ = false;
  double range_m_ = 0;
  std::uint64_t busy_until_ = 0;
};

}  // namespace

const char* i2c_chip_feeds(std::string_view chip) {
  if (chip == "mpu6050") return "imu";
  if (chip == "ms5837") return "depth";
  if (chip == "srf08") return "range, sonar or altimeter";
  return "";
}

std::uint8_t i2c_default_address(std::string_view chip) {
  if (chip == "mpu6050") return 0x68;
  if (chip == "ms5837") return 0x76;
  if (chip == "srf08") return 0x70;
  return 0;
}

std::unique_ptr<I2cDevice> make_i2c_device(std::string_view chip, std::uint8_t address, double f_cpu_hz,
                                           const I2cChipOptions& options) {
  if (chip == "mpu6050") return std::make_unique<Mpu6050>(address, f_cpu_hz, options);
  if (chip == "ms5837") return std::make_unique<Ms5837>(address, f_cpu_hz, options);
  if (chip == "srf08") return std::make_unique<Srf08>(address, f_cpu_hz);
  return nullptr;
}

void ms5837_compute(const std::array<std::uint16_t, 8>& c, std::uint32_t d1, std::uint32_t d2, double& pressure_pa,
                    double& temperature_c) {
  // the datasheet's first order, then its second order for the 30BA, in 64-bit integers
  const std::int64_t dT = static_cast<std::int64_t>(d2) - static_cast<std::int64_t>(c[5]) * 256;
  const std::int64_t temp = 2000 + dT * c[6] / 8388608;
  std::int64_t off = static_cast<std::int64_t>(c[2]) * 65536 + (static_cast<std::int64_t>(c[4]) * dT) / 128;
  std::int64_t sens = static_cast<std::int64_t>(c[1]) * 32768 + (static_cast<std::int64_t>(c[3]) * dT) / 256;
  std::int64_t ti = 0, offi = 0, sensi = 0;
  if (temp / 100 < 20) {
    ti = 3 * dT * dT / 8589934592LL;
    offi = 3 * (temp - 2000) * (temp - 2000) / 2;
    sensi = 5 * (temp - 2000) * (temp - 2000) / 8;
    if (temp / 100 < -15) {
      offi += 7 * (temp + 1500) * (temp + 1500);
      sensi += 4 * (temp + 1500) * (temp + 1500);
    }
  } else {
    ti = 2 * dT * dT / 137438953472LL;
    offi = (temp - 2000) * (temp - 2000) / 16;
  }
  off -= offi;
  sens -= sensi;
  const std::int64_t p = (static_cast<std::int64_t>(d1) * sens / 2097152 - off) / 8192;  // 0.1 mbar
  pressure_pa = static_cast<double>(p) * 10.0;
  temperature_c = static_cast<double>(temp - ti) / 100.0;
}

std::uint8_t ms5837_crc4(std::array<std::uint16_t, 8> n) {
  std::uint16_t rem = 0;
  n[0] &= 0x0FFF;
  n[7] = 0;
  for (int i = 0; i < 16; ++i) {
    rem ^= (i % 2 == 1) ? (n[static_cast<std::size_t>(i >> 1)] & 0x00FF) : (n[static_cast<std::size_t>(i >> 1)] >> 8);
    for (int bit = 8; bit > 0; --bit)
      rem = (rem & 0x8000) ? static_cast<std::uint16_t>((rem << 1) ^ 0x3000) : static_cast<std::uint16_t>(rem << 1);
  }
  return static_cast<std::uint8_t>((rem >> 12) & 0x0F);
}

}  // namespace tether::adapters::mcu
