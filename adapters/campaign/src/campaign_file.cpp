// SPDX-License-Identifier: Apache-2.0
// Reading a campaign file (docs/campaigns.md): strict, every problem at once and positioned,
// as scenario files are; relative paths against the file's folder, ${VAR} expanded.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "tether/process/config_text.hpp"
#include "tether/campaign/campaign.hpp"
#include "tether/scenario/config.hpp"
#include "text_util.hpp"

namespace tether::campaign {

namespace fs = std::filesystem;
using adapters::resolve_config_text;
using runtime::ConfigNode;

namespace {

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
                  "run_timeout_s", "keep_recordings"});
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
  c.keep_passed_recordings = top.choice_or("keep_recordings", "all", {"all", "failed"}) == "all";
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

}  // namespace tether::campaign
