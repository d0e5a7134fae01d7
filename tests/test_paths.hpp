// SPDX-License-Identifier: Apache-2.0
// Where the tests and benchmarks find the checkout and the build: two functions compiled in
// one generated unit (build/generated/test_paths.cpp), not -D definitions on every unit — a
// definition holding an absolute path changes every unit's command line, and ccache's
// base_dir does not rewrite it, so a clone at another path compiled all of them again
// (docs/testing.md).
#pragma once

#include <string>

namespace tether::test_paths {
const std::string& source_dir();  // the checkout
const std::string& binary_dir();  // the build folder
}  // namespace tether::test_paths

#define TETHER_SOURCE_DIR (::tether::test_paths::source_dir())
#define TETHER_BINARY_DIR (::tether::test_paths::binary_dir())
