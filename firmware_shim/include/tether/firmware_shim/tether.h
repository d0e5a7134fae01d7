/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The firmware-facing API: open devices by name, read sensors, set actuators,
 * one call per simulation step. Firmware written against this header runs
 * unchanged on a board and in the loop.
 *
 *   tether_init("depth_hold", BUILD_ID);          HELLO -> DEVICES
 *   int depth = tether_open("auv.hull.depth");    look-up in the device table
 *   int prop  = tether_open("auv.hull.thruster_left");
 *   while (tether_step_wait() == TETHER_OK) {     READY / ACTUATE(k-1) -> SENSORS(k)
 *     uint8_t raw[TETHER_DEPTH_SIZE];
 *     if (tether_get(depth, raw, sizeof raw) == TETHER_OK) { ... }
 *     tether_set(prop, cmd, sizeof cmd);          sent as ACTUATE(k)
 *   }
 *
 * Rules: open every device before the first tether_step_wait(); tether_get
 * sees the readings of the current step until the next tether_step_wait();
 * a command set with tether_set is sent with every following ACTUATE until it
 * is set again. One session per program; no heap, no stdio, static buffers
 * sized by the options below (define them on the compiler command line).
 */
#ifndef TETHER_FIRMWARE_SHIM_TETHER_H
#define TETHER_FIRMWARE_SHIM_TETHER_H

#include <stddef.h>
#include <stdint.h>

#include "tether/firmware_shim/frame.h"
#include "tether/firmware_shim/payloads.h"
#include "tether/firmware_shim/protocol.h"

/* ---- compile-time options (they size tether.c's static buffers) ---------------- */

/// Largest payload the firmware can receive: the DEVICES table and every
/// SENSORS frame must fit. Announced to the runtime in HELLO.
#ifndef TETHER_RX_PAYLOAD_MAX
#define TETHER_RX_PAYLOAD_MAX 1024u
#endif

/// Largest payload the firmware sends (HELLO, READY, ACTUATE, LOG, ERROR; texts are cut to fit).
#ifndef TETHER_TX_PAYLOAD_MAX
#define TETHER_TX_PAYLOAD_MAX 256u
#endif

/// Most devices one firmware can open.
#ifndef TETHER_MAX_OPEN
#define TETHER_MAX_OPEN 16u
#endif

/// Bytes that hold the current command of every opened actuator.
#ifndef TETHER_COMMAND_BYTES
#define TETHER_COMMAND_BYTES 128u
#endif

/// Bytes asked of tether_port_read() at a time.
#ifndef TETHER_READ_CHUNK
#define TETHER_READ_CHUNK 32u
#endif

/// 1: tell a human why a session ended (tether_port_diag) and keep the runtime's
/// ERROR text; 0: no texts at all (string literals cost RAM on AVR).
#ifndef TETHER_DIAG
#define TETHER_DIAG 1
#endif

TETHER_STATIC_ASSERT(TETHER_RX_PAYLOAD_MAX >= 64u && TETHER_RX_PAYLOAD_MAX <= TETHER_PROTOCOL_MAX_PAYLOAD,
                     "TETHER_RX_PAYLOAD_MAX: 64 .. protocol maximum");
TETHER_STATIC_ASSERT(TETHER_TX_PAYLOAD_MAX >= TETHER_HELLO_FIXED_SIZE + TETHER_MAX_FIRMWARE_NAME_LEN &&
                         TETHER_TX_PAYLOAD_MAX <= TETHER_PROTOCOL_MAX_PAYLOAD,
                     "TETHER_TX_PAYLOAD_MAX must hold the longest HELLO");
TETHER_STATIC_ASSERT(TETHER_MAX_OPEN >= 1u && TETHER_MAX_OPEN <= TETHER_MAX_SLOTS, "TETHER_MAX_OPEN: 1..127");
TETHER_STATIC_ASSERT(TETHER_READY_FIXED_SIZE + 2u * TETHER_MAX_OPEN <= TETHER_TX_PAYLOAD_MAX,
                     "READY for TETHER_MAX_OPEN devices must fit TETHER_TX_PAYLOAD_MAX");
TETHER_STATIC_ASSERT(TETHER_READ_CHUNK >= 1u && TETHER_READ_CHUNK <= 255u, "TETHER_READ_CHUNK: 1..255");
TETHER_STATIC_ASSERT(TETHER_COMMAND_BYTES <= 0xFFFFu, "TETHER_COMMAND_BYTES fits a u16");

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status codes ------------------------------------------------------------------ */

#define TETHER_OK 0                      ///< done
#define TETHER_E_UNKNOWN_DEVICE (-1)     ///< no device of that name in the runtime's table
#define TETHER_E_INVALID_OPERATION (-2)  ///< get on an actuator, set on a sensor, open after the first step
#define TETHER_E_SIZE_MISMATCH (-3)      ///< buffer size differs from the device's payload size
#define TETHER_E_NOT_READY (-4)          ///< no session yet, or no step yet
#define TETHER_E_IO (-5)                 ///< the port failed (the call may be retried)
#define TETHER_E_INVALID_HANDLE (-6)     ///< not a handle returned by tether_open
#define TETHER_E_NO_DATA (-7)            ///< the device has no reading this step; buffer unchanged
#define TETHER_E_LIMIT (-8)              ///< a compile-time limit (TETHER_MAX_OPEN, buffer sizes) is reached
#define TETHER_E_ARGUMENT (-9)           ///< NULL pointer or bad name
#define TETHER_E_VERSION (-10)           ///< the runtime speaks another protocol version; session over
#define TETHER_E_REJECTED (-11)          ///< the runtime sent ERROR; session over
#define TETHER_E_PROTOCOL (-12)          ///< the runtime sent something undecodable; session over
#define TETHER_E_STOPPED (-13)           ///< the runtime ended the session (STOP)

/// What went wrong and how often; all counters wrap at 2^32.
typedef struct {
  tether_frame_counters_t rx;  ///< the receive decoder's counters
  uint32_t frames_sent;        ///< frames handed to the port
  uint32_t hello_sent;         ///< HELLO frames (first + re-sent on idle)
  uint32_t ready_sent;         ///< READY frames (first + re-sent on idle)
  uint32_t actuate_resent;     ///< ACTUATE re-sent for a repeated SENSORS
  uint32_t step_gaps;          ///< SENSORS whose step id was not the previous + 1
  uint32_t unexpected;         ///< valid frames the session did not expect (ignored)
  uint32_t io_errors;          ///< port read/write failures
} tether_counters_t;

/// Starts a session: forgets any previous one (even if this call fails), sends
/// HELLO (re-sent while the line is idle) and waits for the device table. Returns TETHER_OK, TETHER_E_VERSION or
/// TETHER_E_REJECTED (the runtime refused: see tether_error_text()), TETHER_E_PROTOCOL, TETHER_E_IO or
/// TETHER_E_ARGUMENT (name empty, longer than 32 or not printable ASCII).
int tether_init(const char* firmware_name, uint32_t build_id);

/// Opens a device by fully qualified name (`vehicle.part.device`). Returns a
/// handle >= 0 (the same one if opened twice) or TETHER_E_UNKNOWN_DEVICE,
/// TETHER_E_NOT_READY (no session), TETHER_E_INVALID_OPERATION (after the first
/// step), TETHER_E_SIZE_MISMATCH (table and shim disagree about the kind's
/// payload), TETHER_E_LIMIT, TETHER_E_ARGUMENT.
int tether_open(const char* name);

/// Copies the current step's reading of a sensor into `buf` (`size` must equal
/// the payload size, e.g. TETHER_DEPTH_SIZE). Returns TETHER_OK, TETHER_E_NO_DATA
/// (nothing this step; `buf` unchanged), TETHER_E_INVALID_HANDLE,
/// TETHER_E_INVALID_OPERATION (an actuator), TETHER_E_SIZE_MISMATCH, TETHER_E_NOT_READY.
int tether_get(int handle, void* buf, size_t size);

/// Sets an actuator's command (`size` = its payload size); it goes out with the
/// ACTUATE of the current step and every later one until set again. Returns
/// TETHER_OK, TETHER_E_INVALID_HANDLE, TETHER_E_INVALID_OPERATION (a sensor),
/// TETHER_E_SIZE_MISMATCH, TETHER_E_ARGUMENT, or the code that ended the session.
int tether_set(int handle, const void* buf, size_t size);

/// Simulation time of the current step in microseconds (0 before the first step).
uint64_t tether_time_us(void);

/// Step id of the current step (0 before the first step).
uint32_t tether_step_id(void);

/// Sends ACTUATE for the current step now, if not yet sent, so the runtime need
/// not wait for the next tether_step_wait(). Commands set afterwards go with
/// the next step. Returns TETHER_OK, TETHER_E_NOT_READY, TETHER_E_IO, or the code
/// that ended the session.
int tether_step_done(void);

/// Ends the current step and waits for the next: the first call sends READY
/// (the opened devices); later calls send ACTUATE for the current step (unless
/// tether_step_done() did). Blocks until SENSORS of a new step arrive, then
/// returns TETHER_OK. Returns TETHER_E_STOPPED when the runtime ends the
/// session, TETHER_E_REJECTED / TETHER_E_VERSION / TETHER_E_PROTOCOL when it
/// fails, TETHER_E_IO when the port fails (call again to retry), TETHER_E_NOT_READY
/// before tether_init().
int tether_step_wait(void);

/// Sends a line of text to the runtime (LOG, level info), cut to fit
/// TETHER_MAX_LOG_TEXT and the send buffer. Returns TETHER_OK or TETHER_E_IO.
int tether_log(const char* text);

/// As tether_log(), with level TETHER_LOG_INFO, TETHER_LOG_WARNING or TETHER_LOG_ERROR.
int tether_log_level(uint8_t level, const char* text);

/// Text of the last ERROR the runtime sent (NUL-terminated; "" if none or TETHER_DIAG is 0).
const char* tether_error_text(void);

/// Code of the last ERROR the runtime sent (TETHER_ERROR_*; 0 if none).
uint8_t tether_error_code(void);

/// Short English text for a status code ("unknown device", ...).
const char* tether_status_text(int status);

/// The session's counters (valid until the next tether_init()).
const tether_counters_t* tether_counters(void);

#ifdef __cplusplus
}
#endif

#endif /* TETHER_FIRMWARE_SHIM_TETHER_H */
