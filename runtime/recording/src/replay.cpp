// SPDX-License-Identifier: Apache-2.0
#include "tether/recording/replay.hpp"

#include <bit>
#include <cstdio>

#include "tether/recording/mcap_reader.hpp"

namespace tether::runtime {

const StepRecord* Recording::step(std::uint64_t k) const {
  if (steps.empty() || k < steps.front().step) return nullptr;
  const std::uint64_t i = k - steps.front().step;
  return i < steps.size() ? &steps[i] : nullptr;
}

namespace {

// the `tether` metadata record: the endpoints' names and the physics' sub-step rule into
// `out`; why the recording cannot be read (another format version), or empty
std::string read_metadata(const mcap::Reader& reader, Recording& out) {
  bool free_substeps = false;
  for (const auto& m : reader.metadata())
    if (m.name == "tether") {
      const auto rule = m.entries.find("substep_rule");
      free_substeps = rule != m.entries.end() && rule->second == "free";
      const auto version = m.entries.find("format_version");
      if (version != m.entries.end() && version->second != std::to_string(recording_format_version))
        return "recorded in format version " + version->second + ", this build reads version " +
               std::to_string(recording_format_version) +
               " (version 1 recordings are read by the Tether release that wrote them)";
      const auto it = m.entries.find("endpoints");
      if (it != m.entries.end() && !it->second.empty()) {
        std::string list = it->second;
        for (std::size_t start = 0; start <= list.size();) {
          const auto comma = list.find(',', start);
          out.endpoint_names.push_back(
              list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
          if (comma == std::string::npos) break;
          start = comma + 1;
        }
      }
    }
  // written before free sub-steps: the physics took every step in max_substep_s sub-steps
  if (!free_substeps) out.scenario.model.free_substep_s = out.scenario.model.max_substep_s;
  return {};
}

}  // namespace

std::vector<std::string> recorded_overrides(const mcap::Reader& reader) {
  std::vector<std::string> overrides;
  for (const auto& a : reader.attachments()) {
    if (a.name != "overrides.txt") continue;
    std::string line;
    for (char c : a.data) {
      if (c == '\n') {
        if (!line.empty()) overrides.push_back(line);
        line.clear();
      } else {
        line += c;
      }
    }
    if (!line.empty()) overrides.push_back(line);
  }
  return overrides;
}

bool load_recording(const std::string& path, Recording& out, std::string* error, const LoadOptions& keep) {
  auto fail = [&](const std::string& why) {
    if (error) *error = path + ": " + why;
    return false;
  };
  mcap::Reader reader;
  std::string why;
  if (!reader.open(path, &why)) {
    if (error) *error = why;
    return false;
  }
  out = Recording{};
  out.path = path;
  const mcap::Info& info = reader.info();
  out.truncated = info.truncated;
  out.truncation = info.truncation;
  out.file_size_bytes = info.file_size_bytes;

  const mcap::Attachment* scenario_file = nullptr;
  for (const auto& a : reader.attachments())
    if (a.name == "scenario.yaml") scenario_file = &a;
  const std::vector<std::string> overrides = recorded_overrides(reader);  // the run's --set options
  if (!scenario_file) return fail("not a Tether recording (no scenario.yaml attachment)");
  try {
    out.scenario = parse_scenario(scenario_file->data, path + ":scenario.yaml", overrides);
  } catch (const ConfigError& e) {
    return fail(std::string("the recorded scenario does not parse with this build: ") + e.what());
  }
  if (const std::string bad = read_metadata(reader, out); !bad.empty()) return fail(bad);

  mcap::MessageView msg;
  bool first_message = true;
  StepRecord scratch;  // a step not kept is decoded here
  std::uint64_t last_step = 0, state_count = 0;
  while (reader.next(msg)) {
    const mcap::Channel* ch = reader.channel(msg.channel_id);
    if (!ch) continue;
    auto& stats = out.channels[ch->topic];
    if (stats.first == 0) {
      const mcap::Schema* schema = ch->schema_id ? reader.schema(ch->schema_id) : nullptr;
      out.channel_formats[ch->topic] = {ch->message_encoding, schema ? schema->name : std::string(),
                                        schema ? schema->encoding : std::string()};
    }
    out.first_log_time_ns = first_message ? msg.log_time_ns : std::min(out.first_log_time_ns, msg.log_time_ns);
    out.last_log_time_ns = std::max(out.last_log_time_ns, msg.log_time_ns);
    first_message = false;
    ++stats.first;
    stats.second += msg.data.size();
    const std::string_view bytes(reinterpret_cast<const char*>(msg.data.data()), msg.data.size());
    if (ch->topic == topics::step) {
      StepRecord& r = keep.steps ? out.steps.emplace_back() : scratch;
      if (!decode_step(bytes, r, &why)) return fail("step record " + std::to_string(out.step_count) + ": " + why);
      if (out.step_count > 0 && r.step != last_step + 1)
        return fail("step records jump from step " + std::to_string(last_step) + " to " + std::to_string(r.step) +
                    " (the recorder dropped steps; see the summary's dropped_items)");
      if (r.slots.size() != out.scenario.endpoints.size())
        return fail("step " + std::to_string(r.step) + " has " + std::to_string(r.slots.size()) +
                    " endpoint slots, the scenario " + std::to_string(out.scenario.endpoints.size()));
      if (out.step_count++ == 0) out.first_step = r.step;
      last_step = r.step;
    } else if (ch->topic == topics::safe_replies) {
      if (!decode_safe_replies(bytes, out.safe_replies, &why)) return fail(why);
      if (out.safe_replies.size() != out.scenario.endpoints.size())
        return fail("safe replies for " + std::to_string(out.safe_replies.size()) + " endpoints, the scenario has " +
                    std::to_string(out.scenario.endpoints.size()));
    } else if (ch->topic == topics::commands) {
      StepCommands c;
      if (!decode_step_commands(bytes, c, &why)) return fail(why);
      if (!out.commands.empty() && c.step <= out.commands.back().step)
        return fail("operator commands of step " + std::to_string(c.step) + " after those of step " +
                    std::to_string(out.commands.back().step));
      out.commands.push_back(std::move(c));
    } else if (ch->topic == topics::state) {
      ++state_count;
      if (keep.states) out.states.emplace_back(bytes);
    } else if (ch->topic == topics::keyframe) {
      Keyframe k;
      if (!decode_keyframe(bytes, k, &why)) return fail(why);
      ++out.keyframe_count;
      if (keep.keyframes) out.keyframes[k.state.step] = std::move(k);
    } else if (ch->topic == topics::summary) {
      auto j = nlohmann::json::parse(bytes, nullptr, false);
      if (j.is_object()) out.summary = std::move(j);  // readers index it as an object
    } else if (ch->topic == topics::events) {
      auto j = nlohmann::json::parse(bytes, nullptr, false);
      if (!j.is_object()) continue;
      ++out.event_count;
      if (keep.events) out.events.push_back(std::move(j));
    }
  }
  if (!reader.error().empty()) return fail(reader.error());
  if (state_count != out.step_count) out.states.clear();
  return true;
}

std::string Divergence::describe() const {
  char buf[512];
  if (field.empty()) {
    std::snprintf(buf, sizeof buf, "step %llu: state hash %016llx recorded, %016llx replayed",
                  static_cast<unsigned long long>(step), static_cast<unsigned long long>(recorded_hash),
                  static_cast<unsigned long long>(replayed_hash));
  } else {
    std::snprintf(buf, sizeof buf, "step %llu: %s recorded %.17g (0x%016llx), replayed %.17g (0x%016llx)",
                  static_cast<unsigned long long>(step), field.c_str(), recorded,
                  static_cast<unsigned long long>(std::bit_cast<std::uint64_t>(recorded)), replayed,
                  static_cast<unsigned long long>(std::bit_cast<std::uint64_t>(replayed)));
  }
  return buf;
}

std::optional<Divergence> compare_state(const Recording& recording, const WorldState& replayed) {
  if (replayed.step == 0) return std::nullopt;
  const std::uint64_t k = replayed.step - 1;  // the step that produced this state
  const StepRecord* r = recording.step(k);
  if (!r) return std::nullopt;
  const std::uint64_t h = hash_state(replayed);
  if (h == r->state_hash) return std::nullopt;
  Divergence d;
  d.step = k;
  d.recorded_hash = r->state_hash;
  d.replayed_hash = h;
  const std::uint64_t i = k - recording.steps.front().step;
  WorldState rec;
  if (i < recording.states.size() && decode_state(recording.states[i], rec, nullptr) &&
      rec.bodies.size() == replayed.bodies.size()) {
    static const char* names[13] = {
        "position_m.x",       "position_m.y",       "position_m.z",      "orientation.w",     "orientation.x",
        "orientation.y",      "orientation.z",      "linear_momentum.x", "linear_momentum.y", "linear_momentum.z",
        "angular_momentum.x", "angular_momentum.y", "angular_momentum.z"};
    auto values = [](const BodyState& b, int f) {
      const double v[13] = {b.position_m.x(),      b.position_m.y(),       b.position_m.z(),
                            b.orientation.w(),     b.orientation.x(),      b.orientation.y(),
                            b.orientation.z(),     b.linear_momentum.x(),  b.linear_momentum.y(),
                            b.linear_momentum.z(), b.angular_momentum.x(), b.angular_momentum.y(),
                            b.angular_momentum.z()};
      return v[f];
    };
    for (std::size_t b = 0; b < rec.bodies.size() && d.field.empty(); ++b)
      for (int f = 0; f < 13; ++f) {
        const double a = values(rec.bodies[b], f), c = values(replayed.bodies[b], f);
        if (std::bit_cast<std::uint64_t>(a) != std::bit_cast<std::uint64_t>(c)) {
          d.field = "bodies[" + std::to_string(b) + "] (" + recording.scenario.model.bodies[b].name + ")." + names[f];
          d.recorded = a;
          d.replayed = c;
          break;
        }
      }
    if (d.field.empty() && rec.time_ns != replayed.time_ns) {
      d.field = "time_ns";
      d.recorded = static_cast<double>(rec.time_ns);
      d.replayed = static_cast<double>(replayed.time_ns);
    }
  }
  return d;
}

}  // namespace tether::runtime
