// SPDX-License-Identifier: Apache-2.0
// I2C chips on the emulated MCU's TWI bus, as register maps fed from the vehicle's devices
// (docs/mcu.md, "I2C devices"). Each behaves as its maker's datasheet says, the unfriendly
// parts too: the MPU-6050 wakes up asleep, the MS5837 answers 0 to a read before its
// conversion is done, the SRF08 does not answer at all while it is ranging. Pure code: the
// bus glue to simavr is in avr_chip.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace tether::adapters::mcu {

/// What an I2C chip is fed with each step (a device's reading in the wire convention).
struct I2cInput {
  bool valid = false;
  std::array<double, 8> ch{};
};

class I2cDevice {
 public:
  I2cDevice(std::uint8_t address, double f_cpu_hz) : address_(address), f_cpu_hz_(f_cpu_hz) {}
  virtual ~I2cDevice() = default;
  std::uint8_t address() const { return address_; }
  /// The chip's name as the scenario writes it ("mpu6050").
  virtual const char* chip() const = 0;

  /// A START (or repeated START) with this chip's address; false: the chip does not
  /// acknowledge (busy, or faulted). `read`: the master reads next.
  virtual bool start(bool read, std::uint64_t cycle) = 0;
  /// A byte the master writes; false: not acknowledged.
  virtual bool write(std::uint8_t byte, std::uint64_t cycle) = 0;
  /// The byte the chip puts on the bus for a master read.
  virtual std::uint8_t read(std::uint64_t cycle) = 0;
  /// STOP.
  virtual void stop(std::uint64_t cycle) { (void)cycle; }
  /// This step's reading from the device the chip is wired to.
  virtual void update(const I2cInput& in) = 0;

  /// A fault: the chip stops acknowledging its address (docs/faults.md).
  bool silent = false;
  std::uint64_t transactions = 0;  // STARTs acknowledged
  std::uint64_t nacks = 0;         // STARTs not acknowledged

 protected:
  std::uint64_t cycles(double seconds) const { return static_cast<std::uint64_t>(seconds * f_cpu_hz_ + 0.5); }

 private:
  std::uint8_t address_;
  double f_cpu_hz_;
};

/// The chips the scenario may name.
inline constexpr const char* i2c_chips[] = {"mpu6050", "ms5837", "srf08"};

/// The device kinds each chip is fed from, for the scenario's errors ("imu", ...).
const char* i2c_chip_feeds(std::string_view chip);
/// The chip's default address.
std::uint8_t i2c_default_address(std::string_view chip);

struct I2cChipOptions {
  double temperature_c = 20.0;     // what the chip's thermometer reads
  double atmospheric_pa = 101325;  // ms5837: the pressure at the surface
};

/// A chip by name; nullptr if unknown.
std::unique_ptr<I2cDevice> make_i2c_device(std::string_view chip, std::uint8_t address, double f_cpu_hz,
                                           const I2cChipOptions& options);

/// MS5837-30BA: the pressure (pascals) and temperature (°C) its driver computes from the
/// raw conversions D1, D2 and the PROM words C1..C6, with the datasheet's second-order
/// compensation (what Blue Robotics' library computes). For tests.
void ms5837_compute(const std::array<std::uint16_t, 8>& prom, std::uint32_t d1, std::uint32_t d2, double& pressure_pa,
                    double& temperature_c);
/// The CRC-4 of an MS5837 PROM (the datasheet's algorithm over words 0..6, with C0's top
/// four bits taken as zero).
std::uint8_t ms5837_crc4(std::array<std::uint16_t, 8> prom);

}  // namespace tether::adapters::mcu
