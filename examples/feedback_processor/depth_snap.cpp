// SPDX-License-Identifier: Apache-2.0
// A template feedback processor: copy this file to start one (docs/feedback.md).
//
// `depth_snap` (phase post) trusts the vehicle's depth measurement completely and nothing
// else: it sets the twin's z to the measured one and leaves x, y and the orientation to the
// model. Adding it is this class plus one registration line (here in main(); a built-in
// processor gets a line in the registry of runtime/feedback/src/feedback.cpp instead).
#include <atomic>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "tether/feedback/feedback.hpp"
#include "tether/loop/session.hpp"

using namespace tether::runtime;

namespace {

class DepthSnap final : public FeedbackProcessor {
 public:
  // configure: read the keys (unknown ones are errors with their file position), size buffers
  void configure(const ConfigNode& node, const WorldModel&, int) override {
    node.expect_map({"name", "type", "max_jump_m"});
    max_jump_m_ = node.number_or("max_jump_m", 0.5, Range::positive());
  }
  FeedbackPhase phase() const override { return FeedbackPhase::post; }

  // the step: no allocation, no string work; measurements are this vehicle's, this step's
  void post(const FeedbackContext& ctx, const WorldModel&, const WorldState&, WorldState& state) override {
    last_jump_m_ = 0;
    for (const Measurement& m : ctx.measurements) {
      if (!m.has_pose || m.body >= state.bodies.size()) continue;
      const double jump = m.position_m.z() - state.bodies[m.body].position_m.z();
      if (std::abs(jump) > max_jump_m_) {  // a glitch, not the vehicle: count it, ignore it
        ++rejected_;
        continue;
      }
      state.bodies[m.body].position_m.z() = m.position_m.z();
      last_jump_m_ = jump;
    }
  }

  // what reaches the summary, the recording (one value per field per step) and keyframes
  void summarize(nlohmann::json& out) const override { out["rejected"] = rejected_; }
  std::vector<std::string> record_fields() const override { return {"jump_m"}; }
  void record(std::vector<double>& out) const override { out.push_back(last_jump_m_); }
  void snapshot(std::string& out) const override {
    out.append(reinterpret_cast<const char*>(&rejected_), sizeof rejected_);
  }
  bool restore(std::string_view bytes) override {
    if (bytes.size() != sizeof rejected_) return false;
    std::memcpy(&rejected_, bytes.data(), sizeof rejected_);
    return true;
  }

 private:
  double max_jump_m_ = 0.5;
  double last_jump_m_ = 0;
  std::uint64_t rejected_ = 0;
};

// a vehicle that reports a depth 10 cm below where the twin thinks it is
class Sounder final : public Endpoint {
 public:
  using Endpoint::Endpoint;
  bool publish(const StepContext&, const WorldState& projected) override {
    z_m_ = projected.bodies[0].position_m.z() - 0.1;
    return true;
  }
  GatherStatus gather(const StepContext& ctx, SteadyClock::time_point, Reply& reply) override {
    reply.clear();
    reply.step = ctx.step;
    Measurement m;
    m.has_pose = true;
    m.position_m = {0, 0, z_m_};
    reply.measurements.push_back(m);
    return GatherStatus::ready;
  }

 private:
  double z_m_ = 0;
};

}  // namespace

int main() {
  // the registry line
  register_feedback_processor(
      "depth_snap", [] { return std::make_unique<DepthSnap>(); },
      "post: set the depth to the measured one, rejecting jumps");

  const Scenario sc = parse_scenario(R"(name: depth_snap_demo
world: {water: {density_kg_m3: 1025}}
vehicles:
  - name: auv
    bodies: [{name: hull, shape: {type: sphere, radius_m: 0.2}, mass_kg: 34, initial: {position_m: [0, 0, -2]}}]
    feedback: [{type: depth_snap, max_jump_m: 0.3}]
loop: {period_ms: 10, real_time_factor: 0, steps: 5}
endpoints: [{name: sounder, type: sounder, vehicle: auv}]
)",
                                     "depth_snap_demo.yaml");
  std::vector<std::unique_ptr<Endpoint>> eps;
  eps.push_back(std::make_unique<Sounder>(sc.endpoints[0]));
  Session session(sc, std::move(eps));
  std::atomic<bool> stop{false};
  const Outcome outcome = session.run(stop);
  const double z = session.state().bodies[0].position_m.z();
  std::printf("after 5 steps the twin is at z = %.3f m (the model alone would be near -2)\n%s\n", z,
              session.summary()["feedback"].dump(2).c_str());
  // five snaps of 10 cm each (the test runs this program): a template that still works
  return outcome == Outcome::completed && z < -2.45 && z > -2.55 ? 0 : 1;
}
