// SPDX-License-Identifier: Apache-2.0
#include "tether/serial/firmware_regression.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "tether/firmware_shim/payloads.h"
#include "tether/scenario/config.hpp"

namespace tether::adapters {

bool parse_firmware_spec(const std::string& text, FirmwareSpec& out, std::string* error) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    if (error)
      *error = "--firmware \"" + text +
               "\": expected ENDPOINT=LAUNCH, e.g. firmware=build/firmware/host/depth_heading_hold or "
               "firmware=qemu:build/firmware/cortex_m3/depth_heading_hold.elf";
    return false;
  }
  out.endpoint = text.substr(0, eq);
  out.launch = text.substr(eq + 1);
  return true;
}

namespace {

std::string absolute_path(const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  std::error_code ec;
  return std::filesystem::absolute(path, ec).lexically_normal().string();
}

}  // namespace

bool launch_from_spec(const std::string& launch, SerialLaunchConfig& out, std::string* error) {
  if (launch.rfind("qemu:", 0) == 0) {
    const std::string elf = launch.substr(5);
    if (elf.empty()) {
      if (error) *error = "--firmware: `qemu:` needs the firmware image, e.g. qemu:build/firmware/cortex_m3/fw.elf";
      return false;
    }
    out = qemu_launch_config(absolute_path(elf));
    return true;
  }
  SerialLaunchConfig l;
  std::istringstream words(launch);
  for (std::string w; words >> w;) l.command.push_back(std::move(w));
  if (l.command.empty()) {
    if (error) *error = "--firmware: the launch is empty (a program to run, or qemu:IMAGE.elf)";
    return false;
  }
  // a path with a slash is relative to where tether runs; a bare name is looked up in PATH
  if (l.command.front().find('/') != std::string::npos) l.command.front() = absolute_path(l.command.front());
  out = std::move(l);
  return true;
}

const char* to_string(RegressionMode mode) { return mode == RegressionMode::open_loop ? "open loop" : "closed loop"; }

double ChannelComparison::rms_diff() const {
  return compared ? std::sqrt(sum_sq_diff / static_cast<double>(compared)) : 0.0;
}

CommandComparison::CommandComparison(const std::vector<SerialDevice>& table, double tolerance) : tolerance_(tolerance) {
  for (const SerialDevice& d : table) {
    if (d.direction != TETHER_DIRECTION_ACTUATOR) continue;
    // every actuator payload is a row of little-endian f32 (payloads.h)
    const int floats = d.payload_size / 4;
    if (floats == 0) continue;
    if (first_channel_.size() <= d.index) first_channel_.resize(d.index + 1u, -1);
    first_channel_[d.index] = static_cast<int>(channels_.size());
    for (int c = 0; c < floats; ++c) {
      ChannelComparison ch;
      ch.name = floats == 1 ? d.name : d.name + "[" + std::to_string(c) + "]";
      ch.device = d.index;
      ch.component = static_cast<std::uint8_t>(c);
      channels_.push_back(std::move(ch));
    }
  }
  seen_recorded_.resize(channels_.size());
  seen_new_.resize(channels_.size());
  value_recorded_.resize(channels_.size());
  value_new_.resize(channels_.size());
}

void CommandComparison::compare(std::uint64_t step, const std::vector<runtime::DeviceCommand>& recorded,
                                const std::vector<runtime::DeviceCommand>& fresh) {
  std::fill(seen_recorded_.begin(), seen_recorded_.end(), 0);
  std::fill(seen_new_.begin(), seen_new_.end(), 0);
  auto take = [&](const std::vector<runtime::DeviceCommand>& commands, std::vector<std::uint8_t>& seen,
                  std::vector<double>& values) {
    for (const runtime::DeviceCommand& c : commands) {
      if (c.device >= first_channel_.size() || first_channel_[c.device] < 0) continue;
      const std::size_t first = static_cast<std::size_t>(first_channel_[c.device]);
      for (std::size_t i = first; i < channels_.size() && channels_[i].device == c.device; ++i) {
        const std::size_t at = 4u * channels_[i].component;
        if (at + 4u > c.size) break;
        seen[i] = 1;
        values[i] = static_cast<double>(tether_get_f32le(c.bytes.data() + at));
      }
    }
  };
  take(recorded, seen_recorded_, value_recorded_);
  take(fresh, seen_new_, value_new_);
  ++steps_compared_;
  for (std::size_t i = 0; i < channels_.size(); ++i) {
    ChannelComparison& ch = channels_[i];
    if (!seen_recorded_[i] && !seen_new_[i]) continue;
    bool diverges = false;
    if (seen_recorded_[i] != seen_new_[i]) {
      ++ch.missing;
      diverges = true;
    } else {
      ++ch.compared;
      const double r = value_recorded_[i], n = value_new_[i];
      const bool same_nan = std::isnan(r) && std::isnan(n);
      const double diff = same_nan ? 0.0 : n - r;
      if (std::isnan(diff)) {
        diverges = true;  // NaN on one side only
      } else {
        ch.sum_sq_diff += diff * diff;
        if (std::abs(diff) > ch.max_abs_diff) {
          ch.max_abs_diff = std::abs(diff);
          ch.max_abs_diff_step = step;
        }
        diverges = std::abs(diff) > tolerance_;
      }
      if (diverges) ++ch.beyond_tolerance;
    }
    if (diverges && !ch.first_divergent_step) {
      ch.first_divergent_step = step;
      ch.first_recorded = seen_recorded_[i] ? value_recorded_[i] : std::nan("");
      ch.first_new = seen_new_[i] ? value_new_[i] : std::nan("");
    }
  }
}

void CommandComparison::new_failed(std::uint64_t step, const std::string& why) {
  if (!failure_) failure_.emplace(step, why);
}

bool CommandComparison::diverged() const { return first_divergent_step().has_value(); }

std::optional<std::uint64_t> CommandComparison::first_divergent_step() const {
  std::optional<std::uint64_t> first;
  for (const ChannelComparison& ch : channels_)
    if (ch.first_divergent_step && (!first || *ch.first_divergent_step < *first)) first = ch.first_divergent_step;
  if (failure_ && (!first || failure_->first < *first)) first = failure_->first;
  return first;
}

namespace {

// JSON has no NaN: a missing command is null
nlohmann::json number_or_null(double v) { return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v); }

}  // namespace

nlohmann::json CommandComparison::to_json() const {
  nlohmann::json j;
  j["tolerance"] = tolerance_;
  j["steps_compared"] = steps_compared_;
  j["steps_not_compared"] = {{"recorded_firmware_missed", recorded_missing_},
                             {"after_new_firmware_failed", after_failure_ + (failure_ ? 1 : 0)}};
  j["diverged"] = diverged();
  const auto first = first_divergent_step();
  j["first_divergent_step"] = first ? nlohmann::json(*first) : nlohmann::json(nullptr);
  if (failure_) j["new_firmware_failure"] = {{"step", failure_->first}, {"reason", failure_->second}};
  j["channels"] = nlohmann::json::array();
  for (const ChannelComparison& ch : channels_) {
    nlohmann::json c{
        {"name", ch.name},
        {"device", ch.device},
        {"component", ch.component},
        {"compared", ch.compared},
        {"beyond_tolerance", ch.beyond_tolerance},
        {"missing", ch.missing},
        {"max_abs_diff", ch.max_abs_diff},
        {"max_abs_diff_step", ch.max_abs_diff == 0 ? nlohmann::json(nullptr) : nlohmann::json(ch.max_abs_diff_step)},
        {"rms_diff", ch.rms_diff()}};
    if (ch.first_divergent_step) {
      c["first_divergent_step"] = *ch.first_divergent_step;
      c["first_recorded"] = number_or_null(ch.first_recorded);
      c["first_new"] = number_or_null(ch.first_new);
    } else {
      c["first_divergent_step"] = nullptr;
    }
    j["channels"].push_back(std::move(c));
  }
  return j;
}

namespace {

runtime::EndpointConfig with_deadline(runtime::EndpointConfig c, std::int64_t deadline_ns) {
  c.deadline_ns = deadline_ns;
  return c;
}

}  // namespace

RegressionEndpoint::RegressionEndpoint(const runtime::EndpointConfig& recorded, const runtime::Recording& recording,
                                       std::size_t index, std::unique_ptr<SerialEndpoint> fresh, RegressionMode mode,
                                       double tolerance, std::int64_t reply_timeout_ns)
    : Endpoint(with_deadline(recorded, reply_timeout_ns)), recording_(recording), index_(index),
      recorded_(recorded, recording, index), fresh_(std::move(fresh)), mode_(mode),
      comparison_(fresh_->config().table, tolerance) {
  const std::size_t bodies = recording.scenario.model.bodies.size();
  for (runtime::Reply* r : {&recorded_reply_, &fresh_reply_}) {
    r->wrenches.reserve(bodies);
    r->commands.reserve(fresh_->config().table.size());
  }
}

void RegressionEndpoint::start(const runtime::WorldModel& model, const runtime::WorldState& initial) {
  // the new firmware reads this replay's device bank: the readings the recorded one got
  fresh_->attach_devices(devices_);
  recorded_.attach_devices(devices_);
  fresh_->start(model, initial);
  recorded_.start(model, initial);
}

bool RegressionEndpoint::publish(const runtime::StepContext& ctx, const runtime::WorldState& projected) {
  const bool recorded_ok = recorded_.publish(ctx, projected);
  if (!comparison_.failed() && !fresh_->publish(ctx, projected)) {
    comparison_.new_failed(ctx.step, fresh_->fault_message());
    if (mode_ == RegressionMode::closed_loop) {
      fault_message_ = "new firmware: " + fresh_->fault_message();
      return false;
    }
  }
  return recorded_ok;
}

runtime::GatherStatus RegressionEndpoint::gather(const runtime::StepContext& ctx,
                                                 runtime::SteadyClock::time_point deadline, runtime::Reply& reply) {
  if (ctx.step != gathered_step_) {
    gathered_step_ = ctx.step;
    // the new firmware first: in open loop it is the only live participant
    if (comparison_.failed()) {
      fresh_status_ = runtime::GatherStatus::fault;
      comparison_.not_compared_after_failure();
    } else {
      fresh_status_ = fresh_->gather(ctx, deadline, fresh_reply_);
      // the session counts this endpoint's steps; the new firmware's are counted here
      if (fresh_status_ == runtime::GatherStatus::ready) ++fresh_replies_;
      if (fresh_status_ == runtime::GatherStatus::fault) ++fresh_faults_;
      if (fresh_status_ == runtime::GatherStatus::timeout)
        comparison_.new_failed(ctx.step,
                               "no ACTUATE for this step within " + std::to_string(deadline_ns() / 1'000'000) + " ms");
      else if (fresh_status_ == runtime::GatherStatus::fault)
        comparison_.new_failed(ctx.step, fresh_->fault_message());
    }
    recorded_status_ = recorded_.gather(ctx, deadline, recorded_reply_);
    if (fresh_status_ == runtime::GatherStatus::ready) {
      if (recorded_status_ == runtime::GatherStatus::ready)
        comparison_.compare(ctx.step, recorded_reply_.commands, fresh_reply_.commands);
      else
        comparison_.recorded_missing();
    }
  }
  const bool open = mode_ == RegressionMode::open_loop;
  const runtime::GatherStatus status = open ? recorded_status_ : fresh_status_;
  if (status == runtime::GatherStatus::ready) {
    const runtime::Reply& from = open ? recorded_reply_ : fresh_reply_;
    reply.step = from.step;
    reply.wrenches.assign(from.wrenches.begin(), from.wrenches.end());
    reply.commands.assign(from.commands.begin(), from.commands.end());
    reply.measurements.assign(from.measurements.begin(), from.measurements.end());
    // the new firmware's log lines are shown in either mode (they are not physics)
    reply.logs.clear();
    if (fresh_status_ == runtime::GatherStatus::ready)
      for (auto& line : fresh_reply_.logs) reply.logs.push_back(std::move(line));
  } else if (status == runtime::GatherStatus::fault) {
    fault_message_ = open ? recorded_.fault_message() : "new firmware: " + fresh_->fault_message();
  }
  return status;
}

void RegressionEndpoint::emit(const runtime::StepContext& ctx, const runtime::WorldState& actual) {
  recorded_.emit(ctx, actual);
  fresh_->emit(ctx, actual);
}

void RegressionEndpoint::safe_reply(runtime::Reply& reply) const {
  if (mode_ == RegressionMode::open_loop)
    recorded_.safe_reply(reply);
  else
    fresh_->safe_reply(reply);
}

void RegressionEndpoint::stop() {
  fresh_->stop();
  recorded_.stop();
}

void RegressionEndpoint::summarize(nlohmann::json& out) const {
  nlohmann::json r = comparison_.to_json();
  r["mode"] = to_string(mode_);
  out["regression"] = std::move(r);
  const runtime::LinkCounts link = fresh_->link_counts();
  nlohmann::json fw{
      {"replies", fresh_replies_}, {"faults", fresh_faults_}, {"stale", link.stale}, {"corrupt", link.corrupt}};
  fresh_->summarize(fw);
  out["new_firmware"] = std::move(fw);
}

namespace {

// "name, build 0x..." from a serial endpoint's summary object
std::string describe_firmware(const nlohmann::json& serial) {
  if (!serial.is_object() || !serial.contains("firmware")) return "no HELLO";
  std::string s = serial["firmware"].get<std::string>();
  if (serial.contains("build_id")) s += ", build " + serial["build_id"].get<std::string>();
  return s;
}

}  // namespace

std::string RegressionEndpoint::recorded_firmware() const {
  if (!recording_.summary || !recording_.summary->contains("endpoints")) return "(the recording has no summary)";
  const nlohmann::json& eps = (*recording_.summary)["endpoints"];
  if (!eps.is_array() || index_ >= eps.size() || !eps[index_].contains("serial")) return "(not in the summary)";
  return describe_firmware(eps[index_]["serial"]);
}

std::string RegressionEndpoint::new_firmware_description() const {
  nlohmann::json j;
  fresh_->summarize(j);
  return describe_firmware(j.value("serial", nlohmann::json()));
}

std::unique_ptr<RegressionEndpoint> make_regression_endpoint(const runtime::Recording& recording,
                                                             const FirmwareSpec& spec, RegressionMode mode,
                                                             double tolerance) {
  const auto& endpoints = recording.scenario.endpoints;
  std::size_t index = endpoints.size();
  std::string names;
  for (std::size_t i = 0; i < endpoints.size(); ++i) {
    if (endpoints[i].name == spec.endpoint) index = i;
    names += (names.empty() ? "\"" : ", \"") + endpoints[i].name + "\" (" + endpoints[i].type + ")";
  }
  if (index == endpoints.size())
    throw std::invalid_argument("--firmware " + spec.endpoint + "=...: the recording has no endpoint \"" +
                                spec.endpoint + "\" (its endpoints: " + (names.empty() ? "none" : names) + ")");
  const runtime::EndpointConfig& recorded = endpoints[index];
  if (recorded.type != "serial")
    throw std::invalid_argument("--firmware " + spec.endpoint + "=...: endpoint \"" + spec.endpoint + "\" is a " +
                                recorded.type + " endpoint; new firmware can take the place of a serial endpoint");
  // the recorded endpoint's device table, serial settings and safe reply; a new launch
  SerialEndpointConfig serial;
  try {
    serial = parse_serial_config(recorded, recording.scenario);
    recording.scenario.throw_if_errors();
  } catch (const runtime::ConfigError& e) {
    throw std::invalid_argument(std::string("the recorded serial endpoint does not parse with this build: ") +
                                e.what());
  }
  serial.port.clear();
  SerialLaunchConfig launch;
  std::string error;
  if (!launch_from_spec(spec.launch, launch, &error)) throw std::invalid_argument(error);
  serial.launch = std::move(launch);
  auto fresh = std::make_unique<SerialEndpoint>(recorded, std::move(serial));
  return std::make_unique<RegressionEndpoint>(recorded, recording, index, std::move(fresh), mode, tolerance);
}

namespace {

std::string num(double v) {
  if (std::isnan(v)) return "(none)";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

std::string regression_report_text(const RegressionEndpoint& endpoint, const std::string& launch) {
  const CommandComparison& c = endpoint.comparison();
  std::string out;
  char line[512];
  out +=
      std::string("firmware regression (") + to_string(endpoint.mode()) + "): endpoint \"" + endpoint.name() + "\"\n";
  out += "  recorded firmware: " + endpoint.recorded_firmware() + "\n";
  out += "  new firmware:      " + launch + " (" + endpoint.new_firmware_description() + ")\n";
  nlohmann::json j = c.to_json();
  std::snprintf(line, sizeof line,
                "  compared %llu steps, tolerance %g; not compared: %llu (recorded firmware missed), %llu (new "
                "firmware failed)\n",
                static_cast<unsigned long long>(c.steps_compared()), c.tolerance(),
                j["steps_not_compared"]["recorded_firmware_missed"].get<unsigned long long>(),
                j["steps_not_compared"]["after_new_firmware_failed"].get<unsigned long long>());
  out += line;
  if (j.contains("new_firmware_failure"))
    out += "  new firmware FAILED at step " + std::to_string(j["new_firmware_failure"]["step"].get<std::uint64_t>()) +
           ": " + j["new_firmware_failure"]["reason"].get<std::string>() + "\n";
  const auto first = c.first_divergent_step();
  if (!first) {
    out += "  result: no divergence, every command within the tolerance\n";
  } else {
    out += "  result: DIVERGED, first at step " + std::to_string(*first);
    for (const ChannelComparison& ch : c.channels())
      if (ch.first_divergent_step == first)
        out += "; " + ch.name + " recorded " + num(ch.first_recorded) + ", new " + num(ch.first_new);
    out += "\n";
  }
  std::snprintf(line, sizeof line, "  %-28s %10s %12s %9s %12s %10s %8s\n", "channel", "first step", "max |diff|",
                "at step", "RMS diff", "> tol", "missing");
  out += line;
  for (const ChannelComparison& ch : c.channels()) {
    const std::string first_step = ch.first_divergent_step ? std::to_string(*ch.first_divergent_step) : "-";
    const std::string at = ch.max_abs_diff > 0 ? std::to_string(ch.max_abs_diff_step) : "-";
    std::snprintf(line, sizeof line, "  %-28s %10s %12.6g %9s %12.6g %10llu %8llu\n", ch.name.c_str(),
                  first_step.c_str(), ch.max_abs_diff, at.c_str(), ch.rms_diff(),
                  static_cast<unsigned long long>(ch.beyond_tolerance), static_cast<unsigned long long>(ch.missing));
    out += line;
  }
  return out;
}

}  // namespace tether::adapters
