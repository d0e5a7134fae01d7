// SPDX-License-Identifier: Apache-2.0
// Fuzz target for the MCAP reader (runtime/recording): the input is a whole file, opened from
// memory with and without CRC checks. What opens must read back as open() counted it: next()
// gives exactly info().message_count messages without an error, each on a channel the reader
// knows, with a log time inside [message_start_time_ns, message_end_time_ns] and the per-channel
// counts of info(); rewind() gives the same messages again. Built with the suite's driver
// (tests/fuzz/fuzz_driver.cpp) or libFuzzer (docs/reliability.md, "What is fuzzed").

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "tether/recording/mcap_reader.hpp"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "mcap_reader_fuzz: broken invariant: %s\n", what);
    std::abort();
  }
}

// reads every message; returns their count and a checksum of their bytes and times
std::uint64_t read_all(tether::runtime::mcap::Reader& reader, std::uint64_t& sum) {
  namespace mcap = tether::runtime::mcap;
  const mcap::Info& info = reader.info();
  std::map<std::uint16_t, std::uint64_t> per_channel;
  mcap::MessageView message;
  std::uint64_t count = 0;
  sum = 0;
  while (reader.next(message)) {
    ++count;
    ++per_channel[message.channel_id];
    check(reader.channel(message.channel_id) != nullptr, "a message's channel is known");
    check(message.log_time_ns >= info.message_start_time_ns && message.log_time_ns <= info.message_end_time_ns,
          "a message's log time is inside the file's range");
    sum = sum * 31 + message.log_time_ns + message.sequence + message.data.size();
    for (std::byte b : message.data) sum = sum * 131 + static_cast<std::uint8_t>(b);
  }
  check(reader.error().empty(), "next() fails on a file that open() accepted");
  check(count == info.message_count, "next() gives as many messages as open() counted");
  check(per_channel == info.channel_message_counts, "per-channel counts agree with open()");
  return count;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace mcap = tether::runtime::mcap;
  for (const bool verify : {true, false}) {
    mcap::ReaderOptions options;
    options.verify_crcs = verify;  // without CRCs the parsers behind them get exercised too
    options.max_chunk_bytes = std::uint64_t{1} << 20;
    mcap::Reader reader(options);
    std::string error;
    if (!reader.open_memory(std::string(reinterpret_cast<const char*>(data), size), &error)) {
      check(!error.empty(), "a file that does not open has an error message");
      continue;
    }
    check(reader.info().file_size_bytes == size, "the file size is the input's");
    std::uint64_t first = 0, second = 0;
    const std::uint64_t count = read_all(reader, first);
    reader.rewind();
    check(read_all(reader, second) == count && second == first, "rewind() reads the same messages again");
  }
  return 0;
}
