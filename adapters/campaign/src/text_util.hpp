// SPDX-License-Identifier: Apache-2.0
// Small text helpers the campaign's stages share (private to the room).
#pragma once

#include <filesystem>
#include <string>

#include <yaml-cpp/yaml.h>

namespace tether::campaign {

/// A YAML value as one line of YAML (flow style), to go after `--set PATH=`.
std::string flow_text(const YAML::Node& node);
/// The whole file as it is ("" when it cannot be read).
std::string read_text(const std::filesystem::path& path);
/// "12.345": seconds with three decimals.
std::string seconds_text(double s);
/// `path` relative to `dir` (both made absolute first); `path` itself when there is no such path.
std::string relative_to(const std::string& path, const std::string& dir);

}  // namespace tether::campaign
