// SPDX-License-Identifier: Apache-2.0
// tether-vehicle: a stand-in for a physical vehicle in a test tank (docs/mqtt.md). It
// connects to the broker like a tank rig would, obeys the actuator commands of each
// `projected` message with its own, differently parameterised physics (StandInVehicle) and
// answers with `feedback` for the same step. With --free it ignores the runtime's steps and
// runs on its own clock, reporting what it measures as it goes ("Simulation C").
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <mutex>
#include <string>

#include <CLI/CLI.hpp>
#include <mqtt/async_client.h>

#include "tether/mqtt/mqtt_messages.hpp"
#include "tether/mqtt/mqtt_socket.hpp"
#include "tether/scenario/scenario.hpp"
#include "tether/loop/stand_in_vehicle.hpp"

namespace mq = tether::adapters::mqtt;
namespace rt = tether::runtime;

namespace {

struct Options {
  std::string scenario;
  std::string vehicle;
  std::string vehicle_id;
  std::string broker = "tcp://127.0.0.1:1883";
  std::string session = "default";
  std::string client_id;
  std::string username, password, ca_file;
  int qos = 1;
  bool nodelay = true;
  bool exact = false;
  bool free = false;
  double free_rtf = 1.0;
  std::uint64_t seed = 1;
  std::vector<double> current;
  double drag_scale = -1, thrust_scale = -1, buoyancy_offset_n = 1e300;
  double position_noise_m = -1, orientation_noise_rad = -1, velocity_noise_m_s = -1;
  int delay_steps = -1;
  double added_mass_fraction = -1, thruster_lag_scale = -1, thruster_dead_band = -1;
  std::vector<double> current_swing, velocity_bias;
  bool quiet = false;
};

// everything the Paho thread and the main thread share
struct Rig {
  Options opt;
  std::unique_ptr<rt::Scenario> scenario;
  int vehicle = 0;
  rt::HiddenParams hidden;
  std::string run;  // the runtime's run id: a new one starts the model again
  std::uint64_t restarts = 0;
  std::unique_ptr<rt::StandInVehicle> truth;
  mq::Topics topics;
  std::unique_ptr<mqtt::async_client> client;
  std::mutex m;
  std::map<std::string, int> device_index;  // by full name, resolved on first use
  bool have_last = false;
  std::uint64_t last_step = 0;
  std::string last_feedback;
  mq::Payload format = mq::Payload::json;  // the last projected message's: feedback answers in kind
  std::int64_t period_ns = 0;
  std::vector<rt::Measurement> measurements;
  std::string buffer;
  // figures for the exit line
  std::uint64_t steps = 0, caught_up = 0, duplicates = 0, old = 0, rejected = 0, unknown_devices = 0;
  std::uint64_t publish_errors = 0;
};

void publish_feedback(Rig& r, std::uint64_t step) {
  r.measurements.clear();
  r.truth->measure_all(r.measurements);
  mq::encode_feedback(r.last_feedback, r.opt.vehicle_id, step, r.truth->model(), r.measurements, r.format);
  try {
    r.client->publish(r.topics.feedback, r.last_feedback.data(), r.last_feedback.size(), r.opt.qos, false);
  } catch (const mqtt::exception&) {
    ++r.publish_errors;
  }
}

void apply_commands(Rig& r, const mq::Projected& p) {
  for (const mq::NamedCommand& c : p.commands) {
    auto it = r.device_index.find(c.device);
    if (it == r.device_index.end()) it = r.device_index.emplace(c.device, r.truth->find_device(c.device.c_str())).first;
    if (it->second < 0 ||
        !r.truth->command_values(static_cast<std::size_t>(it->second), c.values.data(), c.values.size()))
      ++r.unknown_devices;
  }
}

void on_projected(Rig& r, const std::string& payload) {
  mq::Projected p;
  std::string reason;
  const mq::Reject rej = mq::parse_projected(payload, r.opt.vehicle_id, p, reason);
  std::lock_guard<std::mutex> lock(r.m);
  if (rej != mq::Reject::none) {
    if (r.rejected++ < 5)
      std::fprintf(stderr, "tether-vehicle: projected message rejected (%s: %s)\n", mq::to_string(rej), reason.c_str());
    return;
  }
  r.period_ns = p.period_ns;
  r.format = mq::payload_of(payload);
  if (r.have_last && p.step <= r.last_step) {
    // a repeated step (QoS 1 redelivery): answer again without stepping twice
    if (p.step == r.last_step && !r.opt.free) {
      ++r.duplicates;
      try {
        r.client->publish(r.topics.feedback, r.last_feedback.data(), r.last_feedback.size(), r.opt.qos, false);
      } catch (const mqtt::exception&) {
        ++r.publish_errors;
      }
    } else {
      ++r.old;
    }
    return;
  }
  apply_commands(r, p);
  r.have_last = true;
  r.last_step = p.step;
  if (r.opt.free) return;  // the own clock steps the vehicle
  // steps the runtime took without us (broker away, vehicle late) pass with the commands held
  const double dt = static_cast<double>(p.period_ns) * 1e-9;
  while (r.truth->state().time_ns + p.period_ns <= p.time_ns) {
    if (r.truth->advance(dt) != rt::StepStatus::ok) break;
    ++r.caught_up;
  }
  if (r.truth->advance(dt) != rt::StepStatus::ok) {
    std::fprintf(stderr, "tether-vehicle: numerical fault in the vehicle's physics at step %llu\n",
                 static_cast<unsigned long long>(p.step));
    return;
  }
  ++r.steps;
  publish_feedback(r, p.step);
}

// the runtime's status: a new run (another `tether run`) starts the vehicle from the scenario again
void on_runtime_status(Rig& r, const std::string& payload) {
  std::string run;
  if (mq::parse_status(payload, &run) != "online" || run.empty()) return;
  std::lock_guard<std::mutex> lock(r.m);
  if (run == r.run) return;
  if (!r.run.empty() || r.have_last) {
    r.truth = std::make_unique<rt::StandInVehicle>(*r.scenario, r.vehicle, r.hidden, r.opt.seed);
    r.device_index.clear();
    r.have_last = false;
    ++r.restarts;
    if (!r.opt.quiet) std::printf("tether-vehicle: a new run of the runtime: starting again from the scenario\n");
    std::fflush(stdout);
  }
  r.run = run;
}

void add_options(CLI::App& app, Options& o) {
  app.add_option("--scenario", o.scenario, "scenario file: the world and vehicle to stand in for")->required();
  app.add_option("--vehicle", o.vehicle, "the scenario's vehicle (default: the first)");
  app.add_option("--vehicle-id", o.vehicle_id, "id in the topics (default: the vehicle's name)");
  app.add_option("--broker", o.broker, "broker URI")->capture_default_str();
  app.add_option("--session", o.session, "session (topic prefix tether/<session>/...)")->capture_default_str();
  app.add_option("--client-id", o.client_id, "MQTT client id (default: tether-<session>-<vehicle_id>-vehicle)");
  app.add_option("--username", o.username, "user name");
  app.add_option("--password", o.password, "password");
  app.add_option("--ca-file", o.ca_file, "CA certificate for ssl:// brokers");
  app.add_option("--qos", o.qos, "QoS of feedback and projected")->check(CLI::Range(0, 2))->capture_default_str();
  app.add_flag("!--no-nodelay", o.nodelay, "leave Nagle's algorithm on (slow QoS 1; for comparison)");
  app.add_option("--seed", o.seed, "seed of the vehicle's noise")->capture_default_str();
  app.add_flag("--exact", o.exact, "no hidden differences: the vehicle is the model");
  app.add_flag("--free", o.free, "run on its own clock, ignoring the runtime's steps (Simulation C)");
  app.add_option("--free-rtf", o.free_rtf, "with --free: real-time factor of the own clock")->capture_default_str();
  app.add_option("--drag-scale", o.drag_scale, "hidden: damping multiplier (default 1.15)");
  app.add_option("--thrust-scale", o.thrust_scale, "hidden: actuator force multiplier (default 0.9)");
  app.add_option("--buoyancy-offset-n", o.buoyancy_offset_n, "hidden: extra buoyancy in N (default -2)");
  app.add_option("--current", o.current, "hidden: extra current x y z in m/s (default 0 0.05 0)")->expected(3);
  app.add_option("--position-noise-m", o.position_noise_m, "measurement noise stddev (default 0.002)");
  app.add_option("--orientation-noise-rad", o.orientation_noise_rad, "measurement noise stddev (default 0.002)");
  app.add_option("--velocity-noise-m-s", o.velocity_noise_m_s, "measurement noise stddev (default 0.005)");
  app.add_option("--delay-steps", o.delay_steps, "measurements this many steps old (default 0)");
  app.add_option("--added-mass-fraction", o.added_mass_fraction, "hidden: inertia x (1 + this) (default 0.1)");
  app.add_option("--thruster-lag-scale", o.thruster_lag_scale, "hidden: thrusters' time constant x this (default 1.2)");
  app.add_option("--thruster-dead-band", o.thruster_dead_band, "hidden: thrusters' dead band, at least (default 0.03)");
  app.add_option("--current-swing", o.current_swing, "hidden: the current's swing x y z in m/s (default 0.01 0.01 0)")
      ->expected(3);
  app.add_option("--velocity-bias", o.velocity_bias,
                 "hidden: measured velocity bias x y z in m/s (default 0.001 -0.001 0)")
      ->expected(3);
  app.add_flag("--quiet", o.quiet, "only errors");
}

// the hidden differences: the defaults (none with --exact), each overridden by its option
rt::HiddenParams hidden_params(const Options& o) {
  rt::HiddenParams h = o.exact ? rt::HiddenParams{} : rt::default_hidden_params();
  if (o.drag_scale >= 0) h.drag_scale = o.drag_scale;
  if (o.thrust_scale >= 0) h.thrust_scale = o.thrust_scale;
  if (o.buoyancy_offset_n < 1e299) h.buoyancy_offset_n = o.buoyancy_offset_n;
  if (o.current.size() == 3) h.current_m_s = rt::Vec3(o.current[0], o.current[1], o.current[2]);
  if (o.position_noise_m >= 0) h.position_noise_m = o.position_noise_m;
  if (o.orientation_noise_rad >= 0) h.orientation_noise_rad = o.orientation_noise_rad;
  if (o.velocity_noise_m_s >= 0) h.velocity_noise_m_s = o.velocity_noise_m_s;
  if (o.delay_steps >= 0) h.delay_steps = static_cast<std::uint32_t>(o.delay_steps);
  if (o.added_mass_fraction >= 0) h.added_mass_fraction = o.added_mass_fraction;
  if (o.thruster_lag_scale > 0) h.thruster_time_constant_scale = o.thruster_lag_scale;
  if (o.thruster_dead_band >= 0) h.thruster_dead_band = o.thruster_dead_band;
  if (o.current_swing.size() == 3)
    h.current_swing_m_s = rt::Vec3(o.current_swing[0], o.current_swing[1], o.current_swing[2]);
  if (o.velocity_bias.size() == 3)
    h.velocity_bias_m_s = rt::Vec3(o.velocity_bias[0], o.velocity_bias[1], o.velocity_bias[2]);
  return h;
}

// the MQTT client, its handlers and the connection; false (said on stderr) if the broker refuses
bool connect(Rig& r, const std::string& online, const std::string& offline) {
  const Options& o = r.opt;
  r.client =
      std::make_unique<mqtt::async_client>(o.broker, o.client_id, static_cast<mqtt::iclient_persistence*>(nullptr));
  r.client->set_message_callback([&r](mqtt::const_message_ptr msg) {
    if (msg->get_topic() == r.topics.projected)
      on_projected(r, msg->get_payload());
    else if (msg->get_topic() == r.topics.runtime_status)
      on_runtime_status(r, msg->get_payload());
  });
  r.client->set_connected_handler([&r, &online](const std::string&) {
    if (r.opt.nodelay) mq::set_tcp_nodelay_for_broker(r.opt.broker);
    try {
      r.client->subscribe(r.topics.projected, r.opt.qos);
      r.client->subscribe(r.topics.runtime_status, 1);
      r.client->publish(r.topics.status, online.data(), online.size(), 1, true);
    } catch (const mqtt::exception& e) {
      std::fprintf(stderr, "tether-vehicle: subscribing: %s\n", e.what());
    }
  });
  r.client->set_connection_lost_handler([&r](const std::string&) {
    if (!r.opt.quiet) std::fprintf(stderr, "tether-vehicle: lost the broker; reconnecting\n");
  });
  mqtt::connect_options opts;
  opts.set_clean_session(true);
  opts.set_keep_alive_interval(5);
  opts.set_automatic_reconnect(1, 2);
  if (!o.username.empty()) opts.set_user_name(o.username);
  if (!o.password.empty()) opts.set_password(o.password);
  opts.set_will(mqtt::will_options(r.topics.status, offline, 1, true));
  if (o.broker.rfind("ssl://", 0) == 0 || o.broker.rfind("mqtts://", 0) == 0) {
    mqtt::ssl_options ssl;
    if (!o.ca_file.empty()) ssl.set_trust_store(o.ca_file);
    opts.set_ssl(std::move(ssl));
  }
  try {
    r.client->connect(opts)->wait();
  } catch (const mqtt::exception& e) {
    std::fprintf(stderr, "tether-vehicle: cannot connect to %s as \"%s\": %s\n", o.broker.c_str(), o.client_id.c_str(),
                 mq::describe_connect_failure(e.get_return_code(), e.get_reason_code(), e.what()).c_str());
    return false;
  }
  return true;
}

// waits for a stop signal; with --free, steps the own clock meanwhile
void run_until_signal(Rig& r, sigset_t& stop_signals) {
  const Options& o = r.opt;
  auto next = std::chrono::steady_clock::now();
  for (;;) {
    timespec wait{1, 0};
    if (o.free) {
      const auto wall =
          std::chrono::nanoseconds(static_cast<std::int64_t>(static_cast<double>(r.period_ns) / o.free_rtf));
      next += wall;
      const auto left =
          std::chrono::duration_cast<std::chrono::nanoseconds>(next - std::chrono::steady_clock::now()).count();
      wait = left > 0 ? timespec{static_cast<time_t>(left / 1'000'000'000), static_cast<long>(left % 1'000'000'000)}
                      : timespec{0, 0};
    }
    const int sig = sigtimedwait(&stop_signals, nullptr, &wait);
    if (sig == SIGINT || sig == SIGTERM) break;
    if (o.free) {
      std::lock_guard<std::mutex> lock(r.m);
      if (r.truth->advance(static_cast<double>(r.period_ns) * 1e-9) != rt::StepStatus::ok) break;
      ++r.steps;
      // tagged with the newest step the runtime asked about: it applies those that match
      if (r.have_last && r.client->is_connected()) publish_feedback(r, r.last_step);
    }
  }
}

// goes offline, disconnects and says what happened (and the hidden truth)
void finish(Rig& r, const std::string& offline) {
  const Options& o = r.opt;
  try {
    if (r.client->is_connected()) {
      r.client->publish(r.topics.status, offline.data(), offline.size(), 1, true)
          ->wait_for(std::chrono::milliseconds(500));
      r.client->disconnect()->wait_for(std::chrono::milliseconds(1000));
    }
  } catch (const mqtt::exception&) {
  }
  std::lock_guard<std::mutex> lock(r.m);
  if (!o.quiet)
    std::printf(
        "tether-vehicle: %llu steps, %llu caught up, %llu repeated, %llu old, %llu rejected, %llu unknown commands\n",
        static_cast<unsigned long long>(r.steps), static_cast<unsigned long long>(r.caught_up),
        static_cast<unsigned long long>(r.duplicates), static_cast<unsigned long long>(r.old),
        static_cast<unsigned long long>(r.rejected), static_cast<unsigned long long>(r.unknown_devices));
  // what the twin's estimate processor should have found (docs/feedback.md): its first body's
  if (!o.quiet) {
    const rt::Scenario& sc = *r.scenario;
    const int body = sc.model.vehicles[static_cast<std::size_t>(r.vehicle)].bodies.front();
    std::printf("tether-vehicle: hidden truth of %s:", sc.model.bodies[static_cast<std::size_t>(body)].name.c_str());
    const char* separator = " ";
    for (const auto& [name, value] :
         rt::hidden_truth(sc.model, body, r.hidden, rt::thruster_time_constant_s(sc.model, sc.devices, body))) {
      std::printf("%s%s %.4g", separator, name.c_str(), value);
      separator = ", ";
    }
    std::printf("%s\n", o.exact ? " (--exact: the model itself)" : "");
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tether-vehicle: a stand-in physical vehicle that talks MQTT like a tank rig (docs/mqtt.md)"};
  Options o;
  add_options(app, o);
  CLI11_PARSE(app, argc, argv);

  // SIGINT/SIGTERM end the program; blocked here so Paho's threads inherit the mask
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  Rig r;
  try {
    r.scenario = std::make_unique<rt::Scenario>(rt::load_scenario(o.scenario));
    const rt::Scenario& sc = *r.scenario;
    const int v = o.vehicle.empty() ? 0 : sc.model.find_vehicle(o.vehicle);
    if (v < 0 || sc.model.vehicles.empty()) {
      std::fprintf(stderr, "tether-vehicle: %s has no vehicle \"%s\"\n", o.scenario.c_str(), o.vehicle.c_str());
      return 2;
    }
    if (o.vehicle_id.empty()) o.vehicle_id = sc.model.vehicles[static_cast<std::size_t>(v)].name;
    if (o.client_id.empty()) o.client_id = "tether-" + o.session + "-" + o.vehicle_id + "-vehicle";
    const rt::HiddenParams h = hidden_params(o);
    r.opt = o;
    r.vehicle = v;
    r.hidden = h;
    r.truth = std::make_unique<rt::StandInVehicle>(sc, v, h, o.seed);
    r.period_ns = sc.loop.period_ns;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tether-vehicle: %s\n", e.what());
    return 2;
  }
  r.topics = mq::topics_for(o.session, o.vehicle_id);
  const std::string online = mq::encode_status("online", o.client_id);
  const std::string offline = mq::encode_status("offline", o.client_id);

  if (!connect(r, online, offline)) return 1;
  if (!o.quiet)
    std::printf("tether-vehicle: \"%s\" online at %s on %s (%s)\n", o.vehicle_id.c_str(), o.broker.c_str(),
                r.topics.projected.substr(0, r.topics.projected.size() - 10).c_str(),
                o.free ? "free-running" : "lock-step");
  std::fflush(stdout);

  run_until_signal(r, stop_signals);
  finish(r, offline);
  return 0;
}
