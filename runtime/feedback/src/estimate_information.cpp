// SPDX-License-Identifier: Apache-2.0
// The `estimate` processor's information (estimate.hpp): which parameters the windows so far
// identify (the eigen-directions of the information in prior units), and a batch refit taken
// as the estimate. Apart from the filter (estimate_filter.cpp) because the eigen-solver's
// instantiation is most of a unit's compile.
#include <algorithm>
#include <cmath>

#include "estimate.hpp"

namespace tether::runtime::feedback_detail {

// identifiability from the information matrix in prior units: its eigen-directions that
// the data shrink less than sqrt(weak_information_) times are weak; a parameter is
// identified when at most weak_share_max_ of it lies in weak directions
void EstimateProcessor::classify() {
  const int n = n_active_;
  if (n == 0) return;
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      const int i = index_[static_cast<std::size_t>(a)], j = index_[static_cast<std::size_t>(b)];
      scaled_(a, b) = std::sqrt(p0_(i, i) * p0_(j, j)) * info_(i, j);
    }
  eig_->compute(scaled_);                   // sized in configure(): no allocation here
  mu_ = eig_->eigenvalues().cwiseMax(0.0);  // ascending
  condition_ = mu_[n - 1] / std::max(mu_[0], 1e-300);
  for (int a = 0; a < n; ++a) {
    double share = 0;
    for (int j = 0; j < n; ++j)
      if (mu_[j] < weak_information_) share += eig_->eigenvectors()(a, j) * eig_->eigenvectors()(a, j);
    const int i = index_[static_cast<std::size_t>(a)];
    weak_share_[i] = share;
    // with hysteresis: identified at weak_share_max_, lost only well beyond it (forgetting
    // thins the information while a manoeuvre does not excite the parameter)
    bool& id = identified_[static_cast<std::size_t>(i)];
    id = id ? share <= std::min(1.0, 2.5 * weak_share_max_) : share <= weak_share_max_;
  }
}

// the fit's values and covariance become the estimate's; what the fit learned becomes the
// information the identifiability is judged on (the fit saw every window this processor saw)
void EstimateProcessor::take_refit(const RefitResult& r) {
  MatP p = MatP::Zero();
  for (int i = 0; i < n_params; ++i) {
    const auto u = static_cast<std::size_t>(i);
    if (!active_[u]) continue;
    theta_[i] = std::clamp(r.theta[u], lo_[i], hi_[i]);
    for (int j = 0; j < n_params; ++j)
      if (active_[static_cast<std::size_t>(j)]) p(i, j) = r.covariance[u][static_cast<std::size_t>(j)];
  }
  // never beyond the prior (the estimate's bounds on its covariance)
  for (int i = 0; i < n_params; ++i) {
    if (p(i, i) <= p0_(i, i)) continue;
    const double f = std::sqrt(p0_(i, i) / p(i, i));
    p.row(i) *= f;
    p.col(i) *= f;
  }
  p_ = 0.5 * (p + p.transpose());
  Eigen::MatrixXd c(n_active_, n_active_);
  Eigen::VectorXd prior(n_active_);
  const auto at = [this](int a) { return index_[static_cast<std::size_t>(a)]; };
  for (int a = 0; a < n_active_; ++a) {
    prior[a] = p0_(at(a), at(a));
    for (int b = 0; b < n_active_; ++b) c(a, b) = p_(at(a), at(b));
  }
  const Eigen::MatrixXd info = refit_information(c, prior);
  info_.setZero();
  for (int a = 0; a < n_active_; ++a)
    for (int b = 0; b < n_active_; ++b) info_(at(a), at(b)) = info(a, b);
  classify();
}

}  // namespace tether::runtime::feedback_detail
