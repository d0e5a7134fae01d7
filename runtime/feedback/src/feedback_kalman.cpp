// SPDX-License-Identifier: Apache-2.0
// `kalman`: a post-advance error-state Kalman filter. The nominal state is the twin's own
// S_{k+1}, advanced by the model (the process model); the filter keeps the covariance of the
// error in (position, rotation vector, velocity, angular velocity), world frame, and on each
// measurement moves the state by the gain-weighted innovation. Innovation, its normalized
// square and the position standard deviations go to the recording.
#include <algorithm>
#include <cmath>

#include <Eigen/Cholesky>
#include <nlohmann/json.hpp>

#include "feedback_processors.hpp"

namespace tether::runtime::feedback_detail {

namespace {

using Mat12 = Eigen::Matrix<double, 12, 12>;
using Vec12 = Eigen::Matrix<double, 12, 1>;

class KalmanProcessor final : public FeedbackProcessor {
 public:
  void configure(const ConfigNode& node, const WorldModel& model, int vehicle) override {
    node.expect_map({"name", "type", "part", "position_stddev_m", "orientation_stddev_rad", "velocity_stddev_m_s",
                     "angular_velocity_stddev_rad_s", "accel_noise_m_s2", "angular_accel_noise_rad_s2",
                     "initial_stddev_scale", "use_velocity", "gate"});
    body_ = part_body(node, model, vehicle);
    const double sp = node.number_or("position_stddev_m", 0.01, kStddevRange);
    const double so = node.number_or("orientation_stddev_rad", 0.01, kAngleStddevRange);
    const double sv = node.number_or("velocity_stddev_m_s", 0.02, kStddevRange);
    const double sw = node.number_or("angular_velocity_stddev_rad_s", 0.02, kRateStddevRange);
    accel_q_ = std::pow(node.number_or("accel_noise_m_s2", 0.5, kStddevRange), 2);
    angular_q_ = std::pow(node.number_or("angular_accel_noise_rad_s2", 0.5, kStddevRange), 2);
    const double scale = node.number_or("initial_stddev_scale", 10.0, kStddevRange);
    use_velocity_ = node.boolean_or("use_velocity", true);
    gate_ = node.number_or("gate", 0.0, Range::non_negative());
    r_pose_.setZero();
    r_pose_.diagonal() << sp * sp, sp * sp, sp * sp, so * so, so * so, so * so;
    r_rate_.setZero();
    r_rate_.diagonal() << sv * sv, sv * sv, sv * sv, sw * sw, sw * sw, sw * sw;
    p_.setZero();
    p_.topLeftCorner<6, 6>() = scale * scale * r_pose_;
    p_.bottomRightCorner<6, 6>() = scale * scale * r_rate_;
  }
  FeedbackPhase phase() const override { return FeedbackPhase::post; }

  void post(const FeedbackContext& ctx, const WorldModel& model, const WorldState&, WorldState& state) override {
    predict(ctx.dt_s);
    innovation_.setZero();
    nis_ = 0;
    const Measurement* m = measurement_of(ctx, body_);
    if (!m || static_cast<std::size_t>(body_) >= state.bodies.size()) return;
    BodyState& b = state.bodies[static_cast<std::size_t>(body_)];
    const Vec3 v = linear_velocity(model, state, body_);
    const Vec3 w = angular_velocity(model, state, body_);
    const Eigen::Matrix<double, 6, 6> r_pose = m->has_covariance ? m->pose_covariance : r_pose_;
    Vec12 dx = Vec12::Zero();
    bool applied;
    const Vec6 e = pose_error(b, *m);
    innovation_ = e;
    if (use_velocity_ && m->has_velocity) {
      Vec12 nu;
      nu << e, m->velocity_m_s - v, m->angular_velocity_rad_s - w;
      Mat12 r = Mat12::Zero();
      r.topLeftCorner<6, 6>() = r_pose;
      r.bottomRightCorner<6, 6>() = r_rate_;
      applied = update<12>(nu, r, dx);
    } else {
      applied = update<6>(e, r_pose, dx);
    }
    if (!applied) return;
    b.position_m += dx.segment<3>(0);
    b.orientation = rotate_by(dx.segment<3>(3), b.orientation);
    set_velocity(model, state, body_, v + dx.segment<3>(6), w + dx.segment<3>(9));
  }

  void summarize(nlohmann::json& out) const override {
    out["updates"] = updates_;
    out["rejected"] = rejected_;
    out["mean_nis"] = updates_ ? nis_sum_ / static_cast<double>(updates_) : 0.0;
    out["position_stddev_m"] = {std::sqrt(p_(0, 0)), std::sqrt(p_(1, 1)), std::sqrt(p_(2, 2))};
  }
  std::vector<std::string> record_fields() const override {
    return {"innovation_x_m",
            "innovation_y_m",
            "innovation_z_m",
            "innovation_rx_rad",
            "innovation_ry_rad",
            "innovation_rz_rad",
            "nis",
            "stddev_x_m",
            "stddev_y_m",
            "stddev_z_m",
            "stddev_yaw_rad"};
  }
  void record(std::vector<double>& out) const override {
    for (int i = 0; i < 6; ++i) out.push_back(innovation_[i]);
    out.push_back(nis_);
    for (int i : {0, 1, 2, 5}) out.push_back(std::sqrt(p_(i, i)));
  }
  void snapshot(std::string& out) const override {
    put_bytes(out, p_);
    put_bytes(out, updates_);
    put_bytes(out, rejected_);
    put_bytes(out, nis_sum_);
  }
  bool restore(std::string_view b) override {
    return get_bytes(b, p_) && get_bytes(b, updates_) && get_bytes(b, rejected_) && get_bytes(b, nis_sum_) && b.empty();
  }

  /// The part's body (for tests).
  static int part_body(const ConfigNode& node, const WorldModel& model, int vehicle) {
    const VehicleModel& v = model.vehicles[static_cast<std::size_t>(vehicle)];
    if (!node.has("part")) return v.bodies.front();
    const int b = model.find_body(v.name + "." + node.string("part"));
    if (b < 0) node["part"].error("no part \"" + node.string("part") + "\" in vehicle \"" + v.name + "\"");
    return std::max(b, v.bodies.front());
  }

 private:
  // constant-velocity error dynamics over one step, white acceleration noise
  void predict(double dt) {
    Mat12 f = Mat12::Identity();
    f.block<3, 3>(0, 6).diagonal().setConstant(dt);
    f.block<3, 3>(3, 9).diagonal().setConstant(dt);
    p_ = f * p_ * f.transpose();
    const double q3 = dt * dt * dt / 3, q2 = dt * dt / 2;
    for (int i = 0; i < 3; ++i) {
      for (auto [q, o] : {std::pair{accel_q_, 0}, std::pair{angular_q_, 3}}) {
        const int a = o + i, c = o + 6 + i;
        p_(a, a) += q * q3;
        p_(a, c) += q * q2;
        p_(c, a) += q * q2;
        p_(c, c) += q * dt;
      }
    }
  }

  // the update with the first N error components measured (6: pose, 12: pose and rates)
  template <int N>
  bool update(const Eigen::Matrix<double, N, 1>& nu, const Eigen::Matrix<double, N, N>& r, Vec12& dx) {
    using MatN = Eigen::Matrix<double, N, N>;
    const MatN s = p_.template topLeftCorner<N, N>() + r;
    const Eigen::LDLT<MatN> s_inv(s);
    const double nis = nu.dot(s_inv.solve(nu));
    nis_ = nis;
    if (gate_ > 0 && nis > gate_) {
      ++rejected_;
      return false;
    }
    // K = P H^T S^-1, with H = [I_N 0]
    const Eigen::Matrix<double, 12, N> k = s_inv.solve(p_.template topRows<N>()).transpose();
    dx = k * nu;
    // Joseph form keeps P symmetric and positive
    Mat12 ikh = Mat12::Identity();
    ikh.template leftCols<N>() -= k;
    p_ = ikh * p_ * ikh.transpose() + k * r * k.transpose();
    ++updates_;
    nis_sum_ += nis;
    return true;
  }

  int body_ = 0;
  Mat12 p_ = Mat12::Identity();
  Eigen::Matrix<double, 6, 6> r_pose_, r_rate_;
  double accel_q_ = 0.25, angular_q_ = 0.25, gate_ = 0;
  bool use_velocity_ = true;
  Vec6 innovation_ = Vec6::Zero();
  double nis_ = 0;
  std::uint64_t updates_ = 0, rejected_ = 0;
  double nis_sum_ = 0;
};

}  // namespace

std::unique_ptr<FeedbackProcessor> make_kalman() { return std::make_unique<KalmanProcessor>(); }

int part_body(const ConfigNode& node, const WorldModel& model, int vehicle) {
  return KalmanProcessor::part_body(node, model, vehicle);
}

}  // namespace tether::runtime::feedback_detail
