// SPDX-License-Identifier: Apache-2.0
#include "tether/adapters/campaign.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include <yaml-cpp/yaml.h>

#include "tether/adapters/child_process.hpp"
#include "tether/adapters/config_text.hpp"
#include "tether/recording/json_text.hpp"
#include "tether/scenario/config.hpp"

namespace tether::adapters {

namespace fs = std::filesystem;
using runtime::ConfigNode;

namespace {

// a YAML value as one line of YAML (flow style), to go after `--set PATH=`
std::string flow_text(const YAML::Node& node) {
  YAML::Emitter out;
  out.SetMapFormat(YAML::Flow);
  out.SetSeqFormat(YAML::Flow);
  out << node;
  return out.c_str();
}

// `set:`: a map of PATH: VALUE, each becoming one `--set PATH=VALUE`
void parse_set(const ConfigNode& node, std::vector<std::string>& out) {
  const YAML::Node& y = node.yaml();
  if (!y.IsDefined() || y.IsNull()) return;
  if (!y.IsMap()) {
    node.error("expected a map of PATH: VALUE (loop.steps: 400, endpoints.firmware.deadline_ms: 5), got " +
               runtime::describe_value(y));
    return;
  }
  for (const auto& kv : y) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
    if (key.empty() || key.find('=') != std::string::npos || key.find(' ') != std::string::npos) {
      ConfigNode(node.context_ptr(), kv.first, node.path(), kv.first.Mark())
          .error("expected a key path (loop.steps, vehicles[0].bodies[0].mass_kg, faults[+]), got " +
                 runtime::describe_value(kv.first));
      continue;
    }
    out.push_back(key + "=" + flow_text(kv.second));
  }
}

// a name used in run names and the index: text on one line
bool plain_name(const std::string& name) {
  return !name.empty() && name.find_first_of("\n\r\t") == std::string::npos && runtime::valid_utf8(name);
}

// names must be unique within their list
void check_unique(const ConfigNode& list, const std::vector<std::string>& names, const char* what) {
  std::set<std::string> seen;
  for (std::size_t i = 0; i < names.size(); ++i)
    if (!names[i].empty() && !seen.insert(names[i]).second)
      list.at(i).error(std::string(what) + " \"" + names[i] + "\" given twice: names must be unique");
}

std::string absolute_against(const std::string& base, const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  return (fs::path(base) / path).lexically_normal().string();
}

void parse_scenarios(const ConfigNode& list, const std::string& base, Campaign& c) {
  if (!list.expect_sequence()) return;
  std::vector<std::string> names;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const ConfigNode e = list.at(i);
    CampaignScenario s;
    if (e.yaml().IsScalar()) {
      s.path = e.yaml().Scalar();
    } else if (e.is_map()) {
      e.expect_map({"path", "name", "set"});
      s.path = e.string("path");
      s.name = e.string_or("name", "");
      parse_set(e["set"], s.overrides);
    } else {
      e.error("expected a scenario file (a path) or a map {path, name, set}, got " + runtime::describe_value(e.yaml()));
      continue;
    }
    if (!s.path.empty()) s.resolved = resolve_config_text(e.is_map() ? e["path"] : e, s.path, base, false);
    s.resolved = absolute_against(base, s.resolved);
    if (s.name.empty()) s.name = fs::path(s.path).stem().string();
    if (!plain_name(s.name)) e.error("expected a scenario name on one line");
    names.push_back(s.name);
    c.scenarios.push_back(std::move(s));
  }
  check_unique(list, names, "scenario name (give one a `name:`)");
}

void parse_seeds(const ConfigNode& node, Campaign& c) {
  const YAML::Node& y = node.yaml();
  if (!y.IsDefined() || y.IsNull()) return;
  if (y.IsMap()) {
    node.expect_map({"first", "count"});
    const std::uint64_t first = node.unsigned_or("first", 1);
    if (!node.has("count")) node.expected("count", "a whole number from 1 to 1000000");
    const std::int64_t count = node.integer_or("count", 0, 1, 1'000'000);
    for (std::int64_t i = 0; i < count; ++i) c.seeds.push_back(first + static_cast<std::uint64_t>(i));
    return;
  }
  if (!y.IsSequence()) {
    node.error("expected a list of seeds ([1, 2, 3]) or {first: 1, count: 20}, got " + runtime::describe_value(y));
    return;
  }
  std::set<std::uint64_t> seen;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const ConfigNode e = node.at(i);
    std::uint64_t v = 0;
    bool ok = e.yaml().IsScalar() && !e.yaml().Scalar().empty() && e.yaml().Scalar()[0] != '-';
    if (ok) {
      try {
        v = e.yaml().as<std::uint64_t>();
      } catch (const YAML::Exception&) {
        ok = false;
      }
    }
    if (!ok) {
      e.error("expected a whole number >= 0, got " + runtime::describe_value(e.yaml()));
      continue;
    }
    if (!seen.insert(v).second) {
      e.error("seed " + std::to_string(v) + " given twice");
      continue;
    }
    c.seeds.push_back(v);
  }
}

void parse_variants(const ConfigNode& list, Campaign& c) {
  if (!list.expect_sequence()) return;
  std::vector<std::string> names;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const ConfigNode e = list.at(i);
    if (!e.expect_map({"name", "set"})) continue;
    CampaignVariant v;
    v.name = e.string("name");
    if (!v.name.empty() && !plain_name(v.name)) e["name"].error("expected a name on one line");
    parse_set(e["set"], v.overrides);
    names.push_back(v.name);
    c.variants.push_back(std::move(v));
  }
  check_unique(list, names, "variant");
}

void parse_fault_sets(const ConfigNode& list, Campaign& c) {
  if (!list.expect_sequence()) return;
  std::vector<std::string> names;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const ConfigNode e = list.at(i);
    if (!e.expect_map({"name", "faults"})) continue;
    CampaignFaultSet f;
    f.name = e.string("name");
    if (!f.name.empty() && !plain_name(f.name)) e["name"].error("expected a name on one line");
    const ConfigNode faults = e["faults"];
    if (faults.expect_sequence())
      for (std::size_t k = 0; k < faults.size(); ++k) {
        // each fault is checked by the scenario it is added to (docs/scenario.md, faults[])
        if (!faults.at(k).is_map()) {
          faults.at(k).error("expected a fault (a map: device or endpoint, kind, trigger), got " +
                             runtime::describe_value(faults.at(k).yaml()));
          continue;
        }
        f.faults.push_back(flow_text(faults.at(k).yaml()));
      }
    names.push_back(f.name);
    c.fault_sets.push_back(std::move(f));
  }
  check_unique(list, names, "fault set");
}

// "path [args]" or "qemu:image.elf", variables expanded, paths made absolute against `base`
std::string resolve_launch(const ConfigNode& node, const std::string& raw, const std::string& base) {
  const std::string text = resolve_config_text(node, raw, base, false);
  if (text.rfind("qemu:", 0) == 0) return "qemu:" + absolute_against(base, text.substr(5));
  std::istringstream words(text);
  std::string first, out;
  words >> first;
  out = first.find('/') != std::string::npos ? absolute_against(base, first) : first;
  for (std::string w; words >> w;) out += " " + w;
  return out;
}

void parse_firmware(const ConfigNode& list, const std::string& base, Campaign& c) {
  if (!list.expect_sequence()) return;
  std::vector<std::string> names;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const ConfigNode e = list.at(i);
    if (!e.expect_map({"name", "endpoint", "launch"})) continue;
    CampaignFirmware f;
    f.name = e.string("name");
    if (!f.name.empty() && !plain_name(f.name)) e["name"].error("expected a name on one line");
    f.endpoint = e.string("endpoint");
    if (f.endpoint.find_first_of(".[]= ") != std::string::npos)
      e["endpoint"].error("expected an endpoint name (no '.', '[', ']', '=' or space)");
    f.launch = e.string("launch");
    if (f.launch == "qemu:") e["launch"].error("expected qemu:IMAGE.elf, got \"qemu:\" alone");
    if (!f.launch.empty()) f.resolved = resolve_launch(e["launch"], f.launch, base);
    names.push_back(f.name);
    c.firmware.push_back(std::move(f));
  }
  check_unique(list, names, "firmware build");
}

void parse_replays(const ConfigNode& list, const std::string& base, Campaign& c) {
  if (!list.expect_sequence()) return;
  std::vector<std::string> names;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const ConfigNode e = list.at(i);
    if (!e.expect_map({"recording", "name", "closed_loop", "tolerance"})) continue;
    CampaignReplay r;
    r.recording = e.string("recording");
    if (!r.recording.empty())
      r.resolved = absolute_against(base, resolve_config_text(e["recording"], r.recording, base, false));
    r.name = e.string_or("name", fs::path(r.recording).stem().string());
    if (!plain_name(r.name)) e.error("expected a replay name on one line");
    r.closed_loop = e.boolean_or("closed_loop", false);
    r.tolerance = e.number_or("tolerance", 1e-6, runtime::Range::non_negative());
    names.push_back(r.name);
    c.replays.push_back(std::move(r));
  }
  check_unique(list, names, "replay name (give one a `name:`)");
}

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

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// the lines of a failed run's output worth quoting: its errors, not its log chatter
std::string error_lines(const std::string& output) {
  std::vector<std::string> lines;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty()) continue;
    if (line.find("] [info] ") != std::string::npos || line.find("] [debug] ") != std::string::npos ||
        line.find("] [trace] ") != std::string::npos)
      continue;
    // the count after a list of config errors
    if (line.size() < 16 && line.find(" error") != std::string::npos &&
        std::isdigit(static_cast<unsigned char>(line[0])))
      continue;
    lines.push_back(line);
  }
  const std::size_t from = lines.size() > 4 ? lines.size() - 4 : 0;
  std::string out;
  for (std::size_t i = from; i < lines.size(); ++i) out += (out.empty() ? "" : "; ") + lines[i];
  return out.empty() ? "(it printed nothing)" : out;
}

std::string relative_to(const std::string& path, const std::string& dir) {
  if (path.empty()) return path;
  std::error_code ec;
  const fs::path rel = fs::relative(fs::absolute(path, ec), fs::absolute(dir, ec), ec);
  return ec || rel.empty() ? path : rel.string();
}

std::string xml_escape(const std::string& text) {
  // line breaks stay; other control bytes and bytes that are not UTF-8 become \xNN (XML
  // 1.0 allows no control characters but tab and line breaks)
  std::string safe;
  for (std::size_t from = 0;;) {
    const std::size_t nl = text.find('\n', from);
    safe += runtime::printable(text.substr(from, nl == std::string::npos ? std::string::npos : nl - from));
    if (nl == std::string::npos) break;
    safe += '\n';
    from = nl + 1;
  }
  std::string out;
  for (const char ch : safe) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += ch;
    }
  }
  return out;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s);
  return buf;
}

}  // namespace

Campaign parse_campaign(const std::string& text, const std::string& label,
                        const std::vector<std::string>& campaign_overrides) {
  const ConfigNode root = runtime::load_config_text(text, label);
  root.context().override_option = "--campaign-set";
  runtime::apply_overrides(root, campaign_overrides);
  Campaign c;
  c.path = label;
  c.campaign_overrides = campaign_overrides;
  std::error_code ec;
  const std::string base =
      fs::absolute(fs::path(label).has_parent_path() ? fs::path(label).parent_path() : fs::current_path(ec), ec)
          .lexically_normal()
          .string();
  const ConfigNode& top = root;
  if (!top.is_map()) {
    top.error("expected a campaign map (scenarios, seeds, set, variants, fault_sets, firmware, replays), got " +
              runtime::describe_value(top.yaml()));
    throw runtime::ConfigError(root.context().errors);
  }
  top.expect_map({"name", "description", "scenarios", "seeds", "set", "variants", "fault_sets", "firmware", "replays",
                  "run_timeout_s"});
  c.name = top.string_or("name", fs::path(label).stem().string());
  if (!c.name.empty() && !plain_name(c.name)) top["name"].error("expected a name on one line");
  c.description = top.string_or("description", "");
  parse_scenarios(top["scenarios"], base, c);
  parse_seeds(top["seeds"], c);
  parse_set(top["set"], c.overrides);
  parse_variants(top["variants"], c);
  parse_fault_sets(top["fault_sets"], c);
  parse_firmware(top["firmware"], base, c);
  parse_replays(top["replays"], base, c);
  c.run_timeout_s = top.number_or("run_timeout_s", 600, runtime::Range::between(0.001, 1e6));
  if (c.scenarios.empty() && c.replays.empty() && top.is_map())
    top.error("a campaign needs at least one of `scenarios` and `replays`");
  if (!root.context().errors.empty()) throw runtime::ConfigError(root.context().errors);
  return c;
}

Campaign load_campaign(const std::string& path, const std::vector<std::string>& campaign_overrides) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw runtime::ConfigError({path + ": cannot open the file"});
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_campaign(buffer.str(), path, campaign_overrides);
}

std::vector<PlannedRun> expand_campaign(const Campaign& c, const std::vector<std::string>& extra_overrides) {
  std::vector<PlannedRun> runs;
  // each dimension the campaign leaves out is one "nothing" element
  const std::vector<const CampaignFirmware*> builds = [&] {
    std::vector<const CampaignFirmware*> v;
    for (const auto& f : c.firmware) v.push_back(&f);
    if (v.empty()) v.push_back(nullptr);
    return v;
  }();
  const std::vector<const CampaignVariant*> variants = [&] {
    std::vector<const CampaignVariant*> v;
    for (const auto& x : c.variants) v.push_back(&x);
    if (v.empty()) v.push_back(nullptr);
    return v;
  }();
  const std::vector<const CampaignFaultSet*> fault_sets = [&] {
    std::vector<const CampaignFaultSet*> v;
    for (const auto& x : c.fault_sets) v.push_back(&x);
    if (v.empty()) v.push_back(nullptr);
    return v;
  }();
  std::vector<std::optional<std::uint64_t>> seeds;
  for (const auto s : c.seeds) seeds.emplace_back(s);
  if (seeds.empty()) seeds.emplace_back();

  for (const auto& sc : c.scenarios)
    for (const CampaignFirmware* fw : builds)
      for (const CampaignVariant* variant : variants)
        for (const CampaignFaultSet* faults : fault_sets)
          for (const auto& seed : seeds) {
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
            runs.push_back(std::move(r));
          }

  // firmware-regression replays: each recording against each build (or verified, without builds)
  for (const auto& rp : c.replays)
    for (const CampaignFirmware* fw : builds) {
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
      runs.push_back(std::move(r));
    }

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

std::string RunFailure::message() const {
  std::string m = name;
  char buf[96];
  if (step) {
    std::snprintf(buf, sizeof buf, ": first failing at step %llu", static_cast<unsigned long long>(*step));
    m += buf;
    if (time_s) {
      std::snprintf(buf, sizeof buf, " (t = %.3f s)", *time_s);
      m += buf;
    }
  } else {
    m += ": failed";
  }
  if (!detail.empty()) m += ", " + detail;
  return m;
}

const char* to_string(RunVerdict verdict) {
  switch (verdict) {
    case RunVerdict::pass: return "pass";
    case RunVerdict::fail: return "fail";
    case RunVerdict::not_run: return "not_run";
  }
  return "?";
}

RunResult not_run(const PlannedRun& plan, const std::string& reason) {
  RunResult r;
  r.plan = plan;
  r.verdict = RunVerdict::not_run;
  r.reason = reason;
  return r;
}

RunResult judge_run(const PlannedRun& plan, const RunEnd& end, const std::string& folder) {
  RunResult r;
  r.plan = plan;
  r.folder = folder;
  r.duration_s = end.duration_s;
  r.verdict = RunVerdict::fail;
  std::error_code ec;
  if (fs::exists(fs::path(folder) / "output.txt", ec)) r.log = (fs::path(folder) / "output.txt").string();
  if (!end.started) {
    r.reason = "could not start: " + end.start_error;
    return r;
  }
  const std::string what = plan.replay ? "tether replay" : "tether run";

  // what the run wrote: the session's summary, or the replay's result
  nlohmann::json summary;
  const fs::path file = fs::path(folder) / (plan.replay ? "replay.json" : "summary.json");
  if (fs::exists(file, ec)) {
    try {
      summary = nlohmann::json::parse(read_text(file));
    } catch (const nlohmann::json::exception&) {
      summary = nlohmann::json();
    }
  }
  if (!plan.replay && fs::exists(fs::path(folder) / "report.html", ec))
    r.report = (fs::path(folder) / "report.html").string();
  if (plan.replay && summary.is_object()) r.report = file.string();
  if (summary.is_object()) r.outcome = summary.value("outcome", "");
  const std::string summary_reason = summary.is_object() && summary.contains("reason") && summary["reason"].is_string()
                                         ? summary["reason"].get<std::string>()
                                         : "";

  // failed expectations (a run) or comparisons (a replay), whatever the exit code
  if (!plan.replay && summary.is_object() && summary.contains("expectations") && summary["expectations"].is_array()) {
    for (const auto& x : summary["expectations"]) {
      if (x.value("verdict", "") != "FAIL") continue;
      RunFailure f;
      f.name = x.value("name", "?");
      if (x.contains("first_failing_step") && x["first_failing_step"].is_number())
        f.step = x["first_failing_step"].get<std::uint64_t>();
      if (x.contains("first_failing_time_s") && x["first_failing_time_s"].is_number())
        f.time_s = x["first_failing_time_s"].get<double>();
      if (x.contains("worst") && x["worst"].is_number()) {
        f.worst = x["worst"].get<double>();
        char buf[64];
        std::snprintf(buf, sizeof buf, "%s %.4g", x.value("when", "").rfind("eventually", 0) == 0 ? "closest" : "worst",
                      *f.worst);
        f.detail = buf;
      }
      if (x.contains("reason") && x["reason"].is_string())
        f.detail += (f.detail.empty() ? "" : "; ") + x["reason"].get<std::string>();
      r.failures.push_back(std::move(f));
    }
  }
  if (plan.replay && summary.is_object()) {
    if (summary.contains("identical") && summary["identical"] == false) {
      RunFailure f;
      f.name = "replayed states match the recording";
      f.detail = summary.value("first_divergence", "");
      r.failures.push_back(std::move(f));
    }
    if (summary.contains("firmware_regression"))
      for (const auto& fr : summary["firmware_regression"]) {
        if (!fr.value("diverged", false)) continue;
        RunFailure f;
        f.name = "commands of endpoint \"" + fr.value("endpoint", "?") + "\" match the recorded firmware";
        if (fr.contains("first_divergent_step") && fr["first_divergent_step"].is_number())
          f.step = fr["first_divergent_step"].get<std::uint64_t>();
        if (fr.contains("new_firmware_failure"))
          f.detail = "the new firmware failed: " + fr["new_firmware_failure"].value("reason", "?");
        else if (fr.contains("channels"))
          for (const auto& ch : fr["channels"])
            if (f.step && ch.contains("first_divergent_step") && ch["first_divergent_step"] == *f.step) {
              char buf[160];
              const auto num = [](const nlohmann::json& v) { return v.is_number() ? v.get<double>() : NAN; };
              std::snprintf(buf, sizeof buf, "%s: recorded %.6g, new %.6g", ch.value("name", "?").c_str(),
                            num(ch.value("first_recorded", nlohmann::json())),
                            num(ch.value("first_new", nlohmann::json())));
              f.detail = buf;
              break;
            }
        r.failures.push_back(std::move(f));
      }
  }

  const std::string timeout =
      end.timed_out ? "timed out after " + seconds_text(end.duration_s) + " s (run_timeout_s) and was stopped; " : "";
  if (!WIFEXITED(end.wait_status)) {
    r.reason = timeout + what + " " + ChildProcess::describe_status(end.wait_status) +
               (end.stopped ? " (the campaign was interrupted)" : "");
    return r;
  }
  const int code = WEXITSTATUS(end.wait_status);
  r.exit_code = code;
  if (code == 0 && !end.timed_out) {
    r.verdict = RunVerdict::pass;
    return r;
  }
  switch (code) {
    case 2: r.reason = "could not start (exit 2): " + error_lines(end.output_tail); break;
    case 3: r.reason = "an endpoint did not start (exit 3): " + error_lines(end.output_tail); break;
    case 1:
      if (plan.replay)
        r.reason = r.failures.empty() ? "the replay failed (exit 1): " + error_lines(end.output_tail)
                                      : "the replay diverged (exit 1)";
      else
        r.reason = "aborted (exit 1): " + (summary_reason.empty() ? error_lines(end.output_tail) : summary_reason);
      break;
    case 4:
      r.reason = "failed (exit 4): " + (summary_reason.empty() ? error_lines(end.output_tail) : summary_reason);
      break;
    case 5: r.reason = "completed with faults (exit 5): " + summary_reason; break;
    case 6: {
      std::string names;
      for (const auto& f : r.failures) names += (names.empty() ? "" : ", ") + f.name;
      r.reason = std::to_string(r.failures.size()) + (r.failures.size() == 1 ? " expectation" : " expectations") +
                 " failed (exit 6): " + names;
      break;
    }
    case 130: {
      r.reason = "stopped (exit 130)";
      if (summary.is_object() && summary.contains("steps") && summary.contains("steps_planned"))
        r.reason += " after " + std::to_string(summary["steps"].get<std::uint64_t>()) + " of " +
                    std::to_string(summary["steps_planned"].get<std::uint64_t>()) + " steps";
      if (end.stopped) r.reason += ": the campaign was interrupted";
      break;
    }
    default: r.reason = what + " exited with status " + std::to_string(code) + ": " + error_lines(end.output_tail);
  }
  r.reason = timeout + r.reason;
  return r;
}

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
    for (const auto& d : result.merged_from) j["merged_from"].push_back(relative_to(d, dir));
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
    x["duration_s"] = r.duration_s;
    x["folder"] = r.folder.empty() ? nlohmann::json(nullptr) : nlohmann::json(relative_to(r.folder, dir));
    x["report"] = r.report.empty() ? nlohmann::json(nullptr) : nlohmann::json(relative_to(r.report, dir));
    x["log"] = r.log.empty() ? nlohmann::json(nullptr) : nlohmann::json(relative_to(r.log, dir));
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
      run.duration_s = x.value("duration_s", 0.0);
      run.folder = path_in(x.value("folder", nlohmann::json()));
      run.plan.folder = run.folder.empty() ? std::string() : fs::path(run.folder).filename().string();
      run.report = path_in(x.value("report", nlohmann::json()));
      run.log = path_in(x.value("log", nlohmann::json()));
      r.runs.push_back(std::move(run));
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(file.string() + ": " + e.what());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(file.string() + ": " + e.what());
  }
  return r;
}

std::string junit_xml(const CampaignResult& result, const std::string& dir) {
  std::size_t failures = 0, skipped = 0;
  double time = 0;
  for (const auto& r : result.runs) {
    failures += r.verdict == RunVerdict::fail;
    skipped += r.verdict == RunVerdict::not_run;
    time += r.duration_s;
  }
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x << "<testsuites name=\"" << xml_escape(result.name) << "\" tests=\"" << result.runs.size() << "\" failures=\""
    << failures << "\" errors=\"0\" skipped=\"" << skipped << "\" time=\"" << seconds_text(result.wall_s) << "\">\n";
  x << "  <testsuite name=\"" << xml_escape(result.name) << "\" tests=\"" << result.runs.size() << "\" failures=\""
    << failures << "\" errors=\"0\" skipped=\"" << skipped << "\" time=\"" << seconds_text(time) << "\""
    << (result.started.empty() ? "" : " timestamp=\"" + xml_escape(result.started) + "\"") << ">\n";
  x << "    <properties>\n";
  x << "      <property name=\"campaign_file\" value=\"" << xml_escape(result.file) << "\"/>\n";
  x << "      <property name=\"fingerprint\" value=\"" << xml_escape(result.fingerprint) << "\"/>\n";
  x << "      <property name=\"total_runs\" value=\"" << result.total_runs << "\"/>\n";
  if (result.shard)
    x << "      <property name=\"shard\" value=\"" << result.shard->first << "/" << result.shard->second << "\"/>\n";
  if (result.interrupted) x << "      <property name=\"interrupted\" value=\"true\"/>\n";
  x << "    </properties>\n";
  for (const auto& r : result.runs) {
    x << "    <testcase name=\"" << xml_escape(r.plan.name) << "\" classname=\"" << xml_escape(r.plan.classname)
      << "\" time=\"" << seconds_text(r.duration_s) << "\">\n";
    const std::string report = relative_to(r.report, dir);
    const std::string log = relative_to(r.log, dir);
    if (!report.empty() || !log.empty()) {
      x << "      <properties>\n";
      if (!report.empty()) x << "        <property name=\"report\" value=\"" << xml_escape(report) << "\"/>\n";
      if (!log.empty()) x << "        <property name=\"log\" value=\"" << xml_escape(log) << "\"/>\n";
      x << "      </properties>\n";
    }
    if (r.verdict == RunVerdict::not_run) {
      x << "      <skipped message=\"" << xml_escape(r.reason) << "\"/>\n";
    } else if (r.verdict == RunVerdict::fail) {
      // each failed expectation its own <failure>; a run that failed otherwise one with the reason
      for (const auto& f : r.failures)
        x << "      <failure type=\"expectation\" message=\"" << xml_escape(f.message()) << "\">"
          << xml_escape(f.message() + (r.reason.empty() ? "" : "\n" + r.reason)) << "</failure>\n";
      if (r.failures.empty())
        x << "      <failure type=\"" << (r.exit_code ? "exit " + std::to_string(*r.exit_code) : std::string("not run"))
          << "\" message=\"" << xml_escape(r.reason) << "\">" << xml_escape(r.reason) << "</failure>\n";
    }
    x << "      <system-out>";
    x << xml_escape("exit code: " + (r.exit_code ? std::to_string(*r.exit_code) : std::string("none")) +
                    (r.outcome.empty() ? "" : "\noutcome: " + r.outcome));
    if (!report.empty()) x << xml_escape("\nreport: " + report + "\n[[ATTACHMENT|" + report + "]]");
    if (!log.empty()) x << xml_escape("\nlog: " + log);
    x << "</system-out>\n";
    x << "    </testcase>\n";
  }
  x << "  </testsuite>\n</testsuites>\n";
  return x.str();
}

std::string index_html(const CampaignResult& result, const std::string& dir) {
  const auto h = [](const std::string& s) { return xml_escape(s); };
  std::ostringstream o;
  const bool pass = result.failed() == 0 && result.not_run() == 0 && result.runs.size() == result.total_runs;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>campaign " << h(result.name)
    << (pass ? " passed" : " FAILED") << "</title>\n<style>\n"
    << "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}\n"
    << "table{border-collapse:collapse;font-size:14px}td,th{border:1px solid #ccc;padding:3px 7px;text-align:left;"
       "vertical-align:top}\n"
    << "th{background:#f3f3f3}tr.pass td.v{background:#d9f2d9}tr.fail td.v{background:#f7d4d4;font-weight:bold}\n"
    << "tr.not_run td.v{background:#eee;color:#666}.big{font-size:1.3em}.pass{color:#176317}.fail{color:#a11}\n"
    << "code{font-size:13px}\n</style></head><body>\n";
  o << "<h1>Campaign " << h(result.name) << "</h1>\n";
  o << "<p class=\"big " << (pass ? "pass" : "fail") << "\">" << (pass ? "PASSED" : "FAILED") << ": " << result.passed()
    << " of " << result.total_runs << " runs passed, " << result.failed() << " failed";
  if (result.not_run() > 0) o << ", " << result.not_run() << " not run";
  if (result.runs.size() < result.total_runs && !result.shard)
    o << ", " << (result.total_runs - result.runs.size()) << " missing";
  o << "</p>\n<p>";
  o << "file <code>" << h(result.file) << "</code>";
  if (!result.started.empty()) o << ", started " << h(result.started);
  o << ", wall time " << seconds_text(result.wall_s) << " s";
  if (result.jobs > 0) o << " with " << result.jobs << (result.jobs == 1 ? " worker" : " workers");
  if (result.shard)
    o << "; shard " << result.shard->first << " of " << result.shard->second << " (" << result.runs.size() << " of "
      << result.total_runs << " runs)";
  if (!result.merged_from.empty()) {
    o << "; merged from";
    for (const auto& d : result.merged_from) o << " <code>" << h(relative_to(d, dir)) << "</code>";
  }
  if (result.interrupted) o << "; <b>interrupted</b> (Ctrl-C or SIGTERM): runs not started are listed as not run";
  o << "; fingerprint <code>" << h(result.fingerprint) << "</code></p>\n";
  o << "<table>\n<tr><th>#</th><th>run</th><th>verdict</th><th>outcome</th><th>exit</th><th>time</th>"
       "<th>failed expectations, reason</th><th>report</th></tr>\n";
  for (const auto& r : result.runs) {
    o << "<tr class=\"" << to_string(r.verdict) << "\"><td>" << r.plan.index << "</td><td>" << h(r.plan.name)
      << "</td><td class=\"v\">"
      << (r.verdict == RunVerdict::pass   ? "PASS"
          : r.verdict == RunVerdict::fail ? "FAIL"
                                          : "not run")
      << "</td><td>" << h(r.outcome) << "</td><td>" << (r.exit_code ? std::to_string(*r.exit_code) : "") << "</td><td>"
      << (r.verdict == RunVerdict::not_run ? "" : seconds_text(r.duration_s) + " s") << "</td><td>";
    for (const auto& f : r.failures) o << h(f.message()) << "<br>";
    if (!r.reason.empty() && (r.failures.empty() || r.exit_code != 6)) o << h(r.reason);
    o << "</td><td>";
    const std::string report = relative_to(r.report, dir);
    const std::string log = relative_to(r.log, dir);
    if (!report.empty()) o << "<a href=\"" << h(report) << "\">" << (r.plan.replay ? "result" : "report") << "</a> ";
    if (!log.empty()) o << "<a href=\"" << h(log) << "\">log</a>";
    o << "</td></tr>\n";
  }
  o << "</table>\n</body></html>\n";
  return o.str();
}

std::string verdict_table(const CampaignResult& result) {
  std::ostringstream o;
  std::size_t width = 3;
  for (const auto& r : result.runs) width = std::max(width, r.plan.name.size());
  width = std::min<std::size_t>(width, 60);
  char line[256];
  std::snprintf(line, sizeof line, "  %-5s %-7s %-4s %-22s %-*s %s\n", "#", "verdict", "exit", "outcome",
                static_cast<int>(width), "run", "failed expectations, reason");
  o << line;
  for (const auto& r : result.runs) {
    std::string why;
    for (const auto& f : r.failures) why += (why.empty() ? "" : "; ") + f.message();
    if (!r.reason.empty() && (r.failures.empty() || r.exit_code != 6)) why += (why.empty() ? "" : "; ") + r.reason;
    std::snprintf(line, sizeof line, "  %-5zu %-7s %-4s %-22s %-*s ", r.plan.index,
                  r.verdict == RunVerdict::pass   ? "PASS"
                  : r.verdict == RunVerdict::fail ? "FAIL"
                                                  : "-",
                  r.exit_code ? std::to_string(*r.exit_code).c_str() : "-", r.outcome.empty() ? "-" : r.outcome.c_str(),
                  static_cast<int>(width), r.plan.name.c_str());
    o << line << runtime::printable(why) << '\n';
  }
  return o.str();
}

bool write_campaign_results(const CampaignResult& result, const std::string& dir, std::string* error) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  const std::vector<std::pair<std::string, std::string>> files = {
      {"campaign.json", runtime::json_text(campaign_json(result, dir), 2) + "\n"},
      {"junit.xml", junit_xml(result, dir)},
      {"index.html", index_html(result, dir)}};
  for (const auto& [name, text] : files) {
    // written whole and renamed: a reader (or a merge) never sees half a file
    const fs::path tmp = fs::path(dir) / (name + ".tmp");
    {
      std::ofstream f(tmp, std::ios::binary);
      f << text;
      if (!f) {
        if (error) *error = "cannot write " + tmp.string();
        return false;
      }
    }
    fs::rename(tmp, fs::path(dir) / name, ec);
    if (ec) {
      if (error) *error = "cannot write " + (fs::path(dir) / name).string() + ": " + ec.message();
      return false;
    }
  }
  return true;
}

CampaignResult merge_campaign_results(const std::vector<std::string>& dirs) {
  if (dirs.empty()) throw std::runtime_error("--merge needs at least one folder");
  CampaignResult merged;
  std::map<std::size_t, std::pair<RunResult, std::string>> by_index;  // the run, and the folder it came from
  for (std::size_t d = 0; d < dirs.size(); ++d) {
    CampaignResult part = read_campaign_json(dirs[d]);
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

}  // namespace tether::adapters
