// SPDX-License-Identifier: Apache-2.0
// JSON to text for everything Tether writes (recordings, summaries, MQTT payloads, CLI
// output). Strings reach JSON from files, firmware, MQTT peers and clients; one that is not
// valid UTF-8 is written with U+FFFD in place of the bad bytes instead of throwing (which,
// on the recorder's thread, would end the process and leave the recording truncated).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tether::runtime {

inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tether::runtime
