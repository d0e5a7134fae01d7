// SPDX-License-Identifier: Apache-2.0
// Test doubles the CLI registers only when TETHER_TEST_DOUBLES=1 is set in its environment,
// so that tests can reach paths no correct component takes: a feedback processor that
// throws mid-run shows the exit code "failed at step k" (4) end to end, recording and all.
// Listed by `tether kinds` when registered; never in a normal run (docs/extending.md).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "commands.hpp"
#include "tether/feedback/feedback.hpp"

namespace tether::cli {

namespace {

// `{type: test_throw, at_step: K}`: a post processor that throws at step K
class ThrowAtStep final : public runtime::FeedbackProcessor {
 public:
  void configure(const runtime::ConfigNode& node, const runtime::WorldModel&, int) override {
    node.expect_map({"name", "type", "at_step"});
    at_step_ = static_cast<std::uint64_t>(node.integer_or("at_step", 0, 0, 1'000'000'000));
  }
  runtime::FeedbackPhase phase() const override { return runtime::FeedbackPhase::post; }
  void post(const runtime::FeedbackContext& ctx, const runtime::WorldModel&, const runtime::WorldState&,
            runtime::WorldState&) override {
    if (ctx.step == at_step_) throw std::runtime_error("test double: thrown on purpose");
  }

 private:
  std::uint64_t at_step_ = 0;
};

}  // namespace

void register_test_doubles() {
  const char* flag = std::getenv("TETHER_TEST_DOUBLES");
  if (!flag || std::strcmp(flag, "1") != 0) return;
  runtime::register_feedback_processor(
      "test_throw", [] { return std::make_unique<ThrowAtStep>(); },
      "tests only (TETHER_TEST_DOUBLES=1): post, throws at step `at_step`");
}

}  // namespace tether::cli
