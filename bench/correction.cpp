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
#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "bench_util.hpp"
#include "tether/loop/session.hpp"
#include "tether/report/svg_plot.hpp"

#ifndef TETHER_SOURCE_DIR
#define TETHER_SOURCE_DIR "."
#endif
#ifndef TETHER_BINARY_DIR
#define TETHER_BINARY_DIR "."
#endif

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

// the stand-in vehicle: a truth simulation with its own autopilot that surveys the tank
// (a rectangle of waypoints at changing depths and speeds, with a sway excitation), replying
// each step with its commands (for the twin) and its noisy measurement of its own pose
class TruthVehicle final : public Endpoint {
 public:
  TruthVehicle(const EndpointConfig& config, const Scenario& sc, const Hidden& h, std::uint64_t seed,
               std::int64_t t_off_ns, bool pose_only = false)
      : Endpoint(config), truth_(sc.model), state_(sc.initial), hidden_(h), rng_(seed), t_off_ns_(t_off_ns),
        pose_only_(pose_only) {
    BodyModel& b = truth_.bodies[0];
    b.damping.linear = h.linear;
    b.damping.quadratic = h.quadratic;
    b.volume_m3 += h.buoyancy_n / (truth_.water.density_kg_m3 * truth_.gravity_m_s2.norm());
    truth_.water.current_m_s = h.current;
    inputs_.resize(truth_.bodies.size());
    positions_.push_back(state_.bodies[0].position_m);
  }

  bool publish(const StepContext& ctx, const WorldState&) override {
    const BodyWrench cmd = autopilot(static_cast<double>(ctx.time_ns) * 1e-9);
    commands_.push_back(cmd);
    inputs_.clear();
    inputs_.wrenches[0] = cmd;
    inputs_.wrenches[0].force_body_n *= hidden_.thrust;
    inputs_.wrenches[0].torque_body_nm *= hidden_.thrust;
    if (step(truth_, state_, inputs_, static_cast<double>(ctx.period_ns) * 1e-9) != StepStatus::ok) {
      fault_message_ = "the stand-in's truth simulation faulted";
      return false;
    }
    positions_.push_back(state_.bodies[0].position_m);
    if (state_.time_ns == t_off_ns_) state_at_off_ = state_;
    reply_.clear();
    reply_.step = ctx.step;
    reply_.wrenches.emplace_back(0, cmd);
    reply_.measurements.push_back(measure(ctx.time_ns + ctx.period_ns));
    return true;
  }
  GatherStatus gather(const StepContext&, SteadyClock::time_point, Reply& reply) override {
    std::swap(reply, reply_);
    return GatherStatus::ready;
  }

  const WorldState& state() const { return state_; }
  const WorldModel& truth() const { return truth_; }
  const WorldState& state_at_off() const { return state_at_off_; }
  const std::vector<Vec3>& positions() const { return positions_; }  // index = step
  const std::vector<BodyWrench>& commands() const { return commands_; }

 private:
  Measurement measure(std::int64_t t_ns) {
    std::normal_distribution<double> n(0, 1);
    auto noise = [&](double sd) {  // drawn in order: argument evaluation order is unspecified
      Vec3 v;
      for (int i = 0; i < 3; ++i) v[i] = n(rng_) * sd;
      return v;
    };
    const BodyState& b = state_.bodies[0];
    Measurement m;
    m.body = 0;
    m.measured_time_ns = t_ns;
    m.has_pose = m.has_covariance = true;
    m.has_velocity = !pose_only_;
    m.position_m = b.position_m + noise(hidden_.position_noise_m);
    const Vec3 r = noise(hidden_.orientation_noise_rad);
    m.orientation = (Quat(Eigen::AngleAxisd(r.norm(), r.normalized())) * b.orientation).normalized();
    m.velocity_m_s = linear_velocity(truth_, state_, 0) + noise(hidden_.velocity_noise_m_s);
    m.angular_velocity_rad_s = angular_velocity(truth_, state_, 0) + noise(hidden_.angular_velocity_noise_rad_s);
    m.pose_covariance.setZero();
    m.pose_covariance.diagonal().head<3>().setConstant(hidden_.position_noise_m * hidden_.position_noise_m);
    m.pose_covariance.diagonal().tail<3>().setConstant(hidden_.orientation_noise_rad * hidden_.orientation_noise_rad);
    return m;
  }

  BodyWrench autopilot(double t) {
    static const double wp[4][4] = {// x, y, depth, speed
                                    {6, -2.5, 1.5, 0.5},
                                    {6, 2.5, 4.0, 1.0},
                                    {-6, 2.5, 1.5, 0.7},
                                    {-6, -2.5, 4.0, 1.2}};
    const BodyState& b = state_.bodies[0];
    const double* w = wp[leg_ % 4];
    const Vec3 d(w[0] - b.position_m.x(), w[1] - b.position_m.y(), 0);
    if (d.norm() < 1.0) ++leg_;
    const Vec3 v_world = linear_velocity(truth_, state_, 0);
    const Mat3 r = b.orientation.toRotationMatrix();
    const Vec3 v = r.transpose() * v_world;
    const double yaw = rpy_from_quat(b.orientation).z();
    const double e_yaw = wrap(std::atan2(d.y(), d.x()) - yaw);
    const double yaw_rate = angular_velocity(truth_, state_, 0).z();
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

  WorldModel truth_;
  WorldState state_;
  WorldState state_at_off_;
  Hidden hidden_;
  std::mt19937_64 rng_;
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
  std::atomic<bool> stop{false};
  const auto t0 = tether::bench::Clock::now();
  const Outcome outcome = session.run(stop);
  r.seconds = tether::bench::seconds_since(t0);
  if (outcome != Outcome::completed)
    std::fprintf(stderr, "%s: session %s: %s\n", c.label.c_str(), to_string(outcome), session.abort_reason().c_str());
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

}  // namespace

int main(int argc, char** argv) {
  const bool quick = tether::bench::quick_mode(argc, argv);
  std::string path = TETHER_SOURCE_DIR "/config/scenarios/correction_trial.yaml";
  std::string html = TETHER_BINARY_DIR "/bench/correction.html";
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--scenario") path = argv[i + 1];
    if (std::string(argv[i]) == "--html") html = argv[i + 1];
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "correction: cannot open %s\n", path.c_str());
    return 2;
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const double trial_s = quick ? 20 : 120, off_s = quick ? 10 : 60, open_s = quick ? 5 : 10;
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
  return 0;
}
