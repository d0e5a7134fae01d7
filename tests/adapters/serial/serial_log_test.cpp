// SPDX-License-Identifier: Apache-2.0
// Firmware LOG lines through the serial endpoint: the per-endpoint rate limit (keys
// log_lines_per_s and log_burst, docs/serial.md) against a firmware that floods LOG, and the
// level a LOG line is logged at.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "serial_test_util.hpp"

using namespace tether;
using namespace tether::adapters;
using namespace tether::adapters::test;
using runtime::Outcome;

namespace {

// the config errors of a scenario whose only endpoint is `endpoint`, one string
std::string config_errors(const std::string& endpoint) {
  try {
    const runtime::Scenario sc =
        runtime::parse_scenario(auv_scenario(endpoint, 10), source_dir + "/config/scenarios/t.yaml");
    (void)make_endpoints(sc);
  } catch (const runtime::ConfigError& e) {
    std::string all;
    for (const auto& line : e.errors()) all += line + "\n";
    return all;
  }
  return "";
}

SerialEndpointConfig parsed(const std::string& endpoint) {
  const runtime::Scenario sc =
      runtime::parse_scenario(auv_scenario(endpoint, 10), source_dir + "/config/scenarios/t.yaml");
  auto endpoints = make_endpoints(sc);
  return dynamic_cast<SerialEndpoint&>(*endpoints[0]).config();
}

}  // namespace

TEST_CASE("serial config: log_lines_per_s and log_burst - defaults, values, range errors") {
  const SerialEndpointConfig d = parsed("  - {name: fw, type: serial, vehicle: auv, port: /dev/x}\n");
  CHECK(d.log_lines_per_s == 50);
  CHECK(d.log_burst == 200);
  const SerialEndpointConfig c =
      parsed("  - {name: fw, type: serial, vehicle: auv, port: /dev/x, log_lines_per_s: 0, log_burst: 7}\n");
  CHECK(c.log_lines_per_s == 0);  // no limit
  CHECK(c.log_burst == 7);
  const std::string burst = config_errors("  - {name: fw, type: serial, vehicle: auv, port: /dev/x, log_burst: 0}\n");
  CHECK(burst.find("t.yaml:") != std::string::npos);
  CHECK(burst.find("log_burst") != std::string::npos);
  const std::string rate =
      config_errors("  - {name: fw, type: serial, vehicle: auv, port: /dev/x, log_lines_per_s: -1}\n");
  CHECK(rate.find("log_lines_per_s") != std::string::npos);
  CHECK(config_errors("  - {name: fw, type: serial, vehicle: auv, port: /dev/x, log_lines_per_s: many}\n")
            .find("log_lines_per_s") != std::string::npos);
  // a misspelt key is a positioned error like any other
  CHECK(config_errors("  - {name: fw, type: serial, vehicle: auv, port: /dev/x, log_rate: 5}\n").find("log_rate") !=
        std::string::npos);
}

TEST_CASE("serial: a firmware flooding LOG is rate limited - counted, reported once, the rest logged") {
  std::string keys;
  double per_s = 50, burst = 200;
  SUBCASE("the defaults: 50 lines/s, burst 200") {}
  SUBCASE("configured: 2 lines/s, burst 10") {
    keys = "    log_lines_per_s: 2\n    log_burst: 10\n";
    per_s = 2;
    burst = 10;
  }
  LogCapture log;
  // 4,000 LOG lines at once before ACTUATE(3)
  SessionRun run(auv_scenario(fake_endpoint("--flood-at 3 --flood-count 4000", "block", 30000, keys), 6));
  const auto t0 = runtime::SteadyClock::now();
  REQUIRE(run.run() == Outcome::completed);
  const double elapsed_s = std::chrono::duration<double>(runtime::SteadyClock::now() - t0).count();
  const SerialCounters c = run.endpoint().serial_counters();
  CHECK(c.logs == 4000);
  CHECK(c.logs_suppressed > 0);
  // every line that passed reached the console (through the session), no other did
  const auto shown = static_cast<double>(log.containing("[fw] flood ").size());
  CHECK(shown == static_cast<double>(c.logs - c.logs_suppressed - c.logs_dropped));
  // the bucket starts full, then refills at most per_s for as long as the session ran
  CHECK(shown >= burst);
  CHECK(shown <= burst + per_s * elapsed_s + 1);
  const nlohmann::json s = run.session->summary()["endpoints"][0]["serial"]["counters"];
  CHECK(s["logs"] == 4000);
  CHECK(s["logs_suppressed"] == c.logs_suppressed);
  // one warning line with the count, at the end
  const auto warnings = log.containing("firmware LOG lines were suppressed by the rate limit");
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].first == spdlog::level::warn);
  CHECK(warnings[0].second.find("endpoint \"fw\": " + std::to_string(c.logs_suppressed) +
                                " of 4000 firmware LOG lines were suppressed") == 0);
}

TEST_CASE("serial: without a flood nothing is suppressed and nothing is warned") {
  LogCapture log;
  SessionRun run(auv_scenario(fake_endpoint("--log-every 2", "block", 30000), 20));
  REQUIRE(run.run() == Outcome::completed);
  const SerialCounters c = run.endpoint().serial_counters();
  CHECK(c.logs == 10);
  CHECK(c.logs_suppressed == 0);
  CHECK(log.containing("[fw] step ").size() == 10);
  CHECK(log.containing("suppressed").empty());
}

TEST_CASE("serial: a LOG line of the handshake is logged at its level - warning is a warning") {
  struct Case {
    int level;
    spdlog::level::level_enum expected;
  };
  for (const Case k : {Case{0, spdlog::level::info}, Case{1, spdlog::level::warn}, Case{2, spdlog::level::err}}) {
    CAPTURE(k.level);
    LogCapture log;
    SessionRun run(auv_scenario(
        fake_endpoint("--log-before-ready calibrating --flood-level " + std::to_string(k.level), "block", 30000), 2));
    REQUIRE(run.run() == Outcome::completed);
    const auto lines = log.containing("[fw] calibrating");
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].first == k.expected);
  }
}

TEST_CASE("serial: a LOG line that comes between steps is read while the loop waits elsewhere, and kept") {
  // The fake firmware sends a LOG line 0.5 s after ACTUATE(5). The loop is then in its
  // after-step hook, not in gather(): only the I/O thread's reads between steps can take it
  // in (the loop thread reads the line itself only from publish() to the end of gather()).
  LogCapture log;
  SerialEndpoint* ep = nullptr;
  bool waited = false;
  std::uint64_t logs_before = 0, logs_after = 0;
  runtime::SessionOptions options;
  options.after_step = [&](const runtime::WorldState& s) {
    if (s.step != 6) return true;  // S_6: step 5 (SENSORS(5), ACTUATE(5)) is done
    waited = true;
    logs_before = ep->serial_counters().logs;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (ep->serial_counters().logs == logs_before && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    logs_after = ep->serial_counters().logs;
    return true;
  };
  SessionRun run(auv_scenario(fake_endpoint("--late-log-at 5", "block", 30000), 10), options);
  ep = &run.endpoint();
  REQUIRE(run.run() == Outcome::completed);
  REQUIRE(waited);
  CHECK(logs_before == 0);
  CHECK(logs_after == 1);  // read while no gather() ran
  CHECK(run.endpoint().serial_counters().logs == 1);
  CHECK(run.counters().replies == 10);
  CHECK(log.containing("[fw] late log after step 5").size() == 1);  // nothing lost
}
