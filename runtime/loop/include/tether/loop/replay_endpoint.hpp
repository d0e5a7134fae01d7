// SPDX-License-Identifier: Apache-2.0
// An endpoint that answers each step with what a recording says the original participant
// answered: replay without hardware.
#pragma once

#include <cstddef>

#include "tether/loop/endpoint.hpp"
#include "tether/recording/replay.hpp"

namespace tether::runtime {

/// Plays one endpoint's recorded replies back, step by step.
class ReplayEndpoint final : public Endpoint {
 public:
  ReplayEndpoint(const EndpointConfig& config, const Recording& recording, std::size_t index);
  [[nodiscard]] bool publish(const StepContext& ctx, const WorldState& projected) override;
  [[nodiscard]] GatherStatus gather(const StepContext& ctx, SteadyClock::time_point deadline, Reply& reply) override;
  void safe_reply(Reply& reply) const override;
  /// Taken and ignored: the recorded replies already hold what the command did.
  bool operator_command(std::string_view verb, const nlohmann::json& arguments, bool apply, std::string* why) override {
    (void)verb;
    (void)arguments;
    (void)apply;
    (void)why;
    return true;
  }

 private:
  const Recording& recording_;
  std::size_t index_;
  Reply safe_;
};

}  // namespace tether::runtime
