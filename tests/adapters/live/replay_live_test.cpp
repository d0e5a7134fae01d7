// SPDX-License-Identifier: Apache-2.0
// `tether replay REC --live 0`: a recording served with playback control (pause, step,
// speed, seek from the nearest keyframe), checked bit for bit as it plays (--verify), held
// at its last step until a client shuts it down (docs/live.md).
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
#include <yaml-cpp/yaml.h>

#include "tether/live/client.hpp"
#include "tether/live/protocol.hpp"

#include "live_test_util.hpp"
#include "stand_in_endpoint.hpp"

using nlohmann::json;
using namespace tether;

using namespace tether::live_test;

namespace {

// plays on until the replay holds, paused, at its end (`end`: one past the last step)
json play_to_end(live::Client& c, int end) {
  json s = call(c, "/tether/status");
  for (int i = 0; i < 1200 && !(s["paused"] == true && s["step"] == end); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    s = call(c, "/tether/status");
  }
  return s;
}

// shuts the replay down: it exits cleanly, having found every state bit-identical
void shut_down_verified(live::Client& c, Process& replay, const std::string& dir) {
  call(c, "/tether/shutdown");
  CHECK(replay.wait() == 0);
  const std::string out = read_file(dir + "/stdout.txt");
  CHECK_MESSAGE(out.find("bit-identical") != std::string::npos, out);
  std::filesystem::remove_all(dir);
}

}  // namespace

TEST_CASE(
    "replay live: pause, step, seek back and forth from keyframes, speed up, hold at the end, every state checked") {
  const std::string dir = temp_dir("playback");
  const Result recorded = run(tether_exe + " run " + in_process_file + " --rtf 0 --steps 600 -q --out " + dir + "/rec");
  REQUIRE_MESSAGE(recorded.exit_code == 0, recorded.out);
  Process replay("replay " + dir + "/rec/recording.mcap --live 0 --paused --verify -q", dir);
  const std::string url = live_url(replay);
  live::Client c;
  std::string error;
  REQUIRE_MESSAGE(c.connect(url, "", &error), error);
  CHECK(c.server_info()["name"] == "tether replay: in_process_depth_hold");
  std::uint32_t sub = 0;
  REQUIRE(c.subscribe("/tether/vehicles", sub, &error));

  json s = call(c, "/tether/status");
  CHECK(s["paused"] == true);
  CHECK(s["step"] == 0);
  s = call(c, "/tether/step", {{"steps", 10}});
  CHECK(s["step"] == 10);
  // the replayed steps are published as a live session's are
  int seen = 0;
  while (seen < 10) {
    live::Client::Frame f;
    REQUIRE_MESSAGE(c.next(f, 30, &error), error);
    live::MessageData m;
    if (f.binary && live::decode_message_data(f.data, m) && m.subscription == sub)
      CHECK(json::parse(m.payload)["step"] == seen++);
  }

  // seek forward and back: from the keyframe at or before the target (every 100 steps), then
  // stepped on to it; --verify compares every state on the way with the recording
  s = call(c, "/tether/seek", {{"step", 350}});
  CHECK(s["ok"] == true);
  CHECK(s["step"] == 350);
  CHECK(s["paused"] == true);
  s = call(c, "/tether/seek", {{"step", 20}});
  CHECK(s["step"] == 20);
  s = call(c, "/tether/step", {{"steps", 5}});
  CHECK(s["step"] == 25);
  s = call(c, "/tether/seek", {{"step", 600}});
  CHECK(s["ok"] == false);  // past the last step (599)
  CHECK(s["error"].get<std::string>().find("past the recording's last step") != std::string::npos);

  // a replay cannot change the world
  s = call(c, "/tether/apply_force", {{"name", "push"}, {"body", "auv"}, {"force", {0, 1, 0}}});
  CHECK(s["ok"] == false);
  CHECK(s["error"].get<std::string>().find("replay") != std::string::npos);

  // play at 10x to the end: it holds there, paused, until shut down
  s = call(c, "/tether/set_rtf", {{"rtf", 10}});
  CHECK(s["real_time_factor"] == 10);
  s = call(c, "/tether/resume");
  CHECK(s["paused"] == false);
  s = play_to_end(c, 600);
  CHECK(s["step"] == 600);
  CHECK(s["paused"] == true);
  s = call(c, "/tether/step", {{"steps", 1}});
  CHECK(s["ok"] == false);  // nothing left to play
  // and back again from the end
  s = call(c, "/tether/seek", {{"step", 599}});
  CHECK(s["step"] == 599);
  shut_down_verified(c, replay, dir);
}

TEST_CASE("replay live: a seek in a session whose estimate refits steps from the start, every state checked") {
  // tank_identify.yaml with the in-process stand-in for its rig, 6 s, a refit every 2 s taken
  // 1 s later: the estimate's state is the trial so far, which no keyframe after the start holds
  const std::string dir = temp_dir("refit_seek");
  YAML::Node root = YAML::Load(read_file(TETHER_SOURCE_DIR + "/config/scenarios/tank_identify.yaml"));
  test::stand_in_for_mqtt(root, 5);
  root["loop"]["duration_s"] = 6;
  YAML::Node est = root["vehicles"][0]["feedback"][0];
  REQUIRE(est["type"].as<std::string>() == "estimate");
  est["refit_every_s"] = 2;
  est["refit_latency_s"] = 1;
  root["recording"]["keyframe_every_steps"] = 100;
  YAML::Emitter emitted;
  emitted << root;
  std::ofstream(dir + "/refit.yaml") << emitted.c_str();
  const Result recorded = run(tether_exe + " run " + dir + "/refit.yaml --rtf 0 -q --out " + dir + "/rec");
  REQUIRE_MESSAGE(recorded.exit_code == 0, recorded.out);
  // the summary says the refits (started at 2 and 4 s, taken at 3 and 5 s)
  CHECK_MESSAGE(recorded.out.find("batch refits taken: 2 (the last over ") != std::string::npos, recorded.out);
  Process replay("replay " + dir + "/rec/recording.mcap --live 0 --paused --verify -q", dir);
  live::Client c;
  std::string error;
  REQUIRE_MESSAGE(c.connect(live_url(replay), "", &error), error);
  // past both refits, back before the first, forward again
  for (const int step : {550, 150, 420}) {
    const json s = call(c, "/tether/seek", {{"step", step}});
    CHECK_MESSAGE(s["ok"] == true, s.dump());
    CHECK(s["step"] == step);
  }
  call(c, "/tether/resume");
  CHECK(play_to_end(c, 600)["step"] == 600);
  shut_down_verified(c, replay, dir);
}

TEST_CASE("replay live: --live does not go with --firmware") {
  const Result r = run(tether_exe + " replay /nonexistent.mcap --live 0 --firmware firmware=/bin/true");
  CHECK(r.exit_code == 2);
  CHECK(r.out.find("--live") != std::string::npos);
}
