// SPDX-License-Identifier: Apache-2.0
// Noise for device readings and commands, and the random numbers behind it.
//
// Every number here is reproducible on any platform: the generator is xoshiro256** (output
// specified by its algorithm), seeded through splitmix64 from the scenario seed and the
// device's full name; Gaussian samples come from Marsaglia's polar method with a logarithm
// written out in + - * / (no libm, whose last bit differs between implementations), so
// the same scenario gives the same noise everywhere and adding a device changes no other
// device's stream.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace tether::hal {

/// xoshiro256**: 256 bits of state, period 2^256 - 1, plain data (copy it to snapshot it).
class Rng {
 public:
  Rng() { seed(0); }
  explicit Rng(std::uint64_t seed_value) { seed(seed_value); }

  /// Fills the state from one 64-bit seed with splitmix64 (never all zero).
  void seed(std::uint64_t seed_value);
  /// The next 64 random bits.
  std::uint64_t next();
  /// Uniform in [0, 1) with 53 random bits.
  double uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform01(); }
  /// Standard normal (mean 0, stddev 1), Marsaglia polar method; keeps the second value.
  double gaussian();

  std::array<std::uint64_t, 4> s{};
  bool has_spare = false;
  double spare = 0;
};

/// splitmix64 finaliser: a bijective 64-bit mix.
std::uint64_t mix64(std::uint64_t x);
/// FNV-1a 64 of a string.
std::uint64_t fnv1a64(std::string_view text);
/// The seed of one device's stream: the scenario seed mixed with the hash of its full name.
std::uint64_t device_seed(std::uint64_t scenario_seed, std::string_view full_name);
/// Natural logarithm of x > 0 from + - * / only (bit-identical on every IEEE-754 platform;
/// within 2 ulp of the true value). NaN for x <= 0 or NaN, +inf for +inf.
double portable_log(double x);

/// The noise chain of one device (or one channel group of it), applied in this order:
///   y = (x + offset) * scale          systematic error
///   y += N(0, stddev^2)               white Gaussian noise
///   y += U(-uniform, +uniform)        white uniform noise
///   b += N(0, bias_walk_stddev^2); y += b   bias random walk, one increment per sample
///   y = resolution * round(y / resolution)   quantisation (0: none)
/// then per sample: with probability `dropout` the sample is lost (no data), and the
/// output is the sample from `delay_steps` samples ago (no data until there is one).
struct NoiseSpec {
  double offset = 0;
  double scale = 1;
  double stddev = 0;
  double uniform = 0;
  double bias_walk_stddev = 0;
  double resolution = 0;
  double dropout = 0;  // probability in [0, 1]
  std::uint32_t delay_steps = 0;

  /// True when the chain changes nothing (the defaults).
  bool is_identity() const;
  /// True when the value chain (offset .. quantisation) changes nothing.
  bool values_identity() const;
};

/// Applies the value chain (offset .. quantisation) to `count` channels; `bias` holds each
/// channel's random-walk state. Draws from `rng` only for the stages that are switched on,
/// channel by channel, in the order above.
void apply_noise(const NoiseSpec& spec, Rng& rng, double* bias, double* channels, int count);
/// Draws the dropout decision of one sample: true if the sample is lost.
bool draw_dropout(const NoiseSpec& spec, Rng& rng);

}  // namespace tether::hal
