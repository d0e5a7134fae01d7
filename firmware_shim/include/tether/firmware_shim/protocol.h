/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Tether wire protocol, version 1: the single source of truth for the C99
 * firmware shim and the C++ runtime. docs/protocol.md specifies it byte by byte.
 *
 * Every frame on the line:
 *
 *   COBS( header | payload | crc ) 0x00
 *
 *   header  8 bytes   version u8, type u8, step_id u32 LE, payload_len u16 LE
 *   payload 0..TETHER_PROTOCOL_MAX_PAYLOAD bytes, layout per message type
 *   crc     2 bytes   CRC-16/CCITT-FALSE over header and payload, LE
 *
 * All multi-byte fields are little-endian; floats are IEEE-754 binary32.
 * This header compiles as C99 and as C++20 and holds constants only.
 */
#ifndef TETHER_FIRMWARE_SHIM_PROTOCOL_H
#define TETHER_FIRMWARE_SHIM_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

/* compile-time checks that read the same in C99 (GCC/Clang), C11 and C++ */
#if defined(__cplusplus)
#define TETHER_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define TETHER_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#elif defined(__GNUC__)
#define TETHER_STATIC_ASSERT(cond, msg) __extension__ _Static_assert(cond, msg)
#else
#define TETHER_STATIC_ASSERT(cond, msg) typedef char tether_static_assert_##__LINE__[(cond) ? 1 : -1]
#endif

/* casts that read the same in C and in C++ built with -Wold-style-cast */
#if defined(__cplusplus)
#define TETHER_CAST(type, value) static_cast<type>(value)
#else
#define TETHER_CAST(type, value) ((type)(value))
#endif

/* results that must be looked at (nanopb style) */
#if defined(__GNUC__) || defined(__clang__)
#define TETHER_NODISCARD __attribute__((warn_unused_result))
#else
#define TETHER_NODISCARD
#endif

/* ---- version ------------------------------------------------------------ */

/// Protocol version carried in byte 0 of every header.
#define TETHER_PROTOCOL_VERSION 1u

/* ---- framing ------------------------------------------------------------- */

/// Frame delimiter on the wire; COBS guarantees it never occurs inside a frame.
#define TETHER_FRAME_DELIMITER 0x00u

/// Header bytes: version(0) type(1) step_id(2..5) payload_len(6..7).
#define TETHER_HEADER_SIZE 8u
#define TETHER_HEADER_OFFSET_VERSION 0u
#define TETHER_HEADER_OFFSET_TYPE 1u
#define TETHER_HEADER_OFFSET_STEP_ID 2u
#define TETHER_HEADER_OFFSET_PAYLOAD_LEN 6u

/// CRC-16/CCITT-FALSE: poly 0x1021, init 0xFFFF, not reflected, xorout 0x0000,
/// stored little-endian after the payload; check value over "123456789".
#define TETHER_CRC_SIZE 2u
#define TETHER_CRC16_POLY 0x1021u
#define TETHER_CRC16_INIT 0xFFFFu
#define TETHER_CRC16_CHECK 0x29B1u

/// Largest payload any frame may carry in version 1. Each side may accept less:
/// the firmware states its own receive limit in HELLO (max_payload).
#define TETHER_PROTOCOL_MAX_PAYLOAD 2048u

/// Header + payload + CRC before stuffing.
#define TETHER_RAW_FRAME_SIZE(payload_len) (TETHER_CAST(size_t, payload_len) + TETHER_HEADER_SIZE + TETHER_CRC_SIZE)

/// Worst-case bytes on the wire for a frame with this payload: COBS adds one
/// code byte per started block of 254 bytes, plus the 0x00 delimiter.
#define TETHER_WIRE_FRAME_MAX(payload_len) \
  (TETHER_RAW_FRAME_SIZE(payload_len) + TETHER_RAW_FRAME_SIZE(payload_len) / 254u + 2u)

/// Smallest valid raw frame (empty payload).
#define TETHER_RAW_FRAME_MIN TETHER_RAW_FRAME_SIZE(0u)

/* ---- message types (header byte 1) --------------------------------------- */

/// firmware -> runtime: who I am, which protocol I speak, how much I can receive.
#define TETHER_MSG_HELLO 1u
/// runtime -> firmware: the device table (answer to HELLO).
#define TETHER_MSG_DEVICES 2u
/// runtime -> firmware: one step's readings of the opened sensors.
#define TETHER_MSG_SENSORS 3u
/// firmware -> runtime: the commands for the step whose SENSORS it answers.
#define TETHER_MSG_ACTUATE 4u
/// firmware -> runtime: a line of text output.
#define TETHER_MSG_LOG 5u
/// either way: a session error (code + text); the session stops.
#define TETHER_MSG_ERROR 6u
/// firmware -> runtime: the devices it opened; their order defines the slots.
#define TETHER_MSG_READY 7u
/// runtime -> firmware: the session ended normally.
#define TETHER_MSG_STOP 8u

#define TETHER_MSG_FIRST TETHER_MSG_HELLO
#define TETHER_MSG_LAST TETHER_MSG_STOP

/* ---- message payload limits ---------------------------------------------- */

/// HELLO: version u8, max_payload u16, build_id u32, name_len u8, name.
#define TETHER_HELLO_FIXED_SIZE 8u
/// Longest firmware name in HELLO (bytes, no terminator).
#define TETHER_MAX_FIRMWARE_NAME_LEN 32u

/// DEVICES: count u16, then entries of index u16, kind u8, direction u8,
/// payload_size u16, name_len u8, name.
#define TETHER_DEVICES_FIXED_SIZE 2u
#define TETHER_DEVICE_ENTRY_FIXED_SIZE 7u
/// Longest fully qualified device name, `vehicle.part.device`.
#define TETHER_MAX_DEVICE_NAME_LEN 63u
/// Largest payload of a single device reading or command.
#define TETHER_MAX_DEVICE_PAYLOAD 255u

/// READY: count u8, then count device indices u16.
#define TETHER_READY_FIXED_SIZE 1u
/// Slots are 0..126: bit 7 of a slot byte is a flag.
#define TETHER_MAX_SLOTS 127u
#define TETHER_SLOT_MASK 0x7Fu
/// In SENSORS: the device has no reading this step; no data bytes follow.
#define TETHER_SLOT_FLAG_NO_DATA 0x80u

/// SENSORS: sim_time_us u64, then readings (slot byte [+ data]).
#define TETHER_SENSORS_FIXED_SIZE 8u
/// ACTUATE: commands (slot byte + data), nothing else.
#define TETHER_ACTUATE_FIXED_SIZE 0u

/// LOG: level u8, then text (no terminator).
#define TETHER_LOG_FIXED_SIZE 1u
#define TETHER_MAX_LOG_TEXT 200u
#define TETHER_LOG_INFO 0u
#define TETHER_LOG_WARNING 1u
#define TETHER_LOG_ERROR 2u

/// ERROR: code u8, value u16, then text (no terminator).
#define TETHER_ERROR_FIXED_SIZE 3u
#define TETHER_MAX_ERROR_TEXT 120u

/// STOP: empty payload.
#define TETHER_STOP_FIXED_SIZE 0u

/* ---- device directions (DEVICES entry) ----------------------------------- */

#define TETHER_DIRECTION_SENSOR 1u
#define TETHER_DIRECTION_ACTUATOR 2u

/* ---- ERROR codes (on the wire; not the tether_* API return codes) -------- */

/// Peer speaks another protocol version; value = the sender's version.
#define TETHER_ERROR_VERSION_MISMATCH 1u
/// A message would exceed the receiver's limit; value = the limit in bytes.
#define TETHER_ERROR_TOO_LARGE 2u
/// READY named a device index not in the table; value = that index.
#define TETHER_ERROR_UNKNOWN_INDEX 3u
/// A message arrived that the session state does not allow; value = its type.
#define TETHER_ERROR_UNEXPECTED 4u
/// A payload could not be decoded; value = the message type.
#define TETHER_ERROR_MALFORMED 5u
/// Device table and shim disagree (e.g. payload size of a kind); value = index.
#define TETHER_ERROR_DEVICE_MISMATCH 6u
/// The firmware gave up (its own reason in the text).
#define TETHER_ERROR_FIRMWARE 7u

/* ---- consistency --------------------------------------------------------- */

TETHER_STATIC_ASSERT(TETHER_HEADER_SIZE == 8u, "header is 8 bytes");
TETHER_STATIC_ASSERT(TETHER_HEADER_OFFSET_PAYLOAD_LEN + 2u == TETHER_HEADER_SIZE, "header fields fill the header");
TETHER_STATIC_ASSERT(TETHER_PROTOCOL_MAX_PAYLOAD <= 0xFFFFu, "payload_len is a u16");
TETHER_STATIC_ASSERT(TETHER_RAW_FRAME_SIZE(TETHER_PROTOCOL_MAX_PAYLOAD) * 8u <= 32751u,
                     "CRC-16/CCITT keeps Hamming distance 4 up to 32751 bits");
TETHER_STATIC_ASSERT(TETHER_HELLO_FIXED_SIZE + TETHER_MAX_FIRMWARE_NAME_LEN <= 255u, "HELLO fits a short frame");
TETHER_STATIC_ASSERT(TETHER_MAX_DEVICE_NAME_LEN <= 255u, "device name length is a u8");
TETHER_STATIC_ASSERT(TETHER_MAX_SLOTS <= TETHER_SLOT_MASK + 1u, "slot numbers fit below the flag bit");
TETHER_STATIC_ASSERT(TETHER_LOG_FIXED_SIZE + TETHER_MAX_LOG_TEXT <= TETHER_PROTOCOL_MAX_PAYLOAD, "LOG fits");
TETHER_STATIC_ASSERT(TETHER_ERROR_FIXED_SIZE + TETHER_MAX_ERROR_TEXT <= TETHER_PROTOCOL_MAX_PAYLOAD, "ERROR fits");
TETHER_STATIC_ASSERT(TETHER_MSG_LAST < 0x100u, "type is a u8");

#endif /* TETHER_FIRMWARE_SHIM_PROTOCOL_H */
