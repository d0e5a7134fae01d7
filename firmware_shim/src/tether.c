/* SPDX-License-Identifier: Apache-2.0 */
#include "tether/firmware_shim/tether.h"

#include "tether/firmware_shim/messages.h"
#include "tether/firmware_shim/port.h"

/* ---- static state --------------------------------------------------------------------- */

typedef enum {
  SESSION_NONE = 0, /* no tether_init yet, or it failed on I/O */
  SESSION_OPENING,  /* device table known; opening devices */
  SESSION_RUNNING,  /* READY sent (and maybe a step received) */
  SESSION_OVER      /* ended: s_end_status says how */
} session_state_t;

#define NO_DATA_POS 0xFFFFu
#define WIRE_CAPACITY (TETHER_WIRE_FRAME_MAX(TETHER_TX_PAYLOAD_MAX) + 1u)

/* human-readable text costs RAM on AVR (string literals live there): with
 * TETHER_DIAG 0 every text below becomes "" and no line buffer exists */
#if TETHER_DIAG
#define TEXT(s) s
#define DIAG_CHARS 160u
#define ERROR_TEXT_CHARS (TETHER_MAX_ERROR_TEXT + 1u)
#else
#define TEXT(s) ""
#define ERROR_TEXT_CHARS 1u
#endif

TETHER_STATIC_ASSERT(TETHER_RAW_FRAME_SIZE(TETHER_RX_PAYLOAD_MAX) < NO_DATA_POS, "positions fit a u16");

/* receive: raw frame buffer for the decoder, and a chunk of bytes not yet pushed */
static uint8_t s_rx_frame[TETHER_RAW_FRAME_SIZE(TETHER_RX_PAYLOAD_MAX)];
static uint8_t s_rx_chunk[TETHER_READ_CHUNK];
static uint8_t s_rx_chunk_len;
static uint8_t s_rx_chunk_pos;
static tether_frame_decoder_t s_decoder;

/* send: payload under construction and its encoded frame */
static uint8_t s_tx_payload[TETHER_TX_PAYLOAD_MAX];
static uint8_t s_tx_wire[WIRE_CAPACITY];

/* session */
static session_state_t s_state;
static int s_end_status;
static char s_name[TETHER_MAX_FIRMWARE_NAME_LEN + 1u];
static uint32_t s_build_id;
static const uint8_t* s_table; /* DEVICES payload in s_rx_frame, valid while opening */
static size_t s_table_len;

/* opened devices; slot = position */
static uint8_t s_open_count;
static tether_slot_t s_slots[TETHER_MAX_OPEN];
static uint16_t s_index[TETHER_MAX_OPEN];
static uint16_t s_pos[TETHER_MAX_OPEN]; /* sensor: reading in s_rx_frame; actuator: in s_commands */
static uint8_t s_command_set[TETHER_MAX_OPEN];
static uint8_t s_commands[TETHER_COMMAND_BYTES];
static uint16_t s_commands_used;
static size_t s_sensors_budget; /* SENSORS payload if every sensor reports */
static size_t s_actuate_budget; /* ACTUATE payload if every actuator is set */

/* step */
static bool s_have_step;
static bool s_readings_valid; /* s_pos of sensors point at the current step's SENSORS */
static bool s_acted;
static uint32_t s_step_id;
static uint64_t s_time_us;

/* last ERROR from the runtime */
static uint8_t s_error_code;
static char s_error_text[ERROR_TEXT_CHARS];

static tether_counters_t s_counters;

/* ---- small helpers -------------------------------------------------------------------------- */

static size_t bounded_strlen(const char* s, size_t max) {
  size_t n = 0;
  while (n < max && s[n] != '\0') {
    ++n;
  }
  return n;
}

static void copy_bytes(uint8_t* dst, const uint8_t* src, size_t n) {
  size_t i;
  for (i = 0; i < n; ++i) {
    dst[i] = src[i];
  }
}

#if TETHER_DIAG
static char s_line[DIAG_CHARS];

/* appends to s_line, cutting at its end */
static void line_append(const char* s) {
  size_t n = bounded_strlen(s_line, sizeof s_line - 1u);
  while (*s != '\0' && n + 1u < sizeof s_line) {
    s_line[n++] = *s++;
  }
  s_line[n] = '\0';
}

static void line_append_u32(uint32_t v) {
  char digits[11];
  size_t i = sizeof digits - 1u;
  digits[i] = '\0';
  do {
    digits[--i] = (char)('0' + (char)(v % 10u));
    v /= 10u;
  } while (v != 0u && i > 0u);
  line_append(&digits[i]);
}

static void line_start(void) {
  s_line[0] = '\0';
  line_append("tether: ");
}

static void line_send(void) { tether_port_diag(s_line); }

static void diag(const char* text) {
  line_start();
  line_append(text);
  line_send();
}
#else
static void diag(const char* text) { (void)text; }
#endif

static int end_session(int status) {
  s_state = SESSION_OVER;
  s_end_status = status;
  return status;
}

/* ---- sending -------------------------------------------------------------------------------- */

static int send_frame(uint8_t type, uint32_t step_id, const uint8_t* payload, size_t len, bool lead_delimiter) {
  tether_frame_header_t h;
  size_t start = lead_delimiter ? 1u : 0u;
  size_t wire_len;
  h.version = (uint8_t)TETHER_PROTOCOL_VERSION;
  h.type = type;
  h.step_id = step_id;
  h.payload_len = (uint16_t)len;
  s_tx_wire[0] = (uint8_t)TETHER_FRAME_DELIMITER;
  if (len > TETHER_TX_PAYLOAD_MAX ||
      !tether_frame_encode(&h, payload, s_tx_wire + start, sizeof s_tx_wire - start, &wire_len)) {
    return TETHER_E_LIMIT; /* cannot happen with the budgets checked at open */
  }
  if (tether_port_write(s_tx_wire, start + wire_len) < 0) {
    ++s_counters.io_errors;
    return TETHER_E_IO;
  }
  ++s_counters.frames_sent;
  return TETHER_OK;
}

static int send_hello(void) {
  tether_hello_t hello;
  size_t len;
  hello.protocol_version = (uint8_t)TETHER_PROTOCOL_VERSION;
  hello.max_payload = (uint16_t)TETHER_RX_PAYLOAD_MAX;
  hello.build_id = s_build_id;
  copy_bytes((uint8_t*)hello.name, (const uint8_t*)s_name, sizeof hello.name);
  if (!tether_hello_encode(&hello, s_tx_payload, sizeof s_tx_payload, &len)) {
    return TETHER_E_ARGUMENT;
  }
  ++s_counters.hello_sent;
  /* the leading 0x00 ends whatever garbage the line held before */
  return send_frame((uint8_t)TETHER_MSG_HELLO, 0u, s_tx_payload, len, true);
}

static int send_ready(void) {
  size_t len;
  if (!tether_ready_encode(s_index, s_open_count, s_tx_payload, sizeof s_tx_payload, &len)) {
    return TETHER_E_LIMIT;
  }
  ++s_counters.ready_sent;
  return send_frame((uint8_t)TETHER_MSG_READY, 0u, s_tx_payload, len, false);
}

static int send_actuate(void) {
  tether_items_writer_t w;
  size_t len;
  uint8_t slot;
  tether_actuate_writer_init(&w, s_tx_payload, sizeof s_tx_payload);
  for (slot = 0; slot < s_open_count; ++slot) {
    if (s_slots[slot].direction == TETHER_DIRECTION_ACTUATOR && s_command_set[slot] != 0u) {
      tether_items_writer_add(&w, slot, s_commands + s_pos[slot], s_slots[slot].size);
    }
  }
  if (!tether_items_writer_finish(&w, &len)) {
    return TETHER_E_LIMIT;
  }
  return send_frame((uint8_t)TETHER_MSG_ACTUATE, s_step_id, s_tx_payload, len, false);
}

/* tells the runtime why the firmware gives up; best effort */
static void send_error(uint8_t code, uint16_t value, const char* text) {
  tether_error_t e;
  size_t len;
  size_t room = TETHER_TX_PAYLOAD_MAX - TETHER_ERROR_FIXED_SIZE;
  e.code = code;
  e.value = value;
  e.text = text;
  e.text_len = bounded_strlen(text, TETHER_MAX_ERROR_TEXT < room ? TETHER_MAX_ERROR_TEXT : room);
  if (tether_error_encode(&e, s_tx_payload, sizeof s_tx_payload, &len)) {
    (void)send_frame((uint8_t)TETHER_MSG_ERROR, s_step_id, s_tx_payload, len, false);
  }
}

/* ---- receiving -------------------------------------------------------------------------------- */

/* 1: a frame is in *frame; 0: the line was idle; TETHER_E_IO: the port failed.
 * Bytes after a completed frame stay in the chunk for the next call. */
static int read_frame(tether_frame_t* frame) {
  for (;;) {
    while (s_rx_chunk_pos < s_rx_chunk_len) {
      uint8_t byte = s_rx_chunk[s_rx_chunk_pos++];
      if (tether_frame_decoder_push(&s_decoder, byte, frame)) {
        s_counters.rx = s_decoder.counters;
        return 1;
      }
    }
    {
      int n = tether_port_read(s_rx_chunk, sizeof s_rx_chunk);
      s_counters.rx = s_decoder.counters;
      if (n < 0) {
        ++s_counters.io_errors;
        return TETHER_E_IO;
      }
      if (n == 0) {
        return 0;
      }
      s_rx_chunk_len = (uint8_t)(n > (int)sizeof s_rx_chunk ? (int)sizeof s_rx_chunk : n);
      s_rx_chunk_pos = 0u;
    }
  }
}

/* the runtime sent ERROR: remember it, tell a human, end the session */
static int on_error_frame(const tether_frame_t* f) {
  tether_error_t e;
  bool version;
  size_t keep;
  if (!tether_error_decode(f->payload, f->header.payload_len, &e)) {
    /* another version may lay the text out differently; keep the code */
    e.code = f->header.payload_len > 0u ? f->payload[0] : 0u;
    e.value = 0u;
    e.text = "";
    e.text_len = 0u;
  }
  s_error_code = e.code;
  keep = e.text_len;
  if (keep + 1u > sizeof s_error_text) {
    keep = sizeof s_error_text - 1u;
  }
  copy_bytes((uint8_t*)s_error_text, (const uint8_t*)e.text, keep);
  s_error_text[keep] = '\0';
  version = f->header.version != TETHER_PROTOCOL_VERSION || e.code == TETHER_ERROR_VERSION_MISMATCH;
#if TETHER_DIAG
  line_start();
  if (version) {
    line_append("protocol version mismatch: firmware speaks ");
    line_append_u32(TETHER_PROTOCOL_VERSION);
    line_append(", runtime ");
    line_append_u32(f->header.version != TETHER_PROTOCOL_VERSION ? f->header.version : e.value);
  } else {
    line_append("runtime ended the session (");
    line_append(tether_error_code_name(e.code));
    line_append(")");
  }
  line_append(": ");
  line_append(s_error_text);
  line_send();
#endif
  return end_session(version ? TETHER_E_VERSION : TETHER_E_REJECTED);
}

/* ---- session ------------------------------------------------------------------------------------ */

static void reset_session(void) {
  tether_counters_t zero_counters;
  uint8_t i;
  tether_frame_decoder_init(&s_decoder, s_rx_frame, sizeof s_rx_frame);
  s_rx_chunk_len = 0u;
  s_rx_chunk_pos = 0u;
  s_state = SESSION_NONE;
  s_end_status = TETHER_OK;
  s_table = NULL;
  s_table_len = 0u;
  s_open_count = 0u;
  for (i = 0; i < TETHER_MAX_OPEN; ++i) {
    s_command_set[i] = 0u;
    s_pos[i] = NO_DATA_POS;
  }
  s_commands_used = 0u;
  s_sensors_budget = TETHER_SENSORS_FIXED_SIZE;
  s_actuate_budget = TETHER_ACTUATE_FIXED_SIZE;
  s_have_step = false;
  s_readings_valid = false;
  s_acted = false;
  s_step_id = 0u;
  s_time_us = 0u;
  s_error_code = 0u;
  s_error_text[0] = '\0';
  zero_counters.rx = s_decoder.counters;
  zero_counters.frames_sent = 0u;
  zero_counters.hello_sent = 0u;
  zero_counters.ready_sent = 0u;
  zero_counters.actuate_resent = 0u;
  zero_counters.step_gaps = 0u;
  zero_counters.unexpected = 0u;
  zero_counters.io_errors = 0u;
  s_counters = zero_counters;
}

int tether_init(const char* firmware_name, uint32_t build_id) {
  size_t name_len;
  size_t i;
  reset_session();
  if (firmware_name == NULL) {
    return TETHER_E_ARGUMENT;
  }
  name_len = bounded_strlen(firmware_name, TETHER_MAX_FIRMWARE_NAME_LEN + 1u);
  if (name_len == 0u || name_len > TETHER_MAX_FIRMWARE_NAME_LEN) {
    return TETHER_E_ARGUMENT;
  }
  for (i = 0; i <= name_len; ++i) {
    s_name[i] = firmware_name[i];
  }
  s_build_id = build_id;

  {
    int rc = send_hello();
    if (rc != TETHER_OK) {
      return rc;
    }
  }
  for (;;) {
    tether_frame_t f;
    int rc = read_frame(&f);
    if (rc < 0) {
      return rc;
    }
    if (rc == 0) {
      /* nobody answered yet (the runtime may have connected late) */
      rc = send_hello();
      if (rc != TETHER_OK) {
        return rc;
      }
      continue;
    }
    if (f.header.type == TETHER_MSG_ERROR) {
      return on_error_frame(&f);
    }
    if (f.header.type == TETHER_MSG_DEVICES) {
      tether_devices_reader_t reader;
      uint16_t count;
      if (!tether_devices_reader_init(&reader, f.payload, f.header.payload_len, &count)) {
        send_error((uint8_t)TETHER_ERROR_MALFORMED, (uint16_t)TETHER_MSG_DEVICES, TEXT("device table not decodable"));
        diag(TEXT("device table from the runtime is not decodable"));
        return end_session(TETHER_E_PROTOCOL);
      }
      /* the table stays in the receive buffer: nothing is read until the first step */
      s_table = f.payload;
      s_table_len = f.header.payload_len;
      s_state = SESSION_OPENING;
      return TETHER_OK;
    }
    ++s_counters.unexpected;
  }
}

static int session_gate(void) {
  if (s_state == SESSION_OVER) {
    return s_end_status;
  }
  if (s_state == SESSION_NONE) {
    return TETHER_E_NOT_READY;
  }
  return TETHER_OK;
}

int tether_open(const char* name) {
  tether_devices_reader_t reader;
  tether_device_entry_t e;
  uint16_t count;
  size_t name_len;
  uint8_t slot;
  int rc = session_gate();
  if (rc != TETHER_OK) {
    return rc;
  }
  if (s_state != SESSION_OPENING) {
    return TETHER_E_INVALID_OPERATION;
  }
  if (name == NULL) {
    return TETHER_E_ARGUMENT;
  }
  name_len = bounded_strlen(name, TETHER_MAX_DEVICE_NAME_LEN + 1u);
  if (name_len == 0u || name_len > TETHER_MAX_DEVICE_NAME_LEN) {
    return TETHER_E_UNKNOWN_DEVICE;
  }
  if (!tether_devices_reader_init(&reader, s_table, s_table_len, &count)) {
    return TETHER_E_PROTOCOL; /* validated in tether_init; cannot happen */
  }
  for (;;) {
    size_t i;
    if (!tether_devices_reader_next(&reader, &e)) {
      return TETHER_E_UNKNOWN_DEVICE;
    }
    if (e.name_len != name_len) {
      continue;
    }
    for (i = 0; i < name_len && e.name[i] == name[i]; ++i) {
    }
    if (i == name_len) {
      break;
    }
  }
  for (slot = 0; slot < s_open_count; ++slot) {
    if (s_index[slot] == e.index) {
      return (int)slot;
    }
  }
  /* a kind this shim knows must have the layout this shim knows */
  if (tether_kind_payload_size(e.kind) != 0u &&
      (tether_kind_payload_size(e.kind) != e.payload_size || tether_kind_direction(e.kind) != e.direction)) {
    return TETHER_E_SIZE_MISMATCH;
  }
  if (s_open_count >= TETHER_MAX_OPEN ||
      TETHER_READY_FIXED_SIZE + 2u * ((size_t)s_open_count + 1u) > TETHER_TX_PAYLOAD_MAX) {
    return TETHER_E_LIMIT;
  }
  slot = s_open_count;
  if (e.direction == TETHER_DIRECTION_SENSOR) {
    if (s_sensors_budget + 1u + e.payload_size > TETHER_RX_PAYLOAD_MAX) {
      return TETHER_E_LIMIT;
    }
    s_sensors_budget += 1u + e.payload_size;
    s_pos[slot] = NO_DATA_POS;
  } else {
    if (s_actuate_budget + 1u + e.payload_size > TETHER_TX_PAYLOAD_MAX ||
        (size_t)s_commands_used + e.payload_size > TETHER_COMMAND_BYTES) {
      return TETHER_E_LIMIT;
    }
    s_actuate_budget += 1u + e.payload_size;
    s_pos[slot] = s_commands_used;
    s_commands_used = (uint16_t)(s_commands_used + e.payload_size);
  }
  s_slots[slot].size = e.payload_size;
  s_slots[slot].direction = e.direction;
  s_index[slot] = e.index;
  s_command_set[slot] = 0u;
  ++s_open_count;
  return (int)slot;
}

/* checks a handle against direction and size; TETHER_OK if usable */
static int check_handle(int handle, uint8_t direction, size_t size) {
  uint8_t slot;
  if (s_state == SESSION_NONE) {
    return TETHER_E_NOT_READY;
  }
  if (handle < 0 || handle >= (int)s_open_count) {
    return TETHER_E_INVALID_HANDLE;
  }
  slot = (uint8_t)handle;
  if (s_slots[slot].direction != direction) {
    return TETHER_E_INVALID_OPERATION;
  }
  if (size != s_slots[slot].size) {
    return TETHER_E_SIZE_MISMATCH;
  }
  return TETHER_OK;
}

int tether_get(int handle, void* buf, size_t size) {
  int rc = check_handle(handle, (uint8_t)TETHER_DIRECTION_SENSOR, size);
  uint16_t pos;
  if (rc != TETHER_OK) {
    return rc;
  }
  if (s_state == SESSION_OVER) {
    return s_end_status;
  }
  if (buf == NULL) {
    return TETHER_E_ARGUMENT;
  }
  if (!s_readings_valid) {
    return TETHER_E_NOT_READY; /* no step yet, or tether_step_wait failed while receiving */
  }
  pos = s_pos[handle];
  if (pos == NO_DATA_POS) {
    return TETHER_E_NO_DATA;
  }
  copy_bytes((uint8_t*)buf, s_rx_frame + pos, size);
  return TETHER_OK;
}

int tether_set(int handle, const void* buf, size_t size) {
  int rc = check_handle(handle, (uint8_t)TETHER_DIRECTION_ACTUATOR, size);
  if (rc != TETHER_OK) {
    return rc;
  }
  if (s_state == SESSION_OVER) {
    return s_end_status;
  }
  if (buf == NULL) {
    return TETHER_E_ARGUMENT;
  }
  copy_bytes(s_commands + s_pos[handle], (const uint8_t*)buf, size);
  s_command_set[handle] = 1u;
  return TETHER_OK;
}

uint64_t tether_time_us(void) { return s_time_us; }

uint32_t tether_step_id(void) { return s_step_id; }

int tether_step_done(void) {
  int rc = session_gate();
  if (rc != TETHER_OK) {
    return rc;
  }
  if (s_state != SESSION_RUNNING || !s_have_step) {
    return TETHER_E_NOT_READY;
  }
  if (s_acted) {
    return TETHER_OK;
  }
  rc = send_actuate();
  if (rc == TETHER_OK) {
    s_acted = true;
  }
  return rc;
}

/* takes a SENSORS frame as the new step; false if it does not decode */
static bool accept_sensors(const tether_frame_t* f) {
  tether_items_reader_t reader;
  tether_item_t item;
  uint64_t time_us;
  uint8_t slot;
  int rc;
  if (!tether_sensors_reader_init(&reader, f->payload, f->header.payload_len, s_slots, s_open_count, &time_us) ||
      !tether_items_reader_validate(&reader)) {
    return false;
  }
  for (slot = 0; slot < s_open_count; ++slot) {
    if (s_slots[slot].direction == TETHER_DIRECTION_SENSOR) {
      s_pos[slot] = NO_DATA_POS;
    }
  }
  while ((rc = tether_items_reader_next(&reader, &item)) == 1) {
    if (!item.no_data) {
      s_pos[item.slot] = (uint16_t)(item.data - s_rx_frame);
    }
  }
  if (s_have_step && f->header.step_id != s_step_id + 1u) {
    ++s_counters.step_gaps;
  }
  s_have_step = true;
  s_readings_valid = true;
  s_acted = false;
  s_step_id = f->header.step_id;
  s_time_us = time_us;
  return true;
}

int tether_step_wait(void) {
  int rc = session_gate();
  if (rc != TETHER_OK) {
    return rc;
  }
  if (s_state == SESSION_OPENING) {
    rc = send_ready();
    if (rc != TETHER_OK) {
      return rc;
    }
    s_table = NULL; /* the receive buffer is about to be reused */
    s_state = SESSION_RUNNING;
  } else if (s_have_step) {
    rc = tether_step_done();
    if (rc != TETHER_OK) {
      return rc;
    }
  }
  /* the receive buffer is reused from here on: old readings are gone */
  s_readings_valid = false;
  for (;;) {
    tether_frame_t f;
    rc = read_frame(&f);
    if (rc < 0) {
      return rc;
    }
    if (rc == 0) {
      if (!s_have_step) {
        rc = send_ready(); /* READY may have been lost */
        if (rc != TETHER_OK) {
          return rc;
        }
      }
      continue;
    }
    switch (f.header.type) {
      case TETHER_MSG_SENSORS:
        if (s_have_step && f.header.step_id == s_step_id) {
          /* the runtime did not get our ACTUATE: send it again, do not step twice */
          ++s_counters.actuate_resent;
          rc = send_actuate();
          if (rc != TETHER_OK) {
            return rc;
          }
          continue;
        }
        if (!accept_sensors(&f)) {
          send_error((uint8_t)TETHER_ERROR_MALFORMED, (uint16_t)TETHER_MSG_SENSORS,
                     TEXT("SENSORS does not match the opened devices"));
          diag(TEXT("SENSORS from the runtime does not match the opened devices"));
          return end_session(TETHER_E_PROTOCOL);
        }
        return TETHER_OK;
      case TETHER_MSG_STOP: diag(TEXT("session stopped by the runtime")); return end_session(TETHER_E_STOPPED);
      case TETHER_MSG_ERROR: return on_error_frame(&f);
      default:
        ++s_counters.unexpected; /* e.g. a second DEVICES answering a re-sent HELLO */
        break;
    }
  }
}

int tether_log_level(uint8_t level, const char* text) {
  size_t len;
  size_t text_len;
  size_t room = TETHER_TX_PAYLOAD_MAX - TETHER_LOG_FIXED_SIZE;
  if (text == NULL) {
    return TETHER_E_ARGUMENT;
  }
  text_len = bounded_strlen(text, TETHER_MAX_LOG_TEXT < room ? TETHER_MAX_LOG_TEXT : room);
  if (!tether_log_encode(level, text, text_len, s_tx_payload, sizeof s_tx_payload, &len)) {
    return TETHER_E_ARGUMENT;
  }
  return send_frame((uint8_t)TETHER_MSG_LOG, s_step_id, s_tx_payload, len, false);
}

int tether_log(const char* text) { return tether_log_level((uint8_t)TETHER_LOG_INFO, text); }

const char* tether_error_text(void) { return s_error_text; }

uint8_t tether_error_code(void) { return s_error_code; }

const tether_counters_t* tether_counters(void) {
  s_counters.rx = s_decoder.counters;
  return &s_counters;
}
