// SPDX-License-Identifier: Apache-2.0
// A template endpoint kind, registered from outside the library (docs/extending.md).
#pragma once

namespace tether::examples {

/// Registers the `loopback` endpoint type with adapters::endpoint_kinds(). Call at set-up,
/// before scenarios are loaded; safe to call more than once. True if `loopback` is known.
bool register_loopback_endpoint();

}  // namespace tether::examples
