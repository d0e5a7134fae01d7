// SPDX-License-Identifier: Apache-2.0
// The `estimate` processor's summary and recording (estimate.hpp): the estimates, their
// sigma widened by the misfit, which are identified, the combinations over the effective mass
// the data pin down, and the directions the trial left weak.
#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "estimate.hpp"

namespace tether::runtime::feedback_detail {

// the reported sigma: the covariance's, widened by the misfit for an identified parameter;
// an unidentified one reports its covariance (its prior, less what the data taught)
double EstimateProcessor::sigma(int i) const {
  const double sd = std::sqrt(std::max(p_(i, i), 0.0));
  if (structure_exact_ || !identified_[static_cast<std::size_t>(i)]) return sd;
  return std::min(sd * misfit_widening_, std::sqrt(p0_(i, i)));
}

// identified as a physical value: the data pin it down, the model fits (under a misfit the
// estimates are the best fit of a model that cannot represent the vehicle), and its sigma,
// widened by the misfit, is still well inside the prior's
bool EstimateProcessor::reported_identified(int i) const {
  return identified_[static_cast<std::size_t>(i)] && !misfit_ && sigma(i) < 0.5 * std::sqrt(p0_(i, i));
}

void EstimateProcessor::summarize(nlohmann::json& out) const {
  out["updates"] = updates_;
  out["rejected"] = rejected_;
  out["noise_scale"] = noise_scale_;
  out["residual_correlation"] = rho_;
  out["systematic_residual"] = systematic_;
  out["misfit_widening"] = misfit_widening_;
  out["misfit"] = misfit_;
  out["model_structure"] = structure_exact_ ? "exact" : "uncertain";
  if (active_[i_lag])
    out["thruster_lag_model"] = !windows_.thrusters().empty() ? "rotors"
                                : rotor_lag_        ? "filter (no thrusters on the body)"
                                                    : "filter";
  out["mean_noise_scale"] = slow_noise_scale_;
  refit_.summarize(out);
  out["condition"] = condition_;
  auto& est = out["estimates"] = nlohmann::json::object();
  auto& sd = out["stddev"] = nlohmann::json::object();
  auto& id = out["identified"] = nlohmann::json::object();
  for (int i = 0; i < n_params; ++i) {
    const auto u = static_cast<std::size_t>(i);
    if (!active_[u]) continue;
    est[param_names[u]] = theta_[i];
    sd[param_names[u]] = sigma(i);
    id[param_names[u]] = reported_identified(i);
  }
  summarize_combinations(out);
  summarize_weak(out);
}

// the directions the trial left weak (the data shrank the prior's sigma along them less than
// sqrt(identify_information) times), each with its loadings in prior units and the
// manoeuvre that would strengthen it (the advice `tether identify` gives)
void EstimateProcessor::summarize_weak(nlohmann::json& out) const {
  auto& weak = out["weak"] = nlohmann::json::array();
  if (updates_ == 0 || n_active_ == 0) return;
  const auto& v = eig_->eigenvectors();
  for (int k = 0; k < n_active_; ++k) {
    if (mu_[k] >= weak_information_) continue;
    nlohmann::json loadings = nlohmann::json::object();
    int top = 0;
    for (int a = 0; a < n_active_; ++a) {
      if (std::abs(v(a, k)) > std::abs(v(top, k))) top = a;
      if (std::abs(v(a, k)) >= 0.3)
        loadings[param_names[static_cast<std::size_t>(index_[static_cast<std::size_t>(a)])]] = v(a, k);
    }
    weak.push_back({{"shrink", std::sqrt(1 + mu_[k])},
                    {"loadings", loadings},
                    {"advice", manoeuvre_advice(index_[static_cast<std::size_t>(top)])}});
  }
}

std::vector<EstimateProcessor::Combination> EstimateProcessor::combinations() const {
  std::vector<Combination> out;
  if (!active_[i_added]) return out;
  const double eff = 1 + theta_[i_added];
  for (int i : {0, 1, 2, 3, 4, 5, 6, 7, i_yaw}) {
    const auto u = static_cast<std::size_t>(i);
    if (!active_[u]) continue;
    // the buoyancy offset with the model's own net buoyancy: the static force the effective
    // mass carries (as `tether identify` names it)
    const double v = theta_[i] + (i == 7 ? net_buoyancy_n(base_) : 0.0);
    VecP g = VecP::Zero();
    g[i] = 1 / eff;
    g[i_added] = -v / (eff * eff);
    const double sd = std::sqrt(std::max(g.dot(p_ * g), 0.0)) * (structure_exact_ ? 1.0 : misfit_widening_);
    const double prior_sd = std::sqrt(std::max(g.dot(p0_ * g), 0.0));
    out.push_back({i == 0       ? std::string("thrust_per_effective_mass")
                   : i == 7     ? std::string("net_buoyancy_per_effective_mass_n")
                   : i == i_yaw ? std::string("angular_drag_per_effective_inertia")
                                : std::string(param_names[u]) + "_per_effective_mass",
                   v / eff, std::min(sd, prior_sd)});
  }
  return out;
}

void EstimateProcessor::summarize_combinations(nlohmann::json& out) const {
  if (!active_[i_added]) return;
  auto& comb = out["combinations"] = nlohmann::json::object();
  for (const Combination& c : combinations()) comb[c.name] = {{"value", c.value}, {"stddev", c.stddev}};
}

// live: each combination and its sigma, as getParameters answers them
void EstimateProcessor::read_only_parameters(std::vector<std::pair<std::string, double>>& out) const {
  for (const Combination& c : combinations()) {
    out.emplace_back("combinations." + c.name, c.value);
    out.emplace_back("combinations." + c.name + "_stddev", c.stddev);
  }
}

std::vector<std::string> EstimateProcessor::record_fields() const {
  std::vector<std::string> out;
  for (const char* n : param_names) out.emplace_back(n);
  for (const char* n : param_names) out.emplace_back(std::string(n) + "_stddev");
  for (const char* n : param_names) out.emplace_back(std::string(n) + "_identified");
  out.emplace_back("nis");
  out.emplace_back("noise_scale");
  return out;
}

void EstimateProcessor::record(std::vector<double>& out) const {
  for (int i = 0; i < n_params; ++i) out.push_back(theta_[i]);
  for (int i = 0; i < n_params; ++i) out.push_back(sigma(i));
  for (int i = 0; i < n_params; ++i) out.push_back(reported_identified(i) ? 1.0 : 0.0);
  out.push_back(nis_);
  out.push_back(noise_scale_);
}

}  // namespace tether::runtime::feedback_detail
