/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Wall follower for a differential-drive rover: keeps a wall on the right at
 * WALL_DISTANCE_M, steering by the speed difference of its two driven wheels
 * (config/scenarios/rover_wall_follow.yaml). The same law as wall_follow.c (the
 * AUV), but the actuators are DC motors on the wheels' axles, so the firmware
 * also closes each wheel's speed loop on its encoder, as a rover's motor
 * controller would.
 *
 * Vehicle "rover", part "chassis":
 *   rover.chassis.psd_front      RANGE, looking forward
 *   rover.chassis.psd_right      RANGE, looking to the right (90 degrees)
 *   rover.chassis.odometer_left / _right   ENCODER on each wheel's axle: angle
 *                                and rate (rad/s, positive rolling forward)
 *   rover.chassis.motor_left / _right      DC_MOTOR armature voltage; positive
 *                                drives the wheel forward
 *
 * Each step: the wall law gives each wheel a target speed (forward at
 * CRUISE_RAD_S, steered by a PD loop on the right distance; turning on the spot
 * to the left when a wall is ahead, until the way ahead is clear); each wheel's voltage is a feed-forward of
 * the motor's back-EMF at the target speed plus a proportional term on the
 * speed error from its encoder. A missing encoder reading keeps the last one.
 *
 * Only tether/firmware_shim/tether.h is used (see depth_heading_hold.c), and the PSD
 * reading of psd_reading.h.
 */
#include "tether/firmware_shim/tether.h"

#include "psd_reading.h"

#define WALL_DISTANCE_M 0.8f
#define FRONT_TURN_M 1.0f   /* a wall this close ahead: turn left on the spot ... */
#define FRONT_CLEAR_M 2.5f  /* ... until the way ahead is this clear (the next wall is to the right) */
#define LOST_RANGE_M 3.0f
#define CRUISE_RAD_S 5.0f    /* 0.5 m/s on 10 cm wheels */
#define TURN_RAD_S 3.0f      /* each wheel, opposite ways, when turning on the spot */
#define STEER_KP 2.0f        /* rad/s of wheel-speed difference per metre of error */
#define STEER_KD 8.0f        /* per m/s */
#define STEER_LIMIT 2.0f     /* rad/s */
#define MOTOR_KE 0.05f       /* V s/rad: the motors' back-EMF constant (the scenario's ke) */
#define SPEED_KP 4.0f        /* V per rad/s of speed error */
#define SUPPLY_V 12.0f
#define LOG_EVERY_US 5000000u
#define BUILD_ID 0x00010001u

static float clamp(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* a wheel's speed from its encoder (the last one if none came this step) */
static float wheel_rate(int handle, float last) {
  uint8_t raw[TETHER_ENCODER_SIZE];
  if (tether_get(handle, raw, sizeof raw) != TETHER_OK) {
    return last;
  }
  return tether_get_f32le(raw + TETHER_ENCODER_OFFSET_RATE);
}

/* the wheel's speed loop: back-EMF feed-forward plus a proportional correction */
static void drive(int motor, float target_rad_s, float rate_rad_s) {
  uint8_t raw[TETHER_DC_MOTOR_SIZE];
  float volts = MOTOR_KE * target_rad_s + SPEED_KP * (target_rad_s - rate_rad_s);
  tether_put_f32le(raw + TETHER_DC_MOTOR_OFFSET_VOLTAGE_V, clamp(volts, -SUPPLY_V, SUPPLY_V));
  (void)tether_set(motor, raw, sizeof raw);
}

int main(void) {
  int front, right_psd, odo_left, odo_right, motor_left, motor_right;
  float front_m = LOST_RANGE_M, right_m = LOST_RANGE_M;
  float rate_left = 0.0f, rate_right = 0.0f;
  float last_error = 0.0f;
  uint64_t last_us = 0u;
  uint64_t logged_us = 0u;
  int turning = 0;
  int rc = tether_init("rover_wall_follow", BUILD_ID);
  if (rc != TETHER_OK) {
    return 1;
  }
  front = tether_open("rover.chassis.psd_front");
  right_psd = tether_open("rover.chassis.psd_right");
  odo_left = tether_open("rover.chassis.odometer_left");
  odo_right = tether_open("rover.chassis.odometer_right");
  motor_left = tether_open("rover.chassis.motor_left");
  motor_right = tether_open("rover.chassis.motor_right");
  if (front < 0 || right_psd < 0 || odo_left < 0 || odo_right < 0 || motor_left < 0 || motor_right < 0) {
    (void)tether_log_level(TETHER_LOG_ERROR, "rover_wall_follow: a device is missing from the device table");
    return 2;
  }

  while ((rc = tether_step_wait()) == TETHER_OK) {
    uint64_t now_us = tether_time_us();
    float dt_s = last_us == 0u ? 0.0f : (float)(now_us - last_us) * 1e-6f;
    float target_left, target_right;
    int fresh_front, fresh_right;
    last_us = now_us;
    front_m = psd_distance(front, front_m, LOST_RANGE_M, &fresh_front);
    right_m = psd_distance(right_psd, right_m, LOST_RANGE_M, &fresh_right);
    rate_left = wheel_rate(odo_left, rate_left);
    rate_right = wheel_rate(odo_right, rate_right);

    if (front_m < FRONT_TURN_M || (turning && front_m < FRONT_CLEAR_M)) {
      if (!turning && (logged_us == 0u || now_us - logged_us >= LOG_EVERY_US)) {
        (void)tether_log("rover_wall_follow: wall ahead, turning left");
        logged_us = now_us;
      }
      turning = 1;
      target_left = -TURN_RAD_S;
      target_right = TURN_RAD_S;
    } else {
      /* too far from the right wall (error > 0): steer right (left wheel faster) */
      float error = clamp(right_m, 0.0f, LOST_RANGE_M) - WALL_DISTANCE_M;
      float rate = dt_s > 0.0f && fresh_right && !turning ? (error - last_error) / dt_s : 0.0f;
      float steer = clamp(STEER_KP * error + STEER_KD * rate, -STEER_LIMIT, STEER_LIMIT);
      turning = 0;
      last_error = error;
      target_left = CRUISE_RAD_S + steer;
      target_right = CRUISE_RAD_S - steer;
    }
    drive(motor_left, target_left, rate_left);
    drive(motor_right, target_right, rate_right);
  }
  return rc == TETHER_E_STOPPED ? 0 : 3;
}
