// SPDX-License-Identifier: Apache-2.0
#include "tether/mqtt/mqtt_socket.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <vector>

namespace tether::adapters::mqtt {

bool split_broker_uri(const std::string& uri, std::string& host, int& port) {
  const std::size_t sep = uri.find("://");
  if (sep == std::string::npos) return false;
  const std::string scheme = uri.substr(0, sep);
  const bool tls = scheme == "ssl" || scheme == "mqtts" || scheme == "wss";
  if (!tls && scheme != "tcp" && scheme != "mqtt") return false;
  std::string rest = uri.substr(sep + 3);
  if (const std::size_t slash = rest.find('/'); slash != std::string::npos) rest.resize(slash);
  port = tls ? 8883 : 1883;
  if (!rest.empty() && rest.front() == '[') {  // [::1]:1883
    const std::size_t close = rest.find(']');
    if (close == std::string::npos) return false;
    host = rest.substr(1, close - 1);
    rest = rest.substr(close + 1);
    if (!rest.empty() && rest.front() == ':') port = std::atoi(rest.c_str() + 1);
  } else if (const std::size_t colon = rest.rfind(':'); colon != std::string::npos) {
    host = rest.substr(0, colon);
    port = std::atoi(rest.c_str() + colon + 1);
  } else {
    host = rest;
  }
  return !host.empty() && port > 0 && port < 65536;
}

int set_tcp_nodelay_for_broker(const std::string& uri) {
  std::string host;
  int port = 0;
  if (!split_broker_uri(uri, host, port)) return -1;
  // the broker's addresses, as the socket's peer name will show them
  std::vector<sockaddr_storage> peers;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) == 0) {
    for (addrinfo* a = found; a; a = a->ai_next) {
      sockaddr_storage s{};
      std::memcpy(&s, a->ai_addr, a->ai_addrlen);
      peers.push_back(s);
    }
    freeaddrinfo(found);
  }
  const auto same_peer = [&](const sockaddr_storage& p) {
    for (const sockaddr_storage& b : peers) {
      if (p.ss_family != b.ss_family) continue;
      if (p.ss_family == AF_INET) {
        const auto& x = reinterpret_cast<const sockaddr_in&>(p);
        const auto& y = reinterpret_cast<const sockaddr_in&>(b);
        if (ntohs(x.sin_port) == port && x.sin_addr.s_addr == y.sin_addr.s_addr) return true;
      } else if (p.ss_family == AF_INET6) {
        const auto& x = reinterpret_cast<const sockaddr_in6&>(p);
        const auto& y = reinterpret_cast<const sockaddr_in6&>(b);
        if (ntohs(x.sin6_port) == port && std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof x.sin6_addr) == 0) return true;
      }
    }
    return false;
  };

  int changed = 0;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return 0;
  const int own = dirfd(dir);
  while (const dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd_long = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0') continue;
    const int fd = static_cast<int>(fd_long);
    if (fd == own) continue;
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    int type = 0;
    socklen_t len = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) continue;
    sockaddr_storage peer{};
    socklen_t peer_len = sizeof peer;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0 || !same_peer(peer)) continue;
    int on = 0;
    len = sizeof on;
    if (getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, &len) == 0 && on) continue;
    on = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on) == 0) ++changed;
  }
  closedir(dir);
  return changed;
}

std::string describe_connect_failure(int return_code, int reason_code, const std::string& what) {
  // MQTT 3.1.1 CONNACK codes come back as return codes 1..5 (Paho C: MQTTASYNC_* otherwise)
  std::string why;
  switch (return_code) {
    case 1: why = "the broker refused the protocol version"; break;
    case 2: why = "the broker refused the client id"; break;
    case 3: why = "the broker is unavailable"; break;
    case 4: why = "bad user name or password (check username and password)"; break;
    case 5: why = "not authorized (check username and password, or the broker's ACL)"; break;
    default: break;
  }
  if (reason_code == 0x86 || reason_code == 0x87) why = "not authorized (check username and password)";
  if (why.empty()) return what;
  return why + " [" + what + "]";
}

}  // namespace tether::adapters::mqtt
