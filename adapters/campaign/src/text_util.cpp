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

namespace {

bool has_dot_dot(const fs::path& p) {
  for (const auto& part : p)
    if (part == "..") return true;
  return false;
}

}  // namespace

std::string relative_to(const std::string& path, const std::string& dir) {
  if (path.empty()) return path;
  std::error_code ec;
  const fs::path p = fs::absolute(path, ec);
  const fs::path d = fs::absolute(dir, ec);
  // the common case, a run's file inside the campaign's folder: the rest of its name, whatever
  // links the folder's own path goes through. fs::relative resolves every component of both
  // paths (a readlink each): for every path of every rewrite of the results, it was most of
  // what the campaign's process did (docs/campaigns.md, "The campaign's own work"). Names with
  // ".." in them take that way still (a link before ".." leads elsewhere than the text says).
  if (!ec && !has_dot_dot(path) && !has_dot_dot(dir)) {
    const fs::path lexical = p.lexically_normal().lexically_relative(d.lexically_normal());
    if (!lexical.empty() && *lexical.begin() != "..") return lexical.string();
  }
  const fs::path rel = fs::relative(p, d, ec);
  return ec || rel.empty() ? path : rel.string();
}

}  // namespace tether::campaign
