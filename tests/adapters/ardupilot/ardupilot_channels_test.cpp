// SPDX-License-Identifier: Apache-2.0
// ArduPilot's servo outputs to actuator commands: the mapping per channel and its config.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tether/ardupilot/ardupilot_channels.hpp"

using namespace tether::adapters::ardupilot;
using tether::runtime::load_config_text;

namespace {

std::vector<std::string> errors_of(const std::string& yaml, std::vector<ChannelMap>* maps = nullptr) {
  const auto root = load_config_text(yaml, "ap.yaml");
  auto m = parse_channel_maps(root["channels"]);
  if (maps) *maps = m;
  return root.context().errors;
}

bool has_error(const std::vector<std::string>& errors, const std::string& part) {
  for (const auto& e : errors)
    if (e.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("ardupilot channels: a reversible channel maps min..trim..max to -1..0..1, both sides to full scale") {
  ChannelMap m;
  m.min_us = 1100;
  m.trim_us = 1400;  // off-centre: each side scales on its own
  m.max_us = 1900;
  CHECK(command_from_pwm(m, 1400) == 0.0);
  CHECK(command_from_pwm(m, 1900) == 1.0);
  CHECK(command_from_pwm(m, 1100) == -1.0);
  CHECK(command_from_pwm(m, 1650) == doctest::Approx(0.5));
  CHECK(command_from_pwm(m, 1250) == doctest::Approx(-0.5));
  CHECK(command_from_pwm(m, 2200) == 1.0);  // clamped
  CHECK(command_from_pwm(m, 900) == -1.0);
  CHECK(command_from_pwm(m, 0) == 0.0);  // no output: stop
  m.reversed = true;
  CHECK(command_from_pwm(m, 1900) == -1.0);
  CHECK(command_from_pwm(m, 1250) == doctest::Approx(0.5));
  CHECK(command_from_pwm(m, 0) == 0.0);
}

TEST_CASE("ardupilot channels: a one-way channel maps min..max to 0..1, reversed max is stop") {
  ChannelMap m;
  m.mode = ChannelMode::one_way;
  m.min_us = 1000;
  m.max_us = 2000;
  CHECK(command_from_pwm(m, 1000) == 0.0);
  CHECK(command_from_pwm(m, 1250) == doctest::Approx(0.25));
  CHECK(command_from_pwm(m, 2000) == 1.0);
  CHECK(command_from_pwm(m, 800) == 0.0);
  CHECK(command_from_pwm(m, 0) == 0.0);
  m.reversed = true;
  CHECK(command_from_pwm(m, 2000) == 0.0);
  CHECK(command_from_pwm(m, 1250) == doctest::Approx(0.75));
  CHECK(command_from_pwm(m, 0) == 0.0);
}

TEST_CASE("ardupilot channels: a frame is configuration, defaults are ArduSub's 1100/1500/1900") {
  std::vector<ChannelMap> maps;
  const auto errors = errors_of(R"(channels:
  - {channel: 1, actuator: thruster_fr}
  - {channel: 2, actuator: thruster_fl, reversed: true, min_us: 1000, trim_us: 1520, max_us: 2000}
  - {channel: 32, actuator: prop, mode: one_way, scale: 0.5}
)",
                                &maps);
  CHECK(errors.empty());
  REQUIRE(maps.size() == 3);
  CHECK(maps[0].channel == 1);
  CHECK(maps[0].actuator == "thruster_fr");
  CHECK(maps[0].min_us == 1100);
  CHECK(maps[0].trim_us == 1500);
  CHECK(maps[0].max_us == 1900);
  CHECK_FALSE(maps[0].reversed);
  CHECK(maps[0].mode == ChannelMode::reversible);
  CHECK(maps[1].reversed);
  CHECK(maps[1].trim_us == 1520);
  CHECK(maps[2].channel == 32);
  CHECK(maps[2].mode == ChannelMode::one_way);
  CHECK(maps[0].scale == 1.0);
  CHECK(maps[2].scale == 0.5);
}

TEST_CASE("ardupilot channels: mistakes are positioned, all at once") {
  const auto errors = errors_of(R"(channels:
  - {channel: 0, actuator: a}
  - {channel: 2, actuator: b, min_us: 1600}
  - {channel: 2, actuator: c}
  - {channel: 4, actuator: a}
  - {channel: 5, actuator: d, mode: one_way, trim_us: 1500}
  - {channel: 6, actuator: e, mode: sideways, extra: 1}
  - {actuator: f, max_us: 3000}
  - {channel: 8}
)");
  INFO([&] {
    std::string all;
    for (const auto& e : errors) all += e + "\n";
    return all;
  }());
  CHECK(has_error(errors, "channels[0].channel: expected a whole number from 1 to 32, got \"0\""));
  REQUIRE(!errors.empty());
  CHECK(errors[0].rfind("ap.yaml:2:", 0) == 0);  // on the line of the entry
  CHECK(has_error(errors, "channels[1]: expected min_us < trim_us < max_us, got 1600 < 1500 < 1900"));
  CHECK(has_error(errors, "channels[2].channel: channel 2 is mapped twice"));
  CHECK(has_error(errors, "channels[3].actuator: actuator a is mapped twice"));
  CHECK(has_error(errors, "channels[4].trim_us: a one_way channel stops at min_us"));
  CHECK(has_error(errors, "channels[5].mode"));
  CHECK(has_error(errors, "channels[5].extra: unknown key"));
  CHECK(has_error(errors, "channels[6].channel: missing"));
  CHECK(has_error(errors, "channels[6].max_us: expected a whole number from 500 to 2500, got \"3000\""));
  CHECK(has_error(errors, "channels[7].actuator: missing"));
  // a map instead of a list
  CHECK(has_error(errors_of("channels: {channel: 1}\n"), "channels: expected a list"));
}
