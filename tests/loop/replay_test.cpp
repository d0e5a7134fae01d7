// SPDX-License-Identifier: Apache-2.0
// Record a session in-process, read it back, replay it without the endpoints and check
// that every state is bit-identical: from the start, from a keyframe, across timeout
// policies and faults, after an abort, and from a file cut short.
#include <doctest/doctest.h>

#include <atomic>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tether/recording/mcap_reader.hpp"
#include "tether/recording/mcap_writer.hpp"
#include "tether/recording/recorder.hpp"
#include "tether/loop/recorder_inputs.hpp"
#include "tether/loop/replay_endpoint.hpp"
#include "tether/loop/session.hpp"
#include "tether/scenario/endpoint_types.hpp"

using namespace tether::runtime;

namespace {

// a buoyant sphere and a box pushed around by two endpoints; water, gravity and
// damping make the dynamics non-linear so that any difference in inputs shows
const char* scenario_text = R"(name: replay
world:
  gravity_m_s2: [0, 0, -9.81]
  water: {density_kg_m3: 1025, surface_z_m: 0, current_m_s: [0.05, 0, 0]}
vehicles:
  - name: v
    bodies:
      - name: hull
        shape: {type: sphere, radius_m: 0.2}
        mass_kg: 33
        centre_of_buoyancy_m: [0, 0, 0.02]
        damping: {linear: [5, 8, 8], quadratic: [10, 20, 20], angular_linear: [1, 1, 1], angular_quadratic: [1, 1, 1]}
        initial: {position_m: [0, 0, -1], orientation_rpy_deg: [5, -3, 20]}
  - name: w
    bodies:
      - name: box
        shape: {type: box, size_m: [0.6, 0.3, 0.2]}
        mass_kg: 30
        damping: {linear: [5, 5, 5], quadratic: [10, 10, 10], angular_linear: [1, 1, 1], angular_quadratic: [1, 1, 1]}
        initial: {position_m: [2, 1, -2]}
loop: {period_ms: 10, real_time_factor: 0, steps: 300}
endpoints:
  - {name: ctl, type: scripted, vehicle: v, deadline_ms: 1, timeout_policy: hold}
  - {name: rig, type: scripted, vehicle: w, deadline_ms: 1, timeout_policy: safe}
recording: {keyframe_every_steps: 50, flush_interval_s: 0.05}
)";

// answers with forces that change every step, and measurements; goes silent or broken
// on the steps it is told to
class ScriptedEndpoint final : public Endpoint {
 public:
  ScriptedEndpoint(const EndpointConfig& config, std::uint32_t body, double gain)
      : Endpoint(config), body_(body), gain_(gain) {}

  std::function<bool(std::uint64_t)> silent = [](std::uint64_t) { return false; };
  std::uint64_t fault_from = UINT64_MAX;

  bool publish(const StepContext& ctx, const WorldState&) override {
    if (ctx.step >= fault_from) {
      fault_message_ = "cable pulled";
      return false;
    }
    return true;
  }
  GatherStatus gather(const StepContext& ctx, SteadyClock::time_point, Reply& reply) override {
    if (ctx.step >= fault_from) return GatherStatus::fault;
    if (silent(ctx.step)) return GatherStatus::timeout;
    reply.clear();
    reply.step = ctx.step;
    const double k = static_cast<double>(ctx.step);
    BodyWrench w;
    w.force_body_n = Vec3(gain_ * std::sin(k * 0.05), gain_ * 0.3 * std::cos(k * 0.031), -gain_ * 0.5);
    w.torque_body_nm = Vec3(0.1 * std::sin(k * 0.02), 0, 0.5 * std::cos(k * 0.07));
    w.force_world_n = Vec3(0, 0, 1.0 / 3.0);
    reply.wrenches.emplace_back(body_, w);
    DeviceCommand c;
    c.device = static_cast<std::uint16_t>(body_);
    c.size = 4;
    const float thrust = static_cast<float>(std::sin(k * 0.05));
    std::memcpy(c.bytes.data(), &thrust, 4);
    reply.commands.push_back(c);
    if (ctx.step % 3 == 0) {
      Measurement m;
      m.body = body_;
      m.measured_time_ns = ctx.time_ns + ctx.period_ns;
      m.has_pose = true;
      m.has_covariance = ctx.step % 2 == 0;
      m.position_m = Vec3(0.001 * k, -0.002 * k, -1.0 - 0.001 * k);
      m.pose_covariance *= 1e-4;
      reply.measurements.push_back(m);
    }
    return GatherStatus::ready;
  }
  void safe_reply(Reply& reply) const override {
    // not "no forces": replay must apply exactly this on the safe steps
    reply.clear();
    BodyWrench w;
    w.force_world_n = Vec3(-3, 0.5, 2);
    w.torque_body_nm = Vec3(0, 0, -0.25);
    reply.wrenches.emplace_back(body_, w);
  }

 private:
  std::uint32_t body_;
  double gain_;
};

// one folder per test process, removed when the process ends
struct TempFolder {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tether_replay_test_" + std::to_string(getpid()));
  ~TempFolder() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

std::string temp_path(const std::string& name) {
  static TempFolder folder;
  std::filesystem::create_directories(folder.dir);
  return (folder.dir / name).string();
}

struct Recorded {
  std::string path;
  nlohmann::json summary;
  Outcome outcome = Outcome::completed;
  std::vector<std::uint64_t> hashes;  // hash of S_{k+1} per step, seen live
};

// runs the scenario with scripted endpoints and records it to `name`; `planned`, when not
// 0, is the run's length the recorder is told (its reserved ring slots)
Recorded record(const Scenario& sc, const std::string& name, std::uint64_t steps,
                const std::function<void(ScriptedEndpoint&, ScriptedEndpoint&)>& setup, std::uint64_t planned = 0) {
  Recorded out;
  out.path = temp_path(name);
  std::vector<std::unique_ptr<Endpoint>> eps;
  auto ctl = std::make_unique<ScriptedEndpoint>(sc.endpoints[0], 0, 40.0);
  auto rig = std::make_unique<ScriptedEndpoint>(sc.endpoints[1], 1, 25.0);
  setup(*ctl, *rig);
  eps.push_back(std::move(ctl));
  eps.push_back(std::move(rig));
  SessionOptions options;
  options.steps = steps;
  options.after_step = [&out](const WorldState& s) {
    out.hashes.push_back(hash_state(s));
    return true;
  };
  Session session(sc, std::move(eps), options);
  RecorderInputs inputs = recorder_inputs(session);
  CHECK(inputs.steps == steps);
  if (planned != 0) inputs.steps = planned;
  Recorder recorder(sc, std::move(inputs));
  std::string error;
  REQUIRE(recorder.open(out.path, &error));
  session.set_recorder(&recorder);
  std::atomic<bool> stop{false};
  out.outcome = session.run(stop);
  out.summary = session.summary();
  REQUIRE(recorder.close(out.summary, &error));
  CHECK(recorder.dropped() == 0);
  return out;
}

struct Replayed {
  std::uint64_t steps = 0;
  std::uint64_t verified = 0;
  std::optional<Divergence> divergence;
  std::uint64_t final_hash = 0;
  std::vector<std::uint64_t> hashes;
};

// what `tether replay --verify [--from-step]` does, in-process
Replayed replay(const Recording& rec, const Keyframe* from = nullptr) {
  Replayed out;
  std::vector<std::unique_ptr<Endpoint>> eps;
  for (std::size_t i = 0; i < rec.scenario.endpoints.size(); ++i)
    eps.push_back(std::make_unique<ReplayEndpoint>(rec.scenario.endpoints[i], rec, i));
  const std::uint64_t first = from ? from->state.step : rec.steps.front().step;
  SessionOptions options;
  options.steps = rec.steps.back().step + 1 - first;
  options.after_step = [&](const WorldState& s) {
    out.hashes.push_back(hash_state(s));
    out.divergence = compare_state(rec, s);
    if (out.divergence) return false;
    ++out.verified;
    return true;
  };
  Session session(rec.scenario, std::move(eps), options);
  std::string error;
  if (from) REQUIRE(session.restore(*from, &error));
  std::atomic<bool> stop{false};
  (void)session.run(stop);
  out.steps = session.steps_done();
  out.final_hash = hash_state(session.state());
  return out;
}

Recording load(const std::string& path) {
  Recording rec;
  std::string error;
  REQUIRE_MESSAGE(load_recording(path, rec, &error), error);
  return rec;
}

}  // namespace

TEST_CASE("a recorded session replays bit-identically, misses and faults included") {
  const Scenario sc = parse_scenario(scenario_text, "replay.yaml");
  // ctl (hold) misses a burst and single steps; rig (safe) misses every 7th step, then breaks
  const Recorded r = record(sc, "policies.mcap", 300, [](ScriptedEndpoint& ctl, ScriptedEndpoint& rig) {
    ctl.silent = [](std::uint64_t k) { return (k >= 40 && k < 60) || k % 37 == 0; };
    rig.silent = [](std::uint64_t k) { return k % 7 == 3; };
    rig.fault_from = 250;
  });
  CHECK(r.outcome == Outcome::faulted);  // every step ran; rig broke at step 250
  CHECK(r.summary["endpoints"][0]["misses"].get<int>() > 20);
  CHECK(r.summary["endpoints"][1]["faults"] == 50);

  const Recording rec = load(r.path);
  CHECK_FALSE(rec.truncated);
  REQUIRE(rec.summary.has_value());
  CHECK((*rec.summary)["state_hash"] == r.summary["state_hash"]);
  REQUIRE(rec.steps.size() == 300);
  CHECK(rec.steps.front().step == 0);
  CHECK(rec.states.size() == 300);
  CHECK(rec.keyframes.size() == 6);  // steps 0, 50, ..., 250
  CHECK(rec.keyframes.count(250) == 1);
  CHECK(rec.endpoint_names == std::vector<std::string>{"ctl", "rig"});
  CHECK(rec.steps[45].slots[0].outcome == SlotOutcome::timeout);
  CHECK(rec.steps[260].slots[1].outcome == SlotOutcome::fault);
  CHECK(rec.steps[1].slots[0].reply.commands.size() == 1);
  CHECK(rec.steps[3].slots[0].reply.measurements.size() == 1);
  CHECK(rec.steps[3].slots[0].reply.measurements[0].has_covariance == false);
  CHECK(rec.steps[6].slots[0].reply.measurements[0].has_covariance == true);
  REQUIRE(rec.safe_replies.size() == 2);
  CHECK(rec.safe_replies[1].wrenches.size() == 1);
  CHECK(rec.safe_replies[1].wrenches[0].second.force_world_n.x() == -3.0);
  int first_misses = 0;
  for (const auto& e : rec.events) first_misses += e["message"].get<std::string>().find("first missed deadline") == 0;
  CHECK(first_misses == 2);
  for (std::size_t i = 0; i < rec.steps.size(); ++i) CHECK(rec.steps[i].state_hash == r.hashes[i]);

  const Replayed p = replay(rec);
  CHECK_MESSAGE(!p.divergence, (p.divergence ? p.divergence->describe() : ""));
  CHECK(p.steps == 300);
  CHECK(p.verified == 300);
  CHECK(p.hashes == r.hashes);
  // the summary writes it as 16 hex digits
  CHECK(p.final_hash == std::stoull(r.summary["state_hash"].get<std::string>(), nullptr, 16));
  CHECK(r.summary["state_hash"].get<std::string>().size() == 16);
}

TEST_CASE("a run longer than its recorder planned for records every step, and replays bit for bit") {
  // The recorder reserves ring slots for the steps it is told of (a seek in a live replay
  // runs on past them); told of 1 step, 500 steps fill slots it grows on their first use.
  const Scenario sc = parse_scenario(scenario_text, "replay.yaml");
  const Recorded r = record(
      sc, "past_plan.mcap", 500,
      [](ScriptedEndpoint& ctl, ScriptedEndpoint& rig) {
        ctl.silent = [](std::uint64_t k) { return k % 11 == 0; };
        rig.silent = [](std::uint64_t k) { return k % 13 == 5; };
      },
      1);
  const Recording rec = load(r.path);
  CHECK_FALSE(rec.truncated);
  REQUIRE(rec.steps.size() == 500);
  CHECK(rec.keyframes.size() == 10);  // steps 0, 50, ..., 450
  for (std::size_t i = 0; i < rec.steps.size(); ++i) CHECK(rec.steps[i].state_hash == r.hashes[i]);
  const Replayed p = replay(rec);
  CHECK_MESSAGE(!p.divergence, (p.divergence ? p.divergence->describe() : ""));
  CHECK(p.verified == 500);
  CHECK(p.hashes == r.hashes);

  // counts only (tether info): every record read and checked, none kept, the same counts
  Recording counted;
  std::string error;
  LoadOptions counts_only;
  counts_only.steps = counts_only.states = counts_only.keyframes = counts_only.events = false;
  REQUIRE_MESSAGE(load_recording(r.path, counted, &error, counts_only), error);
  CHECK(counted.steps.empty());
  CHECK(counted.states.empty());
  CHECK(counted.keyframes.empty());
  CHECK(counted.events.empty());
  CHECK(counted.step_count == 500);
  CHECK(rec.step_count == 500);
  CHECK(counted.first_step == rec.steps.front().step);
  CHECK(counted.keyframe_count == 10);
  CHECK(counted.event_count == rec.events.size());
  CHECK(rec.event_count == rec.events.size());
  CHECK(counted.channels == rec.channels);
  CHECK(counted.summary == rec.summary);
}

TEST_CASE("the recorder waits when full only while the session is unpaced, live changes of the factor included") {
  const Scenario sc = parse_scenario(scenario_text, "replay.yaml");
  SessionControl control;
  std::vector<bool> waiting;  // the recorder's policy after each step
  std::unique_ptr<Recorder> recorder;
  SessionOptions options;
  options.steps = 40;
  options.control = &control;
  options.after_step = [&](const WorldState& s) {
    waiting.push_back(recorder->wait_when_full());
    // paced (fast enough for a test) from step 10, unpaced again from step 20
    ControlRequest r{ControlRequest::SetRtf{s.step == 10 ? 1000.0 : 0.0}, {}};
    if (s.step == 10 || s.step == 20) REQUIRE(control.submit(std::move(r)));
    return true;
  };
  std::vector<std::unique_ptr<Endpoint>> eps;
  eps.push_back(std::make_unique<ScriptedEndpoint>(sc.endpoints[0], 0, 40.0));
  eps.push_back(std::make_unique<ScriptedEndpoint>(sc.endpoints[1], 1, 25.0));
  Session session(sc, std::move(eps), options);
  recorder = std::make_unique<Recorder>(sc, recorder_inputs(session));
  std::string error;
  REQUIRE(recorder->open_without_file(&error));
  recorder->set_wait_when_full(false);  // whatever the caller set: the session decides
  session.set_recorder(recorder.get());
  CHECK(recorder->wait_when_full());  // the scenario's factor is 0
  std::atomic<bool> stop{false};
  REQUIRE(session.run(stop) == Outcome::completed);
  REQUIRE(recorder->close(session.summary(), &error));
  REQUIRE(waiting.size() == 40);
  CHECK(waiting[5]);
  CHECK_FALSE(waiting[15]);
  CHECK(waiting[30]);
}

TEST_CASE("a background_take (the session's record of a late refit) is refused from a client") {
  const Scenario sc = parse_scenario(scenario_text, "replay.yaml");
  SessionControl control;
  SessionOptions options;
  options.steps = 10;
  options.control = &control;
  bool answered = false, accepted = true;
  std::string why;
  options.after_step = [&](const WorldState& s) {
    if (s.step == 3) {
      ControlRequest r{ControlRequest::World{BackgroundTake{"blend", true}}, [&](bool ok, const std::string& text) {
                         answered = true;
                         accepted = ok;
                         why = text;
                       }};
      REQUIRE(control.submit(std::move(r)));
    }
    return true;
  };
  std::vector<std::unique_ptr<Endpoint>> eps;
  eps.push_back(std::make_unique<ScriptedEndpoint>(sc.endpoints[0], 0, 40.0));
  eps.push_back(std::make_unique<ScriptedEndpoint>(sc.endpoints[1], 1, 25.0));
  Session session(sc, std::move(eps), options);
  std::atomic<bool> stop{false};
  REQUIRE(session.run(stop) == Outcome::completed);
  CHECK(answered);
  CHECK_FALSE(accepted);
  CHECK(why.find("the session's own record") != std::string::npos);
}

TEST_CASE("a live inject_fault that would stall a block endpoint is refused as the scenario's would be") {
  std::string text = scenario_text;
  const std::string safe = "timeout_policy: safe}";
  text.replace(text.find(safe), safe.size(), "timeout_policy: block}");
  auto& facts = endpoint_type_facts();
  facts["scripted"].link_faults = true;  // a link like serial's: its peer does not send its step again
  const Scenario sc = parse_scenario(text, "replay.yaml");
  SessionControl control;
  SessionOptions options;
  options.steps = 10;
  options.control = &control;
  std::vector<std::pair<bool, std::string>> answers;
  options.after_step = [&](const WorldState& s) {
    if (s.step == 3)
      for (const char* entry : {R"({"endpoint": "rig", "kind": "drop", "duration_steps": 2})",
                                R"({"endpoint": "rig", "kind": "duplicate", "duration_steps": 2})"}) {
        ControlRequest r{ControlRequest::World{InjectFault{entry}},
                         [&](bool ok, const std::string& text) { answers.emplace_back(ok, text); }};
        REQUIRE(control.submit(std::move(r)));
      }
    return true;
  };
  std::vector<std::unique_ptr<Endpoint>> eps;
  eps.push_back(std::make_unique<ScriptedEndpoint>(sc.endpoints[0], 0, 40.0));
  eps.push_back(std::make_unique<ScriptedEndpoint>(sc.endpoints[1], 1, 25.0));
  Session session(sc, std::move(eps), options);
  std::atomic<bool> stop{false};
  const Outcome outcome = session.run(stop);
  facts.erase("scripted");
  REQUIRE(outcome == Outcome::completed);
  REQUIRE(answers.size() == 2);
  CHECK_FALSE(answers[0].first);
  CHECK_MESSAGE(answers[0].second.find("under its timeout_policy block would stall the session") != std::string::npos,
                answers[0].second);
  CHECK_MESSAGE(answers[1].first, answers[1].second);  // duplicate lets messages through
}

TEST_CASE("replay from a keyframe equals the original run from that step on") {
  const Scenario sc = parse_scenario(scenario_text, "replay.yaml");
  const Recorded r = record(sc, "from.mcap", 300, [](ScriptedEndpoint& ctl, ScriptedEndpoint& rig) {
    ctl.silent = [](std::uint64_t k) { return k >= 140 && k < 155; };   // a held reply across the keyframe
    rig.silent = [](std::uint64_t k) { return k == 149 || k == 150; };  // and a safe one
  });
  const Recording rec = load(r.path);
  for (std::uint64_t from : {0, 150, 250}) {
    CAPTURE(from);
    REQUIRE(rec.keyframes.count(from) == 1);
    const Replayed p = replay(rec, &rec.keyframes.at(from));
    CHECK_MESSAGE(!p.divergence, (p.divergence ? p.divergence->describe() : ""));
    CHECK(p.steps == 300 - from);
    CHECK(p.verified == 300 - from);
    CHECK(p.final_hash == r.hashes.back());
    CHECK(std::equal(p.hashes.begin(), p.hashes.end(), r.hashes.begin() + static_cast<std::ptrdiff_t>(from)));
  }
  // `--from-step 173` starts at the keyframe at or before it
  auto it = rec.keyframes.upper_bound(173);
  --it;
  CHECK(it->first == 150);
}

TEST_CASE("compare_state names the step and the field that differ") {
  const Scenario sc = parse_scenario(scenario_text, "replay.yaml");
  const Recorded r = record(sc, "diverge.mcap", 120, [](ScriptedEndpoint&, ScriptedEndpoint&) {});

  SUBCASE("a replayed state that differs in one bit") {
    const Recording rec = load(r.path);
    WorldState s;
    REQUIRE(decode_state(rec.states[77], s, nullptr));
    CHECK(s.step == 78);
    CHECK_FALSE(compare_state(rec, s).has_value());
    const double before = s.bodies[1].linear_momentum.y();
    s.bodies[1].linear_momentum.y() = std::bit_cast<double>(std::bit_cast<std::uint64_t>(before) ^ 1);
    const auto d = compare_state(rec, s);
    REQUIRE(d.has_value());
    CHECK(d->step == 77);
    CHECK(d->field == "bodies[1] (w.box).linear_momentum.y");
    CHECK(std::bit_cast<std::uint64_t>(d->recorded) == std::bit_cast<std::uint64_t>(before));
    CHECK(d->recorded_hash == rec.steps[77].state_hash);
    CHECK(d->replayed_hash == hash_state(s));
    CHECK(d->describe().find("step 77: bodies[1] (w.box).linear_momentum.y recorded ") == 0);
  }
  SUBCASE("an altered recording: replay stops at the altered step") {
    Recording rec = load(r.path);
    WorldState s;
    REQUIRE(decode_state(rec.states[60], s, nullptr));
    s.bodies[0].position_m.z() += 1e-12;
    rec.states[60].clear();
    encode_state(s, rec.states[60]);
    rec.steps[60].state_hash = hash_state(s);
    const Replayed p = replay(rec);
    REQUIRE(p.divergence.has_value());
    CHECK(p.divergence->step == 60);
    CHECK(p.divergence->field == "bodies[0] (v.hull).position_m.z");
    CHECK(p.verified == 60);
    CHECK(p.steps == 61);  // the step that diverged completed, then replay stopped
  }
  SUBCASE("without per-step states only the hash is compared") {
    Recording rec = load(r.path);
    rec.states.clear();
    WorldState s;
    REQUIRE(decode_state(load(r.path).states[10], s, nullptr));
    s.time_ns += 1;
    const auto d = compare_state(rec, s);
    REQUIRE(d.has_value());
    CHECK(d->step == 10);
    CHECK(d->field.empty());
    CHECK(d->describe().find("step 10: state hash ") == 0);
  }
}

TEST_CASE("an aborted session's recording ends at the last completed step and replays") {
  Scenario sc = parse_scenario(scenario_text, "replay.yaml");
  sc.endpoints[1].policy = TimeoutPolicy::abort;
  const Recorded r = record(sc, "abort.mcap", 300, [](ScriptedEndpoint&, ScriptedEndpoint& rig) {
    rig.silent = [](std::uint64_t k) { return k == 123; };
  });
  CHECK(r.outcome == Outcome::aborted);
  Recording rec = load(r.path);
  // the recording's scenario says `safe`; the test changed the policy in memory only
  rec.scenario.endpoints[1].policy = TimeoutPolicy::abort;
  REQUIRE(rec.summary.has_value());
  CHECK((*rec.summary)["outcome"] == "aborted");
  CHECK(rec.steps.size() == 123);
  bool abort_event = false;
  for (const auto& e : rec.events) abort_event |= e["level"] == 5 && e["name"] == "session";
  CHECK(abort_event);
  const Replayed p = replay(rec);
  CHECK(!p.divergence);
  CHECK(p.verified == 123);
}

TEST_CASE("a recording cut short loads as truncated and verifies the steps it holds") {
  Scenario sc = parse_scenario(scenario_text, "replay.yaml");
  sc.recording.compress = false;  // more, smaller chunks
  const Recorded r = record(sc, "full.mcap", 600, [](ScriptedEndpoint& ctl, ScriptedEndpoint&) {
    ctl.silent = [](std::uint64_t k) { return k % 11 == 0; };
  });
  std::ifstream in(r.path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t previous_steps = 0;
  for (double fraction : {0.35, 0.6, 0.9}) {
    CAPTURE(fraction);
    const std::string cut = temp_path("cut.mcap");
    std::ofstream(cut, std::ios::binary | std::ios::trunc)
        .write(bytes.data(), static_cast<std::streamsize>(static_cast<double>(bytes.size()) * fraction));
    const Recording rec = load(cut);
    CHECK(rec.truncated);
    CHECK(!rec.truncation.empty());
    CHECK_FALSE(rec.summary.has_value());
    REQUIRE(!rec.steps.empty());
    CHECK(rec.steps.size() < 600);
    CHECK(rec.steps.size() >= previous_steps);
    previous_steps = rec.steps.size();
    const Replayed p = replay(rec);
    CHECK(!p.divergence);
    CHECK(p.verified == rec.steps.size());
    CHECK(p.final_hash == r.hashes[rec.steps.size() - 1]);
  }
}

TEST_CASE("load_recording refuses what is not a readable Tether recording") {
  Recording rec;
  std::string error;
  CHECK_FALSE(load_recording(temp_path("missing.mcap"), rec, &error));
  CHECK(error.find("cannot open") != std::string::npos);

  const std::string junk = temp_path("junk.mcap");
  std::mt19937 rng(7);
  std::string noise(5000, '\0');
  for (char& c : noise) c = static_cast<char>(rng());
  std::ofstream(junk, std::ios::binary) << noise;
  CHECK_FALSE(load_recording(junk, rec, &error));
  CHECK(error.find("not an MCAP file") != std::string::npos);

  // a valid MCAP file that some other program wrote
  const std::string other = temp_path("other.mcap");
  mcap::Writer w;
  REQUIRE(w.open(other, mcap::WriterOptions{}, &error));
  const auto ch = w.add_channel(0, "/chatter", "json");
  w.write(ch, 0, 1, 1, std::string_view("{}"));
  REQUIRE(w.close(&error));
  CHECK_FALSE(load_recording(other, rec, &error));
  CHECK(error == other + ": not a Tether recording (no scenario.yaml attachment)");
}

namespace {

// copies a recording through the MCAP reader and writer without `key` in its `tether`
// metadata: the recording as an earlier build wrote it
void copy_without(const std::string& from, const std::string& to, const std::string& key) {
  mcap::Reader reader;
  std::string error;
  REQUIRE_MESSAGE(reader.open(from, &error), error);
  mcap::Writer writer;
  REQUIRE_MESSAGE(writer.open(to, {}, &error), error);
  for (const auto& [id, s] : reader.schemas()) REQUIRE(writer.add_schema(s.name, s.encoding, s.data) == id);
  for (const auto& [id, c] : reader.channels())
    REQUIRE(writer.add_channel(c.schema_id, c.topic, c.message_encoding, c.metadata) == id);
  for (const auto& m : reader.metadata()) {
    auto entries = m.entries;
    if (m.name == "tether") REQUIRE(entries.erase(key) == 1);
    writer.add_metadata(m.name, entries);
  }
  for (const auto& a : reader.attachments())
    writer.add_attachment(a.name, a.media_type, a.log_time_ns, a.create_time_ns, a.data);
  mcap::MessageView msg;
  while (reader.next(msg)) writer.write(msg.channel_id, msg.sequence, msg.log_time_ns, msg.publish_time_ns, msg.data);
  REQUIRE_MESSAGE(writer.close(&error), error);
}

}  // namespace

TEST_CASE("a recording from before free sub-steps replays bit for bit with the fixed rule it was made with") {
  // the session as builds before free sub-steps ran it: every step in 2 ms sub-steps, with a
  // scenario text that does not name free_substep_s
  Scenario sc = parse_scenario(scenario_text, "replay.yaml");
  REQUIRE(sc.model.free_substep_s > sc.model.max_substep_s);
  sc.model.free_substep_s = sc.model.max_substep_s;
  const Recorded r = record(sc, "fixed_rule.mcap", 200, [](ScriptedEndpoint&, ScriptedEndpoint&) {});
  const std::string old_path = temp_path("fixed_rule_old.mcap");
  copy_without(r.path, old_path, "substep_rule");

  const Recording old_rec = load(old_path);
  CHECK(old_rec.scenario.model.free_substep_s == old_rec.scenario.model.max_substep_s);
  const Replayed p = replay(old_rec);
  CHECK_MESSAGE(!p.divergence, (p.divergence ? p.divergence->describe() : ""));
  CHECK(p.verified == 200);
  CHECK(p.hashes == r.hashes);

  // the same steps under today's rule (what the key says) are not those bits: the key matters
  const Recording marked = load(r.path);
  CHECK(marked.scenario.model.free_substep_s > marked.scenario.model.max_substep_s);
  const Replayed q = replay(marked);
  CHECK(q.divergence.has_value());
}
