// SPDX-License-Identifier: Apache-2.0
#include "tether/process/launch_check.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace tether::adapters {

std::string find_program(const std::string& name) {
  std::error_code ec;
  if (name.find('/') != std::string::npos) return std::filesystem::is_regular_file(name, ec) ? name : std::string();
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  for (std::size_t start = 0; start <= dirs.size();) {
    const auto colon = dirs.find(':', start);
    const std::string dir = dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (std::filesystem::is_regular_file(candidate, ec) && access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return {};
}

std::vector<std::string> launch_problems(const std::string& endpoint, const std::vector<std::string>& command,
                                         const std::string& image) {
  std::vector<std::string> missing;
  const std::string where = "endpoint \"" + endpoint + "\": launch: ";
  std::error_code ec;
  if (!image.empty() && !std::filesystem::is_regular_file(image, ec))
    missing.push_back(where + "the firmware image " + image + " does not exist (not built yet?)");
  if (!command.empty() && find_program(command.front()).empty())
    missing.push_back(where + (command.front().find('/') != std::string::npos
                                   ? "the program " + command.front() + " does not exist (not built yet?)"
                                   : command.front() + " is not on PATH (is it installed?)"));
  else if (!command.empty() && command.front().find('/') != std::string::npos &&
           access(command.front().c_str(), X_OK) != 0)
    missing.push_back(where + "the program " + command.front() + " is not executable");
  return missing;
}

std::vector<std::string> launch_problems(const std::vector<std::unique_ptr<runtime::Endpoint>>& endpoints) {
  std::vector<std::string> missing;
  for (const auto& e : endpoints)
    for (std::string& m : e->launch_problems()) missing.push_back(std::move(m));
  return missing;
}

}  // namespace tether::adapters
