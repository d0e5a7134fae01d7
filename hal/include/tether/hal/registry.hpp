// SPDX-License-Identifier: Apache-2.0
// One shape for every extension point: a table of name -> factory with a one-line
// description, filled at start-up. Feedback processors, endpoint kinds, in-process
// controllers and device kinds each keep one (docs/extending.md). It lives in hal, the
// lowest room both the hal and the loop can include.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tether::hal {

template <class Factory>
class Registry {
 public:
  struct Entry {
    std::string name;
    Factory factory;
    std::string description;  // one line, for `tether kinds` and docs
  };

  /// `what` names an entry in messages ("endpoint type", "controller").
  explicit Registry(std::string what) : what_(std::move(what)) {}

  /// Makes `name` known; false (and the existing entry stays) if it already is. Call at
  /// set-up, before scenarios are loaded; not thread-safe.
  bool add(std::string name, Factory factory, std::string description) {
    if (find(name)) return false;
    entries_.push_back({std::move(name), std::move(factory), std::move(description)});
    return true;
  }

  /// The factory registered under `name`, or nullptr.
  const Factory* find(std::string_view name) const {
    for (const Entry& e : entries_)
      if (e.name == name) return &e.factory;
    return nullptr;
  }

  /// Registered names, in registration order.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    out.reserve(entries_.size());
    for (const Entry& e : entries_) out.push_back(e.name);
    return out;
  }

  /// Every entry, in registration order.
  const std::vector<Entry>& entries() const { return entries_; }

  /// What an entry is called in messages ("endpoint type").
  const std::string& what() const { return what_; }

  /// The names joined by ", " ("none" if empty), for error messages.
  std::string known_list() const {
    std::string list;
    for (const Entry& e : entries_) list += (list.empty() ? "" : ", ") + e.name;
    return list.empty() ? std::string("none") : list;
  }

  /// `unknown <what> "<name>" (known: a, b, c)`: the message for a name nobody registered.
  std::string unknown_message(std::string_view name) const {
    return "unknown " + what_ + " \"" + std::string(name) + "\" (known: " + known_list() + ")";
  }

 private:
  std::string what_;
  std::vector<Entry> entries_;
};

}  // namespace tether::hal
