// SPDX-License-Identifier: Apache-2.0
// The plausibility gate: a measurement an endpoint sends must lie inside the world and must
// not imply a speed no vehicle has, before any feedback processor sees it (docs/scenario.md,
// `loop.plausibility`). A pure function of the measurement, the one before it and the world:
// replay makes the same decisions from the recorded replies.
#pragma once

#include "tether/physics/world_model.hpp"
#include "tether/scenario/scenario.hpp"
#include "tether/scenario/step_data.hpp"

namespace tether::runtime {

/// The box a body may be measured in: the planes of the world (a tank's floor and walls)
/// bound the axes they face, the rest is `max_distance_m` from the origin; both widened by
/// `margin_m`.
struct WorldBox {
  Vec3 min{0, 0, 0};
  Vec3 max{0, 0, 0};
};

WorldBox plausible_box(const WorldModel& model, const PlausibilityConfig& config);

/// nullptr when `m` is plausible; otherwise why not (a static string). `previous` is the
/// same body's measurement in the endpoint's previous reply, or nullptr; with it the implied
/// speed between the two is checked too.
const char* implausible(const Measurement& m, const Measurement* previous, std::int64_t period_ns, const WorldBox& box,
                        const PlausibilityConfig& config);

}  // namespace tether::runtime
