/* SPDX-License-Identifier: Apache-2.0 */
/* Host port extras (port_posix.c). */
#ifndef TETHER_FIRMWARE_SHIM_PORT_POSIX_H
#define TETHER_FIRMWARE_SHIM_PORT_POSIX_H

#ifdef __cplusplus
extern "C" {
#endif

/// Uses `path` (a serial device or pseudo-terminal, put into raw mode) as the
/// line instead of $TETHER_PORT or stdin/stdout. Call before tether_init().
/// Returns 0, or -1 (with a message on stderr) if it cannot be opened.
int tether_port_posix_open(const char* path);

#ifdef __cplusplus
}
#endif

#endif /* TETHER_FIRMWARE_SHIM_PORT_POSIX_H */
