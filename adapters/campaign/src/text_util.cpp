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

namespace {

// an absolute name in which every part is a name: no "." or "..", no doubled or trailing '/'
bool plain_absolute(std::string_view p) {
  if (p.size() < 2 || p.front() != '/' || p.back() == '/') return false;
  for (std::size_t i = 0; i < p.size();) {
    const std::size_t next = std::min(p.find('/', i + 1), p.size());
    const std::string_view part = p.substr(i + 1, next - i - 1);
    if (part.empty() || part == "." || part == "..") return false;
    i = next;
  }
  return true;
}

}  // namespace

// Plain absolute names (what the campaign and a merge hand it) are taken apart as text: inside
// the folder the rest of the name; elsewhere the name's folder's relative form, worked out
// once per folder, and the last part (the slow way if that part is a link)
std::string RelativeTo::operator()(const std::string& path) {
  if (path.empty()) return path;
  if (!prepared_) {
    std::error_code ec;
    cwd_ = fs::current_path(ec).string();
    dir_text_ = fs::absolute(dir_, ec).string();
    while (dir_text_.size() > 1 && dir_text_.back() == '/') dir_text_.pop_back();
    dir_plain_ = !ec && plain_absolute(dir_text_);
    prepared_ = true;
  }
  if (!dir_plain_) return slow(path);
  // a relative name is taken from the working folder, as fs::absolute takes it
  const std::string absolute = path.front() == '/' ? path : cwd_ + "/" + path;
  if (!plain_absolute(absolute)) return slow(path);
  return plain(absolute, path);
}

std::string RelativeTo::plain(const std::string& path, const std::string& as_given) {
  if (path == dir_text_) return ".";
  if (path.size() > dir_text_.size() && path.compare(0, dir_text_.size(), dir_text_) == 0 &&
      path[dir_text_.size()] == '/')
    return path.substr(dir_text_.size() + 1);
  const std::size_t slash = path.rfind('/');
  if (slash == 0) return slow(as_given);  // a file in the root
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(path, ec))) return slow(as_given);
  const std::string folder = path.substr(0, slash);
  auto it = relative_folders_.find(folder);
  if (it == relative_folders_.end()) {
    const fs::path rel = resolved(fs::path(folder), true).lexically_relative(dir_resolved());
    if (rel.empty()) return slow(as_given);
    it = relative_folders_.emplace(folder, rel == "." ? std::string() : rel.string() + "/").first;
  }
  return it->second + path.substr(slash + 1);
}

std::string RelativeTo::slow(const std::string& path) {
  std::error_code ec;
  const fs::path p = fs::absolute(path, ec);
  const fs::path d = fs::absolute(dir_, ec);
  if (ec) return path;
  // the common case, a run's file inside the campaign's folder: the rest of its name, whatever
  // links the folder's own path goes through (docs/campaigns.md, "The campaign's own work").
  // Names with ".." in them are resolved (a link before ".." leads elsewhere than the text says).
  if (!has_dot_dot(path) && !has_dot_dot(dir_)) {
    const fs::path lexical = p.lexically_normal().lexically_relative(d.lexically_normal());
    if (!lexical.empty() && *lexical.begin() != "..") return lexical.string();
  }
  // elsewhere (a merge's runs in the slices' folders): both with their links resolved, as
  // fs::relative does, the folders on the way remembered
  const fs::path rel = resolved(p, false).lexically_relative(dir_resolved());
  return rel.empty() ? path : rel.string();
}

// the folder with its links resolved, once
const fs::path& RelativeTo::dir_resolved() {
  if (!have_dir_) {
    std::error_code ec;
    dir_resolved_ = resolved(fs::absolute(dir_, ec), true);
    have_dir_ = true;
  }
  return dir_resolved_;
}

// `p` (absolute) with every link in it resolved: its folder's resolution (remembered) and its
// last component, followed if it is a link; "." and ".." after the folder's links are
// resolved, as the system resolves them. A name that does not exist is kept as it is.
fs::path RelativeTo::resolved(const fs::path& p, bool remember) {
  if (!p.has_relative_path()) return p;  // the root
  if (const auto it = folders_.find(p.native()); it != folders_.end()) return it->second;
  const fs::path folder = resolved(p.parent_path(), true);
  const fs::path name = p.filename();
  fs::path out;
  if (name.empty() || name == ".") {
    out = folder;
  } else if (name == "..") {
    out = folder.parent_path();
  } else {
    out = folder / name;
    std::error_code ec;
    if (fs::is_symlink(fs::symlink_status(out, ec))) {
      const fs::path target = fs::weakly_canonical(out, ec);
      if (!ec) out = target;
    }
  }
  if (remember) folders_.emplace(p.native(), out);
  return out;
}

}  // namespace tether::campaign
