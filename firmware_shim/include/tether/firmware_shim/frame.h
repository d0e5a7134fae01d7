/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Framing: CRC-16/CCITT-FALSE, COBS byte stuffing, frame encoder and a
 * byte-at-a-time streaming decoder. No heap: every buffer belongs to the caller.
 */
#ifndef TETHER_FIRMWARE_SHIM_FRAME_H
#define TETHER_FIRMWARE_SHIM_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tether/firmware_shim/protocol.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- CRC ------------------------------------------------------------------ */

/// Feeds `len` bytes into a running CRC-16/CCITT-FALSE; start with TETHER_CRC16_INIT.
uint16_t tether_crc16_update(uint16_t crc, const uint8_t* data, size_t len);

/// CRC-16/CCITT-FALSE of `len` bytes; "123456789" gives TETHER_CRC16_CHECK.
uint16_t tether_crc16(const uint8_t* data, size_t len);

/* ---- COBS ----------------------------------------------------------------- */

/// Worst-case COBS output for `len` input bytes (without the delimiter).
#define TETHER_COBS_MAX_ENCODED(len) (TETHER_CAST(size_t, len) + TETHER_CAST(size_t, len) / 254u + 1u)

/// COBS-encodes `len` bytes into `out` (no delimiter appended).
/// Returns false, writing nothing beyond `cap`, if the output does not fit.
TETHER_NODISCARD bool tether_cobs_encode(const uint8_t* in, size_t len, uint8_t* out, size_t cap, size_t* out_len);

/// Decodes one COBS block sequence (no delimiter inside `in`) into `out`.
/// Returns false on a zero byte in the input, a truncated block or overflow.
TETHER_NODISCARD bool tether_cobs_decode(const uint8_t* in, size_t len, uint8_t* out, size_t cap, size_t* out_len);

/* ---- frames --------------------------------------------------------------- */

/// A frame header as numbers.
typedef struct {
  uint8_t version;       ///< TETHER_PROTOCOL_VERSION for frames this side builds
  uint8_t type;          ///< TETHER_MSG_*
  uint32_t step_id;      ///< step this frame belongs to (0 outside the step loop)
  uint16_t payload_len;  ///< bytes of payload
} tether_frame_header_t;

/// A decoded frame; `payload` points into the decoder's buffer and stays valid
/// until the next byte is pushed into that decoder.
typedef struct {
  tether_frame_header_t header;
  const uint8_t* payload;
} tether_frame_t;

/// Writes the 8 header bytes.
void tether_header_write(const tether_frame_header_t* header, uint8_t out[TETHER_HEADER_SIZE]);

/// Reads the 8 header bytes.
void tether_header_read(const uint8_t in[TETHER_HEADER_SIZE], tether_frame_header_t* header);

/// Encodes a complete wire frame, COBS(header | payload | crc) 0x00, into `out`.
/// `header->payload_len` bytes are read from `payload` (may be NULL when 0).
/// Returns false, with `*out_len` = 0, if `out` is too small or the payload
/// exceeds TETHER_PROTOCOL_MAX_PAYLOAD. Sizing: TETHER_WIRE_FRAME_MAX(len).
TETHER_NODISCARD bool tether_frame_encode(const tether_frame_header_t* header, const uint8_t* payload, uint8_t* out,
                                          size_t cap, size_t* out_len);

/// What the decoder dropped, and what it delivered. Counters wrap at 2^32.
typedef struct {
  uint32_t frames_ok;        ///< delivered frames
  uint32_t bytes;            ///< every byte pushed, delimiters included
  uint32_t garbage_bytes;    ///< bytes of dropped frames (their delimiters included)
  uint32_t cobs_errors;      ///< stuffing broken: a block ended early at a delimiter
  uint32_t oversize;         ///< frame longer than the decoder's buffer
  uint32_t runts;            ///< decoded frame shorter than header + CRC
  uint32_t crc_errors;       ///< CRC did not match
  uint32_t length_errors;    ///< payload_len field disagrees with the frame length
  uint32_t bad_version;      ///< version != TETHER_PROTOCOL_VERSION (HELLO/ERROR excepted)
  uint32_t unknown_type;     ///< type outside TETHER_MSG_FIRST..TETHER_MSG_LAST
  uint32_t foreign_version;  ///< HELLO/ERROR with another version, delivered anyway
} tether_frame_counters_t;

/// Streaming decoder state. The raw-frame buffer (header + payload + CRC)
/// belongs to the caller; size it TETHER_RAW_FRAME_SIZE(max payload).
typedef struct {
  uint8_t* buf;
  size_t cap;
  size_t len;          ///< raw bytes decoded so far in this frame
  size_t wire_len;     ///< wire bytes seen in this frame (for garbage_bytes)
  uint8_t remaining;   ///< data bytes left in the current COBS block
  bool block_is_full;  ///< current block's code was 0xFF (no implied zero)
  bool started;        ///< at least one code byte seen in this frame
  bool overflow;       ///< frame did not fit; drop at the delimiter
  tether_frame_counters_t counters;
} tether_frame_decoder_t;

/// Prepares a decoder over `buf` of `cap` bytes; counters start at zero.
void tether_frame_decoder_init(tether_frame_decoder_t* decoder, uint8_t* buf, size_t cap);

/// Forgets a partly received frame (counters are kept).
void tether_frame_decoder_reset(tether_frame_decoder_t* decoder);

/// Pushes one received byte. Returns true when that byte completed a valid
/// frame, then fills `*frame`. Invalid frames are dropped and counted; the
/// decoder resynchronizes at the next 0x00. Empty frames (0x00 0x00) are
/// ignored silently: a sender may emit 0x00 to end any garbage on the line.
TETHER_NODISCARD bool tether_frame_decoder_push(tether_frame_decoder_t* decoder, uint8_t byte, tether_frame_t* frame);

#ifdef __cplusplus
}
#endif

#endif /* TETHER_FIRMWARE_SHIM_FRAME_H */
