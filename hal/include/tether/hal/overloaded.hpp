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
// C++20 deduces this for an aggregate; clang before 17 (the libFuzzer build) needs it said
template <class... Ts>
overloaded(Ts...) -> overloaded<Ts...>;

}  // namespace tether::hal
