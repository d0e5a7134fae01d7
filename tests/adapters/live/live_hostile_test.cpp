// SPDX-License-Identifier: Apache-2.0
// What clients must not be able to do to a live session (docs/live.md, "Safe by default"):
// malformed and oversized frames, unknown ids, garbage, a flood of connections, a client
// that never reads, a non-loopback address without a token, more clients than allowed.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "tether/live/client.hpp"
#include "tether/live/protocol.hpp"

#include "live_test_util.hpp"

using nlohmann::json;
using namespace tether;

using tether::live_test::call;
using tether::live_test::connect;
using tether::live_test::free_loopback_port;
using tether::live_test::in_process_file;
using tether::live_test::Process;
using tether::live_test::read_file;
using tether::live_test::Result;
using tether::live_test::run;
using tether::live_test::temp_dir;
using tether::live_test::tether_exe;

namespace {

// reads until the server closes the connection; returns why
std::string until_closed(live::Client& c) {
  for (int i = 0; i < 10000; ++i) {
    live::Client::Frame f;
    std::string error;
    if (!c.next(f, 10, &error)) return error;
  }
  return "still open";
}

// waits for a status message containing `text`
bool status_with(live::Client& c, const std::string& text) {
  for (int i = 0; i < 1000; ++i) {
    for (const auto& s : c.statuses())
      if (s.value("message", "").find(text) != std::string::npos) return true;
    live::Client::Frame f;
    std::string error;
    if (!c.next(f, 10, &error)) return false;
  }
  return false;
}

// a TCP connection to the server on loopback that has said nothing yet
int open_raw(int port) {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  REQUIRE(::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return s;
}

// the in-process scenario with a `live:` block on `port`, paused, written into `dir`
std::string live_block_scenario(const std::string& dir, int port, int max_clients) {
  std::ofstream f(dir + "/scenario.yaml");
  f << read_file(in_process_file) << "\nlive:\n  port: " << port << "\n  max_clients: " << max_clients
    << "\n  start_paused: true\n";
  return dir + "/scenario.yaml";
}

// a raw TCP exchange: sends `bytes`, returns what comes back until the server closes
std::string raw_exchange(int port, const std::string& bytes) {
  const int s = open_raw(port);
  timeval tv{10, 0};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (!bytes.empty()) REQUIRE(send(s, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()));
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = recv(s, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<std::size_t>(n));
  close(s);
  return out;
}

// connects once a place is free (a closed client's place frees when the server has seen it go)
bool connect_when_free(live::Client& client, int port, std::string& error) {
  for (int i = 0; i < 50; ++i) {
    if (client.connect("ws://127.0.0.1:" + std::to_string(port), "", &error)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace

TEST_CASE("live hostile: malformed, oversized and unknown input gets a status or a closed connection, never a crash") {
  const std::string dir = temp_dir("malformed");
  const int port = free_loopback_port();
  Process tether(
      "run " + in_process_file + " --live " + std::to_string(port) + " --paused --steps 1000000 -q --out " + dir, dir);
  live::Client good;
  std::string error;
  REQUIRE_MESSAGE(connect(good, port, "", &error), error);
  call(good, "/tether/step", {{"steps", 5}});

  // unknown ids and ops: a status message, and the connection carries on
  REQUIRE(good.send_text(R"({"op":"subscribe","subscriptions":[{"id":1,"channelId":9999}]})", &error));
  CHECK(status_with(good, "unknown channel id 9999"));
  REQUIRE(good.send_text(R"({"op":"unsubscribe","subscriptionIds":[77]})", &error));
  CHECK(status_with(good, "unknown subscription id 77"));
  std::uint32_t sub = 0;
  REQUIRE(good.subscribe("/tf", sub, &error));
  std::uint64_t scene = 0;  // another channel, with the subscription id already in use
  for (const auto& ch : good.channels())
    if (ch["topic"] == "/scene") scene = ch["id"];
  REQUIRE(good.send_text(R"({"op":"subscribe","subscriptions":[{"id":)" + std::to_string(sub) + R"(,"channelId":)" +
                             std::to_string(scene) + "}]}",
                         &error));
  CHECK(status_with(good, "already"));
  REQUIRE(good.send_text(R"({"op":"frobnicate"})", &error));
  CHECK(status_with(good, "unknown op \"frobnicate\""));
  REQUIRE(good.send_text(R"({"op":"subscribe","subscriptions":"all"})", &error));
  CHECK(status_with(good, "must be an array"));
  std::string frame;
  live::encode_service_call(4242, 1, "json", "{}", frame);
  REQUIRE(good.send_binary(frame, &error));
  CHECK(status_with(good, "unknown service id 4242"));
  json r = call(good, "/tether/step", {{"steps", "ten"}});
  CHECK(r["ok"] == false);
  CHECK(r["error"].get<std::string>().find("steps") != std::string::npos);
  r = call(good, "/tether/set_rtf", {{"rtf", -1}});
  CHECK(r["ok"] == false);

  // malformed frames close that connection with the reason
  {
    live::Client bad;
    REQUIRE(connect(bad, port));
    REQUIRE(bad.send_text("this is not json", &error));
    const std::string why = until_closed(bad);
    CHECK_MESSAGE(why.find("code 1002") != std::string::npos, why);
    CHECK(why.find("malformed") != std::string::npos);
  }
  {
    live::Client bad;
    REQUIRE(connect(bad, port));
    REQUIRE(bad.send_binary(std::string("\x02\x01", 2), &error));
    const std::string why = until_closed(bad);
    CHECK_MESSAGE(why.find("code 1002") != std::string::npos, why);
  }
  {
    live::Client big;
    REQUIRE(connect(big, port));
    // one byte over live.max_frame_bytes (64 KiB)
    REQUIRE(big.send_text(std::string(64 * 1024 + 1, ' '), &error));
    const std::string why = until_closed(big);
    CHECK_MESSAGE(why.find("code 1009") != std::string::npos, why);
  }
  {
    // far over it: the server fails the connection as soon as the frame's header gives its
    // size, so a client still writing the rest may see its connection reset instead
    live::Client huge;
    REQUIRE(connect(huge, port));
    const bool sent = huge.send_text(std::string(8 * 1024 * 1024, ' '), &error);
    const std::string why = sent ? until_closed(huge) : error;
    CHECK_MESSAGE((why.find("code 1009") != std::string::npos || why.find("reset") != std::string::npos ||
                   why.find("Broken pipe") != std::string::npos),
                  why);
  }
  // garbage before the upgrade, plain HTTP, a wrong subprotocol
  CHECK(raw_exchange(port, std::string("\x16\x03\x01\x00\xff garbage\r\n\r\n", 17)).find("400") != std::string::npos);
  // plain HTTP: GET / is the dashboard page, anything else is refused
  const std::string page = raw_exchange(port, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(page.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(page.find("text/html") != std::string::npos);
  CHECK(page.find("foxglove.websocket.v1") != std::string::npos);
  CHECK(raw_exchange(port, "GET /etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n").rfind("HTTP/1.1 404", 0) == 0);
  CHECK(raw_exchange(port, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}").rfind("HTTP/1.1 405", 0) == 0);
  CHECK(raw_exchange(port,
                     "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: "
                     "dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: chat\r\n\r\n")
            .find("400") != std::string::npos);
  // half-open: connects and says nothing (the handshake timeout ends it; not waited for here)
  const int half = open_raw(port);
  // 1,000 connect/disconnect cycles
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) {
    live::Client c;
    REQUIRE_MESSAGE(c.connect("ws://127.0.0.1:" + std::to_string(port), "", &error), "cycle " << i << ": " << error);
    c.close();
  }
  MESSAGE("1000 connect/disconnect cycles in "
          << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s");
  // a flood of service calls without waiting for answers: each is answered or refused
  for (int i = 0; i < 500; ++i) {
    live::encode_service_call(1, static_cast<std::uint32_t>(1000 + i), "json", "{}", frame);
    REQUIRE(good.send_binary(frame, &error));
  }
  // the session was never disturbed: it still steps exactly. While the flood is still in
  // flight a call may be refused ("too many calls in flight"): ask again until it is taken
  const auto taken = [&](const std::string& service, const json& request) {
    json r;
    for (int i = 0; i < 500; ++i) {
      r = call(good, service, request);
      if (r.contains("step")) return r;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    FAIL(service << " never taken: " << r.dump());
    return r;
  };
  const json before = taken("/tether/status", json::object());
  const json after = taken("/tether/step", {{"steps", 7}});
  CHECK(after.value("step", std::uint64_t{0}) == before.value("step", std::uint64_t{0}) + 7);
  close(half);
  call(good, "/tether/shutdown");
  CHECK(tether.wait() == 130);
  const Result replay = run(tether_exe + " replay " + dir + "/recording.mcap --verify -q");
  CHECK_MESSAGE(replay.exit_code == 0, replay.out);
  const json summary = json::parse(read_file(dir + "/summary.json"));
  CHECK(summary["live"]["closed_for_cause"].get<int>() >= 3);
  CHECK(summary["live"]["refused"]["protocol"].get<int>() >= 2);
  std::filesystem::remove_all(dir);
}

TEST_CASE("live hostile: a client that subscribes to everything and never reads costs no step") {
  const std::string dir = temp_dir("stalled");
  const int port = free_loopback_port();
  const std::uint64_t steps = 8000;  // 80 s: the AUV reaches the end wall of the tank at 133 s (expect: no collision)
  // the rate cap off (live.max_rate_hz 0): every message of every step is offered to the client
  Process tether("run " + in_process_file + " --live " + std::to_string(port) + " --paused --rtf 0 --steps " +
                     std::to_string(steps) + " -q --json --set 'live={max_rate_hz: 0}' --out " + dir,
                 dir);
  live::Client stalled;
  std::string error;
  REQUIRE_MESSAGE(connect(stalled, port, "", &error), error);
  for (const auto& ch : stalled.channels()) {
    std::uint32_t sub = 0;
    REQUIRE(stalled.subscribe(ch["topic"], sub, &error));
  }
  call(stalled, "/tether/resume");
  // from here on it never reads
  CHECK(tether.wait() == 0);
  const json summary = json::parse(read_file(dir + "/summary.json"));
  CHECK(summary["outcome"] == "completed");
  CHECK(summary["steps"] == steps);
  CHECK(summary["recording"]["dropped_items"] == 0);
  CHECK(summary["live"]["dropped_messages"].get<std::uint64_t>() > 0);  // its queue was bounded: the oldest went
  const Result alone = run(tether_exe + " run " + in_process_file + " --rtf 0 -q --json --steps " +
                           std::to_string(steps) + " --out " + dir + "/alone");
  REQUIRE(alone.exit_code == 0);
  const json a = json::parse(read_file(dir + "/alone/summary.json"));
  MESSAGE("steps/s at rtf 0: with a stalled client subscribed to everything "
          << steps / (summary["wall_time_s"].get<double>() - summary["control"]["paused_wall_s"].get<double>())
          << ", without a server " << steps / a["wall_time_s"].get<double>()
          << " (this machine, ASan build; reported, not asserted)");
  const Result replay = run(tether_exe + " replay " + dir + "/recording.mcap --verify -q");
  CHECK_MESSAGE(replay.exit_code == 0, replay.out);
  std::filesystem::remove_all(dir);
}

TEST_CASE("live hostile: another address than loopback needs a token, and clients must present it") {
  const std::string dir = temp_dir("token");
  const int port = free_loopback_port();
  // refused before it binds anything; 192.0.2.1 (TEST-NET-1) is no address of this machine,
  // so even a server that failed to refuse could not listen beyond loopback
  const Result refused = run("env -u TETHER_LIVE_TOKEN " + tether_exe + " run " + in_process_file +
                             " --live 192.0.2.1:" + std::to_string(port) + " --steps 10 -q --out " + dir + "/refused");
  CHECK_MESSAGE(refused.exit_code == 2, refused.out);
  CHECK(refused.out.find("token") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/refused/recording.mcap"));

  // a token set (here from the environment) is required on loopback too
  Process tether("run " + in_process_file + " --live 127.0.0.1:" + std::to_string(port) +
                     " --paused --steps 100000 -q --out " + dir + "/run",
                 dir, "TETHER_LIVE_TOKEN=s3cret");
  live::Client without;
  std::string error;
  CHECK_FALSE(connect(without, port, "", &error));
  CHECK_MESSAGE(error.find("401") != std::string::npos, error);
  live::Client wrong;
  CHECK_FALSE(connect(wrong, port, "guess", &error));
  live::Client with;
  REQUIRE_MESSAGE(connect(with, port, "s3cret", &error), error);
  // the dashboard page needs it too
  CHECK(raw_exchange(port, "GET / HTTP/1.1\r\nHost: x\r\n\r\n").rfind("HTTP/1.1 401", 0) == 0);
  CHECK(raw_exchange(port, "GET /?token=s3cret HTTP/1.1\r\nHost: x\r\n\r\n").rfind("HTTP/1.1 200", 0) == 0);
  // the query parameter works as well
  live::Client query;
  REQUIRE_MESSAGE(query.connect("ws://127.0.0.1:" + std::to_string(port) + "/?token=s3cret", "", &error), error);
  const Result ctl =
      run("TETHER_LIVE_TOKEN=s3cret " + tether_exe + " ctl --url ws://127.0.0.1:" + std::to_string(port) + " shutdown");
  CHECK_MESSAGE(ctl.exit_code == 0, ctl.out);
  CHECK(tether.wait() == 130);
  std::filesystem::remove_all(dir);
}

TEST_CASE("live hostile: a token with reserved characters works percent-encoded as client libraries write it") {
  const std::string dir = temp_dir("token_encoded");
  const int port = free_loopback_port();
  // space, plus, slash, question mark, ampersand, equals, percent and a non-ASCII letter
  Process tether("run " + in_process_file + " --live 127.0.0.1:" + std::to_string(port) +
                     " --paused --steps 100000 -q --out " + dir + "/run",
                 dir, "TETHER_LIVE_TOKEN='a+b c/d?e&f=g%h\xc3\xa9'");
  // the header form, unencoded (this also waits for the server to listen)
  live::Client header;
  std::string error;
  REQUIRE_MESSAGE(connect(header, port, "a+b c/d?e&f=g%h\xc3\xa9", &error), error);
  const auto page = [&](const std::string& query) {
    return raw_exchange(port, "GET /?token=" + query + " HTTP/1.1\r\nHost: x\r\n\r\n").substr(0, 12);
  };
  // JavaScript's encodeURIComponent, curl --data-urlencode: every reserved byte as %XX
  CHECK(page("a%2Bb%20c%2Fd%3Fe%26f%3Dg%25h%C3%A9") == "HTTP/1.1 200");
  // the same with lower-case hex digits
  CHECK(page("a%2bb%20c%2fd%3fe%26f%3dg%25h%c3%a9") == "HTTP/1.1 200");
  // Python's urllib.parse.urlencode / quote_plus: a space as '+'
  CHECK(page("a%2Bb+c%2Fd%3Fe%26f%3Dg%25h%C3%A9") == "HTTP/1.1 200");
  // Python's quote (safe '/'): the slash left as it is
  CHECK(page("a%2Bb%20c/d%3Fe%26f%3Dg%25h%C3%A9") == "HTTP/1.1 200");
  // wrong, cut short, or with a broken escape: refused
  CHECK(page("a%2Bb%20c%2Fd%3Fe%26f%3Dg%25h") == "HTTP/1.1 401");
  CHECK(page("a%2Bb%20c%2Fd%3Fe%26f%3Dg%25h%C3%A") == "HTTP/1.1 401");
  CHECK(page("a%2Bb%20c%2Fd%3Fe%26f%3Dg%G5h%C3%A9") == "HTTP/1.1 401");
  CHECK(page("a+b+c") == "HTTP/1.1 401");
  // a WebSocket client with the encoded token in its URL
  live::Client encoded;
  REQUIRE_MESSAGE(
      encoded.connect("ws://127.0.0.1:" + std::to_string(port) + "/?token=a%2Bb%20c%2Fd%3Fe%26f%3Dg%25h%C3%A9", "",
                      &error),
      error);
  const Result ctl = run("TETHER_LIVE_TOKEN='a+b c/d?e&f=g%h\xc3\xa9' " + tether_exe +
                         " ctl --url ws://127.0.0.1:" + std::to_string(port) + " shutdown");
  CHECK_MESSAGE(ctl.exit_code == 0, ctl.out);
  CHECK(tether.wait() == 130);
  std::filesystem::remove_all(dir);
}

TEST_CASE("live hostile: a live: block in the scenario, and more clients than max_clients are refused") {
  const std::string dir = temp_dir("cap");
  const int port = free_loopback_port();
  Process tether("run " + live_block_scenario(dir, port, 1) + " --steps 100000 -q --out " + dir + "/run", dir);
  live::Client first;
  std::string error;
  REQUIRE_MESSAGE(connect(first, port, "", &error), error);
  CHECK(call(first, "/tether/status")["paused"] == true);
  live::Client second;
  CHECK_FALSE(second.connect("ws://127.0.0.1:" + std::to_string(port), "", &error));
  CHECK_MESSAGE(error.find("too many clients") != std::string::npos, error);
  first.close();
  // the place frees once the first has gone
  live::Client third;
  REQUIRE_MESSAGE(connect_when_free(third, port, error), error);
  call(third, "/tether/shutdown");
  CHECK(tether.wait() == 130);
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "live hostile: idle connections cannot lock clients out, a client that never reads its answers is closed for "
    "cause, and the summary lists every client") {
  const std::string dir = temp_dir("idle");
  const int port = free_loopback_port();
  Process tether("run " + live_block_scenario(dir, port, 2) + " --steps 100000 -q --out " + dir + "/run", dir);
  live::Client first;
  std::string error;
  REQUIRE_MESSAGE(connect(first, port, "", &error), error);
  // 60 connections that never speak: more than the handshake pool (4 x max_clients + 16 = 24)
  std::vector<int> idle;
  for (int i = 0; i < 60; ++i) idle.push_back(open_raw(port));
  // a client connects at once all the same: the oldest idle ones made room
  live::Client second;
  REQUIRE_MESSAGE(second.connect("ws://127.0.0.1:" + std::to_string(port), "", &error, 3), error);
  CHECK(call(second, "/tether/status")["paused"] == true);
  // the second asks and asks (each answer echoes 10 kB) and never reads: closed at the
  // documented bound of answer bytes waiting (8 MiB), counted as closed for cause
  const std::string ask = json{{"op", std::string(10000, 'x')}}.dump();
  for (int i = 0; i < 20000; ++i)
    if (!second.send_text(ask, &error)) break;
  // its place is free again: a third asks with answers of 1 kB and is closed at the bound of
  // 4,096 answers waiting
  live::Client third;
  REQUIRE_MESSAGE(connect_when_free(third, port, error), error);
  const std::string small = json{{"op", std::string(1000, 'y')}}.dump();
  for (int i = 0; i < 40000; ++i)
    if (!third.send_text(small, &error)) break;
  // the first stays to the end; its shutdown ends the session
  call(first, "/tether/shutdown");
  CHECK(tether.wait() == 130);
  for (int s : idle) close(s);
  const json summary = json::parse(read_file(dir + "/run/summary.json"));
  const json& live = summary["live"];
  INFO(live.dump());
  CHECK(live["idle_closed"].get<int>() >= 36);
  CHECK(live["closed_for_cause"].get<int>() >= 1);
  CHECK(live["closed_for_cause"].get<int>() >= 2);
  // every client is listed: the two closed for not reading, and the one connected at the end
  REQUIRE(live["per_client"].size() == 3);
  int not_reading = 0;
  bool to_the_end = false, byte_bound = false, count_bound = false;
  for (const auto& c : live["per_client"]) {
    const std::string end = c["end"];
    to_the_end |= end.find("connected when the summary was written") != std::string::npos;
    if (end.find("does not read its responses") == std::string::npos) continue;
    ++not_reading;
    // "(N waiting, B bytes; S bytes taken by its socket before)"
    unsigned long waiting = 0, bytes = 0, taken = 0;
    REQUIRE_MESSAGE(std::sscanf(end.c_str() + end.find('('), "(%lu waiting, %lu bytes; %lu bytes taken", &waiting,
                                &bytes, &taken) == 3,
                    end);
    // what the kernels hold for a client that never reads is bounded by the socket's fixed
    // send buffer (256 KiB, doubled by Linux) and the client's receive window (its kernel's
    // default when it never reads), not by the send buffer's autotuning (up to 4 MB)
    CHECK_MESSAGE(taken <= 1536 * 1024, end);
    CHECK(c["sent_bytes"].get<unsigned long>() == taken);
    CHECK(waiting <= 4096);
    CHECK(bytes <= 8 * 1024 * 1024);
    byte_bound |= bytes + 11000 > 8 * 1024 * 1024 && waiting < 4096;
    count_bound |= waiting == 4096 && bytes < 8 * 1024 * 1024;
  }
  CHECK(not_reading == 2);
  CHECK(byte_bound);
  CHECK(count_bound);
  CHECK(to_the_end);
  std::filesystem::remove_all(dir);
}
