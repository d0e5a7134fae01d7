// SPDX-License-Identifier: Apache-2.0
// Endpoint keys that name things outside the scenario: environment variables, paths relative
// to the scenario file, programs to launch. Shared by the serial and MQTT endpoints.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tether/scenario/config.hpp"
#include "tether/scenario/scenario.hpp"

namespace tether::adapters {

/// Replaces ${NAME} and ${NAME:-default} with the environment's values; false and the
/// variable's name in `missing` if a variable without default is unset.
bool expand_env(const std::string& text, std::string& out, std::string* missing);

/// The scenario file's folder, absolute (the current folder for a scenario from a string).
std::string scenario_dir(const runtime::Scenario& scenario);

/// A key's text with ${VAR} expanded and {scenario_dir} replaced by `base`; with `is_path`, a
/// relative path that has a '/' is made absolute against `base` (a bare name stays for PATH).
/// An unset variable is an error on `node`; the raw text is returned then.
std::string resolve_config_text(const runtime::ConfigNode& node, const std::string& raw, const std::string& base,
                                bool is_path);

/// The node's scalar text, or "" for maps, lists and absent keys.
std::string config_scalar(const runtime::ConfigNode& node);

/// `launch.command`: a non-empty list of strings, resolved (the first as a path) into `out`.
void parse_launch_command(const runtime::ConfigNode& command, const std::string& base, std::vector<std::string>& out);

/// `launch.env` (a map of variable: value) and `launch.cwd` (a path), when present.
void parse_launch_env_cwd(const runtime::ConfigNode& launch, const std::string& base,
                          std::vector<std::pair<std::string, std::string>>& env, std::string& cwd);

/// How a key names a device: 2 when `name` is its full name ("auv.hull.thruster"), 1 when it
/// is a tail after a dot ("thruster", "hull.thruster"), 0 otherwise. Endpoint keys accept
/// both; a tail that fits more than one device is the caller's "ambiguous" error.
int device_name_match(const std::string& full, const std::string& name);

/// A device of `vehicle` by its full name or a unique tail ("thruster", "hull.thruster"): its
/// index in the scenario's devices, -1 when there is none, -2 when the tail fits more than one.
int find_vehicle_device(const runtime::Scenario& scenario, const std::string& vehicle, const std::string& name);

/// `launch:` of an endpoint that starts a program beside it (MQTT's vehicle, ArduPilot):
/// the command line with the endpoint's own {placeholders} still in it, env, cwd.
struct ProgramLaunchConfig {
  std::vector<std::string> command;
  std::vector<std::pair<std::string, std::string>> env;
  std::string cwd;
  std::int64_t kill_after_ms = 2000;  // after SIGTERM at stop(), how long before SIGKILL
};

/// Reads `launch: {command, env, cwd, kill_after_ms}` (positioned errors on the node).
ProgramLaunchConfig parse_program_launch(const runtime::ConfigNode& launch, const std::string& base);

/// Every `{what}` in each argument replaced by `with`.
void replace_placeholder(std::vector<std::string>& argv, const std::string& what, const std::string& with);

}  // namespace tether::adapters
