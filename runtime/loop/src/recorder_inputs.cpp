// SPDX-License-Identifier: Apache-2.0
#include "tether/loop/recorder_inputs.hpp"

namespace tether::runtime {

RecorderInputs recorder_inputs(const Session& session) {
  RecorderInputs in;
  for (const auto& e : session.endpoints()) in.endpoint_names.push_back(e->name());
  for (const auto& p : session.processors()) in.processor_fields.emplace_back(p->name(), p->record_fields());
  // replay applies exactly what each endpoint's `safe` policy applied
  in.safe_replies.resize(session.endpoints().size());
  for (std::size_t i = 0; i < in.safe_replies.size(); ++i) session.endpoints()[i]->safe_reply(in.safe_replies[i]);
  for (const auto& e : session.endpoints()) in.wire_topics.push_back(e->wire_topics());
  in.steps = session.steps_total();
  return in;
}

}  // namespace tether::runtime
