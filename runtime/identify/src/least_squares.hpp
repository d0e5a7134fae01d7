// SPDX-License-Identifier: Apache-2.0
// The fit's least-squares problem as the fit states it, and the solver that minimises it
// (docs/feedback.md, "The solver module"). Ceres Solver and the libraries it loads (glog,
// gflags, SuiteSparse, LAPACK, ATLAS, gfortran, OpenMP: 19 of the 36 shared libraries the
// `tether` program would load) live in a module of their own, libtether_fit_ceres.so, opened
// the first time a fit runs: a run, a replay or a campaign's runs that never fit start
// without them. Only this header crosses into the module; the module is built with the
// program, by the same compiler, from the same tree, and checks `abi_version` when loaded.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace tether::identify::lsq {

/// Residuals over one or more parameter blocks, and their Jacobians (one row-major
/// residuals x block-size matrix per block; a null pointer: not wanted).
class Cost {
 public:
  virtual ~Cost() = default;
  virtual bool evaluate(const double* const* params, double* residuals, double** jacobians) const = 0;
};

/// A parameter block: the caller's array, solved in place.
struct Block {
  double* values = nullptr;
  int size = 0;
  std::vector<int> held;                      // components held at their start value
  std::vector<std::pair<int, double>> lower;  // (component, bound)
  std::vector<std::pair<int, double>> upper;
};

/// A term of the cost: 0.5 |r|^2, or Huber's loss of it at `huber` (> 0).
struct Term {
  const Cost* cost = nullptr;  // the caller's; outlives solve()
  int residuals = 0;
  std::vector<int> blocks;  // indices into Problem::blocks, in the order the cost takes them
  double huber = 0;
};

struct Problem {
  std::vector<Block> blocks;
  std::vector<Term> terms;  // added in this order (blocks are ordered by their first use)
  /// Called before the terms are evaluated at a point (Ceres' evaluation callback); may be empty.
  std::function<void(bool jacobians, bool new_point)> before_evaluation;
  int max_iterations = 50;
  double function_tolerance = 1e-6, parameter_tolerance = 1e-8;
  int covariance_block = -1;  // >= 0: that block's covariance after the solve
  int covariance_threads = 1;
  bool full_report = false;
};

struct Result {
  int iterations = 0;
  bool converged = false;
  double initial_cost = 0;
  std::string brief_report, full_report;
  std::vector<double> covariance;  // row-major, size^2; empty where not asked or not computable
};

/// Minimises the problem (Levenberg-Marquardt; Ceres' dense Schur complement, which
/// eliminates the blocks it finds independent of each other). Opens the module on first use (once per process, any
/// thread); throws std::runtime_error where it cannot be opened or the solver failed.
void solve(const Problem& problem, Result& result);

/// Why solve() could not run here (the module cannot be opened, or is another build's);
/// empty when it can. Opens the module as solve() would.
std::string module_problem();

/// The module's entry points (extern "C"): `tether_fit_abi` returns abi_version;
/// `tether_fit_solve` solves and returns false with the reason in `error`, never throws.
inline constexpr int abi_version = 1;
using AbiFunction = int();
using SolveFunction = bool(const Problem& problem, Result& result, std::string& error);
inline constexpr const char* module_name = "libtether_fit_ceres.so";

}  // namespace tether::identify::lsq
