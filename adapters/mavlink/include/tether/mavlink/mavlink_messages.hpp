// SPDX-License-Identifier: Apache-2.0
// The MAVLink messages Tether speaks to ArduPilot (docs/mavlink.md), as plain structs, and
// ArduSub's and ArduRover's flight modes by name.
//
// Each struct lists its fields once, in `fields()`, in wire order: the base fields sorted by
// type size (largest first, XML order among equals), then the extension fields in XML order.
// Offsets, payload lengths and the CRC_EXTRA byte are computed from that list at compile time
// (mavlink_fields.hpp), and mavlink_messages.cpp checks the computed CRC_EXTRA against the
// value taken from the XML definitions (mavlink/mavlink message_definitions/v1.0: minimal.xml,
// common.xml; modes from ardupilotmega.xml), so a wrong field name, type, array size or order
// does not compile.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <tuple>

#include "tether/mavlink/mavlink.hpp"
#include "tether/mavlink/mavlink_fields.hpp"

namespace tether::adapters::mavlink {

// ---- the messages -------------------------------------------------------------------------

/// HEARTBEAT (minimal.xml): who is there, what it is, its mode and state. Send one a second.
struct Heartbeat {
  static constexpr std::uint32_t msgid = 0;
  static constexpr std::uint8_t crc_extra = 50;
  static constexpr const char* name = "HEARTBEAT";
  std::uint8_t type = 0;             // MAV_TYPE
  std::uint8_t autopilot = 0;        // MAV_AUTOPILOT
  std::uint8_t base_mode = 0;        // MAV_MODE_FLAG bits
  std::uint32_t custom_mode = 0;     // the autopilot's mode number (SUB_MODE, ROVER_MODE)
  std::uint8_t system_status = 0;    // MAV_STATE
  std::uint8_t mavlink_version = 3;  // uint8_t_mavlink_version in the XML: the dialect's version
  static constexpr auto fields() {
    return std::tuple{field(&Heartbeat::custom_mode, "custom_mode"), field(&Heartbeat::type, "type"),
                      field(&Heartbeat::autopilot, "autopilot"), field(&Heartbeat::base_mode, "base_mode"),
                      field(&Heartbeat::system_status, "system_status"),
                      field(&Heartbeat::mavlink_version, "mavlink_version")};
  }
};

/// SYS_STATUS (common.xml): sensors present/enabled/healthy, load, battery, link errors.
struct SysStatus {
  static constexpr std::uint32_t msgid = 1;
  static constexpr std::uint8_t crc_extra = 124;
  static constexpr const char* name = "SYS_STATUS";
  std::uint32_t onboard_control_sensors_present = 0;
  std::uint32_t onboard_control_sensors_enabled = 0;
  std::uint32_t onboard_control_sensors_health = 0;
  std::uint16_t load = 0;               // d%
  std::uint16_t voltage_battery = 0;    // mV, UINT16_MAX unknown
  std::int16_t current_battery = 0;     // cA, -1 unknown
  std::int8_t battery_remaining = 0;    // %, -1 unknown
  std::uint16_t drop_rate_comm = 0;     // c%
  std::uint16_t errors_comm = 0;
  std::uint16_t errors_count1 = 0;
  std::uint16_t errors_count2 = 0;
  std::uint16_t errors_count3 = 0;
  std::uint16_t errors_count4 = 0;
  std::uint32_t onboard_control_sensors_present_extended = 0;  // extensions
  std::uint32_t onboard_control_sensors_enabled_extended = 0;
  std::uint32_t onboard_control_sensors_health_extended = 0;
  static constexpr auto fields() {
    using S = SysStatus;
    return std::tuple{field(&S::onboard_control_sensors_present, "onboard_control_sensors_present"),
                      field(&S::onboard_control_sensors_enabled, "onboard_control_sensors_enabled"),
                      field(&S::onboard_control_sensors_health, "onboard_control_sensors_health"),
                      field(&S::load, "load"),
                      field(&S::voltage_battery, "voltage_battery"),
                      field(&S::current_battery, "current_battery"),
                      field(&S::drop_rate_comm, "drop_rate_comm"),
                      field(&S::errors_comm, "errors_comm"),
                      field(&S::errors_count1, "errors_count1"),
                      field(&S::errors_count2, "errors_count2"),
                      field(&S::errors_count3, "errors_count3"),
                      field(&S::errors_count4, "errors_count4"),
                      field(&S::battery_remaining, "battery_remaining"),
                      extension(&S::onboard_control_sensors_present_extended, "onboard_control_sensors_present_extended"),
                      extension(&S::onboard_control_sensors_enabled_extended, "onboard_control_sensors_enabled_extended"),
                      extension(&S::onboard_control_sensors_health_extended, "onboard_control_sensors_health_extended")};
  }
};

/// SET_MODE (common.xml, deprecated for COMMAND_LONG MAV_CMD_DO_SET_MODE; ArduPilot takes both).
struct SetMode {
  static constexpr std::uint32_t msgid = 11;
  static constexpr std::uint8_t crc_extra = 89;
  static constexpr const char* name = "SET_MODE";
  std::uint8_t target_system = 0;
  std::uint8_t base_mode = 0;  // MAV_MODE; with MAV_MODE_FLAG_CUSTOM_MODE_ENABLED custom_mode counts
  std::uint32_t custom_mode = 0;
  static constexpr auto fields() {
    return std::tuple{field(&SetMode::custom_mode, "custom_mode"), field(&SetMode::target_system, "target_system"),
                      field(&SetMode::base_mode, "base_mode")};
  }
};

/// PARAM_VALUE (common.xml): one parameter's value, the answer to PARAM_SET or a read.
struct ParamValue {
  static constexpr std::uint32_t msgid = 22;
  static constexpr std::uint8_t crc_extra = 220;
  static constexpr const char* name = "PARAM_VALUE";
  std::array<char, 16> param_id{};  // NUL-terminated unless 16 long: text()
  float param_value = 0;
  std::uint8_t param_type = 0;  // MAV_PARAM_TYPE
  std::uint16_t param_count = 0;
  std::uint16_t param_index = 0;
  static constexpr auto fields() {
    return std::tuple{field(&ParamValue::param_value, "param_value"), field(&ParamValue::param_count, "param_count"),
                      field(&ParamValue::param_index, "param_index"), field(&ParamValue::param_id, "param_id"),
                      field(&ParamValue::param_type, "param_type")};
  }
};

/// PARAM_SET (common.xml): write a parameter; the vehicle answers with PARAM_VALUE.
struct ParamSet {
  static constexpr std::uint32_t msgid = 23;
  static constexpr std::uint8_t crc_extra = 168;
  static constexpr const char* name = "PARAM_SET";
  std::uint8_t target_system = 0;
  std::uint8_t target_component = 0;
  std::array<char, 16> param_id{};
  float param_value = 0;
  std::uint8_t param_type = 0;  // MAV_PARAM_TYPE
  static constexpr auto fields() {
    return std::tuple{field(&ParamSet::param_value, "param_value"), field(&ParamSet::target_system, "target_system"),
                      field(&ParamSet::target_component, "target_component"), field(&ParamSet::param_id, "param_id"),
                      field(&ParamSet::param_type, "param_type")};
  }
};

/// ATTITUDE (common.xml): roll, pitch, yaw (rad) and their rates (rad/s), aeronautical frame.
struct Attitude {
  static constexpr std::uint32_t msgid = 30;
  static constexpr std::uint8_t crc_extra = 39;
  static constexpr const char* name = "ATTITUDE";
  std::uint32_t time_boot_ms = 0;
  float roll = 0;
  float pitch = 0;
  float yaw = 0;
  float rollspeed = 0;
  float pitchspeed = 0;
  float yawspeed = 0;
  static constexpr auto fields() {
    using S = Attitude;
    return std::tuple{field(&S::time_boot_ms, "time_boot_ms"), field(&S::roll, "roll"),
                      field(&S::pitch, "pitch"),               field(&S::yaw, "yaw"),
                      field(&S::rollspeed, "rollspeed"),       field(&S::pitchspeed, "pitchspeed"),
                      field(&S::yawspeed, "yawspeed")};
  }
};

/// GLOBAL_POSITION_INT (common.xml): fused position (degE7, mm), velocity (cm/s), heading (cdeg).
struct GlobalPositionInt {
  static constexpr std::uint32_t msgid = 33;
  static constexpr std::uint8_t crc_extra = 104;
  static constexpr const char* name = "GLOBAL_POSITION_INT";
  std::uint32_t time_boot_ms = 0;
  std::int32_t lat = 0;           // degE7
  std::int32_t lon = 0;           // degE7
  std::int32_t alt = 0;           // mm, MSL
  std::int32_t relative_alt = 0;  // mm above home
  std::int16_t vx = 0;            // cm/s north
  std::int16_t vy = 0;            // cm/s east
  std::int16_t vz = 0;            // cm/s down
  std::uint16_t hdg = 0;          // cdeg, UINT16_MAX unknown
  static constexpr auto fields() {
    using S = GlobalPositionInt;
    return std::tuple{field(&S::time_boot_ms, "time_boot_ms"), field(&S::lat, "lat"), field(&S::lon, "lon"),
                      field(&S::alt, "alt"),
                      field(&S::relative_alt, "relative_alt"),
                      field(&S::vx, "vx"),
                      field(&S::vy, "vy"),
                      field(&S::vz, "vz"),
                      field(&S::hdg, "hdg")};
  }
};

/// MANUAL_CONTROL (common.xml): joystick axes in [-1000, 1000] and buttons; ArduSub's pilot
/// input (x forward, y right, z throttle with 500 neutral in ArduSub, r yaw).
struct ManualControl {
  static constexpr std::uint32_t msgid = 69;
  static constexpr std::uint8_t crc_extra = 243;
  static constexpr const char* name = "MANUAL_CONTROL";
  std::uint8_t target = 0;
  std::int16_t x = 0;
  std::int16_t y = 0;
  std::int16_t z = 0;
  std::int16_t r = 0;
  std::uint16_t buttons = 0;
  std::uint16_t buttons2 = 0;  // extensions
  std::uint8_t enabled_extensions = 0;
  std::int16_t s = 0;
  std::int16_t t = 0;
  std::int16_t aux1 = 0;
  std::int16_t aux2 = 0;
  std::int16_t aux3 = 0;
  std::int16_t aux4 = 0;
  std::int16_t aux5 = 0;
  std::int16_t aux6 = 0;
  static constexpr auto fields() {
    using S = ManualControl;
    return std::tuple{field(&S::x, "x"),
                      field(&S::y, "y"),
                      field(&S::z, "z"),
                      field(&S::r, "r"),
                      field(&S::buttons, "buttons"),
                      field(&S::target, "target"),
                      extension(&S::buttons2, "buttons2"),
                      extension(&S::enabled_extensions, "enabled_extensions"),
                      extension(&S::s, "s"),
                      extension(&S::t, "t"),
                      extension(&S::aux1, "aux1"),
                      extension(&S::aux2, "aux2"),
                      extension(&S::aux3, "aux3"),
                      extension(&S::aux4, "aux4"),
                      extension(&S::aux5, "aux5"),
                      extension(&S::aux6, "aux6")};
  }
};

/// VFR_HUD (common.xml): speeds (m/s), heading (deg), throttle (%), altitude (m), climb (m/s).
struct VfrHud {
  static constexpr std::uint32_t msgid = 74;
  static constexpr std::uint8_t crc_extra = 20;
  static constexpr const char* name = "VFR_HUD";
  float airspeed = 0;
  float groundspeed = 0;
  std::int16_t heading = 0;
  std::uint16_t throttle = 0;
  float alt = 0;
  float climb = 0;
  static constexpr auto fields() {
    using S = VfrHud;
    return std::tuple{field(&S::airspeed, "airspeed"), field(&S::groundspeed, "groundspeed"), field(&S::alt, "alt"),
                      field(&S::climb, "climb"), field(&S::heading, "heading"), field(&S::throttle, "throttle")};
  }
};

/// COMMAND_LONG (common.xml): a MAV_CMD with seven float parameters; answered by COMMAND_ACK.
struct CommandLong {
  static constexpr std::uint32_t msgid = 76;
  static constexpr std::uint8_t crc_extra = 152;
  static constexpr const char* name = "COMMAND_LONG";
  std::uint8_t target_system = 0;
  std::uint8_t target_component = 0;
  std::uint16_t command = 0;  // MAV_CMD
  std::uint8_t confirmation = 0;
  float param1 = 0;
  float param2 = 0;
  float param3 = 0;
  float param4 = 0;
  float param5 = 0;
  float param6 = 0;
  float param7 = 0;
  static constexpr auto fields() {
    using S = CommandLong;
    return std::tuple{field(&S::param1, "param1"),
                      field(&S::param2, "param2"),
                      field(&S::param3, "param3"),
                      field(&S::param4, "param4"),
                      field(&S::param5, "param5"),
                      field(&S::param6, "param6"),
                      field(&S::param7, "param7"),
                      field(&S::command, "command"),
                      field(&S::target_system, "target_system"),
                      field(&S::target_component, "target_component"),
                      field(&S::confirmation, "confirmation")};
  }
};

/// COMMAND_ACK (common.xml): the result (MAV_RESULT) of a command.
struct CommandAck {
  static constexpr std::uint32_t msgid = 77;
  static constexpr std::uint8_t crc_extra = 143;
  static constexpr const char* name = "COMMAND_ACK";
  std::uint16_t command = 0;
  std::uint8_t result = 0;    // MAV_RESULT
  std::uint8_t progress = 0;  // extensions
  std::int32_t result_param2 = 0;
  std::uint8_t target_system = 0;
  std::uint8_t target_component = 0;
  static constexpr auto fields() {
    using S = CommandAck;
    return std::tuple{field(&S::command, "command"), field(&S::result, "result"), extension(&S::progress, "progress"),
                      extension(&S::result_param2, "result_param2"), extension(&S::target_system, "target_system"),
                      extension(&S::target_component, "target_component")};
  }
};

/// SET_ATTITUDE_TARGET (common.xml): attitude quaternion (w, x, y, z), body rates, thrust.
struct SetAttitudeTarget {
  static constexpr std::uint32_t msgid = 82;
  static constexpr std::uint8_t crc_extra = 49;
  static constexpr const char* name = "SET_ATTITUDE_TARGET";
  std::uint32_t time_boot_ms = 0;
  std::uint8_t target_system = 0;
  std::uint8_t target_component = 0;
  std::uint8_t type_mask = 0;  // ATTITUDE_TARGET_TYPEMASK: dimensions to ignore
  std::array<float, 4> q{};
  float body_roll_rate = 0;
  float body_pitch_rate = 0;
  float body_yaw_rate = 0;
  float thrust = 0;
  std::array<float, 3> thrust_body{};  // extension
  static constexpr auto fields() {
    using S = SetAttitudeTarget;
    return std::tuple{field(&S::time_boot_ms, "time_boot_ms"),
                      field(&S::q, "q"),
                      field(&S::body_roll_rate, "body_roll_rate"),
                      field(&S::body_pitch_rate, "body_pitch_rate"),
                      field(&S::body_yaw_rate, "body_yaw_rate"),
                      field(&S::thrust, "thrust"),
                      field(&S::target_system, "target_system"),
                      field(&S::target_component, "target_component"),
                      field(&S::type_mask, "type_mask"),
                      extension(&S::thrust_body, "thrust_body")};
  }
};

/// SET_POSITION_TARGET_LOCAL_NED (common.xml): position/velocity/acceleration/yaw setpoints in
/// a local NED frame, with a mask of the ones to ignore.
struct SetPositionTargetLocalNed {
  static constexpr std::uint32_t msgid = 84;
  static constexpr std::uint8_t crc_extra = 143;
  static constexpr const char* name = "SET_POSITION_TARGET_LOCAL_NED";
  std::uint32_t time_boot_ms = 0;
  std::uint8_t target_system = 0;
  std::uint8_t target_component = 0;
  std::uint8_t coordinate_frame = 0;  // MAV_FRAME (1 LOCAL_NED, 7, 8 BODY_NED, 9)
  std::uint16_t type_mask = 0;        // POSITION_TARGET_TYPEMASK
  float x = 0, y = 0, z = 0;
  float vx = 0, vy = 0, vz = 0;
  float afx = 0, afy = 0, afz = 0;
  float yaw = 0;
  float yaw_rate = 0;
  static constexpr auto fields() {
    using S = SetPositionTargetLocalNed;
    return std::tuple{field(&S::time_boot_ms, "time_boot_ms"),
                      field(&S::x, "x"),
                      field(&S::y, "y"),
                      field(&S::z, "z"),
                      field(&S::vx, "vx"),
                      field(&S::vy, "vy"),
                      field(&S::vz, "vz"),
                      field(&S::afx, "afx"),
                      field(&S::afy, "afy"),
                      field(&S::afz, "afz"),
                      field(&S::yaw, "yaw"),
                      field(&S::yaw_rate, "yaw_rate"),
                      field(&S::type_mask, "type_mask"),
                      field(&S::target_system, "target_system"),
                      field(&S::target_component, "target_component"),
                      field(&S::coordinate_frame, "coordinate_frame")};
  }
};

/// SET_POSITION_TARGET_GLOBAL_INT (common.xml): the same in WGS84 (degE7) with altitude in m.
struct SetPositionTargetGlobalInt {
  static constexpr std::uint32_t msgid = 86;
  static constexpr std::uint8_t crc_extra = 5;
  static constexpr const char* name = "SET_POSITION_TARGET_GLOBAL_INT";
  std::uint32_t time_boot_ms = 0;
  std::uint8_t target_system = 0;
  std::uint8_t target_component = 0;
  std::uint8_t coordinate_frame = 0;  // MAV_FRAME (5 GLOBAL_INT, 6 GLOBAL_RELATIVE_ALT_INT, 11)
  std::uint16_t type_mask = 0;
  std::int32_t lat_int = 0;
  std::int32_t lon_int = 0;
  float alt = 0;
  float vx = 0, vy = 0, vz = 0;
  float afx = 0, afy = 0, afz = 0;
  float yaw = 0;
  float yaw_rate = 0;
  static constexpr auto fields() {
    using S = SetPositionTargetGlobalInt;
    return std::tuple{field(&S::time_boot_ms, "time_boot_ms"),
                      field(&S::lat_int, "lat_int"),
                      field(&S::lon_int, "lon_int"),
                      field(&S::alt, "alt"),
                      field(&S::vx, "vx"),
                      field(&S::vy, "vy"),
                      field(&S::vz, "vz"),
                      field(&S::afx, "afx"),
                      field(&S::afy, "afy"),
                      field(&S::afz, "afz"),
                      field(&S::yaw, "yaw"),
                      field(&S::yaw_rate, "yaw_rate"),
                      field(&S::type_mask, "type_mask"),
                      field(&S::target_system, "target_system"),
                      field(&S::target_component, "target_component"),
                      field(&S::coordinate_frame, "coordinate_frame")};
  }
};

/// STATUSTEXT (common.xml): a line of text (up to 50 chars, no NUL when 50) with a severity.
struct StatusText {
  static constexpr std::uint32_t msgid = 253;
  static constexpr std::uint8_t crc_extra = 83;
  static constexpr const char* name = "STATUSTEXT";
  std::uint8_t severity = 0;  // MAV_SEVERITY (0 emergency .. 7 debug)
  std::array<char, 50> text{};
  std::uint16_t id = 0;  // extension: the chunks of one long text share it (0: a single chunk)
  std::uint8_t chunk_seq = 0;
  static constexpr auto fields() {
    using S = StatusText;
    return std::tuple{field(&S::severity, "severity"), field(&S::text, "text"), extension(&S::id, "id"),
                      extension(&S::chunk_seq, "chunk_seq")};
  }
};

/// The messages above, sorted by id: the table for a Decoder.
std::span<const MessageInfo> known_messages();

// ---- values the messages carry --------------------------------------------------------------

inline constexpr std::uint8_t mav_type_gcs = 6;
inline constexpr std::uint8_t mav_type_ground_rover = 10;
inline constexpr std::uint8_t mav_type_surface_boat = 11;
inline constexpr std::uint8_t mav_type_submarine = 12;
inline constexpr std::uint8_t mav_autopilot_ardupilotmega = 3;
inline constexpr std::uint8_t mav_autopilot_invalid = 8;
inline constexpr std::uint8_t mav_mode_flag_custom_mode_enabled = 1;
inline constexpr std::uint8_t mav_mode_flag_safety_armed = 128;
inline constexpr std::uint8_t mav_state_active = 4;
inline constexpr std::uint16_t mav_cmd_do_set_mode = 176;
inline constexpr std::uint16_t mav_cmd_component_arm_disarm = 400;
inline constexpr float arm_disarm_force = 21196;  // MAV_CMD_COMPONENT_ARM_DISARM param2: skip the checks
inline constexpr std::uint8_t mav_result_accepted = 0;

/// A heartbeat as a ground station sends it (MAV_TYPE_GCS, no autopilot, active).
Heartbeat gcs_heartbeat();
/// COMMAND_LONG MAV_CMD_COMPONENT_ARM_DISARM (400): arm (param1 1) or disarm (0); force sets
/// param2 to 21196, which skips the pre-arm checks (and disarms in flight).
CommandLong arm_disarm(std::uint8_t target_system, std::uint8_t target_component, bool arm, bool force = false);
/// COMMAND_LONG MAV_CMD_DO_SET_MODE (176) with MAV_MODE_FLAG_CUSTOM_MODE_ENABLED and custom_mode.
CommandLong do_set_mode(std::uint8_t target_system, std::uint8_t target_component, std::uint32_t custom_mode);

// ---- flight modes by name --------------------------------------------------------------------

/// The ArduPilot vehicles whose modes we know (their custom_mode numbers differ).
enum class Vehicle : std::uint8_t { sub, rover };

/// One flight mode: its name in ardupilotmega.xml without the prefix (SUB_MODE_ALT_HOLD:
/// "ALT_HOLD") and its custom_mode number.
struct FlightMode {
  const char* name;
  std::uint32_t custom_mode;
};

/// Every mode of the vehicle (SUB_MODE or ROVER_MODE), in number order.
std::span<const FlightMode> flight_modes(Vehicle vehicle);
/// The custom_mode of a mode name: case does not matter, and ' ' or '-' stand for '_' ("alt
/// hold", "Smart-RTL"); nothing when the vehicle has no such mode.
std::optional<std::uint32_t> custom_mode(Vehicle vehicle, std::string_view name);
/// The name of a custom_mode number, or "" when the vehicle has no such mode.
std::string_view mode_name(Vehicle vehicle, std::uint32_t custom_mode);

}  // namespace tether::adapters::mavlink
