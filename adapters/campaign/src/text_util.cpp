// SPDX-License-Identifier: Apache-2.0
#include "text_util.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace tether::campaign {

namespace fs = std::filesystem;

std::string flow_text(const YAML::Node& node) {
  YAML::Emitter out;
  out.SetMapFormat(YAML::Flow);
  out.SetSeqFormat(YAML::Flow);
  out << node;
  return out.c_str();
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s);
  return buf;
}

std::string relative_to(const std::string& path, const std::string& dir) {
  if (path.empty()) return path;
  std::error_code ec;
  const fs::path rel = fs::relative(fs::absolute(path, ec), fs::absolute(dir, ec), ec);
  return ec || rel.empty() ? path : rel.string();
}

}  // namespace tether::campaign
