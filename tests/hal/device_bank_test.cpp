// SPDX-License-Identifier: Apache-2.0
#include "tether/hal/device_bank.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "hal_test_util.hpp"

using namespace tether::hal;
using namespace tether::hal::test;

namespace {

constexpr std::int64_t step_ns = 10'000'000;

// an AUV body in a tank, 3 m deep, level and at rest
SimpleWorld tank_world() {
  SimpleWorld w = make_world(2);
  w.add_tank(10, 5, -8);
  w.water.present = true;
  w.bodies[0].position_m = Vec3(0, 0, -3);
  return w;
}

DeviceSpec noisy_depth(const std::string& name, double stddev) {
  DeviceSpec s = make_spec(TETHER_KIND_DEPTH, name);
  s.noise.stddev = stddev;
  return s;
}

float depth_of(DeviceBank& bank, DeviceHandle h) {
  std::uint8_t p[TETHER_DEPTH_SIZE];
  REQUIRE(bank.get(h, p, sizeof p) == Status::ok);
  return tether_get_f32le(p + TETHER_DEPTH_OFFSET_DEPTH_M);
}

std::vector<double> depth_stream(std::vector<DeviceSpec> specs, std::uint64_t seed, const std::string& name, int n) {
  DeviceBank bank(std::move(specs), seed, 2);
  const SimpleWorld w = tank_world();
  DeviceHandle h;
  REQUIRE(bank.open(name, h) == Status::ok);
  std::vector<double> out;
  for (int k = 0; k < n; ++k) {
    bank.sense(w, k * step_ns);
    out.push_back(bank.sample(static_cast<std::size_t>(h.index)).ch[0]);
  }
  return out;
}

}  // namespace

TEST_CASE("device bank: construction resolves names and rejects bad specs") {
  std::vector<DeviceSpec> specs = {make_spec(TETHER_KIND_DEPTH, "depth"), make_spec(TETHER_KIND_THRUSTER, "t0"),
                                   make_spec(TETHER_KIND_RANGE, "psd")};
  DeviceBank bank(specs, 1, 1);
  CHECK(bank.size() == 3);
  CHECK(bank.find("auv.hull.psd") == 2);
  CHECK(bank.find("auv.hull.t0") == 1);
  CHECK(bank.find("auv.hull.nope") == -1);
  CHECK(bank.payload_size(0) == TETHER_DEPTH_SIZE);
  CHECK(bank.is_actuator(1));
  CHECK(std::get<ThrusterParams>(bank.spec(1).params).ct > 0);  // derived at construction

  specs.push_back(make_spec(TETHER_KIND_DEPTH, "depth"));
  CHECK_THROWS_WITH_AS(DeviceBank(specs, 1, 1), "device \"auv.hull.depth\" is declared twice", std::invalid_argument);
  specs.pop_back();
  specs.push_back(make_spec(TETHER_KIND_DEPTH, "other", 5));
  CHECK_THROWS_AS(DeviceBank(specs, 1, 1), std::invalid_argument);
  specs.back().body = 0;
  specs.back().noise.dropout = 2;
  CHECK_THROWS_AS(DeviceBank(specs, 1, 1), std::invalid_argument);
}

TEST_CASE("device bank: the error codes") {
  DeviceBank bank(
      {make_spec(TETHER_KIND_DEPTH, "depth"), make_spec(TETHER_KIND_THRUSTER, "t0"), make_spec(TETHER_KIND_GPS, "gps")},
      1, 1);
  const SimpleWorld w = tank_world();
  DeviceHandle depth, thruster, gps, none;
  std::uint8_t buf[TETHER_KIND_MAX_SIZE];

  CHECK(bank.open("auv.hull.missing", none) == Status::unknown_device);
  CHECK_FALSE(none.valid());
  CHECK(bank.open("not a name", none) == Status::unknown_device);
  REQUIRE(bank.open("auv.hull.depth", depth) == Status::ok);
  REQUIRE(bank.open("auv.hull.t0", thruster) == Status::ok);
  REQUIRE(bank.open("auv.hull.gps", gps) == Status::ok);

  CHECK(bank.get(none, buf, TETHER_DEPTH_SIZE) == Status::unknown_device);
  CHECK(bank.get(DeviceHandle{99}, buf, TETHER_DEPTH_SIZE) == Status::unknown_device);
  CHECK(bank.get(depth, buf, TETHER_DEPTH_SIZE) == Status::not_ready);  // nothing sensed yet
  bank.sense(w, 0);
  CHECK(bank.get(depth, buf, TETHER_DEPTH_SIZE) == Status::ok);
  CHECK(bank.get(depth, buf, TETHER_DEPTH_SIZE - 1) == Status::size_mismatch);
  CHECK(bank.get(depth, buf, TETHER_DEPTH_SIZE + 1) == Status::size_mismatch);
  CHECK(bank.get(depth, nullptr, TETHER_DEPTH_SIZE) == Status::size_mismatch);
  CHECK(bank.get(thruster, buf, TETHER_THRUSTER_SIZE) == Status::invalid_operation);
  CHECK(bank.get(gps, buf, TETHER_GPS_SIZE) == Status::not_ready);  // 3 m under water

  std::uint8_t cmd[TETHER_THRUSTER_SIZE];
  tether_put_f32le(cmd, 0.5f);
  CHECK(bank.set(depth, cmd, sizeof cmd) == Status::invalid_operation);
  CHECK(bank.set(thruster, cmd, 3) == Status::size_mismatch);
  CHECK(bank.set(thruster, nullptr, 4) == Status::size_mismatch);
  CHECK(bank.set(thruster, cmd, sizeof cmd) == Status::ok);
  tether_put_f32le(cmd, std::nanf(""));
  CHECK(bank.set(thruster, cmd, sizeof cmd) == Status::invalid_value);
  CHECK(bank.counters().invalid_commands == 3);
  CHECK(bank.command(1, cmd, 4) == Status::invalid_value);
  CHECK(bank.command(0, cmd, 4) == Status::invalid_operation);
  CHECK(bank.command(7, cmd, 4) == Status::unknown_device);

  CHECK(bank.close(depth) == Status::ok);
  CHECK(bank.close(depth) == Status::unknown_device);
  CHECK(bank.get(depth, buf, TETHER_DEPTH_SIZE) == Status::unknown_device);
  CHECK(std::string(to_string(Status::size_mismatch)) == "size_mismatch");
}

TEST_CASE("device bank: readings match the world, time") {
  DeviceBank bank({make_spec(TETHER_KIND_DEPTH, "depth"), make_spec(TETHER_KIND_CLOCK, "clock"),
                   make_spec(TETHER_KIND_ACCEL, "accel")},
                  1, 2);
  const SimpleWorld w = tank_world();
  bank.sense(w, 2'500'000'000);
  CHECK(bank.time_us() == 2'500'000u);
  DeviceHandle d, c, a;
  REQUIRE(bank.open("auv.hull.depth", d) == Status::ok);
  REQUIRE(bank.open("auv.hull.clock", c) == Status::ok);
  REQUIRE(bank.open("auv.hull.accel", a) == Status::ok);
  CHECK(depth_of(bank, d) == doctest::Approx(3.0));
  std::uint8_t clock[TETHER_CLOCK_SIZE];
  REQUIRE(bank.get(c, clock, sizeof clock) == Status::ok);
  CHECK(tether_get_u64le(clock) == 2'500'000u);
  std::uint8_t accel[TETHER_ACCEL_SIZE];
  REQUIRE(bank.get(a, accel, sizeof accel) == Status::ok);
  CHECK(tether_get_f32le(accel + TETHER_ACCEL_OFFSET_AZ) == doctest::Approx(-9.81));
  std::uint8_t truth[TETHER_ACCEL_SIZE];
  CHECK(bank.measure_true(2, w, 0, truth, sizeof truth) == Status::ok);
  CHECK(std::memcmp(truth, accel, sizeof truth) == 0);
}

TEST_CASE("device bank: noise statistics over 1e5 samples") {
  DeviceSpec s = noisy_depth("depth", 0.05);
  s.noise.offset = 0.2;
  DeviceBank bank({s}, 7, 2);
  const SimpleWorld w = tank_world();
  double sum = 0, sq = 0;
  const int n = 100000;
  for (int k = 0; k < n; ++k) {
    bank.sense(w, k * step_ns);
    const double x = bank.sample(0).ch[0];
    sum += x;
    sq += x * x;
  }
  const double mean = sum / n, stddev = std::sqrt(sq / n - mean * mean);
  CHECK(mean == doctest::Approx(3.2).epsilon(1e-4));
  CHECK(stddev == doctest::Approx(0.05).epsilon(0.01));
}

TEST_CASE("device bank: streams repeat, depend on the seed and the name, not on other devices") {
  const auto base = depth_stream({noisy_depth("depth", 0.1)}, 42, "auv.hull.depth", 200);
  CHECK(depth_stream({noisy_depth("depth", 0.1)}, 42, "auv.hull.depth", 200) == base);
  CHECK(depth_stream({noisy_depth("depth", 0.1)}, 43, "auv.hull.depth", 200) != base);
  // another device before it and after it: the depth sensor's stream stays the same
  CHECK(depth_stream({noisy_depth("aaa", 0.3), noisy_depth("depth", 0.1), noisy_depth("zzz", 0.3)}, 42,
                     "auv.hull.depth", 200) == base);
  // the same settings under another name: another stream
  CHECK(depth_stream({noisy_depth("depth2", 0.1)}, 42, "auv.hull.depth2", 200) != base);
}

TEST_CASE("device bank: a slow sensor holds its sample between samples") {
  DeviceSpec s = noisy_depth("depth", 0.1);
  s.rate_hz = 25;  // every 40 ms at a 10 ms loop
  DeviceBank bank({s}, 1, 2);
  const SimpleWorld w = tank_world();
  std::vector<int> fresh;
  double held = 0;
  for (int k = 0; k < 9; ++k) {
    bank.sense(w, k * step_ns);
    fresh.push_back(bank.fresh(0));
    if (bank.fresh(0)) held = bank.sample(0).ch[0];
    CHECK(bank.sample(0).ch[0] == held);
  }
  CHECK(fresh == std::vector<int>{1, 0, 0, 0, 1, 0, 0, 0, 1});
  CHECK(bank.counters().samples == 3);
}

TEST_CASE("device bank: dropout reports not_ready, delay shifts the stream") {
  SUBCASE("dropout 1: never a reading") {
    DeviceSpec s = make_spec(TETHER_KIND_DEPTH, "depth");
    s.noise.dropout = 1;
    DeviceBank bank({s}, 1, 2);
    DeviceHandle h;
    REQUIRE(bank.open("auv.hull.depth", h) == Status::ok);
    std::uint8_t p[TETHER_DEPTH_SIZE];
    for (int k = 0; k < 10; ++k) {
      bank.sense(tank_world(), k * step_ns);
      CHECK(bank.get(h, p, sizeof p) == Status::not_ready);
    }
    CHECK(bank.counters().dropped == 10);
  }
  SUBCASE("delay 3: the reading from three samples ago") {
    DeviceSpec s = make_spec(TETHER_KIND_CLOCK, "clock");
    DeviceSpec d = make_spec(TETHER_KIND_DEPTH, "depth");
    d.noise.delay_steps = 3;
    DeviceBank bank({s, d}, 1, 2);
    SimpleWorld w = tank_world();
    DeviceHandle h;
    REQUIRE(bank.open("auv.hull.depth", h) == Status::ok);
    std::uint8_t p[TETHER_DEPTH_SIZE];
    for (int k = 0; k < 10; ++k) {
      w.bodies[0].position_m.z() = -1.0 - k;  // one metre deeper each step
      bank.sense(w, k * step_ns);
      if (k < 3) {
        CHECK(bank.get(h, p, sizeof p) == Status::not_ready);
      } else {
        CHECK(depth_of(bank, h) == doctest::Approx(1.0 + (k - 3)));
        CHECK(bank.sample(1).time_ns == (k - 3) * step_ns);
      }
    }
  }
}

TEST_CASE("device bank: commands become wrenches on the right body, actuator delay") {
  DeviceSpec t = make_spec(TETHER_KIND_THRUSTER, "t0", 1);
  std::get<ThrusterParams>(t.params).time_constant_s = 1e-4;
  DeviceSpec late = make_spec(TETHER_KIND_THRUSTER, "t1", 0);
  std::get<ThrusterParams>(late.params).time_constant_s = 1e-4;
  late.noise.delay_steps = 2;
  DeviceBank bank({t, late}, 1, 2);
  SimpleWorld w = tank_world();
  w.bodies[1].position_m = Vec3(2, 0, -3);
  std::vector<Wrench> wrenches;
  bank.actuate(w, 0.01, wrenches);  // no command yet: idle
  REQUIRE(wrenches.size() == 2);
  CHECK(wrenches[1].force_body_n.norm() == 0);
  std::uint8_t cmd[TETHER_THRUSTER_SIZE];
  tether_put_f32le(cmd, 1.0f);
  REQUIRE(bank.command(0, cmd, sizeof cmd) == Status::ok);
  REQUIRE(bank.command(1, cmd, sizeof cmd) == Status::ok);
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
  CHECK(bank.reading(0, data, size) == Status::ok);
  CHECK(size == TETHER_THRUSTER_SIZE);
  CHECK(std::memcmp(data, cmd, size) == 0);
  std::vector<double> late_force;
  for (int k = 0; k < 5; ++k) {
    bank.actuate(w, 0.01, wrenches);
    // the rotor is up to speed within the first 1 ms sub-step; the step's mean thrust
    // (trapezoid over sub-steps) is 9.5 N in the first step, 10 N after
    CHECK(wrenches[1].force_body_n.x() == doctest::Approx(k == 0 ? 9.5 : 10.0).epsilon(1e-3));
    late_force.push_back(wrenches[0].force_body_n.x());
  }
  // t1's command was given before the second actuate; delayed by 2 it acts from the fourth
  CHECK(late_force[0] == 0);
  CHECK(late_force[1] == 0);
  CHECK(late_force[2] == doctest::Approx(9.5).epsilon(1e-3));
  CHECK(late_force[3] == doctest::Approx(10.0).epsilon(1e-3));
  CHECK(bank.actuator_state(0).x[0] == doctest::Approx(300.0));
}

TEST_CASE("device bank: snapshot and restore reproduce later readings bit for bit") {
  std::vector<DeviceSpec> specs;
  DeviceSpec depth = noisy_depth("depth", 0.05);
  depth.noise.bias_walk_stddev = 0.01;
  depth.noise.dropout = 0.2;
  depth.noise.delay_steps = 2;
  specs.push_back(depth);
  DeviceSpec imu = make_spec(TETHER_KIND_IMU, "imu");
  imu.noise.stddev = 0.01;
  imu.noise_b.stddev = 0.1;
  imu.rate_hz = 30;
  specs.push_back(imu);
  DeviceSpec psd = make_spec(TETHER_KIND_RANGE, "psd");
  psd.noise.uniform = 0.02;
  psd.noise.resolution = 0.01;
  specs.push_back(psd);
  DeviceSpec thr = make_spec(TETHER_KIND_THRUSTER, "thr");
  thr.noise.stddev = 0.05;
  std::get<ThrusterParams>(thr.params).model = RotorModel::yoerger;
  specs.push_back(thr);
  specs.push_back(make_spec(TETHER_KIND_GPS, "gps"));
  DeviceBank bank(specs, 99, 2);
  SimpleWorld w = tank_world();
  DeviceHandle h;
  REQUIRE(bank.open("auv.hull.psd", h) == Status::ok);

  std::vector<Wrench> wrenches;
  auto run = [&](int from, int steps, std::string& record) {
    for (int k = from; k < from + steps; ++k) {
      w.bodies[0].position_m = Vec3(0.01 * k, 0, -3 + 0.02 * k);
      std::uint8_t cmd[4];
      tether_put_f32le(cmd, static_cast<float>(std::sin(0.1 * k)));
      REQUIRE(bank.command(3, cmd, 4) == Status::ok);
      bank.actuate(w, 0.01, wrenches);
      bank.sense(w, k * step_ns);
      for (std::size_t i = 0; i < bank.size(); ++i) {
        const std::uint8_t* data = nullptr;
        std::size_t size = 0;
        record += static_cast<char>(bank.reading(i, data, size));
        record.append(reinterpret_cast<const char*>(data), size);
      }
      for (const Wrench& x : wrenches) record.append(reinterpret_cast<const char*>(x.force_body_n.data()), 24);
    }
  };
  std::string warmup, first, second;
  run(0, 50, warmup);
  std::string snap;
  bank.snapshot(snap);
  const std::uint64_t hash = bank.hash();
  CHECK(DeviceBank::hash_bytes(snap) == hash);
  CHECK(DeviceBank::hash_bytes(snap.substr(1)) != hash);
  run(50, 100, first);
  CHECK(bank.hash() != hash);

  std::string error;
  REQUIRE(bank.restore(snap, &error));
  CHECK(bank.hash() == hash);
  run(50, 100, second);
  CHECK(first == second);

  SUBCASE("a fresh bank restored from the snapshot continues the same way") {
    DeviceBank other(specs, 99, 2);
    REQUIRE(other.restore(snap, &error));
    CHECK(other.hash() == hash);
    DeviceHandle oh;
    CHECK(other.get(h, nullptr, 0) == Status::size_mismatch);  // the open handle came along
    CHECK(other.open("auv.hull.psd", oh) == Status::ok);
  }
  SUBCASE("snapshots that do not fit are refused and change nothing") {
    const std::uint64_t now = bank.hash();
    CHECK_FALSE(bank.restore(snap.substr(0, snap.size() - 1), &error));
    CHECK(error.find("truncated") != std::string::npos);
    CHECK_FALSE(bank.restore(snap + "x", &error));
    CHECK_FALSE(bank.restore("", &error));
    DeviceBank smaller({make_spec(TETHER_KIND_DEPTH, "depth")}, 99, 2);
    CHECK_FALSE(smaller.restore(snap, &error));
    CHECK(bank.hash() == now);
  }
  SUBCASE("reset goes back to the start") {
    bank.reset();
    std::string again;
    run(0, 50, again);
    CHECK(again == warmup);
  }
}

TEST_CASE("device bank: gps sentences at the surface") {
  DeviceSpec gps = make_spec(TETHER_KIND_GPS, "gps");
  std::get<GpsParams>(gps.params).datum_lat_deg = 50;
  DeviceBank bank({gps, make_spec(TETHER_KIND_DEPTH, "depth")}, 1, 2);
  SimpleWorld w = tank_world();
  w.bodies[0].position_m = Vec3(3, 4, 0);
  w.bodies[0].linear_velocity_m_s = Vec3(0, 1, 0);
  bank.sense(w, 0);
  char text[200];
  const std::size_t n = bank.gps_sentences(0, text, sizeof text);
  const std::string s(text, n);
  CHECK(s.rfind("$GPGGA,000000.00,50", 0) == 0);
  CHECK(s.find("\r\n$GPRMC,000000.00,A,50") != std::string::npos);
  CHECK(s.find(",1.9,0.0,010124,,,A*") != std::string::npos);  // 1 m/s = 1.9 kn, due north
  CHECK(bank.gps_sentences(1, text, sizeof text) == 0);
  CHECK(bank.gps_sentences(0, text, 100) == 0);
}
