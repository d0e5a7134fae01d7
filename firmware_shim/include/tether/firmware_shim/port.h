/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The platform port: what the shim needs from a board (or from the host) to
 * move bytes. A port is one C file that defines these three functions; see
 * firmware_shim/ports/ (posix, cortex_m3, avr). The shim calls them only from
 * inside tether_* calls, never from an interrupt.
 */
#ifndef TETHER_FIRMWARE_SHIM_PORT_H
#define TETHER_FIRMWARE_SHIM_PORT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Reads up to `max` bytes (the shim asks for at most TETHER_READ_CHUNK, <= 255).
/// Blocks until at least one byte has arrived or an idle time of the port's
/// choosing has passed (about 100 ms is right: the shim re-sends HELLO/READY
/// on idle). Returns the number of bytes read (> 0), 0 when idle, or a negative
/// number when the line is gone for good (the shim then returns TETHER_E_IO).
/// The first call may open and configure the line.
int tether_port_read(uint8_t* buf, size_t max);

/// Writes all `len` bytes, blocking until they are handed to the line.
/// Returns 0, or a negative number on failure.
int tether_port_write(const uint8_t* buf, size_t len);

/// Shows one line of text to a human, if the platform has a way (stderr on the
/// host, a debug UART on a board); may do nothing. Used when a session ends
/// badly, e.g. the runtime speaks another protocol version. No newline in `text`.
void tether_port_diag(const char* text);

#ifdef __cplusplus
}
#endif

#endif /* TETHER_FIRMWARE_SHIM_PORT_H */
