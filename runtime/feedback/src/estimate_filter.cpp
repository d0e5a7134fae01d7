// SPDX-License-Identifier: Apache-2.0
// The `estimate` processor's online filter (estimate.hpp): a window's residual and its
// Jacobian by forward differences over the window's replay, the recursive least-squares step
// with forgetting, bounded, the noise scaled by what the residuals show. The identifiability
// the information says and the batch refit taken are in estimate_information.cpp.
#include <algorithm>
#include <cmath>

#include <Eigen/Cholesky>

#include "estimate.hpp"

namespace tether::runtime::feedback_detail {

void EstimateProcessor::update_from_window(const FeedbackContext& ctx, WorldModel& model, const WorldState& twin,
                                           std::int64_t t0, std::int64_t t1) {
  if (t0 - delay_ < 0) return;
  const EstimateWindows::Entry& start = windows_.entry(t0);
  if (start.time_index != t0 || !start.valid) return;
  for (std::int64_t t = t0 - delay_; t < t1 - delay_; ++t)
    if (windows_.entry(t).time_index != t || !windows_.entry(t).has_input || !windows_.rotors_known(t)) return;
  if (!start.has_velocity) return update_from_positions(ctx, model, twin, t0, t1);
  const EstimateWindows::Entry& end = windows_.entry(t1);
  Vec8 measured;
  measured << end.state.position_m, end.velocity, heading(end.state.orientation), end.angular_velocity.z();

  Vec8 base;
  if (!windows_.replay(model, replay_parameters(), theta_.data(), twin, t0, t1, ctx.dt_s, base)) return fault(model);
  JacP jac = JacP::Zero(8, n_params);
  for (int i = 0; i < n_params; ++i) {
    if (!active_[static_cast<std::size_t>(i)]) continue;
    VecP th = theta_;
    const double h = probe_step(i);
    th[i] += h;
    Vec8 probe;
    if (!windows_.replay(model, replay_parameters(), th.data(), twin, t0, t1, ctx.dt_s, probe)) return fault(model);
    probe[6] = base[6] + wrapped(probe[6] - base[6]);
    jac.col(i) = (probe - base) / h;
  }
  apply(model);

  // measurement noise of the window: both ends' noise, and the start velocity's noise
  // carried over the horizon (the start's angular velocity likewise for the heading)
  const double span_s = static_cast<double>(t1 - t0) * ctx.dt_s;
  const double sv_start = start.has_velocity ? sigma_v_ : 3 * sigma_v_;
  Vec8 r;
  const double rp = 2 * sigma_p_ * sigma_p_ + span_s * span_s * sv_start * sv_start;
  const double rv = end.has_velocity ? 2 * sigma_v_ * sigma_v_ : 1e6;  // unmeasured: ignored
  const double ry = 2 * sigma_yaw_ * sigma_yaw_ + span_s * span_s * sigma_w_ * sigma_w_;
  const double rw = end.has_velocity ? 2 * sigma_w_ * sigma_w_ : 1e6;
  r << rp, rp, rp, rv, rv, rv, ry, rw;
  Vec8 nu = measured - base;
  nu[6] = wrapped(nu[6]);
  // the heading and yaw rate only where the yaw drag is estimated: the other parameters'
  // residuals stay as they were without it
  if (active_[i_yaw]) return rls(nu, jac, r.asDiagonal().toDenseMatrix(), model);
  rls(nu.head<6>(), jac.topRows(6), r.head<6>().asDiagonal().toDenseMatrix(), model);
}

// a window without measured velocities: the positions at `checkpoints` points of the
// window, with the start's position and velocity as nuisance parameters projected out
// (they are fitted along with theta instead of being taken from the twin, whose velocity
// leans on the very model being fitted)
void EstimateProcessor::update_from_positions(const FeedbackContext& ctx, WorldModel& model, const WorldState& twin,
                                              std::int64_t t0, std::int64_t t1) {
  if (t1 - t0 < checkpoints) return;
  Vec15 measured;
  for (int j = 0; j < checkpoints; ++j) {
    const EstimateWindows::Entry& e = windows_.entry(checkpoint(t0, t1, j));
    if (e.time_index != checkpoint(t0, t1, j) || !e.valid) return;
    measured.segment<3>(3 * j) = e.state.position_m;
  }
  Vec8 landing;
  Vec15 base, probe;
  if (!windows_.replay(model, replay_parameters(), theta_.data(), twin, t0, t1, ctx.dt_s, landing, Vec3::Zero(), &base))
    return fault(model);
  JacP jac = JacP::Zero(15, n_params);
  for (int i = 0; i < n_params; ++i) {
    if (!active_[static_cast<std::size_t>(i)]) continue;
    VecP th = theta_;
    const double h = probe_step(i);
    th[i] += h;
    if (!windows_.replay(model, replay_parameters(), th.data(), twin, t0, t1, ctx.dt_s, landing, Vec3::Zero(), &probe))
      return fault(model);
    jac.col(i) = (probe - base) / h;
  }
  // nuisance: start position (moves every checkpoint alike) and start velocity
  Eigen::MatrixXd jn = Eigen::MatrixXd::Zero(15, 6);
  for (int j = 0; j < checkpoints; ++j) jn.block(3 * j, 0, 3, 3).setIdentity();
  for (int i = 0; i < 3; ++i) {
    const double h = 1e-3;
    if (!windows_.replay(model, replay_parameters(), theta_.data(), twin, t0, t1, ctx.dt_s, landing, Vec3::Unit(i) * h,
                         &probe))
      return fault(model);
    jn.col(3 + i) = (probe - base) / h;
  }
  apply(model);
  const Eigen::MatrixXd ntn = jn.transpose() * jn;
  const Eigen::MatrixXd q = Eigen::MatrixXd::Identity(15, 15) - jn * ntn.ldlt().solve(jn.transpose());
  const Eigen::VectorXd nu = q * (measured - base);
  const JacP jq = q * jac;
  const Eigen::MatrixXd r = Eigen::MatrixXd::Identity(15, 15) * (sigma_p_ * sigma_p_);
  rls(nu, jq, r, model);
}

// the forward-difference step of parameter i
double EstimateProcessor::probe_step(int i) const {
  return i == 0                                     ? 1e-4
         : i < 7                                    ? 1e-4 * std::max(std::abs(theta_[i]), 1.0)
         : i == 7                                   ? 1e-3
         : i == i_lag || i == i_added || i == i_yaw ? 1e-4
                                                    : 1e-5;
}

// the recursive least-squares step with forgetting, bounded, with the noise scaled by what
// the residuals show and the gain only for identified parameters
void EstimateProcessor::rls(const Eigen::VectorXd& nu, const JacP& jac, const Eigen::MatrixXd& r, WorldModel& model) {
  using MatR = Eigen::MatrixXd;
  using VecR = Eigen::VectorXd;
  const auto rows = static_cast<int>(nu.size());
  // the residual's size against its prediction with the noise scale so far (NIS per
  // degree of freedom is 1 when the model and the noise are right)
  const MatR s_alpha = jac * p_ * jac.transpose() + (structure_exact_ ? 1.0 : alpha_) * r;
  const Eigen::LDLT<MatR> s_alpha_inv(s_alpha);
  nis_ = nu.dot(s_alpha_inv.solve(nu));
  if (gate_ > 0 && nis_ > gate_) {  // a collision the model missed, a glitch: not data
    ++rejected_;
    return;
  }
  alpha_ = std::clamp(alpha_ * (1 + noise_rate * (nis_ / rows - 1)), 1.0, max_noise_scale);
  // the correlation of consecutive windows' residuals (whitened by the nominal noise): a
  // systematic misfit repeats itself, and n correlated windows weigh like fewer
  const VecR white = nu.cwiseQuotient(r.diagonal().cwiseSqrt());
  if (last_rows_ == rows) {
    const auto last = last_nu_.head(rows);
    rho_num_ = (1 - noise_rate) * rho_num_ + noise_rate * white.dot(last);
    rho_den_ = (1 - noise_rate) * rho_den_ + noise_rate * 0.5 * (white.squaredNorm() + last.squaredNorm());
    rho_ = rho_den_ > 0 ? std::clamp(rho_num_ / rho_den_, 0.0, max_rho) : 0.0;
  }
  if (last_rows_ != rows) rbar_.setZero(), r2_ = 0;
  last_nu_.setZero();
  last_nu_.head(rows) = white;
  last_rows_ = rows;
  // the systematic share of the residuals: the part of their mean over ~20 windows (1/bias_rate)
  // that white noise would not leave; it does not average out over the trial
  rbar_.head(rows) = (1 - bias_rate) * rbar_.head(rows) + bias_rate * white;
  r2_ = (1 - bias_rate) * r2_ + bias_rate * white.squaredNorm();
  const double floor = bias_rate / (2 - bias_rate);  // |mean|^2 / mean square of white noise
  systematic_ = r2_ > 0 ? std::clamp(rbar_.squaredNorm() / r2_ - floor, 0.0, 1.0) : 0.0;
  const double correlation = (1 + rho_) / (1 - rho_);
  noise_scale_ = alpha_ * correlation;
  // the reported sigma widens by what the systematic residual does not average out: of the
  // windows the information holds (forgetting bounds them), the systematic share counts once
  // (windows overlapping in time are not independent either: horizon / update_every of them share a span)
  const double overlap = std::max(1.0, static_cast<double>(horizon_) / every_);
  const double memory = std::min(static_cast<double>(updates_ + 1), 1 / (1 - lambda_)) / overlap;
  misfit_widening_ = std::sqrt(1 + systematic_ * memory);
  // the misfit verdict on the last few hundred windows (a plan's manoeuvres), not on the
  // manoeuvre of the moment; it starts at 1 (no misfit known) and follows the fit
  slow_noise_scale_ += slow_rate * (noise_scale_ - slow_noise_scale_);
  misfit_ = slow_noise_scale_ > misfit_limit_;
  // the gain trusts the data as much as their size and correlation say: n correlated
  // windows are worth fewer independent ones
  const MatR r_eff = structure_exact_ ? r : MatR(noise_scale_ * r);
  // once a refit is taken its values hold: the windows still measure the residuals but move
  // nothing (moved, they drift toward what fits 0.5 s, not 10 s: docs/feedback.md, "The refit")
  if (refit_.taken() > 0) {
    ++updates_;
    return;
  }

  // the information this window carried (at the noise the residuals show: their size and
  // correlation), forgotten like the covariance: what identifiability is judged on
  const MatP window_info = jac.transpose() * Eigen::LDLT<MatR>(r_eff).solve(jac);
  info_ = lambda_ * info_ + window_info;
  classify();

  const MatR s = jac * p_ * jac.transpose() + r_eff;
  const Eigen::LDLT<MatR> s_inv(s);
  Eigen::Matrix<double, n_params, Eigen::Dynamic> k = s_inv.solve(jac * p_).transpose();
  // Schmidt: an unidentified parameter is not moved; its uncertainty stays in the others'
  if (!structure_exact_)
    for (int i = 0; i < n_params; ++i)
      if (!identified_[static_cast<std::size_t>(i)]) k.row(i).setZero();
  k.row(i_added).setZero();  // considered only
  VecP d = k * nu;
  for (int i = 0; i < n_params; ++i) {
    d[i] = std::clamp(d[i], -step_max_[i], step_max_[i]);
    theta_[i] = std::clamp(theta_[i] + d[i], lo_[i], hi_[i]);
  }
  // Joseph form: right for any gain, the zeroed rows included
  const MatP a = MatP::Identity() - k * jac;
  p_ = (a * p_ * a.transpose() + k * r_eff * k.transpose()) / lambda_;
  p_ = 0.5 * (p_ + p_.transpose()).eval();
  // no wind-up: a parameter the motion does not excite keeps at most its prior uncertainty
  for (int i = 0; i < n_params; ++i) {
    if (p_(i, i) <= p0_(i, i)) continue;
    const double f = std::sqrt(p0_(i, i) / p_(i, i));
    p_.row(i) *= f;
    p_.col(i) *= f;
  }
  ++updates_;
  apply(model);
}

void EstimateProcessor::fault(WorldModel& model) {
  ++rejected_;
  apply(model);
}

}  // namespace tether::runtime::feedback_detail
