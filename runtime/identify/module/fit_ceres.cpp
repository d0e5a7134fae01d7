// SPDX-License-Identifier: Apache-2.0
// libtether_fit_ceres.so: the fit's least-squares problem (src/least_squares.hpp) handed to
// Ceres Solver. Loaded by the identify room the first time a fit runs (docs/feedback.md, "The
// solver module"); nothing here knows what is fitted.
#include <ceres/ceres.h>

#include <cstddef>
#include <exception>
#include <memory>
#include <type_traits>

#include "../src/least_squares.hpp"

namespace {

using namespace tether::identify;

class TermCost final : public ceres::CostFunction {
 public:
  TermCost(const lsq::Term& term, const std::vector<lsq::Block>& blocks) : cost_(*term.cost) {
    set_num_residuals(term.residuals);
    for (int b : term.blocks) mutable_parameter_block_sizes()->push_back(blocks[static_cast<std::size_t>(b)].size);
  }
  bool Evaluate(double const* const* params, double* residuals, double** jacobians) const override {
    return cost_.evaluate(params, residuals, jacobians);
  }

 private:
  const lsq::Cost& cost_;
};

class BeforeEvaluation final : public ceres::EvaluationCallback {
 public:
  explicit BeforeEvaluation(const std::function<void(bool, bool)>& f) : f_(f) {}
  void PrepareForEvaluation(bool jacobians, bool new_point) override { f_(jacobians, new_point); }

 private:
  const std::function<void(bool, bool)>& f_;
};

void solve_with_ceres(const lsq::Problem& p, lsq::Result& out) {
  ceres::Problem::Options po;
  po.cost_function_ownership = ceres::TAKE_OWNERSHIP;
  po.loss_function_ownership = ceres::TAKE_OWNERSHIP;
  po.manifold_ownership = ceres::TAKE_OWNERSHIP;
  std::unique_ptr<BeforeEvaluation> callback;
  if (p.before_evaluation) {
    callback = std::make_unique<BeforeEvaluation>(p.before_evaluation);
    po.evaluation_callback = callback.get();
  }
  ceres::Problem problem(po);
  std::vector<double*> params;
  for (const lsq::Term& t : p.terms) {
    params.clear();
    for (int b : t.blocks) params.push_back(p.blocks[static_cast<std::size_t>(b)].values);
    problem.AddResidualBlock(new TermCost(t, p.blocks), t.huber > 0 ? new ceres::HuberLoss(t.huber) : nullptr, params);
  }
  for (const lsq::Block& b : p.blocks) {
    if (!problem.HasParameterBlock(b.values)) continue;
    if (!b.held.empty()) problem.SetManifold(b.values, new ceres::SubsetManifold(b.size, b.held));
    for (const auto& [i, v] : b.lower) problem.SetParameterLowerBound(b.values, i, v);
    for (const auto& [i, v] : b.upper) problem.SetParameterUpperBound(b.values, i, v);
  }
  ceres::Solver::Options so;
  so.linear_solver_type = ceres::DENSE_SCHUR;
  so.max_num_iterations = p.max_iterations;
  so.num_threads = 1;  // the caller evaluates in parallel where it wants to (before_evaluation)
  so.function_tolerance = p.function_tolerance;
  so.parameter_tolerance = p.parameter_tolerance;
  so.logging_type = ceres::SILENT;
  ceres::Solver::Summary summary;
  ceres::Solve(so, &problem, &summary);
  out.iterations = static_cast<int>(summary.iterations.size());
  out.converged = summary.termination_type == ceres::CONVERGENCE;
  out.initial_cost = summary.initial_cost;
  out.brief_report = summary.BriefReport();
  if (p.full_report) out.full_report = summary.FullReport();
  out.covariance.clear();
  if (p.covariance_block < 0) return;
  const lsq::Block& b = p.blocks[static_cast<std::size_t>(p.covariance_block)];
  ceres::Covariance::Options co;
  // sparse QR: the caller's priors make the problem full rank; the other blocks keep it sparse
  co.algorithm_type = ceres::SPARSE_QR;
  co.num_threads = p.covariance_threads;
  ceres::Covariance cov(co);
  const std::vector<std::pair<const double*, const double*>> pairs = {{b.values, b.values}};
  if (!cov.Compute(pairs, &problem)) return;
  out.covariance.resize(static_cast<std::size_t>(b.size) * static_cast<std::size_t>(b.size));
  cov.GetCovarianceBlock(b.values, b.values, out.covariance.data());
}

}  // namespace

extern "C" int tether_fit_abi() { return lsq::abi_version; }

extern "C" bool tether_fit_solve(const lsq::Problem& problem, lsq::Result& result, std::string& error) {
  try {
    solve_with_ceres(problem, result);
    return true;
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "an unknown exception";
  }
  return false;
}

static_assert(std::is_same_v<decltype(tether_fit_abi), lsq::AbiFunction>);
static_assert(std::is_same_v<decltype(tether_fit_solve), lsq::SolveFunction>);
