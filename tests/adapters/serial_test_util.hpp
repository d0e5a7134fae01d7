// SPDX-License-Identifier: Apache-2.0
// Shared by the serial endpoint tests: where the firmware under test lives, scenarios with
// the devices examples/firmware/depth_heading_hold.c opens, and a session runner.
#pragma once

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include "test_paths.hpp"
#include "tether/endpoints/endpoint_factory.hpp"
#include "tether/serial/serial_endpoint.hpp"
#include "tether/firmware_shim/payloads.h"
#include "tether/scenario/scenario.hpp"
#include "tether/loop/session.hpp"

namespace tether::adapters::test {

inline const std::string source_dir = TETHER_SOURCE_DIR;
inline const std::string binary_dir = TETHER_BINARY_DIR;

/// The Python firmware stand-in that misbehaves on request.
inline std::string fake_firmware() { return source_dir + "/tests/adapters/serial/serial_fake_firmware.py"; }

inline bool have_tool(const std::string& tool) {
  return std::system(("command -v " + tool + " >/dev/null 2>&1").c_str()) == 0;
}

inline bool newer_than(const std::string& a, const std::vector<std::string>& sources) {
  std::error_code ec;
  const auto t = std::filesystem::last_write_time(a, ec);
  if (ec) return false;
  for (const auto& s : sources)
    if (std::filesystem::last_write_time(s, ec) > t) return false;
  return true;
}

/// The firmware sources every build depends on (for "is the build up to date").
inline std::vector<std::string> firmware_sources() {
  std::vector<std::string> out;
  for (const auto& dir : {"/examples/firmware", "/firmware_shim/src", "/firmware_shim/include/tether/firmware_shim",
                          "/firmware_shim/ports/posix", "/firmware_shim/ports/cortex_m3"})
    for (const auto& e : std::filesystem::directory_iterator(source_dir + dir)) out.push_back(e.path().string());
  return out;
}

/// `file` (relative to a build_firmware.sh output folder) from the tests' scratch folder,
/// built with scripts/build_firmware.sh `target` unless it is newer than the sources. Built in
/// a folder of this process and renamed into place, so parallel test processes never see a
/// half-written binary.
inline std::string scratch_firmware(const std::string& target, const std::string& file) {
  const std::string out = binary_dir + "/serial_test/firmware";
  const std::string path = out + "/" + file;
  if (newer_than(path, firmware_sources())) return path;
  const std::string tmp = out + ".tmp." + std::to_string(getpid());
  const std::string cmd =
      "TETHER_FIRMWARE_OUT='" + tmp + "' '" + source_dir + "/scripts/build_firmware.sh' " + target + " >/dev/null";
  INFO(cmd);
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::filesystem::rename(tmp + "/" + file, path);
  std::filesystem::remove_all(tmp);
  return path;
}

/// The host build of depth_heading_hold: CMake's (build/firmware/host), or, if that target
/// was not built, one made by scripts/build_firmware.sh host.
inline std::string host_firmware() {
  const std::string cmake_built = binary_dir + "/firmware/host/depth_heading_hold";
  if (newer_than(cmake_built, firmware_sources())) return cmake_built;
  return scratch_firmware("host", "host/depth_heading_hold");
}

/// An AUV with the devices depth_heading_hold opens, neutrally buoyant, in a long tank;
/// `endpoints` is the YAML list under `endpoints:`.
inline std::string auv_scenario(const std::string& endpoints, int steps, double period_ms = 10) {
  return R"(name: serial_test
world:
  gravity_m_s2: [0, 0, -9.81]
  water: {density_kg_m3: 1025, surface_z_m: 0}
  tank: {size_m: [60, 10, 8], floor_z_m: -8}
vehicles:
  - name: auv
    bodies:
      - name: hull
        shape: {type: cylinder, radius_m: 0.1, length_m: 1.2}
        mass_kg: 38.64
        centre_of_buoyancy_m: [0, 0, 0.02]
        damping: {linear: [10, 30, 30], quadratic: [20, 80, 80], angular_linear: [2, 6, 6], angular_quadratic: [1, 4, 4]}
        initial: {position_m: [-25, 0, -0.2]}
        devices:
          - {name: depth, kind: depth}
          - {name: compass, kind: compass}
          - {name: thruster_left, kind: thruster, mount: {position_m: [-0.55, 0.14, 0]}, params: {max_thrust_n: 20}}
          - {name: thruster_right, kind: thruster, mount: {position_m: [-0.55, -0.14, 0]}, params: {max_thrust_n: 20}}
          - {name: thruster_vfront, kind: thruster, mount: {position_m: [0.35, 0, 0], orientation_rpy_deg: [0, 90, 0]}, params: {max_thrust_n: 10}}
          - {name: thruster_vrear, kind: thruster, mount: {position_m: [-0.35, 0, 0], orientation_rpy_deg: [0, 90, 0]}, params: {max_thrust_n: 10}}
loop: {period_ms: )" +
         std::to_string(period_ms) + ", real_time_factor: 0, steps: " + std::to_string(steps) +
         R"(}
recording: {enabled: false}
endpoints:
)" + endpoints;
}

/// A session over a parsed scenario; keeps the scenario alive as long as the session.
struct SessionRun {
  runtime::Scenario scenario;
  std::unique_ptr<runtime::Session> session;
  std::atomic<bool> stop{false};
  runtime::Outcome outcome = runtime::Outcome::completed;

  explicit SessionRun(const std::string& text, runtime::SessionOptions options = {})
      : scenario(runtime::parse_scenario(text, source_dir + "/tests/adapters/serial_test.yaml")) {
    session = std::make_unique<runtime::Session>(scenario, make_endpoints(scenario), std::move(options));
  }
  runtime::Outcome run() { return outcome = session->run(stop); }
  SerialEndpoint& endpoint(std::size_t i = 0) { return dynamic_cast<SerialEndpoint&>(*session->endpoints()[i]); }
  /// What the session counted of endpoint i's steps (what its link saw: endpoint(i).link_counts()).
  const runtime::EndpointCounters& counters(std::size_t i = 0) const { return session->endpoint_counters(i); }
  /// The float a device's last command (or reading) starts with.
  float device_f32(const std::string& name) const {
    const int idx = session->devices().find(name);
    REQUIRE(idx >= 0);
    const std::uint8_t* data = nullptr;
    std::size_t size = 0;
    (void)session->devices().reading(static_cast<std::size_t>(idx), data, size);
    REQUIRE(size >= 4);
    return tether_get_f32le(data);
  }
  double depth_m() const { return -session->state().bodies[0].position_m.z(); }
};

/// An endpoint entry that launches the fake firmware with extra arguments.
inline std::string fake_endpoint(const std::string& args, const std::string& policy, int deadline_ms,
                                 const std::string& extra = "", const std::string& name = "fw",
                                 const std::string& vehicle = "auv") {
  std::string cmd = "[python3, '" + fake_firmware() + "'";
  std::string a = args;
  std::size_t at = 0;
  while (at < a.size()) {
    std::size_t end = a.find(' ', at);
    if (end == std::string::npos) end = a.size();
    if (end > at) cmd += ", '" + a.substr(at, end - at) + "'";
    at = end + 1;
  }
  cmd += "]";
  return "  - name: " + name + "\n    type: serial\n    vehicle: " + vehicle + "\n    launch: {command: " + cmd +
         "}\n    deadline_ms: " + std::to_string(deadline_ms) + "\n    timeout_policy: " + policy + "\n" + extra;
}

/// Everything the default logger writes while it lives (level and text), e.g. the lines a
/// session prints for a firmware's LOG.
class LogCapture {
 public:
  using Line = std::pair<spdlog::level::level_enum, std::string>;
  LogCapture() : sink_(std::make_shared<Sink>()) { spdlog::default_logger()->sinks().push_back(sink_); }
  ~LogCapture() {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::vector<Line> lines() const { return sink_->snapshot(); }
  /// The lines that contain `text`.
  std::vector<Line> containing(const std::string& text) const {
    std::vector<Line> out;
    for (auto& l : lines())
      if (l.second.find(text) != std::string::npos) out.push_back(l);
    return out;
  }

 private:
  class Sink : public spdlog::sinks::base_sink<std::mutex> {
   public:
    std::vector<Line> snapshot() {
      std::lock_guard<std::mutex> lock(mutex_);
      return lines_;
    }

   protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
      lines_.emplace_back(msg.level, std::string(msg.payload.data(), msg.payload.size()));
    }
    void flush_() override {}

   private:
    std::vector<Line> lines_;
  };
  std::shared_ptr<Sink> sink_;
};

}  // namespace tether::adapters::test
