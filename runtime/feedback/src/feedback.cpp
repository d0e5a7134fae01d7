// SPDX-License-Identifier: Apache-2.0
#include "tether/feedback/feedback.hpp"

#include <utility>

#include "feedback_processors.hpp"
#include "tether/feedback/batch_refit.hpp"
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

FeedbackRegistry& feedback_processors() {
  // filled on first use, so the built-ins are there whoever asks first (no static
  // initializer that a linker could drop from the static library)
  static FeedbackRegistry r = [] {
    FeedbackRegistry reg("feedback processor");
    reg.add("direct", feedback_detail::make_direct, "post: set the pose to the measured one");
    reg.add("blend", feedback_detail::make_blend, "post: move the pose part of the way toward the measured one");
    reg.add("vector_adjust", feedback_detail::make_vector_adjust,
            "pre: the force and torque that make the step land on the measured pose");
    reg.add("kalman", feedback_detail::make_kalman, "post: error-state Kalman filter on pose and velocity");
    reg.add("estimate", feedback_detail::make_estimate,
            "model: online estimate of thrust gain, drag, buoyancy and current");
    return reg;
  }();
  return r;
}

std::unique_ptr<FeedbackProcessor> make_feedback_processor(const std::string& type) {
  const FeedbackFactory* factory = feedback_processors().find(type);
  return factory ? (*factory)() : nullptr;
}

std::vector<std::unique_ptr<FeedbackProcessor>> make_feedback_processors(const Scenario& scenario) {
  std::vector<std::unique_ptr<FeedbackProcessor>> out;
  for (const FeedbackConfig& fc : scenario.feedback) {
    auto p = make_feedback_processor(fc.type);
    if (!p) {
      if (!fc.type.empty()) fc.node["type"].error(feedback_processors().unknown_message(fc.type));
      continue;
    }
    p->set_identity(fc.name, fc.type);
    p->configure(fc.node, scenario.model, fc.vehicle);
    out.push_back(std::move(p));
  }
  scenario.throw_if_errors();
  return out;
}

bool register_feedback_processor(const std::string& type, FeedbackFactory factory, const std::string& description) {
  return feedback_processors().add(type, std::move(factory), description);
}

std::vector<std::string> feedback_processor_types() { return feedback_processors().names(); }

namespace {
BatchRefitFactory& refit_factory() {
  static BatchRefitFactory f;
  return f;
}
BatchRefitProbe& refit_probe() {
  static BatchRefitProbe p;
  return p;
}
}  // namespace

void set_batch_refit_factory(BatchRefitFactory factory, BatchRefitProbe probe) {
  refit_factory() = std::move(factory);
  refit_probe() = std::move(probe);
}
const BatchRefitFactory& batch_refit_factory() { return refit_factory(); }
std::string batch_refit_problem() { return refit_probe() ? refit_probe()() : std::string(); }

}  // namespace tether::runtime
