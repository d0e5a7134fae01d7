// SPDX-License-Identifier: Apache-2.0
// Opening lines (which way a path takes, pty pairs in raw mode), supervising programs, and
// the serial endpoint's scenario keys with their positioned errors.
#include <doctest/doctest.h>

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "serial_test_util.hpp"
#include "tether/process/config_text.hpp"
#include "tether/process/child_process.hpp"
#include "tether/serial/serial_port.hpp"

using namespace tether;
using namespace tether::adapters;
using namespace tether::adapters::test;

namespace {

std::string read_some(int fd, std::size_t want, int timeout_ms = 2000) {
  std::string out;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (out.size() < want && std::chrono::steady_clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    char buf[256];
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

// the config errors of a scenario whose only endpoint is `endpoint`, one string
std::string config_errors(const std::string& endpoint) {
  try {
    const runtime::Scenario sc =
        runtime::parse_scenario(auv_scenario(endpoint, 10), source_dir + "/config/scenarios/t.yaml");
    (void)make_endpoints(sc);
  } catch (const runtime::ConfigError& e) {
    std::string all;
    for (const auto& line : e.errors()) all += line + "\n";
    return all;
  }
  return "";
}

SerialEndpointConfig parsed(const std::string& endpoint) {
  const runtime::Scenario sc =
      runtime::parse_scenario(auv_scenario(endpoint, 10), source_dir + "/config/scenarios/t.yaml");
  auto endpoints = make_endpoints(sc);
  return dynamic_cast<SerialEndpoint&>(*endpoints[0]).config();
}

}  // namespace

TEST_CASE("serial port: pseudo-terminals take termios, sysfs-listed ttys take libserialport") {
  const PtyPair pair = open_pty_pair();
  CHECK(pair.slave_path.rfind("/dev/pts/", 0) == 0);
  CHECK(choose_open_method(pair.slave_path) == OpenMethod::termios);
  // a symlink to a pty is still a pty
  const std::string link = binary_dir + "/serial_test/pty_link_" + std::to_string(getpid());
  std::filesystem::create_directories(binary_dir + "/serial_test");
  std::filesystem::remove(link);
  std::filesystem::create_symlink(pair.slave_path, link);
  CHECK(choose_open_method(link) == OpenMethod::termios);
  std::filesystem::remove(link);
  CHECK(choose_open_method("/nonexistent/ttyUSB7") == OpenMethod::termios);  // fails at open, clearly
  if (std::filesystem::exists("/sys/class/tty/ttyS0") && std::filesystem::exists("/dev/ttyS0"))
    CHECK(choose_open_method("/dev/ttyS0") == OpenMethod::libserialport);
  close(pair.master);
  close(pair.slave);
}

TEST_CASE("serial port: a pty pair is raw both ways: no echo, no CR/LF mapping, no signals") {
  const PtyPair pair = open_pty_pair();
  SerialLine line = SerialLine::open(pair.slave_path, SerialSettings{});
  CHECK(line.method() == OpenMethod::termios);
  const std::string bytes("\r\n\x00\x03\x11\x13\x7f\xff", 8);
  REQUIRE(write(pair.master, bytes.data(), bytes.size()) == 8);
  CHECK(read_some(line.fd(), 8) == bytes);
  REQUIRE(write(line.fd(), bytes.data(), bytes.size()) == 8);
  CHECK(read_some(pair.master, 8) == bytes);
  line.close();
  CHECK(!line.is_open());
  close(pair.master);
  close(pair.slave);
}

TEST_CASE("serial port: opening a missing device says which path, which way and why") {
  CHECK_THROWS_WITH(SerialLine::open("/nonexistent/ttyUSB7", SerialSettings{}),
                    "cannot open /nonexistent/ttyUSB7 (termios): No such file or directory");
  const PtyPair pair = open_pty_pair();
  SerialSettings odd;
  odd.baud = 12345;
  CHECK_THROWS_WITH(SerialLine::open(pair.slave_path, odd),
                    doctest::Contains("baud rate 12345 is not a standard rate"));
  close(pair.master);
  close(pair.slave);
}

TEST_CASE("serial port: the port list for `tether ports` explains pseudo-terminals") {
  const std::string text = list_ports_text();
  CHECK(text.find("pseudo-terminals") != std::string::npos);
  CHECK(text.find("/dev/pts/") != std::string::npos);
}

TEST_CASE("child process: output on pipes, environment, exit status, terminate and kill") {
  SUBCASE("exit status and output") {
    ChildProcess c({{"sh", "-c", "echo \"port=$TETHER_PORT\"; exit 3"}, {{"TETHER_PORT", "/dev/pts/99"}}, {}});
    CHECK(read_some(c.stdout_fd(), 16) == "port=/dev/pts/99\n");
    const auto st = c.wait_for(std::chrono::seconds(10));
    REQUIRE(st);
    CHECK(ChildProcess::describe_status(*st) == "exited with status 3");
    CHECK(c.exit_fd() >= 0);  // pidfd on this kernel
  }
  SUBCASE("a program that does not exist") {
    CHECK_THROWS_WITH(ChildProcess({{"/nonexistent/fw"}, {}, {}}),
                      "cannot run /nonexistent/fw: No such file or directory");
  }
  SUBCASE("SIGTERM first") {
    ChildProcess c({{"sleep", "30"}, {}, {}});
    CHECK(!c.try_wait());
    CHECK(ChildProcess::describe_status(c.terminate(std::chrono::seconds(5))) == "was killed by signal 15 (SIGTERM)");
  }
  SUBCASE("SIGKILL when SIGTERM is ignored, and the whole process group goes") {
    ChildProcess c({{"sh", "-c", "trap '' TERM; sleep 30 & echo started; wait"}, {}, {}});
    CHECK(read_some(c.stdout_fd(), 8) == "started\n");
    CHECK(ChildProcess::describe_status(c.terminate(std::chrono::milliseconds(100))) ==
          "was killed by signal 9 (SIGKILL)");
    // nothing of the group keeps running (the orphaned sleep may linger as a zombie briefly)
    bool gone = false;
    for (int i = 0; i < 200 && !gone; ++i) {
      gone = kill(-c.pid(), 0) != 0;
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    CHECK(gone);
  }
}

TEST_CASE("serial config: keys, defaults and paths") {
  SUBCASE("launch with a pty: the vehicle's devices, zero safe commands, paths against the scenario folder") {
    const SerialEndpointConfig c = parsed(
        "  - {name: fw, type: serial, vehicle: auv, launch: {command: [fw/bin, '{scenario_dir}/x', '{port}'], "
        "env: {A: b}, exit_wait_ms: 5}, resend_ms: 0, safe: {hull.thruster_vrear: 0.5}}\n");
    REQUIRE(c.launch);
    CHECK(c.launch->pty);
    CHECK(c.launch->command == std::vector<std::string>{source_dir + "/config/scenarios/fw/bin",
                                                        source_dir + "/config/scenarios/x", "{port}"});
    CHECK(c.launch->env == std::vector<std::pair<std::string, std::string>>{{"A", "b"}});
    CHECK(c.launch->exit_wait_ms == 5);
    CHECK(c.resend_ms == 0);
    REQUIRE(c.table.size() == 6);
    CHECK(c.table[0].name == "auv.hull.depth");
    CHECK(c.table[0].direction == TETHER_DIRECTION_SENSOR);
    CHECK(c.table[2].payload_size == TETHER_THRUSTER_SIZE);
    REQUIRE(c.safe.size() == 4);
    CHECK(tether_get_f32le(c.safe[0].bytes.data()) == 0.0f);
    CHECK(tether_get_f32le(c.safe[3].bytes.data()) == 0.5f);
  }
  SUBCASE("qemu: QEMU's command line, the pty it announces") {
    const SerialEndpointConfig c =
        parsed("  - {name: fw, type: serial, launch: {qemu: ../fw.elf}, devices: ['*.depth']}\n");
    REQUIRE(c.launch);
    CHECK(!c.launch->pty);
    CHECK(c.launch->exit_wait_ms == 0);
    CHECK(c.launch->command == std::vector<std::string>{"qemu-system-arm", "-M", "lm3s6965evb", "-nographic",
                                                        "-monitor", "none", "-serial", "pty", "-serial", "stdio",
                                                        "-kernel", source_dir + "/config/fw.elf"});
    REQUIRE(c.table.size() == 1);  // the `devices` filter
    CHECK(c.table[0].name == "auv.hull.depth");
  }
  SUBCASE("a real port with line settings") {
    const SerialEndpointConfig c = parsed(
        "  - {name: fw, type: serial, port: /dev/ttyUSB0, baud: 57600, parity: even, stop_bits: 2, "
        "flow_control: rtscts, handshake_timeout_ms: 3000}\n");
    CHECK(c.port == "/dev/ttyUSB0");
    CHECK(c.settings.baud == 57600);
    CHECK(c.settings.parity == Parity::even);
    CHECK(c.settings.stop_bits == 2);
    CHECK(c.settings.flow_control == FlowControl::rtscts);
    CHECK(c.handshake_timeout_ms == 3000);
    CHECK(!c.launch);
  }
  SUBCASE("environment variables with defaults") {
    std::string out, missing;
    setenv("TETHER_SERIAL_TEST_DIR", "/opt/fw", 1);
    CHECK(expand_env("${TETHER_SERIAL_TEST_DIR}/a ${TETHER_SERIAL_TEST_UNSET:-build}/b", out, &missing));
    CHECK(out == "/opt/fw/a build/b");
    CHECK(!expand_env("${TETHER_SERIAL_TEST_UNSET}", out, &missing));
    CHECK(missing == "TETHER_SERIAL_TEST_UNSET");
    unsetenv("TETHER_SERIAL_TEST_DIR");
  }
}

TEST_CASE("serial config: mistakes are reported with file, line and key") {
  CHECK(config_errors("  - {name: fw, type: serial, port: /dev/ttyUSB0, speed: 9600}\n").find("speed") !=
        std::string::npos);
  CHECK(config_errors("  - {name: fw, type: serial, vehicle: auv}\n")
            .find("endpoints[0]: a serial endpoint needs exactly one of `port` and `launch`") != std::string::npos);
  CHECK(config_errors("  - {name: fw, type: serial, port: /dev/x, launch: {command: [a]}}\n")
            .find("exactly one of `port` and `launch`") != std::string::npos);
  CHECK(config_errors("  - {name: fw, type: serial, port: /dev/x, parity: maybe}\n").find("parity") !=
        std::string::npos);
  const std::string safe = config_errors(
      "  - {name: fw, type: serial, vehicle: auv, port: /dev/x, safe: {thruster_left: [0, 0], "
      "rudder: 0, depth: 1}}\n");
  CHECK(safe.find("t.yaml:") != std::string::npos);
  CHECK(safe.find("safe.thruster_left: this device's command is 4 bytes (1 float), the value gives 8") !=
        std::string::npos);
  CHECK(safe.find("safe.rudder: no actuator \"rudder\" among this endpoint's devices") != std::string::npos);
  CHECK(safe.find("safe.depth: no actuator \"depth\"") != std::string::npos);  // a sensor
  CHECK(config_errors("  - {name: fw, type: serial, vehicle: auv, port: /dev/x, devices: [auv.hull.sonar]}\n")
            .find("\"auv.hull.sonar\" matches no device of vehicle \"auv\"") != std::string::npos);
  CHECK(config_errors("  - {name: fw, type: serial, port: '${TETHER_SERIAL_TEST_UNSET}/tty'}\n")
            .find("environment variable TETHER_SERIAL_TEST_UNSET is not set") != std::string::npos);
  CHECK(config_errors("  - {name: fw, type: serial, launch: {qemu: a.elf, pty: true}}\n")
            .find("QEMU creates the pseudo-terminal itself") != std::string::npos);
}
