// SPDX-License-Identifier: Apache-2.0
#include "tether/hal/device_name.hpp"

namespace tether::hal {

bool valid_name_segment(std::string_view s) {
  if (s.empty() || s.size() > 31) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  for (char c : s)
    if (!alpha(c) && !(c >= '0' && c <= '9') && c != '-') return false;
  return true;
}

bool parse_device_name(std::string_view text, DeviceName& out, std::string* error) {
  const auto first = text.find('.');
  const auto second = first == std::string_view::npos ? first : text.find('.', first + 1);
  if (second == std::string_view::npos || text.find('.', second + 1) != std::string_view::npos) {
    if (error) *error = "expected vehicle.part.device (three names joined by dots), got \"" + std::string(text) + "\"";
    return false;
  }
  const std::string_view parts[3] = {text.substr(0, first), text.substr(first + 1, second - first - 1),
                                     text.substr(second + 1)};
  for (const auto& p : parts)
    if (!valid_name_segment(p)) {
      if (error)
        *error = "\"" + std::string(p) + "\" in \"" + std::string(text) +
                 "\" is not a valid name (letters, digits, _ and -, starting with a letter or _, at most 31)";
      return false;
    }
  out.vehicle = parts[0];
  out.part = parts[1];
  out.device = parts[2];
  return true;
}

}  // namespace tether::hal
