// SPDX-License-Identifier: Apache-2.0
#include "tether/scenario/config.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

namespace tether::runtime {

namespace {

void count_unlisted_error(ConfigContext& context) {
  // the first one past the cap says so (starting with the file, as every error does); the
  // others are placeholders that only count
  if (context.errors.size() == ConfigContext::listed_errors)
    context.errors.push_back(context.file + ": more than " + std::to_string(ConfigContext::listed_errors) +
                             " errors; only the first " + std::to_string(ConfigContext::listed_errors) +
                             " are listed");
  else
    context.errors.emplace_back();
}

std::string join_errors(const std::vector<std::string>& errors) {
  std::string out;
  for (const auto& e : errors) {
    if (!out.empty()) out += '\n';
    out += e;
  }
  return out;
}

std::string format_number(double v) {
  // whole bounds as written in the docs (1000000, not 1e+06)
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
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

std::string position(const std::string& file, const YAML::Mark& mark) {
  return file + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

// Finds keys given twice in one map, at any depth. yaml-cpp keeps both pairs and lookups
// see only the first, so a second `loop:` block would be ignored without a word. This
// reads the parser's events rather than the node tree: an alias is one event here, while
// in the tree it is the anchored node again (and `&a [*a]` makes the tree a cycle).
// keys in one map at most: a scenario's largest maps have tens; a file with a million
// unknown keys (a generator gone wrong) is refused at the first key past this, before any
// tree is built (the check of such a file took 15-18 s and 2.2 GB)
constexpr std::size_t max_map_keys = 10'000;
// elements in one list at most: the largest lists a scenario has are static bodies (120,000
// load, linearly, in seconds) and inline terrain rows; a list of a million entries is refused
// at the first element past this, before any tree is built (checking one took 4.9 s and
// 621 MB in Release, yaml-cpp's tree and the million errors counted)
constexpr std::size_t max_list_elements = 200'000;

class DuplicateKeyFinder : public YAML::EventHandler {
 public:
  explicit DuplicateKeyFinder(ConfigContext& context) : context_(context) {}

  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { leaf(mark, anchor, "null"); }
  void OnDocumentStart(const YAML::Mark& mark) override { document_ = mark; }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    const auto name = anchor_names_.find(anchor);
    const auto size = anchor_sizes_.find(anchor);
    count(mark, size == anchor_sizes_.end() ? 1 : size->second);
    leaf(mark, YAML::NullAnchor, "*" + (name == anchor_names_.end() ? std::to_string(anchor) : name->second), false);
  }

  /// Where the document first expanded past max_config_nodes (aliases counted at every use).
  const std::optional<YAML::Mark>& too_large() const { return too_large_; }
  /// Thrown at the first key past max_map_keys in one map: where, and the map's path.
  struct TooManyKeys {
    YAML::Mark mark;
    std::string path;
  };
  /// Thrown at the first element past max_list_elements in one list: where, and its path.
  struct TooManyElements {
    YAML::Mark mark;
    std::string path;
  };
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, const std::string& value) override {
    leaf(mark, anchor, value);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    enter(mark);
    count(mark, 1);
    open(anchor, false);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    enter(mark);
    count(mark, 1);
    open(anchor, true);
  }
  void OnMapEnd() override { close(); }
  void OnAnchor(const YAML::Mark&, const std::string& name) override { pending_anchor_name_ = name; }

 private:
  struct Frame {
    bool is_map = false;
    bool is_key = false;                     // a map or list used as a key: its contents are not checked
    bool expecting_key = true;               // maps alternate key, value, key, ...
    std::size_t index = 0;                   // lists: the position of the next element
    std::string path;                        // as ConfigNode writes it: vehicles[0].bodies[0]
    std::string key;                         // maps: the key whose value comes next
    std::map<std::string, YAML::Mark> seen;  // maps: each key and where it was first given
    YAML::anchor_t anchor = YAML::NullAnchor;
    std::size_t expanded_at_open = 0;  // expanded_ when it opened: its own size is the difference
  };

  // every node counts once per place it appears: an alias as large as what it repeats
  // (saturating: nested aliases can double a count at each level)
  void count(const YAML::Mark& mark, std::size_t nodes) {
    expanded_ = nodes > max_config_nodes ? max_config_nodes + 1 : std::min(expanded_ + nodes, max_config_nodes + 1);
    if (expanded_ > max_config_nodes && !too_large_) too_large_ = mark;
  }

  // the path of the node that comes next inside the innermost open container
  std::string child_path() const {
    if (stack_.empty()) return {};
    const Frame& f = stack_.back();
    if (!f.is_map) return f.path + "[" + std::to_string(f.index) + "]";
    return f.path.empty() ? f.key : f.path + "." + f.key;
  }

  bool in_key() const {
    for (const auto& f : stack_)
      if (f.is_key) return true;
    return false;
  }

  // a node is complete: a scalar, or a container that just closed
  void advance() {
    if (stack_.empty()) return;
    Frame& f = stack_.back();
    if (!f.is_map)
      ++f.index;
    else
      f.expecting_key = !f.expecting_key;
  }

  // a node is about to go into the innermost container: a list past its limit stops here
  void enter(const YAML::Mark& mark) const {
    if (stack_.empty() || stack_.back().is_map || stack_.back().index < max_list_elements || in_key()) return;
    throw TooManyElements{mark, stack_.back().path.empty() ? std::string("(top level)") : stack_.back().path};
  }

  void leaf(const YAML::Mark& mark, YAML::anchor_t anchor, const std::string& text, bool counts = true) {
    enter(mark);
    if (counts) count(mark, 1);
    name_anchor(anchor);
    if (anchor != YAML::NullAnchor) anchor_sizes_[anchor] = 1;
    if (!stack_.empty() && stack_.back().is_map && stack_.back().expecting_key) {
      Frame& f = stack_.back();
      f.key = text;
      if (!in_key() && f.seen.size() >= max_map_keys) {
        // stop reading here: the rest of the file cannot change the answer
        throw TooManyKeys{mark, f.path.empty() ? std::string("(top level)") : f.path};
      } else if (!in_key()) {
        const auto [first, inserted] = f.seen.emplace(text, mark);
        if (!inserted && !context_.listing())
          count_unlisted_error(context_);
        else if (!inserted)
          context_.errors.push_back(position(context_.file, mark) + ": " +
                                    (f.path.empty() ? text : f.path + "." + text) + ": key given twice (first at " +
                                    position(context_.file, first->second) + ")");
      }
    }
    advance();
  }

  void open(YAML::anchor_t anchor, bool is_map) {
    name_anchor(anchor);
    Frame f;
    f.is_map = is_map;
    f.is_key = !stack_.empty() && stack_.back().is_map && stack_.back().expecting_key;
    if (f.is_key) stack_.back().key = "(a key)";
    f.path = child_path();
    f.anchor = anchor;
    f.expanded_at_open = expanded_ - 1;  // count() has added the container itself
    stack_.push_back(std::move(f));
  }

  void close() {
    if (!stack_.empty()) {
      const Frame& f = stack_.back();
      if (f.anchor != YAML::NullAnchor) anchor_sizes_[f.anchor] = expanded_ - f.expanded_at_open;
      stack_.pop_back();
    }
    advance();
  }

  // OnAnchor (the name) comes just before the event of the node it names (the number)
  void name_anchor(YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor && !pending_anchor_name_.empty()) anchor_names_[anchor] = pending_anchor_name_;
    pending_anchor_name_.clear();
  }

  ConfigContext& context_;
  std::vector<Frame> stack_;
  std::map<YAML::anchor_t, std::string> anchor_names_;
  std::map<YAML::anchor_t, std::size_t> anchor_sizes_;  // expanded nodes of each anchored node
  std::string pending_anchor_name_;
  std::size_t expanded_ = 0;
  std::optional<YAML::Mark> too_large_;
  YAML::Mark document_;

 public:
  const YAML::Mark& document_start() const { return document_; }
};

// the errors as they are printed: whatever came from the file is escaped
std::vector<std::string> printable_all(std::vector<std::string> errors) {
  for (auto& e : errors) e = printable(e);
  return errors;
}

}  // namespace

bool valid_utf8(std::string_view text) {
  std::size_t i = 0;
  const std::size_t n = text.size();
  while (i < n) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1Fu;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0Fu;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07u;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (std::size_t k = 1; k < len; ++k) {
      const auto d = static_cast<unsigned char>(text[i + k]);
      if ((d & 0xC0u) != 0x80u) return false;
      cp = (cp << 6) | (d & 0x3Fu);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += len;
  }
  return true;
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  static const char hex[] = "0123456789abcdef";
  const auto escape = [&](unsigned char c) {
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 15];
  };
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7F)
        escape(c);
      else
        out += static_cast<char>(c);
      ++i;
      continue;
    }
    // the longest well-formed sequence starting here (1..4 bytes), else one escaped byte
    std::size_t len = 0;
    for (std::size_t l = 2; l <= 4 && i + l <= text.size(); ++l)
      if (valid_utf8(text.substr(i, l))) {
        len = l;
        break;
      }
    if (len == 0) {
      escape(c);
      ++i;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
  }
  return out;
}

// the errors with text (the first ConfigContext::listed_errors), and a line for the rest
ConfigError::Listed ConfigError::listed(std::vector<std::string> errors) {
  Listed out;
  out.count = errors.size();
  std::erase_if(errors, [](const std::string& e) { return e.empty(); });
  out.lines = printable_all(std::move(errors));
  return out;
}

ConfigError::ConfigError(std::vector<std::string> errors) : ConfigError(listed(std::move(errors))) {}

ConfigError::ConfigError(Listed l)
    : std::runtime_error(join_errors(l.lines)), count_(l.count), errors_(std::move(l.lines)) {}

std::string Range::expected() const {
  const bool has_min = min > -1e299;
  const bool has_max = max < 1e299;
  if (has_min && has_max)
    return min_exclusive ? "a number > " + format_number(min) + " and <= " + format_number(max)
                         : "a number from " + format_number(min) + " to " + format_number(max);
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

ConfigNode::ConfigNode(std::shared_ptr<ConfigContext> context, YAML::Node node, std::string path, YAML::Mark mark)
    : context_(std::move(context)), node_(std::move(node)), path_(std::move(path)), mark_(mark) {
  // a node that exists carries its own position; an absent one keeps its parent's
  if (node_.IsDefined() && !node_.IsNull() && node_.Mark().line >= 0) mark_ = node_.Mark();
}

bool ConfigNode::has(const char* key) const { return node_.IsMap() && node_[key].IsDefined() && !node_[key].IsNull(); }

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
  if (!context_->listing()) {
    count_unlisted_error(*context_);
    return;
  }
  std::string where = context_->file;
  if (mark_.line >= 0) where += ":" + std::to_string(mark_.line + 1) + ":" + std::to_string(mark_.column + 1);
  // a value that came from --set: name the option, not a place in the file
  for (const auto& [path, option] : context_->overrides)
    if (path_ == path || path_.rfind(path + ".", 0) == 0 || path_.rfind(path + "[", 0) == 0)
      where = context_->override_option + " " + option;
  context_->errors.push_back(where + ": " + (path_.empty() ? std::string("(top level)") : path_) + ": " + message);
}

void ConfigNode::expected(const char* key, const std::string& what) const {
  const ConfigNode child = (*this)[key];
  if (!has(key))
    child.error("missing; expected " + what);
  else
    child.error("expected " + what + ", got " + describe_value(child.node_));
}

bool ConfigNode::expect_map(std::initializer_list<const char*> allowed) const {
  return expect_map(std::span<const char* const>(allowed.begin(), allowed.size()));
}

bool ConfigNode::expect_map(std::span<const char* const> allowed,
                            const std::function<std::string(std::string_view key)>& note) const {
  if (!node_.IsMap()) {
    error("expected a map, got " + describe_value(node_));
    return false;
  }
  for (const auto& kv : node_) {
    const std::string key = kv.first.Scalar();
    bool known = false;
    for (const char* a : allowed) known = known || key == a;
    if (!known && !context_->listing()) {
      count_unlisted_error(*context_);
    } else if (!known) {
      std::string list;
      for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
      const std::string more = note ? note(key) : std::string();
      ConfigNode(context_, kv.first, child_path(path_, key.c_str()), mark_)
          .error("unknown key (allowed here: " + list + ")" + (more.empty() ? "" : "; " + more));
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

std::int64_t ConfigNode::integer_or(const char* key, std::int64_t fallback, std::int64_t min, std::int64_t max) const {
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
  // names end up in JSON (summaries, recordings, MQTT topics): text only
  if (!valid_utf8(node_[key].Scalar())) {
    expected(key, "text in UTF-8");
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

std::vector<double> ConfigNode::numbers_or(const char* key, std::vector<double> fallback, std::size_t count,
                                           Range range) const {
  if (!has(key)) return fallback;
  const YAML::Node n = node_[key];
  const std::string what =
      (count ? "a list of " + std::to_string(count) + " numbers" : std::string("a list of numbers")) +
      (range.min > -1e299 || range.max < 1e299 ? " (each " + range.expected() + ")" : "");
  if (!n.IsSequence() || (count && n.size() != count)) {
    expected(key, what);
    return fallback;
  }
  std::vector<double> out;
  for (std::size_t i = 0; i < n.size(); ++i) {
    double v = 0;
    if (!parse_double(n[i], v) || !range.contains(v)) {
      ConfigNode((*this)[key]).at(i).error("expected " + range.expected() + ", got " + describe_value(n[i]));
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

void apply_overrides(const ConfigNode& root, const std::vector<std::string>& overrides) {
  for (const std::string& option : overrides) {
    const auto fail = [&](const std::string& why) {
      throw ConfigError({root.context().override_option + " " + option + ": " + why});
    };
    const std::size_t eq = option.find('=');
    if (eq == std::string::npos || eq == 0) fail("expected PATH=VALUE");
    const std::string path = option.substr(0, eq);
    YAML::Node value;
    try {
      value = YAML::Load(option.substr(eq + 1));
    } catch (const YAML::Exception& e) {
      fail("the value is not YAML: " + e.msg);
    }
    // the path's steps: keys, [i] indices
    std::vector<std::string> steps;
    std::string cur;
    for (std::size_t i = 0; i < path.size(); ++i) {
      const char c = path[i];
      if (c == '.' || c == '[') {
        if (!cur.empty()) steps.push_back(cur);
        cur.clear();
        if (c == '[') {
          const std::size_t close = path.find(']', i);
          if (close == std::string::npos) fail("an unclosed [ in the path");
          steps.push_back(path.substr(i, close - i + 1));
          i = close;
        }
      } else {
        cur += c;
      }
    }
    if (!cur.empty()) steps.push_back(cur);
    if (steps.empty()) fail("expected PATH=VALUE");
    YAML::Node node = root.yaml();
    std::string where;  // the path as ConfigNode writes it
    for (std::size_t k = 0; k < steps.size(); ++k) {
      const std::string& st = steps[k];
      const bool last = k + 1 == steps.size();
      if (st == "[+]") {
        // append to a list (created by the key before it when that was absent)
        if (!last) fail("[+] appends a list element: it ends the path");
        if (!node.IsSequence())
          fail((where.empty() ? std::string("the top level") : where) + " is not a list (only a list takes [+])");
        where += "[" + std::to_string(node.size()) + "]";
        node.push_back(value);
        continue;
      }
      if (st.front() == '[') {
        char* end = nullptr;
        const long i = std::strtol(st.c_str() + 1, &end, 10);
        if (!node.IsSequence() || *end != ']' || i < 0 || static_cast<std::size_t>(i) >= node.size())
          fail((where.empty() ? std::string("the top level") : where) + " has no element " + st);
        where += st;
        if (last) {
          node[static_cast<std::size_t>(i)] = value;
        } else {
          node.reset(node[static_cast<std::size_t>(i)]);
        }
        continue;
      }
      if (node.IsSequence()) {
        // a list element by its name
        bool found = false;
        for (std::size_t i = 0; i < node.size() && !found; ++i) {
          if (node[i].IsMap() && node[i]["name"] && node[i]["name"].IsScalar() && node[i]["name"].Scalar() == st) {
            where += "[" + std::to_string(i) + "]";
            if (last) {
              node[i] = value;
            } else {
              node.reset(node[i]);
            }
            found = true;
          }
        }
        if (!found)
          fail((where.empty() ? std::string("the top level") : where) + " has no element named \"" + st + "\"");
        continue;
      }
      if (!node.IsMap()) fail((where.empty() ? std::string("the top level") : where) + " is not a map");
      where += (where.empty() ? "" : ".") + st;
      if (last) {
        node[st] = value;
      } else {
        const bool appends = k + 2 == steps.size() && steps[k + 1] == "[+]";
        if (!node[st] || node[st].IsNull()) {
          // a section the file leaves out (`recording.compress=false` without a `recording:`)
          // is created as a map, `key[+]` as a list; the new key is the option's, so a typo
          // (`recordng.compress`) is refused by the check that follows, naming the option
          node[st] = YAML::Node(appends ? YAML::NodeType::Sequence : YAML::NodeType::Map);
          root.context().overrides.emplace_back(where, option);
        }
        node.reset(node[st]);
      }
    }
    root.context().overrides.emplace_back(where, option);
  }
}

ConfigNode load_config_text(const std::string& text, const std::string& label) {
  auto context = std::make_shared<ConfigContext>();
  context->file = label;
  // the text as events first (lean: no tree), for keys given twice and for the limits, so
  // that a file past them is refused before YAML::Load builds its tree (only the first
  // document, as YAML::Load reads only that one)
  std::istringstream events(text);
  YAML::Parser parser(events);
  DuplicateKeyFinder finder(*context);
  try {
    parser.HandleNextDocument(finder);
    if (finder.too_large())
      throw ConfigError({position(label, *finder.too_large()) + ": the document expands to more than " +
                         std::to_string(max_config_nodes) +
                         " YAML nodes here (an alias counts as everything it repeats, at every use); a "
                         "scenario this large is refused (docs/scenario.md, \"Limits\")"});

    // a second document would be ignored without a word: refuse it
    ConfigContext ignored;
    DuplicateKeyFinder rest(ignored);
    if (parser.HandleNextDocument(rest))
      throw ConfigError({position(label, rest.document_start()) +
                         ": a second YAML document (after ---); a scenario file holds exactly one"});
  } catch (const YAML::ParserException& e) {
    throw ConfigError({position(label, e.mark) + ": YAML syntax error: " + e.msg});
  } catch (const DuplicateKeyFinder::TooManyElements& e) {
    throw ConfigError({position(label, e.mark) + ": " + e.path + ": a list with more than " +
                       std::to_string(max_list_elements) +
                       " elements; no scenario list is as long (many static bodies load, a terrain this large "
                       "comes from a PGM image), so it is refused here (docs/scenario.md, \"Limits\")"});
  } catch (const DuplicateKeyFinder::TooManyKeys& e) {
    throw ConfigError({position(label, e.mark) + ": " + e.path + ": a map with more than " +
                       std::to_string(max_map_keys) +
                       " keys; no scenario map has as many (a generated file gone wrong?), so it is refused here "
                       "(docs/scenario.md, \"Limits\")"});
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw ConfigError({position(label, e.mark) + ": YAML syntax error: " + e.msg});
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
