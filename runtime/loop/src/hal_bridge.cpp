// SPDX-License-Identifier: Apache-2.0
#include "tether/loop/hal_bridge.hpp"

#include "tether/physics/joints.hpp"
#include "tether/physics/raycast.hpp"

namespace tether::runtime {

hal::RayHit hal_ray_cast(const WorldModel& model, const WorldState& state, const Vec3& origin, const Vec3& direction,
                         double max_range_m, int ignore_body) {
  const RayHit h = raycast(model, state, origin, direction, max_range_m, ignore_body);
  hal::RayHit out;
  out.hit = h.hit;
  out.distance_m = h.distance_m;
  out.normal = h.normal;
  out.body = h.body;
  out.static_index = h.static_index;
  return out;
}

void to_hal_contacts(const std::vector<ContactEvent>& events, double dt_s, std::vector<hal::Contact>& out) {
  out.clear();
  for (const ContactEvent& e : events) {
    hal::Contact c;
    c.body_a = e.body_a;
    c.body_b = e.body_b;
    c.point_m = e.point_m;
    c.normal = e.normal;
    c.force_n = dt_s > 0 ? e.impulse_n_s.norm() / dt_s : 0.0;
    out.push_back(c);
  }
}

void to_hal_joint_loads(const WorldModel& model, const std::vector<JointLoad>& loads, double dt_s,
                        std::vector<hal::JointLoad>& out) {
  out.clear();
  if (loads.size() != model.joints.size()) return;
  for (std::size_t k = 0; k < loads.size(); ++k) {
    hal::JointLoad l;
    l.body_a = model.joints[k].body_a;
    l.body_b = model.joints[k].body_b;
    l.force_n = dt_s > 0 ? Vec3(loads[k].impulse_n_s / dt_s) : Vec3::Zero();
    out.push_back(l);
  }
}

void to_hal_joint_motion(const WorldModel& model, const WorldState& state, std::vector<hal::JointMotion>& out) {
  out.clear();
  for (const JointModel& j : model.joints) out.push_back({joint_position(j, state), joint_rate(j, model, state)});
}

}  // namespace tether::runtime
