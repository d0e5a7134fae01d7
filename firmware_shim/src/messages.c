/* SPDX-License-Identifier: Apache-2.0 */
#include "tether/firmware_shim/messages.h"

#include "tether/firmware_shim/payloads.h"

/* ---- small helpers ------------------------------------------------------------------- */

/* room for `n` more bytes at `pos` in a buffer of `cap`, without overflow */
static bool fits(size_t pos, size_t cap, size_t n) { return pos <= cap && n <= cap - pos; }

static bool is_name_char(uint8_t c) { return c >= 0x21u && c <= 0x7Eu; }

static bool is_text_char(uint8_t c) { return c >= 0x20u && c <= 0x7Eu; }

static void copy_bytes(uint8_t* dst, const uint8_t* src, size_t n) {
  size_t i;
  for (i = 0; i < n; ++i) {
    dst[i] = src[i];
  }
}

/* ---- HELLO ------------------------------------------------------------------------------ */

bool tether_hello_encode(const tether_hello_t* msg, uint8_t* out, size_t cap, size_t* out_len) {
  size_t name_len = 0;
  size_t i;
  *out_len = 0;
  while (name_len <= TETHER_MAX_FIRMWARE_NAME_LEN && msg->name[name_len] != '\0') {
    if (!is_text_char((uint8_t)msg->name[name_len])) {
      return false;
    }
    ++name_len;
  }
  if (name_len == 0u || name_len > TETHER_MAX_FIRMWARE_NAME_LEN || !fits(0u, cap, TETHER_HELLO_FIXED_SIZE + name_len)) {
    return false;
  }
  out[0] = msg->protocol_version;
  tether_put_u16le(out + 1, msg->max_payload);
  tether_put_u32le(out + 3, msg->build_id);
  out[7] = (uint8_t)name_len;
  for (i = 0; i < name_len; ++i) {
    out[TETHER_HELLO_FIXED_SIZE + i] = (uint8_t)msg->name[i];
  }
  *out_len = TETHER_HELLO_FIXED_SIZE + name_len;
  return true;
}

bool tether_hello_decode(const uint8_t* payload, size_t len, tether_hello_t* msg) {
  size_t name_len;
  size_t i;
  if (len < TETHER_HELLO_FIXED_SIZE) {
    return false;
  }
  name_len = payload[7];
  if (name_len == 0u || name_len > TETHER_MAX_FIRMWARE_NAME_LEN || len != TETHER_HELLO_FIXED_SIZE + name_len) {
    return false;
  }
  for (i = 0; i < name_len; ++i) {
    uint8_t c = payload[TETHER_HELLO_FIXED_SIZE + i];
    if (!is_text_char(c)) {
      return false;
    }
    msg->name[i] = (char)c;
  }
  msg->name[name_len] = '\0';
  msg->protocol_version = payload[0];
  msg->max_payload = tether_get_u16le(payload + 1);
  msg->build_id = tether_get_u32le(payload + 3);
  return true;
}

/* ---- DEVICES ---------------------------------------------------------------------------- */

static bool entry_is_valid(const tether_device_entry_t* e) {
  size_t i;
  if (e->kind == 0u || (e->direction != TETHER_DIRECTION_SENSOR && e->direction != TETHER_DIRECTION_ACTUATOR) ||
      e->payload_size == 0u || e->payload_size > TETHER_MAX_DEVICE_PAYLOAD || e->name_len == 0u ||
      e->name_len > TETHER_MAX_DEVICE_NAME_LEN || e->name == NULL) {
    return false;
  }
  for (i = 0; i < e->name_len; ++i) {
    if (!is_name_char((uint8_t)e->name[i])) {
      return false;
    }
  }
  return true;
}

void tether_devices_writer_init(tether_devices_writer_t* writer, uint8_t* out, size_t cap) {
  writer->out = out;
  writer->cap = cap;
  writer->count = 0u;
  writer->ok = fits(0u, cap, TETHER_DEVICES_FIXED_SIZE) && out != NULL;
  writer->len = TETHER_DEVICES_FIXED_SIZE;
}

void tether_devices_writer_add(tether_devices_writer_t* writer, const tether_device_entry_t* entry) {
  tether_devices_writer_t* w = writer;
  uint8_t* p;
  if (!w->ok) {
    return;
  }
  if (!entry_is_valid(entry) || w->count == 0xFFFFu ||
      !fits(w->len, w->cap, TETHER_DEVICE_ENTRY_FIXED_SIZE + (size_t)entry->name_len)) {
    w->ok = false;
    return;
  }
  p = w->out + w->len;
  tether_put_u16le(p, entry->index);
  p[2] = entry->kind;
  p[3] = entry->direction;
  tether_put_u16le(p + 4, entry->payload_size);
  p[6] = entry->name_len;
  copy_bytes(p + TETHER_DEVICE_ENTRY_FIXED_SIZE, (const uint8_t*)entry->name, entry->name_len);
  w->len += TETHER_DEVICE_ENTRY_FIXED_SIZE + (size_t)entry->name_len;
  ++w->count;
}

bool tether_devices_writer_finish(tether_devices_writer_t* writer, size_t* out_len) {
  *out_len = 0;
  if (!writer->ok) {
    return false;
  }
  tether_put_u16le(writer->out, writer->count);
  *out_len = writer->len;
  return true;
}

/* reads the entry at `pos`; false if it is cut off or invalid */
static bool read_entry(const uint8_t* payload, size_t len, size_t pos, tether_device_entry_t* e, size_t* next) {
  const uint8_t* p;
  if (!fits(pos, len, TETHER_DEVICE_ENTRY_FIXED_SIZE)) {
    return false;
  }
  p = payload + pos;
  e->index = tether_get_u16le(p);
  e->kind = p[2];
  e->direction = p[3];
  e->payload_size = tether_get_u16le(p + 4);
  e->name_len = p[6];
  e->name = (const char*)(p + TETHER_DEVICE_ENTRY_FIXED_SIZE);
  if (!fits(pos + TETHER_DEVICE_ENTRY_FIXED_SIZE, len, e->name_len) || !entry_is_valid(e)) {
    return false;
  }
  *next = pos + TETHER_DEVICE_ENTRY_FIXED_SIZE + e->name_len;
  return true;
}

bool tether_devices_reader_init(tether_devices_reader_t* reader, const uint8_t* payload, size_t len, uint16_t* count) {
  uint16_t n;
  uint16_t i;
  size_t pos = TETHER_DEVICES_FIXED_SIZE;
  *count = 0u;
  if (payload == NULL || len < TETHER_DEVICES_FIXED_SIZE) {
    return false;
  }
  n = tether_get_u16le(payload);
  for (i = 0; i < n; ++i) {
    tether_device_entry_t e;
    size_t next;
    size_t other = TETHER_DEVICES_FIXED_SIZE;
    uint16_t j;
    if (!read_entry(payload, len, pos, &e, &next)) {
      return false;
    }
    /* indices are unique: READY refers to them; the table is small */
    for (j = 0; j < i; ++j) {
      tether_device_entry_t o;
      size_t after;
      if (!read_entry(payload, len, other, &o, &after) || o.index == e.index) {
        return false;
      }
      other = after;
    }
    pos = next;
  }
  if (pos != len) {
    return false;
  }
  reader->payload = payload;
  reader->len = len;
  reader->pos = TETHER_DEVICES_FIXED_SIZE;
  reader->left = n;
  *count = n;
  return true;
}

bool tether_devices_reader_next(tether_devices_reader_t* reader, tether_device_entry_t* entry) {
  size_t next;
  if (reader->left == 0u || !read_entry(reader->payload, reader->len, reader->pos, entry, &next)) {
    return false;
  }
  reader->pos = next;
  --reader->left;
  return true;
}

/* ---- READY ------------------------------------------------------------------------------ */

bool tether_ready_encode(const uint16_t* indices, uint8_t count, uint8_t* out, size_t cap, size_t* out_len) {
  size_t n = TETHER_READY_FIXED_SIZE + 2u * (size_t)count;
  uint8_t i;
  *out_len = 0;
  if (count > TETHER_MAX_SLOTS || (count != 0u && indices == NULL) || !fits(0u, cap, n)) {
    return false;
  }
  for (i = 0; i < count; ++i) {
    uint8_t j;
    for (j = 0; j < i; ++j) {
      if (indices[j] == indices[i]) {
        return false;
      }
    }
  }
  out[0] = count;
  for (i = 0; i < count; ++i) {
    tether_put_u16le(out + TETHER_READY_FIXED_SIZE + 2u * (size_t)i, indices[i]);
  }
  *out_len = n;
  return true;
}

bool tether_ready_decode(const uint8_t* payload, size_t len, uint16_t* indices, uint8_t max, uint8_t* count) {
  uint8_t n;
  uint8_t i;
  *count = 0u;
  if (len < TETHER_READY_FIXED_SIZE) {
    return false;
  }
  n = payload[0];
  if (n > TETHER_MAX_SLOTS || n > max || len != TETHER_READY_FIXED_SIZE + 2u * (size_t)n) {
    return false;
  }
  for (i = 0; i < n; ++i) {
    uint8_t j;
    indices[i] = tether_get_u16le(payload + TETHER_READY_FIXED_SIZE + 2u * (size_t)i);
    for (j = 0; j < i; ++j) {
      if (indices[j] == indices[i]) {
        return false;
      }
    }
  }
  *count = n;
  return true;
}

/* ---- SENSORS / ACTUATE ------------------------------------------------------------------ */

static void items_writer_init(tether_items_writer_t* w, uint8_t* out, size_t cap, size_t fixed, bool no_data) {
  w->out = out;
  w->cap = cap;
  w->len = fixed;
  w->last_slot = -1;
  w->allow_no_data = no_data;
  w->ok = out != NULL && fits(0u, cap, fixed);
}

void tether_sensors_writer_init(tether_items_writer_t* writer, uint8_t* out, size_t cap, uint64_t sim_time_us) {
  items_writer_init(writer, out, cap, TETHER_SENSORS_FIXED_SIZE, true);
  if (writer->ok) {
    tether_put_u64le(out, sim_time_us);
  }
}

void tether_actuate_writer_init(tether_items_writer_t* writer, uint8_t* out, size_t cap) {
  items_writer_init(writer, out, cap, TETHER_ACTUATE_FIXED_SIZE, false);
}

/* slot byte first; false (and the writer fails) if out of order or full */
static bool items_writer_slot(tether_items_writer_t* w, uint8_t slot, uint8_t flags, size_t data_len) {
  if (!w->ok || slot >= TETHER_MAX_SLOTS || (int16_t)slot <= w->last_slot || !fits(w->len, w->cap, 1u + data_len)) {
    w->ok = false;
    return false;
  }
  w->out[w->len++] = (uint8_t)(slot | flags);
  w->last_slot = (int16_t)slot;
  return true;
}

void tether_items_writer_add(tether_items_writer_t* writer, uint8_t slot, const uint8_t* data, uint16_t size) {
  if (writer->ok && (size == 0u || data == NULL)) {
    writer->ok = false;
  }
  if (!items_writer_slot(writer, slot, 0u, size)) {
    return;
  }
  copy_bytes(writer->out + writer->len, data, size);
  writer->len += size;
}

void tether_items_writer_add_no_data(tether_items_writer_t* writer, uint8_t slot) {
  if (!writer->allow_no_data) {
    writer->ok = false;
    return;
  }
  (void)items_writer_slot(writer, slot, (uint8_t)TETHER_SLOT_FLAG_NO_DATA, 0u);
}

bool tether_items_writer_finish(tether_items_writer_t* writer, size_t* out_len) {
  *out_len = writer->ok ? writer->len : 0u;
  return writer->ok;
}

static void items_reader_init(tether_items_reader_t* r, const uint8_t* payload, size_t len, const tether_slot_t* slots,
                              uint8_t slot_count, size_t fixed, uint8_t direction, bool no_data) {
  r->payload = payload;
  r->len = len;
  r->pos = fixed;
  r->slots = slots;
  r->slot_count = slot_count;
  r->direction = direction;
  r->allow_no_data = no_data;
  r->last_slot = -1;
}

bool tether_sensors_reader_init(tether_items_reader_t* reader, const uint8_t* payload, size_t len,
                                const tether_slot_t* slots, uint8_t slot_count, uint64_t* sim_time_us) {
  *sim_time_us = 0u;
  if (payload == NULL || len < TETHER_SENSORS_FIXED_SIZE || (slots == NULL && slot_count != 0u)) {
    return false;
  }
  items_reader_init(reader, payload, len, slots, slot_count, TETHER_SENSORS_FIXED_SIZE, TETHER_DIRECTION_SENSOR, true);
  *sim_time_us = tether_get_u64le(payload);
  return true;
}

bool tether_actuate_reader_init(tether_items_reader_t* reader, const uint8_t* payload, size_t len,
                                const tether_slot_t* slots, uint8_t slot_count) {
  if ((payload == NULL && len != 0u) || (slots == NULL && slot_count != 0u)) {
    return false;
  }
  items_reader_init(reader, payload, len, slots, slot_count, TETHER_ACTUATE_FIXED_SIZE, TETHER_DIRECTION_ACTUATOR,
                    false);
  return true;
}

int tether_items_reader_next(tether_items_reader_t* reader, tether_item_t* item) {
  tether_items_reader_t* r = reader;
  uint8_t byte;
  uint8_t slot;
  const tether_slot_t* s;
  if (r->pos >= r->len) {
    return 0;
  }
  byte = r->payload[r->pos];
  slot = (uint8_t)(byte & TETHER_SLOT_MASK);
  if (slot >= r->slot_count || (int16_t)slot <= r->last_slot) {
    return -1;
  }
  s = &r->slots[slot];
  if (s->direction != r->direction || s->size == 0u) {
    return -1;
  }
  item->slot = slot;
  if ((byte & TETHER_SLOT_FLAG_NO_DATA) != 0u) {
    if (!r->allow_no_data) {
      return -1;
    }
    item->no_data = true;
    item->data = NULL;
    item->size = 0u;
    r->pos += 1u;
  } else {
    if (!fits(r->pos + 1u, r->len, s->size)) {
      return -1;
    }
    item->no_data = false;
    item->data = r->payload + r->pos + 1u;
    item->size = s->size;
    r->pos += 1u + (size_t)s->size;
  }
  r->last_slot = (int16_t)slot;
  return 1;
}

bool tether_items_reader_validate(const tether_items_reader_t* reader) {
  tether_items_reader_t copy = *reader;
  tether_item_t item;
  int rc;
  while ((rc = tether_items_reader_next(&copy, &item)) == 1) {
  }
  return rc == 0;
}

/* ---- LOG ---------------------------------------------------------------------------------- */

bool tether_log_encode(uint8_t level, const char* text, size_t text_len, uint8_t* out, size_t cap, size_t* out_len) {
  *out_len = 0;
  if (level > TETHER_LOG_ERROR || text_len > TETHER_MAX_LOG_TEXT || (text == NULL && text_len != 0u) ||
      !fits(0u, cap, TETHER_LOG_FIXED_SIZE + text_len)) {
    return false;
  }
  out[0] = level;
  copy_bytes(out + TETHER_LOG_FIXED_SIZE, (const uint8_t*)text, text_len);
  *out_len = TETHER_LOG_FIXED_SIZE + text_len;
  return true;
}

bool tether_log_decode(const uint8_t* payload, size_t len, uint8_t* level, const char** text, size_t* text_len) {
  if (len < TETHER_LOG_FIXED_SIZE || len > TETHER_LOG_FIXED_SIZE + TETHER_MAX_LOG_TEXT ||
      payload[0] > TETHER_LOG_ERROR) {
    return false;
  }
  *level = payload[0];
  *text = (const char*)(payload + TETHER_LOG_FIXED_SIZE);
  *text_len = len - TETHER_LOG_FIXED_SIZE;
  return true;
}

/* ---- ERROR -------------------------------------------------------------------------------- */

bool tether_error_encode(const tether_error_t* msg, uint8_t* out, size_t cap, size_t* out_len) {
  *out_len = 0;
  if (msg->code == 0u || msg->text_len > TETHER_MAX_ERROR_TEXT || (msg->text == NULL && msg->text_len != 0u) ||
      !fits(0u, cap, TETHER_ERROR_FIXED_SIZE + msg->text_len)) {
    return false;
  }
  out[0] = msg->code;
  tether_put_u16le(out + 1, msg->value);
  copy_bytes(out + TETHER_ERROR_FIXED_SIZE, (const uint8_t*)msg->text, msg->text_len);
  *out_len = TETHER_ERROR_FIXED_SIZE + msg->text_len;
  return true;
}

bool tether_error_decode(const uint8_t* payload, size_t len, tether_error_t* msg) {
  if (len < TETHER_ERROR_FIXED_SIZE || len > TETHER_ERROR_FIXED_SIZE + TETHER_MAX_ERROR_TEXT || payload[0] == 0u) {
    return false;
  }
  msg->code = payload[0];
  msg->value = tether_get_u16le(payload + 1);
  msg->text = (const char*)(payload + TETHER_ERROR_FIXED_SIZE);
  msg->text_len = len - TETHER_ERROR_FIXED_SIZE;
  return true;
}
