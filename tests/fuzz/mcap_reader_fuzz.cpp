// SPDX-License-Identifier: Apache-2.0
// libFuzzer harness for the MCAP reader (not built by CMake). From the repo root:
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Iruntime/recording/include
//   tests/fuzz/mcap_reader_fuzz.cpp runtime/recording/src/mcap_reader.cpp runtime/recording/src/mcap_format.cpp -lzstd
//   -o /tmp/mcap_reader_fuzz && /tmp/mcap_reader_fuzz -max_total_time=60
// Seed it with real recordings (e.g. build/test_output/mcap/*.mcap) for deeper coverage.

#include <cstddef>
#include <cstdint>
#include <string>

#include "tether/recording/mcap_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace mcap = tether::runtime::mcap;
  for (const bool verify : {true, false}) {
    mcap::ReaderOptions options;
    options.verify_crcs = verify;  // without CRCs the parsers behind them get exercised too
    options.max_chunk_bytes = std::uint64_t{1} << 20;
    mcap::Reader reader(options);
    std::string error;
    if (!reader.open_memory(std::string(reinterpret_cast<const char*>(data), size), &error)) continue;
    mcap::MessageView message;
    std::size_t bytes = 0;
    while (reader.next(message)) bytes += message.data.size();
    (void)bytes;
  }
  return 0;
}
