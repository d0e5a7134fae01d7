// SPDX-License-Identifier: Apache-2.0
// The registry every extension point shares: add, refuse a duplicate, find, list, explain.
#include <doctest/doctest.h>

#include <functional>
#include <string>

#include "tether/hal/device_spec.hpp"
#include "tether/hal/registry.hpp"

using tether::hal::Registry;

TEST_CASE("registry: names in registration order, duplicates refused, unknown names explained") {
  Registry<std::function<int()>> r("widget");
  CHECK(r.known_list() == "none");
  CHECK(r.add(
      "one", [] { return 1; }, "the first"));
  CHECK(r.add(
      "two", [] { return 2; }, "the second"));
  CHECK_FALSE(r.add(
      "one", [] { return 11; }, "a usurper"));  // the first one stays
  REQUIRE(r.find("one") != nullptr);
  CHECK((*r.find("one"))() == 1);
  CHECK((*r.find("two"))() == 2);
  CHECK(r.find("three") == nullptr);
  CHECK(r.names() == std::vector<std::string>{"one", "two"});
  CHECK(r.entries()[1].description == "the second");
  CHECK(r.unknown_message("three") == "unknown widget \"three\" (known: one, two)");
}

TEST_CASE("device kinds: every registered name maps back to its own row") {
  const auto& kinds = tether::hal::device_kinds();
  CHECK(kinds.names().size() == 20);
  for (const auto& e : kinds.entries()) {
    CHECK(tether::hal::kind_from_name(e.name) == e.factory);
    CHECK(std::string(tether::hal::kind_info(e.factory).name) == e.name);
    CHECK(std::string(tether_kind_name(static_cast<std::uint8_t>(e.factory))) == e.name);  // the shim's name
    CHECK(tether_kind_payload_size(static_cast<std::uint8_t>(e.factory)) > 0);
    CHECK_FALSE(e.description.empty());
  }
  CHECK(tether::hal::kind_from_name("wheel_drive") == TETHER_KIND_WHEEL_DRIVE);
  CHECK(tether::hal::kind_from_name("laser") == TETHER_KIND_NONE);
  CHECK(std::string(tether::hal::kind_info(static_cast<tether::hal::DeviceKind>(40)).name) == "unknown");
}
