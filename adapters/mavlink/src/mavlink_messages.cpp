// SPDX-License-Identifier: Apache-2.0
#include "tether/mavlink/mavlink_messages.hpp"

#include <algorithm>
#include <cctype>

namespace tether::adapters::mavlink {

namespace {

// Every message's field list must hash to the CRC_EXTRA of its XML definition (the constant in
// its struct, which MAVLink's own generator computes the same way), be in wire order and fit.
template <class M>
constexpr bool checked() {
  static_assert(compute_crc_extra<M>() == M::crc_extra, "fields() disagree with the XML: CRC_EXTRA differs");
  static_assert(in_wire_order<M>(), "fields() are not in wire order");
  static_assert(max_length<M>() <= max_payload_size && min_length<M>() >= 1);
  static_assert(M::msgid <= max_msgid);
  return true;
}

template <class... M>
constexpr std::array<MessageInfo, sizeof...(M)> table_of() {
  static_assert((checked<M>() && ...));
  return {info<M>()...};
}

constexpr auto known = table_of<Heartbeat, SysStatus, SetMode, ParamValue, ParamSet, Attitude, GlobalPositionInt,
                                ManualControl, VfrHud, CommandLong, CommandAck, SetAttitudeTarget,
                                SetPositionTargetLocalNed, SetPositionTargetGlobalInt, StatusText>();
static_assert(std::is_sorted(known.begin(), known.end(),
                             [](const MessageInfo& a, const MessageInfo& b) { return a.id < b.id; }) &&
                  std::adjacent_find(known.begin(), known.end(), [](const MessageInfo& a, const MessageInfo& b) {
                    return a.id == b.id;
                  }) == known.end(),
              "known_messages() must be sorted by id without repeats (find_message searches it)");

// the payload lengths MAVLink's generators give (mavlink.io message pages: "len" / with extensions)
static_assert(min_length<Heartbeat>() == 9 && min_length<SysStatus>() == 31 && max_length<SysStatus>() == 43);
static_assert(min_length<CommandLong>() == 33 && min_length<CommandAck>() == 3 && max_length<CommandAck>() == 10);
static_assert(min_length<ManualControl>() == 11 && min_length<SetAttitudeTarget>() == 39 &&
              max_length<SetAttitudeTarget>() == 51);
static_assert(min_length<SetPositionTargetLocalNed>() == 53 && min_length<StatusText>() == 51 &&
              max_length<StatusText>() == 54);

// ardupilotmega.xml, enum SUB_MODE
constexpr FlightMode sub_modes[] = {
    {"STABILIZE", 0}, {"ACRO", 1},     {"ALT_HOLD", 2}, {"AUTO", 3},         {"GUIDED", 4},   {"CIRCLE", 7},
    {"SURFACE", 9},   {"POSHOLD", 16}, {"MANUAL", 19},  {"MOTORDETECT", 20}, {"SURFTRAK", 21},
};
// ardupilotmega.xml, enum ROVER_MODE
constexpr FlightMode rover_modes[] = {
    {"MANUAL", 0},  {"ACRO", 1},  {"STEERING", 3}, {"HOLD", 4},       {"LOITER", 5},  {"FOLLOW", 6},
    {"SIMPLE", 7},  {"DOCK", 8},  {"CIRCLE", 9},   {"AUTO", 10},      {"RTL", 11},    {"SMART_RTL", 12},
    {"GUIDED", 15}, {"INITIALIZING", 16},
};

// a mode name as written by a person: case ignored, ' ' and '-' as '_'
bool same_name(std::string_view canonical, std::string_view asked) {
  if (canonical.size() != asked.size()) return false;
  for (std::size_t i = 0; i < asked.size(); ++i) {
    char c = static_cast<char>(std::toupper(static_cast<unsigned char>(asked[i])));
    if (c == ' ' || c == '-') c = '_';
    if (c != canonical[i]) return false;
  }
  return true;
}

}  // namespace

std::span<const MessageInfo> known_messages() { return known; }

Heartbeat gcs_heartbeat() {
  Heartbeat h;
  h.type = mav_type_gcs;
  h.autopilot = mav_autopilot_invalid;
  h.system_status = mav_state_active;
  return h;
}

CommandLong arm_disarm(std::uint8_t target_system, std::uint8_t target_component, bool arm, bool force) {
  CommandLong c;
  c.target_system = target_system;
  c.target_component = target_component;
  c.command = mav_cmd_component_arm_disarm;
  c.param1 = arm ? 1.0F : 0.0F;
  c.param2 = force ? arm_disarm_force : 0.0F;
  return c;
}

CommandLong do_set_mode(std::uint8_t target_system, std::uint8_t target_component, std::uint32_t custom_mode) {
  CommandLong c;
  c.target_system = target_system;
  c.target_component = target_component;
  c.command = mav_cmd_do_set_mode;
  c.param1 = mav_mode_flag_custom_mode_enabled;
  c.param2 = static_cast<float>(custom_mode);  // mode numbers are small: exact in a float
  return c;
}

std::span<const FlightMode> flight_modes(Vehicle vehicle) {
  switch (vehicle) {
    case Vehicle::sub: return sub_modes;
    case Vehicle::rover: return rover_modes;
  }
  return {};
}

std::optional<std::uint32_t> custom_mode(Vehicle vehicle, std::string_view name) {
  for (const FlightMode& m : flight_modes(vehicle))
    if (same_name(m.name, name)) return m.custom_mode;
  return std::nullopt;
}

std::string_view mode_name(Vehicle vehicle, std::uint32_t custom_mode) {
  for (const FlightMode& m : flight_modes(vehicle))
    if (m.custom_mode == custom_mode) return m.name;
  return {};
}

}  // namespace tether::adapters::mavlink
