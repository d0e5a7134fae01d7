// SPDX-License-Identifier: Apache-2.0
#include "tether/scenario/config.hpp"

#include <cmath>
#include <fstream>
#include <sstream>

namespace tether::runtime {

namespace {

std::string join_errors(const std::vector<std::string>& errors) {
  std::string out;
  for (const auto& e : errors) {
    if (!out.empty()) out += '\n';
    out += e;
  }
  return out;
}

std::string format_number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

std::string child_path(const std::string& parent, const char* key) {
  return parent.empty() ? std::string(key) : parent + "." + key;
}

bool parse_double(const YAML::Node& n, double& out) {
  if (!n.IsScalar()) return false;
  try {
    out = n.as<double>();
  } catch (const YAML::Exception&) {
    return false;
  }
  return std::isfinite(out);
}

}  // namespace

ConfigError::ConfigError(std::vector<std::string> errors)
    : std::runtime_error(join_errors(errors)), errors_(std::move(errors)) {}

std::string Range::expected() const {
  const bool has_min = min > -1e299;
  const bool has_max = max < 1e299;
  if (has_min && has_max) return "a number from " + format_number(min) + " to " + format_number(max);
  if (has_min) return std::string("a number ") + (min_exclusive ? "> " : ">= ") + format_number(min);
  if (has_max) return "a number <= " + format_number(max);
  return "a number";
}

std::string describe_value(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a map";
  return "\"" + node.Scalar() + "\"";
}

ConfigNode::ConfigNode(std::shared_ptr<ConfigContext> context, YAML::Node node, std::string path,
                       YAML::Mark mark)
    : context_(std::move(context)), node_(std::move(node)), path_(std::move(path)), mark_(mark) {
  // a node that exists carries its own position; an absent one keeps its parent's
  if (node_.IsDefined() && !node_.IsNull() && node_.Mark().line >= 0) mark_ = node_.Mark();
}

bool ConfigNode::has(const char* key) const {
  return node_.IsMap() && node_[key].IsDefined() && !node_[key].IsNull();
}

ConfigNode ConfigNode::operator[](const char* key) const {
  // yaml-cpp hands back an invalid "zombie" node for a missing key; normalise to undefined
  YAML::Node child = has(key) ? node_[key] : YAML::Node(YAML::NodeType::Undefined);
  return ConfigNode(context_, child, child_path(path_, key), mark_);
}

ConfigNode ConfigNode::at(std::size_t i) const {
  YAML::Node child = node_.IsSequence() && i < node_.size() ? node_[i] : YAML::Node();
  return ConfigNode(context_, child, path_ + "[" + std::to_string(i) + "]", mark_);
}

void ConfigNode::error(const std::string& message) const {
  std::string where = context_->file;
  if (mark_.line >= 0) where += ":" + std::to_string(mark_.line + 1) + ":" + std::to_string(mark_.column + 1);
  context_->errors.push_back(where + ": " + (path_.empty() ? std::string("(top level)") : path_) +
                             ": " + message);
}

void ConfigNode::expected(const char* key, const std::string& what) const {
  const ConfigNode child = (*this)[key];
  if (!has(key))
    child.error("missing; expected " + what);
  else
    child.error("expected " + what + ", got " + describe_value(child.node_));
}

bool ConfigNode::expect_map(std::initializer_list<const char*> allowed) const {
  if (!node_.IsMap()) {
    error("expected a map, got " + describe_value(node_));
    return false;
  }
  for (const auto& kv : node_) {
    const std::string key = kv.first.Scalar();
    bool known = false;
    for (const char* a : allowed) known = known || key == a;
    if (!known) {
      std::string list;
      for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
      ConfigNode(context_, kv.first, child_path(path_, key.c_str()), mark_)
          .error("unknown key (allowed here: " + list + ")");
    }
  }
  return true;
}

bool ConfigNode::expect_sequence() const {
  if (!node_.IsDefined() || node_.IsNull()) return true;
  if (!node_.IsSequence()) {
    error("expected a list, got " + describe_value(node_));
    return false;
  }
  return true;
}

double ConfigNode::number(const char* key, Range range) const {
  double v = 0;
  if (!has(key) || !parse_double(node_[key], v) || !range.contains(v)) {
    expected(key, range.expected());
    return range.contains(0) ? 0 : (range.min > -1e299 ? range.min + 1 : range.max);
  }
  return v;
}

double ConfigNode::number_or(const char* key, double fallback, Range range) const {
  return has(key) ? number(key, range) : fallback;
}

std::int64_t ConfigNode::integer_or(const char* key, std::int64_t fallback, std::int64_t min,
                                    std::int64_t max) const {
  if (!has(key)) return fallback;
  const YAML::Node n = node_[key];
  std::int64_t v = 0;
  bool ok = n.IsScalar();
  if (ok) {
    try {
      v = n.as<std::int64_t>();
    } catch (const YAML::Exception&) {
      ok = false;
    }
  }
  if (!ok || v < min || v > max) {
    expected(key, "a whole number from " + std::to_string(min) + " to " + std::to_string(max));
    return fallback;
  }
  return v;
}

std::uint64_t ConfigNode::unsigned_or(const char* key, std::uint64_t fallback) const {
  if (!has(key)) return fallback;
  const YAML::Node n = node_[key];
  try {
    if (n.IsScalar() && !n.Scalar().empty() && n.Scalar()[0] != '-') return n.as<std::uint64_t>();
  } catch (const YAML::Exception&) {
  }
  expected(key, "a whole number >= 0");
  return fallback;
}

bool ConfigNode::boolean_or(const char* key, bool fallback) const {
  if (!has(key)) return fallback;
  try {
    if (node_[key].IsScalar()) return node_[key].as<bool>();
  } catch (const YAML::Exception&) {
  }
  expected(key, "true or false");
  return fallback;
}

std::string ConfigNode::string(const char* key) const {
  if (!has(key) || !node_[key].IsScalar() || node_[key].Scalar().empty()) {
    expected(key, "a non-empty string");
    return {};
  }
  return node_[key].Scalar();
}

std::string ConfigNode::string_or(const char* key, std::string fallback) const {
  return has(key) ? string(key) : fallback;
}

std::string ConfigNode::choice_or(const char* key, std::string fallback,
                                  std::initializer_list<const char*> choices) const {
  if (!has(key)) return fallback;
  std::string list;
  for (const char* c : choices) list += std::string(list.empty() ? "" : ", ") + c;
  const YAML::Node n = node_[key];
  if (n.IsScalar())
    for (const char* c : choices)
      if (n.Scalar() == c) return n.Scalar();
  expected(key, "one of " + list);
  return fallback;
}

std::vector<double> ConfigNode::numbers_or(const char* key, std::vector<double> fallback,
                                           std::size_t count, Range range) const {
  if (!has(key)) return fallback;
  const YAML::Node n = node_[key];
  const std::string what = (count ? "a list of " + std::to_string(count) + " numbers"
                                  : std::string("a list of numbers")) +
                           (range.min > -1e299 || range.max < 1e299 ? " (each " + range.expected() + ")" : "");
  if (!n.IsSequence() || (count && n.size() != count)) {
    expected(key, what);
    return fallback;
  }
  std::vector<double> out;
  for (std::size_t i = 0; i < n.size(); ++i) {
    double v = 0;
    if (!parse_double(n[i], v) || !range.contains(v)) {
      ConfigNode((*this)[key]).at(i).error("expected " + range.expected() + ", got " +
                                           describe_value(n[i]));
      return fallback;
    }
    out.push_back(v);
  }
  return out;
}

Vec3 ConfigNode::vec3_or(const char* key, const Vec3& fallback, Range range) const {
  const auto v = numbers_or(key, {fallback.x(), fallback.y(), fallback.z()}, 3, range);
  return {v[0], v[1], v[2]};
}

ConfigNode load_config_text(const std::string& text, const std::string& label) {
  auto context = std::make_shared<ConfigContext>();
  context->file = label;
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw ConfigError({label + ":" + std::to_string(e.mark.line + 1) + ":" +
                       std::to_string(e.mark.column + 1) + ": YAML syntax error: " + e.msg});
  }
  YAML::Mark start;
  start.line = 0;
  start.column = 0;
  return ConfigNode(context, root, "", start);
}

ConfigNode load_config_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError({path + ": cannot open the file"});
  std::stringstream buffer;
  buffer << in.rdbuf();
  return load_config_text(buffer.str(), path);
}

}  // namespace tether::runtime
