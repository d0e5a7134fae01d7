// SPDX-License-Identifier: Apache-2.0
// `tether ctl` against a real `tether run --live 0` (a port the system chooses, read from
// the `live: ws://...` line): pause, step exactly 10, push with a force, resume, shut down;
// then `tether replay --verify` of that session's recording (docs/live.md).
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
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
      std::filesystem::temp_directory_path() / ("tether_ctl_test_" + std::to_string(getpid()) + "_" + name);
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

json ctl_json(const std::string& url, const std::string& args) {
  const Result r = run(tether_exe + " ctl --url " + url + " --json " + args);
  REQUIRE_MESSAGE(r.exit_code == 0, "ctl " << args << ": " << r.out);
  const json j = json::parse(r.out, nullptr, false);
  REQUIRE_MESSAGE(!j.is_discarded(), "ctl " << args << ": " << r.out);
  return j;
}

}  // namespace

TEST_CASE("ctl: pause, step 10, force, resume and shutdown a session on --live 0, which then replays bit for bit") {
  const std::string dir = temp_dir("sequence");
  Process tether("run " + in_process_file + " --live 0 --rtf 1 --steps 1000000 -q --out " + dir, dir);
  const std::string url = live_url(tether);
  CHECK(url.rfind("ws://127.0.0.1:", 0) == 0);  // loopback unless told otherwise

  // running: pause it where it is
  json s = ctl_json(url, "pause");
  CHECK(s["paused"] == true);
  const std::uint64_t at = s["step"];
  const std::uint64_t done = s["steps_done"];
  CHECK(ctl_json(url, "status")["step"] == at);  // paused: nothing steps

  // exactly 10 steps
  s = ctl_json(url, "step 10");
  CHECK(s["step"] == at + 10);
  CHECK(s["steps_done"] == done + 10);
  CHECK(s["paused"] == true);

  // a push north in world axes for 1 s of simulation time, from the next step
  Result r = run(tether_exe + " ctl --url " + url + " force push auv 0 150 0 frame=world duration=1");
  REQUIRE_MESSAGE(r.exit_code == 0, r.out);
  CHECK(r.out.find("takes effect at step " + std::to_string(at + 10)) != std::string::npos);
  s = ctl_json(url, "status");
  CHECK(s["step"] == at + 10);  // accepted, not yet applied: nothing stepped
  s = ctl_json(url, "step 100");
  CHECK(s["step"] == at + 110);
  CHECK(s["forces"].empty());  // 1 s = 100 steps: the push has ended

  // a command the session refuses: exit 1 and the reason
  r = run(tether_exe + " ctl --url " + url + " unforce nosuch");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("no force named") != std::string::npos);

  // resume: it runs again
  s = ctl_json(url, "resume");
  CHECK(s["paused"] == false);
  for (int i = 0; i < 600 && s["step"].get<std::uint64_t>() <= at + 110; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    s = ctl_json(url, "status");
  }
  CHECK(s["step"].get<std::uint64_t>() > at + 110);

  s = ctl_json(url, "shutdown");
  CHECK(tether.wait() == 130);  // stopped by a client: recording and summary written

  const json summary = json::parse(read_file(dir + "/summary.json"));
  CHECK(summary["outcome"] == "stopped");
  CHECK(summary["control"]["operator_commands"] == 1);
  CHECK(summary["control"]["pauses"].get<int>() >= 1);
  const double y = summary["vehicles"][0]["position_m"][1];
  MESSAGE("the push moved the AUV " << y << " m north");
  CHECK(y > 0.3);  // without it the AUV holds y = 0 to a millimetre

  // the push is in the recording at the step it took effect
  runtime::Recording rec;
  std::string error;
  REQUIRE_MESSAGE(runtime::load_recording(dir + "/recording.mcap", rec, &error), error);
  REQUIRE(rec.commands.size() == 1);
  CHECK(rec.commands[0].step == at + 10);
  REQUIRE(rec.commands[0].commands.size() == 1);
  CHECK(rec.commands[0].commands[0].name == "push");
  CHECK(rec.commands[0].commands[0].force_n.y() == 150);
  CHECK(rec.commands[0].commands[0].duration_s == 1);

  // and the session replays bit for bit with no client connected
  const Result replay = run(tether_exe + " replay " + dir + "/recording.mcap --verify -q");
  CHECK_MESSAGE(replay.exit_code == 0, replay.out);
  CHECK(replay.out.find("bit-identical") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("ctl: bad usage exits 2 before connecting, no server exits 3") {
  Result r = run(tether_exe + " ctl --url ws://127.0.0.1:9 step ten");
  CHECK(r.exit_code == 2);
  r = run(tether_exe + " ctl --url ws://127.0.0.1:9 frobnicate");
  CHECK(r.exit_code == 2);
  r = run(tether_exe + " ctl --url ws://127.0.0.1:9 --timeout 5 status");  // port 9 (discard): nothing listens
  CHECK(r.exit_code == 3);
}
