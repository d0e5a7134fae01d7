// SPDX-License-Identifier: Apache-2.0
#include "tether/hal/actuators.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "tether/hal/sensors.hpp"

namespace tether::hal {

namespace {

constexpr double deg = std::numbers::pi / 180.0;
constexpr double max_substep_s = 1e-3;

// sub-steps of at most 1 ms, and short enough for RK4 on a rate of `stiffness` (1/s)
int substeps(double dt_s, double stiffness) {
  const double n = std::max(std::ceil(dt_s / max_substep_s - 1e-9), std::ceil(dt_s * stiffness - 1e-9));
  return static_cast<int>(std::clamp(n, 1.0, 1e6));
}

double finite_or_zero(double v) { return std::isfinite(v) ? v : 0.0; }

}  // namespace

double thruster_command(const ThrusterParams& p, double u) {
  u = std::clamp(finite_or_zero(u), -1.0, 1.0);
  return std::abs(u) < p.dead_band ? 0.0 : u;
}

double thruster_thrust(const ThrusterParams& p, double speed) {
  const double t = p.ct * speed * std::abs(speed);
  return speed < 0 ? t * p.reverse_ratio : t;
}

double thruster_steady_speed(const ThrusterParams& p, double u) {
  if (p.model == RotorModel::first_order) return u * p.max_speed_rad_s;
  const double s = std::sqrt(p.beta * std::abs(u) / p.alpha);
  return u < 0 ? -s : s;
}

RotorStep thruster_advance(const ThrusterParams& p, double speed, double u, double dt_s) {
  RotorStep out{speed, thruster_thrust(p, speed)};
  if (!(dt_s > 0)) return out;
  const bool yoerger = p.model == RotorModel::yoerger;
  // Yoerger's small-signal rate at the top speed is 2 alpha Omega_max
  const double stiffness = yoerger ? 2.0 * std::sqrt(p.alpha * p.beta) : 0.0;
  const int n = substeps(dt_s, stiffness);
  const double h = dt_s / n;
  const double target = u * p.max_speed_rad_s;
  const double decay = yoerger ? 0.0 : std::exp(-h / p.time_constant_s);
  auto rate = [&](double w) { return p.beta * u - p.alpha * w * std::abs(w); };
  double w = speed;
  double thrust_prev = out.mean_thrust_n;
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    if (yoerger) {
      const double k1 = rate(w);
      const double k2 = rate(w + 0.5 * h * k1);
      const double k3 = rate(w + 0.5 * h * k2);
      const double k4 = rate(w + h * k3);
      w += h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
    } else {
      w = target + (w - target) * decay;  // exact solution of the first-order lag
    }
    const double thrust = thruster_thrust(p, w);
    sum += 0.5 * (thrust_prev + thrust);
    thrust_prev = thrust;
  }
  out.speed_rad_s = w;
  out.mean_thrust_n = sum / n;
  return out;
}

double dc_motor_torque(const DcMotorParams& p, double volts, double speed) {
  const double v = std::clamp(finite_or_zero(volts), -p.supply_v, p.supply_v);
  return p.kt_nm_per_a * (v - p.ke_v_s_per_rad * speed) / p.resistance_ohm;
}

double dc_motor_advance(const DcMotorParams& p, double speed, double volts, double dt_s, double& mean_torque_nm,
                        double& mean_thrust_n) {
  auto shaft = [&](double w) { return dc_motor_torque(p, volts, w) - p.damping_nm_s_per_rad * w; };
  auto rate = [&](double w) { return (shaft(w) - p.cq * w * std::abs(w)) / p.inertia_kg_m2; };
  auto thrust = [&](double w) { return p.ct * w * std::abs(w); };
  mean_torque_nm = shaft(speed);
  mean_thrust_n = thrust(speed);
  if (!(dt_s > 0)) return speed;
  const double stiffness =
      (p.kt_nm_per_a * p.ke_v_s_per_rad / p.resistance_ohm + p.damping_nm_s_per_rad) / p.inertia_kg_m2;
  const int n = substeps(dt_s, stiffness);
  const double h = dt_s / n;
  double w = speed, torque_sum = 0, thrust_sum = 0;
  for (int i = 0; i < n; ++i) {
    const double w0 = w;
    const double k1 = rate(w);
    const double k2 = rate(w + 0.5 * h * k1);
    const double k3 = rate(w + 0.5 * h * k2);
    const double k4 = rate(w + h * k3);
    w += h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
    torque_sum += 0.5 * (shaft(w0) + shaft(w));
    thrust_sum += 0.5 * (thrust(w0) + thrust(w));
  }
  mean_torque_nm = torque_sum / n;
  mean_thrust_n = thrust_sum / n;
  return w;
}

Vec3 fin_force(const FinParams& p, double angle, const Vec3& v, double density) {
  const double u2 = v.x() * v.x() + v.y() * v.y();
  if (!(u2 > 1e-18)) return Vec3::Zero();
  const double speed = std::sqrt(u2);
  const Vec3 dir(v.x() / speed, v.y() / speed, 0.0);  // direction of travel through the fluid
  // angle of attack: chord against the direction of travel, folded into [-90°, 90°] (a fin
  // moving backwards works as a plate too)
  double a = angle - std::atan2(v.y(), v.x());
  a = std::remainder(a, 2.0 * std::numbers::pi);
  if (a > std::numbers::pi / 2) a -= std::numbers::pi;
  if (a < -std::numbers::pi / 2) a += std::numbers::pi;
  const double stall = p.stall_angle_deg * deg;
  const double cl = p.cl_alpha_per_rad * std::clamp(a, -stall, stall);
  const double s = std::sin(a);
  const double cd = p.cd0 + p.cd_alpha * s * s;
  const double qs = 0.5 * density * u2 * p.area_m2;
  const Vec3 lift_dir(-dir.y(), dir.x(), 0.0);  // z x dir
  return qs * (cl * lift_dir - cd * dir);
}

double rate_limited(double angle, double target, double rate, double dt_s) {
  if (!(rate > 0)) return target;
  const double step = rate * std::max(dt_s, 0.0);
  return angle + std::clamp(target - angle, -step, step);
}

void actuate_device(const DeviceSpec& spec, const double* u, ActuatorState& state, const WorldView& view, double dt_s,
                    Wrench& out) {
  if (spec.body < 0 || static_cast<std::size_t>(spec.body) >= view.bodies.size()) return;
  const BodyKinematics& b = view.bodies[static_cast<std::size_t>(spec.body)];
  const DevicePose pose = device_pose(spec.mount, b);
  const Mat3 rm = spec.mount.orientation.toRotationMatrix();
  const Vec3 axis = rm.col(0);
  const bool above_water = view.water.present && pose.position_m.z() > view.water.surface_z_m;

  switch (spec.kind) {
    case TETHER_KIND_THRUSTER: {
      const ThrusterParams p = resolve_thruster(std::get<ThrusterParams>(spec.params));
      const RotorStep r = thruster_advance(p, state.x[0], thruster_command(p, u[0]), dt_s);
      state.x[0] = r.speed_rad_s;
      // a propeller out of the water spins but pushes (almost) nothing
      const double thrust = above_water ? 0.0 : r.mean_thrust_n;
      out.add_force_at(thrust * axis, spec.mount.position_m);
      out.torque_body_nm -= p.reaction_torque_nm_per_n * thrust * axis;
      break;
    }
    case TETHER_KIND_DC_MOTOR: {
      const auto& p = std::get<DcMotorParams>(spec.params);
      if (p.driven_body >= 0 && static_cast<std::size_t>(p.driven_body) < view.bodies.size()) {
        // the shaft turns another body: its speed is the relative turning about the shaft;
        // x[1] keeps the torque for DeviceBank to put on the driven body
        const Vec3 shaft = b.orientation * axis;
        const double speed =
            (view.bodies[static_cast<std::size_t>(p.driven_body)].angular_velocity_rad_s - b.angular_velocity_rad_s)
                .dot(shaft);
        const double torque = dc_motor_torque(p, finite_or_zero(u[0]), speed);
        state.x[0] = speed;
        state.x[1] = torque;
        out.torque_body_nm -= torque * axis;  // the stator's reaction
        break;
      }
      double torque = 0, thrust = 0;
      state.x[0] = dc_motor_advance(p, state.x[0], u[0], dt_s, torque, thrust);
      out.torque_body_nm -= torque * axis;  // the stator's reaction
      if (p.ct > 0 && !above_water) out.add_force_at(thrust * axis, spec.mount.position_m);
      break;
    }
    case TETHER_KIND_FIN: {
      const auto& p = std::get<FinParams>(spec.params);
      const double max = p.max_angle_deg * deg;
      state.x[0] = rate_limited(state.x[0], std::clamp(finite_or_zero(u[0]), -max, max), p.rate_deg_s * deg, dt_s);
      const bool wet = view.water.present && !above_water;
      const Vec3 current = wet ? view.water.current_m_s : Vec3::Zero();
      const Vec3 v = b.linear_velocity_m_s + b.angular_velocity_rad_s.cross(pose.lever_m) - current;
      const Vec3 f =
          fin_force(p, state.x[0], pose.rotation.transpose() * v, wet ? view.water.density_kg_m3 : p.air_density_kg_m3);
      out.add_force_at(rm * f, spec.mount.position_m);
      break;
    }
    case TETHER_KIND_SERVO: {
      const auto& p = std::get<ServoParams>(spec.params);
      const double target = std::clamp(finite_or_zero(u[0]), p.min_angle_deg * deg, p.max_angle_deg * deg);
      state.x[0] = rate_limited(state.x[0], target, p.max_rate_deg_s * deg, dt_s);
      break;
    }
    case TETHER_KIND_WHEEL_DRIVE: {
      const auto& p = std::get<WheelDriveParams>(spec.params);
      const Mat3 rb = b.orientation.toRotationMatrix();
      const double decay = dt_s > 0 ? std::exp(-dt_s / p.time_constant_s) : 1.0;
      // the static share of the weight on each wheel; slip force saturates at friction * load
      const double load = 0.5 * b.mass_kg * view.gravity_m_s2.norm();
      const double limit = p.friction * load;
      const double stiffness = limit / p.slip_speed_m_s;
      for (int i = 0; i < 2; ++i) {
        const double target = std::clamp(finite_or_zero(u[i]), -1.0, 1.0) * p.max_wheel_speed_rad_s;
        double& w = state.x[static_cast<std::size_t>(i)];
        w = target + (w - target) * decay;
        const Vec3 hub = spec.mount.position_m + rm * Vec3(0, i == 0 ? 0.5 * p.track_m : -0.5 * p.track_m, 0);
        const Vec3 down_body = -rm.col(2);
        const double reach = p.wheel_radius_m + 0.01;
        const RayHit hit = view.ray_cast(b.position_m + rb * hub, rb * down_body, reach, spec.body);
        if (!hit.hit || hit.distance_m > reach) continue;
        const Vec3 contact = hub + down_body * hit.distance_m;
        const Vec3 vc = b.linear_velocity_m_s + b.angular_velocity_rad_s.cross(rb * contact);
        const Vec3 vm = rm.transpose() * (rb.transpose() * vc);
        double fx = stiffness * (w * p.wheel_radius_m - vm.x());
        double fy = -stiffness * vm.y();
        const double mag = std::hypot(fx, fy);
        if (mag > limit) {
          fx *= limit / mag;
          fy *= limit / mag;
        }
        out.add_force_at(rm * Vec3(fx, fy, 0), contact);
      }
      break;
    }
    // not an actuator: no wrench
    case TETHER_KIND_NONE:
    case TETHER_KIND_RANGE:
    case TETHER_KIND_SONAR:
    case TETHER_KIND_ALTIMETER:
    case TETHER_KIND_DEPTH:
    case TETHER_KIND_GYRO:
    case TETHER_KIND_ACCEL:
    case TETHER_KIND_IMU:
    case TETHER_KIND_INCLINOMETER:
    case TETHER_KIND_COMPASS:
    case TETHER_KIND_DVL:
    case TETHER_KIND_GPS:
    case TETHER_KIND_CONTACT:
    case TETHER_KIND_CLOCK:
    case TETHER_KIND_TENSION:
    case TETHER_KIND_ENCODER: break;
  }
}

void dc_motor_react(const DeviceSpec& spec, const double* x, const WorldView& view, Wrench* per_body,
                    std::size_t bodies) {
  const int driven = std::get<DcMotorParams>(spec.params).driven_body;
  if (driven >= 0 && static_cast<std::size_t>(driven) < bodies && static_cast<std::size_t>(driven) < view.bodies.size() &&
      static_cast<std::size_t>(spec.body) < view.bodies.size()) {
    const Vec3 shaft_world =
        view.bodies[static_cast<std::size_t>(spec.body)].orientation * (spec.mount.orientation * Vec3::UnitX());
    const Vec3 torque_world = x[1] * shaft_world;
    per_body[static_cast<std::size_t>(driven)].torque_body_nm +=
        view.bodies[static_cast<std::size_t>(driven)].orientation.conjugate() * torque_world;
  }
}

}  // namespace tether::hal
