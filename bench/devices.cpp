// SPDX-License-Identifier: Apache-2.0
// What the devices cost per loop step, for the auv_sensors vehicle (20 devices): sensing
// with and without ray casts, one ray, actuation, snapshots; next to the cost of one
// physics step of the same world, measured in the same run.
//
//   bench/devices [--quick] [SCENARIO]     (default: config/scenarios/auv_sensors.yaml,
//                                          relative to the working directory)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "bench_util.hpp"
#include "test_paths.hpp"
#include "tether/hal/device_bank.hpp"
#include "tether/loop/device_world.hpp"
#include "tether/loop/hal_bridge.hpp"
#include "tether/physics/physics.hpp"
#include "tether/scenario/scenario.hpp"
#include "tether/scenario/scenario_devices.hpp"

using namespace tether;
using namespace tether::runtime;
using Clock = std::chrono::steady_clock;

namespace {

std::uint64_t rays_cast = 0;

hal::RayHit counting_ray_cast(const WorldModel& m, const WorldState& s, const Vec3& o, const Vec3& d, double r,
                              int ignore) {
  ++rays_cast;
  return hal_ray_cast(m, s, o, d, r, ignore);  // what the session uses
}

// a stand-in that answers at once: what sensing costs apart from the ray casts
hal::RayHit no_ray_cast(const WorldModel&, const WorldState&, const Vec3&, const Vec3&, double, int) {
  ++rays_cast;
  return {};
}

int scale = 1;  // --quick divides every count by 100

// best of `rounds` batches of `n` calls, nanoseconds per call (the best batch is the one
// least disturbed by other processes)
template <typename F>
double time_ns(int n, F&& f, int rounds = 5) {
  n = std::max(1, n / scale);
  double best = 1e300;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) f(i);
    const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / n;
    best = std::min(best, ns);
  }
  return best;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::stringstream b;
  b << in.rdbuf();
  return b.str();
}

}  // namespace

int main(int argc, char** argv) try {
  if (tether::bench::quick_mode(argc, argv)) scale = 100;
  std::string path = TETHER_SOURCE_DIR + "/config/scenarios/auv_sensors.yaml";
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) != "--quick") path = argv[i];
  const std::string text = read_file(path);

  // devices from the file; the world from the same file without them (so this runs whether
  // or not the scenario parser knows the `devices` key yet)
  const ConfigNode root = load_config_text(text, path);
  YAML::Node stripped = YAML::Load(text);
  std::vector<hal::DeviceSpec> specs;
  int body_index = 0;
  for (std::size_t v = 0; v < root["vehicles"].size(); ++v) {
    const ConfigNode vehicle = root["vehicles"].at(v);
    for (std::size_t b = 0; b < vehicle["bodies"].size(); ++b, ++body_index) {
      const ConfigNode body = vehicle["bodies"].at(b);
      parse_devices(body["devices"], vehicle.string("name"), body.string("name"), body_index, specs);
      stripped["vehicles"][v]["bodies"][b].remove("devices");
    }
  }
  if (!root.context().errors.empty()) throw ConfigError(root.context().errors);
  YAML::Emitter out;
  out << stripped;
  const Scenario sc = parse_scenario(out.c_str(), path);
  const double dt = static_cast<double>(sc.loop.period_ns) * 1e-9;

  std::vector<hal::DeviceSpec> every_step = specs;
  for (auto& s : every_step) s.rate_hz = 0;
  hal::DeviceBank bank(specs, sc.loop.seed, sc.model.bodies.size());
  hal::DeviceBank bank_all(every_step, sc.loop.seed, sc.model.bodies.size());
  std::size_t sensors = 0;
  for (std::size_t i = 0; i < bank.size(); ++i) sensors += !bank.is_actuator(i);
  std::printf("devices: %s, %zu devices (%zu sensors, %zu actuators), loop %.0f ms\n", sc.name.c_str(), bank.size(),
              sensors, bank.size() - sensors, dt * 1e3);

  WorldState state = sc.initial;
  state.bodies[0].position_m.z() = -3;  // under water, in the middle of the tank: rays hit walls
  DeviceWorld view(sc.model, &counting_ray_cast);
  DeviceWorld no_rays(sc.model, &no_ray_cast);
  view.update(state, nullptr, dt);
  no_rays.update(state, nullptr, dt);

  // baseline: one physics step of the same world
  StepInputs inputs;
  inputs.resize(sc.model.bodies.size());
  WorldState scratch = state;
  const double physics_ns = time_ns(2000, [&](int) {
    scratch = state;
    (void)step(sc.model, scratch, inputs, dt);
  });

  std::int64_t t = 0;
  rays_cast = 0;
  const int n = 20000;
  const double sense_ns = time_ns(n, [&](int) { bank.sense(view, t += sc.loop.period_ns); });
  const double rays_per_step = static_cast<double>(rays_cast) / (5.0 * std::max(1, n / scale));
  rays_cast = 0;
  const double sense_all_ns = time_ns(n, [&](int) { bank_all.sense(view, t += sc.loop.period_ns); });
  const double rays_all = static_cast<double>(rays_cast) / (5.0 * std::max(1, n / scale));
  const double sense_norays_ns = time_ns(n, [&](int) { bank.sense(no_rays, t += sc.loop.period_ns); });
  const double sense_all_norays_ns = time_ns(n, [&](int) { bank_all.sense(no_rays, t += sc.loop.period_ns); });
  const double ray_stub_ns = time_ns(200000, [&](int) { (void)no_rays.ray_cast(Vec3::Zero(), Vec3::UnitX(), 4, 0); });

  // one ray against the tank and the hull, in directions spread over the sphere
  std::vector<Vec3> dirs;
  for (int i = 0; i < 64; ++i) {
    const double z = -1.0 + (i + 0.5) / 32.0, a = i * 2.39996;
    dirs.emplace_back(std::sqrt(1 - z * z) * std::cos(a), std::sqrt(1 - z * z) * std::sin(a), z);
  }
  const Vec3 origin = state.bodies[0].position_m;
  const double ray_ns = time_ns(200000, [&](int i) {
    (void)hal_ray_cast(sc.model, state, origin, dirs[static_cast<std::size_t>(i) & 63], 30, 0);
  });

  // actuation: every actuator commanded
  std::vector<hal::Wrench> wrenches;
  std::uint8_t cmd[TETHER_KIND_MAX_SIZE] = {};
  tether_put_f32le(cmd, 0.3f);
  tether_put_f32le(cmd + 4, 0.3f);
  for (std::size_t i = 0; i < bank.size(); ++i)
    if (bank.is_actuator(i)) (void)bank.command(i, cmd, bank.payload_size(i));
  const double actuate_ns = time_ns(n, [&](int) { bank.actuate(view, dt, wrenches); });

  std::string snap;
  snap.reserve(1 << 16);
  const double snapshot_ns = time_ns(2000, [&](int) {
    snap.clear();
    bank.snapshot(snap);
  });
  const double hash_ns = time_ns(2000, [&](int) { (void)bank.hash(); });

  const double per_device_ns = sense_all_norays_ns / static_cast<double>(sensors);
  std::printf("  physics step (baseline, same world)         %9.0f ns\n", physics_ns);
  std::printf("  sense, scenario rates (%.2f rays/step)      %9.0f ns\n", rays_per_step, sense_ns);
  std::printf("  sense, every sensor due (%.0f rays/step)     %9.0f ns\n", rays_all, sense_all_ns);
  std::printf("  sense without ray casts, scenario rates     %9.0f ns\n", sense_norays_ns);
  std::printf(
      "  sense without ray casts, every sensor due   %9.0f ns  (%.0f ns per sensor; goal < 5000 for 20 devices)\n",
      sense_all_norays_ns, per_device_ns);
  std::printf("  one ray (hal_ray_cast, %zu statics + %zu bodies) %6.0f ns  (stub call %.1f ns)\n",
              sc.model.statics.size(), sc.model.bodies.size(), ray_ns, ray_stub_ns);
  std::printf("  actuate (every actuator commanded)          %9.0f ns\n", actuate_ns);
  std::printf("  snapshot (%zu bytes)                       %9.0f ns\n", snap.size(), snapshot_ns);
  std::printf("  hash                                        %9.0f ns\n", hash_ns);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "devices: %s\n", e.what());
  return 1;
}
