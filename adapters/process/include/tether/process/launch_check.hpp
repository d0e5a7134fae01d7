// SPDX-License-Identifier: Apache-2.0
// What `tether check` asks of an endpoint before anything starts: is the program it would
// launch there (by path, or on PATH), and the firmware image it would load? Each endpoint
// type answers for its own configuration (runtime::Endpoint::launch_problems); these are
// the helpers it answers with, and the one call the CLI makes for every endpoint.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tether/loop/endpoint.hpp"

namespace tether::adapters {

/// The file a program named on a command line resolves to: itself if the name has a slash
/// (and is a regular file), else the first executable of that name on PATH; empty: none.
std::string find_program(const std::string& name);

/// What is missing to launch `command` (argv; its program) and load `image` (a firmware
/// image file; empty: none) for the endpoint `endpoint`: one message each, as
/// `endpoint "NAME": launch: the program ./fw does not exist (not built yet?)`.
std::vector<std::string> launch_problems(const std::string& endpoint, const std::vector<std::string>& command,
                                         const std::string& image = {});

/// Every endpoint's launch_problems(), in endpoint order: what `tether check` reports.
std::vector<std::string> launch_problems(const std::vector<std::unique_ptr<runtime::Endpoint>>& endpoints);

}  // namespace tether::adapters
