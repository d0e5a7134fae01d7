// SPDX-License-Identifier: Apache-2.0
// `direct` and `blend`: post-advance processors that move the state toward the measured
// pose (direct adjustment: J. Brawn, "An AUV Simulator for
// Incorporating Physical Feedback", 2012, §7.2). They overwrite the state, so they can put a
// body where the physics would never let it go (through a wall): vector_adjust cannot.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "feedback_processors.hpp"

namespace tether::runtime::feedback_detail {

namespace {

// the blend factor's values, for the scenario key and a live set alike (docs/feedback.md)
const Range alpha_range{0, 1, true};

// alpha = 1 is `direct`; 0 < alpha < 1 is `blend`
class BlendProcessor final : public FeedbackProcessor {
 public:
  explicit BlendProcessor(bool direct) : direct_(direct) {}

  void configure(const ConfigNode& node, const WorldModel&, int) override {
    if (direct_) {
      node.expect_map({"name", "type", "use_velocity"});
    } else {
      node.expect_map({"name", "type", "alpha", "use_velocity"});
      alpha_ = node.number_or("alpha", 0.1, alpha_range);
    }
    use_velocity_ = node.boolean_or("use_velocity", true);
  }
  FeedbackPhase phase() const override { return FeedbackPhase::post; }

  std::vector<std::string> parameter_names() const override {
    if (direct_) return {};
    return {"alpha"};
  }
  bool parameter(std::string_view name, double& value) const override {
    if (direct_ || name != "alpha") return false;
    value = alpha_;
    return true;
  }
  Range parameter_range(std::string_view) const override { return alpha_range; }
  bool set_parameter(std::string_view name, double value, std::string* why) override {
    if (direct_ || name != "alpha") return FeedbackProcessor::set_parameter(name, value, why);
    if (!alpha_range.contains(value)) {
      if (why) *why = "alpha must be " + alpha_range.expected();
      return false;
    }
    alpha_ = value;
    return true;
  }

  void post(const FeedbackContext& ctx, const WorldModel& model, const WorldState&, WorldState& state) override {
    last_m_ = 0;
    last_rad_ = 0;
    for (const Measurement& m : ctx.measurements) {
      if (!m.has_pose || m.body >= state.bodies.size()) continue;
      BodyState& b = state.bodies[m.body];
      const int body = static_cast<int>(m.body);
      // velocities first: set_velocity reads the orientation the momenta are taken in
      const Vec3 v = linear_velocity(model, state, body);
      const Vec3 w = angular_velocity(model, state, body);
      const Vec6 e = pose_error(b, m);
      b.position_m += alpha_ * e.head<3>();
      b.orientation = direct_ ? m.orientation.normalized() : rotate_by(alpha_ * e.tail<3>(), b.orientation);
      if (use_velocity_ && m.has_velocity)
        set_velocity(model, state, body, v + alpha_ * (m.velocity_m_s - v),
                     w + alpha_ * (m.angular_velocity_rad_s - w));
      else
        set_velocity(model, state, body, v, w);  // keep the velocities in the new orientation
      last_m_ = std::max(last_m_, alpha_ * e.head<3>().norm());
      last_rad_ = std::max(last_rad_, alpha_ * e.tail<3>().norm());
      ++corrections_;
      sum_m_ += alpha_ * e.head<3>().norm();
      max_m_ = std::max(max_m_, alpha_ * e.head<3>().norm());
    }
  }

  void summarize(nlohmann::json& out) const override {
    if (!direct_) out["alpha"] = alpha_;
    out["corrections"] = corrections_;
    out["mean_correction_m"] = corrections_ ? sum_m_ / static_cast<double>(corrections_) : 0.0;
    out["max_correction_m"] = max_m_;
  }
  std::vector<std::string> record_fields() const override { return {"correction_m", "correction_rad"}; }
  void record(std::vector<double>& out) const override {
    out.push_back(last_m_);
    out.push_back(last_rad_);
  }
  // the figures for the summary are the only memory; the correction itself is stateless
  void snapshot(std::string& out) const override {
    put_bytes(out, corrections_);
    put_bytes(out, sum_m_);
    put_bytes(out, max_m_);
  }
  bool restore(std::string_view bytes) override {
    return get_bytes(bytes, corrections_) && get_bytes(bytes, sum_m_) && get_bytes(bytes, max_m_) && bytes.empty();
  }

 private:
  bool direct_;
  double alpha_ = 1;
  bool use_velocity_ = true;
  double last_m_ = 0, last_rad_ = 0;
  std::uint64_t corrections_ = 0;
  double sum_m_ = 0, max_m_ = 0;
};

}  // namespace

std::unique_ptr<FeedbackProcessor> make_direct() { return std::make_unique<BlendProcessor>(true); }
std::unique_ptr<FeedbackProcessor> make_blend() { return std::make_unique<BlendProcessor>(false); }

}  // namespace tether::runtime::feedback_detail
