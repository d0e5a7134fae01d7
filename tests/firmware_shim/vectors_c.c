/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Checks the C shim against firmware_shim/test_vectors/vectors.txt, from C.
 *
 *   vectors_c PATH/TO/vectors.txt     exit 0 if every vector passes
 *
 * Build: cc -std=c99 -Wall -Wextra -Werror -Wconversion -Ifirmware_shim/include
 *        tests/firmware_shim/vectors_c.c firmware_shim/src/frame.c firmware_shim/src/messages.c
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tether/firmware_shim/frame.h"
#include "tether/firmware_shim/messages.h"
#include "tether/firmware_shim/payloads.h"
#include "tether/firmware_shim/protocol.h"

#define MAX_BYTES 4096u
#define MAX_LINE 8192

typedef struct {
  uint8_t bytes[MAX_BYTES];
  size_t len;
  bool present;
} field_t;

typedef struct {
  char name[64];
  field_t data, cobs, payload, wire;
  char type[16], slots[64], expect[32];
  long version, step;
  unsigned long crc;
  bool has_crc;
} vector_t;

static int g_failures;
static int g_checks;

#define CHECK(cond, v, what)                                                 \
  do {                                                                       \
    ++g_checks;                                                              \
    if (!(cond)) {                                                           \
      ++g_failures;                                                          \
      fprintf(stderr, "FAIL %s: %s (line %d)\n", (v)->name, what, __LINE__); \
    }                                                                        \
  } while (0)

/* hex tokens: "3a", "00*10", "01..fe" */
static bool parse_bytes(const char* s, field_t* f) {
  f->len = 0;
  f->present = true;
  while (*s != '\0') {
    char* end;
    unsigned long a;
    while (*s == ' ') {
      ++s;
    }
    if (*s == '\0' || *s == '\n' || *s == '\r') {
      break;
    }
    a = strtoul(s, &end, 16);
    if (end == s || a > 0xFFu) {
      return false;
    }
    s = end;
    if (s[0] == '*') {
      unsigned long n = strtoul(s + 1, &end, 10), i;
      for (i = 0; i < n; ++i) {
        if (f->len >= MAX_BYTES) {
          return false;
        }
        f->bytes[f->len++] = (uint8_t)a;
      }
      s = end;
    } else if (s[0] == '.' && s[1] == '.') {
      unsigned long b = strtoul(s + 2, &end, 16), i;
      if (b > 0xFFu || b < a) {
        return false;
      }
      for (i = a; i <= b; ++i) {
        if (f->len >= MAX_BYTES) {
          return false;
        }
        f->bytes[f->len++] = (uint8_t)i;
      }
      s = end;
    } else {
      if (f->len >= MAX_BYTES) {
        return false;
      }
      f->bytes[f->len++] = (uint8_t)a;
    }
  }
  return true;
}

static void copy_text(char* dst, size_t cap, const char* src) {
  size_t n = strcspn(src, "\r\n");
  if (n >= cap) {
    n = cap - 1u;
  }
  memcpy(dst, src, n);
  dst[n] = '\0';
}

static uint8_t type_from_name(const char* name) {
  uint8_t t;
  for (t = TETHER_MSG_FIRST; t <= TETHER_MSG_LAST; ++t) {
    if (strcmp(tether_msg_name(t), name) == 0) {
      return t;
    }
  }
  return 0u;
}

static uint8_t parse_slots(const char* s, tether_slot_t* slots) {
  uint8_t n = 0;
  while (*s != '\0' && n < TETHER_MAX_SLOTS) {
    char* end;
    while (*s == ' ') {
      ++s;
    }
    if (*s != 's' && *s != 'a') {
      break;
    }
    slots[n].direction = (uint8_t)(*s == 's' ? TETHER_DIRECTION_SENSOR : TETHER_DIRECTION_ACTUATOR);
    slots[n].size = (uint16_t)strtoul(s + 1, &end, 10);
    s = end;
    ++n;
  }
  return n;
}

static bool same(const uint8_t* a, size_t alen, const uint8_t* b, size_t blen) {
  return alen == blen && (alen == 0u || memcmp(a, b, alen) == 0);
}

static void check_crc(const vector_t* v) { CHECK(tether_crc16(v->data.bytes, v->data.len) == v->crc, v, "crc16"); }

static void check_cobs(const vector_t* v) {
  static uint8_t out[MAX_BYTES + 32u];
  size_t n = 0;
  bool ok = tether_cobs_encode(v->data.bytes, v->data.len, out, sizeof out, &n);
  CHECK(ok && same(out, n, v->cobs.bytes, v->cobs.len), v, "cobs encode");
  CHECK(!tether_cobs_encode(v->data.bytes, v->data.len, out, v->cobs.len - 1u, &n), v,
        "cobs encode fails one byte short");
  ok = tether_cobs_decode(v->cobs.bytes, v->cobs.len, out, sizeof out, &n);
  CHECK(ok && same(out, n, v->data.bytes, v->data.len), v, "cobs decode");
}

/* decodes the payload as its message type and encodes it again */
static void check_message(const vector_t* v, uint8_t type) {
  static uint8_t out[MAX_BYTES];
  const uint8_t* p = v->payload.bytes;
  size_t len = v->payload.len;
  size_t n = 0;
  tether_slot_t slots[TETHER_MAX_SLOTS];
  uint8_t slot_count = parse_slots(v->slots, slots);

  switch (type) {
    case TETHER_MSG_HELLO: {
      tether_hello_t h;
      CHECK(tether_hello_decode(p, len, &h), v, "HELLO decodes");
      CHECK(tether_hello_encode(&h, out, sizeof out, &n) && same(out, n, p, len), v, "HELLO re-encodes");
      break;
    }
    case TETHER_MSG_DEVICES: {
      tether_devices_reader_t r;
      tether_devices_writer_t w;
      tether_device_entry_t e;
      uint16_t count = 0, seen = 0;
      CHECK(tether_devices_reader_init(&r, p, len, &count), v, "DEVICES decodes");
      tether_devices_writer_init(&w, out, sizeof out);
      while (tether_devices_reader_next(&r, &e)) {
        tether_devices_writer_add(&w, &e);
        ++seen;
      }
      CHECK(seen == count, v, "DEVICES entry count");
      CHECK(tether_devices_writer_finish(&w, &n) && same(out, n, p, len), v, "DEVICES re-encodes");
      break;
    }
    case TETHER_MSG_READY: {
      uint16_t idx[TETHER_MAX_SLOTS];
      uint8_t count = 0;
      CHECK(tether_ready_decode(p, len, idx, (uint8_t)TETHER_MAX_SLOTS, &count), v, "READY decodes");
      CHECK(tether_ready_encode(idx, count, out, sizeof out, &n) && same(out, n, p, len), v, "READY re-encodes");
      break;
    }
    case TETHER_MSG_SENSORS:
    case TETHER_MSG_ACTUATE: {
      tether_items_reader_t r;
      tether_items_writer_t w;
      tether_item_t item;
      uint64_t t = 0;
      int rc;
      bool ok = type == TETHER_MSG_SENSORS ? tether_sensors_reader_init(&r, p, len, slots, slot_count, &t)
                                           : tether_actuate_reader_init(&r, p, len, slots, slot_count);
      CHECK(ok && tether_items_reader_validate(&r), v, "items decode");
      if (type == TETHER_MSG_SENSORS) {
        tether_sensors_writer_init(&w, out, sizeof out, t);
      } else {
        tether_actuate_writer_init(&w, out, sizeof out);
      }
      while ((rc = tether_items_reader_next(&r, &item)) == 1) {
        if (item.no_data) {
          tether_items_writer_add_no_data(&w, item.slot);
        } else {
          tether_items_writer_add(&w, item.slot, item.data, item.size);
        }
      }
      CHECK(rc == 0, v, "items end cleanly");
      CHECK(tether_items_writer_finish(&w, &n) && same(out, n, p, len), v, "items re-encode");
      break;
    }
    case TETHER_MSG_LOG: {
      uint8_t level = 0;
      const char* text = NULL;
      size_t text_len = 0;
      CHECK(tether_log_decode(p, len, &level, &text, &text_len), v, "LOG decodes");
      CHECK(tether_log_encode(level, text, text_len, out, sizeof out, &n) && same(out, n, p, len), v, "LOG re-encodes");
      break;
    }
    case TETHER_MSG_ERROR: {
      tether_error_t e;
      CHECK(tether_error_decode(p, len, &e), v, "ERROR decodes");
      CHECK(tether_error_encode(&e, out, sizeof out, &n) && same(out, n, p, len), v, "ERROR re-encodes");
      break;
    }
    case TETHER_MSG_STOP: CHECK(len == 0u, v, "STOP is empty"); break;
    default: CHECK(false, v, "known type");
  }
}

static uint32_t counter_by_name(const tether_frame_counters_t* c, const char* name) {
  if (strcmp(name, "crc_errors") == 0) return c->crc_errors;
  if (strcmp(name, "cobs_errors") == 0) return c->cobs_errors;
  if (strcmp(name, "runts") == 0) return c->runts;
  if (strcmp(name, "length_errors") == 0) return c->length_errors;
  if (strcmp(name, "bad_version") == 0) return c->bad_version;
  if (strcmp(name, "unknown_type") == 0) return c->unknown_type;
  if (strcmp(name, "oversize") == 0) return c->oversize;
  return 0xFFFFFFFFu;
}

static void check_wire(const vector_t* v) {
  static uint8_t raw[TETHER_RAW_FRAME_SIZE(TETHER_PROTOCOL_MAX_PAYLOAD)];
  static uint8_t out[MAX_BYTES + 32u];
  tether_frame_decoder_t d;
  tether_frame_t f;
  size_t i, frames = 0;
  bool drop = strcmp(v->expect, "frame") != 0 && strcmp(v->expect, "foreign") != 0;

  tether_frame_decoder_init(&d, raw, sizeof raw);
  memset(&f, 0, sizeof f);
  for (i = 0; i < v->wire.len; ++i) {
    tether_frame_t got;
    if (tether_frame_decoder_push(&d, v->wire.bytes[i], &got)) {
      ++frames;
      f = got;
      CHECK(i + 1u == v->wire.len, v, "frame ends at the delimiter");
    }
  }
  if (drop) {
    CHECK(frames == 0u, v, "frame dropped");
    CHECK(counter_by_name(&d.counters, v->expect) == 1u, v, "drop counted");
    CHECK(d.counters.garbage_bytes == (uint32_t)v->wire.len, v, "garbage bytes counted");
    return;
  }
  {
    uint8_t type = type_from_name(v->type);
    tether_frame_header_t h;
    size_t n = 0;
    CHECK(frames == 1u && d.counters.frames_ok == 1u, v, "one frame decoded");
    CHECK(d.counters.foreign_version == (strcmp(v->expect, "foreign") == 0 ? 1u : 0u), v, "foreign_version");
    CHECK(f.header.type == type && f.header.version == (uint8_t)v->version && f.header.step_id == (uint32_t)v->step, v,
          "header fields");
    CHECK(frames == 1u && same(f.payload, f.header.payload_len, v->payload.bytes, v->payload.len), v, "payload");
    h.version = (uint8_t)v->version;
    h.type = type;
    h.step_id = (uint32_t)v->step;
    h.payload_len = (uint16_t)v->payload.len;
    CHECK(tether_frame_encode(&h, v->payload.bytes, out, sizeof out, &n) && same(out, n, v->wire.bytes, v->wire.len), v,
          "frame encodes to wire");
    CHECK(!tether_frame_encode(&h, v->payload.bytes, out, v->wire.len - 1u, &n) && n == 0u, v,
          "frame encode fails one byte short");
    if (v->version == (long)TETHER_PROTOCOL_VERSION) {
      check_message(v, type);
    }
  }
}

static void run(const vector_t* v) {
  if (v->has_crc) {
    check_crc(v);
  } else if (v->cobs.present) {
    check_cobs(v);
  } else if (v->wire.present) {
    check_wire(v);
  } else {
    CHECK(false, v, "vector has something to check");
  }
}

int main(int argc, char** argv) {
  static char line[MAX_LINE];
  static vector_t v;
  FILE* file;
  int vectors = 0;
  bool open = false;
  if (argc != 2) {
    fprintf(stderr, "usage: %s firmware_shim/test_vectors/vectors.txt\n", argv[0]);
    return 2;
  }
  file = fopen(argv[1], "r");
  if (file == NULL) {
    perror(argv[1]);
    return 2;
  }
  for (;;) {
    char* got = fgets(line, sizeof line, file);
    char* eq;
    if (got == NULL || line[0] == '\n' || line[0] == '\r') {
      if (open) {
        run(&v);
        ++vectors;
        open = false;
      }
      if (got == NULL) {
        break;
      }
      continue;
    }
    if (line[0] == '#') {
      continue;
    }
    if (strncmp(line, "vector ", 7) == 0) {
      memset(&v, 0, sizeof v);
      strcpy(v.expect, "frame");
      copy_text(v.name, sizeof v.name, line + 7);
      open = true;
      continue;
    }
    eq = strstr(line, " =");
    if (!open || eq == NULL) {
      fprintf(stderr, "%s: cannot read line: %s", argv[1], line);
      return 2;
    }
    *eq = '\0';
    eq += 2;
    if (*eq == ' ') {
      ++eq;
    }
    {
      bool ok = true;
      if (strcmp(line, "data") == 0)
        ok = parse_bytes(eq, &v.data);
      else if (strcmp(line, "cobs") == 0)
        ok = parse_bytes(eq, &v.cobs);
      else if (strcmp(line, "payload") == 0)
        ok = parse_bytes(eq, &v.payload);
      else if (strcmp(line, "wire") == 0)
        ok = parse_bytes(eq, &v.wire);
      else if (strcmp(line, "crc") == 0) {
        v.crc = strtoul(eq, NULL, 16);
        v.has_crc = true;
      } else if (strcmp(line, "type") == 0)
        copy_text(v.type, sizeof v.type, eq);
      else if (strcmp(line, "slots") == 0)
        copy_text(v.slots, sizeof v.slots, eq);
      else if (strcmp(line, "expect") == 0)
        copy_text(v.expect, sizeof v.expect, eq);
      else if (strcmp(line, "version") == 0)
        v.version = strtol(eq, NULL, 10);
      else if (strcmp(line, "step") == 0)
        v.step = strtol(eq, NULL, 10);
      else if (strcmp(line, "what") != 0)
        ok = false;
      if (!ok) {
        fprintf(stderr, "%s: bad field '%s' in vector %s\n", argv[1], line, v.name);
        return 2;
      }
    }
  }
  fclose(file);
  if (vectors == 0) {
    fprintf(stderr, "%s: no vectors\n", argv[1]);
    return 2;
  }
  printf("%d vectors, %d checks, %d failed\n", vectors, g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
