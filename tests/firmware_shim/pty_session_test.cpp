// SPDX-License-Identifier: Apache-2.0
// Integration: real firmware, real line. Builds examples/firmware/depth_heading_hold.c
// for the host (and for Cortex-M3, if the cross compiler and QEMU are installed),
// starts it on a pseudo-terminal, and plays the runtime's side of the protocol
// from C++ with the same headers the runtime uses: HELLO -> DEVICES -> READY ->
// SENSORS(k)/ACTUATE(k) -> STOP.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "test_paths.hpp"
#include "tether/firmware_shim/frame.h"
#include "tether/firmware_shim/messages.h"
#include "tether/firmware_shim/payloads.h"

extern char** environ;

namespace {

using Bytes = std::vector<uint8_t>;
const std::string kSource = TETHER_SOURCE_DIR;
const std::string kOut = TETHER_BINARY_DIR + "/firmware_shim_pty_test";

bool have(const std::string& tool) { return std::system(("command -v " + tool + " >/dev/null 2>&1").c_str()) == 0; }

void run_or_fail(const std::string& cmd) {
  INFO(cmd);
  REQUIRE(std::system(cmd.c_str()) == 0);
}

std::string shim_sources() {
  std::string s;
  for (const char* f : {"frame.c", "messages.c", "names.c", "tether.c"}) s += " " + kSource + "/firmware_shim/src/" + f;
  return s;
}

void make_raw(int fd) {
  termios t{};
  REQUIRE(tcgetattr(fd, &t) == 0);
  cfmakeraw(&t);
  REQUIRE(tcsetattr(fd, TCSANOW, &t) == 0);
}

pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env, int stdout_fd) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_store(extra_env);
  for (char** e = environ; *e != nullptr; ++e) env_store.emplace_back(*e);
  std::vector<char*> env;
  for (auto& e : env_store) env.push_back(e.data());
  env.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (stdout_fd >= 0) {
    posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
    posix_spawn_file_actions_adddup2(&actions, stdout_fd, 2);
  }
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(rc == 0);
  return pid;
}

int wait_exit(pid_t pid, int timeout_ms) {
  for (int waited = 0; waited < timeout_ms; waited += 10) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    usleep(10000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

// the runtime's end of the line
struct Line {
  int fd;
  Bytes raw = Bytes(TETHER_RAW_FRAME_SIZE(TETHER_PROTOCOL_MAX_PAYLOAD));
  tether_frame_decoder_t decoder{};
  std::vector<std::pair<tether_frame_header_t, Bytes>> pending;

  explicit Line(int f) : fd(f) { tether_frame_decoder_init(&decoder, raw.data(), raw.size()); }

  void send(uint8_t type, uint32_t step, const Bytes& payload) {
    tether_frame_header_t h{TETHER_PROTOCOL_VERSION, type, step, static_cast<uint16_t>(payload.size())};
    Bytes wire(TETHER_WIRE_FRAME_MAX(payload.size()));
    size_t n = 0;
    REQUIRE(tether_frame_encode(&h, payload.data(), wire.data(), wire.size(), &n));
    size_t done = 0;
    while (done < n) {
      ssize_t w = write(fd, wire.data() + done, n - done);
      REQUIRE(w > 0);
      done += static_cast<size_t>(w);
    }
  }

  // next frame that is not LOG, or nothing within the timeout
  std::optional<std::pair<tether_frame_header_t, Bytes>> recv(int timeout_ms) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      while (!pending.empty()) {
        auto f = pending.front();
        pending.erase(pending.begin());
        if (f.first.type != TETHER_MSG_LOG) return f;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
      uint8_t buf[256];
      ssize_t n = read(fd, buf, sizeof buf);
      if (n <= 0) return std::nullopt;
      for (ssize_t i = 0; i < n; ++i) {
        tether_frame_t f{};
        if (tether_frame_decoder_push(&decoder, buf[i], &f)) {
          pending.emplace_back(f.header, Bytes(f.payload, f.payload + f.header.payload_len));
        }
      }
    }
  }
};

Bytes device_table() {
  struct D {
    uint16_t index;
    uint8_t kind;
    const char* name;
  };
  const D table[] = {{0, TETHER_KIND_DEPTH, "auv.hull.depth"},
                     {1, TETHER_KIND_COMPASS, "auv.hull.compass"},
                     {10, TETHER_KIND_THRUSTER, "auv.hull.thruster_left"},
                     {11, TETHER_KIND_THRUSTER, "auv.hull.thruster_right"},
                     {12, TETHER_KIND_THRUSTER, "auv.hull.thruster_vfront"},
                     {13, TETHER_KIND_THRUSTER, "auv.hull.thruster_vrear"}};
  Bytes out(512);
  tether_devices_writer_t w{};
  tether_devices_writer_init(&w, out.data(), out.size());
  for (const auto& d : table) {
    tether_device_entry_t e{d.index,
                            d.kind,
                            tether_kind_direction(d.kind),
                            tether_kind_payload_size(d.kind),
                            static_cast<uint8_t>(std::strlen(d.name)),
                            d.name};
    tether_devices_writer_add(&w, &e);
  }
  size_t n = 0;
  REQUIRE(tether_devices_writer_finish(&w, &n));
  out.resize(n);
  return out;
}

// the whole session; returns the last depth of a 1-D heave plant
float run_session(Line& line, uint32_t steps) {
  auto hello = line.recv(10000);
  REQUIRE(hello.has_value());
  REQUIRE(hello->first.type == TETHER_MSG_HELLO);
  tether_hello_t h{};
  REQUIRE(tether_hello_decode(hello->second.data(), hello->second.size(), &h));
  CHECK(std::string(h.name) == "depth_heading_hold");
  line.send(TETHER_MSG_DEVICES, 0, device_table());

  auto ready = line.recv(5000);
  while (ready && ready->first.type == TETHER_MSG_HELLO) ready = line.recv(5000);  // repeats
  REQUIRE(ready.has_value());
  REQUIRE(ready->first.type == TETHER_MSG_READY);
  uint16_t idx[TETHER_MAX_SLOTS];
  uint8_t count = 0;
  REQUIRE(tether_ready_decode(ready->second.data(), ready->second.size(), idx, TETHER_MAX_SLOTS, &count));
  REQUIRE(count == 6);
  CHECK(idx[0] == 0);
  CHECK(idx[1] == 1);
  std::vector<tether_slot_t> slots = {{8, TETHER_DIRECTION_SENSOR}, {4, TETHER_DIRECTION_SENSOR}};
  for (int i = 0; i < 4; ++i) slots.push_back({4, TETHER_DIRECTION_ACTUATOR});

  float depth = 0.0f, rate = 0.0f;
  const float dt = 0.02f;
  for (uint32_t k = 1; k <= steps; ++k) {
    Bytes p(64);
    tether_items_writer_t w{};
    tether_sensors_writer_init(&w, p.data(), p.size(), static_cast<uint64_t>(k) * 20000u);
    uint8_t d[TETHER_DEPTH_SIZE], c[TETHER_COMPASS_SIZE];
    tether_put_f32le(d, depth);
    tether_put_f32le(d + 4, 101325.0f + 9810.0f * depth);
    tether_put_f32le(c, 1.5707964f);
    tether_items_writer_add(&w, 0, d, sizeof d);
    tether_items_writer_add(&w, 1, c, sizeof c);
    size_t n = 0;
    REQUIRE(tether_items_writer_finish(&w, &n));
    p.resize(n);
    line.send(TETHER_MSG_SENSORS, k, p);

    auto act = line.recv(5000);
    REQUIRE(act.has_value());
    REQUIRE(act->first.type == TETHER_MSG_ACTUATE);
    REQUIRE(act->first.step_id == k);
    tether_items_reader_t r{};
    REQUIRE(tether_actuate_reader_init(&r, act->second.data(), act->second.size(), slots.data(),
                                       static_cast<uint8_t>(slots.size())));
    float vertical = 0.0f;
    tether_item_t item{};
    int rc;
    while ((rc = tether_items_reader_next(&r, &item)) == 1) {
      if (item.slot >= 4) vertical += tether_get_f32le(item.data);
    }
    REQUIRE(rc == 0);
    rate += (0.8f * vertical - 0.6f * rate) * dt;
    depth += rate * dt;
    if (depth < 0.0f) depth = 0.0f;
  }
  line.send(TETHER_MSG_STOP, steps, {});
  return depth;
}

}  // namespace

TEST_CASE("host-built firmware on a pseudo-terminal holds its depth") {
  run_or_fail("mkdir -p " + kOut);
  const std::string exe = kOut + "/depth_heading_hold";
  run_or_fail("cc -std=c99 -O1 -Wall -Wextra -Werror -Wconversion -I" + kSource + "/firmware_shim/include " + kSource +
              "/examples/firmware/depth_heading_hold.c" + shim_sources() + " " + kSource +
              "/firmware_shim/ports/posix/port_posix.c -o " + exe);

  int master = posix_openpt(O_RDWR | O_NOCTTY);
  REQUIRE(master >= 0);
  REQUIRE(grantpt(master) == 0);
  REQUIRE(unlockpt(master) == 0);
  const std::string slave_path = ptsname(master);
  int slave = open(slave_path.c_str(), O_RDWR | O_NOCTTY);  // held so the master never sees a hang-up
  REQUIRE(slave >= 0);
  make_raw(slave);

  pid_t pid = spawn({exe}, {"TETHER_PORT=" + slave_path}, -1);
  Line line(master);
  float depth = run_session(line, 1500);
  CHECK(depth == doctest::Approx(2.0f).epsilon(0.05));
  CHECK(wait_exit(pid, 5000) == 0);  // STOP ends main() with 0
  close(slave);
  close(master);
}

TEST_CASE("Cortex-M3 firmware under QEMU holds its depth") {
  if (!have("arm-none-eabi-gcc") || !have("qemu-system-arm")) {
    MESSAGE("arm-none-eabi-gcc or qemu-system-arm missing: not run");
    return;
  }
  run_or_fail("mkdir -p " + kOut);
  const std::string elf = kOut + "/depth_heading_hold.elf";
  const std::string port = kSource + "/firmware_shim/ports/cortex_m3";
  run_or_fail(
      "arm-none-eabi-gcc -std=c99 -mcpu=cortex-m3 -mthumb -ffreestanding -nostdlib -Os "
      "-ffunction-sections -fdata-sections -Wall -Wextra -Werror -Wconversion -I" +
      kSource + "/firmware_shim/include -T " + port + "/lm3s6965.ld -Wl,--gc-sections " + kSource +
      "/examples/firmware/depth_heading_hold.c" + shim_sources() + " " + port + "/startup.c " + port +
      "/port_cortex_m3.c -lc -lgcc -o " + elf);

  // QEMU announces the pty of UART0 on its output
  int out[2];
  REQUIRE(pipe(out) == 0);
  pid_t pid = spawn(
      {"qemu-system-arm", "-M", "lm3s6965evb", "-nographic", "-monitor", "none", "-serial", "pty", "-kernel", elf}, {},
      out[1]);
  close(out[1]);
  // "char device redirected to /dev/pts/N (label serial0)"
  std::string text, pty;
  auto announced = [&] {
    auto at = text.find("redirected to /dev/pts/");
    if (at == std::string::npos) return false;
    auto start = at + std::strlen("redirected to ");
    auto end = text.find_first_not_of("/devpts0123456789", start);
    if (end == std::string::npos) return false;
    pty = text.substr(start, end - start);
    return true;
  };
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!announced() && std::chrono::steady_clock::now() < deadline) {
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      char buf[256];
      ssize_t n = read(out[0], buf, sizeof buf);
      if (n <= 0) break;
      text.append(buf, static_cast<size_t>(n));
    }
  }
  REQUIRE_MESSAGE(!pty.empty(), "QEMU said: " << text);
  int fd = open(pty.c_str(), O_RDWR | O_NOCTTY);
  REQUIRE(fd >= 0);
  make_raw(fd);
  Line line(fd);
  float depth = run_session(line, 600);
  CHECK(depth > 1.0f);  // on its way down to 2 m after 12 simulated seconds
  kill(pid, SIGTERM);
  wait_exit(pid, 5000);
  close(fd);
  close(out[0]);
}
