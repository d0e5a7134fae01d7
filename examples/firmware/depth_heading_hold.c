/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Depth and heading hold: the template for firmware that runs in the loop.
 *
 * Vehicle "auv", part "hull", four thrusters:
 *
 *            bow
 *       [thruster_vfront]         vertical, + pushes the bow down (deeper)
 *   [thruster_left] [thruster_right]   horizontal, pointing forward,
 *       [thruster_vrear]          vertical, + pushes the stern down
 *           stern
 *
 *   auv.hull.thruster_left / _right    + pushes the vehicle forward; left > right turns it
 *                                      to starboard (heading increases)
 *   auv.hull.thruster_vfront / _vrear  + pushes the vehicle down (depth increases)
 *
 * Sensors: auv.hull.depth (metres below the surface) and auv.hull.compass
 * (heading in radians, 0 = north, clockwise). Two PID loops: depth -> both
 * vertical thrusters, heading -> the difference of the horizontal ones, on top
 * of a constant cruise command. Targets are the #defines below.
 *
 * Only tether/firmware_shim/tether.h is used: the same file builds for the host
 * (a pseudo-terminal), for Cortex-M3 under QEMU and for AVR
 * (scripts/build_firmware.sh).
 */
#include "tether/firmware_shim/tether.h"

#define TARGET_DEPTH_M 2.0f
#define TARGET_HEADING_RAD 1.5707964f /* east */
#define CRUISE_COMMAND 0.3f

#define DEPTH_KP 0.9f
#define DEPTH_KI 0.08f
#define DEPTH_KD 1.6f
#define HEADING_KP 0.8f
#define HEADING_KI 0.02f
#define HEADING_KD 0.9f
#define INTEGRAL_LIMIT 2.0f
#define DEPTH_REACHED_M 0.1f

#define PI_F 3.14159265f
#define BUILD_ID 0x00010001u

typedef struct {
  float kp, ki, kd;
  float integral;
  float last_error;
  int primed; /* last_error is valid */
} controller_t;

static float clamp(float v, float lo, float hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

/* one PID update; dt_s > 0 */
static float pid_update(controller_t* pid, float error, float dt_s) {
  float derivative = pid->primed ? (error - pid->last_error) / dt_s : 0.0f;
  pid->integral = clamp(pid->integral + error * dt_s, -INTEGRAL_LIMIT, INTEGRAL_LIMIT);
  pid->last_error = error;
  pid->primed = 1;
  return pid->kp * error + pid->ki * pid->integral + pid->kd * derivative;
}

/* heading error in (-pi, pi]: the short way round */
static float wrap_angle(float a) {
  while (a > PI_F) {
    a -= 2.0f * PI_F;
  }
  while (a <= -PI_F) {
    a += 2.0f * PI_F;
  }
  return a;
}

static void set_thruster(int handle, float command) {
  uint8_t raw[TETHER_THRUSTER_SIZE];
  tether_put_f32le(raw + TETHER_THRUSTER_OFFSET_COMMAND, clamp(command, -1.0f, 1.0f));
  (void)tether_set(handle, raw, sizeof raw);
}

int main(void) {
  int depth, compass, left, right, vfront, vrear;
  controller_t depth_pid = {DEPTH_KP, DEPTH_KI, DEPTH_KD, 0.0f, 0.0f, 0};
  controller_t heading_pid = {HEADING_KP, HEADING_KI, HEADING_KD, 0.0f, 0.0f, 0};
  float vertical = 0.0f, turn = 0.0f;
  uint64_t last_us = 0u;
  int reached = 0;
  int rc = tether_init("depth_heading_hold", BUILD_ID);
  if (rc != TETHER_OK) {
    return 1; /* the shim already told a human why (tether_port_diag) */
  }

  depth = tether_open("auv.hull.depth");
  compass = tether_open("auv.hull.compass");
  left = tether_open("auv.hull.thruster_left");
  right = tether_open("auv.hull.thruster_right");
  vfront = tether_open("auv.hull.thruster_vfront");
  vrear = tether_open("auv.hull.thruster_vrear");
  if (depth < 0 || compass < 0 || left < 0 || right < 0 || vfront < 0 || vrear < 0) {
    (void)tether_log_level(TETHER_LOG_ERROR, "depth_heading_hold: a device is missing from the device table");
    return 2;
  }

  while ((rc = tether_step_wait()) == TETHER_OK) {
    uint8_t raw[TETHER_DEPTH_SIZE];
    uint64_t now_us = tether_time_us();
    float dt_s = (float)(now_us - last_us) * 1e-6f;
    if (last_us == 0u || dt_s <= 0.0f) {
      dt_s = 0.0f; /* first step: no rate yet */
    }
    last_us = now_us;

    /* a sensor without a reading this step keeps its axis' last command */
    if (dt_s > 0.0f && tether_get(depth, raw, TETHER_DEPTH_SIZE) == TETHER_OK) {
      float depth_m = tether_get_f32le(raw + TETHER_DEPTH_OFFSET_DEPTH_M);
      vertical = pid_update(&depth_pid, TARGET_DEPTH_M - depth_m, dt_s);
      if (!reached && depth_m > TARGET_DEPTH_M - DEPTH_REACHED_M && depth_m < TARGET_DEPTH_M + DEPTH_REACHED_M) {
        reached = 1;
        (void)tether_log("depth_heading_hold: target depth reached");
      }
    }
    if (dt_s > 0.0f && tether_get(compass, raw, TETHER_COMPASS_SIZE) == TETHER_OK) {
      float heading = tether_get_f32le(raw + TETHER_COMPASS_OFFSET_HEADING_RAD);
      turn = pid_update(&heading_pid, wrap_angle(TARGET_HEADING_RAD - heading), dt_s);
    }

    turn = clamp(turn, -0.5f, 0.5f);
    set_thruster(left, CRUISE_COMMAND + turn);
    set_thruster(right, CRUISE_COMMAND - turn);
    set_thruster(vfront, vertical);
    set_thruster(vrear, vertical);
  }
  /* TETHER_E_STOPPED: the runtime ended the session normally */
  return rc == TETHER_E_STOPPED ? 0 : 3;
}
