// SPDX-License-Identifier: Apache-2.0
// A real `tether run --live` on a free loopback port, driven by a real client (the Beast
// client `tether ctl` uses, and `tether ctl` itself): watch, pause, step, push, resume,
// shut down; then `tether replay --verify` of that session's recording (docs/live.md).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tether/live/client.hpp"
#include "tether/live/protocol.hpp"
#include "tether/recording/replay.hpp"

#include "live_test_util.hpp"

using nlohmann::json;
using namespace tether;

using tether::live_test::call;
using tether::live_test::connect;
using tether::live_test::free_loopback_port;
using tether::live_test::in_process_file;
using tether::live_test::Process;
using tether::live_test::read_file;
using tether::live_test::Result;
using tether::live_test::run;
using tether::live_test::temp_dir;
using tether::live_test::tether_exe;

namespace {

// the latest /tether/vehicles message of vehicle 0, reading messages of subscription `sub`
// until one for step `step` arrives
json vehicle_at(live::Client& c, std::uint32_t sub, std::uint64_t step) {
  for (int i = 0; i < 100000; ++i) {
    live::Client::Frame f;
    std::string error;
    REQUIRE_MESSAGE(c.next(f, 30, &error), error);
    live::MessageData m;
    if (!f.binary || !live::decode_message_data(f.data, m) || m.subscription != sub) continue;
    const json j = json::parse(m.payload);
    if (j["step"].get<std::uint64_t>() == step) return j["vehicles"][0];
  }
  FAIL("no /tether/vehicles message for step " << step);
  return {};
}

}  // namespace

TEST_CASE(
    "live session: watch, pause, step 10, push with a force, resume, shut down, and the recording replays bit for "
    "bit") {
  const std::string dir = temp_dir("sequence");
  const int port = free_loopback_port();
  Process tether("run " + in_process_file + " --live " + std::to_string(port) +
                     " --paused --rtf 1 --steps 1000000 -q --out " + dir,
                 dir);
  live::Client c;
  std::string error;
  REQUIRE_MESSAGE(connect(c, port, "", &error), error);

  // serverInfo, the recording's JSON channels with their schemas, the services
  const json& info = c.server_info();
  CHECK(info["name"] == "tether: in_process_depth_hold");
  for (const char* cap : {"time", "services", "parameters"})
    CHECK(std::find(info["capabilities"].begin(), info["capabilities"].end(), cap) != info["capabilities"].end());
  std::map<std::string, json> topics;
  for (const auto& ch : c.channels()) topics[ch["topic"]] = ch;
  for (const char* t : {"/tf", "/scene", "/log", "/tether/vehicles", "/tether/timing", "/tether/events",
                        "/tether/summary", "/vehicles/auv/pose", "/vehicles/auv/projected"})
    CHECK_MESSAGE(topics.count(t), t);
  CHECK(topics["/vehicles/auv/pose"]["schemaName"] == "foxglove.PoseInFrame");
  CHECK(topics["/vehicles/auv/pose"]["encoding"] == "json");
  CHECK(topics["/tf"]["schemaName"] == "foxglove.FrameTransform");
  CHECK_FALSE(topics.count("/tether/step"));  // binary replay channels stay in the file
  CHECK(c.services().size() == 16);

  // paused from the start: nothing moves
  json s = call(c, "/tether/status");
  CHECK(s["ok"] == true);
  CHECK(s["paused"] == true);
  CHECK(s["step"] == 0);

  std::uint32_t pose_sub = 0, vehicles_sub = 0;
  REQUIRE(c.subscribe("/vehicles/auv/pose", pose_sub, &error));
  REQUIRE(c.subscribe("/tether/vehicles", vehicles_sub, &error));

  // step 10: the response comes when exactly 10 steps are done
  s = call(c, "/tether/step", {{"steps", 10}});
  CHECK(s["ok"] == true);
  CHECK(s["step"] == 10);
  CHECK(s["steps_done"] == 10);
  CHECK(s["paused"] == true);

  // ten pose messages, their simulation time increasing by the period (10 ms)
  std::vector<std::uint64_t> times;
  json before;  // the vehicle after step 9 (S_10)
  while (times.size() < 10 || before.is_null()) {
    live::Client::Frame f;
    REQUIRE_MESSAGE(c.next(f, 30, &error), error);
    live::MessageData m;
    if (!f.binary || !live::decode_message_data(f.data, m)) continue;
    if (m.subscription == pose_sub) {
      const json pose = json::parse(m.payload);
      CHECK(pose["frame_id"] == "world");
      times.push_back(m.time_ns);
    } else if (m.subscription == vehicles_sub) {
      const json v = json::parse(m.payload);
      if (v["step"] == 9) before = v["vehicles"][0];
    }
  }
  for (std::size_t i = 1; i < times.size(); ++i) CHECK(times[i] == times[i - 1] + 10'000'000);
  CHECK(times.back() == 100'000'000);  // t_10: the state after step 9

  // paused: time stops
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  s = call(c, "/tether/status");
  CHECK(s["step"] == 10);

  // a sideways push (north, world frame) for 1 s of simulation time
  json r = call(c, "/tether/apply_force",
                {{"name", "push"}, {"body", "auv"}, {"force", {0, 150, 0}}, {"frame", "world"}, {"duration_s", 1.0}});
  CHECK(r["ok"] == true);
  CHECK(r["takes_effect_at_step"] == 10);
  // a bad one: refused with the reason, nothing applied
  r = call(c, "/tether/apply_force", {{"name", "bad"}, {"body", "nosuch"}, {"force", {0, 1, 0}}});
  CHECK(r["ok"] == false);
  CHECK(r["error"].get<std::string>().find("no body") != std::string::npos);
  s = call(c, "/tether/step", {{"steps", 100}});
  CHECK(s["step"] == 110);
  const json after = vehicle_at(c, vehicles_sub, 109);
  const double dy = after["y_m"].get<double>() - before["y_m"].get<double>();
  MESSAGE("y moved " << dy << " m in 1 s under 150 N north");
  CHECK(dy > 0.3);  // without the push the AUV holds y = 0 to a millimetre
  s = call(c, "/tether/status");
  CHECK(s["forces"].empty());  // the push ended after its 1 s (100 steps)

  // resume: the session runs again
  s = call(c, "/tether/resume");
  CHECK(s["paused"] == false);
  for (int i = 0; i < 600 && s["step"].get<std::uint64_t>() <= 110; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    s = call(c, "/tether/status");
  }
  CHECK(s["step"].get<std::uint64_t>() > 110);

  // `tether ctl` drives the same server
  Result ctl = run(tether_exe + " ctl --url ws://127.0.0.1:" + std::to_string(port) + " pause");
  CHECK_MESSAGE(ctl.exit_code == 0, ctl.out);
  CHECK(ctl.out.find("paused") != std::string::npos);
  ctl = run(tether_exe + " ctl --url ws://127.0.0.1:" + std::to_string(port) + " --json status");
  REQUIRE_MESSAGE(ctl.exit_code == 0, ctl.out);
  const std::uint64_t at = json::parse(ctl.out)["step"];
  ctl = run(tether_exe + " ctl --url ws://127.0.0.1:" + std::to_string(port) + " --json step 10");
  REQUIRE_MESSAGE(ctl.exit_code == 0, ctl.out);
  CHECK(json::parse(ctl.out)["step"] == at + 10);
  ctl = run(tether_exe + " ctl --url ws://127.0.0.1:" + std::to_string(port) +
            " force spin auv.hull 0 0 0 frame=body torque=0,0,2 duration=0.5");
  CHECK_MESSAGE(ctl.exit_code == 0, ctl.out);
  ctl = run(tether_exe + " ctl --url ws://127.0.0.1:" + std::to_string(port) + " step 5");
  CHECK_MESSAGE(ctl.exit_code == 0, ctl.out);
  ctl = run(tether_exe + " ctl --url ws://127.0.0.1:" + std::to_string(port) + " unforce spin");
  CHECK_MESSAGE(ctl.exit_code == 0, ctl.out);
  ctl = run(tether_exe + " ctl --url ws://127.0.0.1:" + std::to_string(port) + " unforce nosuch");
  CHECK(ctl.exit_code == 1);
  CHECK(ctl.out.find("no force named") != std::string::npos);
  ctl = run(tether_exe + " ctl --url ws://127.0.0.1:" + std::to_string(port) + " step 20");
  CHECK_MESSAGE(ctl.exit_code == 0, ctl.out);
  ctl = run(tether_exe + " ctl --url ws://127.0.0.1:" + std::to_string(port) + " param get rtf");
  CHECK_MESSAGE(ctl.exit_code == 0, ctl.out);
  CHECK(ctl.out.find("rtf = 1") != std::string::npos);
  ctl = run(tether_exe + " ctl --url ws://127.0.0.1:" + std::to_string(port) + " shutdown");
  CHECK_MESSAGE(ctl.exit_code == 0, ctl.out);
  const int code = tether.wait();
  CHECK(code == 130);  // stopped (by a client), the recording closed with its summary

  // the recording holds the operator commands at the steps they took effect
  runtime::Recording rec;
  REQUIRE_MESSAGE(runtime::load_recording(dir + "/recording.mcap", rec, &error), error);
  REQUIRE(rec.commands.size() == 3);
  CHECK(rec.commands[0].step == 10);
  CHECK(std::get<runtime::ApplyForce>(rec.commands[0].commands[0]).name == "push");
  CHECK(std::get<runtime::ApplyForce>(rec.commands[0].commands[0]).force_n.y() == 150);
  CHECK(std::get<runtime::ApplyForce>(rec.commands[1].commands[0]).name == "spin");
  CHECK(std::get<runtime::ApplyForce>(rec.commands[1].commands[0]).body_frame);
  CHECK(std::holds_alternative<runtime::RemoveForce>(rec.commands[2].commands[0]));
  const json summary = json::parse(read_file(dir + "/summary.json"));
  CHECK(summary["control"]["operator_commands"] == 3);
  CHECK(summary["live"]["clients"].get<int>() >= 2);

  // and replays bit for bit with no client connected
  const Result replay = run(tether_exe + " replay " + dir + "/recording.mcap --verify -q");
  CHECK_MESSAGE(replay.exit_code == 0, replay.out);
  CHECK(replay.out.find("bit-identical") != std::string::npos);
  // from a keyframe after the push began: the forces acting then are rebuilt from the commands
  const Result from = run(tether_exe + " replay " + dir + "/recording.mcap --verify -q --from-step 150");
  CHECK_MESSAGE(from.exit_code == 0, from.out);
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "live session: the rate cap thins a fast channel and still delivers the last state, and max_rate_hz 0 sends "
    "every step") {
  for (const double rate : {20.0, 0.0}) {
    CAPTURE(rate);
    const std::string dir = temp_dir("rate");
    const int port = free_loopback_port();
    const std::uint64_t steps = rate > 0 ? 2000 : 500;
    Process tether("run " + in_process_file + " --live " + std::to_string(port) +
                       " --paused --rtf 0 --steps 1000000 -q --set 'live={max_rate_hz: " + std::to_string(rate) +
                       ", queue_messages: 100000}' --out " + dir,
                   dir);
    live::Client c;
    std::string error;
    REQUIRE_MESSAGE(connect(c, port, "", &error), error);
    std::uint32_t sub = 0;
    REQUIRE(c.subscribe("/tether/vehicles", sub, &error));
    const auto t0 = std::chrono::steady_clock::now();
    json s = call(c, "/tether/step", {{"steps", steps}});  // at rtf 0: as fast as the loop goes
    REQUIRE(s["step"] == steps);
    // read until the state after the last step arrives: it is never held back by the cap
    std::vector<std::uint64_t> seen;
    while (seen.empty() || seen.back() != steps - 1) {
      live::Client::Frame f;
      REQUIRE_MESSAGE(c.next(f, 30, &error), error);
      live::MessageData m;
      if (!f.binary || !live::decode_message_data(f.data, m) || m.subscription != sub) continue;
      seen.push_back(json::parse(m.payload)["step"].get<std::uint64_t>());
    }
    const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rate > 0) {
      // at most the burst (64) and the rate over the time it took, and far fewer than the steps
      MESSAGE(seen.size() << " messages for " << steps << " steps in " << elapsed_s << " s at max_rate_hz " << rate);
      CHECK(static_cast<double>(seen.size()) <= 64 + rate * elapsed_s + 2);
      CHECK(seen.size() < steps / 4);
    } else {
      REQUIRE(seen.size() == steps);  // every step, in order
      for (std::size_t i = 0; i < seen.size(); ++i) CHECK(seen[i] == i);
    }
    for (std::size_t i = 1; i < seen.size(); ++i) CHECK(seen[i] > seen[i - 1]);
    call(c, "/tether/shutdown");
    CHECK(tether.wait() == 130);
    const json summary = json::parse(read_file(dir + "/summary.json"));
    if (rate > 0)
      CHECK(summary["live"]["rate_limited_messages"].get<std::uint64_t>() > 0);
    else
      CHECK(summary["live"]["rate_limited_messages"] == 0);
    std::filesystem::remove_all(dir);
  }
}

TEST_CASE(
    "live session: a fault injected live starts at the next step, is recorded, and the session replays bit "
    "for bit") {
  const std::string dir = temp_dir("fault");
  const int port = free_loopback_port();
  Process tether("run " + in_process_file + " --live " + std::to_string(port) +
                     " --paused --rtf 1 --steps 1000000 -q --set 'recording={keyframe_every_steps: 10}' --out " + dir,
                 dir);
  live::Client c;
  std::string error;
  REQUIRE_MESSAGE(connect(c, port, "", &error), error);
  json s = call(c, "/tether/step", {{"steps", 20}});
  REQUIRE(s["step"] == 20);

  // a bias on the depth sensor for 50 steps, from the next step on
  json r = call(c, "/tether/inject_fault",
                {{"device", "auv.hull.depth"}, {"kind", "bias"}, {"value", -3.0}, {"duration_steps", 50}});
  REQUIRE_MESSAGE(r["ok"] == true, r.dump());
  CHECK(r["takes_effect_at_step"] == 20);
  CHECK(r["starts_at_step"] == 21);
  CHECK(r["fault"] == "bias on auv.hull.depth");
  // refused, with the reason, and nothing recorded: an unknown device, an `if:` trigger, a
  // start that has passed, a link fault on an in-process endpoint, not an object
  r = call(c, "/tether/inject_fault", {{"device", "auv.hull.nosuch"}, {"kind", "bias"}, {"value", 1}});
  CHECK(r["ok"] == false);
  CHECK_MESSAGE(r["error"].get<std::string>().find("nosuch") != std::string::npos, r.dump());
  r = call(c, "/tether/inject_fault",
           {{"device", "auv.hull.depth"}, {"kind", "stuck"}, {"if", {{"value", "auv.depth_m"}, {"that", "> 1"}}}});
  CHECK(r["ok"] == false);
  CHECK(r["error"].get<std::string>().find("`if:`") != std::string::npos);
  r = call(c, "/tether/inject_fault", {{"device", "auv.hull.depth"}, {"kind", "stuck"}, {"at_step", 5}});
  CHECK(r["ok"] == false);
  CHECK(r["error"].get<std::string>().find("begun already") != std::string::npos);
  r = call(c, "/tether/inject_fault", {{"endpoint", "controller"}, {"kind", "drop"}});
  CHECK(r["ok"] == false);
  CHECK_MESSAGE(r["error"].get<std::string>().find("whose link takes none (endpoint types that take them: ardupilot_json, mqtt, serial)") !=
                    std::string::npos, r.dump());
  // `tether ctl fault`: the compass stuck for 0.2 s from t = 1 s (step 100)
  Result ctl = run(tether_exe + " ctl --url ws://127.0.0.1:" + std::to_string(port) +
                   " fault device=auv.hull.compass kind=stuck at_s=1 duration_s=0.2 name=frozen-compass");
  CHECK_MESSAGE(ctl.exit_code == 0, ctl.out);
  CHECK_MESSAGE(ctl.out.find("fault \"frozen-compass\" starts at step 100") != std::string::npos, ctl.out);
  ctl = run(tether_exe + " ctl --url ws://127.0.0.1:" + std::to_string(port) + " fault kind");
  CHECK(ctl.exit_code == 2);  // bad usage

  s = call(c, "/tether/step", {{"steps", 180}});
  CHECK(s["step"] == 200);
  call(c, "/tether/shutdown");
  CHECK(tether.wait() == 130);

  // recorded with the step it was asked at; the summary lists both with their activations
  runtime::Recording rec;
  REQUIRE_MESSAGE(runtime::load_recording(dir + "/recording.mcap", rec, &error), error);
  REQUIRE(rec.commands.size() == 1);
  CHECK(rec.commands[0].step == 20);
  REQUIRE(rec.commands[0].commands.size() == 2);
  CHECK(std::holds_alternative<runtime::InjectFault>(rec.commands[0].commands[0]));
  const json summary = json::parse(read_file(dir + "/summary.json"));
  REQUIRE(summary["faults"].size() == 2);
  const json& bias = summary["faults"][0];
  CHECK(bias["name"] == "bias on auv.hull.depth");
  CHECK(bias["active_steps"] == 50);
  CHECK(bias["activations"][0]["start_step"] == 21);
  CHECK(bias["activations"][0]["end_step"] == 71);
  const json& frozen = summary["faults"][1];
  CHECK(frozen["name"] == "frozen-compass");
  CHECK(frozen["activations"][0]["start_step"] == 100);
  CHECK(frozen["active_steps"] == 20);

  // replays bit for bit with no client, from the start and from keyframes inside the faults
  for (const char* from : {"", " --from-step 40", " --from-step 110"}) {
    const Result replay = run(tether_exe + " replay " + dir + "/recording.mcap --verify -q" + from);
    CHECK_MESSAGE(replay.exit_code == 0, from << ": " << replay.out);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "live session: absurd operator values are refused with the field and the bound, the session keeps stepping, "
    "and replays bit for bit") {
  const std::string dir = temp_dir("hostile-values");
  const int port = free_loopback_port();
  Process tether("run " + in_process_file + " --live " + std::to_string(port) +
                     " --paused --rtf 0 --steps 500 -q --set 'vehicles[0].feedback=[{name: blend, type: blend, "
                     "alpha: 0.1}, {name: adjust, type: vector_adjust}, {name: est, type: estimate, parameters: "
                     "[thrust, linear_drag, added_mass]}]' --out " +
                     dir,
                 dir);
  live::Client c;
  std::string error;
  REQUIRE_MESSAGE(connect(c, port, "", &error), error);
  json s = call(c, "/tether/step", {{"steps", 10}});
  REQUIRE(s["step"] == 10);
  auto refused = [&](const char* service, const json& request, const char* says) {
    const json r = call(c, service, request);
    CHECK_MESSAGE(r["ok"] == false, service << " " << request.dump() << ": " << r.dump());
    CHECK_MESSAGE(r.value("error", "").find(says) != std::string::npos, r.dump());
  };
  // apply_force: nothing to apply, a misspelt key, `duration` for `duration_s`, 1e308 N (it
  // once ended the session with a NaN), a torque, a point and a duration over their bounds
  refused("/tether/apply_force", {{"name", "p"}, {"body", "auv"}}, "\"force\" or \"torque\" is required");
  refused("/tether/apply_force", {{"name", "p"}, {"body", "auv"}, {"forse", {30, 0, 0}}}, "unknown key \"forse\"");
  refused("/tether/apply_force", {{"name", "p"}, {"body", "auv"}, {"force", {30, 0, 0}}, {"duration", 2}},
          "unknown key \"duration\"");
  refused("/tether/apply_force", {{"name", "p"}, {"body", "auv"}, {"force", {1e308, 0, 0}}},
          "1000 g on the 38 kg of vehicle auv");
  refused("/tether/apply_force", {{"name", "p"}, {"body", "auv"}, {"torque", {0, 0, 4e5}}}, "N·m");
  refused("/tether/apply_force", {{"name", "p"}, {"body", "auv"}, {"force", {1, 0, 0}}, {"point", {1e4, 0, 0}}},
          "at most 1000 m");
  refused("/tether/apply_force", {{"name", "p"}, {"body", "auv"}, {"force", {1, 0, 0}}, {"duration_s", 1e300}},
          "\"duration_s\" must be a finite number in 0..10000000");
  // run_until: past the clock's range (it once wrapped round and answered at once), in the
  // past, past the session's last step
  refused("/tether/run_until", {{"time_s", 9.3e9}}, "clock's range");
  refused("/tether/run_until", {{"time_s", 0.05}}, "not in the future");
  refused("/tether/run_until", {{"time_s", 6.0}}, "past the session's end at 5 s");
  // a gain outside the scenario key's range: refused with the range, the value kept, and
  // `tether ctl param set` prints the refusal and exits 1
  const std::string ctl = tether_exe + " ctl --url ws://127.0.0.1:" + std::to_string(port);
  for (const char* bad : {"feedback.blend.alpha 1.5", "feedback.blend.alpha -0.1", "feedback.blend.alpha 0",
                          "feedback.adjust.max_force_n 0", "feedback.adjust.max_force_n -5"}) {
    const Result r = run(ctl + " param set " + bad);
    CHECK_MESSAGE(r.exit_code == 1, bad << ": " << r.out);
    CHECK_MESSAGE(r.out.find("(its range in the scenario file)") != std::string::npos, bad << ": " << r.out);
  }
  Result r = run(ctl + " param get feedback.blend.alpha feedback.adjust.max_force_n");
  CHECK_MESSAGE(r.out.find("feedback.blend.alpha = 0.1") != std::string::npos, r.out);
  CHECK_MESSAGE(r.out.find("feedback.adjust.max_force_n = 1000") != std::string::npos, r.out);
  // the estimate's identifiable combinations are read live beside the gains (each with its
  // sigma), and cannot be set
  r = run(ctl + " param get");
  CHECK_MESSAGE(r.out.find("feedback.est.combinations.thrust_per_effective_mass = ") != std::string::npos, r.out);
  CHECK_MESSAGE(r.out.find("feedback.est.combinations.thrust_per_effective_mass_stddev = ") != std::string::npos,
                r.out);
  CHECK_MESSAGE(r.out.find("feedback.est.combinations.linear_drag_x_per_effective_mass = ") != std::string::npos,
                r.out);
  r = run(ctl + " param set feedback.est.combinations.thrust_per_effective_mass 2");
  CHECK_MESSAGE(r.exit_code == 1, r.out);
  CHECK_MESSAGE(r.out.find("is what the processor computes") != std::string::npos, r.out);
  // a value in range is taken; a sensible force too
  r = run(ctl + " param set feedback.blend.alpha 1");
  CHECK_MESSAGE(r.exit_code == 0, r.out);
  json ok =
      call(c, "/tether/apply_force", {{"name", "p"}, {"body", "auv"}, {"force", {30, 0, 0}}, {"duration_s", 0.5}});
  CHECK_MESSAGE(ok["ok"] == true, ok.dump());
  s = call(c, "/tether/run_until", {{"time_s", 2.0}});
  CHECK(s["step"] == 200);
  s = call(c, "/tether/step", {{"steps", 300}});
  CHECK(s["step"] == 500);
  CHECK(tether.wait() == 0);

  // only the two accepted commands were recorded; the session ended as planned and replays
  runtime::Recording rec;
  REQUIRE_MESSAGE(runtime::load_recording(dir + "/recording.mcap", rec, &error), error);
  std::size_t commands = 0;
  for (const auto& sc : rec.commands) commands += sc.commands.size();
  CHECK(commands == 2);
  // the events name the force's duration as written ("for 0.5 s", not "for 0.500000 s")
  bool named = false;
  for (const auto& e : rec.events) named |= e["message"].get<std::string>().find("for 0.5 s") != std::string::npos;
  CHECK(named);
  const json summary = json::parse(read_file(dir + "/summary.json"));
  CHECK(summary["outcome"] == "completed");
  const Result replay = run(tether_exe + " replay " + dir + "/recording.mcap --verify -q");
  CHECK_MESSAGE(replay.exit_code == 0, replay.out);
  std::filesystem::remove_all(dir);
}
