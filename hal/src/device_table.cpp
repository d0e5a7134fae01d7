// SPDX-License-Identifier: Apache-2.0
#include "tether/hal/device_table.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <sstream>
#include <vector>

#include "tether/hal/overloaded.hpp"

namespace tether::hal {

namespace {

constexpr double rad_to_deg = 180.0 / std::numbers::pi;

std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// the same z-y-x roll/pitch/yaw the scenario's orientation_rpy_deg uses
nlohmann::json rpy_deg(const Quat& q) {
  const Mat3 r = q.toRotationMatrix();
  const double roll = std::atan2(r(2, 1), r(2, 2));
  const double pitch = std::asin(std::clamp(-r(2, 0), -1.0, 1.0));
  const double yaw = std::atan2(r(1, 0), r(0, 0));
  // + 0.0 turns -0 into 0 for people reading the JSON
  return {roll * rad_to_deg + 0.0, pitch * rad_to_deg + 0.0, yaw * rad_to_deg + 0.0};
}

void append_noise(std::string& out, const NoiseSpec& n, const char* prefix) {
  auto add = [&](const char* key, double v, double neutral) {
    if (v == neutral) return;
    if (!out.empty()) out += ' ';
    out += prefix;
    out += key;
    out += '=';
    out += number(v);
  };
  add("offset", n.offset, 0);
  add("scale", n.scale, 1);
  add("stddev", n.stddev, 0);
  add("uniform", n.uniform, 0);
  add("bias_walk", n.bias_walk_stddev, 0);
  add("resolution", n.resolution, 0);
  add("dropout", n.dropout, 0);
  add("delay", n.delay_steps, 0);
}

nlohmann::json noise_json(const NoiseSpec& n) {
  return {{"offset", n.offset},
          {"scale", n.scale},
          {"stddev", n.stddev},
          {"uniform", n.uniform},
          {"bias_walk_stddev", n.bias_walk_stddev},
          {"resolution", n.resolution},
          {"dropout", n.dropout},
          {"delay_steps", n.delay_steps}};
}

nlohmann::json params_json(const DeviceSpec& spec) {
  using nlohmann::json;
  json j = json::object();
  std::visit(overloaded{
                 [&](const RayParams& p) {
                   j = {{"min_range_m", p.min_range_m}, {"max_range_m", p.max_range_m}};
                   if (spec.kind == TETHER_KIND_SONAR) {
                     j["beam_width_deg"] = p.beam_width_deg;
                     j["rays"] = p.rays;
                   }
                 },
                 [&](const DepthParams& p) {
                   j = {{"atmospheric_pa", p.atmospheric_pa}};
                 },
                 [&](const CompassParams& p) {
                   j = {{"declination_deg", p.declination_deg}};
                 },
                 [&](const GpsParams& p) {
                   j = {{"datum_lat_deg", p.datum_lat_deg},
                        {"datum_lon_deg", p.datum_lon_deg},
                        {"datum_alt_m", p.datum_alt_m},
                        {"surface_tolerance_m", p.surface_tolerance_m},
                        {"utc_start_s", p.utc_start_s},
                        {"satellites", p.satellites},
                        {"hdop", p.hdop}};
                 },
                 [&](const ContactParams& p) {
                   j = {{"radius_m", p.radius_m}, {"min_force_n", p.min_force_n}};
                 },
                 [&](const TensionParams& p) {
                   j = {{"joint", p.joint_name}, {"joint_index", p.joint}};
                 },
                 [&](const EncoderParams& p) {
                   j = {{"joint", p.joint_name}, {"joint_index", p.joint}};
                 },
                 [&](const ThrusterParams& p) {
                   j = {{"model", p.model == RotorModel::yoerger ? "yoerger" : "first_order"},
                        {"max_thrust_n", p.max_thrust_n},
                        {"max_speed_rad_s", p.max_speed_rad_s},
                        {"time_constant_s", p.time_constant_s},
                        {"ct", p.ct},
                        {"alpha", p.alpha},
                        {"beta", p.beta},
                        {"dead_band", p.dead_band},
                        {"reverse_ratio", p.reverse_ratio},
                        {"reaction_torque_nm_per_n", p.reaction_torque_nm_per_n}};
                 },
                 [&](const DcMotorParams& p) {
                   j = {{"kt_nm_per_a", p.kt_nm_per_a},
                        {"ke_v_s_per_rad", p.ke_v_s_per_rad},
                        {"resistance_ohm", p.resistance_ohm},
                        {"inertia_kg_m2", p.inertia_kg_m2},
                        {"damping_nm_s_per_rad", p.damping_nm_s_per_rad},
                        {"supply_v", p.supply_v},
                        {"ct", p.ct},
                        {"cq", p.cq}};
                 },
                 [&](const FinParams& p) {
                   j = {{"area_m2", p.area_m2},
                        {"cl_alpha_per_rad", p.cl_alpha_per_rad},
                        {"stall_angle_deg", p.stall_angle_deg},
                        {"cd0", p.cd0},
                        {"cd_alpha", p.cd_alpha},
                        {"max_angle_deg", p.max_angle_deg},
                        {"rate_deg_s", p.rate_deg_s},
                        {"air_density_kg_m3", p.air_density_kg_m3}};
                 },
                 [&](const ServoParams& p) {
                   j = {{"min_angle_deg", p.min_angle_deg},
                        {"max_angle_deg", p.max_angle_deg},
                        {"max_rate_deg_s", p.max_rate_deg_s}};
                 },
                 [&](const WheelDriveParams& p) {
                   j = {{"track_m", p.track_m},
                        {"wheel_radius_m", p.wheel_radius_m},
                        {"max_wheel_speed_rad_s", p.max_wheel_speed_rad_s},
                        {"time_constant_s", p.time_constant_s},
                        {"friction", p.friction},
                        {"slip_speed_m_s", p.slip_speed_m_s}};
                 },
                 [](const std::monostate&) {},  // no parameters
             },
             spec.params);
  return j;
}

}  // namespace

std::string noise_summary(const DeviceSpec& spec) {
  std::string out;
  append_noise(out, spec.noise, "");
  const KindInfo& info = kind_info(spec.kind);
  if (info.noise_b_key) {
    const std::string prefix = std::string(info.noise_b_key).substr(0, std::string(info.noise_b_key).find('_')) + ".";
    append_noise(out, spec.noise_b, prefix.c_str());
  }
  return out.empty() ? "none" : out;
}

std::string device_table_text(const DeviceBank& bank) {
  const char* headers[] = {"#", "name", "kind", "direction", "bytes", "rate", "units", "noise"};
  constexpr std::size_t columns = 8;
  std::vector<std::array<std::string, columns>> rows;
  rows.push_back({});
  for (std::size_t c = 0; c < columns; ++c) rows[0][c] = headers[c];
  for (std::size_t i = 0; i < bank.size(); ++i) {
    const DeviceSpec& s = bank.spec(i);
    const KindInfo& info = kind_info(s.kind);
    rows.push_back({std::to_string(i), bank.full_name(i), info.name, info.actuator ? "actuator" : "sensor",
                    std::to_string(bank.payload_size(i)), s.rate_hz > 0 ? number(s.rate_hz) + " Hz" : "every step",
                    info.units, noise_summary(s)});
  }
  std::array<std::size_t, columns> width{};
  for (const auto& r : rows)
    for (std::size_t c = 0; c < columns; ++c) width[c] = std::max(width[c], r[c].size());
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t c = 0; c < columns; ++c) {
      line += r[c];
      if (c + 1 < columns) line += std::string(width[c] - r[c].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + '\n';
  }
  return out;
}

nlohmann::json device_table_json(const DeviceBank& bank) {
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t i = 0; i < bank.size(); ++i) {
    const DeviceSpec& s = bank.spec(i);
    const KindInfo& info = kind_info(s.kind);
    nlohmann::json j = {
        {"index", i},
        {"name", bank.full_name(i)},
        {"kind", info.name},
        {"kind_id", static_cast<int>(s.kind)},
        {"direction", info.actuator ? "actuator" : "sensor"},
        {"payload_size", bank.payload_size(i)},
        {"rate_hz", s.rate_hz},
        {"units", info.units},
        {"body", s.body},
        {"mount",
         {{"position_m", {s.mount.position_m.x(), s.mount.position_m.y(), s.mount.position_m.z()}},
          {"orientation_rpy_deg", rpy_deg(s.mount.orientation)}}},
        {"params", params_json(s)},
        {"noise", noise_json(s.noise)},
    };
    if (info.noise_b_key) j[info.noise_b_key] = noise_json(s.noise_b);
    rows.push_back(std::move(j));
  }
  return rows;
}

}  // namespace tether::hal
