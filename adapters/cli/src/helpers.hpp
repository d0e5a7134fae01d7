// SPDX-License-Identifier: Apache-2.0
// What more than one command of the CLI needs: the stop flag Ctrl-C sets, config errors on
// stderr, the session's recorder and the live server of `tether run --live` and
// `tether replay --live`.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "tether/live/server.hpp"
#include "tether/loop/control.hpp"
#include "tether/loop/session.hpp"
#include "tether/recording/recorder.hpp"
#include "tether/scenario/config.hpp"
#include "tether/scenario/scenario.hpp"

namespace tether::cli {

/// Set by SIGINT or SIGTERM once install_signal_handlers() ran: a session stops after its step.
const std::atomic<bool>& stop_requested();
/// SIGINT and SIGTERM set stop_requested(). SIGXFSZ is ignored: a file over the size limit
/// (RLIMIT_FSIZE) is a write error the session reports, not the end of the process.
void install_signal_handlers();
/// Every line of a config error on stderr, then their count ("2 errors").
void print_config_error(const runtime::ConfigError& e);

/// A recorder of the session's endpoints and processors, holding the reply each endpoint's
/// `safe` policy applies (replay applies exactly that); not opened yet.
std::unique_ptr<runtime::Recorder> make_recorder(const runtime::Scenario& scenario, const runtime::Session& session);

/// The live server (docs/live.md), not started yet; null with `exit_code` set when it must
/// not start (a bad --live value, a non-loopback address without a token: refused before
/// anything starts). `host` is what a client connects to ("[::1]" for an IPv6 address).
std::unique_ptr<live::Server> make_live_server(const runtime::Scenario& scenario, const std::string& option,
                                               runtime::SessionControl& control, bool replay, std::string& host,
                                               int& exit_code);
/// Starts it and prints the address a client connects to (a port of 0: the one the system
/// chose); false with the reason on stderr.
bool start_live_server(live::Server& server, const std::string& host, bool paused);

}  // namespace tether::cli
