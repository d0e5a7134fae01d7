// SPDX-License-Identifier: Apache-2.0
// `vector_adjust`: the pre-advance processor of J. Brawn's Corrective Feedback
// System ("An AUV Simulator for Incorporating Physical Feedback", 2012, §7.2: vector adjustment). It finds
// the corrective force and torque, constant over the step, that make step() from S_k land on
// the measured pose, and adds them to the step's inputs. The advance itself is the real one,
// so walls and other bodies still push back: a measurement behind a wall is not reached.
//
// Gauss–Newton over step(): x = (F_world, tau_world), r(x) = pose_error(step(S_k, u + x), z).
// The Jacobian is taken once per step by forward differences (6 trial steps; the map is
// nearly linear over one step), then 1–3 damped iterations x <- x + (J^T J + mu I)^-1 J^T r.
#include <algorithm>
#include <cmath>

#include <Eigen/Cholesky>
#include <nlohmann/json.hpp>

#include "feedback_processors.hpp"

namespace tether::runtime::feedback_detail {

namespace {

// max_force_n and max_torque_nm, for the scenario keys and a live set alike (docs/feedback.md)
const Range limit_range = Range::positive();

using Mat6 = Eigen::Matrix<double, 6, 6>;

class VectorAdjustProcessor final : public FeedbackProcessor {
 public:
  void configure(const ConfigNode& node, const WorldModel& model, int) override {
    node.expect_map({"name", "type", "iterations", "max_force_n", "max_torque_nm", "tolerance_m"});
    iterations_ = static_cast<int>(node.integer_or("iterations", 2, 1, 3));
    max_force_n_ = node.number_or("max_force_n", 1000.0, limit_range);
    max_torque_nm_ = node.number_or("max_torque_nm", 200.0, limit_range);
    tolerance_m_ = node.number_or("tolerance_m", 1e-6, Range::non_negative());
    // pre-size the trial buffers: the step never allocates
    trial_.bodies.resize(model.bodies.size());
    trial_inputs_.resize(model.bodies.size());
  }
  FeedbackPhase phase() const override { return FeedbackPhase::pre; }

  std::vector<std::string> parameter_names() const override { return {"max_force_n", "max_torque_nm"}; }
  Range parameter_range(std::string_view) const override { return limit_range; }
  bool parameter(std::string_view name, double& value) const override {
    if (name == "max_force_n")
      value = max_force_n_;
    else if (name == "max_torque_nm")
      value = max_torque_nm_;
    else
      return false;
    return true;
  }
  bool set_parameter(std::string_view name, double value, std::string* why) override {
    double* target = name == "max_force_n" ? &max_force_n_ : name == "max_torque_nm" ? &max_torque_nm_ : nullptr;
    if (!target) return FeedbackProcessor::set_parameter(name, value, why);
    if (!limit_range.contains(value)) {
      if (why) *why = std::string(name) + " must be " + limit_range.expected();
      return false;
    }
    *target = value;
    return true;
  }

  void pre(const FeedbackContext& ctx, const WorldModel& model, const WorldState& state, StepInputs& inputs) override {
    force_n_.setZero();
    torque_nm_.setZero();
    residual_before_m_ = residual_after_m_ = 0;
    for (const Measurement& m : ctx.measurements) {
      if (!m.has_pose || m.body >= state.bodies.size() || m.body >= inputs.wrenches.size()) continue;
      adjust(model, state, inputs, m, ctx.dt_s);
    }
  }

  void summarize(nlohmann::json& out) const override {
    out["iterations"] = iterations_;
    out["adjustments"] = adjustments_;
    out["mean_force_n"] = adjustments_ ? sum_force_n_ / static_cast<double>(adjustments_) : 0.0;
    out["max_force_n"] = max_force_seen_n_;
    out["saturated"] = saturated_;
    out["mean_residual_after_m"] = adjustments_ ? sum_residual_m_ / static_cast<double>(adjustments_) : 0.0;
  }
  std::vector<std::string> record_fields() const override {
    return {"force_x_n",   "force_y_n",   "force_z_n",         "torque_x_nm",
            "torque_y_nm", "torque_z_nm", "residual_before_m", "residual_after_m"};
  }
  void record(std::vector<double>& out) const override {
    for (int i = 0; i < 3; ++i) out.push_back(force_n_[i]);
    for (int i = 0; i < 3; ++i) out.push_back(torque_nm_[i]);
    out.push_back(residual_before_m_);
    out.push_back(residual_after_m_);
  }
  void snapshot(std::string& out) const override {
    put_bytes(out, adjustments_);
    put_bytes(out, saturated_);
    put_bytes(out, sum_force_n_);
    put_bytes(out, max_force_seen_n_);
    put_bytes(out, sum_residual_m_);
  }
  bool restore(std::string_view b) override {
    return get_bytes(b, adjustments_) && get_bytes(b, saturated_) && get_bytes(b, sum_force_n_) &&
           get_bytes(b, max_force_seen_n_) && get_bytes(b, sum_residual_m_) && b.empty();
  }

 private:
  // residual of landing on `m` when the correction x is added to the body's wrench
  Vec6 residual(const WorldModel& model, const WorldState& state, const StepInputs& inputs, const Measurement& m,
                const Vec6& x, double dt_s) {
    trial_.step = state.step;
    trial_.time_ns = state.time_ns;
    trial_.bodies.assign(state.bodies.begin(), state.bodies.end());
    trial_inputs_.wrenches.assign(inputs.wrenches.begin(), inputs.wrenches.end());
    BodyWrench& w = trial_inputs_.wrenches[m.body];
    w.force_world_n += x.head<3>();
    w.torque_world_nm += x.tail<3>();
    if (step(model, trial_, trial_inputs_, dt_s, nullptr, scratch_) != StepStatus::ok) {
      ++faults_;
      return Vec6::Zero();
    }
    return pose_error(trial_.bodies[m.body], m);
  }

  void adjust(const WorldModel& model, const WorldState& state, StepInputs& inputs, const Measurement& m, double dt_s) {
    Vec6 x = Vec6::Zero();
    Vec6 r = residual(model, state, inputs, m, x, dt_s);
    const double before = r.head<3>().norm();
    // forward-difference Jacobian of the landing pose; probes scaled to the body so that
    // each moves it by about 10 µm or 10 µrad
    const BodyModel& body = model.bodies[m.body];
    const double h_force = std::max(1e-5 * 2 * body.mass_kg / (dt_s * dt_s), 1e-6);
    const double h_torque = std::max(1e-5 * 2 * body.inertia_body.diagonal().maxCoeff() / (dt_s * dt_s), 1e-6);
    Mat6 jac;
    for (int i = 0; i < 6; ++i) {
      Vec6 probe = Vec6::Zero();
      const double h = i < 3 ? h_force : h_torque;
      probe[i] = h;
      // the residual is measured - landed, so its derivative is minus the landing's
      jac.col(i) = (residual(model, state, inputs, m, probe, dt_s) - r) / h;
    }
    // damped normal equations: directions a contact blocks get a small step, not a huge one
    const Mat6 jtj = jac.transpose() * jac;
    const double mu = 1e-9 * std::max(jtj.diagonal().maxCoeff(), 1e-300);
    const Eigen::LDLT<Mat6> solver(jtj + mu * Mat6::Identity());
    for (int it = 0; it < iterations_; ++it) {
      if (r.head<3>().norm() <= tolerance_m_ && r.tail<3>().norm() <= tolerance_m_) break;
      x -= solver.solve(jac.transpose() * r);
      // bounded: a wall or a wild measurement cannot demand an unbounded force
      bool clipped = false;
      const double f = x.head<3>().norm(), t = x.tail<3>().norm();
      if (f > max_force_n_) x.head<3>() *= max_force_n_ / f, clipped = true;
      if (t > max_torque_nm_) x.tail<3>() *= max_torque_nm_ / t, clipped = true;
      r = residual(model, state, inputs, m, x, dt_s);
      if (clipped) {
        ++saturated_;
        break;
      }
    }
    BodyWrench& w = inputs.wrenches[m.body];
    w.force_world_n += x.head<3>();
    w.torque_world_nm += x.tail<3>();
    force_n_ += x.head<3>();
    torque_nm_ += x.tail<3>();
    residual_before_m_ = std::max(residual_before_m_, before);
    residual_after_m_ = std::max(residual_after_m_, r.head<3>().norm());
    ++adjustments_;
    sum_force_n_ += x.head<3>().norm();
    max_force_seen_n_ = std::max(max_force_seen_n_, x.head<3>().norm());
    sum_residual_m_ += r.head<3>().norm();
  }

  int iterations_ = 2;
  double max_force_n_ = 1000, max_torque_nm_ = 200, tolerance_m_ = 1e-6;
  WorldState trial_;
  StepInputs trial_inputs_;
  PhysicsScratch scratch_;
  // this step's figures
  Vec3 force_n_{0, 0, 0}, torque_nm_{0, 0, 0};
  double residual_before_m_ = 0, residual_after_m_ = 0;
  // totals
  std::uint64_t adjustments_ = 0, saturated_ = 0, faults_ = 0;
  double sum_force_n_ = 0, max_force_seen_n_ = 0, sum_residual_m_ = 0;
};

}  // namespace

std::unique_ptr<FeedbackProcessor> make_vector_adjust() { return std::make_unique<VectorAdjustProcessor>(); }

}  // namespace tether::runtime::feedback_detail
