// SPDX-License-Identifier: Apache-2.0
// The mcu endpoint's speed (docs/mcu.md, "Speed"): the ROV sketch
// (examples/arduino/rov_depth_heading) on the emulated 16 MHz ATmega328P at a 100 Hz step, in
// a whole session (I2C chips, pins, physics, no recording) as fast as the host allows: its
// real-time factor. Baseline in the same run: simavr alone running the same ELF for the same
// number of cycles with nothing wired (its I2C reads then find no chip, so the sketch takes
// other paths: the baseline is the emulator's own speed on this firmware, not the same
// instructions). Rounds alternate; the best of each is compared.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

extern "C" {
#include <simavr/avr_uart.h>
#include <simavr/sim_avr.h>
#include <simavr/sim_elf.h>
}

#include <nlohmann/json.hpp>

#include "bench_util.hpp"
#include "test_paths.hpp"
#include "tether/endpoints/endpoint_factory.hpp"
#include "tether/loop/session.hpp"
#include "tether/mcu/sketch_build.hpp"

using namespace tether;

namespace {

void quiet(avr_t*, const int, const char*, va_list) {}
void no_sleep(avr_t*, avr_cycle_count_t) {}

// simavr alone: the ELF, `cycles` cycles, nothing wired; seconds of wall time
double bare_simavr(const std::string& elf, std::uint64_t cycles) {
  avr_global_logger_set(quiet);
  elf_firmware_t f;
  std::memset(&f, 0, sizeof f);
  if (elf_read_firmware(elf.c_str(), &f) != 0) return -1;
  avr_t* avr = avr_make_mcu_by_name("atmega328p");
  avr_init(avr);
  avr->sleep = no_sleep;
  avr->frequency = 16'000'000;
  avr_load_firmware(avr, &f);
  std::uint32_t flags = 0;
  avr_ioctl(avr, AVR_IOCTL_UART_GET_FLAGS('0'), &flags);
  flags &= ~static_cast<std::uint32_t>(AVR_UART_FLAG_STDIO | AVR_UART_FLAG_POLL_SLEEP);
  avr_ioctl(avr, AVR_IOCTL_UART_SET_FLAGS('0'), &flags);
  const auto t0 = bench::Clock::now();
  while (avr->cycle < cycles) {
    const int state = avr_run(avr);
    if (state == cpu_Done || state == cpu_Crashed) break;
  }
  const double s = bench::seconds_since(t0);
  avr_terminate(avr);
  std::free(avr);
  std::free(f.flash);
  std::free(f.eeprom);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = bench::quick_mode(argc, argv);
  const long steps = quick ? 200 : 3000;
  const int rounds = quick ? 1 : 3;
  const std::string cache = (std::filesystem::temp_directory_path() / "tether_bench_sketches").string();
  ::setenv("TETHER_SKETCH_CACHE", cache.c_str(), 1);
  const std::string scenario = TETHER_SOURCE_DIR + "/examples/arduino/rov_depth_heading.yaml";
  const auto built = adapters::mcu::build_sketch(TETHER_SOURCE_DIR + "/examples/arduino/rov_depth_heading",
                                                 "atmega328p", 16'000'000);
  if (!built.ok) {
    std::printf("mcu_lockstep: the sketch does not build: %s\n", built.error.c_str());
    return 1;
  }
  const runtime::Scenario sc = runtime::load_scenario(
      scenario, {"loop.steps=" + std::to_string(steps), "loop.real_time_factor=0", "recording.enabled=false"});
  double best_session = 1e300, best_bare = 1e300;
  std::uint64_t cycles = 0;
  for (int r = 0; r < rounds; ++r) {
    runtime::Session session(sc, adapters::make_endpoints(sc));
    std::atomic<bool> stop{false};
    const auto t0 = bench::Clock::now();
    if (session.run(stop) != runtime::Outcome::completed) {
      std::printf("mcu_lockstep: the run failed\n");
      return 1;
    }
    best_session = std::min(best_session, bench::seconds_since(t0));
    cycles = session.summary()["endpoints"][0]["mcu"]["cycles"].get<std::uint64_t>();
    best_bare = std::min(best_bare, bare_simavr(built.elf, cycles));
  }
  const double sim_s = static_cast<double>(steps) * 0.01;
  std::printf("mcu_lockstep: the ROV sketch on a 16 MHz ATmega328P at 100 Hz, %ld steps (%.0f s simulated, %llu "
              "cycles), best of %d rounds\n",
              steps, sim_s, static_cast<unsigned long long>(cycles), rounds);
  std::printf("  bare simavr (same ELF, same cycles, nothing wired)  %8.3f s   real-time factor %6.2f\n", best_bare,
              sim_s / best_bare);
  std::printf("  session (I2C chips, pins, physics; no recording)   %8.3f s   real-time factor %6.2f (goal >= 5)\n",
              best_session, sim_s / best_session);
  std::printf("  session / bare                                      %8.2f x   (goal <= 1.15; the bare run takes "
              "other paths: see the header)\n",
              best_session / best_bare);
  std::printf("figure | mcu lock-step real-time factor | %.2f\n", sim_s / best_session);
  return 0;
}
