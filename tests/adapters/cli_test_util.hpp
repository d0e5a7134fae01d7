// SPDX-License-Identifier: Apache-2.0
// Running the tether command line from a test as a user would: through a shell, with its
// exit code and what it printed. Shared by the CLI tests.
#pragma once

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "test_paths.hpp"

namespace tether::cli_test {

struct Result {
  int exit_code = -1;
  bool signalled = false;  // killed by a signal (the shell reports it as 128 + signal)
  std::string out;
};

/// Runs a shell command line, capturing stdout and stderr together (or stdout only, with
/// stderr dropped: for output that must parse, such as --json).
inline Result run(const std::string& command, bool with_stderr = true) {
  Result r;
  FILE* p = popen(("(" + command + ")" + (with_stderr ? " 2>&1" : " 2>/dev/null")).c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.signalled = WIFSIGNALED(status) || (r.exit_code > 128 && r.exit_code < 160);
  return r;
}

inline const std::string tether_exe = TETHER_BINARY_DIR + "/tether";
/// The default scenario launches the host firmware from ${TETHER_BUILD_DIR:-../../build}: this build's.
inline const std::string tether_fw = "TETHER_BUILD_DIR=" + TETHER_BINARY_DIR + " " + tether_exe;

/// An empty scratch folder for one test, named after it and this process.
inline std::string temp_dir(const char* name) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("tether_cli_test_" + std::to_string(getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace tether::cli_test
