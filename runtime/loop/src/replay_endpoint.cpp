// SPDX-License-Identifier: Apache-2.0
#include "tether/loop/replay_endpoint.hpp"

namespace tether::runtime {

ReplayEndpoint::ReplayEndpoint(const EndpointConfig& config, const Recording& recording, std::size_t index)
    : Endpoint(config), recording_(recording), index_(index) {
  // the safe reply the original endpoint applied; recordings made before it was recorded
  // fall back to "no forces"
  if (index < recording.safe_replies.size()) safe_ = recording.safe_replies[index];
}

bool ReplayEndpoint::publish(const StepContext&, const WorldState&) { return true; }

GatherStatus ReplayEndpoint::gather(const StepContext& ctx, SteadyClock::time_point, Reply& reply) {
  const StepRecord* r = recording_.step(ctx.step);
  if (!r) {
    fault_message_ = "no recorded reply for step " + std::to_string(ctx.step);
    return GatherStatus::fault;
  }
  const SlotRecord& slot = r->slots[index_];
  switch (slot.outcome) {
    case SlotOutcome::fresh:
      reply.step = slot.reply.step;
      reply.wrenches.assign(slot.reply.wrenches.begin(), slot.reply.wrenches.end());
      reply.commands.assign(slot.reply.commands.begin(), slot.reply.commands.end());
      reply.measurements.assign(slot.reply.measurements.begin(), slot.reply.measurements.end());
      reply.copy_wire(slot.reply);
      reply.logs.clear();
      return GatherStatus::ready;
    case SlotOutcome::timeout: return GatherStatus::timeout;
    case SlotOutcome::fault: fault_message_ = "recorded fault"; return GatherStatus::fault;
  }
  return GatherStatus::fault;
}

void ReplayEndpoint::safe_reply(Reply& reply) const { reply = safe_; }

}  // namespace tether::runtime
