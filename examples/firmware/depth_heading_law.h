/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control law of depth_heading_hold, header-only C99 that also compiles as C++.
 *
 * The firmware (depth_heading_hold.c) and the runtime's in-process controller
 * `depth_heading_hold` both run exactly this code, so the same sensor readings give
 * bit-identical thruster commands whether the law runs on a board, in QEMU, on the host
 * over a pty, or inside the runtime (tests compare the trajectories).
 */
#ifndef TETHER_EXAMPLES_DEPTH_HEADING_LAW_H
#define TETHER_EXAMPLES_DEPTH_HEADING_LAW_H

#include <stdint.h>

#define DHH_TARGET_DEPTH_M 2.0f
#define DHH_TARGET_HEADING_RAD 1.5707964f /* east */
#define DHH_CRUISE_COMMAND 0.3f

/*
 * The gains; each may be overridden at build time (-DDHH_DEPTH_KP=1.2f) to make a variant
 * firmware, e.g. for `tether replay --firmware` regression reports (tests/CMakeLists.txt
 * builds one). The runtime's in-process controller always uses these defaults.
 */
#ifndef DHH_DEPTH_KP
#define DHH_DEPTH_KP 0.9f
#endif
#ifndef DHH_DEPTH_KI
#define DHH_DEPTH_KI 0.08f
#endif
#ifndef DHH_DEPTH_KD
#define DHH_DEPTH_KD 1.6f
#endif
#ifndef DHH_HEADING_KP
#define DHH_HEADING_KP 0.8f
#endif
#ifndef DHH_HEADING_KI
#define DHH_HEADING_KI 0.02f
#endif
#ifndef DHH_HEADING_KD
#define DHH_HEADING_KD 0.9f
#endif
#define DHH_INTEGRAL_LIMIT 2.0f
#define DHH_DEPTH_REACHED_M 0.1f
#define DHH_PI_F 3.14159265f

typedef struct {
  float kp, ki, kd;
  float integral;
  float last_error;
  int primed; /* last_error is valid */
} dhh_pid_t;

typedef struct {
  dhh_pid_t depth_pid;
  dhh_pid_t heading_pid;
  float vertical;
  float turn;
  uint64_t last_us;
  int reached;
  /* the targets: DHH_TARGET_* after dhh_init; an in-process run may change them (an
     identification plan's manoeuvres, docs/feedback.md) */
  float target_depth_m;
  float target_heading_rad;
  float cruise;
} dhh_state_t;

/* the four thruster commands of one step, each in [-1, 1] */
typedef struct {
  float left, right, vfront, vrear;
} dhh_commands_t;

static inline float dhh_clamp(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

static inline void dhh_init(dhh_state_t* s) {
  dhh_pid_t depth = {DHH_DEPTH_KP, DHH_DEPTH_KI, DHH_DEPTH_KD, 0.0f, 0.0f, 0};
  dhh_pid_t heading = {DHH_HEADING_KP, DHH_HEADING_KI, DHH_HEADING_KD, 0.0f, 0.0f, 0};
  s->depth_pid = depth;
  s->heading_pid = heading;
  s->vertical = 0.0f;
  s->turn = 0.0f;
  s->last_us = 0u;
  s->reached = 0;
  s->target_depth_m = DHH_TARGET_DEPTH_M;
  s->target_heading_rad = DHH_TARGET_HEADING_RAD;
  s->cruise = DHH_CRUISE_COMMAND;
}

/* one PID update; dt_s > 0 */
static inline float dhh_pid_update(dhh_pid_t* pid, float error, float dt_s) {
  float derivative = pid->primed ? (error - pid->last_error) / dt_s : 0.0f;
  pid->integral = dhh_clamp(pid->integral + error * dt_s, -DHH_INTEGRAL_LIMIT, DHH_INTEGRAL_LIMIT);
  pid->last_error = error;
  pid->primed = 1;
  return pid->kp * error + pid->ki * pid->integral + pid->kd * derivative;
}

/* heading error in (-pi, pi]: the short way round */
static inline float dhh_wrap_angle(float a) {
  while (a > DHH_PI_F) {
    a -= 2.0f * DHH_PI_F;
  }
  while (a <= -DHH_PI_F) {
    a += 2.0f * DHH_PI_F;
  }
  return a;
}

/*
 * One step. `now_us` is the sim time of the readings; a sensor without a reading this
 * step (has_* = 0) keeps its axis' last command. Returns 1 the first time the target
 * depth is reached (the firmware logs it), else 0.
 */
static inline int dhh_step(dhh_state_t* s, uint64_t now_us, int has_depth, float depth_m, int has_heading,
                           float heading_rad, dhh_commands_t* out) {
  int just_reached = 0;
  float dt_s = (float)(now_us - s->last_us) * 1e-6f;
  if (s->last_us == 0u || dt_s <= 0.0f) {
    dt_s = 0.0f; /* first step: no rate yet */
  }
  s->last_us = now_us;
  if (dt_s > 0.0f && has_depth) {
    s->vertical = dhh_pid_update(&s->depth_pid, s->target_depth_m - depth_m, dt_s);
    if (!s->reached && depth_m > s->target_depth_m - DHH_DEPTH_REACHED_M &&
        depth_m < s->target_depth_m + DHH_DEPTH_REACHED_M) {
      s->reached = 1;
      just_reached = 1;
    }
  }
  if (dt_s > 0.0f && has_heading) {
    s->turn = dhh_pid_update(&s->heading_pid, dhh_wrap_angle(s->target_heading_rad - heading_rad), dt_s);
  }
  s->turn = dhh_clamp(s->turn, -0.5f, 0.5f);
  out->left = dhh_clamp(s->cruise + s->turn, -1.0f, 1.0f);
  out->right = dhh_clamp(s->cruise - s->turn, -1.0f, 1.0f);
  out->vfront = dhh_clamp(s->vertical, -1.0f, 1.0f);
  out->vrear = dhh_clamp(s->vertical, -1.0f, 1.0f);
  return just_reached;
}

#endif /* TETHER_EXAMPLES_DEPTH_HEADING_LAW_H */
