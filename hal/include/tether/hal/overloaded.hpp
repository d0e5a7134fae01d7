// SPDX-License-Identifier: Apache-2.0
// A visitor made of lambdas, one per alternative: std::visit(overloaded{...}, variant).
// Without a catch-all (`auto&`) lambda, a type added to the variant and not handled does
// not compile; that is how every visit over DeviceParams is written.
#pragma once

namespace tether::hal {

template <class... Ts>
struct overloaded : Ts... {
  using Ts::operator()...;
};

}  // namespace tether::hal
