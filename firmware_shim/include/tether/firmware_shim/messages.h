/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Message payloads: encode into a caller buffer, decode from a frame's
 * payload. Decoders are strict: every length is checked and trailing bytes
 * are an error. Decoded names and texts point into the payload (not
 * NUL-terminated) unless a struct says otherwise. docs/protocol.md has the
 * byte layouts.
 */
#ifndef TETHER_FIRMWARE_SHIM_MESSAGES_H
#define TETHER_FIRMWARE_SHIM_MESSAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tether/firmware_shim/protocol.h"

#ifdef __cplusplus
extern "C" {
#endif

/// "HELLO", "DEVICES", ...; "UNKNOWN" for other values.
const char* tether_msg_name(uint8_t type);

/// Short description of a wire ERROR code ("version mismatch", ...).
const char* tether_error_code_name(uint8_t code);

/* ---- HELLO ------------------------------------------------------------------ */

/// HELLO: version u8, max_payload u16, build_id u32, name_len u8, name.
typedef struct {
  uint8_t protocol_version;                      ///< version the sender speaks
  uint16_t max_payload;                          ///< largest payload the sender can receive
  uint32_t build_id;                             ///< firmware build identifier (free-form)
  char name[TETHER_MAX_FIRMWARE_NAME_LEN + 1u];  ///< printable ASCII, NUL-terminated
} tether_hello_t;

/// Encodes HELLO. False if the name is empty, too long or not printable, or `out` is too small.
TETHER_NODISCARD bool tether_hello_encode(const tether_hello_t* msg, uint8_t* out, size_t cap, size_t* out_len);

/// Decodes a version-1 HELLO payload.
TETHER_NODISCARD bool tether_hello_decode(const uint8_t* payload, size_t len, tether_hello_t* msg);

/* ---- DEVICES ------------------------------------------------------------------ */

/// One device-table entry.
typedef struct {
  uint16_t index;         ///< runtime's device index; READY refers to it
  uint8_t kind;           ///< tether_device_kind_t (unknown kinds are passed through)
  uint8_t direction;      ///< TETHER_DIRECTION_SENSOR or TETHER_DIRECTION_ACTUATOR
  uint16_t payload_size;  ///< bytes of one reading / command, 1..TETHER_MAX_DEVICE_PAYLOAD
  uint8_t name_len;       ///< 1..TETHER_MAX_DEVICE_NAME_LEN
  const char* name;       ///< `vehicle.part.device`, not NUL-terminated
} tether_device_entry_t;

/// Builds a DEVICES payload entry by entry; the first error sticks.
typedef struct {
  uint8_t* out;
  size_t cap;
  size_t len;
  uint16_t count;
  bool ok;
} tether_devices_writer_t;

/// Starts a DEVICES payload in `out`.
void tether_devices_writer_init(tether_devices_writer_t* writer, uint8_t* out, size_t cap);

/// Appends an entry (checked like the decoder checks it, except index uniqueness).
void tether_devices_writer_add(tether_devices_writer_t* writer, const tether_device_entry_t* entry);

/// Writes the count; returns false if any add failed.
TETHER_NODISCARD bool tether_devices_writer_finish(tether_devices_writer_t* writer, size_t* out_len);

/// Walks a validated DEVICES payload.
typedef struct {
  const uint8_t* payload;
  size_t len;
  size_t pos;
  uint16_t left;
} tether_devices_reader_t;

/// Validates the whole payload (layout, names, directions, sizes, unique
/// indices) and positions the reader on the first entry; `*count` = entries.
TETHER_NODISCARD bool tether_devices_reader_init(tether_devices_reader_t* reader, const uint8_t* payload, size_t len,
                                                 uint16_t* count);

/// Next entry of a reader that passed init; false at the end.
bool tether_devices_reader_next(tether_devices_reader_t* reader, tether_device_entry_t* entry);

/* ---- READY -------------------------------------------------------------------- */

/// Encodes READY: count u8, then `count` device indices u16; slot i = indices[i].
TETHER_NODISCARD bool tether_ready_encode(const uint16_t* indices, uint8_t count, uint8_t* out, size_t cap,
                                          size_t* out_len);

/// Decodes READY into `indices` (room for `max`); rejects duplicates and count > TETHER_MAX_SLOTS.
TETHER_NODISCARD bool tether_ready_decode(const uint8_t* payload, size_t len, uint16_t* indices, uint8_t max,
                                          uint8_t* count);

/* ---- SENSORS and ACTUATE -------------------------------------------------------- */

/// What a slot holds, as both sides learnt from DEVICES + READY.
typedef struct {
  uint16_t size;      ///< payload bytes of the device in this slot
  uint8_t direction;  ///< TETHER_DIRECTION_*
} tether_slot_t;

/// One reading (SENSORS) or command (ACTUATE).
typedef struct {
  uint8_t slot;         ///< 0..TETHER_MAX_SLOTS-1
  bool no_data;         ///< SENSORS only: no reading this step, `data` is NULL
  const uint8_t* data;  ///< `size` bytes
  uint16_t size;
} tether_item_t;

/// Builds a SENSORS or ACTUATE payload; slots must ascend; the first error sticks.
typedef struct {
  uint8_t* out;
  size_t cap;
  size_t len;
  int16_t last_slot;
  bool allow_no_data;
  bool ok;
} tether_items_writer_t;

/// Starts SENSORS: sim_time_us u64, then readings.
void tether_sensors_writer_init(tether_items_writer_t* writer, uint8_t* out, size_t cap, uint64_t sim_time_us);

/// Starts ACTUATE: commands only.
void tether_actuate_writer_init(tether_items_writer_t* writer, uint8_t* out, size_t cap);

/// Appends slot byte + `size` data bytes.
void tether_items_writer_add(tether_items_writer_t* writer, uint8_t slot, const uint8_t* data, uint16_t size);

/// Appends a "no data this step" reading (SENSORS only).
void tether_items_writer_add_no_data(tether_items_writer_t* writer, uint8_t slot);

/// Returns false if any add failed; otherwise `*out_len` = payload bytes.
TETHER_NODISCARD bool tether_items_writer_finish(tether_items_writer_t* writer, size_t* out_len);

/// Walks SENSORS readings or ACTUATE commands against a slot layout.
typedef struct {
  const uint8_t* payload;
  size_t len;
  size_t pos;
  const tether_slot_t* slots;
  uint8_t slot_count;
  uint8_t direction;  ///< slots of the other direction are an error
  bool allow_no_data;
  int16_t last_slot;
} tether_items_reader_t;

/// Starts reading SENSORS; `*sim_time_us` gets the time. False if shorter than 8 bytes.
TETHER_NODISCARD bool tether_sensors_reader_init(tether_items_reader_t* reader, const uint8_t* payload, size_t len,
                                                 const tether_slot_t* slots, uint8_t slot_count, uint64_t* sim_time_us);

/// Starts reading ACTUATE.
TETHER_NODISCARD bool tether_actuate_reader_init(tether_items_reader_t* reader, const uint8_t* payload, size_t len,
                                                 const tether_slot_t* slots, uint8_t slot_count);

/// 1: `*item` filled; 0: end of payload; -1: malformed (unknown or wrong-direction
/// slot, slots not ascending, truncated data, NO_DATA where not allowed).
int tether_items_reader_next(tether_items_reader_t* reader, tether_item_t* item);

/// True if every item of the payload is well formed (walks a copy of the reader).
TETHER_NODISCARD bool tether_items_reader_validate(const tether_items_reader_t* reader);

/* ---- LOG ----------------------------------------------------------------------- */

/// Encodes LOG: level u8, text. False if level > TETHER_LOG_ERROR or text > TETHER_MAX_LOG_TEXT.
TETHER_NODISCARD bool tether_log_encode(uint8_t level, const char* text, size_t text_len, uint8_t* out, size_t cap,
                                        size_t* out_len);

/// Decodes LOG; `*text` points into the payload.
TETHER_NODISCARD bool tether_log_decode(const uint8_t* payload, size_t len, uint8_t* level, const char** text,
                                        size_t* text_len);

/* ---- ERROR ---------------------------------------------------------------------- */

/// An ERROR message.
typedef struct {
  uint8_t code;      ///< TETHER_ERROR_*
  uint16_t value;    ///< code-specific number (see protocol.h)
  const char* text;  ///< human-readable, not NUL-terminated
  size_t text_len;   ///< 0..TETHER_MAX_ERROR_TEXT
} tether_error_t;

/// Encodes ERROR: code u8, value u16, text.
TETHER_NODISCARD bool tether_error_encode(const tether_error_t* msg, uint8_t* out, size_t cap, size_t* out_len);

/// Decodes ERROR; `msg->text` points into the payload.
TETHER_NODISCARD bool tether_error_decode(const uint8_t* payload, size_t len, tether_error_t* msg);

#ifdef __cplusplus
}
#endif

#endif /* TETHER_FIRMWARE_SHIM_MESSAGES_H */
