// SPDX-License-Identifier: Apache-2.0
// The mcu endpoint (docs/mcu.md): the ATmega328P's pin table and timer waveforms from the
// datasheet, and the Arduino distribution's own examples, unmodified, built from where Debian
// installs them and run on the emulated chip with their pins wired to a vehicle's devices.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "test_paths.hpp"
#include "tether/endpoints/endpoint_factory.hpp"
#include "tether/firmware_shim/payloads.h"
#include "tether/hal/device_bank.hpp"
#include "tether/loop/device_world.hpp"
#include "tether/loop/session.hpp"
#include "tether/mcu/avr_pins.hpp"
#include "tether/mcu/i2c_devices.hpp"
#include "tether/mcu/mcu_endpoint.hpp"
#include "tether/mcu/sketch_build.hpp"

using namespace tether;
using namespace tether::adapters;
using namespace tether::adapters::mcu;

namespace {

const std::string examples = "/usr/share/doc/arduino/examples";

// sketches build into the build folder, not the user's cache
void use_test_sketch_cache() { ::setenv("TETHER_SKETCH_CACHE", (TETHER_BINARY_DIR + "/sketch_cache").c_str(), 1); }

std::string rov_scenario(const std::string& endpoint, int steps = 100) {
  return R"(name: mcu
world: {gravity_m_s2: [0, 0, 0], water: {density_kg_m3: 1025, surface_z_m: 0}}
vehicles:
  - name: rov
    bodies:
      - name: hull
        shape: {type: sphere, radius_m: 0.2}
        mass_kg: 2
        devices:
          - {name: depth, kind: depth}
          - {name: button, kind: contact}
          - {name: thruster, kind: thruster, params: {max_thrust_n: 10}}
          - {name: light, kind: thruster, params: {max_thrust_n: 1}}
loop: {period_ms: 10, real_time_factor: 0, steps: )" +
         std::to_string(steps) + R"(}
endpoints:
  - )" + endpoint +
         "\n";
}

std::vector<std::string> errors_of(const std::string& text) {
  try {
    const runtime::Scenario sc = runtime::parse_scenario(text, "mcu.yaml");
    make_endpoints(sc);
  } catch (const runtime::ConfigError& e) {
    return e.errors();
  }
  return {};
}

bool has(const std::vector<std::string>& errors, const std::string& part) {
  for (const auto& e : errors)
    if (e.find(part) != std::string::npos) return true;
  return false;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += s + "\n";
  return out;
}

// drives one endpoint by hand: a bank, the vehicle put at `depth_m`, `steps` steps
struct Rig {
  runtime::Scenario sc;
  std::vector<std::unique_ptr<runtime::Endpoint>> endpoints;
  hal::DeviceBank bank;
  runtime::DeviceWorld view;
  runtime::WorldState state;
  std::uint64_t k = 0;

  explicit Rig(const std::string& endpoint)
      : sc(runtime::parse_scenario(rov_scenario(endpoint), "mcu.yaml")), endpoints(make_endpoints(sc)),
        bank(sc.devices, 1, sc.model.bodies.size()), view(sc.model), state(sc.initial) {
    endpoints[0]->attach_devices(&bank);
    endpoints[0]->start(sc.model, sc.initial);
  }
  runtime::Endpoint& ep() { return *endpoints[0]; }
  // one step with the vehicle at `depth_m`; the reply
  runtime::GatherStatus step(double depth_m, runtime::Reply& reply) {
    ++k;
    state.bodies[0].position_m.z() = -depth_m;
    state.time_ns = static_cast<std::int64_t>(k) * 10'000'000;
    view.update(state, nullptr, 0.01);
    bank.sense(view, state.time_ns);
    const runtime::StepContext ctx{k, state.time_ns, 10'000'000};
    REQUIRE(ep().publish(ctx, state));
    return ep().gather(ctx, runtime::SteadyClock::now() + std::chrono::seconds(5), reply);
  }
  float command(const runtime::Reply& reply, const std::string& device) const {
    const int d = bank.find(device);
    for (const auto& c : reply.commands)
      if (c.device == d) return tether_get_f32le(c.bytes.data());
    FAIL("no command for " << device);
    return 0;
  }
};

}  // namespace

TEST_CASE("mcu pins: the Uno's names, what each pin carries, and pins the ATmega328P does not have") {
  std::string why;
  auto d9 = find_pin("9", &why);
  REQUIRE(d9);
  CHECK(d9->port == 'B');
  CHECK(d9->bit == 1);
  CHECK(d9->timer == 1);
  CHECK(d9->channel == 0);
  CHECK(d9->label() == "D9 (PB1)");
  CHECK(find_pin("D9", &why) == d9);
  CHECK(find_pin("PB1", &why) == d9);
  auto a0 = find_pin("A0", &why);
  REQUIRE(a0);
  CHECK(a0->adc == 0);
  CHECK(a0->label() == "A0 (PC0)");
  CHECK(find_pin("14", &why) == a0);
  CHECK(find_pin("D6", &why)->timer == 0);
  CHECK(find_pin("D3", &why)->timer == 2);
  CHECK(find_pin("D3", &why)->channel == 1);
  CHECK_FALSE(find_pin("A7", &why));
  CHECK(why.find("A0..A5") != std::string::npos);
  CHECK_FALSE(find_pin("PB6", &why));
  CHECK(why.find("crystal") != std::string::npos);
  CHECK_FALSE(find_pin("PC6", &why));
  CHECK(why.find("RESET") != std::string::npos);
  CHECK_FALSE(find_pin("D20", &why));
  CHECK_FALSE(find_pin("PE0", &why));
  CHECK_FALSE(find_pin("", &why));
}

TEST_CASE("mcu timers: the compare outputs' waveforms follow the datasheet's modes") {
  // Arduino's timer 0: fast PWM (WGM 3), clock / 64; analogWrite(6, 127) sets COM0A1
  TimerRegisters t0{0, 0x83, 0x03, 127, 0, 0};
  Waveform w = timer_waveform(t0, 0, 16e6);
  CHECK(w.connected);
  CHECK(w.running);
  CHECK(w.duty == doctest::Approx(128.0 / 256.0));
  CHECK(w.period_us == doctest::Approx(256 * 4.0));       // 976.5625 Hz
  CHECK(timer_waveform(t0, 1, 16e6).connected == false);  // COM0B is 0: the pin is the PORT's
  // Arduino's timer 1: phase-correct 8-bit PWM (WGM 1), clock / 64; analogWrite(9, 127)
  TimerRegisters t1{1, 0x81, 0x03, 127, 0, 0};
  w = timer_waveform(t1, 0, 16e6);
  CHECK(w.duty == doctest::Approx(127.0 / 255.0));
  CHECK(w.period_us == doctest::Approx(510 * 4.0));  // 490 Hz
  // inverting mode: the complement
  t1.tccra = 0xC1;
  CHECK(timer_waveform(t1, 0, 16e6).duty == doctest::Approx(128.0 / 255.0));
  // servo pulses: fast PWM with TOP = ICR1 (WGM 14), clock / 8, ICR1 = 39999: 20 ms frames,
  // OCR1A = 2999: 1500 µs
  TimerRegisters servo{1, 0x82, 0x1A, 2999, 1999, 39999};
  w = timer_waveform(servo, 0, 16e6);
  CHECK(w.high_us == doctest::Approx(1500.0));
  CHECK(w.period_us == doctest::Approx(20000.0));
  CHECK(timer_waveform(servo, 1, 16e6).connected == false);
  servo.tccra = 0xA2;  // both channels
  CHECK(timer_waveform(servo, 1, 16e6).high_us == doctest::Approx(1000.0));
  // CTC toggling OC2A: a square wave of twice the compare period
  TimerRegisters ctc{2, 0x42, 0x04, 99, 0, 0};  // WGM 2, COM2A0, clock / 64
  w = timer_waveform(ctc, 0, 16e6);
  CHECK(w.duty == doctest::Approx(0.5));
  CHECK(w.period_us == doctest::Approx(2 * 100 * 4.0));
  // a stopped clock: connected, not running
  TimerRegisters stopped{0, 0x83, 0x00, 50, 0, 0};
  CHECK_FALSE(timer_waveform(stopped, 0, 16e6).running);
}

TEST_CASE("mcu: the Arduino example AnalogInOutSerial, unmodified, reads the depth on A0 and drives pin 9") {
  use_test_sketch_cache();
  REQUIRE_MESSAGE(sketch_toolchain_missing().empty(), "scripts/deps.sh test installs " << sketch_toolchain_missing());
  // a 0..10 m transducer giving 0..5 V on A0; pin 9's duty cycle is the thruster's command
  Rig rig("{name: uno, type: mcu, vehicle: rov, sketch: " + examples +
          "/03.Analog/AnalogInOutSerial, pins: [{pin: A0, analog_in: depth, from: [0, 10], to: [0, 5]}, "
          "{pin: 9, pwm_out: thruster}]}");
  runtime::Reply reply;
  const std::regex line(R"(sensor = (\d+)\t output = (\d+))");
  int lines = 0;
  for (int i = 0; i < 60; ++i) {
    const double depth = i < 30 ? 2.0 : 7.5;
    REQUIRE(rig.step(depth, reply) == runtime::GatherStatus::ready);
    CHECK(reply.step == rig.k);
    for (const auto& l : reply.logs) {
      std::smatch m;
      REQUIRE_MESSAGE(std::regex_match(l.text, m, line), l.text);
      const int sensor = std::stoi(m[1]);
      const int output = std::stoi(m[2]);
      // the sketch's own arithmetic: map(sensor, 0, 1023, 0, 255)
      CHECK(output == sensor * 255 / 1023);
      ++lines;
      // 2 m is 1 V: 1023 * 1 / 5 = 204.6 counts; 7.5 m is 3.75 V: 767 counts. A line takes
      // about 30 ms at 9600 baud and the core's 64-byte transmit buffer holds two more: a line
      // finished up to ~100 ms after the depth changed (step 30) may hold the reading before
      if (i >= 2 && i < 30) CHECK(std::abs(sensor - 204) <= 1);
      if (i >= 40) CHECK(std::abs(sensor - 767) <= 1);
    }
    // the duty cycle of pin 9 (timer 1, phase correct: OCR1A / 255) is the command
    if (i == 29) CHECK(rig.command(reply, "rov.hull.thruster") == doctest::Approx(50.0 / 255.0).epsilon(0.02));
    if (i == 59) CHECK(rig.command(reply, "rov.hull.thruster") == doctest::Approx(191.0 / 255.0).epsilon(0.02));
  }
  // the step's frame, shown as Foxglove topics: every pin, and each pin on its own
  const auto topics = rig.ep().wire_topics();
  REQUIRE(topics.size() == 3);
  CHECK(topics[0].suffix == "pins");
  CHECK(topics[1].suffix == "pins/A0");
  CHECK(topics[2].suffix == "pins/D9");
  REQUIRE(reply.wire.size() == 1);
  std::string json;
  REQUIRE(topics[0].render(reply.step, reply.wire_frame(reply.wire[0]), json));
  const auto pins = nlohmann::json::parse(json);
  CHECK(pins["step"] == reply.step);
  CHECK(pins["pins"][0]["pin"] == "A0 (PC0)");
  CHECK(pins["pins"][0]["role"] == "analog_in");
  CHECK(pins["pins"][0]["device"] == "rov.hull.depth");
  CHECK(pins["pins"][0]["value"].get<double>() == doctest::Approx(3.75).epsilon(0.01));
  CHECK(pins["pins"][1]["value"].get<double>() == doctest::Approx(191.0 / 255.0).epsilon(0.02));
  CHECK(pins["pins"][0]["changed_us"].is_null());  // the depth held: the input did not change
  CHECK_FALSE(topics[0].render(reply.step, "not a frame", json));
  // 9600 baud, 2 ms between loops and ~30 characters a line: about 30 ms a line
  CHECK(lines >= 15);
  CHECK(lines <= 25);
  nlohmann::json s;
  rig.ep().summarize(s);
  // period x f_cpu per step: 160,000 cycles; a step ends at the first instruction boundary
  // at or after its cycle (an instruction takes 1 to 4 cycles), the next counts from there
  CHECK(s["mcu"]["cycles"].get<std::uint64_t>() >= 60u * 160'000u);
  CHECK(s["mcu"]["cycles"].get<std::uint64_t>() <= 60u * 160'000u + 4u);
  CHECK(s["mcu"]["serial_lines"] == lines);
}

TEST_CASE("mcu: wiring mistakes are positioned errors at check time") {
  const std::string head = "{name: uno, type: mcu, vehicle: rov, firmware: fw.elf, pins: [";
  auto e = errors_of(rov_scenario(head + "{pin: A7, analog_in: depth}, {pin: 9, pwm_out: thruster}, "
                                         "{pin: D9, pwm_out: light}, {pin: 8, analog_in: depth}, "
                                         "{pin: 1, digital_in: button}, {pin: 10, pwm_out: depth}, "
                                         "{pin: 11, pwm_out: nothing}, {pin: 12}, {pin: A1, analog_in: thruster}]}"));
  INFO(joined(e));
  CHECK(has(e, "endpoints[0].pins[0].pin: no pin A7"));
  CHECK(has(e, "endpoints[0].pins[2].pin: D9 (PB1) is wired twice (also as \"9\")"));
  CHECK(has(e, "endpoints[0].pins[3].pin: D8 (PB0) has no ADC channel"));
  CHECK(has(e, "endpoints[0].pins[4].pin: D1 (PD1) is the UART's TX (Serial)"));
  CHECK(has(e, "endpoints[0].pins[5].pwm_out: \"depth\" is a depth (a sensor)"));
  CHECK(has(e, "endpoints[0].pins[6].pwm_out: no device \"nothing\" on vehicle \"rov\""));
  CHECK(has(e, "endpoints[0].pins[7]: a pin needs exactly one of"));
  CHECK(has(e, "endpoints[0].pins[8].analog_in: \"thruster\" is a thruster (an actuator)"));
  CHECK(has(e, "mcu.yaml:"));
  auto e2 =
      errors_of(rov_scenario("{name: uno, type: mcu, vehicle: rov, mcu: atmega2560, firmware: a.elf, "
                             "sketch: b, f_cpu_hz: 100}"));
  INFO(joined(e2));
  CHECK(has(e2, "endpoints[0].mcu: expected one of atmega328p"));
  CHECK(has(e2, "exactly one of `firmware` (an ELF) and `sketch`"));
  CHECK(has(e2, "endpoints[0].f_cpu_hz"));
}

TEST_CASE("mcu: an image for another chip, a missing one and a sketch that does not build are named before the run") {
  use_test_sketch_cache();
  const std::filesystem::path dir = std::filesystem::path(TETHER_BINARY_DIR) / "mcu_test_check";
  std::filesystem::create_directories(dir / "broken");
  // an ARM image's header (e_machine 40), as the Cortex-M3 firmware build makes
  {
    unsigned char h[52] = {0x7f, 'E', 'L', 'F', 1, 1, 1};
    h[18] = 40;
    std::ofstream(dir / "arm.elf", std::ios::binary).write(reinterpret_cast<const char*>(h), sizeof h);
  }
  {
    std::ofstream ino(dir / "broken" / "broken.ino");
    ino << "void setup() {\n  pinMode(13, OUTPUT)\n}\nvoid loop() {}\n";
  }
  auto problems = [](const std::string& endpoint) {
    const runtime::Scenario sc = runtime::parse_scenario(rov_scenario(endpoint), "mcu.yaml");
    return make_endpoints(sc)[0]->launch_problems();
  };
  auto p = problems("{name: uno, type: mcu, vehicle: rov, firmware: " + (dir / "arm.elf").string() + "}");
  REQUIRE(p.size() == 1);
  CHECK_MESSAGE(p[0].find("is built for ARM, not an AVR (atmega328p)") != std::string::npos, p[0]);
  p = problems("{name: uno, type: mcu, vehicle: rov, firmware: " + (dir / "none.elf").string() + "}");
  REQUIRE(p.size() == 1);
  CHECK_MESSAGE(p[0].find("none.elf does not exist") != std::string::npos, p[0]);
  p = problems("{name: uno, type: mcu, vehicle: rov, sketch: " + (dir / "broken").string() + "}");
  REQUIRE(p.size() == 1);
  // the compiler's first error with the sketch's path
  CHECK_MESSAGE(p[0].find("endpoint \"uno\": sketch ") == 0, p[0]);
  CHECK_MESSAGE(
      p[0].find("does not build: " + (dir / "broken").string() + "/broken.ino:3:1: error:") != std::string::npos, p[0]);
  // the sketch's folder is left as it was: the build is in the cache
  CHECK(std::distance(std::filesystem::directory_iterator(dir / "broken"), std::filesystem::directory_iterator()) == 1);
}

TEST_CASE(
    "mcu I2C chips: the MPU-6050 wakes asleep, the MS5837's conversions take their time, the SRF08 is "
    "silent while ranging") {
  const double f = 16e6;
  I2cInput rest;  // level and still: the accelerometer's specific force is 1 g up (wire z down)
  rest.valid = true;
  rest.ch = {0, 0, 0.5, 0, 0, -9.80665, 0, 0};
  auto mpu = make_i2c_device("mpu6050", 0x68, f, {});
  auto read_regs = [](I2cDevice& d, std::uint8_t reg, int n) {
    REQUIRE(d.start(false, 0));
    REQUIRE(d.write(reg, 0));
    d.stop(0);
    REQUIRE(d.start(true, 0));
    std::vector<int> out;
    for (int i = 0; i < n; ++i) out.push_back(d.read(0));
    d.stop(0);
    return out;
  };
  CHECK(read_regs(*mpu, 0x75, 1)[0] == 0x68);  // WHO_AM_I
  CHECK(read_regs(*mpu, 0x6B, 1)[0] == 0x40);  // PWR_MGMT_1 after reset: SLEEP
  mpu->update(rest);
  CHECK(read_regs(*mpu, 0x3B, 6) == std::vector<int>{0, 0, 0, 0, 0, 0});  // asleep: nothing measured
  REQUIRE(mpu->start(false, 0));                                          // wake it: PWR_MGMT_1 = 0
  REQUIRE(mpu->write(0x6B, 0));
  REQUIRE(mpu->write(0x00, 0));
  mpu->stop(0);
  mpu->update(rest);
  auto a = read_regs(*mpu, 0x3B, 14);
  auto s16 = [&](int i) {
    return static_cast<std::int16_t>((a[static_cast<std::size_t>(i)] << 8) | a[static_cast<std::size_t>(i) + 1]);
  };
  CHECK(s16(0) == 0);
  CHECK(s16(4) == 16384);                                                // +1 g at ±2 g full scale
  CHECK(s16(6) / 340.0 + 36.53 == doctest::Approx(20.0).epsilon(0.01));  // the temperature
  // 0.5 rad/s about the wire's z (down) is -28.6 °/s about the chip's z (up): 131 LSB per °/s
  CHECK(s16(12) == static_cast<std::int16_t>(std::lround(-0.5 * 180 / 3.14159265358979 * 131)));

  // MS5837-30BA at 10 m in sea water
  auto ms = make_i2c_device("ms5837", 0x76, f, {});
  I2cInput ten;
  ten.valid = true;
  ten.ch = {10.0, 1025 * 9.80665, 0, 0, 0, 0, 0, 0};
  ms->update(ten);
  std::array<std::uint16_t, 8> prom{};
  for (int i = 0; i < 7; ++i) {
    REQUIRE(ms->start(false, 0));
    REQUIRE(ms->write(static_cast<std::uint8_t>(0xA0 + 2 * i), 0));
    ms->stop(0);
    REQUIRE(ms->start(true, 0));
    prom[static_cast<std::size_t>(i)] = static_cast<std::uint16_t>((ms->read(0) << 8) | ms->read(0));
  }
  CHECK((prom[0] >> 12) == ms5837_crc4(prom));  // the driver's CRC check passes
  CHECK(((prom[0] >> 5) & 0x7F) == 0x1A);       // and it reads a 30BA
  auto convert = [&](std::uint8_t cmd, std::uint64_t at, std::uint64_t read_at) {
    REQUIRE(ms->start(false, at));
    REQUIRE(ms->write(cmd, at));
    ms->stop(at);
    REQUIRE(ms->start(false, read_at));
    REQUIRE(ms->write(0x00, read_at));
    ms->stop(read_at);
    REQUIRE(ms->start(true, read_at));
    const std::uint32_t v = (static_cast<std::uint32_t>(ms->read(read_at)) << 16) |
                            (static_cast<std::uint32_t>(ms->read(read_at)) << 8) | ms->read(read_at);
    return v;
  };
  // OSR 8192 takes 18.08 ms: read after 10 ms, it is 0
  CHECK(convert(0x4A, 0, static_cast<std::uint64_t>(0.010 * f)) == 0);
  const std::uint32_t d1 = convert(0x4A, 0, static_cast<std::uint64_t>(0.019 * f));
  const std::uint32_t d2 = convert(0x5A, 0, static_cast<std::uint64_t>(0.019 * f));
  CHECK(d1 > 0);
  CHECK(d2 > 0);
  double p = 0, t = 0;
  ms5837_compute(prom, d1, d2, p, t);
  CHECK(p == doctest::Approx(101325 + 1025 * 9.80665 * 10).epsilon(20.0 / 200000));  // 0.1 mbar steps
  CHECK(t == doctest::Approx(20.0).epsilon(0.01));

  // SRF08: a ranging in centimetres; the next START inside 65 ms is not acknowledged
  auto srf = make_i2c_device("srf08", 0x70, f, {});
  I2cInput two;
  two.valid = true;
  two.ch[0] = 2.0;
  srf->update(two);
  REQUIRE(srf->start(false, 0));
  REQUIRE(srf->write(0x00, 0));
  REQUIRE(srf->write(0x51, 0));
  srf->stop(0);
  CHECK_FALSE(srf->start(false, static_cast<std::uint64_t>(0.030 * f)));
  REQUIRE(srf->start(false, static_cast<std::uint64_t>(0.066 * f)));
  REQUIRE(srf->write(0x02, 0));
  srf->stop(0);
  REQUIRE(srf->start(true, static_cast<std::uint64_t>(0.066 * f)));
  CHECK(((srf->read(0) << 8) | srf->read(0)) == 200);
}

TEST_CASE("mcu: the Arduino Wire example SFRRanger_reader, unmodified, reads an SRF08 fed by the altimeter") {
  use_test_sketch_cache();
  REQUIRE_MESSAGE(sketch_toolchain_missing().empty(), "scripts/deps.sh test installs " << sketch_toolchain_missing());
  // the vehicle 2 m above a tank's floor, the altimeter pointing down; the SRF08 at 112
  const std::string sketch = "/usr/share/arduino/hardware/arduino/avr/libraries/Wire/examples/SFRRanger_reader";
  runtime::Scenario sc = runtime::parse_scenario(
      R"(name: srf08
world: {gravity_m_s2: [0, 0, 0], water: {density_kg_m3: 1025, surface_z_m: 0}, tank: {size_m: [10, 10, 5]}}
vehicles:
  - name: rov
    bodies:
      - name: hull
        shape: {type: sphere, radius_m: 0.2}
        mass_kg: 2
        initial: {position_m: [0, 0, -3]}
        devices:
          - {name: altimeter, kind: altimeter}
loop: {period_ms: 10, real_time_factor: 0, steps: 150}
endpoints:
  - {name: uno, type: mcu, vehicle: rov, sketch: )" +
          sketch + R"(, i2c: [{chip: srf08, device: altimeter, address: 112}]}
)",
      "srf08.yaml");
  runtime::Session session(sc, make_endpoints(sc));
  std::atomic<bool> stop{false};
  REQUIRE(session.run(stop) == runtime::Outcome::completed);
  const auto s = session.summary();
  INFO(s.dump());
  const auto& mcu = s["endpoints"][0]["mcu"];
  // one ranging every 70 + 250 ms: four or five in 1.5 s, each a write, a write and a read
  CHECK(mcu["serial_lines"].get<int>() >= 4);
  // the sketch asks for inches (command 0x50): 2 m is 78.7 in
  CHECK(mcu["serial_last_line"] == "79");
  CHECK(mcu["i2c"][0]["chip"] == "srf08");
  CHECK(mcu["i2c"][0]["transactions"].get<int>() >= 12);
}

TEST_CASE(
    "mcu Serial input: the Arduino example ReadASCIIString, unmodified, takes a scripted line and sets its "
    "three PWM pins, a sketch reads a GPS's NMEA sentences") {
  use_test_sketch_cache();
  REQUIRE_MESSAGE(sketch_toolchain_missing().empty(), "scripts/deps.sh test installs " << sketch_toolchain_missing());
  const std::string head = R"(name: serial_in
world: {gravity_m_s2: [0, 0, 0], water: {density_kg_m3: 1025, surface_z_m: 0}}
vehicles:
  - name: rov
    bodies:
      - name: hull
        shape: {type: sphere, radius_m: 0.2}
        mass_kg: 2
        initial: {position_m: [0, 0, 0]}
        devices:
          - {name: gps, kind: gps, rate_hz: 2}
          - {name: red, kind: thruster}
          - {name: green, kind: thruster}
          - {name: blue, kind: thruster}
loop: {period_ms: 10, real_time_factor: 0, steps: 150}
endpoints:
)";
  auto run = [](const std::string& text) {
    const runtime::Scenario sc = runtime::parse_scenario(text, "serial_in.yaml");
    runtime::Session session(sc, make_endpoints(sc));
    std::atomic<bool> stop{false};
    REQUIRE(session.run(stop) == runtime::Outcome::completed);
    return session.summary()["endpoints"][0]["mcu"];
  };
  // "0,128,255": red = 255 - 0 (on), green = 127 (timer 0's fast PWM: 128/256), blue = 0 (off)
  auto m = run(head + "  - {name: uno, type: mcu, vehicle: rov, sketch: " + examples +
               "/04.Communication/ReadASCIIString, serial_in: {script: [{at_s: 0.2, text: \"0,128,255\\n\"}]}, "
               "pins: [{pin: 3, pwm_out: red}, {pin: 5, pwm_out: green}, {pin: 6, pwm_out: blue}]}\n");
  INFO(m.dump());
  CHECK(m["serial_in_bytes"] == 10);
  CHECK(m["serial_last_line"] == "FF7F0");
  CHECK(m["pins_last"]["D3 (PD3)"].get<double>() == 1.0);
  CHECK(m["pins_last"]["D5 (PD5)"].get<double>() == doctest::Approx(128.0 / 256.0));
  CHECK(m["pins_last"]["D6 (PD6)"].get<double>() == 0.0);

  // a sketch of our own that prints the time field of each $GPGGA it reads
  const std::filesystem::path dir = std::filesystem::path(TETHER_BINARY_DIR) / "mcu_test_nmea" / "nmea";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "nmea.ino") << R"(String line;
void setup() { Serial.begin(9600); }
void loop() {
  while (Serial.available()) {
    char c = Serial.read();
    if (c == '\n') {
      if (line.startsWith("$GPGGA,")) { Serial.print("fix at "); Serial.println(line.substring(7, 13)); }
      line = "";
    } else if (c != '\r') {
      line += c;
    }
  }
}
)";
  m = run(head + "  - {name: uno, type: mcu, vehicle: rov, sketch: " + dir.string() + ", serial_in: {gps: gps}}\n");
  INFO(m.dump());
  // 2 Hz for 1.5 s: three fixes, GGA and RMC each (about 150 bytes: more than simavr's
  // 64-byte receive FIFO takes at once), all delivered and read
  CHECK(m["serial_in_bytes"].get<int>() > 300);
  CHECK(m["serial_in_pending"] == 0);
  CHECK(m["serial_lines"].get<int>() >= 2);
  CHECK(m["serial_last_line"].get<std::string>().rfind("fix at 0000", 0) == 0);
}

TEST_CASE("mcu Serial input: an operator's `serial` command reaches the sketch, other commands are refused") {
  use_test_sketch_cache();
  REQUIRE_MESSAGE(sketch_toolchain_missing().empty(), "scripts/deps.sh test installs " << sketch_toolchain_missing());
  Rig rig("{name: uno, type: mcu, vehicle: rov, sketch: " + examples +
          "/04.Communication/ReadASCIIString, pins: [{pin: 3, pwm_out: thruster}, {pin: 5, pwm_out: light}]}");
  std::string why;
  CHECK_FALSE(rig.ep().operator_command("reset", nlohmann::json::object(), false, &why));
  CHECK(why.find("takes `serial` {text}") != std::string::npos);
  CHECK_FALSE(rig.ep().operator_command("serial", {{"text", 5}}, false, &why));
  // the sketch's setup() enables the receiver (Serial.begin): bytes sent before are lost, as
  // on the board, so the operator's line comes once it runs
  runtime::Reply reply;
  for (int i = 0; i < 5; ++i) REQUIRE(rig.step(1.0, reply) == runtime::GatherStatus::ready);
  REQUIRE(rig.ep().operator_command("serial", {{"text", "0,255,0\n"}}, false, &why));
  REQUIRE(rig.ep().operator_command("serial", {{"text", "0,255,0\n"}}, true, &why));
  std::string printed;
  for (int i = 0; i < 10; ++i) {
    REQUIRE(rig.step(1.0, reply) == runtime::GatherStatus::ready);
    for (const auto& l : reply.logs) printed += l.text;
  }
  CHECK(printed == "FF0FF");
  CHECK(rig.command(reply, "rov.hull.thruster") == doctest::Approx(1.0));
  CHECK(rig.command(reply, "rov.hull.light") == doctest::Approx(0.0));
}

TEST_CASE(
    "mcu: the chip's own crash (a jump outside the program), a firmware that stops and a watchdog reset "
    "loop are the endpoint's fault, a crash with its program counter") {
  const std::filesystem::path dir = std::filesystem::path(TETHER_BINARY_DIR) / "mcu_test_crash";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "crash.c") << "int main(void) {\n  void (*f)(void) = (void (*)(void))0x3F00;\n  f();\n"
                                    "  return 0;\n}\n";
  std::ofstream(dir / "stop.c") << "#include <avr/interrupt.h>\n#include <avr/sleep.h>\n"
                                   "int main(void) {\n  cli();\n  sleep_cpu();\n  return 0;\n}\n";
  std::ofstream(dir / "wdt.c") << "#include <avr/wdt.h>\nint main(void) {\n  wdt_enable(WDTO_15MS);\n"
                                  "  for (;;) {}\n}\n";
  for (const char* name : {"crash", "stop", "wdt"}) {
    const std::string cmd =
        "avr-gcc -mmcu=atmega328p -Os -o " + (dir / name).string() + ".elf " + (dir / name).string() + ".c";
    REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, cmd);
  }
  Rig crash("{name: uno, type: mcu, vehicle: rov, firmware: " + (dir / "crash.elf").string() + "}");
  runtime::Reply reply;
  CHECK(crash.step(1.0, reply) == runtime::GatherStatus::fault);
  CHECK_MESSAGE(crash.ep().fault_message().find("the atmega328p crashed at PC 0x") == 0, crash.ep().fault_message());
  Rig stop("{name: uno, type: mcu, vehicle: rov, firmware: " + (dir / "stop.elf").string() + "}");
  CHECK(stop.step(1.0, reply) == runtime::GatherStatus::fault);
  CHECK_MESSAGE(stop.ep().fault_message().find("the firmware stopped at PC 0x") == 0, stop.ep().fault_message());
  // the watchdog enabled and never reset: a reset every 16 ms, said on the first, a fault on
  // the third
  Rig wdt("{name: uno, type: mcu, vehicle: rov, firmware: " + (dir / "wdt.elf").string() + "}");
  runtime::GatherStatus status = runtime::GatherStatus::ready;
  std::string said;
  for (int i = 0; i < 10 && status == runtime::GatherStatus::ready; ++i) {
    status = wdt.step(1.0, reply);
    if (status == runtime::GatherStatus::ready)
      for (const auto& l : reply.logs) said += l.text + "\n";
  }
  CHECK(status == runtime::GatherStatus::fault);
  CHECK_MESSAGE(said.find("the atmega328p reset at cycle") != std::string::npos, said);
  CHECK_MESSAGE(
      wdt.ep().fault_message().find("the atmega328p is in a reset loop: 3 resets, the last three every 16.0 ms") == 0,
      wdt.ep().fault_message());
}

TEST_CASE("mcu: a sketch without its toolchain names the Debian packages to install") {
  use_test_sketch_cache();
  ::setenv("TETHER_ARDUINO_DIR", "/nonexistent/arduino", 1);
  const std::string missing = sketch_toolchain_missing();
  const runtime::Scenario sc = runtime::parse_scenario(
      rov_scenario("{name: uno, type: mcu, vehicle: rov, sketch: " + examples + "/02.Digital/Button}"), "mcu.yaml");
  const auto p = make_endpoints(sc)[0]->launch_problems();
  ::unsetenv("TETHER_ARDUINO_DIR");
  CHECK(missing == "arduino-mk arduino-core-avr");
  REQUIRE(p.size() == 1);
  CHECK_MESSAGE(
      p[0].find("needs the Debian packages arduino-mk arduino-core-avr (scripts/deps.sh test installs "
                "them: apt-get install --no-install-recommends arduino-mk arduino-core-avr)") != std::string::npos,
      p[0]);
}
