// SPDX-License-Identifier: Apache-2.0
#include "tether/process/config_text.hpp"

#include <cstdlib>
#include <filesystem>

namespace tether::adapters {

bool expand_env(const std::string& text, std::string& out, std::string* missing) {
  out.clear();
  for (std::size_t i = 0; i < text.size();) {
    if (text.compare(i, 2, "${") == 0) {
      const std::size_t end = text.find('}', i + 2);
      if (end != std::string::npos) {
        std::string expr = text.substr(i + 2, end - i - 2);
        std::string fallback;
        bool has_fallback = false;
        if (const std::size_t dash = expr.find(":-"); dash != std::string::npos) {
          fallback = expr.substr(dash + 2);
          expr.resize(dash);
          has_fallback = true;
        }
        const char* value = std::getenv(expr.c_str());
        if (value != nullptr && *value != '\0') {
          out += value;
        } else if (has_fallback) {
          out += fallback;
        } else {
          if (missing) *missing = expr;
          return false;
        }
        i = end + 1;
        continue;
      }
    }
    out += text[i++];
  }
  return true;
}

std::string scenario_dir(const runtime::Scenario& scenario) {
  std::filesystem::path p(scenario.path);
  std::error_code ec;
  std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : std::filesystem::current_path(ec);
  return std::filesystem::absolute(dir, ec).lexically_normal().string();
}

std::string resolve_config_text(const runtime::ConfigNode& node, const std::string& raw, const std::string& base,
                                bool is_path) {
  std::string text;
  std::string missing;
  if (!expand_env(raw, text, &missing)) {
    node.error("environment variable " + missing + " is not set (write ${" + missing + ":-default} for a default)");
    return raw;
  }
  for (std::size_t at; (at = text.find("{scenario_dir}")) != std::string::npos;) text.replace(at, 14, base);
  if (is_path && !text.empty() && text.front() != '/' && text.find('/') != std::string::npos)
    text = (std::filesystem::path(base) / text).lexically_normal().string();
  return text;
}

std::string config_scalar(const runtime::ConfigNode& node) {
  return node.yaml().IsScalar() ? node.yaml().Scalar() : std::string();
}

void parse_launch_command(const runtime::ConfigNode& c, const std::string& base, std::vector<std::string>& out) {
  if (!c.is_sequence() || c.size() == 0) {
    c.error("expected a list of strings (the program and its arguments), got " + runtime::describe_value(c.yaml()));
    return;
  }
  for (std::size_t i = 0; i < c.size(); ++i) {
    const runtime::ConfigNode a = c.at(i);
    if (!a.yaml().IsScalar()) {
      a.error("expected a string, got " + runtime::describe_value(a.yaml()));
      continue;
    }
    out.push_back(resolve_config_text(a, config_scalar(a), base, i == 0));
  }
}

void parse_launch_env_cwd(const runtime::ConfigNode& l, const std::string& base,
                          std::vector<std::pair<std::string, std::string>>& env, std::string& cwd) {
  if (l.has("env")) {
    const runtime::ConfigNode e = l["env"];
    if (!e.is_map()) {
      e.error("expected a map of variable: value, got " + runtime::describe_value(e.yaml()));
    } else {
      for (const auto& kv : e.yaml()) {
        const std::string key = kv.first.as<std::string>();
        const runtime::ConfigNode v = e[key.c_str()];
        env.emplace_back(key, resolve_config_text(v, config_scalar(v), base, false));
      }
    }
  }
  if (l.has("cwd")) cwd = resolve_config_text(l["cwd"], l.string("cwd"), base, true);
}

int device_name_match(const std::string& full, const std::string& name) {
  if (full == name) return 2;
  const bool tail = full.size() > name.size() && full.compare(full.size() - name.size(), name.size(), name) == 0 &&
                    full[full.size() - name.size() - 1] == '.';
  return tail ? 1 : 0;
}

int find_vehicle_device(const runtime::Scenario& scenario, const std::string& vehicle, const std::string& name) {
  int found = -1;
  for (std::size_t i = 0; i < scenario.devices.size(); ++i) {
    const hal::DeviceSpec& d = scenario.devices[i];
    if (d.name.vehicle != vehicle) continue;
    const int match = device_name_match(d.name.full(), name);
    if (match == 2) return static_cast<int>(i);
    if (match == 1) found = found == -1 ? static_cast<int>(i) : -2;
  }
  return found;
}

ProgramLaunchConfig parse_program_launch(const runtime::ConfigNode& l, const std::string& base) {
  ProgramLaunchConfig launch;
  if (l.expect_map({"command", "env", "cwd", "kill_after_ms"})) {
    parse_launch_command(l["command"], base, launch.command);
    parse_launch_env_cwd(l, base, launch.env, launch.cwd);
    launch.kill_after_ms = l.integer_or("kill_after_ms", 2000, 0, 600'000);
  }
  return launch;
}

void replace_placeholder(std::vector<std::string>& argv, const std::string& what, const std::string& with) {
  for (std::string& s : argv)
    for (std::size_t at = 0; (at = s.find(what, at)) != std::string::npos; at += with.size())
      s.replace(at, what.size(), with);
}

}  // namespace tether::adapters
