/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Device kinds and the fixed little-endian payload of each: what a SENSORS
 * reading or an ACTUATE command of that kind carries. Offsets and sizes are
 * #defines; the inline helpers read and write fields byte by byte, so no
 * unaligned access and no struct packing is involved. docs/devices.md,
 * "Payload layouts", describes the same tables with units.
 *
 * Conventions: SI units; angles in radians; the body frame is x forward,
 * y right (starboard), z down; depth and altitude are positive numbers of
 * metres below the surface / above the bottom. Floats are IEEE-754 binary32
 * (there is no 64-bit float on the wire: AVR has none).
 */
#ifndef TETHER_FIRMWARE_SHIM_PAYLOADS_H
#define TETHER_FIRMWARE_SHIM_PAYLOADS_H

#include <stdint.h>
#include <string.h>

#include "tether/firmware_shim/protocol.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Device kinds (DEVICES entry byte `kind`). Sensors 1..63, actuators 64..127.
typedef enum {
  TETHER_KIND_NONE = 0,
  TETHER_KIND_RANGE = 1,         ///< PSD / infrared range finder, one beam
  TETHER_KIND_SONAR = 2,         ///< sonar beam: nearest echo
  TETHER_KIND_ALTIMETER = 3,     ///< height above the bottom
  TETHER_KIND_DEPTH = 4,         ///< depth / pressure sensor
  TETHER_KIND_GYRO = 5,          ///< angular rate, body frame
  TETHER_KIND_ACCEL = 6,         ///< specific force, body frame
  TETHER_KIND_IMU = 7,           ///< gyro + accelerometer in one reading
  TETHER_KIND_INCLINOMETER = 8,  ///< roll and pitch
  TETHER_KIND_COMPASS = 9,       ///< heading
  TETHER_KIND_DVL = 10,          ///< Doppler velocity log / velocimeter
  TETHER_KIND_GPS = 11,          ///< position fix + NMEA GGA sentence (surface only)
  TETHER_KIND_CONTACT = 12,      ///< bump / contact switch with force
  TETHER_KIND_CLOCK = 13,        ///< simulation clock
  TETHER_KIND_TENSION = 14,      ///< load cell on a joint or cable end: force magnitude and direction
  TETHER_KIND_ENCODER = 15,      ///< a hinge's angle or a slider's travel, and its rate
  TETHER_KIND_THRUSTER = 64,     ///< thruster / propeller command
  TETHER_KIND_DC_MOTOR = 65,     ///< DC motor armature voltage
  TETHER_KIND_FIN = 66,          ///< fin / rudder angle
  TETHER_KIND_SERVO = 67,        ///< servo target angle
  TETHER_KIND_WHEEL_DRIVE = 68   ///< differential wheel drive commands
} tether_device_kind_t;

/* ---- sensors ---------------------------------------------------------------- */

/// RANGE: distance_m f32 @0 (max range when no hit), flags u8 @4.
#define TETHER_RANGE_SIZE 5u
#define TETHER_RANGE_OFFSET_DISTANCE_M 0u
#define TETHER_RANGE_OFFSET_FLAGS 4u
#define TETHER_RANGE_FLAG_HIT 0x01u

/// SONAR: distance_m f32 @0 (nearest echo; max range when none), flags u8 @4.
#define TETHER_SONAR_SIZE 5u
#define TETHER_SONAR_OFFSET_DISTANCE_M 0u
#define TETHER_SONAR_OFFSET_FLAGS 4u
#define TETHER_SONAR_FLAG_ECHO 0x01u

/// ALTIMETER: altitude_m f32 @0, flags u8 @4.
#define TETHER_ALTIMETER_SIZE 5u
#define TETHER_ALTIMETER_OFFSET_ALTITUDE_M 0u
#define TETHER_ALTIMETER_OFFSET_FLAGS 4u
#define TETHER_ALTIMETER_FLAG_VALID 0x01u

/// DEPTH: depth_m f32 @0, pressure_pa f32 @4 (absolute, atmosphere included).
#define TETHER_DEPTH_SIZE 8u
#define TETHER_DEPTH_OFFSET_DEPTH_M 0u
#define TETHER_DEPTH_OFFSET_PRESSURE_PA 4u

/// GYRO: wx, wy, wz f32 rad/s @0, 4, 8.
#define TETHER_GYRO_SIZE 12u
#define TETHER_GYRO_OFFSET_WX 0u
#define TETHER_GYRO_OFFSET_WY 4u
#define TETHER_GYRO_OFFSET_WZ 8u

/// ACCEL: ax, ay, az f32 m/s^2 @0, 4, 8; specific force (level, at rest: 0, 0, -9.81).
#define TETHER_ACCEL_SIZE 12u
#define TETHER_ACCEL_OFFSET_AX 0u
#define TETHER_ACCEL_OFFSET_AY 4u
#define TETHER_ACCEL_OFFSET_AZ 8u

/// IMU: GYRO layout @0, ACCEL layout @12.
#define TETHER_IMU_SIZE 24u
#define TETHER_IMU_OFFSET_GYRO 0u
#define TETHER_IMU_OFFSET_ACCEL 12u

/// INCLINOMETER: roll f32 rad @0 (right side down +), pitch f32 rad @4 (nose up +).
#define TETHER_INCLINOMETER_SIZE 8u
#define TETHER_INCLINOMETER_OFFSET_ROLL_RAD 0u
#define TETHER_INCLINOMETER_OFFSET_PITCH_RAD 4u

/// COMPASS: heading f32 rad @0, [0, 2*pi), 0 = north, clockwise seen from above.
#define TETHER_COMPASS_SIZE 4u
#define TETHER_COMPASS_OFFSET_HEADING_RAD 0u

/// DVL: vx, vy, vz f32 m/s @0, 4, 8 (body frame), altitude_m f32 @12, flags u8 @16.
#define TETHER_DVL_SIZE 17u
#define TETHER_DVL_OFFSET_VX 0u
#define TETHER_DVL_OFFSET_VY 4u
#define TETHER_DVL_OFFSET_VZ 8u
#define TETHER_DVL_OFFSET_ALTITUDE_M 12u
#define TETHER_DVL_OFFSET_FLAGS 16u
#define TETHER_DVL_FLAG_VELOCITY_VALID 0x01u
#define TETHER_DVL_FLAG_ALTITUDE_VALID 0x02u

/// GPS: flags u8 @0, lat i32 @1 and lon i32 @5 in 1e-7 degree, nmea_len u8 @9,
/// nmea @10: a GGA sentence from '$' to the checksum, no CR/LF, zero-padded.
#define TETHER_GPS_NMEA_CAPACITY 82u
#define TETHER_GPS_SIZE 92u
#define TETHER_GPS_OFFSET_FLAGS 0u
#define TETHER_GPS_OFFSET_LAT_E7 1u
#define TETHER_GPS_OFFSET_LON_E7 5u
#define TETHER_GPS_OFFSET_NMEA_LEN 9u
#define TETHER_GPS_OFFSET_NMEA 10u
#define TETHER_GPS_FLAG_FIX 0x01u

/// CONTACT: flags u8 @0, force_n f32 @1 (magnitude of the contact force).
#define TETHER_CONTACT_SIZE 5u
#define TETHER_CONTACT_OFFSET_FLAGS 0u
#define TETHER_CONTACT_OFFSET_FORCE_N 1u
#define TETHER_CONTACT_FLAG_CONTACT 0x01u

/// CLOCK: time_us u64 @0, simulation time.
#define TETHER_CLOCK_SIZE 8u
#define TETHER_CLOCK_OFFSET_TIME_US 0u

/// TENSION: tension_n f32 @0 (magnitude of the force the joint or cable pulls the body with),
/// fx, fy, fz f32 N @4, 8, 12 (that force in the sensor frame: x forward, y right, z down).
#define TETHER_TENSION_SIZE 16u
#define TETHER_TENSION_OFFSET_TENSION_N 0u
#define TETHER_TENSION_OFFSET_FX 4u
#define TETHER_TENSION_OFFSET_FY 8u
#define TETHER_TENSION_OFFSET_FZ 12u

/// ENCODER: position f32 @0 (a hinge's angle in (-pi, pi] rad, or a slider's travel in m, 0
/// where the joint was built), rate f32 @4 (rad/s or m/s).
#define TETHER_ENCODER_SIZE 8u
#define TETHER_ENCODER_OFFSET_POSITION 0u
#define TETHER_ENCODER_OFFSET_RATE 4u

/* ---- actuators ---------------------------------------------------------------- */

/// THRUSTER: command f32 @0 in [-1, 1] (fraction of full thrust; + pushes forward
/// along the thruster's axis). Values outside are clamped by the runtime.
#define TETHER_THRUSTER_SIZE 4u
#define TETHER_THRUSTER_OFFSET_COMMAND 0u

/// DC_MOTOR: voltage_v f32 @0 (armature voltage; clamped to the supply).
#define TETHER_DC_MOTOR_SIZE 4u
#define TETHER_DC_MOTOR_OFFSET_VOLTAGE_V 0u

/// FIN: angle f32 rad @0 (commanded deflection; clamped to the fin's range).
#define TETHER_FIN_SIZE 4u
#define TETHER_FIN_OFFSET_ANGLE_RAD 0u

/// SERVO: target angle f32 rad @0.
#define TETHER_SERVO_SIZE 4u
#define TETHER_SERVO_OFFSET_ANGLE_RAD 0u

/// WHEEL_DRIVE: left f32 @0, right f32 @4, commands in [-1, 1].
#define TETHER_WHEEL_DRIVE_SIZE 8u
#define TETHER_WHEEL_DRIVE_OFFSET_LEFT 0u
#define TETHER_WHEEL_DRIVE_OFFSET_RIGHT 4u

/// Largest payload of any kind above.
#define TETHER_KIND_MAX_SIZE TETHER_GPS_SIZE

TETHER_STATIC_ASSERT(sizeof(float) == 4, "float must be IEEE-754 binary32");
TETHER_STATIC_ASSERT(TETHER_RANGE_OFFSET_FLAGS + 1u == TETHER_RANGE_SIZE, "range layout");
TETHER_STATIC_ASSERT(TETHER_SONAR_OFFSET_FLAGS + 1u == TETHER_SONAR_SIZE, "sonar layout");
TETHER_STATIC_ASSERT(TETHER_ALTIMETER_OFFSET_FLAGS + 1u == TETHER_ALTIMETER_SIZE, "altimeter layout");
TETHER_STATIC_ASSERT(TETHER_DEPTH_OFFSET_PRESSURE_PA + 4u == TETHER_DEPTH_SIZE, "depth layout");
TETHER_STATIC_ASSERT(TETHER_GYRO_OFFSET_WZ + 4u == TETHER_GYRO_SIZE, "gyro layout");
TETHER_STATIC_ASSERT(TETHER_ACCEL_OFFSET_AZ + 4u == TETHER_ACCEL_SIZE, "accel layout");
TETHER_STATIC_ASSERT(TETHER_IMU_OFFSET_ACCEL + TETHER_ACCEL_SIZE == TETHER_IMU_SIZE, "imu layout");
TETHER_STATIC_ASSERT(TETHER_INCLINOMETER_OFFSET_PITCH_RAD + 4u == TETHER_INCLINOMETER_SIZE, "inclinometer layout");
TETHER_STATIC_ASSERT(TETHER_DVL_OFFSET_FLAGS + 1u == TETHER_DVL_SIZE, "dvl layout");
TETHER_STATIC_ASSERT(TETHER_GPS_OFFSET_NMEA + TETHER_GPS_NMEA_CAPACITY == TETHER_GPS_SIZE, "gps layout");
TETHER_STATIC_ASSERT(TETHER_CONTACT_OFFSET_FORCE_N + 4u == TETHER_CONTACT_SIZE, "contact layout");
TETHER_STATIC_ASSERT(TETHER_TENSION_OFFSET_FZ + 4u == TETHER_TENSION_SIZE, "tension layout");
TETHER_STATIC_ASSERT(TETHER_ENCODER_OFFSET_RATE + 4u == TETHER_ENCODER_SIZE, "encoder layout");
TETHER_STATIC_ASSERT(TETHER_WHEEL_DRIVE_OFFSET_RIGHT + 4u == TETHER_WHEEL_DRIVE_SIZE, "wheel drive layout");
TETHER_STATIC_ASSERT(TETHER_KIND_MAX_SIZE <= TETHER_MAX_DEVICE_PAYLOAD, "payloads fit a device entry");

/* ---- little-endian field access ------------------------------------------------ */

/* float <-> bits without aliasing tricks; the builtin stays inline under
 * -ffreestanding, where a plain memcpy would become a library call */
#if defined(__GNUC__) || defined(__clang__)
#define TETHER_MEMCPY(dst, src, n) __builtin_memcpy(dst, src, n)
#else
#define TETHER_MEMCPY(dst, src, n) memcpy(dst, src, n)
#endif

/// Writes a u16, low byte first.
static inline void tether_put_u16le(uint8_t* p, uint16_t v) {
  p[0] = TETHER_CAST(uint8_t, v & 0xFFu);
  p[1] = TETHER_CAST(uint8_t, v >> 8);
}

/// Writes a u32, low byte first.
static inline void tether_put_u32le(uint8_t* p, uint32_t v) {
  p[0] = TETHER_CAST(uint8_t, v & 0xFFu);
  p[1] = TETHER_CAST(uint8_t, (v >> 8) & 0xFFu);
  p[2] = TETHER_CAST(uint8_t, (v >> 16) & 0xFFu);
  p[3] = TETHER_CAST(uint8_t, (v >> 24) & 0xFFu);
}

/// Writes a u64, low byte first.
static inline void tether_put_u64le(uint8_t* p, uint64_t v) {
  tether_put_u32le(p, TETHER_CAST(uint32_t, v & 0xFFFFFFFFu));
  tether_put_u32le(p + 4, TETHER_CAST(uint32_t, v >> 32));
}

/// Writes an i32 (two's complement), low byte first.
static inline void tether_put_i32le(uint8_t* p, int32_t v) { tether_put_u32le(p, TETHER_CAST(uint32_t, v)); }

/// Reads a u16 stored low byte first.
static inline uint16_t tether_get_u16le(const uint8_t* p) { return TETHER_CAST(uint16_t, p[0] | (p[1] << 8)); }

/// Reads a u32 stored low byte first.
static inline uint32_t tether_get_u32le(const uint8_t* p) {
  return TETHER_CAST(uint32_t, p[0]) | (TETHER_CAST(uint32_t, p[1]) << 8) | (TETHER_CAST(uint32_t, p[2]) << 16) |
         (TETHER_CAST(uint32_t, p[3]) << 24);
}

/// Reads a u64 stored low byte first.
static inline uint64_t tether_get_u64le(const uint8_t* p) {
  return TETHER_CAST(uint64_t, tether_get_u32le(p)) | (TETHER_CAST(uint64_t, tether_get_u32le(p + 4)) << 32);
}

/// Reads an i32 (two's complement) stored low byte first.
static inline int32_t tether_get_i32le(const uint8_t* p) {
  uint32_t u = tether_get_u32le(p);
  /* portable two's complement without implementation-defined conversion */
  if (u <= 0x7FFFFFFFu) {
    return TETHER_CAST(int32_t, u);
  }
  return -TETHER_CAST(int32_t, 0xFFFFFFFFu - u) - 1;
}

/// The bit pattern of a float.
static inline uint32_t tether_f32_bits(float v) {
  uint32_t u;
  TETHER_MEMCPY(&u, &v, sizeof u);
  return u;
}

/// The float with this bit pattern.
static inline float tether_f32_from_bits(uint32_t u) {
  float v;
  TETHER_MEMCPY(&v, &u, sizeof v);
  return v;
}

/// Writes a binary32 float, low byte first.
static inline void tether_put_f32le(uint8_t* p, float v) { tether_put_u32le(p, tether_f32_bits(v)); }

/// Reads a binary32 float stored low byte first.
static inline float tether_get_f32le(const uint8_t* p) { return tether_f32_from_bits(tether_get_u32le(p)); }

/* ---- kinds ---------------------------------------------------------------------- */

/// Payload bytes of a kind; 0 for an unknown kind.
static inline uint16_t tether_kind_payload_size(uint8_t kind) {
  switch (kind) {
    case TETHER_KIND_RANGE: return TETHER_RANGE_SIZE;
    case TETHER_KIND_SONAR: return TETHER_SONAR_SIZE;
    case TETHER_KIND_ALTIMETER: return TETHER_ALTIMETER_SIZE;
    case TETHER_KIND_DEPTH: return TETHER_DEPTH_SIZE;
    case TETHER_KIND_GYRO: return TETHER_GYRO_SIZE;
    case TETHER_KIND_ACCEL: return TETHER_ACCEL_SIZE;
    case TETHER_KIND_IMU: return TETHER_IMU_SIZE;
    case TETHER_KIND_INCLINOMETER: return TETHER_INCLINOMETER_SIZE;
    case TETHER_KIND_COMPASS: return TETHER_COMPASS_SIZE;
    case TETHER_KIND_DVL: return TETHER_DVL_SIZE;
    case TETHER_KIND_GPS: return TETHER_GPS_SIZE;
    case TETHER_KIND_CONTACT: return TETHER_CONTACT_SIZE;
    case TETHER_KIND_CLOCK: return TETHER_CLOCK_SIZE;
    case TETHER_KIND_TENSION: return TETHER_TENSION_SIZE;
    case TETHER_KIND_ENCODER: return TETHER_ENCODER_SIZE;
    case TETHER_KIND_THRUSTER: return TETHER_THRUSTER_SIZE;
    case TETHER_KIND_DC_MOTOR: return TETHER_DC_MOTOR_SIZE;
    case TETHER_KIND_FIN: return TETHER_FIN_SIZE;
    case TETHER_KIND_SERVO: return TETHER_SERVO_SIZE;
    case TETHER_KIND_WHEEL_DRIVE: return TETHER_WHEEL_DRIVE_SIZE;
    default: return 0u;
  }
}

/// TETHER_DIRECTION_SENSOR or TETHER_DIRECTION_ACTUATOR; 0 for an unknown kind.
static inline uint8_t tether_kind_direction(uint8_t kind) {
  if (tether_kind_payload_size(kind) == 0u) {
    return 0u;
  }
  return TETHER_CAST(uint8_t, kind < 64u ? TETHER_DIRECTION_SENSOR : TETHER_DIRECTION_ACTUATOR);
}

/// Lower-case name of a kind ("range", "thruster", ...); "unknown" otherwise.
static inline const char* tether_kind_name(uint8_t kind) {
  switch (kind) {
    case TETHER_KIND_RANGE: return "range";
    case TETHER_KIND_SONAR: return "sonar";
    case TETHER_KIND_ALTIMETER: return "altimeter";
    case TETHER_KIND_DEPTH: return "depth";
    case TETHER_KIND_GYRO: return "gyro";
    case TETHER_KIND_ACCEL: return "accel";
    case TETHER_KIND_IMU: return "imu";
    case TETHER_KIND_INCLINOMETER: return "inclinometer";
    case TETHER_KIND_COMPASS: return "compass";
    case TETHER_KIND_DVL: return "dvl";
    case TETHER_KIND_GPS: return "gps";
    case TETHER_KIND_CONTACT: return "contact";
    case TETHER_KIND_CLOCK: return "clock";
    case TETHER_KIND_TENSION: return "tension";
    case TETHER_KIND_ENCODER: return "encoder";
    case TETHER_KIND_THRUSTER: return "thruster";
    case TETHER_KIND_DC_MOTOR: return "dc_motor";
    case TETHER_KIND_FIN: return "fin";
    case TETHER_KIND_SERVO: return "servo";
    case TETHER_KIND_WHEEL_DRIVE: return "wheel_drive";
    default: return "unknown";
  }
}

#ifdef __cplusplus
}
#endif

#endif /* TETHER_FIRMWARE_SHIM_PAYLOADS_H */
