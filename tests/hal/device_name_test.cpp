// SPDX-License-Identifier: Apache-2.0
#include "tether/hal/device_name.hpp"

#include <string>

#include <doctest/doctest.h>

using namespace tether::hal;

TEST_CASE("device names: vehicle.part.device") {
  DeviceName n;
  std::string why;
  REQUIRE(parse_device_name("auv.hull.psd_front", n, &why));
  CHECK(n.vehicle == "auv");
  CHECK(n.part == "hull");
  CHECK(n.device == "psd_front");
  CHECK(n.full() == "auv.hull.psd_front");
  CHECK_FALSE(parse_device_name("auv.hull", n, &why));
  CHECK(why.find("three names") != std::string::npos);
  CHECK_FALSE(parse_device_name("auv.hull.a.b", n, &why));
  CHECK_FALSE(parse_device_name("auv..psd", n, &why));
  CHECK_FALSE(parse_device_name("auv.hull.9psd", n, &why));
  CHECK(valid_name_segment("_x-1"));
  CHECK_FALSE(valid_name_segment(std::string(32, 'a')));
  CHECK(valid_name_segment(std::string(31, 'a')));
  CHECK_FALSE(valid_name_segment("a b"));
}
