// SPDX-License-Identifier: Apache-2.0
#include "tether/feedback/vehicle_parameters.hpp"

#include <algorithm>
#include <cmath>
#include <variant>

#include "tether/hal/device_bank.hpp"

namespace tether::runtime {

VehicleParameterBase vehicle_parameter_base(const WorldModel& model, int body) {
  const BodyModel& b = model.bodies[static_cast<std::size_t>(body)];
  VehicleParameterBase base;
  base.body = body;
  base.volume0_m3 = b.volume_m3;
  base.mass0_kg = b.mass_kg;
  base.inertia0 = b.inertia_body;
  base.inv_inertia0 = b.inv_inertia_body;
  base.angular_linear0 = b.damping.angular_linear;
  base.angular_quadratic0 = b.damping.angular_quadratic;
  base.gravity_m_s2 = model.gravity_m_s2.norm();
  base.buoyancy_per_m3 = std::max(model.water.density_kg_m3 * base.gravity_m_s2, 1e-9);
  return base;
}

double net_buoyancy_n(const VehicleParameterBase& base) {
  return base.buoyancy_per_m3 * base.volume0_m3 - base.mass0_kg * base.gravity_m_s2;
}

const char* manoeuvre_advice(int i) {
  if (i == vp::thrust || i == vp::added_mass)
    return "thrust and added mass scale the acceleration alike, so no manoeuvre separates them from motion "
           "alone: a bollard pull (thrust on a load cell) fixes the gain, a trial with a known mass added fixes "
           "the added mass";
  if (i == vp::linear_drag || i == vp::quadratic_drag)
    return "coast-downs along x (thrusters off at speed) from several speeds, both directions";
  if (i == vp::linear_drag + 1 || i == vp::quadratic_drag + 1)
    return "sideways motion: turns at several speeds (sway), or lateral steps where the vehicle has lateral thrust";
  if (i == vp::linear_drag + 2 || i == vp::quadratic_drag + 2)
    return "depth changes at several vertical speeds, up and down";
  if (i == vp::buoyancy) return "holding depth and drifting with the vertical thrusters off (trim)";
  if (i == vp::current_x || i == vp::current_y) return "the same runs in opposite directions along each axis";
  if (i == vp::thruster_lag) return "fast thrust steps (off to full and back)";
  if (i == vp::angular_drag) return "turns at several rates, both ways, and coasting out of them (yaw)";
  return "";
}

std::array<double, vp::count> nominal_vehicle_parameters(const WorldModel& model, int body) {
  const BodyModel& b = model.bodies[static_cast<std::size_t>(body)];
  std::array<double, vp::count> th{};
  th[vp::thrust] = 1;
  for (int i = 0; i < 3; ++i) {
    th[static_cast<std::size_t>(vp::linear_drag + i)] = b.damping.linear[i];
    th[static_cast<std::size_t>(vp::quadratic_drag + i)] = b.damping.quadratic[i];
  }
  th[vp::current_x] = model.water.current_m_s.x();
  th[vp::current_y] = model.water.current_m_s.y();
  th[vp::angular_drag] = 1;
  return th;
}

VehicleParameterPrior vehicle_parameter_prior(const std::array<double, vp::count>& th,
                                              const VehicleParameterRanges& r) {
  VehicleParameterPrior p;
  p.lo[vp::thrust] = std::min(r.thrust_a, r.thrust_b);
  p.hi[vp::thrust] = std::max(r.thrust_a, r.thrust_b);
  for (std::size_t i = 1; i < 7; ++i) {
    p.lo[i] = 0;
    p.hi[i] = std::max(r.drag_factor * th[i], th[i] + (i < 4 ? 20.0 : 50.0));
  }
  p.lo[vp::buoyancy] = -r.max_buoyancy_n, p.hi[vp::buoyancy] = r.max_buoyancy_n;
  p.lo[vp::current_x] = p.lo[vp::current_y] = -r.max_current_m_s;
  p.hi[vp::current_x] = p.hi[vp::current_y] = r.max_current_m_s;
  p.lo[vp::thruster_lag] = 0, p.hi[vp::thruster_lag] = r.max_thruster_lag_s;
  p.lo[vp::added_mass] = 0, p.hi[vp::added_mass] = 0;  // considered, never moved
  p.lo[vp::angular_drag] = 1 / r.drag_factor, p.hi[vp::angular_drag] = r.drag_factor;
  for (std::size_t i = 0; i < vp::count; ++i) {
    const int k = static_cast<int>(i);
    // the considered added mass has its own prior, not scaled by initial_stddev
    p.sd[i] = k == vp::added_mass ? r.added_mass_stddev
                                  : r.stddev_scale * (k == vp::thrust         ? 0.3
                                                      : k < vp::buoyancy      ? std::max(0.5 * th[i], 5.0)
                                                      : k == vp::buoyancy     ? 0.1 * r.max_buoyancy_n
                                                      : k == vp::thruster_lag ? 0.3 * r.max_thruster_lag_s
                                                      : k == vp::angular_drag ? 0.5
                                                                              : 0.2);
  }
  return p;
}

void apply_vehicle_parameters(const VehicleParameterBase& base, const double* th, bool with_added_mass,
                              WorldModel& model) {
  BodyModel& b = model.bodies[static_cast<std::size_t>(base.body)];
  for (int i = 0; i < 3; ++i) {
    b.damping.linear[i] = th[vp::linear_drag + i];
    b.damping.quadratic[i] = th[vp::quadratic_drag + i];
  }
  // added mass: heavier to accelerate, matched by as much more displaced water, since it
  // weighs nothing in water
  double added_weight = 0;
  if (with_added_mass) {
    const double f = 1 + th[vp::added_mass];
    b.mass_kg = base.mass0_kg * f;
    b.inv_mass = 1 / b.mass_kg;
    b.inertia_body = base.inertia0 * f;
    b.inv_inertia_body = base.inv_inertia0 / f;
    added_weight = th[vp::added_mass] * base.mass0_kg * base.gravity_m_s2;
  }
  b.volume_m3 = std::max(base.volume0_m3 + (th[vp::buoyancy] + added_weight) / base.buoyancy_per_m3, 0.0);
  model.water.current_m_s.x() = th[vp::current_x];
  model.water.current_m_s.y() = th[vp::current_y];
}

void apply_angular_drag(const VehicleParameterBase& base, double scale, WorldModel& model) {
  Damping& d = model.bodies[static_cast<std::size_t>(base.body)].damping;
  d.angular_linear.z() = base.angular_linear0.z() * scale;
  d.angular_quadratic.z() = base.angular_quadratic0.z() * scale;
}

void scale_wrench(BodyWrench& w, double c) {
  w.force_world_n *= c;
  w.torque_world_nm *= c;
  w.force_body_n *= c;
  w.torque_body_nm *= c;
}

BodyWrench lag_wrench_step(BodyWrench& y, const BodyWrench& in, double tau, double dt) {
  if (!(tau > 0) || !(dt > 0)) return y = in;
  const double decay = std::exp(-dt / tau);
  const double mean_share = tau / dt * (1 - decay);  // of (y - in) in the step's mean
  BodyWrench mean;
  const auto go = [&](Vec3& yv, const Vec3& u, Vec3& m) {
    m = u + (yv - u) * mean_share;
    yv = u + (yv - u) * decay;
  };
  go(y.force_world_n, in.force_world_n, mean.force_world_n);
  go(y.torque_world_nm, in.torque_world_nm, mean.torque_world_nm);
  go(y.force_body_n, in.force_body_n, mean.force_body_n);
  go(y.torque_body_nm, in.torque_body_nm, mean.torque_body_nm);
  return mean;
}

std::vector<BodyThruster> body_thrusters(const hal::DeviceBank& bank, int body) {
  std::vector<BodyThruster> out;
  for (std::size_t i = 0; i < bank.size(); ++i) {
    const hal::DeviceSpec& spec = bank.spec(i);
    if (spec.kind != TETHER_KIND_THRUSTER || spec.body != body) continue;
    BodyThruster th;
    th.device = i;
    th.name = bank.full_name(i);
    th.params = hal::resolve_thruster(std::get<hal::ThrusterParams>(spec.params));
    // as hal's actuate_device puts a thrust on the body
    const Vec3 axis = spec.mount.orientation.toRotationMatrix().col(0);
    th.unit.add_body_force_at(axis, spec.mount.position_m);
    th.unit.torque_body_nm -= th.params.reaction_torque_nm_per_n * axis;
    out.push_back(std::move(th));
  }
  return out;
}

hal::ThrusterParams slower_rotor(hal::ThrusterParams p, double dtau) {
  const double k = p.time_constant_s / (p.time_constant_s + dtau);
  p.time_constant_s += dtau;
  // Yoerger's rate at full speed is 1 / tau: alpha and beta scale together (the same top speed)
  p.alpha *= k;
  p.beta *= k;
  return p;
}

}  // namespace tether::runtime
