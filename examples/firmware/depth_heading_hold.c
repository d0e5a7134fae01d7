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
 * of a constant cruise command. The law and its targets are in depth_heading_law.h.
 *
 * Only tether/firmware_shim/tether.h is used: the same file builds for the host
 * (a pseudo-terminal), for Cortex-M3 under QEMU and for AVR
 * (scripts/build_firmware.sh).
 */
#include "tether/firmware_shim/tether.h"

#include "depth_heading_law.h"

#define BUILD_ID 0x00010001u

static void set_thruster(int handle, float command) {
  uint8_t raw[TETHER_THRUSTER_SIZE];
  tether_put_f32le(raw + TETHER_THRUSTER_OFFSET_COMMAND, command);
  (void)tether_set(handle, raw, sizeof raw);
}

int main(void) {
  int depth, compass, left, right, vfront, vrear;
  dhh_state_t law;
  int rc = tether_init("depth_heading_hold", BUILD_ID);
  if (rc != TETHER_OK) {
    return 1; /* the shim already told a human why (tether_port_diag) */
  }
  dhh_init(&law);

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
    uint8_t raw_depth[TETHER_DEPTH_SIZE];
    uint8_t raw_compass[TETHER_COMPASS_SIZE];
    int has_depth = tether_get(depth, raw_depth, TETHER_DEPTH_SIZE) == TETHER_OK;
    int has_heading = tether_get(compass, raw_compass, TETHER_COMPASS_SIZE) == TETHER_OK;
    dhh_commands_t cmd;
    if (dhh_step(&law, tether_time_us(), has_depth,
                 has_depth ? tether_get_f32le(raw_depth + TETHER_DEPTH_OFFSET_DEPTH_M) : 0.0f, has_heading,
                 has_heading ? tether_get_f32le(raw_compass + TETHER_COMPASS_OFFSET_HEADING_RAD) : 0.0f, &cmd)) {
      (void)tether_log("depth_heading_hold: target depth reached");
    }
    set_thruster(left, cmd.left);
    set_thruster(right, cmd.right);
    set_thruster(vfront, cmd.vfront);
    set_thruster(vrear, cmd.vrear);
  }
  /* TETHER_E_STOPPED: the runtime ended the session normally */
  return rc == TETHER_E_STOPPED ? 0 : 3;
}
