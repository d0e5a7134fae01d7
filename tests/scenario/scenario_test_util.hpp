// SPDX-License-Identifier: Apache-2.0
// Helpers of the scenario tests: the errors a text gives, a text with one part replaced.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tether/scenario/scenario.hpp"

namespace tether::runtime::test {

/// The errors parse_scenario reports for `text` (as file "s.yaml"), or an empty list if it parsed.
inline std::vector<std::string> errors_of(const std::string& text) {
  try {
    parse_scenario(text, "s.yaml");
  } catch (const ConfigError& e) {
    return e.errors();
  }
  return {};
}

/// `text` with the first `from` replaced by `to` (which must be there).
inline std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace tether::runtime::test
