/* SPDX-License-Identifier: Apache-2.0 */
#include "tether/firmware_shim/frame.h"

/* ---- CRC-16/CCITT-FALSE ---------------------------------------------------- */

uint16_t tether_crc16_update(uint16_t crc, const uint8_t* data, size_t len) {
  size_t i;
  for (i = 0; i < len; ++i) {
    unsigned bit;
    crc = (uint16_t)(crc ^ (uint16_t)((uint16_t)data[i] << 8));
    /* msb-first shift register, one bit per round */
    for (bit = 0; bit < 8u; ++bit) {
      if ((crc & 0x8000u) != 0u) {
        crc = (uint16_t)((uint16_t)(crc << 1) ^ (uint16_t)TETHER_CRC16_POLY);
      } else {
        crc = (uint16_t)(crc << 1);
      }
    }
  }
  return crc;
}

uint16_t tether_crc16(const uint8_t* data, size_t len) {
  return tether_crc16_update((uint16_t)TETHER_CRC16_INIT, data, len);
}

/* ---- COBS writer --------------------------------------------------------- */

/* Streams bytes into COBS. A block is opened lazily, so input that ends right
 * after a full 254-byte run gets no empty trailing block (canonical COBS). */
typedef struct {
  uint8_t* out;
  size_t cap;
  size_t pos;      /* next free output byte */
  size_t code_pos; /* where the open block's code byte goes */
  uint8_t code;    /* open block's code so far (data bytes + 1); 0 = none open */
  bool ok;
} cobs_writer_t;

static void cobs_open_block(cobs_writer_t* w) {
  if (w->pos >= w->cap) {
    w->ok = false;
    return;
  }
  w->code_pos = w->pos++;
  w->code = 1u;
}

static void cobs_close_block(cobs_writer_t* w) {
  w->out[w->code_pos] = w->code;
  w->code = 0u;
}

static void cobs_put(cobs_writer_t* w, uint8_t byte) {
  if (!w->ok) {
    return;
  }
  if (w->code == 0u) {
    cobs_open_block(w);
    if (!w->ok) {
      return;
    }
  }
  if (byte == 0u) {
    /* a zero ends the block and always starts the next one */
    cobs_close_block(w);
    cobs_open_block(w);
    return;
  }
  if (w->pos >= w->cap) {
    w->ok = false;
    return;
  }
  w->out[w->pos++] = byte;
  w->code = (uint8_t)(w->code + 1u);
  if (w->code == 0xFFu) {
    cobs_close_block(w);
  }
}

static void cobs_put_all(cobs_writer_t* w, const uint8_t* data, size_t len) {
  size_t i;
  for (i = 0; i < len && w->ok; ++i) {
    cobs_put(w, data[i]);
  }
}

static void cobs_writer_init(cobs_writer_t* w, uint8_t* out, size_t cap) {
  w->out = out;
  w->cap = cap;
  w->pos = 0;
  w->code_pos = 0;
  w->code = 0u;
  w->ok = true;
  /* even empty input encodes to one block (0x01) */
  cobs_open_block(w);
}

static bool cobs_writer_finish(cobs_writer_t* w) {
  if (w->ok && w->code != 0u) {
    cobs_close_block(w);
  }
  return w->ok;
}

bool tether_cobs_encode(const uint8_t* in, size_t len, uint8_t* out, size_t cap, size_t* out_len) {
  cobs_writer_t w;
  *out_len = 0;
  if (out == NULL || (in == NULL && len != 0u)) {
    return false;
  }
  cobs_writer_init(&w, out, cap);
  cobs_put_all(&w, in, len);
  if (!cobs_writer_finish(&w)) {
    return false;
  }
  *out_len = w.pos;
  return true;
}

bool tether_cobs_decode(const uint8_t* in, size_t len, uint8_t* out, size_t cap, size_t* out_len) {
  size_t i = 0;
  size_t pos = 0;
  *out_len = 0;
  if (in == NULL && len != 0u) {
    return false;
  }
  while (i < len) {
    uint8_t code = in[i++];
    uint8_t k;
    if (code == 0u) {
      return false;
    }
    for (k = 1u; k < code; ++k) {
      if (i >= len || in[i] == 0u || pos >= cap) {
        return false;
      }
      out[pos++] = in[i++];
    }
    /* implied zero between blocks, never after the last one or a full block */
    if (code != 0xFFu && i < len) {
      if (pos >= cap) {
        return false;
      }
      out[pos++] = 0u;
    }
  }
  *out_len = pos;
  return true;
}

/* ---- header ---------------------------------------------------------------- */

void tether_header_write(const tether_frame_header_t* header, uint8_t out[TETHER_HEADER_SIZE]) {
  out[TETHER_HEADER_OFFSET_VERSION] = header->version;
  out[TETHER_HEADER_OFFSET_TYPE] = header->type;
  out[TETHER_HEADER_OFFSET_STEP_ID + 0u] = (uint8_t)(header->step_id & 0xFFu);
  out[TETHER_HEADER_OFFSET_STEP_ID + 1u] = (uint8_t)((header->step_id >> 8) & 0xFFu);
  out[TETHER_HEADER_OFFSET_STEP_ID + 2u] = (uint8_t)((header->step_id >> 16) & 0xFFu);
  out[TETHER_HEADER_OFFSET_STEP_ID + 3u] = (uint8_t)((header->step_id >> 24) & 0xFFu);
  out[TETHER_HEADER_OFFSET_PAYLOAD_LEN + 0u] = (uint8_t)(header->payload_len & 0xFFu);
  out[TETHER_HEADER_OFFSET_PAYLOAD_LEN + 1u] = (uint8_t)((header->payload_len >> 8) & 0xFFu);
}

void tether_header_read(const uint8_t in[TETHER_HEADER_SIZE], tether_frame_header_t* header) {
  header->version = in[TETHER_HEADER_OFFSET_VERSION];
  header->type = in[TETHER_HEADER_OFFSET_TYPE];
  header->step_id =
      (uint32_t)in[TETHER_HEADER_OFFSET_STEP_ID] | ((uint32_t)in[TETHER_HEADER_OFFSET_STEP_ID + 1u] << 8) |
      ((uint32_t)in[TETHER_HEADER_OFFSET_STEP_ID + 2u] << 16) | ((uint32_t)in[TETHER_HEADER_OFFSET_STEP_ID + 3u] << 24);
  header->payload_len = (uint16_t)((uint16_t)in[TETHER_HEADER_OFFSET_PAYLOAD_LEN] |
                                   (uint16_t)((uint16_t)in[TETHER_HEADER_OFFSET_PAYLOAD_LEN + 1u] << 8));
}

/* ---- encoder ---------------------------------------------------------------- */

bool tether_frame_encode(const tether_frame_header_t* header, const uint8_t* payload, uint8_t* out, size_t cap,
                         size_t* out_len) {
  uint8_t head[TETHER_HEADER_SIZE];
  uint8_t crc_bytes[TETHER_CRC_SIZE];
  uint16_t crc;
  cobs_writer_t w;

  *out_len = 0;
  if (header == NULL || out == NULL || header->payload_len > TETHER_PROTOCOL_MAX_PAYLOAD ||
      (payload == NULL && header->payload_len != 0u)) {
    return false;
  }
  tether_header_write(header, head);
  crc = tether_crc16(head, sizeof head);
  crc = tether_crc16_update(crc, payload, header->payload_len);
  crc_bytes[0] = (uint8_t)(crc & 0xFFu);
  crc_bytes[1] = (uint8_t)(crc >> 8);

  /* stuff header, payload and CRC in one pass, then the delimiter */
  cobs_writer_init(&w, out, cap);
  cobs_put_all(&w, head, sizeof head);
  cobs_put_all(&w, payload, header->payload_len);
  cobs_put_all(&w, crc_bytes, sizeof crc_bytes);
  if (!cobs_writer_finish(&w) || w.pos >= cap) {
    return false;
  }
  out[w.pos++] = (uint8_t)TETHER_FRAME_DELIMITER;
  *out_len = w.pos;
  return true;
}

/* ---- streaming decoder ------------------------------------------------------- */

void tether_frame_decoder_init(tether_frame_decoder_t* decoder, uint8_t* buf, size_t cap) {
  tether_frame_counters_t zero = {0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u};
  decoder->buf = buf;
  decoder->cap = buf == NULL ? 0u : cap;
  decoder->counters = zero;
  tether_frame_decoder_reset(decoder);
}

void tether_frame_decoder_reset(tether_frame_decoder_t* decoder) {
  decoder->len = 0;
  decoder->wire_len = 0;
  decoder->remaining = 0u;
  decoder->block_is_full = false;
  decoder->started = false;
  decoder->overflow = false;
}

static void decoder_append(tether_frame_decoder_t* d, uint8_t byte) {
  if (d->len >= d->cap) {
    d->overflow = true;
    return;
  }
  d->buf[d->len++] = byte;
}

/* Checks a complete unstuffed frame; counts and returns false if it is bad. */
static bool decoder_accept(tether_frame_decoder_t* d, tether_frame_t* frame) {
  tether_frame_counters_t* c = &d->counters;
  tether_frame_header_t h;
  size_t body;
  uint16_t crc;
  uint16_t got;

  if (d->len < TETHER_RAW_FRAME_MIN) {
    ++c->runts;
    return false;
  }
  body = d->len - TETHER_CRC_SIZE;
  crc = tether_crc16(d->buf, body);
  got = (uint16_t)((uint16_t)d->buf[body] | (uint16_t)((uint16_t)d->buf[body + 1u] << 8));
  if (crc != got) {
    ++c->crc_errors;
    return false;
  }
  tether_header_read(d->buf, &h);
  if ((size_t)h.payload_len != body - TETHER_HEADER_SIZE) {
    ++c->length_errors;
    return false;
  }
  if (h.version != TETHER_PROTOCOL_VERSION) {
    /* HELLO and ERROR keep their layout across versions so a mismatch can be
     * reported; everything else from another version is dropped */
    if (h.type != TETHER_MSG_HELLO && h.type != TETHER_MSG_ERROR) {
      ++c->bad_version;
      return false;
    }
    ++c->foreign_version;
  }
  if (h.type < TETHER_MSG_FIRST || h.type > TETHER_MSG_LAST) {
    ++c->unknown_type;
    return false;
  }
  frame->header = h;
  frame->payload = d->buf + TETHER_HEADER_SIZE;
  ++c->frames_ok;
  return true;
}

bool tether_frame_decoder_push(tether_frame_decoder_t* decoder, uint8_t byte, tether_frame_t* frame) {
  tether_frame_decoder_t* d = decoder;
  tether_frame_counters_t* c = &d->counters;
  bool ok = false;

  ++c->bytes;
  ++d->wire_len;

  if (byte != TETHER_FRAME_DELIMITER) {
    if (d->overflow) {
      return false; /* skip to the delimiter */
    }
    if (d->remaining == 0u) {
      /* a code byte: the previous block's implied zero comes first */
      if (d->started && !d->block_is_full) {
        decoder_append(d, 0u);
      }
      d->started = true;
      d->block_is_full = byte == 0xFFu;
      d->remaining = (uint8_t)(byte - 1u);
    } else {
      decoder_append(d, byte);
      --d->remaining;
    }
    return false;
  }

  /* delimiter: the frame is complete */
  if (d->wire_len == 1u) {
    tether_frame_decoder_reset(d); /* empty frame: filler, not an error */
    return false;
  }
  if (d->overflow) {
    ++c->oversize;
  } else if (d->remaining != 0u) {
    ++c->cobs_errors;
  } else {
    ok = decoder_accept(d, frame);
  }
  if (!ok) {
    c->garbage_bytes += (uint32_t)d->wire_len;
  }
  tether_frame_decoder_reset(d);
  return ok;
}
