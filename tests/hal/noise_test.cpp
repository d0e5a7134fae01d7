// SPDX-License-Identifier: Apache-2.0
#include "tether/hal/noise.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <doctest/doctest.h>

using namespace tether::hal;

namespace {

struct Stats {
  double mean = 0;
  double stddev = 0;
};

Stats stats(const std::vector<double>& v) {
  double sum = 0, sq = 0;
  for (double x : v) sum += x;
  const double mean = sum / static_cast<double>(v.size());
  for (double x : v) sq += (x - mean) * (x - mean);
  return {mean, std::sqrt(sq / static_cast<double>(v.size() - 1))};
}

// ulp distance between two finite doubles of the same sign
std::int64_t ulps(double a, double b) {
  std::int64_t ia, ib;
  std::memcpy(&ia, &a, 8);
  std::memcpy(&ib, &b, 8);
  return ia > ib ? ia - ib : ib - ia;
}

}  // namespace

TEST_CASE("rng: the same seed gives the same stream, another seed another one") {
  Rng a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 1000; ++i) {
    const auto x = a.next();
    CHECK(x == b.next());
    differs = differs || x != c.next();
  }
  CHECK(differs);
}

TEST_CASE("rng: outputs are pinned (xoshiro256** seeded by splitmix64 is platform independent)") {
  // golden values: a change here changes every recorded run's noise
  Rng r(0);
  CHECK(r.s[0] == 0xE220A8397B1DCDAFull);  // splitmix64(0), the published first output
  const std::uint64_t first = r.next();
  CHECK(first == 0x99EC5F36CB75F2B4ull);
  Rng one(1);
  CHECK(one.next() != first);
  // the Gaussian path (polar method + portable_log) is pinned bit for bit
  Rng g(42);
  CHECK(g.gaussian() == -0x1.73d2feb0fb377p-1);
}

TEST_CASE("rng: uniform01 lies in 0 <= u < 1 with mean 1/2") {
  Rng r(7);
  std::vector<double> v(100000);
  for (auto& x : v) {
    x = r.uniform01();
    REQUIRE(x >= 0.0);
    REQUIRE(x < 1.0);
  }
  const Stats s = stats(v);
  CHECK(s.mean == doctest::Approx(0.5).epsilon(0.01));
  CHECK(s.stddev == doctest::Approx(std::sqrt(1.0 / 12.0)).epsilon(0.01));
}

TEST_CASE("rng: gaussian has mean 0 and stddev 1 over 1e5 samples") {
  Rng r(123);
  std::vector<double> v(100000);
  for (auto& x : v) x = r.gaussian();
  const Stats s = stats(v);
  CHECK(std::abs(s.mean) < 0.015);  // 4.7 sigma of the mean
  CHECK(s.stddev == doctest::Approx(1.0).epsilon(0.01));
  // the tails are there too: about 4.55% beyond 2 sigma
  int beyond = 0;
  for (double x : v) beyond += std::abs(x) > 2.0;
  CHECK(beyond / 1e5 == doctest::Approx(0.0455).epsilon(0.1));
}

TEST_CASE("portable_log agrees with the C library within 2 ulp") {
  Rng r(9);
  for (int i = 0; i < 100000; ++i) {
    const double x = std::ldexp(0.5 + r.uniform01(), static_cast<int>(r.next() % 200) - 100);
    const double got = portable_log(x), want = std::log(x);
    if (want == 0) continue;
    INFO("x = " << x);
    REQUIRE(ulps(got, want) <= 2);
  }
  CHECK(portable_log(1.0) == 0.0);
  CHECK(portable_log(2.0) == doctest::Approx(std::log(2.0)));
  CHECK(portable_log(std::numeric_limits<double>::denorm_min()) ==
        doctest::Approx(std::log(std::numeric_limits<double>::denorm_min())));
  CHECK(std::isnan(portable_log(-1.0)));
  CHECK(std::isinf(portable_log(0.0)));
  CHECK(portable_log(0.0) < 0);
}

TEST_CASE("device_seed: mixes the scenario seed and the full name") {
  CHECK(device_seed(1, "auv.hull.depth") == device_seed(1, "auv.hull.depth"));
  CHECK(device_seed(1, "auv.hull.depth") != device_seed(2, "auv.hull.depth"));
  CHECK(device_seed(1, "auv.hull.depth") != device_seed(1, "auv.hull.depth2"));
  CHECK(fnv1a64("") == 0xCBF29CE484222325ull);
  CHECK(fnv1a64("a") == 0xAF63DC4C8601EC8Cull);  // the published FNV-1a test vector
}

TEST_CASE("noise chain: offset then scale, exactly") {
  NoiseSpec n;
  n.offset = 0.5;
  n.scale = 2.0;
  Rng r(1);
  double bias[2] = {0, 0};
  double ch[2] = {1.0, -3.0};
  apply_noise(n, r, bias, ch, 2);
  CHECK(ch[0] == 3.0);
  CHECK(ch[1] == -5.0);
  CHECK(n.values_identity() == false);
  CHECK(NoiseSpec{}.is_identity());
}

TEST_CASE("noise chain: gaussian and uniform statistics over 1e5 samples") {
  SUBCASE("gaussian") {
    NoiseSpec n;
    n.stddev = 0.2;
    Rng r(5);
    std::vector<double> v(100000);
    double bias = 0;
    for (auto& x : v) {
      x = 10.0;
      apply_noise(n, r, &bias, &x, 1);
    }
    const Stats s = stats(v);
    CHECK(s.mean == doctest::Approx(10.0).epsilon(0.0005));
    CHECK(s.stddev == doctest::Approx(0.2).epsilon(0.01));
  }
  SUBCASE("uniform") {
    NoiseSpec n;
    n.uniform = 0.3;
    Rng r(6);
    std::vector<double> v(100000);
    double bias = 0;
    for (auto& x : v) {
      x = 0.0;
      apply_noise(n, r, &bias, &x, 1);
      REQUIRE(std::abs(x) <= 0.3);
    }
    const Stats s = stats(v);
    CHECK(std::abs(s.mean) < 0.004);
    CHECK(s.stddev == doctest::Approx(0.3 / std::sqrt(3.0)).epsilon(0.01));
  }
}

TEST_CASE("noise chain: the bias walks with the configured increment") {
  NoiseSpec n;
  n.bias_walk_stddev = 0.01;
  Rng r(11);
  double bias = 0, prev = 0;
  std::vector<double> steps(100000);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    double x = 0;
    apply_noise(n, r, &bias, &x, 1);
    CHECK(x == bias);
    steps[i] = x - prev;
    prev = x;
  }
  const Stats s = stats(steps);
  CHECK(std::abs(s.mean) < 0.0002);
  CHECK(s.stddev == doctest::Approx(0.01).epsilon(0.01));
}

TEST_CASE("noise chain: quantisation rounds to the resolution") {
  NoiseSpec n;
  n.resolution = 0.25;
  Rng r(1);
  double bias = 0;
  for (double x : {0.1, 0.13, 0.37, -0.37, 1.0, -1.126}) {
    double y = x;
    apply_noise(n, r, &bias, &y, 1);
    CHECK(y == doctest::Approx(0.25 * std::round(x / 0.25)));
    CHECK(std::fmod(std::abs(y), 0.25) == 0.0);
  }
}

TEST_CASE("dropout: lost with the configured probability") {
  NoiseSpec n;
  n.dropout = 0.1;
  Rng r(3);
  int lost = 0;
  for (int i = 0; i < 100000; ++i) lost += draw_dropout(n, r);
  CHECK(lost / 1e5 == doctest::Approx(0.1).epsilon(0.03));
  NoiseSpec never;
  Rng q(3);
  const auto before = q.s;
  CHECK_FALSE(draw_dropout(never, q));
  CHECK(q.s == before);  // no draw when dropout is off
}
