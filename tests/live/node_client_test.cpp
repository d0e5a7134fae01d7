// SPDX-License-Identifier: Apache-2.0
// Node against a real `tether run --live 0` (tests/live_node): the reference
// foxglove.websocket.v1 client (npm @foxglove/ws-protocol) runs serverInfo and channels,
// pose messages whose time increases, pause, step exactly 10, push with a force, resume,
// shut down, then `tether replay --verify` of that session's recording; and the built-in
// dashboard in headless Chromium (docs/live.md).
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "tether/recording/replay.hpp"

using nlohmann::json;
using namespace tether;

namespace {

const std::string tether_exe = TETHER_BINARY_DIR "/tether";
const std::string in_process_file = TETHER_SOURCE_DIR "/config/scenarios/in_process_depth_hold.yaml";

struct Result {
  int exit_code = -1;
  std::string out;
};

Result run(const std::string& command) {
  Result r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string temp_dir(const char* name) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("tether_node_test_" + std::to_string(getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Process {
  pid_t pid = -1;
  std::string dir;
  Process(const std::string& args, const std::string& d) : dir(d) {
    const std::string cmd = "exec " + tether_exe + " " + args + " > " + dir + "/stdout.txt 2> " + dir + "/stderr.txt";
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
  int wait(double timeout_s = 60) {
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
std::string live_url(Process& p) {
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

}  // namespace

TEST_CASE("node client: the reference foxglove client watches, pauses, steps 10, pushes and resumes a session") {
  if (std::getenv("TETHER_SKIP_NODE_VALIDATION")) {
    MESSAGE("skipped: TETHER_SKIP_NODE_VALIDATION is set");
    return;
  }
  const std::string dir = temp_dir("sequence");
  Process tether("run " + in_process_file + " --live 0 --rtf 1 --steps 1000000 -q --out " + dir, dir);
  const std::string url = live_url(tether);
  const Result node =
      run("TETHER_BINARY_DIR=" TETHER_BINARY_DIR " " TETHER_SOURCE_DIR "/tests/live_node/run.sh client.mjs " + url);
  MESSAGE(node.out);
  CHECK(node.exit_code == 0);
  const auto line = node.out.rfind("{\"ok\"");
  REQUIRE(line != std::string::npos);
  const json seen = json::parse(node.out.substr(line));
  CHECK(seen["ok"] == true);
  CHECK(seen["failures"].empty());
  CHECK(seen["seen"]["pose_messages_after_step_10"] == 10);
  const int code = tether.wait();
  CHECK(code == 130);  // the client shut it down

  const json summary = json::parse(read_file(dir + "/summary.json"));
  CHECK(summary["control"]["operator_commands"] == 1);
  runtime::Recording rec;
  std::string error;
  REQUIRE_MESSAGE(runtime::load_recording(dir + "/recording.mcap", rec, &error), error);
  REQUIRE(rec.commands.size() == 1);
  CHECK(rec.commands[0].step == seen["seen"]["paused_at_step"].get<std::uint64_t>() + 10);
  const Result replay = run(tether_exe + " replay " + dir + "/recording.mcap --verify -q");
  CHECK_MESSAGE(replay.exit_code == 0, replay.out);
  CHECK(replay.out.find("bit-identical") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("node client: the built-in dashboard at GET / loads in headless Chromium, shows the session and pauses it") {
  if (std::getenv("TETHER_SKIP_NODE_VALIDATION")) {
    MESSAGE("skipped: TETHER_SKIP_NODE_VALIDATION is set");
    return;
  }
  const std::string dir = temp_dir("dashboard");
  Process tether("run " + in_process_file + " --live 0 --rtf 1 --steps 1000000 -q --out " + dir, dir);
  const std::string url = live_url(tether);
  const std::string page = "http://" + url.substr(std::string("ws://").size()) + "/";
  const Result node =
      run("TETHER_BINARY_DIR=" TETHER_BINARY_DIR " " TETHER_SOURCE_DIR "/tests/live_node/run.sh dashboard.mjs " + page);
  MESSAGE(node.out);
  CHECK(node.exit_code == 0);
  const auto line = node.out.rfind("{\"ok\"");
  REQUIRE(line != std::string::npos);
  const json seen = json::parse(node.out.substr(line));
  CHECK(seen["ok"] == true);
  CHECK(seen["seen"]["title"] == "tether: in_process_depth_hold");
  CHECK(seen["seen"]["state_text"] == "paused");

  // the click paused the session itself: it stays where the page saw it pause
  const Result s1 = run(tether_exe + " ctl --url " + url + " --json status");
  REQUIRE_MESSAGE(s1.exit_code == 0, s1.out);
  const json a = json::parse(s1.out);
  CHECK(a["paused"] == true);
  CHECK(a["step"] == seen["seen"]["paused_at_step"]);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const Result s2 = run(tether_exe + " ctl --url " + url + " --json status");
  REQUIRE_MESSAGE(s2.exit_code == 0, s2.out);
  CHECK(json::parse(s2.out)["step"] == a["step"]);
  const Result stop = run(tether_exe + " ctl --url " + url + " shutdown");
  CHECK_MESSAGE(stop.exit_code == 0, stop.out);
  CHECK(tether.wait() == 130);
  const json summary = json::parse(read_file(dir + "/summary.json"));
  CHECK(summary["live"]["http_requests"].get<int>() >= 1);
  std::filesystem::remove_all(dir);
}
