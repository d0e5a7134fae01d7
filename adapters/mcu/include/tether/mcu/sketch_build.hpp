// SPDX-License-Identifier: Apache-2.0
// An Arduino sketch folder built into an ELF the way an Arduino user's machine builds it:
// Debian's Arduino core (arduino-core-avr) through Arduino-Makefile (arduino-mk), into a
// cache folder of Tether's, never into the sketch's own folder (docs/mcu.md).
#pragma once

#include <cstdint>
#include <string>

namespace tether::adapters::mcu {

struct SketchBuild {
  bool ok = false;
  std::string elf;    // the image, when ok
  std::string error;  // the compiler's first error (with the sketch's path), or why it did not run
  std::string log;    // everything make printed
};

/// The Debian packages the sketch build needs that are not installed, named for apt
/// ("arduino-mk arduino-core-avr"); empty when everything is there.
std::string sketch_toolchain_missing();

/// Where built sketches are kept: $TETHER_SKETCH_CACHE, else $XDG_CACHE_HOME/tether/sketches,
/// else ~/.cache/tether/sketches.
std::string sketch_cache_root();

/// Builds the sketch in folder `dir` (its .ino files and the libraries they include) for
/// `mcu` at `f_cpu_hz`. Incremental: an unchanged sketch is not compiled again. Builds of
/// the same sketch by several processes at once (a campaign's workers) take turns.
SketchBuild build_sketch(const std::string& dir, const std::string& mcu, std::uint64_t f_cpu_hz);

}  // namespace tether::adapters::mcu
