// SPDX-License-Identifier: Apache-2.0
// Lock-step with a fleet: N vehicles (1, 2, 4, 8), each an in-process depth/heading law and a
// stand-in vehicle program (tether-vehicle) on MQTT, `tether run` at rtf 0 under policy
// block, with every vehicle
//   direct:  on the session's broker
//   bridged: on one rig broker bridged to the session's broker (one bridge hop, laid out as
//            docs/mqtt.md "Several rigs" says: a bridge connection per vehicle, its topics
//            both ways at QoS 0)
// Prints, for each: steps per second, vehicle-steps per second (steps x N), and the
// vehicles' round trips (p50 of their p50s, the worst p99), and the ratio of the per-
// vehicle-step rate with 8 vehicles through the bridge to one vehicle on one broker
// (goal >= 0.8: the session's own cost per vehicle does not grow with the fleet).
// Usage: mqtt_rigs [--quick] [--steps N]   (--quick: 1 and 2 vehicles, 100 steps)
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "../tests/adapters/mosquitto_util.hpp"
#include "bench_util.hpp"
#include "test_paths.hpp"

namespace bench = tether::bench;
namespace fs = std::filesystem;

namespace {

const std::string tether_exe = TETHER_BINARY_DIR + "/tether";

std::string vehicle(int i) {
  return "  - name: auv" + std::to_string(i) + R"(
    bodies:
      - name: hull
        shape: {type: cylinder, radius_m: 0.1, length_m: 1.2}
        mass_kg: 38.0
        centre_of_buoyancy_m: [0, 0, 0.02]
        damping: {linear: [10, 30, 30], quadratic: [20, 80, 80], angular_linear: [2, 6, 6], angular_quadratic: [1, 4, 4]}
        initial: {position_m: [-35, )" +
         std::to_string(-8 + 2 * i) + R"(, -0.2]}
        devices:
          - {name: depth, kind: depth}
          - {name: compass, kind: compass}
          - {name: thruster_left, kind: thruster, mount: {position_m: [-0.55, 0.14, 0]}, params: {max_thrust_n: 20}}
          - {name: thruster_right, kind: thruster, mount: {position_m: [-0.55, -0.14, 0]}, params: {max_thrust_n: 20}}
          - {name: thruster_vfront, kind: thruster, mount: {position_m: [0.35, 0, 0], orientation_rpy_deg: [0, 90, 0]}, params: {max_thrust_n: 15}}
          - {name: thruster_vrear, kind: thruster, mount: {position_m: [-0.35, 0, 0], orientation_rpy_deg: [0, 90, 0]}, params: {max_thrust_n: 15}}
)";
}

std::string endpoints(int i, const std::string& central, const std::string& rig) {
  const std::string n = "auv" + std::to_string(i);
  return "  - {name: " + n + "_controller, type: in_process, vehicle: " + n +
         ", controller: depth_heading_hold, deadline_ms: 5}\n  - {name: " + n + "_tank, type: mqtt, vehicle: " + n +
         ", broker: \"" + central +
         "\", session: fleet, qos: 1, publish_actual: false, deadline_ms: 5000, timeout_policy: block, launch: "
         "{command: [\"" +
         TETHER_BINARY_DIR + "/tether-vehicle\", \"--scenario\", \"{scenario}\", \"--vehicle\", \"" + n +
         "\", \"--broker\", \"" + rig +
         "\", \"--session\", \"{session}\", \"--vehicle-id\", \"{vehicle_id}\", \"--quiet\"]}}\n";
}

std::string scenario(int vehicles, long steps, const std::string& central, const std::string& rig) {
  std::string s =
      "name: fleet\nworld:\n  gravity_m_s2: [0, 0, -9.81]\n  water: {density_kg_m3: 1025, surface_z_m: 0}\n"
      "  tank: {size_m: [80, 20, 8], floor_z_m: -8}\nvehicles:\n";
  for (int i = 1; i <= vehicles; ++i) s += vehicle(i);
  s += "loop: {period_ms: 10, real_time_factor: 0, steps: " + std::to_string(steps) +
       ", seed: 3}\nrecording: {enabled: false}\nendpoints:\n";
  for (int i = 1; i <= vehicles; ++i) s += endpoints(i, central, rig);
  return s;
}

struct Result {
  bool ok = false;
  double steps_per_s = 0;
  double p50_us = 0;  // the median of the vehicles' p50 round trips
  double p99_us = 0;  // the worst vehicle's p99
};

Result run_fleet(const fs::path& dir, int vehicles, long steps, const std::string& central, const std::string& rig) {
  const fs::path file = dir / "fleet.yaml";
  std::ofstream(file) << scenario(vehicles, steps, central, rig);
  const fs::path out = dir / "out";
  const std::string cmd = "'" + tether_exe + "' run '" + file.string() + "' -q --overwrite --out '" + out.string() +
                          "' >'" + (dir / "log.txt").string() + "' 2>&1";
  Result r;
  if (std::system(cmd.c_str()) != 0) return r;
  std::ifstream in(out / "summary.json");
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || j.value("steps", 0L) != steps) return r;
  std::vector<double> p50;
  for (const auto& e : j["endpoints"]) {
    if (e.value("type", "") != "mqtt") continue;
    if (e.value("replies", 0L) != steps) return r;  // under block every step has its answer
    p50.push_back(e["round_trip_ns"].value("p50", 0.0) * 1e-3);
    r.p99_us = std::max(r.p99_us, e["round_trip_ns"].value("p99", 0.0) * 1e-3);
  }
  std::sort(p50.begin(), p50.end());
  r.p50_us = p50.empty() ? 0 : p50[p50.size() / 2];
  r.steps_per_s = static_cast<double>(steps) / j.value("wall_time_s", 1e300);
  r.ok = true;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = bench::quick_mode(argc, argv);
  long steps = quick ? 100 : 2000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--steps" && i + 1 < argc) {
      steps = std::atol(argv[++i]);
    } else if (a != "--quick") {
      std::fprintf(stderr, "usage: %s [--quick] [--steps N]\n", argv[0]);
      return 2;
    }
  }
  if (steps < 1) {
    std::fprintf(stderr, "mqtt_rigs: --steps takes a positive number\n");
    return 2;
  }
  const std::vector<int> fleet = quick ? std::vector<int>{1, 2} : std::vector<int>{1, 2, 4, 8};
  tether::test::Mosquitto central;
  // one bridge connection per vehicle (docs/mqtt.md: mosquitto leaves Nagle's algorithm on
  // a bridge's own socket, so a connection may carry one message a step towards the central
  // broker); the first also brings the runtime's status
  tether::test::Mosquitto::Options rig_options;
  for (int i = 1; i <= fleet.back(); ++i)
    rig_options.extra_config += "connection central_auv" + std::to_string(i) +
                                "\naddress 127.0.0.1:" + std::to_string(central.port()) +
                                "\ncleansession true\nrestart_timeout 1\ntopic tether/fleet/auv" + std::to_string(i) +
                                "/# both 0\n" + (i == 1 ? "topic tether/fleet/runtime/# in 0\n" : "");
  tether::test::Mosquitto rig(rig_options);
  const fs::path dir = fs::temp_directory_path() / ("tether_bench_mqtt_rigs_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::printf("MQTT lock-step with N vehicles, rtf 0, policy block, %ld steps, %u cores\n", steps,
              std::thread::hardware_concurrency());
  std::printf("  %-8s %-8s %10s %16s %12s %12s\n", "vehicles", "layout", "steps/s", "vehicle-steps/s", "rtt p50 us",
              "rtt p99 us");
  double base = 0, last_bridged = 0;
  int last_n = 0;
  for (const int n : fleet) {
    for (const bool bridged : {false, true}) {
      const Result r = run_fleet(dir, n, steps, central.uri(), bridged ? rig.uri() : central.uri());
      if (!r.ok) {
        std::printf("  %-8d %-8s the run failed (its log: %s)\n", n, bridged ? "bridged" : "direct",
                    (dir / "log.txt").c_str());
        return 1;
      }
      const double per_vehicle = r.steps_per_s * n;
      std::printf("  %-8d %-8s %10.0f %16.0f %12.1f %12.1f\n", n, bridged ? "bridged" : "direct", r.steps_per_s,
                  per_vehicle, r.p50_us, r.p99_us);
      if (n == 1 && !bridged) base = per_vehicle;
      if (bridged) last_bridged = per_vehicle, last_n = n;
    }
  }
  bench::figure(
      bench::format("MQTT lock-step vehicle-steps/s, %d vehicles through one bridge / 1 vehicle direct", last_n),
      bench::format("%.2f (%.0f vs %.0f /s)", last_bridged / base, last_bridged, base), ">= 0.8");
  fs::remove_all(dir);
  return 0;
}
