// SPDX-License-Identifier: Apache-2.0
#include "tether/mqtt/mqtt_endpoint.hpp"

#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <mqtt/async_client.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "tether/process/launched_program.hpp"
#include "tether/mqtt/mqtt_messages.hpp"
#include "tether/mqtt/mqtt_socket.hpp"
#include "tether/process/config_text.hpp"
#include "tether/process/launch_check.hpp"
#include "tether/scenario/endpoint_types.hpp"

namespace tether::adapters {

using runtime::SteadyClock;
using std::chrono::milliseconds;

// ---- configuration -------------------------------------------------------------------------

namespace {

bool topic_safe(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c == '/' || c == '+' || c == '#' || static_cast<unsigned char>(c) < 0x20) return false;
  return true;
}

}  // namespace

MqttEndpointConfig parse_mqtt_config(const runtime::EndpointConfig& config, const runtime::Scenario& scenario) {
  const runtime::ConfigNode& n = config.node;
  MqttEndpointConfig out;
  runtime::expect_endpoint_keys(n, mqtt_endpoint_keys);
  const std::string base = scenario_dir(scenario);
  out.scenario_path =
      scenario.path.empty() ? std::string() : std::filesystem::absolute(scenario.path).lexically_normal().string();
  if (config.vehicle.empty()) n.error("an mqtt endpoint needs `vehicle`: the scenario vehicle the real one stands for");

  if (n.has("broker")) {
    out.broker = resolve_config_text(n["broker"], n.string("broker"), base, false);
    std::string host;
    int port = 0;
    if (!mqtt::split_broker_uri(out.broker, host, port))
      n.expected("broker", "a broker URI tcp://host:port or ssl://host:port, got \"" + out.broker + "\"");
  } else {
    n.expected("broker", "a broker URI tcp://host:port or ssl://host:port");
  }
  out.session = resolve_config_text(n["session"], n.string_or("session", "default"), base, false);
  if (!topic_safe(out.session)) n.expected("session", "a topic level without '/', '+', '#'");
  out.vehicle_id = resolve_config_text(n["vehicle_id"], n.string_or("vehicle_id", config.vehicle), base, false);
  if (!out.vehicle_id.empty() && !topic_safe(out.vehicle_id))
    n.expected("vehicle_id", "a topic level without '/', '+', '#'");
  out.client_id = n.has("client_id") ? resolve_config_text(n["client_id"], n.string("client_id"), base, false)
                                     : "tether-" + out.session + "-" + out.vehicle_id + "-runtime";
  if (n.has("username")) out.username = resolve_config_text(n["username"], n.string("username"), base, false);
  if (n.has("password")) out.password = resolve_config_text(n["password"], n.string("password"), base, false);
  if (n.has("password") && !n.has("username")) n["password"].error("`password` needs `username`");
  if (n.has("ca_file")) {
    out.ca_file = resolve_config_text(n["ca_file"], n.string("ca_file"), base, true);
    if (!out.ca_file.empty() && out.ca_file.front() != '/')
      out.ca_file = (std::filesystem::path(base) / out.ca_file).lexically_normal().string();
    if (out.broker.rfind("ssl://", 0) != 0 && out.broker.rfind("mqtts://", 0) != 0)
      n["ca_file"].error("`ca_file` needs an ssl:// broker");
  }
  out.qos = static_cast<int>(n.integer_or("qos", 1, 0, 2));
  out.tcp_nodelay = n.boolean_or("tcp_nodelay", true);
  out.publish_actual = n.boolean_or("publish_actual", true);
  out.keep_alive_s = n.integer_or("keep_alive_s", 5, 1, 3600);
  out.connect_timeout_ms = n.integer_or("connect_timeout_ms", 5000, 1, 600'000);
  out.wait_online_ms = n.integer_or("wait_online_ms", 10000, 0, 600'000);
  out.resend_ms = n.integer_or("resend_ms", 500, 0, 600'000);
  out.max_payload_bytes = static_cast<std::size_t>(n.integer_or("max_payload_bytes", 64 * 1024, 256, 16 << 20));

  if (n.has("payload")) {
    const std::string p = n.string("payload");
    if (p == "protobuf")
      out.payload = mqtt::Payload::protobuf;
    else if (p != "json")
      n.expected("payload", "json or protobuf, got \"" + p + "\"");
  }
  if (n.has("launch")) out.launch = parse_program_launch(n["launch"], base);
  return out;
}

// ---- the endpoint --------------------------------------------------------------------------

namespace {

constexpr std::size_t max_queued = 64;

std::atomic<bool> g_quiet{false};

// the endpoint's own progress lines and the vehicle program's output; warnings always show
template <typename... Args>
void info(spdlog::format_string_t<Args...> fmt, Args&&... args) {
  if (!g_quiet.load(std::memory_order_relaxed)) spdlog::info(fmt, std::forward<Args>(args)...);
}

// at most one line per second per kind of problem; the rest are counted
class RateLimitedLog {
 public:
  void warn(const std::string& endpoint, const std::string& what) {
    const auto now = SteadyClock::now();
    if (now < next_) {
      ++suppressed_;
      return;
    }
    next_ = now + std::chrono::seconds(1);
    if (suppressed_ > 0)
      spdlog::warn("endpoint \"{}\": {} ({} similar messages not shown)", endpoint, what, suppressed_);
    else
      spdlog::warn("endpoint \"{}\": {}", endpoint, what);
    suppressed_ = 0;
  }

 private:
  SteadyClock::time_point next_{};
  std::uint64_t suppressed_ = 0;
};

}  // namespace

void set_mqtt_logs_quiet(bool quiet) { g_quiet.store(quiet); }

struct MqttEndpoint::Impl {
  std::unique_ptr<::mqtt::async_client> client;
  mqtt::Topics topics;
  const runtime::WorldModel* model = nullptr;
  std::vector<std::size_t> actuators;
  std::string buffer;
  std::string status_online, status_offline, status_paused;

  mutable std::mutex m;
  std::condition_variable cv;
  std::deque<mqtt::Feedback> queue;
  MqttCounters c;
  // the step's link faults (docs/faults.md): shape_out on the loop thread only, shape_in
  // under shape_m (Paho's callback thread and set_link_faults)
  runtime::LinkShaper shape_out, shape_in;
  std::mutex shape_m;
  bool vehicle_online = false;
  std::string vehicle_state;
  bool have_applied = false;
  std::uint64_t last_applied = 0;
  bool have_asked = false;                // a projected was handed to Paho: feedback is matched against the
  std::uint64_t asked = 0;                // step asked for when it arrives, not when the loop takes it
  bool connected = false;                 // as the handlers saw it (never ask Paho while holding m: it calls
                                          // the handlers with its own lock held)
  bool published_ok = false;              // the step's projected went to Paho
  std::uint64_t connects_at_publish = 0;  // a reconnect since then may have lost it
  SteadyClock::time_point sent_at{};      // when the step's projected was last handed to Paho
  // the broker's absences (docs/mqtt.md, "When the broker goes away"): when each began (the
  // last step asked for then), how long until Paho was connected again; the first 100 kept
  struct Outage {
    std::uint64_t after_step = 0;
    bool asked = false;  // a step had been asked for when it began
    SteadyClock::time_point lost_at{};
    double seconds = -1;  // until reconnected; -1 while it lasts
  };
  static constexpr std::size_t max_outages = 100;
  std::vector<Outage> outages;
  std::uint64_t outages_total = 0;
  bool away = false;
  RateLimitedLog reject_log, order_log;
  std::string last_reject;
  bool stopped = true;

  std::unique_ptr<LaunchedProgram> program;  // with `launch:`
};

MqttEndpoint::MqttEndpoint(const runtime::EndpointConfig& config, const runtime::Scenario& scenario)
    : Endpoint(config), config_(parse_mqtt_config(config, scenario)), impl_(std::make_unique<Impl>()) {}

MqttEndpoint::MqttEndpoint(const runtime::EndpointConfig& config, MqttEndpointConfig mqtt)
    : Endpoint(config), config_(std::move(mqtt)), impl_(std::make_unique<Impl>()) {}

MqttEndpoint::~MqttEndpoint() { stop(); }

// a feedback message as it arrives (after the link faults): parsed, matched against what
// has been published by now, queued for the step it answers
void MqttEndpoint::on_feedback(std::string_view payload, bool retained) {
  Impl& t = *impl_;
  mqtt::Feedback f;
  std::string reason;
  const mqtt::Reject r =
      mqtt::parse_feedback(payload, config_.vehicle_id, *t.model, vehicle(), f, reason, config_.max_payload_bytes);
  std::lock_guard<std::mutex> lock(t.m);
  ++t.c.received;
  if (r != mqtt::Reject::none) {
    if (r == mqtt::Reject::wrong_vehicle)
      ++t.c.wrong_vehicle;
    else
      ++t.c.malformed;
    t.last_reject = std::string(mqtt::to_string(r)) + ": " + reason;
    t.reject_log.warn(name(), "feedback rejected (" + t.last_reject + ")");
    return;
  }
  // matched on arrival against what has been published by now: an answer for a step not
  // asked yet (or left on the broker, retained, before the run) is never applied
  const char* what = nullptr;
  if (retained) {
    ++t.c.retained;
    what = "retained";
  } else if (!t.have_asked || f.step > t.asked) {
    ++t.c.out_of_order;
    what = "out-of-order";
  } else if (t.have_applied && f.step == t.last_applied) {
    ++t.c.duplicate;
    what = "duplicate";
  } else if (f.step < t.asked) {
    ++t.c.stale;
    what = "stale";
  }
  if (what != nullptr) {
    t.order_log.warn(name(), std::string(what) + " feedback for step " + std::to_string(f.step) + " (step " +
                                 (t.have_asked ? std::to_string(t.asked) : std::string("none")) +
                                 " asked) not applied");
    return;
  }
  if (t.queue.size() >= max_queued) {
    t.queue.pop_front();
    ++t.c.queue_overflow;
  }
  t.queue.push_back(std::move(f));
  t.cv.notify_all();
}

std::vector<std::string> MqttEndpoint::launch_problems() const {
  if (!config_.launch) return {};
  return adapters::launch_problems(name(), config_.launch->command);
}

void MqttEndpoint::start(const runtime::WorldModel& model, const runtime::WorldState& initial) {
  (void)initial;
  Impl& s = *impl_;
  s.stopped = false;
  s.model = &model;
  s.topics = mqtt::topics_for(config_.session, config_.vehicle_id);
  // a vehicle that outlives one run restarts its model when the run id changes
  const std::string run =
      std::to_string(std::chrono::system_clock::now().time_since_epoch().count()) + "-" + std::to_string(::getpid());
  s.status_online = mqtt::encode_status("online", config_.client_id, run);
  s.status_offline = mqtt::encode_status("offline", config_.client_id, run);
  s.status_paused = mqtt::encode_status("paused", config_.client_id, run);
  if (devices_) s.actuators = mqtt::vehicle_actuators(*devices_, model, vehicle());
  s.buffer.reserve(4096);
  try {
    if (config_.launch) launch_program();
    create_client();
    connect_and_subscribe();
    if (config_.wait_online_ms > 0) wait_vehicle_online();
  } catch (...) {
    stop();
    throw;
  }
}

// `launch:`: starts the vehicle program; its output goes to the log
void MqttEndpoint::launch_program() {
  Impl& s = *impl_;
  LaunchSpec spec;
  spec.argv = config_.launch->command;
  replace_placeholder(spec.argv, "{broker}", config_.broker);
  replace_placeholder(spec.argv, "{session}", config_.session);
  replace_placeholder(spec.argv, "{vehicle_id}", config_.vehicle_id);
  replace_placeholder(spec.argv, "{scenario}", config_.scenario_path);
  spec.env = config_.launch->env;
  spec.cwd = config_.launch->cwd;
  s.program = std::make_unique<LaunchedProgram>(spec, name(), [this] {
    { std::lock_guard<std::mutex> lock(impl_->m); }  // a waiter between its check and its wait sees the end
    impl_->cv.notify_all();
  });
  info("endpoint \"{}\": launched {} (pid {})", name(), s.program->command_line(), s.program->child().pid());
}

// the Paho client and its handlers: messages, (re)connections, a lost broker
void MqttEndpoint::create_client() {
  Impl& s = *impl_;
  s.client = std::make_unique<::mqtt::async_client>(config_.broker, config_.client_id,
                                                    static_cast<::mqtt::iclient_persistence*>(nullptr));
  s.client->set_message_callback([this](::mqtt::const_message_ptr msg) {
    Impl& t = *impl_;
    const std::string& topic = msg->get_topic();
    const std::string& payload = msg->get_payload();
    if (topic == t.topics.status) {
      const std::string state = mqtt::parse_status(payload);
      std::lock_guard<std::mutex> lock(t.m);
      t.vehicle_state = state;
      const bool online = state == "online";
      if (!online && t.vehicle_online) {
        ++t.c.vehicle_offline;
        spdlog::warn("endpoint \"{}\": vehicle \"{}\" went offline", name(), config_.vehicle_id);
      }
      t.vehicle_online = online;
      t.cv.notify_all();
      return;
    }
    if (topic != t.topics.feedback) return;
    if (msg->is_retained()) {
      on_feedback(payload, true);
      return;
    }
    // through the step's link faults (a delayed message crosses at a later step)
    std::lock_guard<std::mutex> shaping(t.shape_m);
    t.shape_in.pass(payload, [this](std::string_view b) { on_feedback(b, false); });
  });
  s.client->set_connected_handler([this](const std::string&) {
    Impl& t = *impl_;
    {
      std::lock_guard<std::mutex> lock(t.m);
      ++t.c.connects;
      t.connected = true;
      t.cv.notify_all();  // a gather waiting on a lost projected publishes it again
      if (t.away) {
        t.away = false;
        if (!t.outages.empty() && t.outages.back().seconds < 0) {
          Impl::Outage& o = t.outages.back();
          o.seconds = std::chrono::duration<double>(SteadyClock::now() - o.lost_at).count();
          info("endpoint \"{}\": the broker {} is back after {:.2f} s (lost after step {})", name(), config_.broker,
               o.seconds, o.after_step);
        }
      }
    }
    if (config_.tcp_nodelay) {
      const int n = mqtt::set_tcp_nodelay_for_broker(config_.broker);
      std::lock_guard<std::mutex> lock(t.m);
      if (n > 0) t.c.nodelay_sockets += n;
    }
    // a clean session forgets subscriptions: (re)subscribe on every connection
    try {
      t.client->subscribe(t.topics.feedback, config_.qos);
      t.client->subscribe(t.topics.status, 1);
      t.client->publish(t.topics.runtime_status, t.status_online.data(), t.status_online.size(), 1, true);
    } catch (const ::mqtt::exception& e) {
      spdlog::warn("endpoint \"{}\": subscribing after connect: {}", name(), e.what());
    }
  });
  s.client->set_connection_lost_handler([this](const std::string& cause) {
    Impl& t = *impl_;
    {
      std::lock_guard<std::mutex> lock(t.m);
      ++t.c.connection_lost;
      t.connected = false;
      if (!t.away) {
        t.away = true;
        ++t.outages_total;
        if (t.outages.size() < Impl::max_outages)
          t.outages.push_back(Impl::Outage{t.asked, t.have_asked, SteadyClock::now(), -1});
      }
    }
    spdlog::warn("endpoint \"{}\": lost the broker {}{}; reconnecting", name(), config_.broker,
                 cause.empty() ? std::string() : " (" + cause + ")");
  });
}

// connects (bounded by connect_timeout_ms) and waits for the subscriptions
void MqttEndpoint::connect_and_subscribe() {
  Impl& s = *impl_;
  ::mqtt::connect_options opts;
  opts.set_clean_session(true);
  opts.set_keep_alive_interval(static_cast<int>(config_.keep_alive_s));
  opts.set_connect_timeout(std::chrono::milliseconds(config_.connect_timeout_ms));
  opts.set_automatic_reconnect(1, 2);
  if (!config_.username.empty()) opts.set_user_name(config_.username);
  if (!config_.password.empty()) opts.set_password(config_.password);
  opts.set_will(::mqtt::will_options(s.topics.runtime_status, s.status_offline, 1, true));
  if (config_.broker.rfind("ssl://", 0) == 0 || config_.broker.rfind("mqtts://", 0) == 0) {
    ::mqtt::ssl_options ssl;
    if (!config_.ca_file.empty()) ssl.set_trust_store(config_.ca_file);
    ssl.set_enable_server_cert_auth(true);
    opts.set_ssl(std::move(ssl));
  }
  try {
    auto tok = s.client->connect(opts);
    if (!tok->wait_for(milliseconds(config_.connect_timeout_ms + 1000)))
      throw std::runtime_error("no answer from the MQTT broker " + config_.broker + " within " +
                               std::to_string(config_.connect_timeout_ms) + " ms");
  } catch (const ::mqtt::exception& e) {
    throw std::runtime_error(
        "cannot connect to the MQTT broker " + config_.broker + " as \"" + config_.client_id +
        "\": " + mqtt::describe_connect_failure(e.get_return_code(), e.get_reason_code(), e.what()));
  }
  // the first step's feedback must not arrive before the subscription: wait for it here
  // (subscribing twice is harmless; the connected handler does it on every reconnect)
  try {
    const auto limit = milliseconds(config_.connect_timeout_ms);
    if (!s.client->subscribe(s.topics.feedback, config_.qos)->wait_for(limit) ||
        !s.client->subscribe(s.topics.status, 1)->wait_for(limit))
      throw std::runtime_error("the broker " + config_.broker + " did not confirm the subscriptions in time");
  } catch (const ::mqtt::exception& e) {
    throw std::runtime_error("subscribing at " + config_.broker + ": " + e.what());
  }
  info("endpoint \"{}\": connected to {} as \"{}\"; vehicle \"{}\" on tether/{}/{}/*", name(), config_.broker,
       config_.client_id, config_.vehicle_id, config_.session, config_.vehicle_id);
}

// waits (wait_online_ms) for the vehicle's "online" status, or the launched program's end
void MqttEndpoint::wait_vehicle_online() {
  Impl& s = *impl_;
  std::unique_lock<std::mutex> lock(s.m);
  const bool online = s.cv.wait_for(lock, milliseconds(config_.wait_online_ms),
                                    [&] { return s.vehicle_online || (s.program && s.program->exited()); });
  if (!online || !s.vehicle_online) {
    const std::string tail = s.program ? s.program->tail_text() : std::string();
    if (s.program && s.program->exited())
      throw std::runtime_error("the vehicle program " + s.program->command_line() + " ended before it reported online" +
                               (tail.empty() ? "" : "; its last output:" + tail));
    throw std::runtime_error("vehicle \"" + config_.vehicle_id + "\" did not report \"online\" on " + s.topics.status +
                             " within " + std::to_string(config_.wait_online_ms) +
                             " ms (is tether-vehicle running against " + config_.broker + " with --session " +
                             config_.session + "?)" + (tail.empty() ? "" : "; its last output:" + tail));
  }
}

void MqttEndpoint::set_link_faults(const runtime::LinkFaults& faults) {
  Impl& s = *impl_;
  if (!s.client) return;
  // what a delay held back crosses now, before this step's traffic (Paho is called without m)
  try {
    s.shape_out.begin_step(faults.step, faults.seed, faults.out, [&](std::string_view b) {
      s.client->publish(s.topics.projected, b.data(), b.size(), config_.qos, false);
    });
  } catch (const ::mqtt::exception& e) {
    std::lock_guard<std::mutex> lock(s.m);
    ++s.c.publish_errors;
  }
  std::lock_guard<std::mutex> shaping(s.shape_m);
  s.shape_in.begin_step(faults.step, ~faults.seed, faults.in, [this](std::string_view b) { on_feedback(b, false); });
}

bool MqttEndpoint::publish(const runtime::StepContext& ctx, const runtime::WorldState& projected) {
  Impl& s = *impl_;
  if (!s.client) {
    fault_message_ = "not started";
    return false;
  }
  mqtt::encode_projected(s.buffer, config_.vehicle_id, ctx, *s.model, projected, vehicle(), devices_, s.actuators,
                         config_.payload);
  {
    // before the publish: the vehicle's answer may arrive before Paho returns
    std::lock_guard<std::mutex> lock(s.m);
    s.have_asked = true;
    s.asked = ctx.step;
  }
  send_projected(ctx.step);
  return true;
}

// hands the projected message in the buffer to Paho (m not held: Paho may call back)
void MqttEndpoint::send_projected(std::uint64_t step) {
  Impl& s = *impl_;
  std::uint64_t connects = 0;
  {
    std::lock_guard<std::mutex> lock(s.m);
    connects = s.c.connects;
  }
  try {
    s.shape_out.pass(s.buffer, [&](std::string_view b) {
      s.client->publish(s.topics.projected, b.data(), b.size(), config_.qos, false);
    });
    std::lock_guard<std::mutex> lock(s.m);
    ++s.c.published;
    s.published_ok = true;
    s.connects_at_publish = connects;
    s.sent_at = SteadyClock::now();
  } catch (const ::mqtt::exception& e) {
    // the broker is away: the gather times out and the policy applies; Paho reconnects
    std::lock_guard<std::mutex> lock(s.m);
    ++s.c.publish_errors;
    s.published_ok = false;
    s.order_log.warn(name(), "publish of step " + std::to_string(step) + " refused: " + e.what());
  }
}

runtime::GatherStatus MqttEndpoint::gather(const runtime::StepContext& ctx, runtime::SteadyClock::time_point deadline,
                                           runtime::Reply& reply) {
  Impl& s = *impl_;
  std::unique_lock<std::mutex> lock(s.m);
  const auto sync = [&] {
    link_counts_.stale = s.c.stale + s.c.duplicate + s.c.out_of_order + s.c.retained;
    link_counts_.corrupt = s.c.malformed + s.c.wrong_vehicle;
  };
  for (;;) {
    while (!s.queue.empty()) {
      mqtt::Feedback& f = s.queue.front();
      if (f.step == ctx.step && !(s.have_applied && s.last_applied >= f.step)) {
        reply.clear();
        reply.step = ctx.step;
        reply.measurements.assign(f.measurements.begin(), f.measurements.end());
        s.have_applied = true;
        s.last_applied = f.step;
        ++s.c.applied;
        s.queue.pop_front();
        sync();
        return runtime::GatherStatus::ready;
      }
      // never applied: an earlier step, the step already applied, or one not asked for yet
      const char* what = "stale";
      if (s.have_applied && f.step == s.last_applied) {
        ++s.c.duplicate;
        what = "duplicate";
      } else if (f.step > ctx.step) {
        ++s.c.out_of_order;
        what = "out-of-order";
      } else {
        ++s.c.stale;
      }
      s.order_log.warn(name(), std::string(what) + " feedback for step " + std::to_string(f.step) + " at step " +
                                   std::to_string(ctx.step) + " not applied");
      s.queue.pop_front();
    }
    if (s.program && s.program->exited()) {
      fault_message_ = "vehicle program " + s.program->describe_end() + " at step " + std::to_string(ctx.step);
      sync();
      return runtime::GatherStatus::fault;
    }
    if (SteadyClock::now() >= deadline) {
      sync();
      return runtime::GatherStatus::timeout;
    }
    // the step's projected never reached the broker, or a reconnect since may have lost it:
    // send it again once connected (the vehicle answers a repeated step without stepping)
    // ... and every resend_ms without an answer (the vehicle may have been reconnecting)
    const auto now = SteadyClock::now();
    const bool resend_due =
        config_.resend_ms > 0 && s.published_ok && now >= s.sent_at + milliseconds(config_.resend_ms);
    if ((!s.published_ok || s.c.connects != s.connects_at_publish || resend_due) && s.connected) {
      ++s.c.republished;
      lock.unlock();
      send_projected(ctx.step);
      lock.lock();
      continue;
    }
    auto wake = deadline;
    if (config_.resend_ms > 0 && s.published_ok) wake = std::min(wake, s.sent_at + milliseconds(config_.resend_ms));
    s.cv.wait_until(lock, wake);
  }
}

void MqttEndpoint::emit(const runtime::StepContext& ctx, const runtime::WorldState& actual) {
  Impl& s = *impl_;
  if (!config_.publish_actual || !s.client) return;
  mqtt::encode_actual(s.buffer, config_.vehicle_id, ctx, *s.model, actual, vehicle(), config_.payload);
  try {
    s.client->publish(s.topics.actual, s.buffer.data(), s.buffer.size(), 0, false);
  } catch (const ::mqtt::exception&) {
    // observers miss a state while the broker is away; nothing to count against the vehicle
  }
}

void MqttEndpoint::paused(bool on) {
  Impl& s = *impl_;
  if (s.stopped || !s.client) return;
  // retained, like online/offline: a vehicle that reconnects meanwhile hears it too
  const std::string& text = on ? s.status_paused : s.status_online;
  try {
    if (s.client->is_connected()) s.client->publish(s.topics.runtime_status, text.data(), text.size(), 1, true);
  } catch (const ::mqtt::exception& e) {
    spdlog::warn("endpoint \"{}\": could not tell the vehicle the session {}: {}", name(), on ? "paused" : "resumed",
                 e.what());
  }
}

void MqttEndpoint::stop() {
  Impl& s = *impl_;
  if (s.stopped) return;
  s.stopped = true;
  if (s.client) {
    try {
      if (s.client->is_connected()) {
        s.client->publish(s.topics.runtime_status, s.status_offline.data(), s.status_offline.size(), 1, true)
            ->wait_for(milliseconds(500));
        s.client->disconnect()->wait_for(milliseconds(1000));
      }
    } catch (const ::mqtt::exception& e) {
      spdlog::debug("endpoint \"{}\": disconnect: {}", name(), e.what());
    }
    try {
      s.client->disable_callbacks();
    } catch (...) {
    }
  }
  if (s.program) {
    const int st = s.program->stop(milliseconds(config_.launch ? config_.launch->kill_after_ms : 2000));
    info("endpoint \"{}\": vehicle program {}", name(), ChildProcess::describe_status(st));
  }
}

MqttCounters MqttEndpoint::mqtt_counters() const {
  std::lock_guard<std::mutex> lock(impl_->m);
  return impl_->c;
}

void MqttEndpoint::summarize(nlohmann::json& out) const {
  const MqttCounters c = mqtt_counters();
  nlohmann::json j;
  j["broker"] = config_.broker;
  j["client_id"] = config_.client_id;
  j["session"] = config_.session;
  j["vehicle_id"] = config_.vehicle_id;
  j["qos"] = config_.qos;
  j["payload"] = mqtt::to_string(config_.payload);
  j["tcp_nodelay"] = config_.tcp_nodelay;
  {
    std::lock_guard<std::mutex> shaping(impl_->shape_m);
    if (auto lf = runtime::link_fault_summary(impl_->shape_out, impl_->shape_in); !lf.is_null())
      j["link_faults"] = std::move(lf);
  }
  j["counters"] = {{"published", c.published},
                   {"publish_errors", c.publish_errors},
                   {"received", c.received},
                   {"applied", c.applied},
                   {"stale", c.stale},
                   {"duplicate", c.duplicate},
                   {"out_of_order", c.out_of_order},
                   {"retained", c.retained},
                   {"malformed", c.malformed},
                   {"wrong_vehicle", c.wrong_vehicle},
                   {"queue_overflow", c.queue_overflow},
                   {"connects", c.connects},
                   {"republished", c.republished},
                   {"connection_lost", c.connection_lost},
                   {"vehicle_offline", c.vehicle_offline},
                   {"nodelay_sockets", c.nodelay_sockets}};
  {
    std::lock_guard<std::mutex> lock(impl_->m);
    if (!impl_->last_reject.empty()) j["last_rejected"] = impl_->last_reject;
    if (impl_->outages_total > 0) {
      nlohmann::json list = nlohmann::json::array();
      for (const Impl::Outage& o : impl_->outages) {
        nlohmann::json x;
        x["after_step"] = o.asked ? nlohmann::json(o.after_step) : nlohmann::json(nullptr);
        if (o.seconds >= 0)
          x["seconds"] = o.seconds;
        else
          x["lasting_s"] = std::chrono::duration<double>(SteadyClock::now() - o.lost_at).count();
        list.push_back(std::move(x));
      }
      j["outages"] = std::move(list);
      j["outages_total"] = impl_->outages_total;
    }
  }
  out["mqtt"] = std::move(j);
}

}  // namespace tether::adapters
