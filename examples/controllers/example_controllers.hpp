// SPDX-License-Identifier: Apache-2.0
// Example in-process controllers, outside the runtime library: the `tether` CLI links this
// library and registers them at start-up. Copy depth_heading_hold.cpp to start your own
// (docs/extending.md, "An in-process controller").
#pragma once

namespace tether::examples {

/// Registers `depth_heading_hold` with runtime::controllers(). Safe to call more than
/// once; returns true if the name is registered (by this or an earlier call).
bool register_example_controllers();

}  // namespace tether::examples
