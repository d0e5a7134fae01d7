// SPDX-License-Identifier: Apache-2.0
// A campaign expanded into its runs, in a stable order (what --shard and --merge rely on), the
// fingerprint that tells two campaigns apart, and the slices of --shard.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "tether/campaign/campaign.hpp"
#include "tether/recording/json_text.hpp"
#include "text_util.hpp"

namespace tether::campaign {

namespace {

std::string slug(const std::string& name) {
  std::string out;
  for (const char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c))
      out += static_cast<char>(std::tolower(c));
    else if (!out.empty() && out.back() != '-')
      out += '-';
    if (out.size() >= 48) break;
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "run" : out;
}

// the shortest text that reads back as the same double
std::string format_number(double v) {
  char buf[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::uint64_t fnv1a(std::uint64_t h, const std::string& s) {
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

// a dimension's elements, or one "nothing" (null) when the campaign leaves it out
template <typename T>
std::vector<const T*> or_nothing(const std::vector<T>& list) {
  std::vector<const T*> v;
  for (const auto& x : list) v.push_back(&x);
  if (v.empty()) v.push_back(nullptr);
  return v;
}

// one scenario run: its name, labels and `tether run` arguments
PlannedRun scenario_run(const Campaign& c, const CampaignScenario& sc, const CampaignFirmware* fw,
                        const CampaignVariant* variant, const CampaignFaultSet* faults,
                        const std::optional<std::uint64_t>& seed, const std::vector<std::string>& extra_overrides) {
  PlannedRun r;
  r.name = sc.name;
  r.classname = c.name + "." + sc.name;
  r.labels["scenario"] = sc.name;
  r.labels["scenario_file"] = sc.path;
  // --set in order: the campaign's, the scenario's, the variant's, the faults, the
  // firmware build, the seed, the command line's (the last word wins)
  std::vector<std::string> sets = c.overrides;
  sets.insert(sets.end(), sc.overrides.begin(), sc.overrides.end());
  std::vector<std::string> written = sets;  // as the campaign says it (for the fingerprint)
  if (fw) {
    r.name += " fw=" + fw->name;
    r.labels["firmware"] = fw->name;
    r.labels["firmware_launch"] = fw->launch;
  }
  if (variant) {
    r.name += " set=" + variant->name;
    r.labels["variant"] = variant->name;
    sets.insert(sets.end(), variant->overrides.begin(), variant->overrides.end());
    written.insert(written.end(), variant->overrides.begin(), variant->overrides.end());
  }
  if (faults) {
    r.name += " faults=" + faults->name;
    r.labels["fault_set"] = faults->name;
    for (const auto& f : faults->faults) {
      sets.push_back("faults[+]=" + f);
      written.push_back("faults[+]=" + f);
    }
  }
  if (fw) {
    YAML::Node launch(YAML::NodeType::Map);
    if (fw->resolved.rfind("qemu:", 0) == 0) {
      launch["qemu"] = fw->resolved.substr(5);
    } else {
      std::istringstream words(fw->resolved);
      YAML::Node command(YAML::NodeType::Sequence);
      for (std::string w; words >> w;) command.push_back(w);
      launch["command"] = command;
    }
    sets.push_back("endpoints." + fw->endpoint + ".launch=" + flow_text(launch));
    written.push_back("endpoints." + fw->endpoint + ".launch=" + fw->launch);
  }
  if (seed) {
    r.name += " seed=" + std::to_string(*seed);
    r.labels["seed"] = *seed;
    sets.push_back("loop.seed=" + std::to_string(*seed));
    written.push_back("loop.seed=" + std::to_string(*seed));
  }
  sets.insert(sets.end(), extra_overrides.begin(), extra_overrides.end());
  written.insert(written.end(), extra_overrides.begin(), extra_overrides.end());
  r.labels["set"] = written;
  r.args = {"run", sc.resolved, "--quiet"};
  for (const auto& s : sets) {
    r.args.push_back("--set");
    r.args.push_back(s);
  }
  return r;
}

// one firmware-regression replay: a recording against a build (or verified, without builds)
PlannedRun replay_run(const Campaign& c, const CampaignReplay& rp, const CampaignFirmware* fw) {
  PlannedRun r;
  r.replay = true;
  r.name = "replay " + rp.name;
  r.classname = c.name + ".replay";
  r.labels["recording"] = rp.recording;
  r.args = {"replay", rp.resolved, "--quiet", "--json"};
  if (fw) {
    r.name += " fw=" + fw->name;
    r.labels["firmware"] = fw->name;
    r.labels["firmware_launch"] = fw->launch;
    r.args.push_back("--firmware");
    r.args.push_back(fw->endpoint + "=" + fw->resolved);
    if (rp.closed_loop) r.args.push_back("--closed-loop");
    r.args.push_back("--tolerance");
    r.args.push_back(format_number(rp.tolerance));
    r.labels["closed_loop"] = rp.closed_loop;
    r.labels["tolerance"] = rp.tolerance;
  } else {
    r.name += " verify";
    r.args.push_back("--verify");
  }
  return r;
}

}  // namespace

std::vector<PlannedRun> expand_campaign(const Campaign& c, const std::vector<std::string>& extra_overrides) {
  std::vector<PlannedRun> runs;
  // each dimension the campaign leaves out is one "nothing" element
  const std::vector<const CampaignFirmware*> builds = or_nothing(c.firmware);
  const std::vector<const CampaignVariant*> variants = or_nothing(c.variants);
  const std::vector<const CampaignFaultSet*> fault_sets = or_nothing(c.fault_sets);
  std::vector<std::optional<std::uint64_t>> seeds;
  for (const auto s : c.seeds) seeds.emplace_back(s);
  if (seeds.empty()) seeds.emplace_back();

  for (const auto& sc : c.scenarios)
    for (const CampaignFirmware* fw : builds)
      for (const CampaignVariant* variant : variants)
        for (const CampaignFaultSet* faults : fault_sets)
          for (const auto& seed : seeds)
            runs.push_back(scenario_run(c, sc, fw, variant, faults, seed, extra_overrides));

  // firmware-regression replays: each recording against each build (or verified, without builds)
  for (const auto& rp : c.replays)
    for (const CampaignFirmware* fw : builds) runs.push_back(replay_run(c, rp, fw));

  const std::size_t width = std::max<std::size_t>(3, std::to_string(runs.empty() ? 0 : runs.size() - 1).size());
  for (std::size_t i = 0; i < runs.size(); ++i) {
    runs[i].index = i;
    std::string number = std::to_string(i);
    number.insert(0, width - number.size(), '0');
    runs[i].folder = number + "-" + slug(runs[i].name);
  }
  return runs;
}

std::string campaign_fingerprint(const Campaign& campaign, const std::vector<PlannedRun>& runs) {
  std::uint64_t h = 1469598103934665603ULL;
  h = fnv1a(h, campaign.name + "\n" + std::to_string(runs.size()) + "\n");
  for (const auto& r : runs) h = fnv1a(h, r.name + "\n" + runtime::json_text(r.labels) + "\n");
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::vector<PlannedRun> shard_runs(const std::vector<PlannedRun>& runs, std::size_t k, std::size_t n) {
  std::vector<PlannedRun> out;
  for (const auto& r : runs)
    if (r.index % n == k - 1) out.push_back(r);
  return out;
}

bool parse_shard(const std::string& text, std::size_t& k, std::size_t& n, std::string* error) {
  const auto fail = [&] {
    if (error) *error = "--shard " + text + ": expected K/N with 1 <= K <= N (--shard 2/3: the second of three slices)";
    return false;
  };
  const std::size_t slash = text.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 >= text.size()) return fail();
  const std::string a = text.substr(0, slash), b = text.substr(slash + 1);
  if (a.find_first_not_of("0123456789") != std::string::npos ||
      b.find_first_not_of("0123456789") != std::string::npos || a.size() > 6 || b.size() > 6)
    return fail();
  k = std::stoul(a);
  n = std::stoul(b);
  if (k < 1 || n < 1 || k > n) return fail();
  return true;
}

}  // namespace tether::campaign
