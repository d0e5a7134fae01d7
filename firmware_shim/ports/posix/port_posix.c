/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Host port: the line is a serial device or pseudo-terminal named by the
 * environment variable TETHER_PORT (put into raw mode), or stdin/stdout when it
 * is unset. TETHER_IDLE_MS (default 100) is how long a read waits before it
 * reports an idle line. Diagnostics go to stderr.
 *
 * A host program that wants another path calls tether_port_posix_open()
 * (port_posix.h) before tether_init().
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "port_posix.h"
#include "tether/firmware_shim/port.h"

static int s_in = -1;
static int s_out = -1;
static int s_idle_ms = 100;

/* raw 8N1, no echo, no line editing, no flow control: bytes pass untouched */
static void make_raw(int fd) {
  struct termios t;
  if (tcgetattr(fd, &t) != 0) {
    return; /* a pipe or a file: nothing to configure */
  }
  t.c_iflag &= ~(tcflag_t)(IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR | IGNCR | ICRNL | IXON | IXOFF | IXANY);
  t.c_oflag &= ~(tcflag_t)OPOST;
  t.c_lflag &= ~(tcflag_t)(ECHO | ECHONL | ICANON | ISIG | IEXTEN);
  t.c_cflag &= ~(tcflag_t)(CSIZE | PARENB | CSTOPB);
  t.c_cflag |= (tcflag_t)(CS8 | CREAD | CLOCAL);
  t.c_cc[VMIN] = 1;
  t.c_cc[VTIME] = 0;
  (void)cfsetispeed(&t, B115200);
  (void)cfsetospeed(&t, B115200);
  (void)tcsetattr(fd, TCSANOW, &t);
}

int tether_port_posix_open(const char* path) {
  int fd = open(path, O_RDWR | O_NOCTTY);
  if (fd < 0) {
    fprintf(stderr, "tether: cannot open %s: %s\n", path, strerror(errno));
    return -1;
  }
  make_raw(fd);
  s_in = fd;
  s_out = fd;
  return 0;
}

static int ensure_open(void) {
  const char* idle;
  const char* path;
  if (s_in >= 0) {
    return 0;
  }
  idle = getenv("TETHER_IDLE_MS");
  if (idle != NULL && atoi(idle) > 0) {
    s_idle_ms = atoi(idle);
  }
  path = getenv("TETHER_PORT");
  if (path != NULL && path[0] != '\0') {
    return tether_port_posix_open(path);
  }
  s_in = STDIN_FILENO;
  s_out = STDOUT_FILENO;
  make_raw(s_in);
  return 0;
}

int tether_port_read(uint8_t* buf, size_t max) {
  struct pollfd p;
  ssize_t n;
  int rc;
  if (ensure_open() != 0) {
    return -1;
  }
  p.fd = s_in;
  p.events = POLLIN;
  p.revents = 0;
  rc = poll(&p, 1, s_idle_ms);
  if (rc < 0) {
    return errno == EINTR ? 0 : -1;
  }
  if (rc == 0) {
    return 0;
  }
  if ((p.revents & POLLIN) == 0) {
    return -1; /* hang-up or error without data: the other side is gone */
  }
  n = read(s_in, buf, max);
  if (n < 0) {
    return (errno == EINTR || errno == EAGAIN) ? 0 : -1;
  }
  if (n == 0) {
    return -1; /* end of file */
  }
  return (int)n;
}

int tether_port_write(const uint8_t* buf, size_t len) {
  size_t done = 0;
  if (ensure_open() != 0) {
    return -1;
  }
  while (done < len) {
    ssize_t n = write(s_out, buf + done, len - done);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      if (errno == EAGAIN) {
        struct pollfd p;
        p.fd = s_out;
        p.events = POLLOUT;
        p.revents = 0;
        (void)poll(&p, 1, s_idle_ms);
        continue;
      }
      return -1;
    }
    done += (size_t)n;
  }
  return 0;
}

void tether_port_diag(const char* text) { fprintf(stderr, "%s\n", text); }
