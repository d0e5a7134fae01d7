// SPDX-License-Identifier: Apache-2.0
#include "tether/loop/phase_profile.hpp"

#include <nlohmann/json.hpp>

namespace tether::runtime {

const char* to_string(Phase phase) {
  switch (phase) {
    case Phase::loop: return "loop";
    case Phase::keyframe: return "keyframe";
    case Phase::faults: return "faults";
    case Phase::project: return "project";
    case Phase::sense: return "sense";
    case Phase::identify: return "identify";
    case Phase::publish: return "publish";
    case Phase::gather: return "gather";
    case Phase::pre: return "pre";
    case Phase::advance: return "advance";
    case Phase::post: return "post";
    case Phase::expect: return "expect";
    case Phase::emit: return "emit";
    case Phase::record: return "record";
    case Phase::after_step: return "after_step";
    case Phase::pace: return "pace";
    case Phase::status: return "status";
    case Phase::count: break;
  }
  return "?";
}

nlohmann::json PhaseProfile::summary(std::uint64_t steps) const {
  std::uint64_t all = 0;
  for (std::uint64_t t : total_ns_) all += t;
  nlohmann::json phases = nlohmann::json::object();
  nlohmann::json order = nlohmann::json::array();
  for (std::size_t i = 0; i < n_; ++i) {
    if (entries_[i] == 0) continue;
    const char* name = to_string(static_cast<Phase>(i));
    order.push_back(name);
    phases[name] = {{"mean_ns_per_step", steps ? static_cast<double>(total_ns_[i]) / static_cast<double>(steps) : 0.0},
                    {"max_ns", max_ns_[i]},
                    {"share", all ? static_cast<double>(total_ns_[i]) / static_cast<double>(all) : 0.0}};
  }
  return {{"steps", steps}, {"order", order}, {"phases", phases}};
}

}  // namespace tether::runtime
