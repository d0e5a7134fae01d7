// SPDX-License-Identifier: Apache-2.0
// The page `tether identify --report FILE` writes (identify_page.cpp).
#pragma once

#include <optional>
#include <string>

#include "tether/identify/identify.hpp"

namespace tether::cli {

/// The fit on one self-contained HTML page: the held-out (or validation) predictions of the
/// fitted and the uncorrected model against the measurements, the estimates and combinations
/// with their sigmas, the weak directions, the delay profile and `fit_yaml` as written.
std::string identify_page(const identify::Trial& trial, const identify::FitResult& fit,
                          const std::optional<identify::Prediction>& prediction, const std::string& fit_yaml);

}  // namespace tether::cli
