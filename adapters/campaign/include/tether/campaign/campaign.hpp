// SPDX-License-Identifier: Apache-2.0
// Test campaigns (`tether test CAMPAIGN`, docs/campaigns.md): a campaign file lists
// scenarios crossed with seeds, override sets, fault sets and firmware builds, and
// firmware-regression replays of recordings. This file reads it (positioned errors, as
// scenario files: src/campaign_file.cpp), expands it into a stable list of runs
// (src/plan.cpp), judges each finished run from its exit status and session folder
// (src/verdict.cpp), and writes and merges the results (campaign.json: src/results.cpp;
// junit.xml, index.html: src/pages.cpp). Running the runs is runner.hpp's.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tether::campaign {

/// A scenario of the campaign: its file and the overrides that go with it.
struct CampaignScenario {
  std::string name;                    // the label in run names (default: the file's stem)
  std::string path;                    // as written in the campaign file
  std::string resolved;                // absolute
  std::vector<std::string> overrides;  // its `set:`, as PATH=VALUE
};

/// A named set of overrides (`variants:`).
struct CampaignVariant {
  std::string name;
  std::vector<std::string> overrides;
};

/// A named list of faults added to the scenario's `faults:` (`fault_sets:`); empty: no faults.
struct CampaignFaultSet {
  std::string name;
  std::vector<std::string> faults;  // each one fault as YAML flow text
};

/// A firmware build: what an endpoint's launch becomes (`firmware:`).
struct CampaignFirmware {
  std::string name;
  std::string endpoint;
  std::string launch;    // as written: "path [args]" or "qemu:image.elf"
  std::string resolved;  // variables expanded, relative paths made absolute against the campaign's folder
};

/// A recorded session replayed against each firmware build (`replays:`).
struct CampaignReplay {
  std::string name;
  std::string recording;  // as written
  std::string resolved;   // absolute
  bool closed_loop = false;
  double tolerance = 1e-6;
};

struct Campaign {
  std::string name;
  std::string description;
  std::string path;  // the campaign file
  std::vector<CampaignScenario> scenarios;
  std::vector<std::uint64_t> seeds;    // empty: each scenario's own seed
  std::vector<std::string> overrides;  // `set:`: every scenario run
  std::vector<CampaignVariant> variants;
  std::vector<CampaignFaultSet> fault_sets;
  std::vector<CampaignFirmware> firmware;
  std::vector<CampaignReplay> replays;
  double run_timeout_s = 600;
  bool keep_passed_recordings = true;  // `keep_recordings: all` (true) or `failed`
  std::vector<std::string> campaign_overrides;  // `--campaign-set` as given
};

/// Reads a campaign file; `campaign_overrides` (PATH=VALUE, as `--set` for scenarios) change
/// its keys first. Throws runtime::ConfigError with every problem, each positioned.
Campaign load_campaign(const std::string& path, const std::vector<std::string>& campaign_overrides = {});
/// Same for text in memory; `label` stands for the file (relative paths are relative to its folder).
Campaign parse_campaign(const std::string& text, const std::string& label,
                        const std::vector<std::string>& campaign_overrides = {});

/// One run of the expanded campaign.
struct PlannedRun {
  std::size_t index = 0;          // in the expanded order, 0-based; shards slice by it
  std::string name;               // unique in the campaign: "default seed=3 faults=compass stuck"
  std::string classname;          // "<campaign>.<scenario or replay>"
  std::string folder;             // the run's session folder, relative to the campaign's output folder
  bool replay = false;            // `tether replay` rather than `tether run`
  std::vector<std::string> args;  // the tether arguments, without --out
  nlohmann::json labels;          // which scenario, seed, variant, fault set, firmware, recording
};

/// The campaign's runs in a stable order: for each scenario, firmware build, variant and
/// fault set, every seed; then each replay with each firmware build. `extra_overrides` (the
/// command line's `--set`) go last on every scenario run.
std::vector<PlannedRun> expand_campaign(const Campaign& campaign, const std::vector<std::string>& extra_overrides);

/// A text that changes whenever the expanded runs change (names, settings as written; not the
/// absolute paths of this machine): slices of two different campaigns are not merged.
std::string campaign_fingerprint(const Campaign& campaign, const std::vector<PlannedRun>& runs);

/// `--shard K/N`: the runs whose index i has i mod N == K - 1.
std::vector<PlannedRun> shard_runs(const std::vector<PlannedRun>& runs, std::size_t k, std::size_t n);
/// Parses "K/N" (1 <= K <= N); false with a message.
bool parse_shard(const std::string& text, std::size_t& k, std::size_t& n, std::string* error);

/// An expectation (or a replay's comparison) that failed.
struct RunFailure {
  std::string name;
  std::optional<std::uint64_t> step;
  std::optional<double> time_s;
  std::optional<double> worst;
  std::string detail;  // "worst 2.027", the reason for "never evaluated"
  /// "holds 2 m depth: first failing at step 1199 (t = 12.000 s), worst 2.027"
  std::string message() const;
};

/// Every expectation of a run as its summary judged it: the campaign page's matrix.
struct ExpectationOutcome {
  std::string name;
  std::string verdict;           // PASS, FAIL or SKIPPED
  std::optional<double> margin;  // how far inside its condition the worst value was (< 0: outside)
};
enum class RunVerdict : std::uint8_t { pass, fail, not_run };
const char* to_string(RunVerdict verdict);

struct RunResult {
  PlannedRun plan;
  RunVerdict verdict = RunVerdict::not_run;
  std::optional<int> exit_code;  // nothing: not started, or ended by a signal
  std::string outcome;           // the session's outcome from its summary ("completed", ...), if any
  std::string reason;            // one line: why it failed or did not run
  std::vector<RunFailure> failures;
  std::vector<ExpectationOutcome> expectations;  // every one (a run's summary.json), in its order
  double duration_s = 0;
  std::string folder;  // absolute, in memory; relative to the results' folder in campaign.json
  std::string report;  // report.html (or replay.json) in `folder` if it was written, else ""
  std::string log;     // output.txt in `folder` if written, else ""
  std::string recording;  // recording.mcap in `folder` if it was written and kept, else ""
};

/// How a run ended, as the runner saw it.
struct RunEnd {
  bool started = false;  // false: could not be started (`start_error` says why)
  std::string start_error;
  int wait_status = 0;     // as waitpid() gives it
  bool timed_out = false;  // stopped at run_timeout_s
  bool stopped = false;    // stopped because the campaign was interrupted
  double duration_s = 0;
  std::string output_tail;  // the last few kB of what it printed
};

/// Judges one finished run from how it ended and what it wrote into `folder` (summary.json
/// for a run, replay.json for a replay): pass only for exit 0.
RunResult judge_run(const PlannedRun& plan, const RunEnd& end, const std::string& folder);
/// A run that never started (the campaign was stopped first).
RunResult not_run(const PlannedRun& plan, const std::string& reason);

struct CampaignResult {
  std::string name;
  std::string file;         // the campaign file as given
  std::string fingerprint;  // campaign_fingerprint()
  std::size_t total_runs = 0;
  std::optional<std::pair<std::size_t, std::size_t>> shard;  // K, N
  std::vector<std::string> merged_from;                      // --merge: the folders
  bool interrupted = false;
  int jobs = 0;
  std::string started;  // local time, ISO 8601
  double wall_s = 0;
  std::vector<RunResult> runs;  // by index

  std::size_t passed() const;
  std::size_t failed() const;
  std::size_t not_run() const;
};

/// `campaign.json`: paths relative to `dir`, the folder it is written into.
nlohmann::json campaign_json(const CampaignResult& result, const std::string& dir);
/// Reads `dir/campaign.json`; throws std::runtime_error with a message for people.
CampaignResult read_campaign_json(const std::string& dir);

/// JUnit XML: one testcase per run; a failed expectation is a <failure> naming it and its
/// first failing step; links (relative to `dir`) to each run's report.
std::string junit_xml(const CampaignResult& result, const std::string& dir);
/// A self-contained HTML page of every run: verdict, outcome, exit code, failed
/// expectations, link to its report (relative to `dir`).
std::string index_html(const CampaignResult& result, const std::string& dir);
/// The verdict table `tether test` prints.
std::string verdict_table(const CampaignResult& result);

/// Writes campaign.json, junit.xml and index.html into `dir`; false with a message.
bool write_campaign_results(const CampaignResult& result, const std::string& dir, std::string* error);

/// When `tether test` rewrites its three result files as runs finish: after a finished run,
/// unless the last rewrite ended less than `factor` times its own duration ago. A rewrite grows
/// with the runs so far, so one after every run made a campaign's rewriting grow with the
/// square of its runs and, with many workers, the campaign's one process the bottleneck; paced,
/// rewriting takes at most 1 / (factor + 1) of that process's time however fast runs finish,
/// and a campaign killed outright leaves results at most `factor` rewrites' time old. The
/// results are written again at the end whatever this says.
class ResultsPacing {
 public:
  using Clock = std::chrono::steady_clock;
  explicit ResultsPacing(double factor = 20) : factor_(factor) {}
  /// true when a rewrite may start at `now`
  bool due(Clock::time_point now) const { return now >= next_; }
  /// a rewrite ran from `started` to `ended`
  void wrote(Clock::time_point started, Clock::time_point ended) {
    next_ = ended + std::chrono::duration_cast<Clock::duration>((ended - started) * factor_);
  }

 private:
  double factor_;
  Clock::time_point next_{};
};

/// `--merge`: the slices' results as one; their runs must come from the same campaign
/// (fingerprint) and not overlap; runs no slice has are failed ("not run by any slice").
/// Throws std::runtime_error with a message for people.
CampaignResult merge_campaign_results(const std::vector<std::string>& dirs);

}  // namespace tether::campaign
