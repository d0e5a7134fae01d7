# SPDX-License-Identifier: Apache-2.0
"""Tether wire protocol v1 in plain Python (no third-party modules).

A second, independent implementation of docs/protocol.md: it generates the
test vectors (gen_vectors.py) that the C and C++ tests check, and it is the
runtime side of the fake-runtime harness (fake_runtime.py).
"""
import struct

VERSION = 1
HELLO, DEVICES, SENSORS, ACTUATE, LOG, ERROR, READY, STOP = range(1, 9)
TYPE_NAMES = {HELLO: "HELLO", DEVICES: "DEVICES", SENSORS: "SENSORS", ACTUATE: "ACTUATE",
              LOG: "LOG", ERROR: "ERROR", READY: "READY", STOP: "STOP"}
TYPE_BY_NAME = {v: k for k, v in TYPE_NAMES.items()}
SENSOR, ACTUATOR = 1, 2
NO_DATA = 0x80
MAX_PAYLOAD = 2048
HEADER = struct.Struct("<BBIH")

# device kinds and payload sizes (payloads.h)
KINDS = {
    "range": (1, 5), "sonar": (2, 5), "altimeter": (3, 5), "depth": (4, 8), "gyro": (5, 12),
    "accel": (6, 12), "imu": (7, 24), "inclinometer": (8, 8), "compass": (9, 4), "dvl": (10, 17),
    "gps": (11, 92), "contact": (12, 5), "clock": (13, 8), "tension": (14, 16), "encoder": (15, 8),
    "thruster": (64, 4), "dc_motor": (65, 4), "fin": (66, 4), "servo": (67, 4), "wheel_drive": (68, 8),
}
ERROR_VERSION_MISMATCH, ERROR_TOO_LARGE, ERROR_UNKNOWN_INDEX, ERROR_UNEXPECTED = 1, 2, 3, 4
ERROR_MALFORMED, ERROR_DEVICE_MISMATCH, ERROR_FIRMWARE = 5, 6, 7


def crc16(data: bytes) -> int:
    """CRC-16/CCITT-FALSE: poly 0x1021, init 0xFFFF, MSB first, no final xor."""
    crc = 0xFFFF
    for byte in data:
        for i in range(7, -1, -1):
            top = (crc >> 15) & 1
            bit = (byte >> i) & 1
            crc = (crc << 1) & 0xFFFF
            if top ^ bit:
                crc ^= 0x1021
    return crc


def cobs_encode(data: bytes) -> bytes:
    out = bytearray()
    block = bytearray()
    is_open = True
    for b in data:
        if not is_open:
            block = bytearray()
            is_open = True
        if b == 0:
            out.append(len(block) + 1)
            out += block
            block = bytearray()
        else:
            block.append(b)
            if len(block) == 254:
                out.append(0xFF)
                out += block
                block = bytearray()
                is_open = False
    if is_open:
        out.append(len(block) + 1)
        out += block
    return bytes(out)


def cobs_decode(enc: bytes) -> bytes:
    out = bytearray()
    i = 0
    while i < len(enc):
        code = enc[i]
        i += 1
        if code == 0:
            raise ValueError("zero in COBS data")
        chunk = enc[i:i + code - 1]
        if len(chunk) != code - 1 or 0 in chunk:
            raise ValueError("truncated COBS block")
        out += chunk
        i += code - 1
        if code != 0xFF and i < len(enc):
            out.append(0)
    return bytes(out)


def raw_frame(mtype: int, step: int, payload: bytes, version: int = VERSION, payload_len=None) -> bytes:
    n = len(payload) if payload_len is None else payload_len
    body = HEADER.pack(version, mtype, step, n) + payload
    return body + struct.pack("<H", crc16(body))


def frame(mtype: int, step: int, payload: bytes, version: int = VERSION) -> bytes:
    return cobs_encode(raw_frame(mtype, step, payload, version)) + b"\x00"


class Decoder:
    """Byte stream -> frames, counting what it drops (mirrors the C decoder)."""

    def __init__(self, max_payload=MAX_PAYLOAD):
        self.buf = bytearray()
        self.max_raw = max_payload + 10
        self.counts = {}

    def _count(self, what):
        self.counts[what] = self.counts.get(what, 0) + 1

    def feed(self, data: bytes):
        frames = []
        for b in data:
            if b != 0:
                self.buf.append(b)
                continue
            enc, self.buf = bytes(self.buf), bytearray()
            if not enc:
                continue
            if len(enc) > self.max_raw + self.max_raw // 254 + 1:
                self._count("oversize")
                continue
            try:
                raw = cobs_decode(enc)
            except ValueError:
                self._count("cobs_errors")
                continue
            if len(raw) > self.max_raw:
                self._count("oversize")
                continue
            if len(raw) < 10:
                self._count("runts")
                continue
            if crc16(raw[:-2]) != struct.unpack("<H", raw[-2:])[0]:
                self._count("crc_errors")
                continue
            version, mtype, step, n = HEADER.unpack(raw[:8])
            if n != len(raw) - 10:
                self._count("length_errors")
                continue
            if version != VERSION and mtype not in (HELLO, ERROR):
                self._count("bad_version")
                continue
            if not HELLO <= mtype <= STOP:
                self._count("unknown_type")
                continue
            self._count("frames_ok")
            frames.append((version, mtype, step, raw[8:-2]))
        return frames


# ---- payloads -------------------------------------------------------------------

def hello(name: str, build_id: int, max_payload: int, version: int = VERSION) -> bytes:
    n = name.encode("ascii")
    return struct.pack("<BHIB", version, max_payload, build_id, len(n)) + n


def parse_hello(p: bytes):
    version, max_payload, build_id, n = struct.unpack("<BHIB", p[:8])
    if len(p) != 8 + n or n == 0:
        raise ValueError("bad HELLO")
    return {"version": version, "max_payload": max_payload, "build_id": build_id, "name": p[8:].decode("ascii")}


def devices(entries) -> bytes:
    """entries: (index, kind_name, name) with the kind's direction and size."""
    out = bytearray(struct.pack("<H", len(entries)))
    for index, kind, name in entries:
        code, size = KINDS[kind]
        direction = SENSOR if code < 64 else ACTUATOR
        n = name.encode("ascii")
        out += struct.pack("<HBBHB", index, code, direction, size, len(n)) + n
    return bytes(out)


def parse_ready(p: bytes):
    n = p[0]
    if len(p) != 1 + 2 * n:
        raise ValueError("bad READY")
    return list(struct.unpack("<%dH" % n, p[1:]))


def ready(indices) -> bytes:
    return bytes([len(indices)]) + struct.pack("<%dH" % len(indices), *indices)


def sensors(time_us: int, readings) -> bytes:
    """readings: (slot, bytes or None for no data), slots ascending."""
    out = bytearray(struct.pack("<Q", time_us))
    for slot, data in readings:
        if data is None:
            out.append(slot | NO_DATA)
        else:
            out.append(slot)
            out += data
    return bytes(out)


def actuate(commands) -> bytes:
    out = bytearray()
    for slot, data in commands:
        out.append(slot)
        out += data
    return bytes(out)


def parse_items(p: bytes, sizes, allow_no_data: bool):
    """sizes: slot -> payload size for the slots allowed here."""
    items, i, last = [], 0, -1
    while i < len(p):
        b = p[i]
        slot = b & 0x7F
        if slot not in sizes or slot <= last:
            raise ValueError("bad slot %d" % slot)
        last = slot
        if b & NO_DATA:
            if not allow_no_data:
                raise ValueError("NO_DATA in ACTUATE")
            items.append((slot, None))
            i += 1
        else:
            data = p[i + 1:i + 1 + sizes[slot]]
            if len(data) != sizes[slot]:
                raise ValueError("truncated item")
            items.append((slot, data))
            i += 1 + sizes[slot]
    return items


def log(level: int, text: str) -> bytes:
    return bytes([level]) + text.encode("utf-8")


def error(code: int, value: int, text: str) -> bytes:
    return struct.pack("<BH", code, value) + text.encode("ascii")


def f32(*values) -> bytes:
    return struct.pack("<%df" % len(values), *values)
