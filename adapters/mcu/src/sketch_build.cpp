// SPDX-License-Identifier: Apache-2.0
// Building a sketch with Arduino-Makefile (docs/mcu.md, "Bringing a sketch").
#include "tether/mcu/sketch_build.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tether/process/launch_check.hpp"

namespace tether::adapters::mcu {

namespace fs = std::filesystem;

namespace {

// Debian's Arduino (arduino-core-avr, arduino-mk); $TETHER_ARDUINO_DIR points elsewhere
std::string arduino_dir() {
  const char* d = std::getenv("TETHER_ARDUINO_DIR");
  return d && *d ? d : "/usr/share/arduino";
}
std::string arduino_mk() { return arduino_dir() + "/Arduino.mk"; }
std::string arduino_core() { return arduino_dir() + "/hardware/arduino/avr/cores/arduino/Arduino.h"; }

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// the first "file:line:col: error: ..." (or "fatal error") line of the compiler's output,
// its file made a path a reader can open
std::string first_error(const std::string& log, const std::string& dir) {
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(" error: ") == std::string::npos && line.find(" fatal error: ") == std::string::npos) continue;
    if (!line.empty() && line.front() != '/' && line.find(':') != std::string::npos) line = dir + "/" + line;
    return line;
  }
  // no compiler error: the last line that says what failed (a link error, make itself)
  std::istringstream again(log);
  std::string last;
  while (std::getline(again, line))
    if (!line.empty()) last = line;
  return last.empty() ? "make failed without a message" : last;
}

}  // namespace

std::string sketch_toolchain_missing() {
  std::string missing;
  auto need = [&](bool ok, const char* package) {
    if (ok) return;
    if (!missing.empty()) missing += ' ';
    missing += package;
  };
  need(fs::exists(arduino_mk()), "arduino-mk");
  need(fs::exists(arduino_core()), "arduino-core-avr");
  need(!find_program("avr-gcc").empty(), "gcc-avr");
  need(fs::exists("/usr/lib/avr/include/avr/io.h"), "avr-libc");
  need(!find_program("make").empty(), "make");
  return missing;
}

std::string sketch_cache_root() {
  if (const char* c = std::getenv("TETHER_SKETCH_CACHE"); c && *c) return c;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/tether/sketches";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/tether/sketches";
  return "/tmp/tether-sketches";
}

SketchBuild build_sketch(const std::string& dir_in, const std::string& mcu, std::uint64_t f_cpu_hz) {
  SketchBuild b;
  std::error_code ec;
  const fs::path dir = fs::absolute(dir_in, ec).lexically_normal();
  if (!fs::is_directory(dir, ec)) {
    b.error = "sketch folder " + dir.string() + " does not exist";
    return b;
  }
  bool has_ino = false;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".ino" || e.path().extension() == ".pde") has_ino = true;
  if (!has_ino) {
    b.error = "sketch folder " + dir.string() + " has no .ino file";
    return b;
  }
  if (const std::string missing = sketch_toolchain_missing(); !missing.empty()) {
    b.error = "building a sketch needs the Debian packages " + missing +
              " (scripts/deps.sh test installs them: apt-get install --no-install-recommends " + missing + ")";
    return b;
  }
  if (mcu != "atmega328p") {
    b.error = "sketches are built for the atmega328p (an Arduino Uno) only, not " + mcu;
    return b;
  }
  char key[17];
  std::snprintf(key, sizeof key, "%016llx",
                static_cast<unsigned long long>(
                    fnv1a(dir.string() + '\n' + mcu + '\n' + std::to_string(f_cpu_hz) + '\n' + arduino_dir())));
  const fs::path cache = fs::path(sketch_cache_root()) / (dir.filename().string() + "-" + key);
  fs::create_directories(cache, ec);
  if (ec) {
    b.error = "cannot make the sketch cache folder " + cache.string() + ": " + ec.message();
    return b;
  }
  // one build of this sketch at a time, the Makefile written under the same lock: a
  // campaign's workers share the cache (one rewriting the Makefile while another's make read
  // it made that make find no targets)
  const int lock = ::open((cache / "lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (lock >= 0) ::flock(lock, LOCK_EX);
  {
    // Debian's core needs DECIMAL_DIG from gcc-avr 5.4's float.h under its older name, and
    // gnu++11 (arduino-mk's default gnu++98 does not compile it)
    std::ofstream mk(cache / "Makefile.new");
    mk << "# written by tether: builds the sketch in " << dir.string() << "\n"
       << "BOARD_TAG = uno\n"
       << "ARDUINO_DIR = " << arduino_dir() << "\n"
       << "MCU = " << mcu << "\n"
       << "F_CPU = " << f_cpu_hz << "L\n"
       << "CPPFLAGS += -DDECIMAL_DIG=__DECIMAL_DIG__\n"
       << "CXXFLAGS_STD = -std=gnu++11\n"
       << "OBJDIR = " << (cache / "build").string() << "\n"
       << "TARGET = sketch\n"
       << "include " << arduino_mk() << "\n";
  }
  fs::rename(cache / "Makefile.new", cache / "Makefile", ec);
  const std::string cmd = "make -s -C " + quote(dir.string()) + " -f " + quote((cache / "Makefile").string()) + " 2>&1";
  std::FILE* p = ::popen(cmd.c_str(), "r");
  int status = -1;
  if (p) {
    char buf[4096];
    std::size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) b.log.append(buf, n);
    status = ::pclose(p);
  }
  if (lock >= 0) ::close(lock);
  const fs::path elf = cache / "build" / "sketch.elf";
  if (status != 0 || !fs::exists(elf)) {
    b.error = p ? first_error(b.log, dir.string()) : "cannot run make";
    return b;
  }
  b.ok = true;
  b.elf = elf.string();
  return b;
}

}  // namespace tether::adapters::mcu
