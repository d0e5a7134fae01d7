// SPDX-License-Identifier: Apache-2.0
#include "tether/runtime/physics.hpp"

#include <cmath>

namespace tether::runtime {

namespace {

// time derivative of one body's state; the quaternion as a 4-vector (w, x, y, z)
struct Derivative {
  Vec3 velocity;
  Eigen::Vector4d orientation_rate;
  Vec3 force;
  Vec3 torque;
};

Derivative evaluate(const WorldModel& model, const BodyModel& body, const BodyState& s,
                    const BodyWrench& input) {
  Derivative d;
  d.velocity = s.linear_momentum * body.inv_mass;
  const Mat3 r = s.orientation.toRotationMatrix();
  const Vec3 w = r * (body.inv_inertia_body * (r.transpose() * s.angular_momentum));
  // dq/dt = 1/2 (0, w) q
  const Quat wq(0, w.x(), w.y(), w.z());
  const Quat qdot = wq * s.orientation;
  d.orientation_rate << 0.5 * qdot.w(), 0.5 * qdot.x(), 0.5 * qdot.y(), 0.5 * qdot.z();
  body_forces(model, body, s, input, d.force, d.torque);
  return d;
}

BodyState offset(const BodyState& s, const Derivative& d, double h) {
  BodyState out;
  out.position_m = s.position_m + h * d.velocity;
  Eigen::Vector4d q(s.orientation.w(), s.orientation.x(), s.orientation.y(), s.orientation.z());
  q += h * d.orientation_rate;
  out.orientation = Quat(q[0], q[1], q[2], q[3]).normalized();
  out.linear_momentum = s.linear_momentum + h * d.force;
  out.angular_momentum = s.angular_momentum + h * d.torque;
  return out;
}

void rk4(const WorldModel& model, const BodyModel& body, BodyState& s, const BodyWrench& input,
         double h) {
  const Derivative k1 = evaluate(model, body, s, input);
  const Derivative k2 = evaluate(model, body, offset(s, k1, 0.5 * h), input);
  const Derivative k3 = evaluate(model, body, offset(s, k2, 0.5 * h), input);
  const Derivative k4 = evaluate(model, body, offset(s, k3, h), input);
  const double h6 = h / 6.0;
  s.position_m += h6 * (k1.velocity + 2.0 * k2.velocity + 2.0 * k3.velocity + k4.velocity);
  Eigen::Vector4d q(s.orientation.w(), s.orientation.x(), s.orientation.y(), s.orientation.z());
  q += h6 * (k1.orientation_rate + 2.0 * k2.orientation_rate + 2.0 * k3.orientation_rate +
             k4.orientation_rate);
  s.orientation = Quat(q[0], q[1], q[2], q[3]).normalized();
  s.linear_momentum += h6 * (k1.force + 2.0 * k2.force + 2.0 * k3.force + k4.force);
  s.angular_momentum += h6 * (k1.torque + 2.0 * k2.torque + 2.0 * k3.torque + k4.torque);
}

bool finite(const BodyState& b) {
  return b.position_m.allFinite() && b.orientation.coeffs().allFinite() &&
         b.linear_momentum.allFinite() && b.angular_momentum.allFinite();
}

}  // namespace

void body_forces(const WorldModel& model, const BodyModel& body, const BodyState& s,
                 const BodyWrench& input, Vec3& force, Vec3& torque) {
  const Mat3 r = s.orientation.toRotationMatrix();
  force = body.mass_kg * model.gravity_m_s2;
  torque.setZero();
  if (model.water.present) {
    const double f = submerged_fraction(body.shape, s.orientation, s.position_m.z(),
                                        model.water.surface_z_m);
    if (f > 0) {
      // buoyancy acts at the centre of buoyancy, opposite to gravity
      const Vec3 buoyancy = -model.water.density_kg_m3 * body.volume_m3 * f * model.gravity_m_s2;
      force += buoyancy;
      torque += (r * body.centre_of_buoyancy_m).cross(buoyancy);
      // damping acts on motion relative to the water, in the body frame, scaled by wetness
      const Vec3 v_b = r.transpose() * (s.linear_momentum * body.inv_mass - model.water.current_m_s);
      const Vec3 w_b = body.inv_inertia_body * (r.transpose() * s.angular_momentum);
      const Damping& d = body.damping;
      const Vec3 fd = -f * (d.linear.cwiseProduct(v_b) +
                            d.quadratic.cwiseProduct(v_b.cwiseAbs()).cwiseProduct(v_b));
      const Vec3 td = -f * (d.angular_linear.cwiseProduct(w_b) +
                            d.angular_quadratic.cwiseProduct(w_b.cwiseAbs()).cwiseProduct(w_b));
      force += r * fd;
      torque += r * td;
    }
  }
  force += input.force_world_n + r * input.force_body_n;
  torque += input.torque_world_nm + r * input.torque_body_nm;
}

StepStatus step(const WorldModel& model, WorldState& state, const StepInputs& inputs, double dt_s,
                StepReport* report) {
  const auto substeps = static_cast<std::uint32_t>(
      std::max(1.0, std::ceil(dt_s / model.max_substep_s - 1e-9)));
  const double h = dt_s / substeps;
  static const BodyWrench no_input{};
  for (std::size_t i = 0; i < state.bodies.size(); ++i) {
    const BodyWrench& input = i < inputs.wrenches.size() ? inputs.wrenches[i] : no_input;
    BodyState s = state.bodies[i];
    for (std::uint32_t k = 0; k < substeps; ++k) rk4(model, model.bodies[i], s, input, h);
    if (!finite(s)) return StepStatus::numerical_fault;
    state.bodies[i] = s;
  }
  // time advances by the loop period exactly, never by accumulated sub-steps
  state.time_ns += static_cast<std::int64_t>(std::llround(dt_s * 1e9));
  ++state.step;
  if (report) report->substeps = substeps;
  return StepStatus::ok;
}

}  // namespace tether::runtime
