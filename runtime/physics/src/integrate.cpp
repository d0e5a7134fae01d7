// SPDX-License-Identifier: Apache-2.0
// Moving the bodies over a sub-step: RK4 over the full force model for free bodies, closed-form
// free flight under constant forces, symplectic Euler with the solver's velocities for bodies in
// contact or held by a joint (docs/physics.md, "State and forces").
#include <algorithm>

#include "stepper.hpp"

namespace tether::runtime::detail {

namespace {

// ---- free flight: RK4 over the full force model ------------------------------------------

// time derivative of one body's state; the quaternion as a 4-vector (w, x, y, z)
struct Derivative {
  Vec3 velocity;
  Eigen::Vector4d orientation_rate;
  Vec3 force;
  Vec3 torque;
};

Derivative evaluate(const WorldModel& model, const BodyModel& body, const BodyState& s, const BodyWrench& input) {
  Derivative d;
  d.velocity = s.linear_momentum * body.inv_mass;
  const Mat3 r = s.orientation.toRotationMatrix();
  const Vec3 w = r * (body.inv_inertia_body * (r.transpose() * s.angular_momentum));
  // dq/dt = 1/2 (0, w) q
  const Quat wq(0, w.x(), w.y(), w.z());
  const Quat qdot = wq * s.orientation;
  d.orientation_rate << 0.5 * qdot.w(), 0.5 * qdot.x(), 0.5 * qdot.y(), 0.5 * qdot.z();
  body_forces(model, body, s, r, input, d.force, d.torque);
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

// k1 from what the sub-step's frame already holds for the same state: the rotation matrix and
// the net force and torque (the same operations evaluate() would repeat, so the same bits)
Derivative first_derivative(const BodyModel& body, const BodyState& s, const Mat3& r, const Vec3& force,
                            const Vec3& torque) {
  Derivative d;
  d.velocity = s.linear_momentum * body.inv_mass;
  const Vec3 w = r * (body.inv_inertia_body * (r.transpose() * s.angular_momentum));
  const Quat wq(0, w.x(), w.y(), w.z());
  const Quat qdot = wq * s.orientation;
  d.orientation_rate << 0.5 * qdot.w(), 0.5 * qdot.x(), 0.5 * qdot.y(), 0.5 * qdot.z();
  d.force = force;
  d.torque = torque;
  return d;
}

void rk4(const WorldModel& model, const BodyModel& body, BodyState& s, const BodyWrench& input, double h,
         const Derivative& k1) {
  const Derivative k2 = evaluate(model, body, offset(s, k1, 0.5 * h), input);
  const Derivative k3 = evaluate(model, body, offset(s, k2, 0.5 * h), input);
  const Derivative k4 = evaluate(model, body, offset(s, k3, h), input);
  const double h6 = h / 6.0;
  s.position_m += h6 * (k1.velocity + 2.0 * k2.velocity + 2.0 * k3.velocity + k4.velocity);
  Eigen::Vector4d q(s.orientation.w(), s.orientation.x(), s.orientation.y(), s.orientation.z());
  q += h6 * (k1.orientation_rate + 2.0 * k2.orientation_rate + 2.0 * k3.orientation_rate + k4.orientation_rate);
  s.orientation = Quat(q[0], q[1], q[2], q[3]).normalized();
  s.linear_momentum += h6 * (k1.force + 2.0 * k2.force + 2.0 * k3.force + k4.force);
  s.angular_momentum += h6 * (k1.torque + 2.0 * k2.torque + 2.0 * k3.torque + k4.torque);
}

}  // namespace

void Stepper::integrate(double h) {
  const std::size_t n = n_;
  // bodies held by a joint move like bodies in contact: with the solver's velocities
  std::copy(s_.jointed.begin(), s_.jointed.end(), s_.in_contact.begin());
  std::fill(s_.corr_lin.begin(), s_.corr_lin.end(), Vec3::Zero());
  std::fill(s_.corr_ang.begin(), s_.corr_ang.end(), Vec3::Zero());
  for (const Contact& c : s_.contacts) {
    if (c.ln <= 0) continue;
    s_.in_contact[static_cast<std::size_t>(c.a)] = 1;
    if (static_cast<std::size_t>(c.b) < n) s_.in_contact[static_cast<std::size_t>(c.b)] = 1;
    if (c.toi > 0) {
      // the impulse acts at the time of impact: before it the bodies kept their old velocity
      const Vec3 p = c.n * c.ln + c.t1 * c.lt1 + c.n.cross(c.t1) * c.lt2;
      const SolverBody& a = s_.solver[static_cast<std::size_t>(c.a)];
      s_.corr_lin[static_cast<std::size_t>(c.a)] -= (c.toi * a.inv_m) * p;
      s_.corr_ang[static_cast<std::size_t>(c.a)] -= c.toi * mul(a.inv_i, c.ra.cross(p));
      if (static_cast<std::size_t>(c.b) < n) {
        const SolverBody& b = s_.solver[static_cast<std::size_t>(c.b)];
        s_.corr_lin[static_cast<std::size_t>(c.b)] += (c.toi * b.inv_m) * p;
        s_.corr_ang[static_cast<std::size_t>(c.b)] += c.toi * mul(b.inv_i, c.rb.cross(p));
      }
      if (report_) ++report_->impacts;
    }
  }
  parallel(n, [this, h](std::size_t begin, std::size_t end, int) { integrate_bodies(begin, end, h); });
}

void Stepper::integrate_bodies(std::size_t begin, std::size_t end, double h) {
  for (std::size_t i = begin; i < end; ++i) {
    const BodyModel& bm = model_.bodies[i];
    BodyState& st = state_.bodies[i];
    const BodyFrame& f = s_.frames[i];
    if (s_.in_contact[i]) {
      // symplectic Euler with the contact impulses: resting contact stays exactly at rest
      const SolverBody& sb = s_.solver[i];
      const Vec3 dx = h * sb.v + s_.corr_lin[i];
      const Vec3 dth = h * sb.w + s_.corr_ang[i];
      st.linear_momentum = bm.mass_kg * sb.v;
      st.angular_momentum = s_.isotropic[i] ? Vec3(sb.w / bm.inv_inertia_body(0, 0))
                                            : Vec3(f.r * (bm.inertia_body * (f.r.transpose() * sb.w)));
      st.position_m += dx;
      st.orientation = (rotation_quat(dth) * st.orientation).normalized();
      s_.disp_lin[i] = dx;
      s_.disp_ang[i] = dth;
    } else if (s_.const_force[i] && s_.isotropic[i]) {
      // closed form under constant force; constant-axis rotation when torque-free
      const Vec3 x0 = st.position_m;
      st.position_m += h * f.v + (0.5 * h * h * bm.inv_mass) * f.force;
      st.linear_momentum += h * f.force;
      const double c = bm.inv_inertia_body(0, 0);
      Vec3 dth;
      if (f.torque.isZero(0)) {
        dth = h * f.w;
      } else {
        // rotation vector of a linearly growing angular velocity (second order)
        dth = h * (f.w + 0.5 * h * c * f.torque);
      }
      st.angular_momentum += h * f.torque;
      st.orientation = (rotation_quat(dth) * st.orientation).normalized();
      s_.disp_lin[i] = st.position_m - x0;
      s_.disp_ang[i] = dth;
    } else {
      const Vec3 x0 = st.position_m;
      const Quat q0 = st.orientation;
      rk4(model_, bm, st, input(i), h, first_derivative(bm, st, f.r, f.force, f.torque));
      s_.disp_lin[i] = st.position_m - x0;
      s_.disp_ang[i] = rotation_vector(st.orientation * q0.conjugate());
    }
  }
}

}  // namespace tether::runtime::detail
