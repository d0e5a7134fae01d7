// SPDX-License-Identifier: Apache-2.0
// Fuzz target for the protobuf decoders of the replay channels (runtime/recording,
// docs/recording.md): the first byte picks the message (step record, keyframe, state,
// operator commands, safe replies), the rest is its bytes. Whatever a decoder accepts must
// encode again, decode again, and encode the second time to the same bytes (a decoded
// record is something the writer could have written). Built with the suite's driver
// (tests/fuzz/fuzz_driver.cpp) or libFuzzer (docs/reliability.md, "What is fuzzed").

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tether/recording/recording.hpp"

namespace {

using namespace tether::runtime;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "recording_messages_fuzz: broken invariant: %s\n", what);
    std::abort();
  }
}

// decode -> encode -> decode -> encode: the two encodings are equal
template <typename T, typename Decode, typename Encode>
void round(std::string_view bytes, Decode decode, Encode encode) {
  T first;
  std::string error;
  if (!decode(bytes, first, &error)) {
    check(!error.empty(), "a refused record has a reason");
    return;
  }
  std::string once;
  encode(first, once);
  T second;
  check(decode(once, second, &error), "what decoded encodes to something that decodes");
  std::string twice;
  encode(second, twice);
  check(once == twice, "encoding a decoded record is stable");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 5) {
    case 0:
      round<StepRecord>(bytes, decode_step, [](const StepRecord& r, std::string& o) { encode_step(r, o); });
      break;
    case 1:
      round<Keyframe>(bytes, decode_keyframe, [](const Keyframe& k, std::string& o) { encode_keyframe(k, o); });
      break;
    case 2:
      round<WorldState>(bytes, decode_state, [](const WorldState& s, std::string& o) { encode_state(s, o); });
      break;
    case 3:
      round<StepCommands>(bytes, decode_step_commands,
                          [](const StepCommands& c, std::string& o) { encode_step_commands(c, o); });
      break;
    default:
      round<std::vector<Reply>>(bytes, decode_safe_replies,
                                [](const std::vector<Reply>& r, std::string& o) { encode_safe_replies(r, o); });
  }
  return 0;
}
