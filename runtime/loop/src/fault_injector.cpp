// SPDX-License-Identifier: Apache-2.0
#include "tether/loop/fault_injector.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <nlohmann/json.hpp>

// every switch over a fault kind lists each one, no `default:`: a kind added without its case
// does not build
#pragma GCC diagnostic error "-Wswitch"

namespace tether::runtime {

namespace {

constexpr std::uint64_t fault_salt = 0x6661756c74730000ull;  // "faults"

// a uniform number in [0, 1) that depends only on the seed, the fault and the step
double uniform(std::uint64_t seed, std::size_t fault, std::uint64_t step) {
  const std::uint64_t h = hal::mix64(hal::mix64(seed ^ fault_salt) ^ hal::mix64(fault + 1) ^ step);
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
bool get_u64(std::string_view& in, std::uint64_t& v) {
  if (in.size() < 8) return false;
  v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  in.remove_prefix(8);
  return true;
}
void put_f64(std::string& out, double d) {
  std::uint64_t v;
  std::memcpy(&v, &d, 8);
  put_u64(out, v);
}
bool get_f64(std::string_view& in, double& d) {
  std::uint64_t v;
  if (!get_u64(in, v)) return false;
  std::memcpy(&d, &v, 8);
  return true;
}

}  // namespace

void LinkShaper::corrupt(std::string& bytes) {
  const std::uint64_t nbits = 8 * static_cast<std::uint64_t>(bytes.size());
  for (std::uint32_t b = 0; b < plan_.corrupt_bits; ++b) {
    const std::uint64_t bit = hal::mix64(hal::mix64(seed_ ^ step_) ^ ++flips_) % nbits;
    bytes[bit / 8] = static_cast<char>(static_cast<unsigned char>(bytes[bit / 8]) ^ (1u << (bit % 8)));
  }
}

nlohmann::json link_fault_summary(const LinkShaper& out, const LinkShaper& in) {
  const auto one = [](const LinkShaper::Counters& c) {
    return nlohmann::json{{"dropped", c.dropped},
                          {"corrupted", c.corrupted},
                          {"delayed", c.delayed},
                          {"duplicated", c.duplicated},
                          {"reordered", c.reordered}};
  };
  const auto total = [](const LinkShaper::Counters& c) {
    return c.dropped + c.corrupted + c.delayed + c.duplicated + c.reordered;
  };
  if (total(out.counters) + total(in.counters) == 0) return nullptr;
  return {{"out", one(out.counters)}, {"in", one(in.counters)}};
}

std::uint64_t fault_fire_step(const FaultConfig& f, std::uint64_t first_step, std::int64_t period_ns) {
  if (f.trigger == FaultTrigger::at_step) return f.at_step;
  if (f.trigger == FaultTrigger::at_time)
    return first_step + static_cast<std::uint64_t>(std::ceil(f.at_s * 1e9 / static_cast<double>(period_ns) - 1e-9));
  return 0;
}

FaultInjector::FaultInjector(const std::vector<FaultConfig>& faults, std::size_t endpoint_count, std::uint64_t seed,
                             std::uint64_t first_step, std::int64_t period_ns)
    : configs_(faults), state_(faults.size()), at_step_(faults.size(), 0), links_(endpoint_count),
      activations_(faults.size()), active_steps_(faults.size(), 0), activation_count_(faults.size(), 0), seed_(seed),
      first_step_(first_step), period_ns_(period_ns) {
  for (std::size_t i = 0; i < configs_.size(); ++i) {
    at_step_[i] = fault_fire_step(configs_[i], first_step_, period_ns_);
    if (configs_[i].trigger == FaultTrigger::condition) has_conditions_ = true;
  }
  for (std::size_t e = 0; e < links_.size(); ++e) links_[e].seed = hal::mix64(seed_ ^ fault_salt ^ (e + 1));
}

void FaultInjector::add(const FaultConfig& f) {
  configs_.push_back(f);
  state_.emplace_back();
  at_step_.push_back(fault_fire_step(f, first_step_, period_ns_));
  activations_.emplace_back();
  active_steps_.push_back(0);
  activation_count_.push_back(0);
}

void FaultInjector::keep_first(std::size_t n) {
  if (n >= configs_.size()) return;
  configs_.resize(n);
  state_.resize(n);
  at_step_.resize(n);
  activations_.resize(n);
  active_steps_.resize(n);
  activation_count_.resize(n);
}

bool FaultInjector::fires(std::size_t i, std::uint64_t step, bool condition) const {
  const FaultConfig& f = configs_[i];
  switch (f.trigger) {
    case FaultTrigger::at_time:
    case FaultTrigger::at_step: return step == at_step_[i];
    case FaultTrigger::probability: return f.probability > 0 && uniform(seed_, i, step) < f.probability;
    case FaultTrigger::condition: return condition;
  }
  return false;
}

void FaultInjector::begin_step(std::uint64_t step, const std::vector<bool>& condition_holds,
                               const hal::DeviceBank& devices, std::vector<FaultTransition>& transitions) {
  transitions.clear();
  for (std::size_t i = 0; i < configs_.size(); ++i) {
    State& s = state_[i];
    if (s.active && step >= s.until) {
      s.active = false;
      transitions.push_back({i, false});
      if (!activations_[i].empty()) activations_[i].back().end = step;
    }
    const bool cond = i < condition_holds.size() && condition_holds[i];
    if (!s.active && fires(i, step, cond)) {
      s.active = true;
      s.since = step;
      s.until = step + configs_[i].duration_steps;
      const int d = configs_[i].device;
      if (d >= 0 && static_cast<std::size_t>(d) < devices.size()) s.stuck = devices.sample(static_cast<std::size_t>(d));
      transitions.push_back({i, true});
      ++activation_count_[i];
      if (activations_[i].size() == 1000) activations_[i].pop_front();
      activations_[i].push_back({step, s.until});
    }
    if (s.active) ++active_steps_[i];
  }
  // the endpoints' plans
  for (LinkFaults& l : links_) {
    l.step = step;
    l.out = LinkFaultPlan{};
    l.in = LinkFaultPlan{};
  }
  for (std::size_t i = 0; i < configs_.size(); ++i) {
    const FaultConfig& f = configs_[i];
    if (!state_[i].active || f.endpoint < 0) continue;
    LinkFaults& l = links_[static_cast<std::size_t>(f.endpoint)];
    for (LinkFaultPlan* p : {&l.out, &l.in}) {
      const bool applies = (p == &l.out) ? (static_cast<int>(f.direction) & static_cast<int>(FaultDirection::out))
                                         : (static_cast<int>(f.direction) & static_cast<int>(FaultDirection::in));
      if (!applies) continue;
      switch (f.kind) {
        case FaultKind::drop:
        case FaultKind::disconnect: p->drop = true; break;
        case FaultKind::delay: p->delay_steps = std::max(p->delay_steps, f.steps); break;
        case FaultKind::duplicate: p->duplicate = true; break;
        case FaultKind::reorder: p->reorder = true; break;
        case FaultKind::corrupt: p->corrupt_bits += f.bits; break;
        // device faults: applied to the bank (apply_devices)
        case FaultKind::stuck:
        case FaultKind::bias:
        case FaultKind::drift:
        case FaultKind::noise:
        case FaultKind::dropout:
        case FaultKind::scale:
        case FaultKind::saturation: break;
      }
    }
  }
}

void FaultInjector::apply_devices(hal::DeviceBank& devices, std::uint64_t step) const {
  for (std::size_t i = 0; i < configs_.size(); ++i) {
    const FaultConfig& f = configs_[i];
    const State& st = state_[i];
    if (!st.active || f.device < 0 || static_cast<std::size_t>(f.device) >= devices.size()) continue;
    const auto d = static_cast<std::size_t>(f.device);
    // a slow sensor between samples holds what the fault made of its last one
    if (!devices.fresh(d) && f.kind != FaultKind::stuck) continue;
    hal::Sample s = devices.sample(d);
    const int channels = hal::kind_info(devices.spec(d).kind).channels;
    const int lo = f.channel >= 0 ? f.channel : 0, hi = f.channel >= 0 ? f.channel + 1 : channels;
    const double t_s = static_cast<double>(step - st.since) * static_cast<double>(period_ns_) * 1e-9;
    hal::Rng rng(hal::mix64(seed_ ^ fault_salt ^ hal::mix64(i + 1)) ^ step);
    switch (f.kind) {
      case FaultKind::dropout: s.valid = false; break;
      case FaultKind::stuck:
        // the reading it started on (no data if there was none)
        for (int c = lo; c < hi; ++c) s.ch[static_cast<std::size_t>(c)] = st.stuck.ch[static_cast<std::size_t>(c)];
        if (f.channel < 0) {
          s.flags = st.stuck.flags;
          s.valid = st.stuck.valid;
        }
        break;
      case FaultKind::bias:
      case FaultKind::drift:
      case FaultKind::noise:
      case FaultKind::scale:
      case FaultKind::saturation:
        if (!s.valid) break;  // nothing to bias when there is no data
        for (int c = lo; c < hi; ++c) {
          double& v = s.ch[static_cast<std::size_t>(c)];
          switch (f.kind) {
            case FaultKind::bias: v += f.value; break;
            case FaultKind::drift: v += f.rate * t_s; break;
            case FaultKind::noise: v += f.sigma * rng.gaussian(); break;
            case FaultKind::scale: v *= f.factor; break;
            case FaultKind::saturation: v = std::clamp(v, f.min, f.max); break;
            // handled above, or not a device fault
            case FaultKind::stuck:
            case FaultKind::dropout:
            case FaultKind::drop:
            case FaultKind::delay:
            case FaultKind::duplicate:
            case FaultKind::reorder:
            case FaultKind::corrupt:
            case FaultKind::disconnect: break;
          }
        }
        break;
      // link faults: planned for the endpoints' links in begin_step, not on the bank
      case FaultKind::drop:
      case FaultKind::delay:
      case FaultKind::duplicate:
      case FaultKind::reorder:
      case FaultKind::corrupt:
      case FaultKind::disconnect: break;
    }
    devices.override_output(d, s);
  }
}

void FaultInjector::finish(std::uint64_t end_step) {
  for (std::size_t i = 0; i < configs_.size(); ++i)
    if (state_[i].active && !activations_[i].empty()) activations_[i].back().end = std::min(end_step, state_[i].until);
}

void FaultInjector::snapshot(std::string& out) const {
  put_u64(out, configs_.size());
  for (const State& s : state_) {
    put_u64(out, s.active ? 1 : 0);
    put_u64(out, s.since);
    put_u64(out, s.until);
    for (double c : s.stuck.ch) put_f64(out, c);
    put_u64(out, (static_cast<std::uint64_t>(s.stuck.flags) << 8) | (s.stuck.valid ? 1u : 0u));
    put_u64(out, static_cast<std::uint64_t>(s.stuck.time_ns));
  }
}

bool FaultInjector::restore(std::string_view in, std::string* error) {
  auto fail = [&](const char* why) {
    if (error) *error = std::string("faults in the keyframe: ") + why;
    return false;
  };
  if (in.empty()) {  // a keyframe written before faults existed: none active
    for (State& s : state_) s = State{};
    return true;
  }
  std::uint64_t n = 0;
  if (!get_u64(in, n)) return fail("truncated");
  if (n != configs_.size()) return fail("a different number of faults than the scenario's");
  std::vector<State> states(configs_.size());
  for (State& s : states) {
    std::uint64_t active, flags, t;
    if (!get_u64(in, active) || !get_u64(in, s.since) || !get_u64(in, s.until)) return fail("truncated");
    for (double& c : s.stuck.ch)
      if (!get_f64(in, c)) return fail("truncated");
    if (!get_u64(in, flags) || !get_u64(in, t)) return fail("truncated");
    s.active = active != 0;
    s.stuck.valid = (flags & 1u) != 0;
    s.stuck.flags = static_cast<std::uint8_t>(flags >> 8);
    s.stuck.time_ns = static_cast<std::int64_t>(t);
  }
  if (!in.empty()) return fail("trailing bytes");
  state_ = std::move(states);
  return true;
}

nlohmann::json FaultInjector::summary(const std::vector<std::string>& endpoint_names,
                                      const std::vector<std::string>& device_names) const {
  nlohmann::json out = nlohmann::json::array();
  const double period_s = static_cast<double>(period_ns_) * 1e-9;
  for (std::size_t i = 0; i < configs_.size(); ++i) {
    const FaultConfig& f = configs_[i];
    nlohmann::json j{{"name", f.name}, {"kind", to_string(f.kind)}};
    if (f.endpoint >= 0) {
      j["endpoint"] = endpoint_names[static_cast<std::size_t>(f.endpoint)];
      j["direction"] = to_string(f.direction);
    } else {
      j["device"] = device_names[static_cast<std::size_t>(f.device)];
    }
    nlohmann::json acts = nlohmann::json::array();
    for (const Activation& a : activations_[i])
      acts.push_back({{"start_step", a.start},
                      {"end_step", a.end},
                      {"start_s", static_cast<double>(a.start - first_step_) * period_s},
                      {"end_s", static_cast<double>(a.end - first_step_) * period_s}});
    j["activations"] = std::move(acts);
    j["activation_count"] = activation_count_[i];
    j["active_steps"] = active_steps_[i];
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace tether::runtime
