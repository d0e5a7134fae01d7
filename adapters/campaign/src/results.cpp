// SPDX-License-Identifier: Apache-2.0
// A campaign's results: campaign.json (written, and read back for --merge), the three result
// files written whole, and the merge of slices (docs/campaigns.md, "Spreading a campaign over
// machines").
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tether/campaign/campaign.hpp"
#include "tether/recording/json_text.hpp"
#include "tether/recording/write_whole.hpp"
#include "text_util.hpp"

namespace tether::campaign {

namespace fs = std::filesystem;

std::size_t CampaignResult::passed() const {
  return static_cast<std::size_t>(
      std::count_if(runs.begin(), runs.end(), [](const RunResult& r) { return r.verdict == RunVerdict::pass; }));
}
std::size_t CampaignResult::failed() const {
  return static_cast<std::size_t>(
      std::count_if(runs.begin(), runs.end(), [](const RunResult& r) { return r.verdict == RunVerdict::fail; }));
}
std::size_t CampaignResult::not_run() const {
  return static_cast<std::size_t>(
      std::count_if(runs.begin(), runs.end(), [](const RunResult& r) { return r.verdict == RunVerdict::not_run; }));
}

nlohmann::json campaign_json(const CampaignResult& result, const std::string& dir) {
  RelativeTo rel(dir);
  nlohmann::json j;
  j["format"] = "tether-campaign-1";
  j["campaign"] = result.name;
  j["file"] = result.file;
  j["fingerprint"] = result.fingerprint;
  j["total_runs"] = result.total_runs;
  j["shard"] =
      result.shard ? nlohmann::json{{"k", result.shard->first}, {"n", result.shard->second}} : nlohmann::json(nullptr);
  if (!result.merged_from.empty()) {
    j["merged_from"] = nlohmann::json::array();
    for (const auto& d : result.merged_from) j["merged_from"].push_back(rel(d));
  }
  j["interrupted"] = result.interrupted;
  j["jobs"] = result.jobs;
  j["started"] = result.started;
  j["wall_s"] = result.wall_s;
  j["passed"] = result.passed();
  j["failed"] = result.failed();
  j["not_run"] = result.not_run();
  j["verdict"] = result.failed() == 0 && result.not_run() == 0 && result.runs.size() == result.total_runs
                     ? "pass"
                     : (result.failed() > 0 ? "fail" : "incomplete");
  j["runs"] = nlohmann::json::array();
  for (const auto& r : result.runs) {
    nlohmann::json x;
    x["index"] = r.plan.index;
    x["name"] = r.plan.name;
    x["classname"] = r.plan.classname;
    x["kind"] = r.plan.replay ? "replay" : "run";
    x["labels"] = r.plan.labels;
    x["args"] = r.plan.args;
    x["verdict"] = to_string(r.verdict);
    x["exit_code"] = r.exit_code ? nlohmann::json(*r.exit_code) : nlohmann::json(nullptr);
    x["outcome"] = r.outcome;
    if (!r.reason.empty()) x["reason"] = r.reason;
    x["failures"] = nlohmann::json::array();
    for (const auto& f : r.failures) {
      nlohmann::json fj{{"name", f.name}, {"message", f.message()}};
      fj["first_failing_step"] = f.step ? nlohmann::json(*f.step) : nlohmann::json(nullptr);
      fj["first_failing_time_s"] = f.time_s ? nlohmann::json(*f.time_s) : nlohmann::json(nullptr);
      fj["worst"] = f.worst ? nlohmann::json(*f.worst) : nlohmann::json(nullptr);
      fj["detail"] = f.detail;
      x["failures"].push_back(std::move(fj));
    }
    x["expectations"] = nlohmann::json::array();
    for (const auto& e : r.expectations)
      x["expectations"].push_back(nlohmann::json{{"name", e.name},
                                                 {"verdict", e.verdict},
                                                 {"margin", e.margin ? nlohmann::json(*e.margin) : nlohmann::json()}});
    x["duration_s"] = r.duration_s;
    x["folder"] = r.folder.empty() ? nlohmann::json(nullptr) : nlohmann::json(rel(r.folder));
    x["report"] = r.report.empty() ? nlohmann::json(nullptr) : nlohmann::json(rel(r.report));
    x["log"] = r.log.empty() ? nlohmann::json(nullptr) : nlohmann::json(rel(r.log));
    x["recording"] = r.recording.empty() ? nlohmann::json(nullptr) : nlohmann::json(rel(r.recording));
    j["runs"].push_back(std::move(x));
  }
  return j;
}

CampaignResult read_campaign_json(const std::string& dir) {
  const fs::path file = fs::path(dir) / "campaign.json";
  std::error_code ec;
  if (!fs::exists(file, ec))
    throw std::runtime_error(file.string() + ": not found (is " + dir + " the output folder of a `tether test`?)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text(file));
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(file.string() + ": not JSON: " + e.what());
  }
  const auto path_in = [&](const nlohmann::json& v) {
    return v.is_string() ? (fs::path(dir) / v.get<std::string>()).lexically_normal().string() : std::string();
  };
  CampaignResult r;
  try {
    if (j.value("format", "") != "tether-campaign-1")
      throw std::runtime_error("not a tether campaign result (format " + j.value("format", "missing") + ")");
    r.name = j.at("campaign").get<std::string>();
    r.file = j.value("file", "");
    r.fingerprint = j.at("fingerprint").get<std::string>();
    r.total_runs = j.at("total_runs").get<std::size_t>();
    if (j.contains("shard") && j["shard"].is_object())
      r.shard = std::make_pair(j["shard"].at("k").get<std::size_t>(), j["shard"].at("n").get<std::size_t>());
    r.interrupted = j.value("interrupted", false);
    r.jobs = j.value("jobs", 0);
    r.started = j.value("started", "");
    r.wall_s = j.value("wall_s", 0.0);
    for (const auto& x : j.at("runs")) {
      RunResult run;
      run.plan.index = x.at("index").get<std::size_t>();
      run.plan.name = x.at("name").get<std::string>();
      run.plan.classname = x.value("classname", "");
      run.plan.replay = x.value("kind", "run") == "replay";
      run.plan.labels = x.value("labels", nlohmann::json::object());
      run.plan.args = x.value("args", std::vector<std::string>{});
      const std::string v = x.at("verdict").get<std::string>();
      run.verdict = v == "pass" ? RunVerdict::pass : v == "fail" ? RunVerdict::fail : RunVerdict::not_run;
      if (x.contains("exit_code") && x["exit_code"].is_number()) run.exit_code = x["exit_code"].get<int>();
      run.outcome = x.value("outcome", "");
      run.reason = x.value("reason", "");
      for (const auto& fj : x.value("failures", nlohmann::json::array())) {
        RunFailure f;
        f.name = fj.value("name", "");
        if (fj.contains("first_failing_step") && fj["first_failing_step"].is_number())
          f.step = fj["first_failing_step"].get<std::uint64_t>();
        if (fj.contains("first_failing_time_s") && fj["first_failing_time_s"].is_number())
          f.time_s = fj["first_failing_time_s"].get<double>();
        if (fj.contains("worst") && fj["worst"].is_number()) f.worst = fj["worst"].get<double>();
        f.detail = fj.value("detail", "");
        run.failures.push_back(std::move(f));
      }
      for (const auto& ej : x.value("expectations", nlohmann::json::array())) {
        ExpectationOutcome e{ej.value("name", ""), ej.value("verdict", ""), std::nullopt};
        if (ej.contains("margin") && ej["margin"].is_number()) e.margin = ej["margin"].get<double>();
        run.expectations.push_back(std::move(e));
      }
      run.duration_s = x.value("duration_s", 0.0);
      run.folder = path_in(x.value("folder", nlohmann::json()));
      run.plan.folder = run.folder.empty() ? std::string() : fs::path(run.folder).filename().string();
      run.report = path_in(x.value("report", nlohmann::json()));
      run.log = path_in(x.value("log", nlohmann::json()));
      run.recording = path_in(x.value("recording", nlohmann::json()));
      r.runs.push_back(std::move(run));
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(file.string() + ": " + e.what());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(file.string() + ": " + e.what());
  }
  return r;
}

bool write_campaign_results(const CampaignResult& result, const std::string& dir, std::string* error) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  // the three texts at once, each on its own thread (they only read `result`): with many runs
  // (a merge of 100,000) making them is most of the work
  auto json = std::async(std::launch::async, [&] { return runtime::json_text(campaign_json(result, dir), 2) + "\n"; });
  auto junit = std::async(std::launch::async, [&] { return junit_xml(result, dir); });
  std::string index = index_html(result, dir);
  const std::vector<std::pair<std::string, std::string>> files = {
      {"campaign.json", json.get()}, {"junit.xml", junit.get()}, {"index.html", std::move(index)}};
  for (const auto& [name, text] : files)  // each whole or not at all (a merge never reads half a file)
    if (!runtime::write_whole_file((fs::path(dir) / name).string(), text, error)) return false;
  return true;
}

namespace {

// every slice's campaign.json, read on as many threads as there are cores (parsing is most of
// a large merge's reading); a slice that cannot be read throws, the first in the given order
std::vector<CampaignResult> read_slices(const std::vector<std::string>& dirs) {
  std::vector<CampaignResult> parts(dirs.size());
  std::vector<std::exception_ptr> errors(dirs.size());
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t d = next++; d < dirs.size(); d = next++) {
      try {
        parts[d] = read_campaign_json(dirs[d]);
      } catch (...) {
        errors[d] = std::current_exception();
      }
    }
  };
  const std::size_t threads = std::min<std::size_t>(dirs.size(), std::max(1U, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  return parts;
}

}  // namespace

CampaignResult merge_campaign_results(const std::vector<std::string>& dirs) {
  if (dirs.empty()) throw std::runtime_error("--merge needs at least one folder");
  CampaignResult merged;
  std::map<std::size_t, std::pair<RunResult, std::string>> by_index;  // the run, and the folder it came from
  std::vector<CampaignResult> parts = read_slices(dirs);
  for (std::size_t d = 0; d < dirs.size(); ++d) {
    CampaignResult part = std::move(parts[d]);
    if (d == 0) {
      merged.name = part.name;
      merged.file = part.file;
      merged.fingerprint = part.fingerprint;
      merged.total_runs = part.total_runs;
      merged.started = part.started;
    } else if (part.fingerprint != merged.fingerprint || part.name != merged.name ||
               part.total_runs != merged.total_runs) {
      throw std::runtime_error(dirs[d] + " holds runs of a different campaign (\"" + part.name + "\", " +
                               std::to_string(part.total_runs) + " runs, fingerprint " + part.fingerprint + ") than " +
                               dirs[0] + " (\"" + merged.name + "\", " + std::to_string(merged.total_runs) +
                               " runs, fingerprint " + merged.fingerprint +
                               "): merge slices of one campaign run with the same options");
    }
    merged.merged_from.push_back(fs::absolute(dirs[d]).lexically_normal().string());
    merged.interrupted = merged.interrupted || part.interrupted;
    merged.wall_s = std::max(merged.wall_s, part.wall_s);
    merged.jobs += part.jobs;
    for (auto& run : part.runs) {
      if (run.plan.index >= merged.total_runs)
        throw std::runtime_error(dirs[d] + ": run " + std::to_string(run.plan.index) + " is beyond the campaign's " +
                                 std::to_string(merged.total_runs) + " runs");
      const auto it = by_index.find(run.plan.index);
      if (it != by_index.end()) {
        // a slice that was stopped lists runs it did not start: another slice may have them
        if (run.verdict == RunVerdict::not_run) continue;
        if (it->second.first.verdict != RunVerdict::not_run)
          throw std::runtime_error("run " + std::to_string(run.plan.index) + " (" + run.plan.name + ") is in both " +
                                   it->second.second + " and " + dirs[d] + ": merge each slice once");
      }
      by_index[run.plan.index] = {std::move(run), dirs[d]};
    }
  }
  for (std::size_t i = 0; i < merged.total_runs; ++i) {
    const auto it = by_index.find(i);
    if (it == by_index.end() || it->second.first.verdict == RunVerdict::not_run) {
      RunResult missing = it == by_index.end() ? RunResult{} : it->second.first;
      if (it == by_index.end()) {
        missing.plan.index = i;
        missing.plan.name = "run " + std::to_string(i);
        missing.plan.classname = merged.name;
      }
      missing.verdict = RunVerdict::fail;
      missing.reason = "not run by any merged slice (its shard did not run, or was stopped before it)";
      merged.runs.push_back(std::move(missing));
      continue;
    }
    merged.runs.push_back(std::move(it->second.first));
  }
  return merged;
}

}  // namespace tether::campaign
