// SPDX-License-Identifier: Apache-2.0
// Where tether finds what it ships (docs/install.md), and `tether init`: a user's own scenario
// folder from a shipped scenario and the example firmware's source.
//
// The helpers (tether-vehicle, tether-ardupilot, firmware/host/...) sit beside the running
// `tether` both in a build folder and in an installed tree's lib/tether/ (bin/tether links
// there), so that folder is the default of TETHER_BUILD_DIR, the variable the scenarios name
// their helpers by. What is shipped to copy (config/, examples/, firmware_shim/) is
// share/tether/ two levels above an installed tree's helpers, or a build folder's checkout
// (its CMakeCache.txt says which).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <system_error>

#include "commands.hpp"
#include "tether/scenario/scenario.hpp"

namespace tether::cli {

namespace fs = std::filesystem;

namespace {

// the running executable's folder (symbolic links resolved), or empty
fs::path own_dir() {
  std::error_code ec;
  const fs::path exe = fs::canonical("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

// the checkout a build folder was configured from (CMakeCache.txt's CMAKE_HOME_DIRECTORY)
std::optional<fs::path> checkout_of(const fs::path& build) {
  std::ifstream cache(build / "CMakeCache.txt");
  const std::string key = "CMAKE_HOME_DIRECTORY:INTERNAL=";
  for (std::string line; std::getline(cache, line);)
    if (line.rfind(key, 0) == 0) return fs::path(line.substr(key.size()));
  return std::nullopt;
}

bool copy_file(const fs::path& from, const fs::path& to, std::string& why) {
  std::error_code ec;
  fs::create_directories(to.parent_path(), ec);
  if (!ec) fs::copy_file(from, to, fs::copy_options::none, ec);
  if (ec) why = "cannot copy " + from.string() + " to " + to.string() + ": " + ec.message();
  return !ec;
}

// how to build and run the copied firmware, written into the folder
std::string readme_text(const std::string& scenario_file, const fs::path& shipped) {
  return "# " + scenario_file +
         " and its firmware\n\n"
         "Made by `tether init`. Run the scenario from anywhere:\n\n"
         "    tether run " +
         scenario_file +
         "\n\n"
         "It launches the shipped build of the example firmware (" +
         "${TETHER_BUILD_DIR}/firmware/host/depth_heading_hold; tether sets TETHER_BUILD_DIR\n"
         "to its own helpers' folder unless you set it). `firmware/` holds that firmware's source.\n"
         "To run your own edit of it, build it for the host against the shim:\n\n"
         "    sh firmware/build.sh\n\n"
         "and point the endpoint's `command` at it (a path relative to the scenario file):\n\n"
         "    command: [\"firmware/depth_heading_hold\"]\n\n"
         "The shim's sources are in " +
         (shipped / "firmware_shim").string() + " (docs: protocol.md, extending.md).\n";
}

std::string build_script(const fs::path& shipped) {
  const std::string shim = (shipped / "firmware_shim").string();
  return "#!/bin/sh\n"
         "# the example firmware for the host, against Tether's C99 shim (POSIX port)\n"
         "set -e\n"
         "cd \"$(dirname \"$0\")\"\n"
         "shim='" +
         shim +
         "'\n"
         "cc -std=c99 -O2 -Wall -Wextra -I\"$shim/include\" depth_heading_hold.c \"$shim\"/src/*.c \\\n"
         "  \"$shim/ports/posix/port_posix.c\" -o depth_heading_hold -lm\n"
         "echo \"built $(pwd)/depth_heading_hold\"\n";
}

bool write_text(const fs::path& file, const std::string& text, std::string& why) {
  std::ofstream out(file);
  out << text;
  out.close();
  if (!out) why = "cannot write " + file.string();
  return static_cast<bool>(out);
}

}  // namespace

void default_helper_dir() {
  if (const char* set = std::getenv("TETHER_BUILD_DIR"); set != nullptr && *set != '\0') return;
  const fs::path dir = own_dir();
  if (!dir.empty()) ::setenv("TETHER_BUILD_DIR", dir.c_str(), 0);
}

std::optional<fs::path> shipped_dir() {
  const fs::path dir = own_dir();
  if (dir.empty()) return std::nullopt;
  std::error_code ec;
  const fs::path installed = (dir / ".." / ".." / "share" / "tether").lexically_normal();
  if (fs::is_directory(installed / "config", ec)) return installed;
  if (auto checkout = checkout_of(dir); checkout && fs::is_directory(*checkout / "config", ec)) return *checkout;
  return std::nullopt;
}

int init_command(const InitOptions& options) {
  const auto shipped = shipped_dir();
  if (!shipped) {
    std::cerr << "tether init: cannot find the shipped scenarios (neither share/tether/ of an installed tree "
                 "nor the checkout of a build folder beside this tether)\n";
    return 2;
  }
  const fs::path from = *shipped / "config" / "scenarios" / (options.from + ".yaml");
  std::error_code ec;
  // a name of config/scenarios/, not a path that leaves it
  if (options.from.empty() || options.from.find('/') != std::string::npos || options.from[0] == '.' ||
      !fs::is_regular_file(from, ec)) {
    std::cerr << "tether init: no shipped scenario \"" << options.from << "\" (" << from.string()
              << "); the shipped ones are in " << (*shipped / "config" / "scenarios").string() << "\n";
    return 2;
  }
  const fs::path folder = fs::absolute(options.name, ec).lexically_normal();
  if (folder.filename().empty()) {
    std::cerr << "tether init: \"" << options.name << "\" names no folder to make\n";
    return 2;
  }
  const bool existed = fs::exists(folder, ec);
  if (existed && !fs::is_empty(folder, ec)) {
    std::cerr << "tether init: " << folder.string() << " exists and is not empty: nothing written\n";
    return 2;
  }
  const std::string scenario_file = folder.filename().string() + ".yaml";
  std::string why;
  const fs::path firmware = *shipped / "examples" / "firmware";
  const bool ok = copy_file(from, folder / scenario_file, why) &&
                  copy_file(firmware / "depth_heading_hold.c", folder / "firmware" / "depth_heading_hold.c", why) &&
                  copy_file(firmware / "depth_heading_law.h", folder / "firmware" / "depth_heading_law.h", why) &&
                  write_text(folder / "firmware" / "build.sh", build_script(*shipped), why) &&
                  write_text(folder / "README.md", readme_text(scenario_file, *shipped), why);
  // what failed leaves nothing behind: a folder it made goes, a folder it found empty is emptied
  const auto undo = [&] {
    std::error_code ignored;
    if (existed)
      for (const auto& entry : fs::directory_iterator(folder, ignored)) fs::remove_all(entry.path(), ignored);
    else
      fs::remove_all(folder, ignored);
  };
  if (!ok) {
    undo();
    std::cerr << "tether init: " << why << "\n";
    return 1;
  }
  // the copy must read as a scenario where it now is (a shipped one that names files beside
  // it would not): said now, not at the first run
  try {
    (void)runtime::load_scenario((folder / scenario_file).string());
  } catch (const std::exception& ex) {
    undo();
    std::cerr << "tether init: the copy of " << options.from << ".yaml does not load in its new folder: " << ex.what()
              << "; nothing kept\n";
    return 1;
  }
  std::cout << "tether init: " << folder.string() << "/\n"
            << "  " << scenario_file << "  (from " << from.string() << ")\n"
            << "  firmware/  the example firmware's source and build.sh\n"
            << "  README.md  how to run it and your own firmware\n"
            << "run it: tether run " << (folder / scenario_file).string() << "\n";
  return 0;
}

}  // namespace tether::cli
