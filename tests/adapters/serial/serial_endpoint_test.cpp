// SPDX-License-Identifier: Apache-2.0
// The serial endpoint against real things: the host build of depth_heading_hold on a
// pseudo-terminal pair, a scriptable Python firmware (tests/adapters/serial/serial_fake_firmware.py)
// that goes silent, exits, sends garbage or speaks another protocol version, and a socat pty
// pair for `port:`. Sessions run at rtf 0; deadlines are generous where a test is not about
// deadlines, so a loaded machine does not change what is asserted.
#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "serial_test_util.hpp"
#include "tether/process/child_process.hpp"
#include "tether/hal/device_bank.hpp"
#include "tether/loop/device_world.hpp"

using namespace tether;
using namespace tether::adapters;
using namespace tether::adapters::test;
using runtime::Outcome;

namespace {

std::string host_endpoint(const std::string& policy, int deadline_ms, const std::string& name = "fw") {
  return "  - name: " + name + "\n    type: serial\n    vehicle: auv\n    launch: {command: ['" + host_firmware() +
         "']}\n    deadline_ms: " + std::to_string(deadline_ms) + "\n    timeout_policy: " + policy + "\n";
}

nlohmann::json endpoint_summary(SessionRun& run, std::size_t i = 0) { return run.session->summary()["endpoints"][i]; }

// A session in which an endpoint faults under policy hold or safe: every step still runs.
// (Whether the outcome then reads "completed" or names the fault is the session's business.)
void run_through_fault(SessionRun& run, std::uint64_t steps) {
  const Outcome outcome = run.run();
  CHECK(outcome != Outcome::aborted);
  CHECK(outcome != Outcome::failed);
  CHECK(outcome != Outcome::stopped);
  REQUIRE(run.session->steps_done() == steps);
}

}  // namespace

TEST_CASE("serial: the host firmware on a pty holds 2 m depth through 10,000 lock-step exchanges") {
  SessionRun run(auv_scenario(host_endpoint("block", 2000), 10000));
  REQUIRE(run.run() == Outcome::completed);
  SerialEndpoint& ep = run.endpoint();
  CHECK(ep.firmware_name() == "depth_heading_hold");
  CHECK(run.counters().replies + run.counters().late == 10000);
  CHECK(run.counters().misses == 0);
  CHECK(run.counters().faults == 0);
  CHECK(ep.link_counts().corrupt == 0);
  const SerialCounters c = ep.serial_counters();
  CHECK(c.garbage_bytes == 0);
  CHECK(c.malformed == 0);
  CHECK(c.logs >= 1);  // "target depth reached"
  CHECK(run.depth_m() == doctest::Approx(2.0).epsilon(0.05));
  const nlohmann::json s = endpoint_summary(run);
  CHECK(s["serial"]["firmware"] == "depth_heading_hold");
  CHECK(s["serial"]["opened_with"] == "pty master");
  CHECK(s["serial"]["devices_opened"].size() == 6);
  CHECK(s["serial"]["program_exit"] == "exited with status 0");  // it got STOP and returned
}

TEST_CASE("serial: busy_poll_us takes the replies without sleeping on the line, the lock-step unchanged") {
  // the fake firmware waits 5 ms before each ACTUATE, so a reply is not on the line yet when
  // gather() first looks (unless this process was held off the CPU for that long between
  // publish and gather, which a loaded machine does now and then, not for half the steps);
  // with the host firmware the replies raced the session and a loaded CI machine saw a third
  // of them polled
  auto run_with = [](const std::string& extra) {
    SessionRun run(auv_scenario(fake_endpoint("--reply-delay-ms 5", "block", 2000) + extra, 200));
    REQUIRE(run.run() == Outcome::completed);
    CHECK(run.counters().replies == 200);
    CHECK(run.counters().misses == 0);
    return run.session->summary();
  };
  const nlohmann::json plain = run_with("");
  // 100 ms of polling after each SENSORS: a reply 5 ms late is taken by a read that did not sleep
  const nlohmann::json polled = run_with("    busy_poll_us: 100000\n");
  const nlohmann::json& busy = polled["endpoints"][0]["serial"]["busy_poll"];
  CAPTURE(busy.dump());
  CHECK(busy["us"] == 100000);
  CHECK(busy["replies_polled"].get<std::uint64_t>() >= 100);
  CHECK_FALSE(plain["endpoints"][0]["serial"].contains("busy_poll"));
  CHECK(polled["state_hash"] == plain["state_hash"]);
  for (const char* bad : {"-1", "100001", "fast"}) {
    INFO(bad);
    try {
      (void)SessionRun(auv_scenario(host_endpoint("block", 2000) + "    busy_poll_us: " + bad + "\n", 5));
      FAIL("accepted");
    } catch (const runtime::ConfigError& e) {
      CHECK(std::string(e.what()).find("busy_poll_us") != std::string::npos);
    }
  }
}

TEST_CASE("serial: readings reach the firmware and its commands come back by bank index") {
  const runtime::Scenario sc = runtime::parse_scenario(
      auv_scenario(fake_endpoint("--log-readings --log-every 3", "block", 2000), 10), source_dir + "/x.yaml");
  auto endpoints = make_endpoints(sc);
  runtime::Endpoint& ep = *endpoints[0];
  hal::DeviceBank bank(sc.devices, 1, sc.model.bodies.size());
  runtime::DeviceWorld view(sc.model);
  ep.attach_devices(&bank);
  ep.start(sc.model, sc.initial);
  const int depth = bank.find("auv.hull.depth");
  const int left = bank.find("auv.hull.thruster_left");
  const int vrear = bank.find("auv.hull.thruster_vrear");
  runtime::WorldState state = sc.initial;
  runtime::Reply reply;
  for (std::uint64_t k = 1; k <= 6; ++k) {
    state.bodies[0].position_m.z() = -0.1 * static_cast<double>(k);  // sink 10 cm per step
    state.time_ns = static_cast<std::int64_t>(k) * 10'000'000;
    view.update(state, nullptr, 0.01);
    bank.sense(view, state.time_ns);
    const runtime::StepContext ctx{k, state.time_ns, 10'000'000};
    REQUIRE(ep.publish(ctx, state));
    REQUIRE(ep.gather(ctx, runtime::SteadyClock::now() + std::chrono::seconds(5), reply) ==
            runtime::GatherStatus::ready);
    CHECK(reply.step == k);
    // every actuator opened, commanded with (k % 1000) / 1000, named by its bank index
    REQUIRE(reply.commands.size() == 4);
    CHECK(reply.commands.front().device == left);
    CHECK(reply.commands.back().device == vrear);
    CHECK(tether_get_f32le(reply.commands.front().bytes.data()) == doctest::Approx(0.001 * static_cast<double>(k)));
    // the firmware saw this step's depth reading (slot 0 is the first device of the table)
    REQUIRE(!reply.logs.empty());
    const std::uint8_t* data = nullptr;
    std::size_t size = 0;
    REQUIRE(bank.reading(static_cast<std::size_t>(depth), data, size) == hal::Status::ok);
    char expected[32];
    std::snprintf(expected, sizeof expected, "0:%.4f", static_cast<double>(tether_get_f32le(data)));
    CHECK(reply.logs.front().text.rfind(expected, 0) == 0);
    if (k % 3 == 0) CHECK(reply.logs.back().text == "step " + std::to_string(k));
  }
  // the safe reply: every actuator of the vehicle, zero
  ep.safe_reply(reply);
  CHECK(reply.commands.size() == 4);
  for (const auto& c : reply.commands) CHECK(tether_get_f32le(c.bytes.data()) == 0.0f);
  ep.stop();
  ep.stop();  // twice is fine
}

TEST_CASE("serial: firmware that goes silent at step 20, policy hold: the last reply stays applied") {
  // 100 ms: each silent step has room for several re-sends (every 20 ms); at 30 ms it had one
  // chance, lost when the loop woke 10 ms late on a loaded machine
  SessionRun run(auv_scenario(fake_endpoint("--silent-at 20", "hold", 100), 30));
  REQUIRE(run.run() == Outcome::completed);
  SerialEndpoint& ep = run.endpoint();
  CHECK(run.counters().misses >= 10);
  CHECK(run.counters().faults == 0);
  CHECK(ep.serial_counters().resent >= 10);  // it asked again each silent step
  const float left = run.device_f32("auv.hull.thruster_left");
  CHECK(left > 0.0f);
  CHECK(left < 0.0195f);  // a command of a step before 20
}

TEST_CASE("serial: firmware that goes silent at step 20, policy safe: the configured safe commands") {
  SessionRun run(auv_scenario(fake_endpoint("--silent-at 20", "safe", 30, "    safe: {thruster_left: -0.5}\n"), 30));
  REQUIRE(run.run() == Outcome::completed);
  CHECK(run.counters().misses >= 10);
  CHECK(run.device_f32("auv.hull.thruster_left") == -0.5f);
  CHECK(run.device_f32("auv.hull.thruster_right") == 0.0f);  // unnamed actuators: zero
}

TEST_CASE("serial: firmware that goes silent at step 5, policy abort: the session stops cleanly") {
  SessionRun run(auv_scenario(fake_endpoint("--silent-at 5", "abort", 300), 30));
  CHECK(run.run() == Outcome::aborted);
  CHECK(run.session->abort_reason().find("missed its deadline at step") != std::string::npos);
  CHECK(run.session->steps_done() <= 5);
  const nlohmann::json s = run.session->summary();
  CHECK(s["endpoints"][0]["serial"]["firmware"] == "fake_fw");
}

TEST_CASE("serial: firmware that goes silent at step 5, policy block: waits, re-sending SENSORS, until stopped") {
  // the re-sends counted from step 5 on: a reply slower than resend_ms before the silence
  // (a loaded machine) is re-sent too, and must not stop the session before step 5
  runtime::SessionOptions options;
  SessionRun* self = nullptr;
  std::atomic<std::uint64_t> resent_at_silence{0};
  std::atomic<bool> silent{false};
  options.after_step = [&](const runtime::WorldState& s) {
    if (s.step == 5) {  // S_5: steps 0 to 4 answered, SENSORS(5) goes unanswered
      resent_at_silence = dynamic_cast<SerialEndpoint&>(*self->session->endpoints()[0]).serial_counters().resent;
      silent = true;
    }
    return true;
  };
  SessionRun run(auv_scenario(fake_endpoint("--silent-at 5", "block", 50), 30), options);
  self = &run;
  std::thread stopper([&] {
    // stop once the endpoint has asked again a few times in the silence (or after 20 s, so
    // the test ends)
    for (int i = 0; i < 4000; ++i) {
      if (silent &&
          dynamic_cast<SerialEndpoint&>(*run.session->endpoints()[0]).serial_counters().resent >= resent_at_silence + 3)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    run.stop = true;
  });
  Outcome outcome = Outcome::completed;
  try {
    outcome = run.run();
  } catch (...) {
    run.stop = true;
    stopper.join();
    throw;
  }
  stopper.join();
  CHECK(outcome == Outcome::stopped);
  CHECK(silent);  // the hook saw step 5: the re-sends above were counted from the silence on
  CHECK(run.session->steps_done() == 5);
  CHECK(run.endpoint().serial_counters().resent >= resent_at_silence + 3);
}

TEST_CASE("serial: garbage on the line mid-stream is dropped, counted, and the stream resynchronizes") {
  SessionRun run(auv_scenario(fake_endpoint("--garbage-at 10 --stale-at 14", "block", 2000), 20));
  REQUIRE(run.run() == Outcome::completed);
  SerialEndpoint& ep = run.endpoint();
  CHECK(run.counters().misses == 0);
  CHECK(run.counters().replies + run.counters().late == 20);
  const SerialCounters c = ep.serial_counters();
  CHECK(c.garbage_bytes > 10);
  CHECK(c.dropped_frames() >= 2);
  // ACTUATE(13) again before ACTUATE(14), and ACTUATE(14) twice: the second is a duplicate if
  // it arrives before SENSORS(15) goes out, stale after; either way counted, never applied
  CHECK(c.stale >= 1);
  CHECK(c.stale + c.duplicate >= 2);
  CHECK(ep.link_counts().corrupt >= 2);
  CHECK(ep.link_counts().stale >= 2);
  // the command applied at the end is the last step's, not a stale one
  CHECK(run.device_f32("auv.hull.thruster_left") == doctest::Approx(0.019));
}

TEST_CASE("serial: a reply that left before its step's SENSORS is premature and never applied, the genuine one is") {
  // The fake answers SENSORS(k) and then, X ms later, ACTUATE(k+1) commanding -0.5 (computed
  // from old readings) unless SENSORS(k+1) has come by then; it answers SENSORS(k+1) itself
  // too. Had an early reply been applied, the genuine one would be counted duplicate and a
  // thruster would read -0.5.
  struct Case {
    double rtf, ahead_ms, period_ms;
  };
  for (const Case k : {Case{1, 0.1, 20}, Case{1, 3, 20}, Case{0, 0, 10}}) {
    CAPTURE(k.rtf);
    CAPTURE(k.ahead_ms);
    constexpr int steps = 30;
    std::string text =
        auv_scenario(fake_endpoint("--ahead-ms " + std::to_string(k.ahead_ms), "hold", 2000), steps, k.period_ms);
    const std::string rtf0 = "real_time_factor: 0,";
    text.replace(text.find(rtf0), rtf0.size(), "real_time_factor: " + std::to_string(k.rtf) + ",");
    SessionRun run(text);
    REQUIRE(run.run() == Outcome::completed);
    const SerialCounters c = run.endpoint().serial_counters();
    CHECK(run.counters().misses == 0);
    CHECK(run.counters().replies == steps);
    CHECK(c.duplicate == 0);
    CHECK(c.stale == 0);
    // an early reply the fake skipped (SENSORS(k+1) was there first, a busy machine) is not
    // sent at all; most are sent, and each is counted
    CHECK(c.premature >= steps / 2);
    CHECK(c.premature <= steps);
    // the loop's count, as of the last gather (the early reply after it came later)
    CHECK(run.endpoint().link_counts().stale <= c.premature);
    CHECK(run.endpoint().link_counts().stale + 1 >= c.premature);
    for (const char* t : {"auv.hull.thruster_left", "auv.hull.thruster_vrear"})
      CHECK(run.device_f32(t) == doctest::Approx((steps - 1) / 1000.0));
  }
}

TEST_CASE("serial: a lost SENSORS is recovered by re-sending it, without a miss") {
  SessionRun run(auv_scenario(fake_endpoint("--drop-at 7", "hold", 3000), 12));
  REQUIRE(run.run() == Outcome::completed);
  CHECK(run.counters().misses == 0);
  CHECK(run.endpoint().serial_counters().resent >= 1);
}

TEST_CASE("serial: firmware that exits mid-run is reported with its exit status and step") {
  SessionRun run(auv_scenario(fake_endpoint("--exit-at 7 --status 3", "hold", 5000), 15));
  run_through_fault(run, 15);  // hold: the session goes on with the last reply
  SerialEndpoint& ep = run.endpoint();
  CHECK(run.counters().faults >= 1);
  CHECK(ep.fault_message().find("firmware process exited with status 3 at step 7") != std::string::npos);
  CHECK(ep.fault_message().find("exiting at step 7 as told") != std::string::npos);  // its last words
  const nlohmann::json s = endpoint_summary(run);
  CHECK(s["fault"].get<std::string>().find("exited with status 3") != std::string::npos);
  CHECK(s["serial"]["program_exit"] == "exited with status 3");
}

TEST_CASE("serial: the host firmware killed mid-run: fault reported, summary intact") {
  runtime::SessionOptions options;
  std::uint64_t steps = 0;
  SessionRun* self = nullptr;
  options.after_step = [&](const runtime::WorldState&) {
    if (++steps == 300) {
      const auto pid = dynamic_cast<SerialEndpoint&>(*self->session->endpoints()[0]).child_pid();
      REQUIRE(pid);
      kill(*pid, SIGKILL);
    }
    return true;
  };
  SessionRun run(auv_scenario(host_endpoint("hold", 5000), 600), options);
  self = &run;
  run_through_fault(run, 600);
  SerialEndpoint& ep = run.endpoint();
  CHECK(run.counters().faults >= 1);
  CHECK(run.counters().replies + run.counters().late >= 300);
  CHECK(ep.fault_message().find("firmware process was killed by signal 9 (SIGKILL) at step 30") != std::string::npos);
  const nlohmann::json s = run.session->summary();
  CHECK(s["endpoints"][0]["serial"]["program_exit"] == "was killed by signal 9 (SIGKILL)");
  CHECK(s["endpoints"][0]["serial"]["firmware"] == "depth_heading_hold");
  CHECK(s["steps"].get<std::uint64_t>() == 600);
}

TEST_CASE("serial: a launched program that closes its pty but stays alive: 'serial line closed' at that step") {
  // the fake firmware closes its end of the pty on SENSORS(7) and sleeps; only the hang-up
  // says something is wrong (before, the runtime held the slave open and saw only misses)
  SessionRun run(auv_scenario(fake_endpoint("--close-at 7", "hold", 5000), 15));
  run_through_fault(run, 15);
  SerialEndpoint& ep = run.endpoint();
  CHECK(run.counters().faults >= 1);
  const std::string& m = ep.fault_message();
  INFO(m);
  CHECK(m.rfind("serial line closed at step 7: hang-up: the program closed its end of /dev/pts/", 0) == 0);
  CHECK(m.find("(read: Input/output error)") != std::string::npos);
  // it was alive at the fault: it ended only when stop() terminated it
  const nlohmann::json s = endpoint_summary(run);
  CHECK(s["serial"]["program_exit"] == "was killed by signal 15 (SIGTERM)");
  CHECK(s["fault"].get<std::string>().find("serial line closed at step 7") != std::string::npos);
}

TEST_CASE("serial: an ERROR from the firmware mid-run is a fault with the firmware's text") {
  SessionRun run(auv_scenario(fake_endpoint("--error-at 6", "hold", 5000), 10));
  run_through_fault(run, 10);
  const std::string& m = run.endpoint().fault_message();
  CHECK(m.find("fake firmware gives up") != std::string::npos);
  CHECK(m.find("at step 6") != std::string::npos);
}

TEST_CASE("serial: a protocol version mismatch stops start() with both versions named") {
  const runtime::Scenario sc = runtime::parse_scenario(
      auv_scenario(fake_endpoint("--version 2 --hello-repeats 2", "block", 100), 10), source_dir + "/x.yaml");
  auto endpoints = make_endpoints(sc);
  auto& ep = dynamic_cast<SerialEndpoint&>(*endpoints[0]);
  std::string message;
  try {
    ep.start(sc.model, sc.initial);
  } catch (const std::runtime_error& e) {
    message = e.what();
  }
  CHECK(message ==
        "protocol version mismatch: firmware `fake_fw` speaks protocol version 2, this runtime speaks version 1");
  // the firmware was told (ERROR VERSION_MISMATCH) and exited by itself with its status 4
  nlohmann::json s;
  ep.summarize(s);
  CHECK(s["serial"]["program_exit"] == "exited with status 4");
}

TEST_CASE("serial: a program that is not there, or exits before HELLO, fails start() clearly") {
  auto start_error = [](const std::string& endpoint) {
    SessionRun run(auv_scenario(endpoint, 10));
    try {
      run.run();
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  SUBCASE("not there") {
    const std::string m =
        start_error("  - {name: fw, type: serial, vehicle: auv, launch: {command: [/nonexistent/firmware]}}\n");
    CHECK(m.find("cannot run /nonexistent/firmware: No such file or directory") != std::string::npos);
  }
  SUBCASE("exits at once") {
    const std::string m = start_error(
        "  - {name: fw, type: serial, vehicle: auv, launch: {command: [sh, -c, 'echo no luck >&2; exit 9']}}\n");
    CHECK(m.find("exited with status 9 before the handshake ended") != std::string::npos);
    CHECK(m.find("no luck") != std::string::npos);
  }
  SUBCASE("silent") {
    const std::string m = start_error(
        "  - {name: fw, type: serial, vehicle: auv, handshake_timeout_ms: 200, launch: {command: [sleep, '30']}}\n");
    CHECK(m.find("no HELLO from the firmware") != std::string::npos);
    CHECK(m.find("nothing was received") != std::string::npos);
  }
}

TEST_CASE("serial: two firmware endpoints in one scenario, gathered in the same steps") {
  // the host firmware drives the AUV; a Python firmware drives a second vehicle
  std::string text =
      auv_scenario(host_endpoint("block", 3000, "auv_fw") + fake_endpoint("", "block", 3000, "", "rov_fw", "rov"), 300);
  const std::string rov = R"(  - name: rov
    bodies:
      - name: frame
        shape: {type: box, size_m: [0.5, 0.4, 0.3]}
        mass_kg: 61.5
        initial: {position_m: [10, 0, -1]}
        devices:
          - {name: depth, kind: depth}
          - {name: thruster, kind: thruster}
loop:)";
  text.replace(text.find("loop:"), 5, rov);
  SessionRun run(text);
  REQUIRE(run.run() == Outcome::completed);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(run.counters(i).replies + run.counters(i).late == 300);
    CHECK(run.counters(i).faults == 0);
  }
  CHECK(run.endpoint(1).config().table.size() == 2);  // only the rov's devices
  CHECK(run.device_f32("rov.frame.thruster") == doctest::Approx(0.299));
}

TEST_CASE("serial: `port:` opens an existing pseudo-terminal with termios (socat pair)") {
  if (!have_tool("socat")) {
    MESSAGE("socat not installed: skipped");
    return;
  }
  const std::string dir = binary_dir + "/serial_test/socat_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  ChildProcess socat(
      {{"socat", "pty,raw,echo=0,link=" + dir + "/runtime", "pty,raw,echo=0,link=" + dir + "/firmware"}, {}, {}});
  for (int i = 0; i < 500 && !(std::filesystem::exists(dir + "/runtime") && std::filesystem::exists(dir + "/firmware"));
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(std::filesystem::exists(dir + "/firmware"));
  ChildProcess fw({{"python3", fake_firmware(), "--name", "on_socat"}, {{"TETHER_PORT", dir + "/firmware"}}, {}});
  SessionRun run(auv_scenario("  - {name: fw, type: serial, vehicle: auv, port: " + dir +
                                  "/runtime, baud: 57600, parity: even, deadline_ms: 3000, timeout_policy: block}\n",
                              50));
  REQUIRE(run.run() == Outcome::completed);
  CHECK(run.counters().replies + run.counters().late == 50);
  const nlohmann::json s = endpoint_summary(run);
  CHECK(s["serial"]["opened_with"] == "termios");
  CHECK(s["serial"]["line"] == dir + "/runtime");
  CHECK(s["serial"]["firmware"] == "on_socat");
  CHECK(fw.wait_for(std::chrono::seconds(5)).has_value());  // STOP ended it
  socat.terminate(std::chrono::milliseconds(1000));
  std::filesystem::remove_all(dir);
}
