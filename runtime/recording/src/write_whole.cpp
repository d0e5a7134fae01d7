// SPDX-License-Identifier: Apache-2.0
#include "tether/recording/write_whole.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tether::runtime {

bool write_whole_file(const std::string& path, std::string_view text, std::string* error) {
  const std::string tmp = path + ".tmp";
  const auto fail = [&](int err) {
    if (error) *error = "cannot write " + path + ": " + std::strerror(err);
    std::remove(tmp.c_str());
    return false;
  };
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return fail(errno);
  // a full disk shows at the write, the flush or the close, whichever reaches the file first
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fflush(f) == 0;
  const int write_errno = errno;
  const bool closed = std::fclose(f) == 0;
  if (!written) return fail(write_errno);
  if (!closed) return fail(errno);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return fail(errno);
  return true;
}

}  // namespace tether::runtime
