/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target for the firmware shim's receive side. The test suite links it with
 * tests/fuzz/fuzz_driver.cpp and runs its corpus (tests/fuzz/corpus/frame_decoder) and seeded
 * mutations; with libFuzzer, from the repository root:
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
 *     -Ifirmware_shim/include tests/fuzz/frame_decoder_fuzz.c firmware_shim/src/frame.c \
 *     firmware_shim/src/messages.c firmware_shim/src/tether.c firmware_shim/src/names.c \
 *     -o build/fuzz/frame_decoder_fuzz
 *   mkdir -p build/fuzz/corpus_frame_decoder
 *   build/fuzz/frame_decoder_fuzz -max_total_time=30 build/fuzz/corpus_frame_decoder \
 *     tests/fuzz/corpus/frame_decoder
 *
 * (tests/fuzz/build_libfuzzer.sh builds every target so; docs/reliability.md, "What is fuzzed".)
 *
 * The first input byte picks a mode:
 *   even: the rest is raw line bytes for the streaming decoder (small and large
 *         buffers, every chunking); each delivered frame is checked, its
 *         payload run through every message decoder, and whatever decodes must
 *         re-encode to the same bytes;
 *   odd:  the rest is a script of frames (type, step, length, payload) that the
 *         harness encodes with a valid CRC and plays to the firmware session
 *         API (tether_init, tether_open of every device in the first DEVICES,
 *         get/set, tether_step_wait) through a fake port; everything the
 *         firmware writes back must decode as valid frames.
 * Any broken invariant calls abort(), which libFuzzer reports as a crash.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tether/firmware_shim/frame.h"
#include "tether/firmware_shim/messages.h"
#include "tether/firmware_shim/port.h"
#include "tether/firmware_shim/tether.h"

#define CHECK(cond) \
  do {              \
    if (!(cond)) {  \
      abort();      \
    }               \
  } while (0)

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

/* ---- mode 0: decoder and message decoders ---------------------------------------- */

static void check_messages(const tether_frame_t* f) {
  static uint8_t out[TETHER_PROTOCOL_MAX_PAYLOAD + 16u];
  const uint8_t* p = f->payload;
  size_t len = f->header.payload_len;
  size_t n = 0;
  {
    tether_hello_t h;
    if (tether_hello_decode(p, len, &h)) {
      CHECK(tether_hello_encode(&h, out, sizeof out, &n) && n == len && memcmp(out, p, len) == 0);
    }
  }
  {
    tether_devices_reader_t r;
    uint16_t count = 0, seen = 0;
    if (tether_devices_reader_init(&r, p, len, &count)) {
      tether_devices_writer_t w;
      tether_device_entry_t e;
      tether_devices_writer_init(&w, out, sizeof out);
      while (tether_devices_reader_next(&r, &e)) {
        tether_devices_writer_add(&w, &e);
        ++seen;
      }
      CHECK(seen == count);
      CHECK(tether_devices_writer_finish(&w, &n) && n == len && memcmp(out, p, len) == 0);
    }
  }
  {
    uint16_t idx[TETHER_MAX_SLOTS];
    uint8_t count = 0;
    if (tether_ready_decode(p, len, idx, (uint8_t)TETHER_MAX_SLOTS, &count)) {
      CHECK(tether_ready_encode(idx, count, out, sizeof out, &n) && n == len && memcmp(out, p, len) == 0);
    }
  }
  {
    /* a fixed layout: two sensors, two actuators */
    static const tether_slot_t slots[4] = {{8u, TETHER_DIRECTION_SENSOR},
                                           {5u, TETHER_DIRECTION_SENSOR},
                                           {4u, TETHER_DIRECTION_ACTUATOR},
                                           {8u, TETHER_DIRECTION_ACTUATOR}};
    tether_items_reader_t r;
    tether_items_writer_t w;
    tether_item_t item;
    uint64_t t = 0;
    int rc;
    if (tether_sensors_reader_init(&r, p, len, slots, 4u, &t) && tether_items_reader_validate(&r)) {
      tether_sensors_writer_init(&w, out, sizeof out, t);
      while ((rc = tether_items_reader_next(&r, &item)) == 1) {
        CHECK(item.slot < 4u && slots[item.slot].direction == TETHER_DIRECTION_SENSOR);
        if (item.no_data) {
          tether_items_writer_add_no_data(&w, item.slot);
        } else {
          CHECK(item.size == slots[item.slot].size && item.data + item.size <= p + len);
          tether_items_writer_add(&w, item.slot, item.data, item.size);
        }
      }
      CHECK(rc == 0);
      CHECK(tether_items_writer_finish(&w, &n) && n == len && memcmp(out, p, len) == 0);
    }
    if (tether_actuate_reader_init(&r, p, len, slots, 4u) && tether_items_reader_validate(&r)) {
      tether_actuate_writer_init(&w, out, sizeof out);
      while ((rc = tether_items_reader_next(&r, &item)) == 1) {
        CHECK(!item.no_data && slots[item.slot].direction == TETHER_DIRECTION_ACTUATOR);
        tether_items_writer_add(&w, item.slot, item.data, item.size);
      }
      CHECK(rc == 0);
      CHECK(tether_items_writer_finish(&w, &n) && n == len && memcmp(out, p, len) == 0);
    }
  }
  {
    uint8_t level = 0;
    const char* text = NULL;
    size_t text_len = 0;
    if (tether_log_decode(p, len, &level, &text, &text_len)) {
      CHECK(tether_log_encode(level, text, text_len, out, sizeof out, &n) && n == len && memcmp(out, p, len) == 0);
    }
  }
  {
    tether_error_t e;
    if (tether_error_decode(p, len, &e)) {
      CHECK(tether_error_encode(&e, out, sizeof out, &n) && n == len && memcmp(out, p, len) == 0);
    }
  }
}

/* re-encoding a delivered frame and decoding it again gives the same frame */
static void check_frame(const tether_frame_t* f, size_t cap) {
  static uint8_t wire[TETHER_WIRE_FRAME_MAX(TETHER_PROTOCOL_MAX_PAYLOAD)];
  static uint8_t raw[TETHER_RAW_FRAME_SIZE(TETHER_PROTOCOL_MAX_PAYLOAD)];
  static uint8_t copy[TETHER_PROTOCOL_MAX_PAYLOAD];
  tether_frame_decoder_t d;
  tether_frame_t again;
  size_t n = 0, i, frames = 0;
  CHECK(TETHER_RAW_FRAME_SIZE(f->header.payload_len) <= cap);
  CHECK(f->header.type >= TETHER_MSG_FIRST && f->header.type <= TETHER_MSG_LAST);
  CHECK(f->header.version == TETHER_PROTOCOL_VERSION || f->header.type == TETHER_MSG_HELLO ||
        f->header.type == TETHER_MSG_ERROR);
  memcpy(copy, f->payload, f->header.payload_len);
  CHECK(tether_frame_encode(&f->header, copy, wire, sizeof wire, &n));
  CHECK(n <= TETHER_WIRE_FRAME_MAX(f->header.payload_len) && wire[n - 1u] == 0u);
  tether_frame_decoder_init(&d, raw, sizeof raw);
  for (i = 0; i < n; ++i) {
    if (tether_frame_decoder_push(&d, wire[i], &again)) {
      ++frames;
      CHECK(i + 1u == n);
      CHECK(again.header.type == f->header.type && again.header.step_id == f->header.step_id &&
            again.header.version == f->header.version && again.header.payload_len == f->header.payload_len &&
            memcmp(again.payload, copy, f->header.payload_len) == 0);
    }
  }
  CHECK(frames == 1u);
}

static void run_decoder(const uint8_t* data, size_t size, size_t cap) {
  static uint8_t buf[TETHER_RAW_FRAME_SIZE(TETHER_PROTOCOL_MAX_PAYLOAD)];
  tether_frame_decoder_t d;
  tether_frame_t f;
  size_t i;
  uint32_t delivered = 0;
  tether_frame_decoder_init(&d, buf, cap);
  for (i = 0; i < size; ++i) {
    if (tether_frame_decoder_push(&d, data[i], &f)) {
      ++delivered;
      CHECK(f.payload == buf + TETHER_HEADER_SIZE);
      check_frame(&f, cap);
      check_messages(&f);
    }
  }
  {
    const tether_frame_counters_t* c = &d.counters;
    CHECK(c->bytes == (uint32_t)size);
    CHECK(c->frames_ok == delivered);
    CHECK(c->garbage_bytes <= c->bytes);
  }
}

static void run_cobs(const uint8_t* data, size_t size) {
  static uint8_t dec[4096];
  static uint8_t enc[4096 + 32];
  size_t n = 0, m = 0;
  if (size > 4096u) {
    return;
  }
  if (tether_cobs_decode(data, size, dec, sizeof dec, &n)) {
    CHECK(n <= size);
    CHECK(tether_cobs_encode(dec, n, enc, sizeof enc, &m));
    CHECK(tether_cobs_decode(enc, m, dec + 0, sizeof dec, &m) && m == n);
  }
  CHECK(tether_cobs_encode(data, size, enc, sizeof enc, &n));
  CHECK(n <= TETHER_COBS_MAX_ENCODED(size) && memchr(enc, 0, n) == NULL);
  CHECK(tether_cobs_decode(enc, n, dec, sizeof dec, &m) && m == size && memcmp(dec, data, size) == 0);
}

/* ---- mode 1: the firmware session against scripted frames -------------------------------- */

static uint8_t s_line[1u << 16];
static size_t s_line_len, s_line_pos;
static uint8_t s_chunk_hint;
static uint8_t s_out_raw[TETHER_RAW_FRAME_SIZE(TETHER_PROTOCOL_MAX_PAYLOAD)];
static tether_frame_decoder_t s_out;

int tether_port_read(uint8_t* buf, size_t max) {
  size_t n;
  if (s_line_pos >= s_line_len) {
    return -1; /* script over: the line is gone */
  }
  n = 1u + (size_t)(s_chunk_hint++ % 9u);
  if (n > max) {
    n = max;
  }
  if (n > s_line_len - s_line_pos) {
    n = s_line_len - s_line_pos;
  }
  memcpy(buf, s_line + s_line_pos, n);
  s_line_pos += n;
  return (int)n;
}

int tether_port_write(const uint8_t* buf, size_t len) {
  size_t i;
  uint32_t before = s_out.counters.crc_errors + s_out.counters.cobs_errors + s_out.counters.runts +
                    s_out.counters.length_errors + s_out.counters.unknown_type + s_out.counters.oversize +
                    s_out.counters.bad_version;
  for (i = 0; i < len; ++i) {
    tether_frame_t f;
    if (tether_frame_decoder_push(&s_out, buf[i], &f)) {
      CHECK(f.header.type == TETHER_MSG_HELLO || f.header.type == TETHER_MSG_READY ||
            f.header.type == TETHER_MSG_ACTUATE || f.header.type == TETHER_MSG_LOG ||
            f.header.type == TETHER_MSG_ERROR);
      check_messages(&f);
    }
  }
  /* the firmware never writes a broken frame */
  CHECK(before == s_out.counters.crc_errors + s_out.counters.cobs_errors + s_out.counters.runts +
                      s_out.counters.length_errors + s_out.counters.unknown_type + s_out.counters.oversize +
                      s_out.counters.bad_version);
  return 0;
}

void tether_port_diag(const char* text) { CHECK(text != NULL && strlen(text) < 200u); }

/* script: [type%10][step u8][len u8][payload len bytes] ... ; type 9 = raw garbage */
static void build_line(const uint8_t* data, size_t size) {
  size_t i = 0;
  s_line_len = 0;
  s_line_pos = 0;
  while (i + 3u <= size) {
    uint8_t kind = (uint8_t)(data[i] % 10u);
    uint8_t step = data[i + 1u];
    size_t len = data[i + 2u];
    i += 3u;
    if (len > size - i) {
      len = size - i;
    }
    if (kind == 9u) {
      if (s_line_len + len <= sizeof s_line) {
        memcpy(s_line + s_line_len, data + i, len);
        s_line_len += len;
      }
    } else {
      tether_frame_header_t h;
      size_t n = 0;
      h.version = (uint8_t)TETHER_PROTOCOL_VERSION;
      h.type = kind == 0u ? (uint8_t)TETHER_MSG_STOP : kind;
      h.step_id = step;
      h.payload_len = (uint16_t)len;
      if (s_line_len + TETHER_WIRE_FRAME_MAX(len) <= sizeof s_line &&
          tether_frame_encode(&h, data + i, s_line + s_line_len, sizeof s_line - s_line_len, &n)) {
        s_line_len += n;
      }
    }
    i += len;
  }
}

/* The device table tether_init() took: the DEVICES frame in what the firmware has read so far,
 * decoded again with the firmware's receive limit. (Not the first DEVICES of the script: raw
 * bytes before it can swallow it, and raw bytes can hold a valid frame of their own.) tether_init
 * returns on the first DEVICES it receives, so there is exactly one. */
static size_t taken_table(const uint8_t** table) {
  static uint8_t raw[TETHER_RAW_FRAME_SIZE(TETHER_RX_PAYLOAD_MAX)];
  static uint8_t copy[TETHER_RX_PAYLOAD_MAX];
  tether_frame_decoder_t d;
  tether_frame_t f;
  size_t i, len = 0;
  int found = 0;
  tether_frame_decoder_init(&d, raw, sizeof raw);
  for (i = 0; i < s_line_pos; ++i) {
    if (tether_frame_decoder_push(&d, s_line[i], &f) && f.header.type == TETHER_MSG_DEVICES) {
      ++found;
      len = f.header.payload_len;
      memcpy(copy, f.payload, len);
    }
  }
  CHECK(found == 1);
  *table = copy;
  return len;
}

static void run_session(const uint8_t* data, size_t size) {
  const uint8_t* table = NULL;
  size_t table_len;
  int handles[TETHER_MAX_OPEN];
  uint16_t sizes[TETHER_MAX_OPEN];
  int opened = 0;
  int rc;
  int steps = 0;
  build_line(data, size);
  s_chunk_hint = size > 0u ? data[0] : 0u;
  tether_frame_decoder_init(&s_out, s_out_raw, sizeof s_out_raw);
  if (tether_init("fuzz", 1u) != TETHER_OK) {
    return;
  }
  table_len = taken_table(&table);
  {
    /* open every device the table names, as firmware would */
    tether_devices_reader_t r;
    tether_device_entry_t e;
    uint16_t count;
    if (tether_devices_reader_init(&r, table, table_len, &count)) {
      while (tether_devices_reader_next(&r, &e) && opened < (int)TETHER_MAX_OPEN) {
        char name[TETHER_MAX_DEVICE_NAME_LEN + 1u];
        memcpy(name, e.name, e.name_len);
        name[e.name_len] = '\0';
        rc = tether_open(name);
        if (rc >= 0) {
          CHECK(rc <= opened);
          if (rc == opened) {
            handles[opened] = rc;
            sizes[opened] = e.payload_size;
            ++opened;
          }
        }
      }
    }
  }
  while ((rc = tether_step_wait()) == TETHER_OK && steps++ < 10000) {
    int i;
    for (i = 0; i < opened; ++i) {
      uint8_t buf[TETHER_MAX_DEVICE_PAYLOAD];
      int got = tether_get(handles[i], buf, sizes[i]);
      if (got == TETHER_E_INVALID_OPERATION) {
        memset(buf, 0x3C, sizes[i]);
        CHECK(tether_set(handles[i], buf, sizes[i]) == TETHER_OK);
      } else {
        CHECK(got == TETHER_OK || got == TETHER_E_NO_DATA);
      }
    }
    (void)tether_log("step");
  }
  CHECK(rc != TETHER_OK || steps > 10000);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0u) {
    return 0;
  }
  if ((data[0] & 1u) == 0u) {
    run_decoder(data + 1, size - 1u, TETHER_RAW_FRAME_SIZE(TETHER_PROTOCOL_MAX_PAYLOAD));
    run_decoder(data + 1, size - 1u, TETHER_RAW_FRAME_SIZE(16u));
    run_cobs(data + 1, size - 1u);
  } else {
    run_session(data + 1, size - 1u);
  }
  return 0;
}
