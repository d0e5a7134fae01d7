/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A PSD range finder's distance, as the example wall followers read it (wall_follow.c,
 * rover_wall_follow.c). Header-only C99; only tether/firmware_shim/tether.h is used.
 */
#ifndef TETHER_EXAMPLES_PSD_READING_H
#define TETHER_EXAMPLES_PSD_READING_H

#include "tether/firmware_shim/tether.h"

/* the distance the PSD `handle` saw this step, `lost_m` when its beam hit nothing; `last` and
 * `*fresh` = 0 when it gave no reading this step */
static inline float psd_distance(int handle, float last, float lost_m, int* fresh) {
  uint8_t raw[TETHER_RANGE_SIZE];
  if (tether_get(handle, raw, sizeof raw) != TETHER_OK) {
    *fresh = 0;
    return last;
  }
  *fresh = 1;
  if ((raw[TETHER_RANGE_OFFSET_FLAGS] & TETHER_RANGE_FLAG_HIT) == 0u) {
    return lost_m;
  }
  return tether_get_f32le(raw + TETHER_RANGE_OFFSET_DISTANCE_M);
}

#endif /* TETHER_EXAMPLES_PSD_READING_H */
