// SPDX-License-Identifier: Apache-2.0
// The MAVLink messages (adapters/mavlink/src/mavlink_messages.cpp): CRC_EXTRA and lengths against the
// published values, field offsets, every message through a frame and back, text fields, the
// command helpers, and ArduSub's and ArduRover's modes by name.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "mavlink_test_util.hpp"
#include "tether/mavlink/mavlink_messages.hpp"

namespace mav = tether::adapters::mavlink;
using nlohmann::json;

namespace {

// the offset of a field in M's payload
template <class M>
std::size_t offset_of(const char* name) {
  std::size_t offset = 0;
  std::size_t found = mav::max_payload_size + 1;
  std::apply(
      [&](auto... f) {
        auto one = [&](auto g) {
          if (std::string(g.name) == name) found = offset;
          offset += mav::wire_size<mav::detail::field_value_t<decltype(g)>>;
        };
        (one(f), ...);
      },
      M::fields());
  return found;
}

}  // namespace

TEST_CASE("mavlink messages: CRC_EXTRA and payload lengths are the published ones") {
  // msgid: {CRC_EXTRA, base length, length with extensions}, as MAVLink's generators print
  // them for common.xml and minimal.xml (MAVLINK_MESSAGE_CRCS, mavlink.io's message pages)
  const std::map<std::uint32_t, std::array<int, 3>> published = {
      {0, {50, 9, 9}},    {1, {124, 31, 43}}, {11, {89, 6, 6}},   {22, {220, 25, 25}}, {23, {168, 23, 23}},
      {30, {39, 28, 28}}, {33, {104, 28, 28}}, {69, {243, 11, 30}}, {74, {20, 20, 20}},   {76, {152, 33, 33}},
      {77, {143, 3, 10}}, {82, {49, 39, 51}}, {84, {143, 53, 53}}, {86, {5, 53, 53}},    {253, {83, 51, 54}},
  };
  const auto table = mav::known_messages();
  REQUIRE(table.size() == published.size());
  for (const mav::MessageInfo& m : table) {
    CAPTURE(m.name);
    REQUIRE(published.count(m.id) == 1);
    CHECK(m.crc_extra == published.at(m.id)[0]);
    CHECK(m.min_length == published.at(m.id)[1]);
    CHECK(m.max_length == published.at(m.id)[2]);
    CHECK(mav::find_message(table, m.id) == &m);
  }
  CHECK(mav::find_message(table, 2) == nullptr);
  CHECK(mav::find_message(table, 0xFFFFFF) == nullptr);
  // the compile-time hash of each field list is the constant (also static_asserted)
  mav::test::for_each_message([](auto m) {
    using M = decltype(m);
    CHECK(mav::compute_crc_extra<M>() == M::crc_extra);
  });
}

TEST_CASE("mavlink messages: fields sit where MAVLink's wire order puts them") {
  // base fields by size, largest first, then extensions in XML order
  CHECK(offset_of<mav::Heartbeat>("custom_mode") == 0);
  CHECK(offset_of<mav::Heartbeat>("type") == 4);
  CHECK(offset_of<mav::Heartbeat>("mavlink_version") == 8);
  CHECK(offset_of<mav::SysStatus>("battery_remaining") == 30);
  CHECK(offset_of<mav::SysStatus>("onboard_control_sensors_present_extended") == 31);
  CHECK(offset_of<mav::ParamSet>("param_id") == 6);
  CHECK(offset_of<mav::ParamValue>("param_type") == 24);
  CHECK(offset_of<mav::GlobalPositionInt>("hdg") == 26);
  CHECK(offset_of<mav::ManualControl>("target") == 10);
  CHECK(offset_of<mav::ManualControl>("buttons2") == 11);
  CHECK(offset_of<mav::VfrHud>("heading") == 16);
  CHECK(offset_of<mav::CommandLong>("command") == 28);
  CHECK(offset_of<mav::CommandLong>("confirmation") == 32);
  CHECK(offset_of<mav::CommandAck>("result_param2") == 4);
  CHECK(offset_of<mav::SetAttitudeTarget>("q") == 4);
  CHECK(offset_of<mav::SetAttitudeTarget>("type_mask") == 38);
  CHECK(offset_of<mav::SetAttitudeTarget>("thrust_body") == 39);
  CHECK(offset_of<mav::SetPositionTargetLocalNed>("type_mask") == 48);
  CHECK(offset_of<mav::SetPositionTargetGlobalInt>("coordinate_frame") == 52);
  CHECK(offset_of<mav::StatusText>("id") == 51);
  // and the bytes are little-endian there
  mav::GlobalPositionInt g;
  g.hdg = 0x1234;
  g.lat = -2;
  std::array<std::uint8_t, mav::max_payload_size> p{};
  mav::encode_payload(g, p);
  CHECK(p[26] == 0x34);
  CHECK(p[27] == 0x12);
  CHECK((p[4] == 0xFE && p[5] == 0xFF && p[6] == 0xFF && p[7] == 0xFF));
}

TEST_CASE("mavlink messages: every message goes through a frame and back unchanged") {
  mav::test::for_each_message([](auto m0) {
    using M = decltype(m0);
    CAPTURE(M::name);
    for (int salt = 0; salt < 3; ++salt) {
      const M m = mav::test::sample<M>(salt);
      std::array<std::uint8_t, mav::max_frame_size> buf{};
      mav::Header h;
      h.seq = static_cast<std::uint8_t>(salt);
      h.sysid = 255;
      h.compid = 190;
      const std::size_t n = mav::encode(m, h, buf);
      REQUIRE(n > 0);
      mav::Decoder d(mav::known_messages());
      int got = 0;
      d.feed(std::span<const std::uint8_t>(buf.data(), n), [&](const mav::Frame& f) {
        ++got;
        CHECK(f.header.msgid == M::msgid);
        CHECK(f.header.seq == salt);
        const auto back = mav::decode<M>(f);
        REQUIRE(back);
        CHECK(mav::test::to_json(*back) == mav::test::to_json(m));
      });
      CHECK(got == 1);
      // and through JSON (the cross-check's path)
      M again{};
      mav::test::from_json(mav::test::to_json(m), again);
      CHECK(mav::test::to_json(again) == mav::test::to_json(m));
    }
  });
}

TEST_CASE("mavlink messages: text fields hold 16 or 50 characters without a NUL") {
  mav::ParamSet p;
  CHECK(mav::set_text(p.param_id, "SURFACE_DEPTH"));
  CHECK(mav::text(p.param_id) == "SURFACE_DEPTH");
  CHECK(mav::set_text(p.param_id, "ABCDEFGHIJKLMNOP"));  // exactly 16: no terminator on the wire
  CHECK(mav::text(p.param_id) == "ABCDEFGHIJKLMNOP");
  CHECK_FALSE(mav::set_text(p.param_id, "ABCDEFGHIJKLMNOPQ"));
  CHECK(mav::text(p.param_id) == "ABCDEFGHIJKLMNOP");
  std::array<std::uint8_t, mav::max_payload_size> bytes{};
  mav::encode_payload(p, bytes);
  CHECK(bytes[6] == 'A');
  CHECK(bytes[21] == 'P');
  const auto back = mav::decode_payload<mav::ParamSet>(bytes);
  CHECK(mav::text(back.param_id) == "ABCDEFGHIJKLMNOP");

  mav::StatusText st;
  const std::string fifty(50, 'x');
  CHECK(mav::set_text(st.text, fifty));
  CHECK(mav::text(st.text) == fifty);
}

TEST_CASE("mavlink messages: arm, disarm and mode commands") {
  const mav::CommandLong arm = mav::arm_disarm(1, 1, true);
  CHECK(arm.command == 400);
  CHECK(arm.param1 == 1.0F);
  CHECK(arm.param2 == 0.0F);
  const mav::CommandLong force = mav::arm_disarm(1, 1, false, true);
  CHECK(force.param1 == 0.0F);
  CHECK(force.param2 == 21196.0F);
  const mav::CommandLong mode = mav::do_set_mode(1, 1, *mav::custom_mode(mav::Vehicle::sub, "ALT_HOLD"));
  CHECK(mode.command == 176);
  CHECK(mode.param1 == 1.0F);
  CHECK(mode.param2 == 2.0F);
  const mav::Heartbeat gcs = mav::gcs_heartbeat();
  CHECK(gcs.type == 6);
  CHECK(gcs.autopilot == 8);
  CHECK(gcs.mavlink_version == 3);
}

TEST_CASE("mavlink messages: ArduSub and ArduRover flight modes by name and number") {
  using mav::Vehicle;
  // ardupilotmega.xml SUB_MODE / ROVER_MODE
  CHECK(mav::custom_mode(Vehicle::sub, "MANUAL") == 19u);
  CHECK(mav::custom_mode(Vehicle::sub, "STABILIZE") == 0u);
  CHECK(mav::custom_mode(Vehicle::sub, "alt_hold") == 2u);
  CHECK(mav::custom_mode(Vehicle::sub, "Alt Hold") == 2u);
  CHECK(mav::custom_mode(Vehicle::sub, "POSHOLD") == 16u);
  CHECK(mav::custom_mode(Vehicle::sub, "GUIDED") == 4u);
  CHECK(mav::custom_mode(Vehicle::sub, "SURFTRAK") == 21u);
  CHECK_FALSE(mav::custom_mode(Vehicle::sub, "HOLD"));
  CHECK_FALSE(mav::custom_mode(Vehicle::sub, ""));
  CHECK_FALSE(mav::custom_mode(Vehicle::sub, "ALT_HOLDX"));
  CHECK(mav::custom_mode(Vehicle::rover, "MANUAL") == 0u);
  CHECK(mav::custom_mode(Vehicle::rover, "HOLD") == 4u);
  CHECK(mav::custom_mode(Vehicle::rover, "smart-rtl") == 12u);
  CHECK(mav::custom_mode(Vehicle::rover, "GUIDED") == 15u);
  CHECK(mav::mode_name(Vehicle::sub, 19) == "MANUAL");
  CHECK(mav::mode_name(Vehicle::rover, 19) == "");
  CHECK(mav::mode_name(Vehicle::rover, 11) == "RTL");
  CHECK(mav::flight_modes(Vehicle::sub).size() == 11);
  CHECK(mav::flight_modes(Vehicle::rover).size() == 14);
  for (const Vehicle v : {Vehicle::sub, Vehicle::rover})
    for (const mav::FlightMode& m : mav::flight_modes(v)) {
      CHECK(mav::custom_mode(v, m.name) == m.custom_mode);
      CHECK(mav::mode_name(v, m.custom_mode) == m.name);
    }
}
