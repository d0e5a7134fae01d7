// SPDX-License-Identifier: Apache-2.0
// The correction experiment (J. Brawn, "An AUV Simulator for
// Incorporating Physical Feedback", 2012, §8.1, quantified): the same tank trial with the
// twin's feedback processors off, direct, blend, vector_adjust, kalman, estimate and
// estimate + kalman. The physical vehicle is a stand-in defined here: the runtime's own
// step() on a copy of the model with hidden parameters (drag, thrust, buoyancy, current)
// and noisy sensors, answering the loop in-process like a real vehicle endpoint would. So the
// experiment runs the real session, endpoint reply, measurement routing and processors.
//
// For each case: RMS and max position error twin vs vehicle; for estimate, the parameter
// errors over time; and the open-loop prediction error: from the vehicle's true state at
// t_off, the twin's model as it stands then (learned parameters included) predicts the next
// 10 s with the vehicle's commands and no feedback. Writes an HTML page with SVG plots.
#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include "bench_util.hpp"
#include "../tests/adapters/mosquitto_util.hpp"
#include "../tests/stand_in_endpoint.hpp"
#include "example_controllers.hpp"
#include "test_paths.hpp"
#include "tether/endpoints/endpoint_factory.hpp"
#include "tether/hal/device_bank.hpp"
#include "tether/identify/identify.hpp"
#include "tether/loop/recorder_inputs.hpp"
#include "tether/recording/recorder.hpp"
#include "tether/loop/stand_in_vehicle.hpp"
#include "tether/loop/session.hpp"
#include "tether/report/svg_plot.hpp"

using namespace tether::runtime;

namespace {

constexpr double pi = 3.14159265358979323846;

// what the real vehicle is, and the model does not know
struct Hidden {
  double thrust = 0.85;
  Vec3 linear{13, 24, 36};
  Vec3 quadratic{25, 70, 95};
  double buoyancy_n = -4;  // less buoyant than the model says
  Vec3 current{0.08, -0.05, 0};
  double position_noise_m = 0.003, orientation_noise_rad = 0.005;
  double velocity_noise_m_s = 0.01, angular_velocity_noise_rad_s = 0.005;
};

double wrap(double a) { return std::remainder(a, 2 * pi); }

// the experiment's hidden differences as the stand-in library takes them: per-axis scales of
// the scenario's drags, the buoyancy offset, the current against the scenario's, the noise; no
// lag, dead band, added mass, bias or delay (the model's structure is the vehicle's). The
// thrust gain is applied by the caller: the autopilot's commands are wrenches, not actuators.
HiddenParams stand_in_params(const WorldModel& model, const Hidden& h) {
  const BodyModel& b = model.bodies[0];
  HiddenParams p;
  p.linear_drag_axis_scale = h.linear.cwiseQuotient(b.damping.linear);
  p.quadratic_drag_axis_scale = h.quadratic.cwiseQuotient(b.damping.quadratic);
  p.buoyancy_offset_n = h.buoyancy_n;
  p.current_m_s = h.current - model.water.current_m_s;
  p.position_noise_m = h.position_noise_m;
  p.orientation_noise_rad = h.orientation_noise_rad;
  p.velocity_noise_m_s = h.velocity_noise_m_s;
  p.angular_velocity_noise_rad_s = h.angular_velocity_noise_rad_s;
  return p;
}

// the vehicle: the stand-in library's truth (runtime::StandInVehicle, as tether-vehicle runs
// it) flown by the experiment's own autopilot, which surveys the tank (a rectangle of
// waypoints at changing depths and speeds, with a sway excitation); it replies each step with
// its commands (for the twin) and its noisy measurement of its own pose
class TruthVehicle final : public Endpoint {
 public:
  TruthVehicle(const EndpointConfig& config, const Scenario& sc, const Hidden& h, std::uint64_t seed,
               std::int64_t t_off_ns, bool pose_only = false)
      : Endpoint(config), truth_(sc, 0, stand_in_params(sc.model, h), seed), hidden_(h), t_off_ns_(t_off_ns),
        pose_only_(pose_only) {
    inputs_.resize(sc.model.bodies.size());
    positions_.push_back(truth_.state().bodies[0].position_m);
  }

  bool publish(const StepContext& ctx, const WorldState&) override {
    const BodyWrench cmd = autopilot(static_cast<double>(ctx.time_ns) * 1e-9);
    commands_.push_back(cmd);
    inputs_.clear();
    inputs_.wrenches[0] = cmd;
    inputs_.wrenches[0].force_body_n *= hidden_.thrust;
    inputs_.wrenches[0].torque_body_nm *= hidden_.thrust;
    if (truth_.advance(inputs_, static_cast<double>(ctx.period_ns) * 1e-9) != StepStatus::ok) {
      fault_message_ = "the stand-in's truth simulation faulted";
      return false;
    }
    positions_.push_back(truth_.state().bodies[0].position_m);
    if (truth_.state().time_ns == t_off_ns_) state_at_off_ = truth_.state();
    reply_.clear();
    reply_.step = ctx.step;
    reply_.wrenches.emplace_back(0, cmd);
    Measurement m = truth_.measure();
    m.has_velocity = !pose_only_;
    reply_.measurements.push_back(m);
    return true;
  }
  GatherStatus gather(const StepContext&, SteadyClock::time_point, Reply& reply) override {
    std::swap(reply, reply_);
    return GatherStatus::ready;
  }

  const WorldState& state() const { return truth_.state(); }
  const WorldModel& truth() const { return truth_.model(); }
  const WorldState& state_at_off() const { return state_at_off_; }
  const std::vector<Vec3>& positions() const { return positions_; }  // index = step
  const std::vector<BodyWrench>& commands() const { return commands_; }

 private:
  BodyWrench autopilot(double t) {
    static const double wp[4][4] = {// x, y, depth, speed
                                    {6, -2.5, 1.5, 0.5},
                                    {6, 2.5, 4.0, 1.0},
                                    {-6, 2.5, 1.5, 0.7},
                                    {-6, -2.5, 4.0, 1.2}};
    const WorldModel& truth = truth_.model();
    const WorldState& state = truth_.state();
    const BodyState& b = state.bodies[0];
    const double* w = wp[leg_ % 4];
    const Vec3 d(w[0] - b.position_m.x(), w[1] - b.position_m.y(), 0);
    if (d.norm() < 1.0) ++leg_;
    const Vec3 v_world = linear_velocity(truth, state, 0);
    const Mat3 r = b.orientation.toRotationMatrix();
    const Vec3 v = r.transpose() * v_world;
    const double yaw = rpy_from_quat(b.orientation).z();
    const double e_yaw = wrap(std::atan2(d.y(), d.x()) - yaw);
    const double yaw_rate = angular_velocity(truth, state, 0).z();
    BodyWrench c;
    c.torque_body_nm.z() = std::clamp(8 * e_yaw - 6 * yaw_rate, -6.0, 6.0);
    const double u_target = w[3] * std::max(0.0, std::cos(e_yaw));
    c.force_body_n.x() = std::clamp(10 * u_target + 20 * u_target * u_target + 60 * (u_target - v.x()), -60.0, 60.0);
    c.force_body_n.y() = 8 * std::sin(0.7 * t);
    // depth hold plus a heave excitation, so vertical drag is seen at more than one speed
    const double e_depth = -w[2] - b.position_m.z();
    const double up = std::clamp(80 * e_depth - 60 * v_world.z() - 6 + 25 * std::sin(0.9 * t), -60.0, 60.0);
    c.force_body_n += r.transpose() * Vec3(0, 0, up);
    return c;
  }

  StandInVehicle truth_;
  WorldState state_at_off_;
  Hidden hidden_;
  std::int64_t t_off_ns_;
  bool pose_only_;
  StepInputs inputs_;
  Reply reply_;
  int leg_ = 0;
  std::vector<Vec3> positions_;
  std::vector<BodyWrench> commands_;
};

struct Case {
  std::string label;
  std::vector<std::string> types;  // processor types, in order, taken from the scenario's entries or defaults
  bool pose_only = false;          // the vehicle measures no velocities (a motion-capture rig)
};

struct Result {
  std::string label;
  double rms_m = 0, max_m = 0;
  double open_final_m = 0, open_max_m = 0;
  std::vector<double> t_s, x_m, y_m, err_m;
  std::vector<std::pair<double, nlohmann::json>> estimates;  // every 10 s: time, estimates and stddev
  std::vector<std::pair<double, nlohmann::json>> series;     // every 1 s, for the plot
  double seconds = 0;
};

// the scenario with vehicles[0].feedback replaced: entries of the listed types from the
// file's own list when it has them, else {type: t} (blend gets alpha 0.1)
Scenario with_feedback(const std::string& text, const std::string& path, const std::vector<std::string>& types) {
  YAML::Node root = YAML::Load(text);
  YAML::Node vehicle = root["vehicles"][0];
  const YAML::Node given = YAML::Clone(vehicle["feedback"]);
  YAML::Node list(YAML::NodeType::Sequence);
  for (const auto& t : types) {
    YAML::Node entry(YAML::NodeType::Map);
    bool found = false;
    for (const auto& e : given)
      if (!found && e["type"].as<std::string>() == t) entry = YAML::Clone(e), found = true;
    if (!found) {
      entry["type"] = t;
      if (t == "blend") entry["alpha"] = 0.1;
    }
    list.push_back(entry);
  }
  vehicle["feedback"] = list;
  YAML::Emitter out;
  out << root;
  return parse_scenario(out.c_str(), path);
}

// runs the session to its end; its wall time in seconds (a session that did not complete says why)
double run_timed(Session& session, const std::string& label) {
  std::atomic<bool> stop{false};
  const auto t0 = tether::bench::Clock::now();
  const Outcome outcome = session.run(stop);
  const double seconds = tether::bench::seconds_since(t0);
  if (outcome != Outcome::completed)
    std::fprintf(stderr, "%s: session %s: %s\n", label.c_str(), to_string(outcome), session.abort_reason().c_str());
  return seconds;
}

Result run_case(const std::string& text, const std::string& path, const Case& c, const Hidden& hidden, double trial_s,
                double off_s, double open_s) {
  const Scenario sc = with_feedback(text, path, c.types);
  const double dt = static_cast<double>(sc.loop.period_ns) * 1e-9;
  const auto steps = static_cast<std::uint64_t>(std::llround(trial_s / dt));
  const auto off_ns = static_cast<std::int64_t>(std::llround(off_s * 1e9)) + sc.initial.time_ns;
  auto vehicle = std::make_unique<TruthVehicle>(sc.endpoints.at(0), sc, hidden, sc.loop.seed, off_ns, c.pose_only);
  TruthVehicle* truth = vehicle.get();
  std::vector<std::unique_ptr<Endpoint>> eps;
  eps.push_back(std::move(vehicle));

  Result r;
  r.label = c.label;
  WorldModel model_at_off = sc.model;
  double thrust_at_off = 1;
  const Session* session_ptr = nullptr;
  double sum_sq = 0;
  SessionOptions options;
  options.steps = steps;
  options.real_time_factor = 0;
  const auto every_10s = static_cast<std::int64_t>(10e9);
  options.after_step = [&](const WorldState& twin) {
    const Vec3 p = twin.bodies[0].position_m;
    const double e = (p - truth->state().bodies[0].position_m).norm();
    const double t = static_cast<double>(twin.time_ns - sc.initial.time_ns) * 1e-9;
    sum_sq += e * e;
    r.max_m = std::max(r.max_m, e);
    r.t_s.push_back(t);
    r.x_m.push_back(p.x());
    r.y_m.push_back(p.y());
    r.err_m.push_back(e);
    const bool tick = (twin.time_ns - sc.initial.time_ns) % every_10s == 0;
    const bool second = (twin.time_ns - sc.initial.time_ns) % 1'000'000'000 == 0;
    if (twin.time_ns == off_ns || tick || second) {
      for (const auto& proc : session_ptr->processors()) {
        if (proc->type() != "estimate") continue;
        nlohmann::json j;
        proc->summarize(j);
        if (tick) r.estimates.emplace_back(t, j);
        if (second) r.series.emplace_back(t, j["estimates"]);
        if (twin.time_ns == off_ns) thrust_at_off = j["estimates"].value("thrust_coefficient", 1.0);
      }
      if (twin.time_ns == off_ns) model_at_off = session_ptr->model();
    }
    return true;
  };
  Session session(sc, std::move(eps), options);
  session_ptr = &session;
  r.seconds = run_timed(session, c.label);
  r.rms_m = std::sqrt(sum_sq / static_cast<double>(std::max<std::size_t>(r.err_m.size(), 1)));

  // open loop: the model as it stood at t_off, from the vehicle's true state, its commands
  WorldState s = truth->state_at_off();
  StepInputs in;
  in.resize(s.bodies.size());
  const auto k0 = static_cast<std::size_t>(std::llround(off_s / dt));
  const auto n = static_cast<std::size_t>(std::llround(open_s / dt));
  for (std::size_t k = k0; k < k0 + n && k < truth->commands().size(); ++k) {
    in.wrenches[0] = truth->commands()[k];
    in.wrenches[0].force_body_n *= thrust_at_off;
    in.wrenches[0].torque_body_nm *= thrust_at_off;
    if (step(model_at_off, s, in, dt) != StepStatus::ok) break;
    const double e = (s.bodies[0].position_m - truth->positions()[k + 1]).norm();
    r.open_max_m = std::max(r.open_max_m, e);
    r.open_final_m = e;
  }
  return r;
}

std::string write_html(const std::vector<Result>& results, const std::vector<double>& tt, const std::vector<double>& tx,
                       const std::vector<double>& ty, const std::vector<std::pair<std::string, double>>& truths,
                       const std::string& path) {
  namespace svg = tether::runtime::svg;
  svg::Plot plan;
  plan.title = "Plan view: the vehicle and its twin";
  plan.x_label = "x (m)";
  plan.y_label = "y (m)";
  plan.equal_aspect = true;
  plan.width_px = 900;
  plan.height_px = 520;
  svg::Plot xt;
  xt.title = "x over time";
  xt.x_label = "t (s)";
  xt.y_label = "x (m)";
  xt.width_px = 900;
  svg::Plot err;
  err.title = "Position error twin vs vehicle";
  err.x_label = "t (s)";
  err.y_label = "error (m)";
  err.width_px = 900;
  err.log_y = true;
  svg::Line truth{"vehicle (truth)", {}, {}, "#000000"};
  truth.width_px = 2.5;
  truth.path = true;
  truth.x = tx, truth.y = ty;
  plan.lines.push_back(truth);
  svg::Line truth_x = truth;
  truth_x.path = false;
  truth_x.x = tt, truth_x.y = tx;
  xt.lines.push_back(truth_x);
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    svg::Line l{r.label, r.x_m, r.y_m, svg::palette(i)};
    l.path = true;
    l.width_px = 1.2;
    l.opacity = 0.8;
    plan.lines.push_back(l);
    xt.lines.push_back(svg::Line{r.label, r.t_s, r.x_m, svg::palette(i)});
    std::vector<double> e = r.err_m;
    for (double& v : e) v = std::max(v, 1e-5);
    err.lines.push_back(svg::Line{r.label, r.t_s, e, svg::palette(i)});
  }
  svg::Plot params;
  params.title = "estimate: parameter error over time (% of the hidden value)";
  params.x_label = "t (s)";
  params.y_label = "error (%)";
  params.width_px = 900;
  params.y_min = -60;
  params.y_max = 60;
  params.refs.push_back(svg::RefLine{false, 5, "+5 %"});
  params.refs.push_back(svg::RefLine{false, -5, "-5 %"});
  for (const Result& r : results) {
    if (r.label != "estimate" || r.series.empty()) continue;  // the other estimate cases look alike
    for (std::size_t p = 0; p < truths.size(); ++p) {
      svg::Line l{truths[p].first, {}, {}, svg::palette(p)};
      for (const auto& [t, est] : r.series) {
        if (!est.contains(truths[p].first)) continue;
        l.x.push_back(t);
        l.y.push_back(100.0 * (est[truths[p].first].get<double>() - truths[p].second) / std::abs(truths[p].second));
      }
      params.lines.push_back(std::move(l));
    }
  }
  std::ofstream out(path);
  out << "<!doctype html><html><head><meta charset=\"utf-8\"><title>Tether correction experiment</title></head>"
         "<body style=\"font-family:sans-serif\"><h1>Correction experiment (correction_trial)</h1>"
         "<p>The same trial, the twin corrected by each feedback processor set (docs/feedback.md).</p>\n";
  out << "<table border=1 cellpadding=4 style=\"border-collapse:collapse\"><tr><th>case</th><th>RMS error (m)</th>"
         "<th>max error (m)</th><th>open-loop error after 10 s (m)</th></tr>";
  for (const Result& r : results)
    out << "<tr><td>" << svg::escape(r.label) << "</td><td>" << r.rms_m << "</td><td>" << r.max_m << "</td><td>"
        << r.open_final_m << "</td></tr>";
  out << "</table>\n" << svg::render(plan) << "<br>" << svg::render(xt) << "<br>" << svg::render(err);
  if (!params.lines.empty()) out << "<br>" << svg::render(params);
  out << "</body></html>\n";
  return path;
}

// ---- against the stand-in: reality that is not the model (docs/feedback.md) ----

struct StandInRun {
  std::string label;
  double rms_m = 0;                    // twin vs truth over the trial
  double open_m = 0, open_base_m = 0;  // open-loop error at the end: the twin's model, the scenario's
  double open_true_m = 0;              // and the model with the stand-in's true values
  nlohmann::json estimate;             // the estimate processor's summary at the trial's end
  std::vector<std::pair<std::string, double>> truth;
  double net_buoyancy_n = 0;  // the model's own (B0 of the buoyancy's combination)
  double seconds = 0;
};

// an online combination's truth from the stand-in's hidden values, as `tether identify` takes
// it (identify::combination_truth): the parameter (for the buoyancy with the model's own net
// buoyancy) over the effective mass
std::optional<double> online_combination_truth(const StandInRun& r, const std::string& name) {
  const auto truth = [&](const std::string& n) -> std::optional<double> {
    for (const auto& [k, v] : r.truth)
      if (k == n) return v;
    return std::nullopt;
  };
  const double eff = 1 + truth("added_mass_fraction").value_or(0);
  std::optional<double> v;
  if (name == "thrust_per_effective_mass")
    v = truth("thrust_coefficient");
  else if (name == "net_buoyancy_per_effective_mass_n") {
    if (const auto b = truth("buoyancy_offset_n")) v = r.net_buoyancy_n + *b;
  } else if (name == "angular_drag_per_effective_inertia")
    v = truth("angular_drag_scale");
  else if (const auto at = name.rfind("_per_effective_mass"); at != std::string::npos)
    v = truth(name.substr(0, at));
  if (!v) return v;
  return *v / eff;
}

// --hidden YAML: the stand-in's `hidden:` overrides (docs/feedback.md), e.g. to switch a mismatch off
std::string& hidden_override() {
  static std::string s;
  return s;
}

// the scenario with the MQTT vehicle replaced by the in-process stand-in (seeded), the
// feedback list set to `types`, the trial plus the open-loop span as its duration
Scenario stand_in_scenario(const std::string& text, const std::string& path, const std::vector<std::string>& types,
                           std::uint64_t seed, double seconds, bool keep_loop_seed = false) {
  YAML::Node root = YAML::Load(text);
  tether::test::stand_in_for_mqtt(root, seed, hidden_override());
  if (!keep_loop_seed) root["loop"]["seed"] = seed;
  root["loop"].remove("steps");
  root["loop"]["duration_s"] = seconds;
  root["recording"]["enabled"] = false;
  YAML::Emitter out;
  out << root;
  return with_feedback(out.c_str(), path, types);
}

// the twin's model `model` (thrust gain `thrust`, its thrusters `lag_s` slower) predicting from
// the truth's state with the truth's commands, no feedback: the position error after the span
double open_loop(const Scenario& sc, const WorldModel& model, double thrust, double lag_s, const WorldModel& truth_model,
                 const WorldState& truth_at_off, const StandInVehicle& devices_at_off,
                 const std::vector<std::vector<std::pair<std::size_t, std::string>>>& cmds,
                 const std::vector<Vec3>& truth_path) {
  Scenario s2 = sc;
  s2.model = model;
  HiddenParams h;
  h.thrust_scale = thrust;
  const double tau = thruster_time_constant_s(sc.model, sc.devices, 0);
  if (tau > 0) h.thruster_time_constant_scale = (tau + lag_s) / tau;
  StandInVehicle pred(s2, 0, h, 1);
  // the truth's rotors as they spin at the start (its devices at t_off, kept by the caller)
  if (!pred.take_devices_from(devices_at_off))
    throw std::runtime_error("the prediction's devices differ from the truth's");
  // the truth's velocities, as momenta of the model's (lighter: no added mass) bodies
  WorldState start = truth_at_off;
  for (std::size_t b = 0; b < start.bodies.size(); ++b) {
    const Vec3 v = linear_velocity(truth_model, truth_at_off, static_cast<int>(b));
    const Vec3 w = angular_velocity(truth_model, truth_at_off, static_cast<int>(b));
    const Mat3 r = start.bodies[b].orientation.toRotationMatrix();
    start.bodies[b].linear_momentum = model.bodies[b].mass_kg * v;
    start.bodies[b].angular_momentum = r * model.bodies[b].inertia_body * r.transpose() * w;
  }
  pred.set_state(start);
  const double dt = static_cast<double>(sc.loop.period_ns) * 1e-9;
  double e = 0;
  for (std::size_t k = 0; k < cmds.size() && k < truth_path.size(); ++k) {
    for (const auto& [device, bytes] : cmds[k])
      (void)pred.command(device, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    if (pred.advance(dt) != StepStatus::ok) return 1e9;
    e = (pred.state().bodies[0].position_m - truth_path[k]).norm();
  }
  return e;
}

StandInRun run_stand_in(const std::string& text, const std::string& path, const std::string& label,
                        const std::vector<std::string>& types, std::uint64_t seed, double trial_s, double open_s,
                        bool keep_loop_seed = false) {
  const Scenario sc = stand_in_scenario(text, path, types, seed, trial_s + open_s, keep_loop_seed);
  auto eps = tether::adapters::make_endpoints(sc);
  const StandInEndpoint* truth = nullptr;
  for (const auto& e : eps)
    if (const auto* t = dynamic_cast<const StandInEndpoint*>(e.get())) truth = t;
  if (!truth) throw std::runtime_error(path + ": no mqtt endpoint to stand in for");
  StandInRun r;
  r.label = label;
  r.truth = hidden_truth(sc.model, 0, truth->truth().hidden(), thruster_time_constant_s(sc.model, sc.devices, 0));
  r.net_buoyancy_n = net_buoyancy_n(vehicle_parameter_base(sc.model, 0));
  const auto off_ns = sc.initial.time_ns + static_cast<std::int64_t>(std::llround(trial_s * 1e9));
  WorldModel model_at_off = sc.model;
  WorldState truth_at_off;
  StandInVehicle devices_at_off(sc, 0, HiddenParams{}, 1);  // the truth's devices at t_off
  double thrust = 1, lag_s = 0, sum_sq = 0;
  std::size_t n = 0;
  std::vector<std::vector<std::pair<std::size_t, std::string>>> cmds;
  std::vector<Vec3> truth_path;
  const Session* session_ptr = nullptr;
  SessionOptions options;
  options.real_time_factor = 0;
  options.after_step = [&](const WorldState& twin) {
    const Vec3 p_truth = truth->truth().state().bodies[0].position_m;
    if (twin.time_ns <= off_ns) {
      const double e = (twin.bodies[0].position_m - p_truth).norm();
      sum_sq += e * e;
      ++n;
    } else {
      truth_path.push_back(p_truth);
    }
    if (twin.time_ns >= off_ns) {
      if (twin.time_ns == off_ns) {
        model_at_off = session_ptr->model();
        truth_at_off = truth->truth().state();
        if (!devices_at_off.take_devices_from(truth->truth()))
          throw std::runtime_error("the truth's devices cannot be copied");
        for (const auto& proc : session_ptr->processors())
          if (proc->type() == "estimate") {
            proc->summarize(r.estimate);
            thrust = r.estimate["estimates"].value("thrust_coefficient", 1.0);
            lag_s = r.estimate["estimates"].value("thruster_lag_s", 0.0);
          }
      }
      // the commands the truth takes at its next step, as the session's bank holds them now
      const tether::hal::DeviceBank& bank = session_ptr->devices();
      auto& now = cmds.emplace_back();
      for (std::size_t i = 0; i < bank.size(); ++i) {
        const std::uint8_t* data = nullptr;
        std::size_t size = 0;
        if (bank.is_actuator(i) && bank.reading(i, data, size) == tether::hal::Status::ok && data)
          now.emplace_back(i, std::string(reinterpret_cast<const char*>(data), size));
      }
    }
    return true;
  };
  Session session(sc, std::move(eps), options);
  session_ptr = &session;
  r.seconds = run_timed(session, label);
  r.rms_m = std::sqrt(sum_sq / static_cast<double>(std::max<std::size_t>(n, 1)));
  const WorldModel& truth_model = truth->truth().model();
  r.open_m = open_loop(sc, model_at_off, thrust, lag_s, truth_model, truth_at_off, devices_at_off, cmds, truth_path);
  r.open_base_m = open_loop(sc, sc.model, 1.0, 0.0, truth_model, truth_at_off, devices_at_off, cmds, truth_path);
  // the most this prediction can show: the model with the stand-in's own values (its added
  // mass, thrust, drags, buoyancy, steady current, rotor lag and yaw drag; not its dead band,
  // the current's swing or the roll and pitch drag)
  {
    const VehicleParameterBase base = vehicle_parameter_base(sc.model, 0);
    auto th = nominal_vehicle_parameters(sc.model, 0);
    for (std::size_t i = 0; i < th.size(); ++i)
      for (const auto& [name, value] : r.truth)
        if (name == vehicle_parameter_names[i]) th[i] = value;
    WorldModel true_values = sc.model;
    apply_vehicle_parameters(base, th.data(), true, true_values);
    apply_angular_drag(base, th[vp::angular_drag], true_values);
    r.open_true_m = open_loop(sc, true_values, th[vp::thrust], th[vp::thruster_lag], truth_model, truth_at_off,
                              devices_at_off, cmds, truth_path);
  }
  return r;
}

// per parameter of one run: truth, estimate, sigma, error, z, identified
void print_parameters(const StandInRun& r) {
  std::printf("    %-20s %10s %10s %9s %8s %7s %s\n", "parameter", "truth", "estimate", "sigma", "error", "z",
              "identified");
  for (const auto& [name, value] : r.truth) {
    const auto& e = r.estimate["estimates"];
    if (!e.contains(name)) continue;
    const double est = e[name].get<double>(), sd = r.estimate["stddev"][name].get<double>();
    const bool id = r.estimate["identified"].value(name, false);
    std::printf("    %-20s %10.4g %10.4g %9.3g %+7.1f%% %+7.2f %s\n", name.c_str(), value, est, sd,
                value != 0 ? 100.0 * (est - value) / std::abs(value) : 0.0, sd > 0 ? (est - value) / sd : 0.0,
                id                                  ? "yes"
                : r.estimate.value("misfit", false) ? "no (model misfit: the best fit, not a physical value)"
                                                    : "no");
  }
}

// the same trial over MQTT through a mosquitto on a free loopback port, the scenario's own
// launch of tether-vehicle (its defaults: the default stand-in, seed 1): the estimates and
// their verdicts, beside the in-process stand-in with the same seeds (the truth's state is in
// another process, so no tracking or open-loop figures here)
void mqtt_row(const std::string& path, const std::string& text, double trial_s) {
  std::unique_ptr<tether::test::Mosquitto> broker;
  try {
    broker = std::make_unique<tether::test::Mosquitto>();
  } catch (const std::exception& e) {
    std::printf("\n  over MQTT: skipped (%s)\n", e.what());
    return;
  }
  ::setenv("TETHER_MQTT_BROKER", broker->uri().c_str(), 1);
  ::setenv("TETHER_MQTT_SESSION", "bench_correction", 1);
  ::setenv("TETHER_BUILD_DIR", TETHER_BINARY_DIR.c_str(), 1);
  YAML::Node root = YAML::Load(text);
  root["loop"].remove("steps");
  root["loop"]["duration_s"] = trial_s;
  root["recording"]["enabled"] = false;
  YAML::Emitter out;
  out << root;
  const Scenario sc = parse_scenario(out.c_str(), path);
  SessionOptions options;
  options.real_time_factor = 0;
  Session session(sc, tether::adapters::make_endpoints(sc), options);
  const double seconds = run_timed(session, "over MQTT");
  StandInRun mqtt;
  mqtt.label = "estimate+kalman over MQTT";
  mqtt.truth = hidden_truth(sc.model, 0, default_hidden_params(), thruster_time_constant_s(sc.model, sc.devices, 0));
  for (const auto& proc : session.processors())
    if (proc->type() == "estimate") proc->summarize(mqtt.estimate);
  std::uint64_t misses = 0;
  for (std::size_t i = 0; i < session.endpoints().size(); ++i) misses += session.endpoint_counters(i).misses;
  const StandInRun local =
      run_stand_in(text, path, "in-process", {"estimate", "kalman"}, 1, trial_s, 0, /*keep_loop_seed=*/true);
  double largest = 0;
  for (const auto& [name, value] : mqtt.estimate["estimates"].items())
    if (local.estimate["estimates"].contains(name))
      largest = std::max(largest, std::abs(value.get<double>() - local.estimate["estimates"][name].get<double>()));
  std::printf(
      "\n  over MQTT through mosquitto (tether-vehicle launched by the scenario, %.1f s wall, %llu missed "
      "steps):\n",
      seconds, static_cast<unsigned long long>(misses));
  print_parameters(mqtt);
  std::printf("  largest difference from the in-process stand-in with the same seeds: %.3g%s\n", largest,
              misses ? " (missed steps change the data)" : "");
}

void stand_in_section(const std::string& path, bool quick, int seeds) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const double trial_s = quick ? 5 : 60, open_s = quick ? 2 : 10;
  const std::uint64_t seed0 = 42;
  std::printf("\nagainst the stand-in vehicle (in-process, tether-vehicle's physics): %s, %.0f s trial\n", path.c_str(),
              trial_s);
  {
    const HiddenParams h = default_hidden_params();
    std::printf(
        "  hidden: drag x%.2f (per axis linear [%g %g %g], quadratic [%g %g %g]), thrust x%.2f, thrusters' lag x%.2f, "
        "dead band %.2f,\n  added mass %+.0f %%, buoyancy %+g N, current [%g %g] m/s swinging by [%g %g] over %g s, "
        "velocity bias [%g %g] m/s\n",
        h.drag_scale, h.linear_drag_axis_scale.x(), h.linear_drag_axis_scale.y(), h.linear_drag_axis_scale.z(),
        h.quadratic_drag_axis_scale.x(), h.quadratic_drag_axis_scale.y(), h.quadratic_drag_axis_scale.z(),
        h.thrust_scale, h.thruster_time_constant_scale, h.thruster_dead_band, 100 * h.added_mass_fraction,
        h.buoyancy_offset_n, h.current_m_s.x(), h.current_m_s.y(), h.current_swing_m_s.x(), h.current_swing_m_s.y(),
        h.current_period_s, h.velocity_bias_m_s.x(), h.velocity_bias_m_s.y());
  }
  std::printf("  open loop: from the truth's state at t = %.0f s, %.0f s with its commands, no feedback\n\n", trial_s,
              open_s);
  std::printf("  %-16s %12s %18s %22s %10s %8s\n", "processors", "RMS err (m)", "open-loop end (m)",
              "uncorrected model (m)", "better", "wall (s)");
  const std::vector<std::pair<std::string, std::vector<std::string>>> sets = {
      {"off", {}}, {"kalman", {"kalman"}}, {"estimate", {"estimate"}}, {"estimate+kalman", {"estimate", "kalman"}}};
  std::vector<StandInRun> runs;
  for (const auto& [label, types] : sets) {
    runs.push_back(run_stand_in(text, path, label, types, seed0, trial_s, open_s));
    const StandInRun& r = runs.back();
    std::printf("  %-16s %12.4f %18.4f %22.4f %9.1fx %8.2f\n", r.label.c_str(), r.rms_m, r.open_m, r.open_base_m,
                r.open_m > 0 ? r.open_base_m / r.open_m : 0.0, r.seconds);
  }
  std::printf(
      "  %-16s %12s %18.4f %22.4f %9.1fx   (the model given the stand-in's own values: the most this prediction "
      "shows)\n",
      "true values", "", runs.front().open_true_m, runs.front().open_base_m,
      runs.front().open_true_m > 0 ? runs.front().open_base_m / runs.front().open_true_m : 0.0);
  for (const StandInRun& r : runs)
    if (!r.estimate.is_null()) {
      std::printf(
          "\n  %s at t = %.0f s (seed %llu; noise scale %.3g, trial mean %.3g, residual correlation %.2f, systematic "
          "%.3f x%.2g, condition %.3g):\n",
          r.label.c_str(), trial_s, static_cast<unsigned long long>(seed0), r.estimate.value("noise_scale", 0.0),
          r.estimate.value("mean_noise_scale", 0.0), r.estimate.value("residual_correlation", 0.0),
          r.estimate.value("systematic_residual", 0.0), r.estimate.value("misfit_widening", 0.0),
          r.estimate.value("condition", 0.0));
      print_parameters(r);
    }

  // coverage: over the seeds, how often the truth lies within 2 sigma of an identified estimate
  int pairs = 0, covered = 0, within_goal = 0, identified_total = 0, unidentified_total = 0;
  int all_pairs = 0, all_covered = 0, misfit_seeds = 0;
  std::vector<double> open_ratios;
  std::map<std::string, std::pair<int, int>> per_param;  // covered, identified
  std::vector<std::string> misses;  // identified, and the truth beyond 2 sigma
  std::map<std::string, std::array<int, 3>> combos;  // the online combinations: seen, covered, within 5 %
  // per seed: the prediction and the estimates it predicted with
  static constexpr std::array<const char*, 9> shown = {"thrust_coefficient", "linear_drag_x",      "quadratic_drag_x",
                                                       "buoyancy_offset_n",  "current_x_m_s",      "current_y_m_s",
                                                       "thruster_lag_s",     "angular_drag_scale", "linear_drag_y"};
  std::printf("\n  estimate+kalman per seed: the 10 s open-loop prediction and the final estimates\n  %-5s %8s %7s",
              "seed", "open (m)", "better");
  for (const char* n : shown) std::printf(" %9.9s", n);
  std::printf("\n");
  for (int k = 0; k < seeds; ++k) {
    const StandInRun r = run_stand_in(text, path, "estimate+kalman", {"estimate", "kalman"},
                                      seed0 + static_cast<std::uint64_t>(k), trial_s, open_s);
    open_ratios.push_back(r.open_m > 0 ? r.open_base_m / r.open_m : 0.0);
    std::printf("  %-5llu %8.4f %6.1fx", static_cast<unsigned long long>(seed0 + static_cast<std::uint64_t>(k)),
                r.open_m, open_ratios.back());
    for (const char* n : shown) std::printf(" %9.4g", r.estimate["estimates"].value(n, 0.0));
    std::printf("\n");
    misfit_seeds += r.estimate.value("misfit", false);
    if (r.estimate.contains("combinations") && r.estimate["combinations"].is_object())
      for (const auto& [name, c] : r.estimate["combinations"].items()) {
        const std::optional<double> t = online_combination_truth(r, name);
        if (!t) continue;
        const double v = c.value("value", 0.0), sd = c.value("stddev", 0.0);
        auto& e = combos[name];
        ++e[0], e[1] += std::abs(v - *t) <= 2 * sd, e[2] += std::abs(v - *t) <= 0.05 * std::abs(*t);
      }
    for (const auto& [name, value] : r.truth) {
      if (!r.estimate["estimates"].contains(name)) continue;
      const double e_all = r.estimate["estimates"][name].get<double>();
      ++all_pairs;
      all_covered += std::abs(e_all - value) <= 2 * r.estimate["stddev"][name].get<double>();
      if (!r.estimate["identified"].value(name, false)) {
        ++unidentified_total;
        continue;
      }
      ++identified_total;
      const double est = r.estimate["estimates"][name].get<double>(), sd = r.estimate["stddev"][name].get<double>();
      const bool in = std::abs(est - value) <= 2 * sd;
      if (!in) misses.push_back(name + " (seed " + std::to_string(seed0 + static_cast<std::uint64_t>(k)) + ", z " +
                                std::to_string((est - value) / sd).substr(0, 5) + ")");
      const double goal = (name == "thrust_coefficient" || name == "buoyancy_offset_n") ? 0.05 : 0.10;
      ++pairs;
      covered += in;
      within_goal += std::abs(est - value) <= goal * std::abs(value);
      per_param[name].first += in;
      per_param[name].second += 1;
    }
  }
  std::printf(
      "\n  coverage over %d seeds (estimate+kalman): the truth within 2 sigma for %d of %d (seed, identified "
      "parameter) pairs = %.0f %% (goal >= 90 %%)\n",
      seeds, covered, pairs, pairs ? 100.0 * covered / pairs : 0.0);
  std::printf(
      "  identified %d, not identified %d of %d (seed, parameter) pairs; within the goal (10 %%, 5 %% for "
      "thrust and buoyancy): %d of %d identified\n",
      identified_total, unidentified_total, identified_total + unidentified_total, within_goal, pairs);
  std::printf(
      "  every estimate, identified or not: the truth within 2 sigma for %d of %d = %.0f %%; %d of %d seeds "
      "flagged a model misfit\n",
      all_covered, all_pairs, all_pairs ? 100.0 * all_covered / all_pairs : 0.0, misfit_seeds, seeds);
  std::sort(open_ratios.begin(), open_ratios.end());
  std::printf(
      "  open-loop error vs the uncorrected model: %.1fx to %.1fx better, median %.1fx, >= 10x in %d of %zu seeds "
      "(goal: every seed)\n",
      open_ratios.front(), open_ratios.back(), open_ratios[open_ratios.size() / 2],
      static_cast<int>(std::count_if(open_ratios.begin(), open_ratios.end(), [](double x) { return x >= 10; })),
      open_ratios.size());
  for (const auto& [name, c] : per_param)
    std::printf("    %-20s covered %2d of %2d identified\n", name.c_str(), c.first, c.second);
  for (const std::string& m : misses) std::printf("    missed: %s\n", m.c_str());
  int seen = 0, in2 = 0, in5 = 0;
  for (const auto& [name, e] : combos) seen += e[0], in2 += e[1], in5 += e[2];
  std::printf(
      "  online combinations at the trial's end (estimate+kalman; identified or not): the truth within 2 sigma "
      "for %d of %d, within 5 %% for %d\n",
      in2, seen, in5);
  for (const auto& [name, e] : combos)
    std::printf("    %-38s covered %2d of %2d, within 5 %% %2d\n", name.c_str(), e[1], e[0], e[2]);
  if (!quick) mqtt_row(path, text, trial_s);
}

// the offline fit (`tether identify`) of each seed's trial: the stand-in run recorded, its
// trial part fitted, the open-loop span after it predicted from the measured state
void offline_section(const std::string& path, bool quick, int seeds) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const double trial_s = quick ? 8 : 60, open_s = quick ? 2 : 10;
  std::printf(
      "\noffline fit (tether identify) of the same trials, no processors in the loop: %.0f s fitted, the next "
      "%.0f s predicted open loop from the measured state\n",
      trial_s, open_s);
  std::printf("  %-6s %9s %9s %14s %16s %8s %6s\n", "seed", "read (s)", "fit (s)", "open-loop (m)", "uncorrected (m)",
              "better", "delay");
  std::map<std::string, std::array<int, 3>> per;  // identified, covered, within 5 %
  std::vector<double> gains, fit_s;
  int pairs = 0, covered = 0, within = 0;
  tether::identify::FitResult last;
  tether::identify::Trial last_trial;
  for (int k = 0; k < seeds; ++k) {
    const std::uint64_t seed = 42 + static_cast<std::uint64_t>(k);
    const Scenario sc = stand_in_scenario(text, path, {}, seed, trial_s + open_s);
    const std::string rec =
        (std::filesystem::temp_directory_path() / ("tether_bench_identify_" + std::to_string(::getpid()) + ".mcap"))
            .string();
    {
      SessionOptions so;
      so.real_time_factor = 0;
      Session session(sc, tether::adapters::make_endpoints(sc), so);
      Recorder recorder(sc, recorder_inputs(session));
      std::string error;
      if (!recorder.open(rec, &error)) throw std::runtime_error(error);
      session.set_recorder(&recorder);
      std::atomic<bool> stop{false};
      (void)session.run(stop);
      if (!recorder.close(session.summary(), &error)) throw std::runtime_error(error);
      session.set_recorder(nullptr);
    }
    const auto t0 = std::chrono::steady_clock::now();
    tether::identify::Trial trial;
    std::string error;
    if (!tether::identify::load_trial(rec, "", trial, &error)) throw std::runtime_error(error);
    const double read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::filesystem::remove(rec);
    tether::identify::FitOptions o;
    o.holdout = open_s / (trial_s + open_s);
    o.position_stddev_m = 0.002;
    o.velocity_stddev_m_s = 0.005;
    o.orientation_stddev_rad = 0.002;
    const tether::identify::FitResult fit = tether::identify::fit({trial}, o);
    const auto from = tether::identify::holdout_start(trial, o.holdout);
    const tether::identify::Prediction p = tether::identify::predict(trial, fit, from, trial.samples.size(), open_s);
    gains.push_back(p.gain());
    fit_s.push_back(fit.seconds);
    std::printf("  %-6llu %9.2f %9.2f %14.4f %16.4f %7.1fx %6d\n", static_cast<unsigned long long>(seed), read_s,
                fit.seconds, p.fitted_m, p.uncorrected_m, p.gain(), fit.delay_steps);
    for (const auto& cb : fit.combinations) {
      const std::optional<double> truth = tether::identify::combination_truth(trial, cb);
      if (!truth || !cb.identified) continue;
      const bool in2 = std::abs(cb.value - *truth) <= 2 * cb.stddev;
      const bool in5 = std::abs(cb.value - *truth) <= 0.05 * std::abs(*truth);
      ++pairs, covered += in2, within += in5;
      auto& e = per[cb.name];
      ++e[0], e[1] += in2, e[2] += in5;
    }
    last = fit;
    last_trial = std::move(trial);
  }
  std::sort(gains.begin(), gains.end());
  std::sort(fit_s.begin(), fit_s.end());
  std::printf(
      "\n  open-loop %.0f s prediction vs the uncorrected model: %.1fx to %.1fx better, median %.1fx (goal >= 10x)\n",
      open_s, gains.front(), gains.back(), gains[gains.size() / 2]);
  std::printf("  identified combinations: the truth within 2 sigma for %d of %d (goal >= 90 %%), within 5 %% for %d\n",
              covered, pairs, within);
  for (const auto& [name, e] : per)
    std::printf("    %-38s identified in %2d seeds, covered %2d, within 5 %% %2d\n", name.c_str(), e[0], e[1], e[2]);
  std::printf("  fit time (this machine): median %.2f s, largest %.2f s (goal < 5 s for a 60 s trial)\n",
              fit_s[fit_s.size() / 2], fit_s.back());
  std::printf("\n  the last seed's fit:\n");
  for (const auto& c : last.combinations)
    std::printf("    %-38s %11.5g +- %-10.3g %s\n", c.name.c_str(), c.value, c.stddev,
                c.identified ? "identified" : "");
  for (const auto& w : last.weak) {
    std::printf("    weak (sigma shrunk %.2gx):", w.shrink);
    for (const auto& [n, l] : w.loadings) std::printf(" %+.2f %s", l, n.c_str());
    std::printf("\n      strengthen with: %s\n", w.advice.c_str());
  }
  std::printf("    noise scale %.3g, residual correlation %.2f, %d windows, %d iterations; %d blocks, sigma up to x%.2f\n",
              last.noise_scale, last.residual_correlation, last.windows, last.iterations, last.blocks,
              last.misfit_widening);
}

}  // namespace

int main(int argc, char** argv) {
  tether::examples::register_example_controllers();  // tank_identify's depth_heading_hold
  tether::identify::register_online_refit();         // the estimate's refit_every_s
  spdlog::set_level(spdlog::level::warn);            // not every manoeuvre of every run
  const bool quick = tether::bench::quick_mode(argc, argv);
  std::string path = TETHER_SOURCE_DIR + "/config/scenarios/correction_trial.yaml";
  std::string html = TETHER_BINARY_DIR + "/bench/correction.html";
  std::string stand_in_path = TETHER_SOURCE_DIR + "/config/scenarios/tank_identify.yaml";
  int seeds = quick ? 1 : 20;
  bool stand_in_only = false, offline_only = false, online_only = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--stand-in-only") stand_in_only = true;
    if (a == "--offline-only") offline_only = true;
    if (a == "--online-only") online_only = true;  // the stand-in section without the offline fit
    if (i + 1 >= argc) continue;
    if (a == "--scenario") path = argv[i + 1];
    if (a == "--html") html = argv[i + 1];
    if (a == "--stand-in-scenario") stand_in_path = argv[i + 1];
    if (a == "--hidden") hidden_override() = argv[i + 1];
    if (a == "--seeds") seeds = std::max(1, std::atoi(argv[i + 1]));
  }
  // the section against the stand-in vehicle: its exit status
  const auto against_stand_in = [&] {
    try {
      if (!offline_only) stand_in_section(stand_in_path, quick, seeds);
      if (!online_only) offline_section(stand_in_path, quick, seeds);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "correction: %s\n", e.what());
      return 2;
    }
    return 0;
  };
  if (stand_in_only || offline_only || online_only) return against_stand_in();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "correction: cannot open %s\n", path.c_str());
    return 2;
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // --quick is the suite's smoke run (its figures are not checked): short enough to leave
  // the suite's time to the tests that check something
  const double trial_s = quick ? 10 : 120, off_s = quick ? 5 : 60, open_s = quick ? 3 : 10;
  const Hidden hidden;

  const std::vector<Case> cases = {{"off", {}},
                                   {"direct", {"direct"}},
                                   {"blend", {"blend"}},
                                   {"vector_adjust", {"vector_adjust"}},
                                   {"kalman", {"kalman"}},
                                   {"estimate", {"estimate"}},
                                   {"estimate+kalman", {"estimate", "kalman"}},
                                   {"est+kalman, pose", {"estimate", "kalman"}, true}};
  std::vector<Result> results;
  try {
    for (const Case& c : cases) results.push_back(run_case(text, path, c, hidden, trial_s, off_s, open_s));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "correction: %s\n", e.what());
    return 2;
  }

  std::printf("correction: %s, %.0f s trial, 10 ms steps; stand-in vehicle with hidden parameters:\n", path.c_str(),
              trial_s);
  std::printf(
      "  thrust x%.2f, linear drag [%g %g %g], quadratic drag [%g %g %g], buoyancy %+g N, current [%g %g] m/s;\n",
      hidden.thrust, hidden.linear.x(), hidden.linear.y(), hidden.linear.z(), hidden.quadratic.x(),
      hidden.quadratic.y(), hidden.quadratic.z(), hidden.buoyancy_n, hidden.current.x(), hidden.current.y());
  std::printf("  noise: position %.3g m, orientation %.3g rad, velocity %.3g m/s, angular velocity %.3g rad/s\n",
              hidden.position_noise_m, hidden.orientation_noise_rad, hidden.velocity_noise_m_s,
              hidden.angular_velocity_noise_rad_s);
  std::printf(
      "  open loop: the twin's model at t = %.0f s predicts %.0f s from the vehicle's true state, no feedback\n\n",
      off_s, open_s);
  std::printf("  %-16s %12s %12s %16s %14s %10s %8s\n", "case", "RMS err (m)", "max err (m)", "open-loop end (m)",
              "open-loop max", "vs off", "wall (s)");
  const double base = results.front().open_final_m;
  for (const Result& r : results)
    std::printf("  %-16s %12.4f %12.4f %16.4f %14.4f %9.1fx %8.2f\n", r.label.c_str(), r.rms_m, r.max_m, r.open_final_m,
                r.open_max_m, r.open_final_m > 0 ? base / r.open_final_m : 0.0, r.seconds);

  // parameter errors over time
  struct Truth {
    const char* name;
    double value;
  };
  const Truth truths[] = {{"thrust_coefficient", hidden.thrust},      {"linear_drag_x", hidden.linear.x()},
                          {"linear_drag_y", hidden.linear.y()},       {"linear_drag_z", hidden.linear.z()},
                          {"quadratic_drag_x", hidden.quadratic.x()}, {"quadratic_drag_y", hidden.quadratic.y()},
                          {"quadratic_drag_z", hidden.quadratic.z()}, {"buoyancy_offset_n", hidden.buoyancy_n},
                          {"current_x_m_s", hidden.current.x()},      {"current_y_m_s", hidden.current.y()}};
  std::vector<std::pair<std::string, double>> truth_list;
  for (const Truth& tr : truths) truth_list.emplace_back(tr.name, tr.value);
  const char* short_names[] = {"thrust", "lin_x",  "lin_y", "lin_z", "quad_x",
                               "quad_y", "quad_z", "buoy",  "cur_x", "cur_y"};
  for (const Result& r : results) {
    if (r.estimates.empty()) continue;
    std::printf("\n  %s: parameter error (%% of the hidden value) over time\n  %6s", r.label.c_str(), "t (s)");
    for (const char* n : short_names) std::printf(" %7s", n);
    std::printf("\n");
    for (const auto& [t, est] : r.estimates) {
      std::printf("  %6.0f", t);
      for (const Truth& tr : truths)
        std::printf(" %+6.1f%%", est["estimates"].contains(tr.name)
                                     ? 100.0 * (est["estimates"][tr.name].get<double>() - tr.value) / std::abs(tr.value)
                                     : 0.0);
      std::printf("\n");
    }
    // at t_off: within 5 %? and how sure the estimator itself is (its 1-sigma, % of the value)
    for (const auto& [t, est] : r.estimates) {
      if (std::abs(t - off_s) > 1e-6) continue;
      int within = 0;
      std::printf("  %6s", "sd@off");
      for (const Truth& tr : truths) {
        const double v = est["estimates"][tr.name].get<double>();
        within += std::abs(v - tr.value) <= 0.05 * std::abs(tr.value);
        std::printf(" %6.1f%%", 100.0 * est["stddev"][tr.name].get<double>() / std::abs(v));
      }
      std::printf("\n  at t = %.0f s: %d of 10 parameters within 5 %% of the hidden value\n", t, within);
    }
  }

  // the vehicle's own path, for the plot: re-run the stand-in without a twin is not needed,
  // the first case's truth positions are the same in every case (same seed, same autopilot)
  std::vector<double> tt, tx, ty;
  {
    const Scenario sc = with_feedback(text, path, {});
    const double dt = static_cast<double>(sc.loop.period_ns) * 1e-9;
    TruthVehicle v(sc.endpoints.at(0), sc, hidden, sc.loop.seed, -1);
    WorldState dummy;
    for (std::uint64_t k = 0; k < static_cast<std::uint64_t>(std::llround(trial_s / dt)); ++k) {
      const StepContext ctx{k, sc.initial.time_ns + static_cast<std::int64_t>(k) * sc.loop.period_ns,
                            sc.loop.period_ns};
      if (!v.publish(ctx, dummy)) break;
      tt.push_back(static_cast<double>(k + 1) * dt);
      tx.push_back(v.state().bodies[0].position_m.x());
      ty.push_back(v.state().bodies[0].position_m.y());
    }
  }
  std::printf("\n  plot: %s\n", write_html(results, tt, tx, ty, truth_list, html).c_str());
  return against_stand_in();
}
