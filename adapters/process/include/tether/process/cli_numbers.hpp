// SPDX-License-Identifier: Apache-2.0
// Number checks for the programs' command lines (CLI11). CLI11's PositiveNumber and
// NonNegativeNumber name their range with all 309 digits of the largest double; these say
// what they expect and what they got: `--duration-s: expects a number > 0, not "-1"`.
#pragma once

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdlib>
#include <string>

namespace tether::adapters {

// a finite number > 0 (or >= 0 where zero_allowed)
inline CLI::Validator zero_or_more(bool zero_allowed) {
  return CLI::Validator(
      [zero_allowed](std::string& in) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(in.c_str(), &end);
        if (!in.empty() && *end == '\0' && std::isfinite(v) && (zero_allowed ? v >= 0 : v > 0)) return {};
        return std::string("expects a number ") + (zero_allowed ? ">= 0" : "> 0") + ", not \"" + in + "\"";
      },
      zero_allowed ? "NUMBER>=0" : "NUMBER>0");
}

inline CLI::Validator positive_number() { return zero_or_more(false); }
inline CLI::Validator non_negative_number() { return zero_or_more(true); }

}  // namespace tether::adapters
