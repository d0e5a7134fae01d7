// SPDX-License-Identifier: Apache-2.0
// Foxglove's well-known message types as the official JSON Schemas of the npm package
// @foxglove/schemas (MIT licence), embedded as published (runtime/recording/schemas/).
#pragma once

#include <string_view>

namespace tether::runtime {

/// The official JSON Schema of a Foxglove message type ("foxglove.SceneUpdate"); empty if
/// the type is not one Tether embeds.
std::string_view foxglove_schema(std::string_view name);

}  // namespace tether::runtime
