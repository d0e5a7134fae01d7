// SPDX-License-Identifier: Apache-2.0
// Socket handling Paho C 1.3.12 does not offer. It never sets TCP_NODELAY, and with Nagle's
// algorithm against the peer's delayed ACKs a QoS 1 exchange stalls ~40 ms each way
// (docs/mqtt.md). Paho has no socket hook in that version, so we find its connected socket
// among the process's descriptors (by the broker's address) and set the option there.
#pragma once

#include <string>

namespace tether::adapters::mqtt {

/// Host and port of a broker URI (tcp://host:port, ssl://host:port, mqtt://, mqtts://; the
/// port defaults to 1883, 8883 for TLS). False if the URI cannot be read.
bool split_broker_uri(const std::string& uri, std::string& host, int& port);

/// Sets TCP_NODELAY on every TCP socket of this process connected to the broker of `uri`
/// that does not have it yet. Returns how many sockets it changed (-1: the URI is unreadable).
int set_tcp_nodelay_for_broker(const std::string& uri);

/// A connection failure in words people act on: "not authorized (check username and
/// password)", "broker unreachable" ... from a Paho return code and message.
std::string describe_connect_failure(int return_code, int reason_code, const std::string& what);

}  // namespace tether::adapters::mqtt
