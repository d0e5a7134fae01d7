// SPDX-License-Identifier: Apache-2.0
// A template endpoint: copy this file to start one (docs/extending.md).
//
// `loopback` plays a vehicle that is exactly its twin. Each step it answers at once: it
// pushes the vehicle's first body with a constant world-frame force from its config and
// reports the projected pose back as its measurement (what a perfect tracker would see).
// Scenario keys: the common ones (name, type, vehicle, deadline_ms, timeout_policy) and
//   force_n: [fx, fy, fz]   world frame, default [0, 0, 0]
#include "loopback.hpp"

#include <memory>

#include <nlohmann/json.hpp>

#include "tether/endpoints/endpoint_factory.hpp"
#include "tether/loop/endpoint.hpp"
#include "tether/scenario/endpoint_types.hpp"

namespace tether::examples {

namespace {

using namespace tether::runtime;

// its own keys, beside the common ones; the registration carries the same list
constexpr const char* loopback_keys[] = {"force_n"};

class LoopbackEndpoint final : public Endpoint {
 public:
  // configure: read the keys (unknown ones are errors with their file position); may allocate
  LoopbackEndpoint(const EndpointConfig& config, const Scenario& scenario) : Endpoint(config) {
    const ConfigNode& n = config.node;
    expect_endpoint_keys(n, loopback_keys);
    force_world_n_ = n.vec3_or("force_n", Vec3(0, 0, 0));
    if (config.vehicle_index < 0) {
      if (!n.has("vehicle")) n.error("a loopback endpoint needs `vehicle`");
      return;  // an unknown vehicle is already reported by the scenario parser
    }
    body_ = static_cast<std::uint32_t>(
        scenario.model.vehicles[static_cast<std::size_t>(config.vehicle_index)].bodies.front());
  }

  // phase 2: keep what the twin will be at; no allocation, no blocking
  bool publish(const StepContext& ctx, const WorldState& projected) override {
    const BodyState& b = projected.bodies[body_];
    measurement_.body = body_;
    measurement_.measured_time_ns = projected.time_ns;
    measurement_.has_pose = true;
    measurement_.position_m = b.position_m;
    measurement_.orientation = b.orientation;
    pending_step_ = ctx.step;
    has_pending_ = true;
    return true;
  }

  // phase 3: the reply for this step (never one for another step: that would be stale)
  GatherStatus gather(const StepContext& ctx, SteadyClock::time_point, Reply& reply) override {
    if (!has_pending_ || pending_step_ != ctx.step) return GatherStatus::timeout;
    has_pending_ = false;
    reply.clear();  // keeps the vectors' capacity: no allocation after the first step
    reply.step = ctx.step;
    BodyWrench w;
    w.force_world_n = force_world_n_;
    reply.wrenches.emplace_back(body_, w);
    reply.measurements.push_back(measurement_);
    ++echoed_;
    return GatherStatus::ready;
  }

  // what reaches the summary
  void summarize(nlohmann::json& out) const override {
    out["loopback"] = {{"echoed", echoed_}, {"force_n", {force_world_n_.x(), force_world_n_.y(), force_world_n_.z()}}};
  }

 private:
  Vec3 force_world_n_{0, 0, 0};
  std::uint32_t body_ = 0;
  Measurement measurement_;
  std::uint64_t pending_step_ = 0;
  bool has_pending_ = false;
  std::uint64_t echoed_ = 0;
};

}  // namespace

bool register_loopback_endpoint() {
  // the registry line
  adapters::endpoint_kinds().add(
      "loopback",
      {[](const EndpointConfig& config, const Scenario& scenario) -> std::unique_ptr<Endpoint> {
         return std::make_unique<LoopbackEndpoint>(config, scenario);
       },
       loopback_keys, /*link_faults=*/false},
      "examples/endpoint: a vehicle that is its twin, pushed by a constant force");
  return adapters::endpoint_kinds().find("loopback") != nullptr;
}

}  // namespace tether::examples
