// SPDX-License-Identifier: Apache-2.0
// The scenario's `faults:` at run time (docs/faults.md). FaultInjector decides, at the start
// of each step and from the scenario seed and the state S_k alone, which faults are active;
// device faults rewrite the sensor readings the step delivers, link faults are handed to
// the endpoint as a LinkFaults plan that its transport applies through a LinkShaper. The
// active set is part of keyframes, so a replay (also from a keyframe) injects the same
// device faults at the same steps; what link faults did is in the recorded replies. The
// keys are parsed in scenario/faults.hpp.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tether/hal/device_bank.hpp"
#include "tether/hal/noise.hpp"
#include "tether/scenario/faults.hpp"

namespace tether::runtime {

/// What one direction of a link does to its messages this step.
struct LinkFaultPlan {
  bool drop = false;               // nothing crosses
  std::uint32_t delay_steps = 0;   // messages arrive this many steps late
  bool duplicate = false;          // each message crosses twice
  bool reorder = false;            // messages are held and cross after the next step's first one
  std::uint32_t corrupt_bits = 0;  // bits flipped in each message
  bool any() const { return drop || delay_steps > 0 || duplicate || reorder || corrupt_bits > 0; }
};

/// An endpoint's link faults for one step, from the runtime's side: `out` is what the
/// runtime sends to the peer, `in` what it receives from the peer.
struct LinkFaults {
  std::uint64_t step = 0;
  std::uint64_t seed = 0;  // bit positions of corrupt are drawn from it and the step
  LinkFaultPlan out, in;
};

/// Applies one direction's plan to the messages (frames, chunks of bytes, MQTT payloads)
/// that cross it. Not thread-safe: the endpoint calls it under its own lock. Allocates only
/// while a fault holds messages back.
class LinkShaper {
 public:
  /// The step's plan; messages whose delay ran out are delivered first (through `deliver`).
  template <class Deliver>
  void begin_step(std::uint64_t step, std::uint64_t seed, const LinkFaultPlan& plan, Deliver&& deliver) {
    step_ = step;
    seed_ = seed;
    plan_ = plan;
    while (!delayed_.empty() && delayed_.front().due <= step_) {
      Held h = std::move(delayed_.front());
      delayed_.pop_front();
      deliver(std::string_view(h.bytes));
    }
  }
  /// A message crossing now: `deliver` is called for what arrives now (nothing, it twice, it
  /// corrupted, and any message held for reordering behind it).
  template <class Deliver>
  void pass(std::string_view msg, Deliver&& deliver) {
    if (!plan_.any() && held_.empty()) {
      deliver(msg);
      return;
    }
    if (plan_.drop) {
      ++counters.dropped;
      return;
    }
    std::string_view now = msg;
    if (plan_.corrupt_bits > 0 && !msg.empty()) {
      scratch_.assign(msg.begin(), msg.end());
      corrupt(scratch_);
      now = scratch_;
      ++counters.corrupted;
    }
    if (plan_.delay_steps > 0) {
      delayed_.push_back(Held{step_ + plan_.delay_steps, std::string(now)});
      ++counters.delayed;
      return;
    }
    if (plan_.reorder) {
      held_.push_back(Held{step_, std::string(now)});
      ++counters.reordered;
      return;
    }
    deliver(now);
    if (plan_.duplicate) {
      deliver(now);
      ++counters.duplicated;
    }
    // messages held for reordering cross behind the first message of a later step
    if (!held_.empty() && held_.front().due < step_) {
      for (const Held& h : held_) deliver(std::string_view(h.bytes));
      held_.clear();
    }
  }
  /// Messages still held (delayed or reordered) when the link closes are lost.
  std::size_t holding() const { return delayed_.size() + held_.size(); }

  struct Counters {
    std::uint64_t dropped = 0, corrupted = 0, delayed = 0, duplicated = 0, reordered = 0;
  } counters;

 private:
  struct Held {
    std::uint64_t due;  // delayed: the step it crosses; reordered: the step it was sent
    std::string bytes;
  };
  void corrupt(std::string& bytes);
  std::uint64_t step_ = 0, seed_ = 0, flips_ = 0;
  LinkFaultPlan plan_;
  std::deque<Held> delayed_;
  std::vector<Held> held_;
  std::string scratch_;
};

/// What a link's faults did, per direction ({"out": {dropped, corrupted, delayed,
/// duplicated, reordered}, "in": ...}), or null when they did nothing.
nlohmann::json link_fault_summary(const LinkShaper& out, const LinkShaper& in);

/// A fault becoming active or inactive at a step (for events and the log).
struct FaultTransition {
  std::size_t fault = 0;
  bool started = false;
};

/// The step an at_step or at_s fault fires at (0 for the other triggers): at_s is the first
/// step that starts at or after that time from `first_step`.
std::uint64_t fault_fire_step(const FaultConfig& fault, std::uint64_t first_step, std::int64_t period_ns);

class FaultInjector {
 public:
  FaultInjector(const std::vector<FaultConfig>& faults, std::size_t endpoint_count, std::uint64_t seed,
                std::uint64_t first_step, std::int64_t period_ns);

  const std::vector<FaultConfig>& faults() const { return configs_; }
  /// A fault injected while the session runs (`/tether/inject_fault`): it joins the list
  /// with the next index, so its seeded draws are the same in a replay that adds it at the
  /// same step. Its trigger is at_time, at_step or probability.
  void add(const FaultConfig& fault);
  /// Drops the faults after the first `n` (the injected ones, before a keyframe restore adds
  /// back those injected before it).
  void keep_first(std::size_t n);
  /// True if some fault has an `if:` condition (the loop evaluates them before the step).
  bool has_conditions() const { return has_conditions_; }
  /// Step `step` begins: ends the faults whose duration ran out, starts the triggered ones
  /// (`condition_holds[i]`: fault i's `if:` holds on S_k; ignored for other triggers).
  /// Fills `transitions` (cleared first) and each endpoint's LinkFaults. `devices`: the
  /// readings before the step's sample (a stuck fault keeps the one it started on).
  void begin_step(std::uint64_t step, const std::vector<bool>& condition_holds, const hal::DeviceBank& devices,
                  std::vector<FaultTransition>& transitions);
  /// After the step's sense(): the active device faults rewrite their devices' outputs.
  void apply_devices(hal::DeviceBank& devices, std::uint64_t step) const;
  /// Endpoint `e`'s link faults this step.
  const LinkFaults& link(std::size_t e) const { return links_[e]; }
  bool active(std::size_t fault) const { return state_[fault].active; }

  /// Keyframes: which faults are active since when, and what a stuck one holds.
  void snapshot(std::string& out) const;
  bool restore(std::string_view bytes, std::string* error);

  /// One object per fault: name, kind, target, trigger, activations (start/end step and
  /// time, the last 1000), active_steps.
  nlohmann::json summary(const std::vector<std::string>& endpoint_names,
                         const std::vector<std::string>& device_names) const;
  /// Closes the open activations at the end of the run (for the summary).
  void finish(std::uint64_t end_step);

 private:
  struct State {
    bool active = false;
    std::uint64_t since = 0;  // first step active
    std::uint64_t until = 0;  // first step no longer active
    hal::Sample stuck;        // the reading a stuck fault holds
  };
  struct Activation {
    std::uint64_t start, end;
  };
  bool fires(std::size_t i, std::uint64_t step, bool condition) const;
  std::vector<FaultConfig> configs_;
  std::vector<State> state_;
  std::vector<std::uint64_t> at_step_;  // at_s / at_step: the step it fires at
  std::vector<LinkFaults> links_;
  std::vector<std::deque<Activation>> activations_;
  std::vector<std::uint64_t> active_steps_, activation_count_;
  std::uint64_t seed_;
  std::uint64_t first_step_;
  std::int64_t period_ns_;
  bool has_conditions_ = false;
};

}  // namespace tether::runtime
