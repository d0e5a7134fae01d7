// SPDX-License-Identifier: Apache-2.0
#include "trial_capture.hpp"

#include <algorithm>

#include "tether/hal/actuators.hpp"
#include "tether/hal/device_bank.hpp"

namespace tether::identify {

void TrialCapture::attach(Trial* trial, std::uint64_t first, const hal::DeviceBank* bank) {
  trial_ = trial;
  first_ = first;
  bank_ = bank;
  thrusters_.clear();
  speed_end_.clear();
  if (!trial || !bank) return;
  trial->thrusters = runtime::body_thrusters(*bank, trial->body);
  for (const TrialThruster& th : trial->thrusters) {
    thrusters_.push_back(th.device);
    speed_end_.push_back(bank->actuator_state(th.device).x[0]);
  }
}

void TrialCapture::capture(const runtime::FeedbackContext& ctx, const runtime::WorldState& state,
                           const runtime::BodyWrench* input) {
  if (!trial_ || ctx.step < first_) return;
  const auto t = static_cast<std::size_t>(ctx.step - first_);
  auto& s = trial_->samples;
  if (s.size() < t + 2) s.resize(t + 2);
  while (trial_->twin.size() < t + 1) {
    if (spare_.empty()) {
      trial_->twin.emplace_back();
    } else {
      trial_->twin.push_back(std::move(spare_.back()));
      spare_.pop_back();
    }
  }
  trial_->twin[t].assign(state.bodies.begin(), state.bodies.end());
  const auto body = static_cast<std::size_t>(trial_->body);
  if (input) {
    s[t].input = *input;
    s[t].has_input = true;
  }
  // this step's reply measures S_{t+1}
  for (const runtime::Measurement& m : ctx.measurements)
    if (m.body == body && m.has_pose) {
      TrialSample& n = s[t + 1];
      n.measured = true;
      n.position = m.position_m;
      n.orientation = m.orientation;
      n.has_velocity = m.has_velocity;
      n.velocity = m.velocity_m_s;
      n.angular_velocity = m.angular_velocity_rad_s;
    }
  // the thrusters' commands as held this step (the bank has actuated them already) and
  // their rotors' speeds at the step's start (the end of the step before)
  const std::size_t n = thrusters_.size();
  if (n == 0 || !bank_) return;
  auto& cmd = trial_->thruster_command;
  auto& speed = trial_->thruster_speed;
  if (cmd.size() < (t + 1) * n) cmd.resize((t + 1) * n, 0.0), speed.resize((t + 1) * n, 0.0);
  for (std::size_t k = 0; k < n; ++k) {
    const hal::Sample& held = bank_->sample(thrusters_[k]);
    cmd[t * n + k] = held.valid ? held.ch[0] : 0.0;
    speed[t * n + k] = speed_end_[k];
    speed_end_[k] = bank_->actuator_state(thrusters_[k]).x[0];
  }
}

void TrialCapture::drop_front(std::size_t n) {
  if (!trial_ || n == 0) return;
  const auto drop = [n](auto& v, std::size_t per) {
    const std::size_t k = std::min(v.size(), n * per);
    v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k));
  };
  drop(trial_->samples, 1);
  const std::size_t twins = std::min(trial_->twin.size(), n);
  spare_.reserve(spare_.size() + twins);  // once: later drops find the room
  for (std::size_t i = 0; i < twins; ++i) spare_.push_back(std::move(trial_->twin[i]));
  drop(trial_->twin, 1);
  drop(trial_->thruster_command, thrusters_.size());
  drop(trial_->thruster_speed, thrusters_.size());
  first_ += n;
}

void finish_capture(Trial& out) {
  if (!out.samples.empty() && out.samples.size() > out.twin.size()) out.samples.resize(out.twin.size() + 1);
  const std::size_t nth = out.thrusters.size();
  if (nth) {
    const std::size_t steps = std::min(out.thruster_command.size() / nth, out.twin.size());
    out.thruster_command.resize(steps * nth);
    out.thruster_speed.resize(steps * nth);
    out.thruster_thrust.assign(steps * nth, 0.0);
    for (std::size_t t = 0; t < steps; ++t)
      for (std::size_t k = 0; k < nth; ++k) {
        const hal::ThrusterParams& p = out.thrusters[k].params;
        out.thruster_thrust[t * nth + k] =
            hal::thruster_advance(p, out.thruster_speed[t * nth + k],
                                  hal::thruster_command(p, out.thruster_command[t * nth + k]), out.dt_s)
                .mean_thrust_n;
      }
  }
  out.measured = 0;
  for (const TrialSample& s : out.samples) out.measured += s.measured ? 1 : 0;
}

}  // namespace tether::identify
