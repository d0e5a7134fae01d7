/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Wall follower: keeps a wall on the right at WALL_DISTANCE_M, in the manner of
 * SubSim's PSD wall-following AUV.
 *
 * Vehicle "auv", part "hull":
 *   auv.hull.psd_front   RANGE, looking forward
 *   auv.hull.psd_right   RANGE, looking to starboard (90 degrees right)
 *   auv.hull.thruster_left / _right   horizontal thrusters pointing forward;
 *                                     left > right turns the vehicle to starboard
 *
 * Each step: if the front beam sees a wall closer than FRONT_TURN_M, turn to
 * port on the spot (the wall ahead becomes the new right-hand wall); otherwise
 * drive at CRUISE_COMMAND and steer with a PD loop on the right distance. A
 * right beam without a hit means the wall is lost: it counts as max range, so
 * the vehicle curves right until it finds the wall again.
 *
 * Only tether/firmware_shim/tether.h is used (see depth_heading_hold.c), and the PSD
 * reading of psd_reading.h.
 */
#include "tether/firmware_shim/tether.h"

#include "psd_reading.h"

#define WALL_DISTANCE_M 1.0f
#define FRONT_TURN_M 1.6f
#define LOST_RANGE_M 4.0f
#define CRUISE_COMMAND 0.4f
#define TURN_COMMAND 0.35f
#define STEER_KP 0.1f
#define STEER_KD 2.0f
#define STEER_LIMIT 0.2f
#define LOG_EVERY_US 5000000u
#define BUILD_ID 0x00010001u

static float clamp(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

static void set_thruster(int handle, float command) {
  uint8_t raw[TETHER_THRUSTER_SIZE];
  tether_put_f32le(raw + TETHER_THRUSTER_OFFSET_COMMAND, clamp(command, -1.0f, 1.0f));
  (void)tether_set(handle, raw, sizeof raw);
}

int main(void) {
  int front, right_psd, left, right;
  float front_m = LOST_RANGE_M, right_m = LOST_RANGE_M;
  float last_error = 0.0f;
  uint64_t last_us = 0u;
  uint64_t logged_us = 0u;
  int turning = 0;
  int rc = tether_init("wall_follow", BUILD_ID);
  if (rc != TETHER_OK) {
    return 1;
  }
  front = tether_open("auv.hull.psd_front");
  right_psd = tether_open("auv.hull.psd_right");
  left = tether_open("auv.hull.thruster_left");
  right = tether_open("auv.hull.thruster_right");
  if (front < 0 || right_psd < 0 || left < 0 || right < 0) {
    (void)tether_log_level(TETHER_LOG_ERROR, "wall_follow: a device is missing from the device table");
    return 2;
  }

  while ((rc = tether_step_wait()) == TETHER_OK) {
    uint64_t now_us = tether_time_us();
    float dt_s = last_us == 0u ? 0.0f : (float)(now_us - last_us) * 1e-6f;
    int fresh_front, fresh_right;
    last_us = now_us;
    front_m = psd_distance(front, front_m, LOST_RANGE_M, &fresh_front);
    right_m = psd_distance(right_psd, right_m, LOST_RANGE_M, &fresh_right);

    if (front_m < FRONT_TURN_M) {
      if (!turning && (logged_us == 0u || now_us - logged_us >= LOG_EVERY_US)) {
        (void)tether_log("wall_follow: wall ahead, turning to port");
        logged_us = now_us;
      }
      turning = 1;
      set_thruster(left, -TURN_COMMAND);
      set_thruster(right, TURN_COMMAND);
      continue;
    }
    turning = 0;
    {
      /* too far from the right wall (error > 0): steer to starboard */
      float error = clamp(right_m, 0.0f, LOST_RANGE_M) - WALL_DISTANCE_M;
      float rate = dt_s > 0.0f && fresh_right ? (error - last_error) / dt_s : 0.0f;
      float steer = clamp(STEER_KP * error + STEER_KD * rate, -STEER_LIMIT, STEER_LIMIT);
      last_error = error;
      set_thruster(left, CRUISE_COMMAND + steer);
      set_thruster(right, CRUISE_COMMAND - steer);
    }
  }
  return rc == TETHER_E_STOPPED ? 0 : 3;
}
