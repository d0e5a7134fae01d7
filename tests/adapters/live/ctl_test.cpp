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

#include "live_test_util.hpp"

using nlohmann::json;
using namespace tether;

using namespace tether::live_test;

namespace {

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
  // the verb is named once ("seek: seek:" before)
  r = run(tether_exe + " ctl --url " + url + " seek 5");
  CHECK(r.exit_code == 1);
  CHECK_MESSAGE(r.out.find("tether ctl: seek: only a recording served live") != std::string::npos, r.out);

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
  CHECK(std::get<runtime::ApplyForce>(rec.commands[0].commands[0]).name == "push");
  CHECK(std::get<runtime::ApplyForce>(rec.commands[0].commands[0]).force_n.y() == 150);
  CHECK(std::get<runtime::ApplyForce>(rec.commands[0].commands[0]).duration_s == 1);

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
  // the words are checked with the service's own keys: a misspelt key, a value out of range
  r = run(tether_exe + " ctl --url ws://127.0.0.1:9 fault device=auv.hull.depth kind=bias vaule=1");
  CHECK(r.exit_code == 2);
  CHECK_MESSAGE(r.out.find("unknown key \"vaule\"") != std::string::npos, r.out);
  r = run(tether_exe + " ctl --url ws://127.0.0.1:9 rtf 5000");
  CHECK(r.exit_code == 2);
  CHECK_MESSAGE(r.out.find("\"rtf\" must be a finite number in 0..1000") != std::string::npos, r.out);
  r = run(tether_exe + " ctl --url ws://127.0.0.1:9 autopilot-manual ap 0 0 2000 0");
  CHECK(r.exit_code == 2);
  CHECK_MESSAGE(r.out.find("\"z\" must be a whole number in -1000..1000, got 2000") != std::string::npos, r.out);
  r = run(tether_exe + " ctl --url ws://127.0.0.1:9 autopilot-arm ap maybe");
  CHECK(r.exit_code == 2);
  CHECK_MESSAGE(r.out.find("\"arm\" must be true or false, got \"maybe\"") != std::string::npos, r.out);
  r = run(tether_exe + " ctl --url ws://127.0.0.1:9 autopilot-target ap depht=2");
  CHECK(r.exit_code == 2);
  CHECK_MESSAGE(r.out.find("unknown key \"depht\"") != std::string::npos, r.out);
  r = run(tether_exe + " ctl --url ws://127.0.0.1:9 --timeout 5 status");  // port 9 (discard): nothing listens
  CHECK(r.exit_code == 3);
}
