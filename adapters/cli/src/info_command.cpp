// SPDX-License-Identifier: Apache-2.0
// `tether info RECORDING`: what a recording holds: its scenario, steps, endpoints and their
// counters, channels and schemas.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tether/recording/json_text.hpp"
#include "tether/recording/replay.hpp"
#include "tether/scenario/scenario.hpp"

namespace tether::cli {

int info_command(const InfoOptions& options) {
  runtime::Recording rec;
  std::string error;
  // counts only: a recording of hours reads in the memory of one chunk
  runtime::LoadOptions counts_only;
  counts_only.steps = counts_only.states = counts_only.keyframes = counts_only.events = false;
  if (!runtime::load_recording(options.recording, rec, &error, counts_only)) {
    std::cerr << "tether: " << error << '\n';
    return exit_usage;
  }
  nlohmann::json j;
  j["recording"] = options.recording;
  j["scenario"] = rec.scenario.name;
  j["file_size_bytes"] = rec.file_size_bytes;
  j["steps"] = rec.step_count;
  j["first_step"] = rec.first_step;
  j["duration_s"] = static_cast<double>(rec.step_count) * static_cast<double>(rec.scenario.loop.period_ns) * 1e-9;
  j["period_ms"] = static_cast<double>(rec.scenario.loop.period_ns) * 1e-6;
  j["keyframes"] = rec.keyframe_count;
  j["complete"] = !rec.truncated && rec.summary.has_value();
  if (rec.truncated) j["truncation"] = rec.truncation;
  j["endpoints"] = nlohmann::json::array();
  for (const auto& e : rec.scenario.endpoints)
    j["endpoints"].push_back({{"name", e.name}, {"type", e.type}, {"policy", runtime::to_string(e.policy)}});
  if (rec.summary) {
    j["outcome"] = (*rec.summary)["outcome"];
    if (rec.summary->contains("verdict")) j["verdict"] = (*rec.summary)["verdict"];
    if (rec.summary->contains("expectations")) j["expectations"] = (*rec.summary)["expectations"];
    j["counters"] = nlohmann::json::object();
    for (const auto& e : (*rec.summary)["endpoints"])
      j["counters"][e["name"].get<std::string>()] = {{"replies", e["replies"]}, {"misses", e["misses"]},
                                                     {"late", e["late"]},       {"stale", e["stale"]},
                                                     {"corrupt", e["corrupt"]}, {"faults", e["faults"]}};
  }
  j["events"] = rec.event_count;
  j["log_time_s"] = {static_cast<double>(rec.first_log_time_ns) * 1e-9,
                     static_cast<double>(rec.last_log_time_ns) * 1e-9};
  j["channels"] = nlohmann::json::array();
  for (const auto& [topic, stats] : rec.channels) {
    const auto& f = rec.channel_formats.at(topic);
    j["channels"].push_back({{"topic", topic},
                             {"messages", stats.first},
                             {"bytes", stats.second},
                             {"encoding", f.encoding},
                             {"schema", f.schema},
                             {"schema_encoding", f.schema_encoding}});
  }
  if (options.json) {
    std::cout << runtime::json_text(j, 2) << '\n';
    return exit_ok;
  }
  std::printf("recording   %s (%.1f kB)%s\n", options.recording.c_str(), static_cast<double>(rec.file_size_bytes) / 1e3,
              rec.truncated ? "  TRUNCATED (the session did not finish)" : "");
  if (rec.truncated) std::printf("            %s\n", rec.truncation.c_str());
  std::printf("scenario    %s\n", rec.scenario.name.c_str());
  std::printf("steps       %llu from step %llu, %.3f s at %.3g ms; %llu keyframes\n",
              static_cast<unsigned long long>(rec.step_count),
              static_cast<unsigned long long>(j["first_step"].get<std::uint64_t>()), j["duration_s"].get<double>(),
              j["period_ms"].get<double>(), static_cast<unsigned long long>(rec.keyframe_count));
  if (rec.summary) std::printf("outcome     %s\n", (*rec.summary)["outcome"].get<std::string>().c_str());
  if (j.contains("verdict")) {
    // the expectations' verdict, as `tether run` judged them (PASS / FAIL / SKIPPED each)
    std::size_t passed = 0, failed = 0, skipped = 0;
    for (const auto& x : j["expectations"]) {
      passed += x.value("verdict", "") == "PASS";
      failed += x.value("verdict", "") == "FAIL";
      skipped += x.value("verdict", "") == "SKIPPED";
    }
    std::printf("verdict     %s: %zu passed, %zu failed, %zu skipped of %zu expectations\n",
                j["verdict"] == "pass" ? "PASS" : "FAIL", passed, failed, skipped, j["expectations"].size());
    for (const auto& x : j["expectations"])
      if (x.value("verdict", "") == "FAIL")
        std::printf("            FAIL %s\n", x.value("name", std::string("?")).c_str());
  }
  for (const auto& e : rec.scenario.endpoints) {
    std::printf("endpoint    %s (%s, policy %s)", e.name.c_str(), e.type.c_str(), runtime::to_string(e.policy));
    if (j.contains("counters") && j["counters"].contains(e.name)) {
      const auto& c = j["counters"][e.name];
      std::printf(": replies %llu, misses %llu, late %llu, stale %llu, corrupt %llu, faults %llu",
                  c["replies"].get<unsigned long long>(), c["misses"].get<unsigned long long>(),
                  c["late"].get<unsigned long long>(), c["stale"].get<unsigned long long>(),
                  c["corrupt"].get<unsigned long long>(), c["faults"].get<unsigned long long>());
    }
    std::printf("\n");
  }
  std::printf("log time    %.3f .. %.3f s (simulation time)\n", j["log_time_s"][0].get<double>(),
              j["log_time_s"][1].get<double>());
  std::printf("events      %llu\nchannels    %zu\n", static_cast<unsigned long long>(rec.event_count),
              rec.channels.size());
  // the columns as wide as their longest entry, so every row lines up
  auto schema_of = [&](const std::string& topic) {
    const auto& f = rec.channel_formats.at(topic);
    return f.schema.empty() ? std::string("-")
                            : f.schema + (f.schema_encoding.empty() ? "" : " (" + f.schema_encoding + ")");
  };
  int wt = 5, we = 8, ws = 6;
  for (const auto& [topic, stats] : rec.channels) {
    wt = std::max(wt, static_cast<int>(topic.size()));
    we = std::max(we, static_cast<int>(rec.channel_formats.at(topic).encoding.size()));
    ws = std::max(ws, static_cast<int>(schema_of(topic).size()));
  }
  std::printf("  %-*s %-*s %-*s %9s %12s\n", wt, "topic", we, "encoding", ws, "schema", "messages", "bytes");
  for (const auto& [topic, stats] : rec.channels)
    std::printf("  %-*s %-*s %-*s %9llu %12llu\n", wt, topic.c_str(), we,
                rec.channel_formats.at(topic).encoding.c_str(), ws, schema_of(topic).c_str(),
                static_cast<unsigned long long>(stats.first), static_cast<unsigned long long>(stats.second));
  return exit_ok;
}

}  // namespace tether::cli
