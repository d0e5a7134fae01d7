// SPDX-License-Identifier: Apache-2.0
// The fit as a file the user applies: `set:` holds PATH=VALUE overrides of the trial's
// scenario (`tether run SCENARIO --set-file fit.yaml`), the rest what the fit found.
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>

#include <yaml-cpp/yaml.h>

#include "tether/identify/identify.hpp"

namespace tether::identify {

namespace vp = runtime::vp;

namespace {

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}
// no spaces: each override pastes as one shell word after --set
std::string vec(double x, double y, double z) {
  std::ostringstream o;
  o << '[' << num(x) << ',' << num(y) << ',' << num(z) << ']';
  return o.str();
}

// "vehicles[V].bodies[B]." and, with a device, "devices[D].params."
std::string body_path(int vehicle, std::size_t body) {
  std::ostringstream o;
  o << "vehicles[" << vehicle << "].bodies[" << body << "].";
  return o.str();
}

const ParameterEstimate& estimate(const FitResult& fit, int i) { return fit.parameters[static_cast<std::size_t>(i)]; }

}  // namespace

std::vector<std::string> fit_overrides(const Trial& trial, const FitResult& fit) {
  std::vector<std::string> out;
  const runtime::WorldModel& m = trial.scenario.model;
  const auto& body = m.bodies[static_cast<std::size_t>(trial.body)];
  const auto& th = fit.theta;
  const std::string b = body_path(trial.vehicle, 0);
  if (estimate(fit, vp::linear_drag).estimated) out.push_back(b + "damping.linear=" + vec(th[1], th[2], th[3]));
  if (estimate(fit, vp::quadratic_drag).estimated) out.push_back(b + "damping.quadratic=" + vec(th[4], th[5], th[6]));
  if (estimate(fit, vp::angular_drag).estimated) {
    const Vec3 l(body.damping.angular_linear.x(), body.damping.angular_linear.y(),
                 body.damping.angular_linear.z() * th[vp::angular_drag]);
    const Vec3 q(body.damping.angular_quadratic.x(), body.damping.angular_quadratic.y(),
                 body.damping.angular_quadratic.z() * th[vp::angular_drag]);
    out.push_back(b + "damping.angular_linear=" + vec(l.x(), l.y(), l.z()));
    out.push_back(b + "damping.angular_quadratic=" + vec(q.x(), q.y(), q.z()));
  }
  // the buoyancy offset (and an added mass, which weighs nothing in water) as displaced volume
  const bool added = estimate(fit, vp::added_mass).estimated;
  if (estimate(fit, vp::buoyancy).estimated || added) {
    runtime::WorldModel applied = m;
    runtime::apply_vehicle_parameters(runtime::vehicle_parameter_base(m, trial.body), th.data(), added, applied);
    out.push_back(b + "volume_m3=" + num(applied.bodies[static_cast<std::size_t>(trial.body)].volume_m3));
    if (added) out.push_back(b + "mass_kg=" + num(body.mass_kg * (1 + th[vp::added_mass])));
  }
  if (estimate(fit, vp::current_x).estimated)
    out.push_back("world.water.current_m_s=" + vec(th[vp::current_x], th[vp::current_y], m.water.current_m_s.z()));
  // the thrust gain and the lag on the vehicle's thrusters, as the scenario file names them
  try {
    const YAML::Node root = YAML::Load(trial.scenario.source_text);
    const YAML::Node bodies = root["vehicles"][static_cast<std::size_t>(trial.vehicle)]["bodies"];
    for (std::size_t bi = 0; bodies && bi < bodies.size(); ++bi) {
      const YAML::Node devices = bodies[bi]["devices"];
      for (std::size_t di = 0; devices && di < devices.size(); ++di) {
        const YAML::Node d = devices[di];
        if (!d["kind"] || d["kind"].as<std::string>() != "thruster" || !d["params"]) continue;
        std::ostringstream po;
        po << body_path(trial.vehicle, bi) << "devices[" << di << "].params.";
        const std::string p = po.str();
        if (estimate(fit, vp::thrust).estimated && d["params"]["max_thrust_n"])
          out.push_back(p + "max_thrust_n=" + num(d["params"]["max_thrust_n"].as<double>() * th[vp::thrust]));
        if (estimate(fit, vp::thruster_lag).estimated && d["params"]["time_constant_s"])
          out.push_back(p +
                        "time_constant_s=" + num(d["params"]["time_constant_s"].as<double>() + th[vp::thruster_lag]));
      }
    }
  } catch (const YAML::Exception&) {
    // the recorded source did not parse again: the thrusters are left as they are
  }
  return out;
}

std::string fit_yaml(const Trial& trial, const FitResult& fit, const std::optional<Prediction>& prediction) {
  const runtime::WorldModel& m = trial.scenario.model;
  YAML::Emitter e;
  e.SetDoublePrecision(9);
  e << YAML::Comment("tether identify: the model of " + m.vehicles[static_cast<std::size_t>(trial.vehicle)].name +
                     " fitted to " + trial.path + " (docs/feedback.md, \"The offline fit\")");
  e << YAML::Newline
    << YAML::Comment("apply: tether run SCENARIO --set-file THIS_FILE (SCENARIO: the trial's scenario file, \"" +
                     trial.scenario.name + "\")");
  e << YAML::BeginMap;
  e << YAML::Key << "scenario" << YAML::Value << trial.scenario.name;
  e << YAML::Key << "vehicle" << YAML::Value << m.vehicles[static_cast<std::size_t>(trial.vehicle)].name;
  e << YAML::Key << "body" << YAML::Value << m.bodies[static_cast<std::size_t>(trial.body)].name;
  e << YAML::Key << "set" << YAML::Value << YAML::BeginSeq;
  for (const std::string& s : fit_overrides(trial, fit)) e << s;
  e << YAML::EndSeq;
  e << YAML::Key << "estimates" << YAML::Value << YAML::BeginMap;
  for (const ParameterEstimate& p : fit.parameters) {
    if (!p.estimated) continue;
    e << YAML::Key << p.name << YAML::Value << YAML::Flow << YAML::BeginMap;
    e << YAML::Key << "value" << YAML::Value << p.value << YAML::Key << "stddev" << YAML::Value << p.stddev;
    e << YAML::Key << "identified" << YAML::Value << p.identified << YAML::Key << "nominal" << YAML::Value << p.nominal;
    e << YAML::EndMap;
  }
  e << YAML::EndMap;
  e << YAML::Key << "combinations" << YAML::Value << YAML::BeginMap;
  for (const Combination& c : fit.combinations) {
    e << YAML::Key << c.name << YAML::Value << YAML::Flow << YAML::BeginMap;
    e << YAML::Key << "value" << YAML::Value << c.value << YAML::Key << "stddev" << YAML::Value << c.stddev;
    e << YAML::Key << "identified" << YAML::Value << c.identified << YAML::Key << "is" << YAML::Value << c.meaning;
    e << YAML::EndMap;
  }
  e << YAML::EndMap;
  e << YAML::Key << "weak_directions" << YAML::Value << YAML::BeginSeq;
  for (const WeakDirection& w : fit.weak) {
    e << YAML::BeginMap << YAML::Key << "loadings" << YAML::Value << YAML::Flow << YAML::BeginMap;
    for (const auto& [name, l] : w.loadings) e << YAML::Key << name << YAML::Value << l;
    e << YAML::EndMap << YAML::Key << "sigma_shrunk" << YAML::Value << w.shrink;
    e << YAML::Key << "strengthen_with" << YAML::Value << w.advice << YAML::EndMap;
  }
  e << YAML::EndSeq;
  e << YAML::Key << "correlation" << YAML::Value << YAML::BeginMap;
  for (std::size_t i = 0; i < fit.parameters.size(); ++i) {
    if (!fit.parameters[i].estimated) continue;
    e << YAML::Key << fit.parameters[i].name << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (std::size_t j = 0; j < fit.parameters.size(); ++j)
      if (fit.parameters[j].estimated) e << std::round(fit.correlation[i][j] * 1000) / 1000;
    e << YAML::EndSeq;
  }
  e << YAML::EndMap;
  e << YAML::Key << "diagnostics" << YAML::Value << YAML::BeginMap;
  // the measured motion behind the inputs the twin's body received: one step for a rig (it
  // gets a step's commands with the next request), more for a measurement delay or the
  // thrusters' dead time (no scenario key: the twin's own measurements are not delayed)
  e << YAML::Key << "delay_steps" << YAML::Value << fit.delay_steps;
  e << YAML::Key << "delay_stddev_steps" << YAML::Value << fit.delay_stddev_steps;
  e << YAML::Key << "windows" << YAML::Value << fit.windows;
  e << YAML::Key << "residuals" << YAML::Value << fit.residuals;
  e << YAML::Key << "noise_scale" << YAML::Value << fit.noise_scale;
  e << YAML::Key << "residual_correlation" << YAML::Value << fit.residual_correlation;
  e << YAML::Key << "sigma_widening" << YAML::Value << fit.sigma_widening;
  e << YAML::Key << "blocks" << YAML::Value << fit.blocks;
  e << YAML::Key << "misfit_widening" << YAML::Value << fit.misfit_widening;
  e << YAML::Key << "mean_normalised_residual_squared" << YAML::Value << fit.mean_nis;
  e << YAML::Key << "iterations" << YAML::Value << fit.iterations;
  e << YAML::Key << "converged" << YAML::Value << fit.converged;
  e << YAML::Key << "seconds" << YAML::Value << fit.seconds;
  e << YAML::EndMap;
  if (prediction) {
    e << YAML::Key << "validation" << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "segments" << YAML::Value << prediction->segments;
    e << YAML::Key << "horizon_s" << YAML::Value << prediction->horizon_s;
    e << YAML::Key << "fitted_error_m" << YAML::Value << prediction->fitted_m;
    e << YAML::Key << "uncorrected_error_m" << YAML::Value << prediction->uncorrected_m;
    e << YAML::Key << "gain" << YAML::Value << prediction->gain();
    e << YAML::EndMap;
  }
  e << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

}  // namespace tether::identify
