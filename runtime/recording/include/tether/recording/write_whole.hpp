// SPDX-License-Identifier: Apache-2.0
// Files a session or a command leaves for people and tools (summary.json, report.html, a
// campaign's results): written whole or not at all.
#pragma once

#include <string>
#include <string_view>

namespace tether::runtime {

/// Writes `text` to PATH.tmp and renames it to `path`: a reader never sees half a file. On
/// any failure (a full disk, a size limit, no such folder) nothing is left behind and
/// `error` says "cannot write PATH: <the system's reason>" ("No space left on device").
bool write_whole_file(const std::string& path, std::string_view text, std::string* error);

}  // namespace tether::runtime
