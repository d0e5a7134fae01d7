// SPDX-License-Identifier: Apache-2.0
// What the live tests share: a `tether` process started in the background with its output
// in files, the address `--live 0` prints, and the command-line helpers of the CLI tests.
#pragma once

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "mosquitto_util.hpp"  // free_loopback_port
#include "test_paths.hpp"
#include "tether/live/client.hpp"

namespace tether::live_test {

using json = nlohmann::json;
using cli_test::Result;
using cli_test::run;
using cli_test::temp_dir;
using cli_test::tether_exe;
using tether::test::free_loopback_port;
inline const std::string in_process_file = TETHER_SOURCE_DIR + "/config/scenarios/in_process_depth_hold.yaml";

inline std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Process {
  pid_t pid = -1;
  std::string dir;
  Process(const std::string& args, const std::string& d, const std::string& env = "") : dir(d) {
    const std::string cmd =
        env + " exec " + tether_exe + " " + args + " > " + dir + "/stdout.txt 2> " + dir + "/stderr.txt";
    pid = fork();
    if (pid == 0) {
      execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  bool running() {
    int status = 0;
    return pid > 0 && waitpid(pid, &status, WNOHANG) == 0;
  }
  int wait(double timeout_s = 120) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    int status = 0;
    while (std::chrono::steady_clock::now() < until) {
      if (waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    pid = -1;
    FAIL("tether did not exit within " << timeout_s << " s; stderr: " << read_file(dir + "/stderr.txt"));
    return -1;
  }
  ~Process() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      int status = 0;
      waitpid(pid, &status, 0);
    }
  }
};

// the address `tether run --live 0` prints on stderr once it listens
inline std::string live_url(Process& p) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < until) {
    const std::string err = read_file(p.dir + "/stderr.txt");
    const auto at = err.find("live: ws://");
    if (at != std::string::npos) {
      const auto end = err.find_first_of(" \n", at + 6);
      if (end != std::string::npos) return err.substr(at + 6, end - at - 6);
    }
    if (!p.running()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  FAIL("no live address on stderr: " << read_file(p.dir + "/stderr.txt"));
  return {};
}

inline bool connect(live::Client& client, int port, const std::string& token = "", std::string* error = nullptr) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::string why;
  while (std::chrono::steady_clock::now() < until) {
    if (client.connect("ws://127.0.0.1:" + std::to_string(port), token, &why)) return true;
    if (why.find("refused the connection") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (error) *error = why;
  return false;
}

inline json call(live::Client& c, const std::string& service, const json& request = json::object()) {
  json response;
  std::string error;
  REQUIRE_MESSAGE(c.call(service, request, response, &error, 60), service << ": " << error);
  return response;
}

}  // namespace tether::live_test
