// SPDX-License-Identifier: Apache-2.0
// Small text helpers the campaign's stages share (private to the room).
#pragma once

#include <filesystem>
#include <string>
#include <unordered_map>

#include <yaml-cpp/yaml.h>

namespace tether::campaign {

/// A YAML value as one line of YAML (flow style), to go after `--set PATH=`.
std::string flow_text(const YAML::Node& node);
/// The whole file as it is ("" when it cannot be read).
std::string read_text(const std::filesystem::path& path);
/// "12.345": seconds with three decimals.
std::string seconds_text(double s);
/// Paths made relative to one folder (both made absolute first; links resolved as
/// std::filesystem::relative resolves them; the path itself when there is no such path), remembering every folder it
/// resolved: the paths of a merge's runs lie in the slices' folders, outside the merged one, and resolving each of them
/// afresh (a readlink per component) was most of a merge's time. One per write: links made or removed after it was made
/// are not seen.
class RelativeTo {
 public:
  explicit RelativeTo(std::string dir) : dir_(std::move(dir)) {}
  std::string operator()(const std::string& path);

 private:
  std::filesystem::path resolved(const std::filesystem::path& p, bool remember);
  const std::filesystem::path& dir_resolved();
  std::string plain(const std::string& path, const std::string& as_given);
  std::string slow(const std::string& path);

  std::string dir_;
  std::string cwd_;         // the working folder when the first path came
  std::string dir_text_;    // dir_ absolute, as text, without a trailing '/' (plain names only)
  bool dir_plain_ = false;  // dir_ absolute and without "." or ".." parts or doubled '/'
  bool prepared_ = false;
  std::unordered_map<std::string, std::string> relative_folders_;  // a folder's name -> its relative form
  std::filesystem::path dir_resolved_;
  bool have_dir_ = false;
  std::unordered_map<std::string, std::filesystem::path> folders_;  // absolute name -> links resolved
};

}  // namespace tether::campaign
