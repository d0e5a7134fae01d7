// SPDX-License-Identifier: Apache-2.0
// Reading a trial back: the recording is replayed through a session (its recorded replies in
// place of the endpoints), with one extra `model` processor at the head of the list that
// captures, for the fitted body, the inputs as gathered (before any `estimate` processor
// scales or lags them) and the measurements that passed the gate. It changes nothing, so
// every replayed state is checked against the recording: what the fit sees is what ran.
#include <atomic>
#include <memory>
#include <stdexcept>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "tether/hal/actuators.hpp"
#include "tether/hal/device_bank.hpp"
#include "tether/identify/identify.hpp"
#include "tether/feedback/feedback.hpp"
#include "tether/loop/replay_endpoint.hpp"
#include "tether/loop/session.hpp"
#include "tether/recording/replay.hpp"
#include "trial_capture.hpp"

namespace tether::identify {

namespace {

constexpr const char* capture_type = "tether.identify.capture";

class CaptureProcessor final : public runtime::FeedbackProcessor {
 public:
  void configure(const runtime::ConfigNode&, const runtime::WorldModel&, int) override {}
  runtime::FeedbackPhase phase() const override { return runtime::FeedbackPhase::model; }
  void update_model(const runtime::FeedbackContext& ctx, runtime::WorldModel&, const runtime::WorldState& state,
                    runtime::StepInputs& inputs) override {
    const auto body = static_cast<std::size_t>(capture_.body());
    capture_.capture(ctx, state, body < inputs.wrenches.size() ? &inputs.wrenches[body] : nullptr);
  }
  TrialCapture& capture() { return capture_; }

 private:
  TrialCapture capture_;
};

// the vehicle the replies measured: the first body any measurement names
int measured_vehicle(const runtime::Recording& rec) {
  for (const runtime::StepRecord& r : rec.steps)
    for (const runtime::SlotRecord& slot : r.slots)
      for (const runtime::Measurement& m : slot.reply.measurements)
        if (m.has_pose && m.body < rec.scenario.model.bodies.size()) return rec.scenario.model.bodies[m.body].vehicle;
  return -1;
}

// "hidden_truth" of a stand-in and the final estimates of an `estimate` processor, from the
// recorded summary, for the body's name
void read_summary(const nlohmann::json& j, const std::string& body, Trial& out) {
  if (j.is_object()) {
    if (const auto it = j.find("hidden_truth"); it != j.end() && it->is_object() && it->contains(body))
      for (const auto& [k, v] : (*it)[body].items())
        if (v.is_number()) out.truth.emplace_back(k, v.get<double>());
    if (const auto it = j.find("estimates"); it != j.end() && it->is_object() && out.online.empty())
      for (const auto& [k, v] : it->items()) {
        if (!v.is_number()) continue;
        Trial::Online e;
        e.name = k;
        e.value = v.get<double>();
        const auto sd = j.find("stddev"), id = j.find("identified");
        if (sd != j.end() && sd->is_object() && (*sd)[k].is_number()) e.stddev = (*sd)[k].get<double>();
        if (id != j.end() && id->is_object() && (*id)[k].is_boolean()) e.identified = (*id)[k].get<bool>();
        out.online.push_back(e);
      }
    if (const auto it = j.find("combinations"); it != j.end() && it->is_object() && out.online_combinations.empty())
      for (const auto& [k, v] : it->items())
        if (v.is_object() && v.contains("value") && v["value"].is_number())
          out.online_combinations.push_back({k, v["value"].get<double>(), v.value("stddev", 0.0), false});
    for (const auto& [k, v] : j.items())
      if (k != "hidden_truth" && k != "estimates" && k != "combinations") read_summary(v, body, out);
  } else if (j.is_array()) {
    for (const auto& v : j) read_summary(v, body, out);
  }
}

}  // namespace

bool load_trial(const std::string& path, const std::string& vehicle, Trial& out, std::string* error) {
  const auto fail = [&](const std::string& why) {
    if (error) *error = path + ": " + why;
    return false;
  };
  runtime::Recording rec;
  std::string why;
  if (!runtime::load_recording(path, rec, &why)) {
    if (error) *error = why;
    return false;
  }
  if (rec.steps.empty()) return fail("the recording has no steps");
  const runtime::Scenario& sc = rec.scenario;
  if (!sc.model.water.present || sc.model.gravity_m_s2.norm() <= 0)
    return fail("scenario \"" + sc.name +
                "\" has no water or no gravity: the fit's parameters (drag, buoyancy, "
                "current) act in water");
  const std::uint64_t first = rec.steps.front().step;
  if (first != sc.initial.step)
    return fail("the recording starts at step " + std::to_string(first) + ", not at the session's start");

  out = Trial{};
  out.path = path;
  if (vehicle.empty()) {
    out.vehicle = measured_vehicle(rec);
    if (out.vehicle < 0)
      return fail(
          "no endpoint measured a vehicle (the recorded replies hold no measurements): a fit needs the "
          "measured motion of a real or stand-in vehicle (an `mqtt` or `stand_in` endpoint)");
  } else {
    for (std::size_t v = 0; v < sc.model.vehicles.size(); ++v)
      if (sc.model.vehicles[v].name == vehicle) out.vehicle = static_cast<int>(v);
    if (out.vehicle < 0) return fail("scenario \"" + sc.name + "\" has no vehicle \"" + vehicle + "\"");
  }
  const auto& v = sc.model.vehicles[static_cast<std::size_t>(out.vehicle)];
  if (v.bodies.empty()) return fail("vehicle \"" + v.name + "\" has no body");
  out.body = v.bodies.front();
  out.dt_s = static_cast<double>(sc.loop.period_ns) * 1e-9;

  // the scenario with the capture at the head of the processors (registered once; a type
  // name no scenario file can use, it has a dot)
  (void)runtime::register_feedback_processor(capture_type, [] { return std::make_unique<CaptureProcessor>(); });
  runtime::Scenario replayed = sc;
  runtime::FeedbackConfig capture{"identify", capture_type, out.vehicle,
                                  runtime::ConfigNode(sc.context, YAML::Node(YAML::NodeType::Map), "identify", {})};
  replayed.feedback.insert(replayed.feedback.begin(), capture);
  replayed.recording.enabled = false;

  std::vector<std::unique_ptr<runtime::Endpoint>> endpoints;
  for (std::size_t i = 0; i < sc.endpoints.size(); ++i)
    endpoints.push_back(std::make_unique<runtime::ReplayEndpoint>(sc.endpoints[i], rec, i));
  runtime::SessionOptions so;
  so.real_time_factor = 0;
  so.steps = rec.steps.back().step + 1 - first;
  so.scripted_commands = &rec.commands;
  std::optional<runtime::Divergence> divergence;
  so.after_step = [&](const runtime::WorldState& s) {
    divergence = runtime::compare_state(rec, s);
    return !divergence;
  };
  std::unique_ptr<runtime::Session> session;
  try {
    session = std::make_unique<runtime::Session>(replayed, std::move(endpoints), so);
  } catch (const std::exception& e) {
    return fail(std::string("cannot replay the recording: ") + e.what());
  }
  for (const auto& p : session->processors())
    if (auto* c = dynamic_cast<CaptureProcessor*>(p.get())) c->capture().attach(&out, first, &session->devices());
  out.samples.reserve(static_cast<std::size_t>(*so.steps) + 2);
  out.twin.reserve(static_cast<std::size_t>(*so.steps) + 1);
  std::atomic<bool> stop{false};
  const runtime::Outcome outcome = session->run(stop);
  if (divergence)
    return fail("the recording does not replay (" + divergence->describe() +
                "): it was made by another version of tether, and what the fit would read is not what ran");
  if (outcome == runtime::Outcome::aborted || outcome == runtime::Outcome::failed)
    return fail("the replay stopped: " + session->abort_reason());
  for (auto& p : session->processors())
    if (auto* c = dynamic_cast<CaptureProcessor*>(p.get())) c->capture().attach(nullptr, first, nullptr);
  finish_capture(out);
  if (out.measured == 0)
    return fail("vehicle \"" + v.name + "\" was never measured (no reply holds a measurement of its body \"" +
                sc.model.bodies[static_cast<std::size_t>(out.body)].name + "\")");
  out.scenario = sc;
  if (rec.summary) read_summary(*rec.summary, sc.model.bodies[static_cast<std::size_t>(out.body)].name, out);
  return true;
}

}  // namespace tether::identify
