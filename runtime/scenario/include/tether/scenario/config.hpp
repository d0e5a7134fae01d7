// SPDX-License-Identifier: Apache-2.0
// Reading YAML scenario files with errors people can act on:
//   scenario.yaml:14:7: vehicles[0].bodies[0].mass_kg: expected a number > 0, got "heavy"
// Readers record every problem they find (not just the first) and the caller throws
// ConfigError once at the end, so one `tether check` shows all mistakes in a file.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "tether/physics/math.hpp"

namespace tether::runtime {

/// All problems found in one scenario file, one positioned line each.
class ConfigError : public std::runtime_error {
 public:
  /// `errors` as a ConfigContext collects them: the first ConfigContext::listed_errors with
  /// their text, an empty placeholder for each one after. errors() lists the first ones and,
  /// when there were more, a last line saying how many; count() is the true number.
  explicit ConfigError(std::vector<std::string> errors);
  const std::vector<std::string>& errors() const { return errors_; }
  std::size_t count() const { return count_; }

 private:
  struct Listed {
    std::size_t count = 0;
    std::vector<std::string> lines;
  };
  static Listed listed(std::vector<std::string> errors);
  explicit ConfigError(Listed listed);

  std::size_t count_ = 0;
  std::vector<std::string> errors_;
};

/// Shared by every ConfigNode of one file: its name and the list of errors so far.
struct ConfigContext {
  /// Errors past this many are counted, not written: a file with a million unknown keys is
  /// refused fast, in little memory, with a readable list (the count stays true:
  /// `errors.size()` grows by one per error, with an empty placeholder).
  static constexpr std::size_t listed_errors = 100;
  bool listing() const { return errors.size() < listed_errors; }

  std::string file;
  std::vector<std::string> errors;
  /// `--set PATH=VALUE` overrides applied to the tree: (path as ConfigNode writes it, the
  /// option as given). An error at or under such a path is reported against the option.
  std::vector<std::pair<std::string, std::string>> overrides;
  /// The option that gives overrides, for messages (`tether test --campaign-set` for campaign files).
  std::string override_option = "--set";
};

/// Bounds for numbers; `expected()` renders them for messages ("a number > 0").
struct Range {
  double min = -1e300;
  double max = 1e300;
  bool min_exclusive = false;
  static Range any() { return {}; }
  static Range positive() { return {0, 1e300, true}; }
  static Range non_negative() { return {0, 1e300, false}; }
  static Range between(double lo, double hi) { return {lo, hi, false}; }
  bool contains(double v) const { return (min_exclusive ? v > min : v >= min) && v <= max; }
  std::string expected() const;
};

/// A position in the YAML tree: the node, its key path and where it is in the file.
class ConfigNode {
 public:
  ConfigNode(std::shared_ptr<ConfigContext> context, YAML::Node node, std::string path, YAML::Mark mark);

  const std::string& path() const { return path_; }
  const YAML::Node& yaml() const { return node_; }
  ConfigContext& context() const { return *context_; }
  const std::shared_ptr<ConfigContext>& context_ptr() const { return context_; }
  bool is_map() const { return node_.IsMap(); }
  bool is_sequence() const { return node_.IsSequence(); }
  bool has(const char* key) const;
  std::size_t size() const { return node_.size(); }

  /// The child at `key` (an undefined node if absent: reading from it reports "missing").
  ConfigNode operator[](const char* key) const;
  /// The i-th element of a sequence.
  ConfigNode at(std::size_t i) const;

  /// Reports keys other than `allowed` as errors; false if the node is not a map.
  bool expect_map(std::initializer_list<const char*> allowed) const;
  /// The same for a list built elsewhere (an endpoint type's keys); `note`, when given, adds
  /// to an unknown key's error what it says of that key ("" for nothing).
  bool expect_map(std::span<const char* const> allowed,
                  const std::function<std::string(std::string_view key)>& note = {}) const;
  /// Reports an error unless the node is a sequence; an absent node is an empty list.
  bool expect_sequence() const;

  double number(const char* key, Range range = Range::any()) const;
  double number_or(const char* key, double fallback, Range range = Range::any()) const;
  std::int64_t integer_or(const char* key, std::int64_t fallback, std::int64_t min, std::int64_t max) const;
  std::uint64_t unsigned_or(const char* key, std::uint64_t fallback) const;
  bool boolean_or(const char* key, bool fallback) const;
  std::string string(const char* key) const;
  std::string string_or(const char* key, std::string fallback) const;
  /// A string that must be one of `choices`.
  std::string choice_or(const char* key, std::string fallback, std::initializer_list<const char*> choices) const;
  Vec3 vec3_or(const char* key, const Vec3& fallback, Range range = Range::any()) const;
  /// Numbers in a list of exactly `count` (or any length if count is 0).
  std::vector<double> numbers_or(const char* key, std::vector<double> fallback, std::size_t count = 0,
                                 Range range = Range::any()) const;

  /// Records "file:line:col: path: message" at this node.
  void error(const std::string& message) const;
  /// Records "file:line:col: path.key: expected <what>, got <value>" at the child.
  void expected(const char* key, const std::string& what) const;

 private:
  std::shared_ptr<ConfigContext> context_;
  YAML::Node node_;
  std::string path_;
  YAML::Mark mark_;
};

/// Applies `--set PATH=VALUE` overrides to a loaded file: PATH is keys separated by dots
/// with list elements as `[i]` or by their `name:` (`endpoints.firmware.deadline_ms`,
/// `vehicles[0].bodies[0].mass_kg`, `vehicles.auv.bodies.hull.mass_kg`), VALUE is YAML (a
/// number, a string, a list). A missing final key is added. A final `[+]` appends VALUE to
/// a list, creating the list when the key is absent (`faults[+]={device: ..., kind: stuck}`).
/// Throws ConfigError naming the option for a path that does not lead anywhere or a value
/// that is not YAML.
void apply_overrides(const ConfigNode& root, const std::vector<std::string>& overrides);

/// True if `text` is well-formed UTF-8 (no overlong forms, no surrogates, at most U+10FFFF).
bool valid_utf8(std::string_view text);
/// `text` safe to print: control bytes and bytes that are not part of well-formed UTF-8
/// become \xNN.
std::string printable(std::string_view text);

/// The most YAML nodes a scenario may expand to, an alias counted with everything it repeats
/// at every use: a small file cannot make `check` walk a billion cells (docs/scenario.md).
inline constexpr std::size_t max_config_nodes = 4'000'000;

/// Human rendering of a node's value for messages: "\"heavy\"", "a list", "a map", "nothing".
std::string describe_value(const YAML::Node& node);

/// Loads a YAML file; YAML syntax errors become a ConfigError with the file position
/// (thrown at once). A key given twice in one map, at any depth, is recorded in the
/// context's errors with both positions, for the caller to throw with the rest:
///   scenario.yaml:40:1: loop: key given twice (first at scenario.yaml:3:1)
ConfigNode load_config_file(const std::string& path);
/// Same for text already in memory; `label` stands for the file name in messages.
ConfigNode load_config_text(const std::string& text, const std::string& label);

}  // namespace tether::runtime
