// SPDX-License-Identifier: Apache-2.0
// What a session says of itself at the end (Session::summary): its outcome and timing, each
// endpoint's counters beside what its link saw, the devices, the vehicles, the feedback
// processors, the goals and the expectations (docs/recording.md, "The summary").
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "tether/loop/goal_summary.hpp"
#include "tether/loop/session.hpp"
#include "tether/recording/recorder.hpp"

namespace tether::runtime {

namespace {

double seconds(std::int64_t ns) { return static_cast<double>(ns) * 1e-9; }

}  // namespace

namespace {

nlohmann::json figures(const Histogram& h) {
  return {{"p50", h.percentile(0.5)},
          {"p99", h.percentile(0.99)},
          {"max", h.max()},
          {"mean", h.mean()},
          {"count", h.count()}};
}

nlohmann::json endpoint_summary(const Endpoint& e, const EndpointCounters& c) {
  const LinkCounts link = e.link_counts();
  nlohmann::json j{{"name", e.name()},
                   {"type", e.type()},
                   {"policy", to_string(e.policy())},
                   {"deadline_ms", static_cast<double>(e.deadline_ns()) * 1e-6},
                   {"replies", c.replies},
                   {"late", c.late},
                   {"misses", c.misses},
                   {"stale", link.stale},
                   {"corrupt", link.corrupt},
                   {"implausible", c.implausible},
                   {"faults", c.faults},
                   {"round_trip_ns", figures(c.round_trip_ns)}};
  if (!e.fault_message().empty()) j["fault"] = e.fault_message();
  e.summarize(j);
  return j;
}

nlohmann::json vehicle_summary(const WorldModel& m, const VehicleModel& v, const WorldState& state) {
  const int b = v.bodies.front();
  const BodyState& s = state.bodies[static_cast<std::size_t>(b)];
  nlohmann::json j{{"name", v.name}, {"position_m", {s.position_m.x(), s.position_m.y(), s.position_m.z()}}};
  if (m.water.present) j["depth_m"] = m.water.surface_z_m - s.position_m.z();
  // heading as a compass reads it (clockwise from north), as in goals and expectations;
  // yaw as the world measures it (counter-clockwise from east)
  j["heading_deg"] = compass_heading_deg(s.orientation);
  j["yaw_deg"] = rpy_from_quat(s.orientation).z() * 180.0 / 3.14159265358979323846;
  return j;
}

}  // namespace

nlohmann::json Session::summary() const {
  using nlohmann::json;
  const double sim_s = seconds(state_.time_ns - timing_.start_time_ns);
  const double wall_s = timing_.wall_time_s;
  json out;
  out["scenario"] = scenario_.name;
  if (!scenario_.overrides.empty()) out["overrides"] = scenario_.overrides;
  out["outcome"] = to_string(outcome_);
  if (!abort_reason_.empty()) out["reason"] = abort_reason_;
  out["steps"] = steps_done_;
  out["steps_planned"] = steps_total_;
  out["sim_time_s"] = sim_s;
  out["wall_time_s"] = wall_s;
  out["real_time_factor"] = rtf_;
  out["achieved_real_time_factor"] = wall_s > 0 ? sim_s / wall_s : 0.0;
  out["step_time_ns"] = figures(timing_.step_time_ns);
  out["overruns"] = pacer_.overruns();
  out["reanchors"] = pacer_.reanchors();
  out["physics_substeps"] = timing_.substeps_total;
  out["physics_threads"] = model_.threads;
  const hal::DeviceBank& bank = devices_.bank;
  if (bank.size())
    out["devices"] = {{"count", bank.size()},
                      {"samples", bank.counters().samples},
                      {"dropped", bank.counters().dropped},
                      {"invalid_commands", devices_.invalid_commands + bank.counters().invalid_commands},
                      {"nonfinite_commands", devices_.nonfinite_commands}};
  if (recorder_) out["recording"] = {{"path", recorder_->path()}, {"dropped_items", recorder_->dropped()}};
  if (recording_lost_) {
    auto& rec = out["recording"];
    rec["path"] = recording_path_;
    rec["write_error"] = recording_error_;
    rec["write_failed_after_step"] = recording_failed_at_;
    rec["on_write_error"] = scenario_.recording.stop_on_write_error ? "stop" : "continue";
  }
  if (!timing_.realtime_status.empty() || scenario_.loop.realtime.spin_us > 0) {
    auto& rt = out["realtime"] = json::object();
    for (const auto& [option, status] : timing_.realtime_status) rt[option] = status;
    // the spin's share (a wait whose sleep overshot the spin's start did not spin), told from
    // the waits there were: an operator may change the factor of a live session either way
    if (scenario_.loop.realtime.spin_us > 0) {
      const std::uint64_t waits = pacer_.wake_lateness_ns().count();
      rt["spin_us"] = waits > 0 ? "applied: " + std::to_string(pacer_.spun()) + " of " + std::to_string(waits) +
                                      " waits ended spinning"
                                : std::string("not used: nothing waited (real_time_factor 0 does not pace the loop)");
    }
  }
  out["endpoints"] = json::array();
  for (std::size_t i = 0; i < endpoints_.size(); ++i)
    out["endpoints"].push_back(endpoint_summary(*endpoints_[i], counters_[i]));
  out["feedback"] = json::array();
  for (std::size_t i = 0; i < processors_.size(); ++i) {
    json j{{"name", processors_[i]->name()},
           {"type", processors_[i]->type()},
           {"phase", to_string(processors_[i]->phase())},
           {"vehicle", model_.vehicles[static_cast<std::size_t>(scenario_.feedback[i].vehicle)].name}};
    processors_[i]->summarize(j);
    out["feedback"].push_back(std::move(j));
  }
  out["vehicles"] = json::array();
  for (const auto& v : model_.vehicles) out["vehicles"].push_back(vehicle_summary(model_, v, state_));
  if (!scenario_.goals.empty()) out["goals"] = summarize_goals(scenario_.goals, model_, state_);
  checks_.summarize(out);
  control_summary(out);
  // 16 hex digits: a JSON number this large is rounded by JavaScript and jq 1.6
  char hash[24];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(hash_state(state_)));
  out["state_hash"] = hash;
  if (timing_.profile.enabled()) out["phase_profile"] = timing_.profile.summary(steps_done_);
  return out;
}

}  // namespace tether::runtime
