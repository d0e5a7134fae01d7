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
/*
 * What a controls engineer adds to a textbook PID so that its commands are smooth:
 * - the derivative of the measurement, not of the error (a new target is no kick), over the
 *   time since that sensor's previous sample (a 20 Hz compass read every 10 ms step would
 *   otherwise see 50 ms of turning in 10 ms: the derivative term five times too large);
 * - that derivative low-pass filtered (first order, time constants DHH_*_TAU_S): a depth
 *   sensor's 2 mm of noise differenced every 10 ms is 0.3 m/s of "rate";
 * - each command moved toward its PID's output by at most DHH_*_RATE_PER_S a second (a
 *   thruster spun from full ahead to full astern in one step only heats its motor);
 * - no integration while the command is saturated in the error's direction (anti-windup).
 */
#ifndef DHH_DEPTH_TAU_S
#define DHH_DEPTH_TAU_S 0.15f
#endif
#ifndef DHH_HEADING_TAU_S
#define DHH_HEADING_TAU_S 0.3f
#endif
#ifndef DHH_VERTICAL_RATE_PER_S
#define DHH_VERTICAL_RATE_PER_S 2.5f
#endif
#ifndef DHH_TURN_RATE_PER_S
#define DHH_TURN_RATE_PER_S 1.0f
#endif

typedef struct {
  float kp, ki, kd;
  float tau_s; /* the derivative's low-pass time constant */
  float integral;
  float last_measurement;
  float rate;       /* the measurement's filtered rate of change, per second */
  uint64_t last_us; /* time of the previous sample; 0: none yet */
} dhh_pid_t;

typedef struct {
  dhh_pid_t depth_pid;
  dhh_pid_t heading_pid;
  float vertical_goal; /* the PIDs' outputs ... */
  float turn_goal;
  float vertical; /* ... and the commands, rate-limited toward them */
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
  dhh_pid_t depth = {DHH_DEPTH_KP, DHH_DEPTH_KI, DHH_DEPTH_KD, DHH_DEPTH_TAU_S, 0.0f, 0.0f, 0.0f, 0u};
  dhh_pid_t heading = {DHH_HEADING_KP, DHH_HEADING_KI, DHH_HEADING_KD, DHH_HEADING_TAU_S, 0.0f, 0.0f, 0.0f, 0u};
  s->depth_pid = depth;
  s->heading_pid = heading;
  s->vertical_goal = 0.0f;
  s->turn_goal = 0.0f;
  s->vertical = 0.0f;
  s->turn = 0.0f;
  s->last_us = 0u;
  s->reached = 0;
  s->target_depth_m = DHH_TARGET_DEPTH_M;
  s->target_heading_rad = DHH_TARGET_HEADING_RAD;
  s->cruise = DHH_CRUISE_COMMAND;
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
 * One PID update from a sample taken at now_us: `error` is target - measurement and `change`
 * the measurement's change since the previous sample (wrapped, for a heading). The first
 * sample only primes it. `limit` is the command's bound: no integration past it.
 */
static inline float dhh_pid_update(dhh_pid_t* pid, uint64_t now_us, float error, float change, float limit,
                                   float previous) {
  float dt_s;
  float alpha;
  float out;
  if (pid->last_us == 0u || now_us <= pid->last_us) {
    pid->last_us = now_us;
    return previous;
  }
  dt_s = (float)(now_us - pid->last_us) * 1e-6f;
  pid->last_us = now_us;
  alpha = dt_s / (pid->tau_s + dt_s);
  pid->rate += alpha * (change / dt_s - pid->rate);
  out = pid->kp * error + pid->ki * pid->integral - pid->kd * pid->rate;
  /* anti-windup: integrate unless the output is past its limit and the error would push further */
  if (!((out >= limit && error > 0.0f) || (out <= -limit && error < 0.0f))) {
    pid->integral = dhh_clamp(pid->integral + error * dt_s, -DHH_INTEGRAL_LIMIT, DHH_INTEGRAL_LIMIT);
  }
  return out;
}

/* `value` moved toward `goal` by at most `step` */
static inline float dhh_toward(float value, float goal, float step) {
  return goal > value + step ? value + step : (goal < value - step ? value - step : goal);
}

/*
 * One step. `now_us` is the sim time of the readings; a sensor without a reading this
 * step (has_* = 0) keeps its axis' last goal. Returns 1 the first time the target depth is
 * reached (the firmware logs it), else 0.
 */
static inline int dhh_step(dhh_state_t* s, uint64_t now_us, int has_depth, float depth_m, int has_heading,
                           float heading_rad, dhh_commands_t* out) {
  int just_reached = 0;
  float dt_s = (float)(now_us - s->last_us) * 1e-6f;
  if (s->last_us == 0u || now_us <= s->last_us) {
    dt_s = 0.0f; /* first step: no rate yet */
  }
  s->last_us = now_us;
  if (has_depth) {
    s->vertical_goal = dhh_pid_update(&s->depth_pid, now_us, s->target_depth_m - depth_m,
                                      depth_m - s->depth_pid.last_measurement, 1.0f, s->vertical_goal);
    s->depth_pid.last_measurement = depth_m;
    if (!s->reached && depth_m > s->target_depth_m - DHH_DEPTH_REACHED_M &&
        depth_m < s->target_depth_m + DHH_DEPTH_REACHED_M) {
      s->reached = 1;
      just_reached = 1;
    }
  }
  if (has_heading) {
    s->turn_goal = dhh_pid_update(&s->heading_pid, now_us, dhh_wrap_angle(s->target_heading_rad - heading_rad),
                                  dhh_wrap_angle(heading_rad - s->heading_pid.last_measurement), 0.5f, s->turn_goal);
    s->heading_pid.last_measurement = heading_rad;
  }
  s->vertical = dhh_toward(s->vertical, dhh_clamp(s->vertical_goal, -1.0f, 1.0f), DHH_VERTICAL_RATE_PER_S * dt_s);
  s->turn = dhh_toward(s->turn, dhh_clamp(s->turn_goal, -0.5f, 0.5f), DHH_TURN_RATE_PER_S * dt_s);
  out->left = dhh_clamp(s->cruise + s->turn, -1.0f, 1.0f);
  out->right = dhh_clamp(s->cruise - s->turn, -1.0f, 1.0f);
  out->vfront = s->vertical;
  out->vrear = s->vertical;
  return just_reached;
}

#endif /* TETHER_EXAMPLES_DEPTH_HEADING_LAW_H */
