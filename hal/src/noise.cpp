// SPDX-License-Identifier: Apache-2.0
#include "tether/hal/noise.hpp"

#include <bit>
#include <cmath>
#include <limits>

namespace tether::hal {

namespace {

std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// splitmix64 step: advances `state` and returns the next output
std::uint64_t splitmix64(std::uint64_t& state) {
  state += 0x9E3779B97F4A7C15ull;
  return mix64(state);
}

}  // namespace

std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::uint64_t fnv1a64(std::string_view text) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001B3ull;
  }
  return h;
}

std::uint64_t device_seed(std::uint64_t scenario_seed, std::string_view full_name) {
  // mix the seed first so that seeds 1, 2, 3 do not differ in the low bits only
  return mix64(mix64(scenario_seed) ^ fnv1a64(full_name));
}

void Rng::seed(std::uint64_t seed_value) {
  std::uint64_t sm = seed_value;
  for (auto& word : s) word = splitmix64(sm);
  // splitmix64 is a bijection of its counter, so four zero outputs cannot happen; keep the
  // guard anyway: an all-zero state would stay zero forever
  if ((s[0] | s[1] | s[2] | s[3]) == 0) s[0] = 1;
  has_spare = false;
  spare = 0;
}

std::uint64_t Rng::next() {
  const std::uint64_t result = rotl(s[1] * 5, 7) * 9;
  const std::uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double Rng::gaussian() {
  if (has_spare) {
    has_spare = false;
    return spare;
  }
  // Marsaglia polar: a point uniform in the unit disc gives two independent normals
  double u = 0, v = 0, r2 = 0;
  do {
    u = 2.0 * uniform01() - 1.0;
    v = 2.0 * uniform01() - 1.0;
    r2 = u * u + v * v;
  } while (r2 >= 1.0 || r2 == 0.0);
  const double f = std::sqrt(-2.0 * portable_log(r2) / r2);  // sqrt is exact in IEEE-754
  spare = v * f;
  has_spare = true;
  return u * f;
}

double portable_log(double x) {
  if (std::isnan(x) || x < 0) return std::numeric_limits<double>::quiet_NaN();
  if (x == 0) return -std::numeric_limits<double>::infinity();
  if (std::isinf(x)) return x;
  // x = m * 2^e with m in [sqrt(1/2), sqrt(2)), read from the bits (exact, like frexp)
  int e = 0;
  if (x < 0x1p-1022) {  // subnormal: scale into the normal range first
    x *= 0x1p54;
    e = -54;
  }
  const auto bits = std::bit_cast<std::uint64_t>(x);
  e += static_cast<int>((bits >> 52) & 0x7FF) - 1022;
  double m = std::bit_cast<double>((bits & 0x000FFFFFFFFFFFFFull) | 0x3FE0000000000000ull);  // [0.5, 1)
  if (m < 0.70710678118654752440) {
    m *= 2.0;
    e -= 1;
  }
  // log(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.1716: the series converges fast.
  // 1/(2k+1), k = 0..10, rounded at compile time exactly as a run-time division would be;
  // the first term left out is below 1e-19 of the result. Horner, in a fixed order.
  static constexpr double inv_odd[11] = {1.0,        1.0 / 3.0,  1.0 / 5.0,  1.0 / 7.0,  1.0 / 9.0, 1.0 / 11.0,
                                         1.0 / 13.0, 1.0 / 15.0, 1.0 / 17.0, 1.0 / 19.0, 1.0 / 21.0};
  const double s = (m - 1.0) / (m + 1.0);
  const double z = s * s;
  double p = inv_odd[10];
  for (int k = 9; k >= 0; --k) p = p * z + inv_odd[k];
  // ln 2 split so that e * ln2_hi is exact for every exponent
  constexpr double ln2_hi = 6.93147180369123816490e-01;
  constexpr double ln2_lo = 1.90821492927058770002e-10;
  const double de = static_cast<double>(e);
  return de * ln2_hi + (de * ln2_lo + 2.0 * s * p);
}

bool NoiseSpec::values_identity() const {
  return offset == 0 && scale == 1 && stddev == 0 && uniform == 0 && bias_walk_stddev == 0 && resolution == 0;
}

bool NoiseSpec::is_identity() const { return values_identity() && dropout == 0 && delay_steps == 0; }

void apply_noise(const NoiseSpec& spec, Rng& rng, double* bias, double* channels, int count) {
  for (int i = 0; i < count; ++i) {
    double y = (channels[i] + spec.offset) * spec.scale;
    if (spec.stddev > 0) y += spec.stddev * rng.gaussian();
    if (spec.uniform > 0) y += rng.uniform(-spec.uniform, spec.uniform);
    if (spec.bias_walk_stddev > 0) {
      bias[i] += spec.bias_walk_stddev * rng.gaussian();
      y += bias[i];
    }
    if (spec.resolution > 0) y = spec.resolution * std::round(y / spec.resolution);
    channels[i] = y;
  }
}

bool draw_dropout(const NoiseSpec& spec, Rng& rng) {
  if (spec.dropout <= 0) return false;
  return rng.uniform01() < spec.dropout;
}

}  // namespace tether::hal
