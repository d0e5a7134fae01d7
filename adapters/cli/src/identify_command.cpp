// SPDX-License-Identifier: Apache-2.0
// `tether identify REC... -o fit.yaml`: the offline fit of a vehicle's model over recorded
// trials (docs/feedback.md, "The offline fit"), validated open loop on held-out data.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <utility>

#include "commands.hpp"
#include "identify_page.hpp"
#include "tether/identify/identify.hpp"

namespace tether::cli {

namespace {

void print_fit(const identify::FitResult& fit, const identify::Trial& trial) {
  const auto truth_of = [&](const std::string& name, double& v) {
    for (const auto& [n, t] : trial.truth)
      if (n == name) return v = t, true;
    return false;
  };
  const bool truth = !trial.truth.empty();
  std::printf("  %-38s %12s %11s %-10s%s\n", "parameter", "value", "sigma", "identified", truth ? "  truth" : "");
  for (const identify::ParameterEstimate& p : fit.parameters) {
    if (!p.estimated) continue;
    double t = 0;
    std::printf("  %-38s %12.6g %11.3g %-10s", p.name.c_str(), p.value, p.stddev, p.identified ? "yes" : "no");
    if (truth && truth_of(p.name, t)) std::printf("  %.6g", t);
    std::printf("\n");
  }
  // the truth's combinations, where the stand-in told its values
  std::printf("  combinations the data pin down:\n");
  for (const identify::Combination& c : fit.combinations) {
    std::printf("  %-38s %12.6g %11.3g %-10s", c.name.c_str(), c.value, c.stddev, c.identified ? "yes" : "no");
    if (const auto t = identify::combination_truth(trial, c)) std::printf("  %.6g", *t);
    std::printf("\n");
  }
  if (fit.delay_costs.size() > 1) {
    std::printf("  delay (steps: cost per window, refitted):");
    for (const auto& [d, c] : fit.delay_costs) std::printf(" %d: %.4g", d, c);
    std::printf("\n");
  }
  for (const identify::WeakDirection& w : fit.weak) {
    std::printf("  weak (sigma shrunk %.2gx):", w.shrink);
    for (const auto& [n, l] : w.loadings) std::printf(" %+.2f %s", l, n.c_str());
    std::printf("\n    strengthen with: %s\n", w.advice.c_str());
  }
  if (fit.delay_costs.size() > 1) {
    std::printf("  delay %d steps (", fit.delay_steps);
    if (fit.delay_stddev_steps > 0) std::printf("sigma %.2g; ", fit.delay_stddev_steps);
    std::printf(
        "1: the rig's, a step's commands sent with the next request; more: a measurement delay or a dead time)\n");
  }
  std::printf(
      "  %d windows, %zu residuals; noise scale %.3g, residual correlation %.2f (sigma x%.2f); the pull of %d "
      "blocks of %.0f s (sigma up to x%.2f); %d iterations%s; %.2f s\n",
      fit.windows, fit.residuals, fit.noise_scale, fit.residual_correlation, fit.sigma_widening, fit.blocks,
      fit.block_s, fit.misfit_widening, fit.iterations, fit.converged ? "" : " (not converged)", fit.seconds);
}

// the options a fit cannot use, said before the fit: its numbers, and where its files go
bool options_usable(const IdentifyOptions& options) {
  // written so that NaN fails too (CLI11's range checks let it through)
  if (!(options.holdout >= 0 && options.holdout < 0.9)) {
    std::cerr << "tether: --holdout " << options.holdout << ": a fraction from 0 to 0.9 of each trial\n";
    return false;
  }
  for (const auto& [name, v] :
       {std::pair{"--horizon", options.horizon_s}, std::pair{"--position-stddev", options.position_stddev_m},
        std::pair{"--velocity-stddev", options.velocity_stddev_m_s}})
    if (!(v > 0 && v < 1e6)) {
      std::cerr << "tether: " << name << " " << v << ": a number above 0 and below 1e6\n";
      return false;
    }
  if (!(options.orientation_stddev_rad >= 0 && options.orientation_stddev_rad < 4)) {
    std::cerr << "tether: --orientation-stddev " << options.orientation_stddev_rad
              << ": radians from 0 (not compared) to below 4\n";
    return false;
  }
  // where the fit and its page go: a folder that is not there is said before the fit, not
  // after it
  for (const auto& [option, path] : {std::pair{"-o", options.output}, std::pair{"--report", options.report}}) {
    if (path.empty()) continue;
    const std::filesystem::path parent = std::filesystem::absolute(path).parent_path();
    std::error_code ec;
    if (!std::filesystem::is_directory(parent, ec)) {
      std::cerr << "tether: " << option << " " << path << ": there is no folder " << parent.string() << '\n';
      return false;
    }
    if (std::filesystem::is_directory(path, ec)) {
      std::cerr << "tether: " << option << " " << path << ": a folder; expected a file name\n";
      return false;
    }
  }
  return true;
}

}  // namespace

int identify_command(const IdentifyOptions& options) {
  if (!options_usable(options)) return exit_usage;
  const auto load = [&](const std::string& path, identify::Trial& t) {
    std::string error;
    if (identify::load_trial(recording_path(path), options.vehicle, t, &error)) return true;
    std::cerr << "tether: " << error << '\n';
    return false;
  };
  std::vector<identify::Trial> trials;
  for (const std::string& path : options.recordings) {
    identify::Trial t;
    if (!load(path, t)) return exit_usage;
    std::printf("%s: %zu steps, %zu measured, vehicle %s\n", t.path.c_str(), t.samples.size(), t.measured,
                t.scenario.model.vehicles[static_cast<std::size_t>(t.vehicle)].name.c_str());
    trials.push_back(std::move(t));
  }
  // the validation trial is checked before the fit, not after it
  identify::Trial validation;
  if (!options.validate.empty()) {
    if (!load(options.validate, validation)) return exit_usage;
    std::string why;
    if (!identify::same_vehicle(trials.front(), validation, &why)) {
      std::cerr << "tether: --validate " << why << '\n';
      return exit_usage;
    }
  }
  identify::FitOptions fo;
  fo.window_steps = options.window_steps;
  fo.max_delay_steps = options.max_delay_steps;
  fo.holdout = options.holdout;
  fo.position_stddev_m = options.position_stddev_m;
  fo.velocity_stddev_m_s = options.velocity_stddev_m_s;
  fo.orientation_stddev_rad = options.orientation_stddev_rad;
  fo.estimate_lag = !options.no_lag;
  fo.threads = options.threads;
  identify::FitResult fit;
  try {
    fit = identify::fit(trials, fo);
  } catch (const std::exception& e) {
    std::cerr << "tether: " << e.what() << '\n';
    return exit_usage;
  }
  print_fit(fit, trials.front());

  std::optional<identify::Prediction> prediction;
  if (!options.validate.empty()) {
    prediction = identify::predict(validation, fit, 0, validation.samples.size(), options.horizon_s);
  } else if (options.holdout > 0) {
    const identify::Trial& t = trials.front();
    prediction =
        identify::predict(t, fit, identify::holdout_start(t, options.holdout), t.samples.size(), options.horizon_s);
  }
  if (prediction) {
    if (prediction->segments == 0) {
      std::printf("  validation: no %.3g s segment of held-out data with measured velocities to predict from\n",
                  options.horizon_s);
    } else {
      std::printf(
          "  open-loop prediction over %d held-out segments of %.3g s: fitted %.4f m, uncorrected %.4f m at "
          "the end (RMS %.4f vs %.4f m): %.1fx better\n",
          prediction->segments, prediction->horizon_s, prediction->fitted_m, prediction->uncorrected_m,
          prediction->fitted_rms_m, prediction->uncorrected_rms_m, prediction->gain());
    }
  }
  if (!options.output.empty()) {
    std::ofstream f(options.output);
    f << identify::fit_yaml(trials.front(), fit, prediction);
    if (!f) {
      std::cerr << "tether: cannot write " << options.output << ": " << std::strerror(errno) << '\n';
      return exit_usage;
    }
    std::printf("fit: %s (apply: tether run SCENARIO --set-file %s, SCENARIO the file of scenario \"%s\")\n",
                options.output.c_str(), options.output.c_str(), trials.front().scenario.name.c_str());
  }
  if (!options.report.empty()) {
    const identify::Trial& shown = options.validate.empty() ? trials.front() : validation;
    std::ofstream f(options.report, std::ios::binary | std::ios::trunc);
    f << identify_page(shown, fit, prediction, identify::fit_yaml(trials.front(), fit, prediction));
    if (!f) {
      std::cerr << "tether: cannot write " << options.report << ": " << std::strerror(errno) << '\n';
      return exit_usage;
    }
    std::printf("report: %s\n", options.report.c_str());
  }
  return exit_ok;
}

}  // namespace tether::cli
