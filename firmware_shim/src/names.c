/* SPDX-License-Identifier: Apache-2.0 */
/* Texts for codes. A file of their own, so firmware that never asks for a
 * text does not link the strings (they cost RAM on AVR). */
#include "tether/firmware_shim/messages.h"
#include "tether/firmware_shim/tether.h"

const char* tether_msg_name(uint8_t type) {
  switch (type) {
    case TETHER_MSG_HELLO: return "HELLO";
    case TETHER_MSG_DEVICES: return "DEVICES";
    case TETHER_MSG_SENSORS: return "SENSORS";
    case TETHER_MSG_ACTUATE: return "ACTUATE";
    case TETHER_MSG_LOG: return "LOG";
    case TETHER_MSG_ERROR: return "ERROR";
    case TETHER_MSG_READY: return "READY";
    case TETHER_MSG_STOP: return "STOP";
    default: return "UNKNOWN";
  }
}

const char* tether_error_code_name(uint8_t code) {
  switch (code) {
    case TETHER_ERROR_VERSION_MISMATCH: return "version mismatch";
    case TETHER_ERROR_TOO_LARGE: return "too large";
    case TETHER_ERROR_UNKNOWN_INDEX: return "unknown device index";
    case TETHER_ERROR_UNEXPECTED: return "unexpected message";
    case TETHER_ERROR_MALFORMED: return "malformed message";
    case TETHER_ERROR_DEVICE_MISMATCH: return "device mismatch";
    case TETHER_ERROR_FIRMWARE: return "firmware error";
    default: return "unknown error";
  }
}

const char* tether_status_text(int status) {
  switch (status) {
    case TETHER_OK: return "ok";
    case TETHER_E_UNKNOWN_DEVICE: return "unknown device";
    case TETHER_E_INVALID_OPERATION: return "invalid operation";
    case TETHER_E_SIZE_MISMATCH: return "size mismatch";
    case TETHER_E_NOT_READY: return "not ready";
    case TETHER_E_IO: return "port I/O failed";
    case TETHER_E_INVALID_HANDLE: return "invalid handle";
    case TETHER_E_NO_DATA: return "no data this step";
    case TETHER_E_LIMIT: return "compile-time limit reached";
    case TETHER_E_ARGUMENT: return "bad argument";
    case TETHER_E_VERSION: return "runtime speaks another protocol version";
    case TETHER_E_REJECTED: return "runtime sent an error";
    case TETHER_E_PROTOCOL: return "undecodable message from the runtime";
    case TETHER_E_STOPPED: return "session stopped by the runtime";
    default: return "unknown status";
  }
}
