#!/usr/bin/env bash
# The whole test suite: install what is missing, build under AddressSanitizer +
# UndefinedBehaviorSanitizer, run every test with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/deps.sh test
# ccache: paths relative to the checkout, so a fresh clone elsewhere (CI) reuses the cache
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# -Og compiles the tests, adapters and benchmarks in ~0.6 of -O1's time under the sanitizers;
# the runtime's rooms keep -O1 and the physics -O2 (the top CMakeLists.txt), so the suite's CPU
# runs optimised code while sanitizers and asserts stay on everywhere; -g1 keeps file:line in
# sanitizer reports but not the full debug info (the build stays ~2 GB instead of ~7 GB: a CI
# runner ran out of disk with -g); a C++ warning fails the build (TETHER_WERROR)
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTETHER_SANITIZE=ON -DTETHER_WERROR=ON \
  -DCMAKE_CXX_FLAGS_DEBUG="-g1 -Og" -DCMAKE_C_FLAGS_DEBUG="-g1 -Og" >/dev/null
cmake --build build/asan -j "$(nproc)"
# a report, not a test: what the units of this build cost (docs/performance.md, "Compile cost")
./scripts/compile_cost.sh --build-dir build/asan --top 10 || true
# one test more than cores: the short tests that start programs or wait on a peer leave the
# cores idle ~15 % of the time at -j nproc (docs/testing.md, "More tests at once than cores")
ctest --test-dir build/asan --output-on-failure -j "$(($(nproc) + 1))" --timeout 600
