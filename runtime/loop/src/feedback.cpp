// SPDX-License-Identifier: Apache-2.0
#include "tether/loop/feedback.hpp"

#include <functional>

#include <utility>

#include "feedback_processors.hpp"
#include "tether/scenario/scenario.hpp"

namespace tether::runtime {

const char* to_string(FeedbackPhase phase) {
  switch (phase) {
    case FeedbackPhase::pre: return "pre";
    case FeedbackPhase::post: return "post";
    case FeedbackPhase::model: return "model";
  }
  return "?";
}

namespace {

using Factory = std::function<std::unique_ptr<FeedbackProcessor>()>;

// the registry: one line per built-in processor type; register_feedback_processor appends
std::vector<std::pair<std::string, Factory>>& registry() {
  static std::vector<std::pair<std::string, Factory>> r = {
      {"direct", feedback_detail::make_direct},
      {"blend", feedback_detail::make_blend},
      {"vector_adjust", feedback_detail::make_vector_adjust},
      {"kalman", feedback_detail::make_kalman},
      {"estimate", feedback_detail::make_estimate},
  };
  return r;
}

}  // namespace

std::unique_ptr<FeedbackProcessor> make_feedback_processor(const std::string& type) {
  for (const auto& [name, factory] : registry())
    if (name == type) return factory();
  return nullptr;
}

std::vector<std::unique_ptr<FeedbackProcessor>> make_feedback_processors(const Scenario& scenario) {
  std::vector<std::unique_ptr<FeedbackProcessor>> out;
  for (const FeedbackConfig& fc : scenario.feedback) {
    auto p = make_feedback_processor(fc.type);
    if (!p) {
      if (!fc.type.empty()) {
        std::string list;
        for (const auto& t : feedback_processor_types()) list += (list.empty() ? "" : ", ") + t;
        fc.node["type"].error("unknown feedback processor \"" + fc.type + "\" (known: " +
                              (list.empty() ? std::string("none") : list) + ")");
      }
      continue;
    }
    p->set_identity(fc.name, fc.type);
    p->configure(fc.node, scenario.model, fc.vehicle);
    out.push_back(std::move(p));
  }
  scenario.throw_if_errors();
  return out;
}

bool register_feedback_processor(const std::string& type, Factory factory) {
  for (const auto& entry : registry())
    if (entry.first == type) return false;
  registry().emplace_back(type, std::move(factory));
  return true;
}

std::vector<std::string> feedback_processor_types() {
  std::vector<std::string> out;
  for (const auto& entry : registry()) out.push_back(entry.first);
  return out;
}

}  // namespace tether::runtime
