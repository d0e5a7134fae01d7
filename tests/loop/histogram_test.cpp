// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include "tether/loop/histogram.hpp"

using tether::runtime::Histogram;

TEST_CASE("histogram percentiles are within the bucket resolution") {
  Histogram h;
  for (std::uint64_t v = 1; v <= 100000; ++v) h.record(v * 10);
  CHECK(h.count() == 100000);
  CHECK(h.min() == 10);
  CHECK(h.max() == 1'000'000);
  CHECK(h.mean() == doctest::Approx(500005));
  CHECK(static_cast<double>(h.percentile(0.5)) == doctest::Approx(500000).epsilon(0.04));
  CHECK(static_cast<double>(h.percentile(0.99)) == doctest::Approx(990000).epsilon(0.04));
  CHECK(h.percentile(1.0) == 1'000'000);
}

TEST_CASE("small values are exact, empty is zero, huge values do not overflow") {
  Histogram h;
  CHECK(h.percentile(0.5) == 0);
  for (std::uint64_t v : {3u, 3u, 7u, 31u}) h.record(v);
  CHECK(h.percentile(0.0) == 3);
  CHECK(h.percentile(0.5) == 3);
  CHECK(h.percentile(1.0) == 31);
  h.record(UINT64_MAX);
  CHECK(h.max() == UINT64_MAX);
  CHECK(h.percentile(1.0) == UINT64_MAX);
}
