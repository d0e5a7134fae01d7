# SPDX-License-Identifier: Apache-2.0
"""Writes the seed corpora of tests/fuzz/corpus that are made rather than copied.

  python3 tests/fuzz/make_seeds.py            # from the repository root

frame_decoder: the valid and broken frames of firmware_shim/test_vectors/vectors.txt as line
bytes (first byte even: the decoder mode of frame_decoder_fuzz.c) and firmware sessions as
scripts (first byte odd), encoded by the independent Python implementation in
tests/firmware_shim/tether_wire.py.
mqtt_messages: feedback, projected and status payloads as docs/mqtt.md describes them, for the
world that mqtt_messages_fuzz.cpp builds (vehicles auv: hull, arm and other: hull); feedback and
projected also as protobuf (*.pb), written field by field here.
ardupilot_json: ArduPilot's servo packets (16 and 32 channels, and a short one), reply lines
as ArduPilot's readme and Tether write them, and reply numbers as raw doubles (the third use
of an input in ardupilot_json_fuzz.cpp).
scenario_parser: config/scenarios/*.yaml without their comment lines, plus a few small files
for corners the examples do not reach (terrain heights, anchors, flow style, goals).
mavlink_decoder: MAVLink 2 byte streams (first byte: the chunk size the target feeds them in)
of frames written here from the message layouts of common.xml (an encoder independent of
adapters/mavlink/src/mavlink.cpp): every message Tether knows, truncated and whole payloads, garbage
between frames, a bad checksum, an unknown message, a signed frame and a frame cut short.
The MCAP seeds (mcap_reader/*.mcap) are files written by the recording tests
(tests/recording/mcap_writer_test.cpp) and are kept as they are.
"""
import json
import os
import re
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "firmware_shim"))
import tether_wire as tw  # noqa: E402

CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")


def write(folder, name, data):
    path = os.path.join(CORPUS, folder)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode("utf-8"))


def parse_bytes(text):
    """vectors.txt byte lists: "3a", "00*10", "01..fe"."""
    out = bytearray()
    for tok in text.split():
        if "*" in tok:
            value, count = tok.split("*")
            out += bytes([int(value, 16)]) * int(count)
        elif ".." in tok:
            lo, hi = tok.split("..")
            out += bytes(range(int(lo, 16), int(hi, 16) + 1))
        else:
            out.append(int(tok, 16))
    return bytes(out)


def vectors():
    records, current = [], None
    with open(os.path.join(ROOT, "firmware_shim", "test_vectors", "vectors.txt")) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("vector "):
                current = {"name": line.split()[1]}
                records.append(current)
            elif current is not None and "=" in line and not line.startswith("#"):
                key, _, value = line.partition("=")
                current[key.strip()] = value.strip()
    return records


def frame_seeds():
    wires = [(v["name"], parse_bytes(v["wire"])) for v in vectors() if "wire" in v]
    for name, wire in wires:
        write("frame_decoder", "line_" + name, b"\x00" + wire)
    # a whole exchange on one line, with line noise between some frames
    everything = b"".join(w for _, w in wires)
    write("frame_decoder", "line_all", b"\x02" + everything)
    write("frame_decoder", "line_noise", b"\x04" + b"\x11\x22\x00" + everything[:40] + b"\xff" * 5 + everything[40:])
    write("frame_decoder", "cobs_254", b"\x00" + bytes(range(1, 255)) + b"\x00")

    # sessions for the firmware API: [type % 10][step][len][payload] ..., type 0 = STOP, 9 = raw bytes
    by_name = {v["name"]: parse_bytes(v.get("payload", "")) for v in vectors() if "payload" in v}

    def item(kind, step, payload):
        assert len(payload) < 256
        return bytes([kind, step & 0xFF, len(payload)]) + payload

    devices = by_name["devices"]
    sensors = [by_name["sensors"], by_name["sensors_full"]]
    session = item(tw.DEVICES, 0, devices)
    for step in range(1, 6):
        session += item(tw.SENSORS, step, sensors[step % 2])
    write("frame_decoder", "session_steps", b"\x01" + session + item(0, 6, b""))
    small = tw.devices([(0, "depth", "auv.hull.depth"), (3, "thruster", "auv.hull.thruster")])
    s2 = item(tw.DEVICES, 0, small)
    s2 += item(tw.SENSORS, 1, tw.sensors(10000, [(0, tw.f32(2.5, 126325.0))]))
    s2 += item(tw.SENSORS, 2, tw.sensors(20000, [(0, None)]))
    s2 += item(9, 0, b"\x05\x11\x22\x00")  # a broken frame on the line
    s2 += item(tw.SENSORS, 3, tw.sensors(30000, [(0, tw.f32(2.4, 126000.0))]))
    s2 += item(tw.ERROR, 3, tw.error(tw.ERROR_UNEXPECTED, 0, "runtime gave up"))
    write("frame_decoder", "session_error", b"\x03" + s2)
    every = tw.devices([(i, kind, "v.b.%s" % kind) for i, kind in enumerate(sorted(tw.KINDS))][:8])
    write("frame_decoder", "session_kinds", b"\x05" + item(tw.DEVICES, 0, every) + item(tw.SENSORS, 1, struct.pack("<Q", 1)))


def mqtt_seeds():
    def dump(obj):
        return json.dumps(obj, separators=(",", ":"))

    pose = {"position_m": [1.0, 2.0, -3.0], "orientation_wxyz": [0.9950041652780258, 0.0, 0.0, 0.09983341664682815]}
    vel = {"velocity_m_s": [0.1, 0.0, -0.02], "angular_velocity_rad_s": [0.0, 0.0, 0.05]}
    cov = {"pose_covariance": [0.01 if r == c else 0.0 for r in range(6) for c in range(6)]}
    hull = dict(name="auv.hull", measured_time_ns=10000000, **pose, **vel, **cov)
    write("mqtt_messages", "feedback_full.json",
          dump({"schema": 1, "type": "feedback", "vehicle": "auv", "step": 1, "bodies": [hull]}))
    write("mqtt_messages", "feedback_two_bodies.json",
          dump({"schema": 1, "type": "feedback", "vehicle": "auv", "step": 2, "bodies": [
              dict(name="auv.hull", measured_time_ns=20000000, **pose),
              dict(name="auv.arm", measured_time_ns=20000000, velocity_m_s=[0, 0, 0])]}))
    write("mqtt_messages", "feedback_other.json",
          dump({"schema": 1, "vehicle": "other", "step": 18446744073709551615, "bodies": [
              {"name": "other.hull", "measured_time_ns": -5, "velocity_m_s": [1e300, -1e-300, 0]}]}))
    write("mqtt_messages", "feedback_pretty.json",
          json.dumps({"schema": 1, "type": "feedback", "vehicle": "auv", "step": 3,
                      "bodies": [dict(name="auv.hull", measured_time_ns=0, **pose)]}, indent=2))
    write("mqtt_messages", "projected.json",
          dump({"schema": 1, "type": "projected", "vehicle": "auv", "step": 7, "time_ns": 70000000,
                "period_ns": 10000000, "bodies": [dict(name="auv.hull", **pose, **vel)],
                "commands": {"auv.hull.thruster": [0.25], "auv.hull.fin": [0.1, -0.2, 0.3, 0.4]}}))
    write("mqtt_messages", "status_online.json",
          dump({"schema": 1, "type": "status", "state": "online", "client_id": "tether-auv", "run": "r-1"}))
    write("mqtt_messages", "status_offline.json", dump({"schema": 1, "type": "status", "state": "offline"}))
    write("mqtt_messages", "not_unit.json",
          '{"schema":1,"vehicle":"auv","step":1,"bodies":[{"name":"auv.hull","measured_time_ns":0,'
          '"position_m":[0,0,0],"orientation_wxyz":[2,0,0,0]}]}')
    # the same messages as protobuf (docs/mqtt.md, "Protobuf payloads"), written here field by
    # field: packed lists, and one body with unpacked doubles as other libraries may send them
    def varint(v):
        v &= (1 << 64) - 1
        out = b""
        while v >= 0x80:
            out += bytes([(v & 0x7F) | 0x80])
            v >>= 7
        return out + bytes([v])

    def field(n, wire, payload):
        return varint((n << 3) | wire) + payload

    def pb_int(n, v):
        return field(n, 0, varint(v))

    def pb_bytes(n, data):
        data = data.encode() if isinstance(data, str) else data
        return field(n, 2, varint(len(data)) + data)

    def pb_doubles(n, values):
        return pb_bytes(n, b"".join(struct.pack("<d", v) for v in values))

    def pb_body(name, time_ns=None, packed=True, **lists):
        out = pb_bytes(1, name)
        numbers = {"position_m": 2, "orientation_wxyz": 3, "velocity_m_s": 4, "angular_velocity_rad_s": 5,
                   "pose_covariance": 7}
        for key, values in lists.items():
            if packed:
                out += pb_doubles(numbers[key], values)
            else:
                out += b"".join(field(numbers[key], 1, struct.pack("<d", v)) for v in values)
        if time_ns is not None:
            out += pb_int(6, time_ns)
        return out

    write("mqtt_messages", "feedback_full.pb",
          pb_int(1, 1) + pb_bytes(2, "auv") + pb_int(3, 1) +
          pb_bytes(4, pb_body("auv.hull", 10000000, **pose, **vel, **cov)))
    write("mqtt_messages", "feedback_two_bodies_unpacked.pb",
          pb_int(1, 1) + pb_bytes(2, "auv") + pb_int(3, 2) +
          pb_bytes(4, pb_body("auv.hull", 20000000, packed=False, **pose)) +
          pb_bytes(4, pb_body("auv.arm", -5, velocity_m_s=[0, 0, 0])) + pb_int(99, 1))
    write("mqtt_messages", "projected.pb",
          pb_int(1, 1) + pb_bytes(2, "auv") + pb_int(3, 7) + pb_int(4, 70000000) + pb_int(5, 10000000) +
          pb_bytes(6, pb_body("auv.hull", **pose, **vel)) +
          pb_bytes(7, pb_bytes(1, "auv.hull.thruster") + pb_doubles(2, [0.25])) +
          pb_bytes(7, pb_bytes(1, "auv.hull.fin") + pb_doubles(2, [0.1, -0.2, 0.3, 0.4])))
    write("mqtt_messages", "escapes.json",
          '{"schema":1,"type":"status","state":"on\\u00e9\\n\\"x\\"","run":"\\ud83d\\ude00","deep":[[[[{"a":null}]]]],'
          '"n":[-0.0,1E+2,true,false]}')


def scenario_seeds():
    folder = os.path.join(ROOT, "config", "scenarios")
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".yaml"):
            continue
        with open(os.path.join(folder, name)) as f:
            lines = [line for line in f if not line.lstrip().startswith("#") and line.strip()]
        write("scenario_parser", name, "".join(lines))
    write("scenario_parser", "small_terrain.yaml", """name: terrain
world:
  gravity_m_s2: [0, 0, -9.81]
  max_substep_s: 0.001
  broad_phase: sweep_and_prune
  water: {density_kg_m3: 1025, surface_z_m: 0, current_m_s: [0.1, 0, 0]}
  tank: {size_m: [4, 3, 2], floor_z_m: -2, restitution: 0.2, friction: 0.6}
  statics:
    - {name: rock, shape: {type: box, size_m: [0.5, 0.5, 0.5]}, position_m: [1, 0, -1.75]}
    - {name: ramp, shape: {type: plane, normal: [0, 0.2, 1], offset_m: -1.9}}
  terrain:
    - name: bed
      cell_size_m: 0.5
      height_scale_m: 1.0
      base_m: -2
      heights: [[0, 0.1, 0.2], [0.1, 0.3, 0.2], [0, 0, 0.1]]
vehicles:
  - name: rov
    bodies:
      - name: frame
        shape: {type: capsule, radius_m: 0.1, length_m: 0.6}
        mass_kg: 8
        inertia_kg_m2: [0.1, 0.2, 0.2]
        volume_m3: 0.008
        centre_of_buoyancy_m: [0, 0, 0.02]
        damping: {linear: [5, 5, 5], quadratic: [10, 10, 10], angular_linear: [1, 1, 1]}
        initial: {position_m: [0, 0, -1], orientation_rpy_deg: [0, 0, 90], velocity_m_s: [0.1, 0, 0]}
        devices:
          - {name: sonar, kind: sonar, rate_hz: 10, params: {min_range_m: 0.1, max_range_m: 20, beam_width_deg: 30, rays: 5}}
          - {name: gps, kind: gps, params: {datum_lat_deg: 59.9, datum_lon_deg: 10.7, utc_start: "2024-06-01T12:00:00Z"}}
          - {name: fin, kind: fin, params: {area_m2: 0.01, max_angle_deg: 30}, mount: {position_m: [-0.3, 0, 0]}}
          - {name: imu, kind: imu, noise: {stddev: 0.01, dropout: 0.1, delay_steps: 2}, noise_accel: {stddev: 0.1}}
    feedback:
      - {type: pose_blend, name: blend}
loop: {period_ms: 20, duration_s: 2, seed: 7, history_steps: 64, real_time_factor: 0,
       plausibility: {enabled: true, margin_m: 0.5, max_speed_m_s: 10}}
recording: {enabled: true, compress: false, keyframe_every_steps: 10, flush_interval_s: 0.5, queue_slots: 64}
endpoints:
  - {name: sim, type: in_process, vehicle: rov, deadline_ms: 5, timeout_policy: safe, controller: depth_hold}
goals:
  - {vehicle: rov, depth_m: 1.5, heading_deg: 90}
faults:
  - {name: stuck sonar, device: rov.frame.sonar, kind: stuck, at_s: 0.5, duration_s: 0.2}
  - {device: rov.frame.imu, kind: noise, sigma: 0.2, channel: 1, probability: 0.05, duration_steps: 3}
  - {device: rov.frame.gps, kind: dropout, at_step: 10, duration_steps: 4}
  - {device: rov.frame.sonar, kind: saturation, min: 0, max: 3, if: {value: rov.depth_m, that: "> 1.2"}}
  - {device: rov.frame.imu, kind: drift, rate: 0.01, at_s: 1}
""")
    write("scenario_parser", "anchors.yaml", """name: anchors
body: &body
  shape: &ball {type: sphere, radius_m: 0.1}
  mass_kg: 1
vehicles:
  - name: a
    bodies: [{name: one, <<: *body}]
  - name: b
    bodies:
      - name: two
        shape: *ball
        mass_kg: !!float 2
loop:
  steps: 10
  steps: 20
---
second: document
""")
    write("scenario_parser", "minimal_flow.yaml",
          '{vehicles: [{name: v, bodies: [{name: b, shape: {type: cylinder, radius_m: 1e-3, length_m: "2"}, '
          'mass_kg: 0x10}]}], loop: {period_ms: .5, steps: 0}}\n')
    write("scenario_parser", "errors.yaml", """name: [not, a, string]
world: {gravity_m_s2: [0, 0], water: yes}
vehicles:
  - name: bad.name
    bodies: []
  - name: ok
    bodies: [{name: x, shape: {type: cube}, mass_kg: -1, devices: [{name: 1d, kind: warp}]}]
loop: {period_ms: 0, steps: -3, duration_s: 1}
endpoints: [{name: e, type: serial, vehicle: nobody, timeout_policy: sometimes}, 7]
goals: [{vehicle: ok}, {vehicle: ok, heading_deg: 400}]
recording: {queue_slots: 2}
""")


def ardupilot_seeds():
    def servo(magic, channels, count):
        return struct.pack("<HHI", magic, 1200, count) + struct.pack("<%dH" % channels,
                                                                    *[1100 + 25 * i for i in range(channels)])
    write("ardupilot_json", "servo16.bin", servo(18458, 16, 7))
    write("ardupilot_json", "servo32.bin", servo(29569, 32, 0xFFFFFFFF))
    write("ardupilot_json", "servo16_short.bin", servo(18458, 16, 1)[:30])
    write("ardupilot_json", "reply_readme.txt",
          '{"timestamp":2500,"imu":{"gyro":[0,0,0],"accel_body":[0,0,0]},"position":[0,0,0],'
          '"attitude":[0,0,0],"velocity":[0,0,0]}')
    write("ardupilot_json", "reply_full.txt",
          '{"timestamp":12.0025,"imu":{"gyro":[0.01,-0.2,3],"accel_body":[0.1,-0.05,-9.81]},'
          '"position":[1.5,-2.25,3],"velocity":[-0.5,0,1e-3],"quaternion":[0.7071067812,0,0,0.7071067812],'
          '"rng_1":2.5,"rng_6":0.3,"velocity_wind":[1, 2, 3],"battery":{"voltage":15.2,"current":-3}}')
    numbers = [0.0, -9.81, 1e-12, -4e-10, 999999999.5, -1.0, 0.5, 0.5, 0.5, 0.5,
               1.0, 0.0, 0.0, 0.0, 2.5, 3.5, 1e9, float("nan"), float("inf"), 12.25, 15.2]
    write("ardupilot_json", "reply_numbers.bin",
          struct.pack("<q", 1234567890123) + b"".join(struct.pack("<d", v) for v in numbers))


def crc_x25(data, crc=0xFFFF):
    for b in data:
        t = (b ^ crc) & 0xFF
        t = (t ^ (t << 4)) & 0xFF
        crc = ((crc >> 8) ^ (t << 8) ^ (t << 3) ^ (t >> 4)) & 0xFFFF
    return crc


# msgid: (CRC_EXTRA, struct format of the payload in wire order, little-endian)
MAVLINK = {
    0: (50, "<IBBBBB"),                     # HEARTBEAT
    1: (124, "<IIIHHhHHHHHHbIII"),          # SYS_STATUS with its extensions
    11: (89, "<IBB"),                       # SET_MODE
    22: (220, "<fHH16sB"),                  # PARAM_VALUE
    23: (168, "<fBB16sB"),                  # PARAM_SET
    30: (39, "<Iffffff"),                   # ATTITUDE
    33: (104, "<IiiiihhhH"),                # GLOBAL_POSITION_INT
    69: (243, "<hhhhHBHBhhhhhhhh"),         # MANUAL_CONTROL with its extensions
    74: (20, "<ffffhH"),                    # VFR_HUD
    76: (152, "<fffffffHBBB"),              # COMMAND_LONG
    77: (143, "<HBBiBB"),                   # COMMAND_ACK with its extensions
    82: (49, "<I4fffffBBB3f"),              # SET_ATTITUDE_TARGET with thrust_body
    84: (143, "<IfffffffffffHBBB"),         # SET_POSITION_TARGET_LOCAL_NED
    86: (5, "<IiifffffffffHBBB"),           # SET_POSITION_TARGET_GLOBAL_INT
    253: (83, "<B50sHB"),                   # STATUSTEXT with its extensions
}


def mavlink_frame(msgid, payload, seq=0, truncate=True, incompat=0, crc_extra=None):
    if truncate:
        payload = payload.rstrip(b"\0") or payload[:1]
    head = struct.pack("<BBBBBBB", len(payload), incompat, 0, seq, 1, 1, msgid & 0xFF) + bytes(
        [(msgid >> 8) & 0xFF, (msgid >> 16) & 0xFF])
    extra = MAVLINK[msgid][0] if crc_extra is None else crc_extra
    crc = crc_x25(bytes([extra]), crc_x25(head + payload))
    out = b"\xfd" + head + payload + struct.pack("<H", crc)
    if incompat & 1:
        out += bytes(range(0xA0, 0xAD))
    return out


def mavlink_sample(msgid):
    """A payload whose fields are all set (field i: i, -i, 0.5 i or "F<i>")."""
    fmt = MAVLINK[msgid][1]
    fields = []
    i = 0
    for token in re.findall(r"(\d*)([a-zA-Z])", fmt[1:]):
        count, code = int(token[0] or 1), token[1]
        i += 1
        if code == "s":
            fields.append(("F%d" % i).encode())
        elif code == "f":
            fields.extend([0.5 * i + 0.25 * k for k in range(count)])
        elif code in "bhi":
            fields.extend([-i - k for k in range(count)])
        else:
            fields.extend([i + k for k in range(count)])
    return struct.pack(fmt, *fields)


def mavlink_seeds():
    every = b"".join(mavlink_frame(m, mavlink_sample(m), seq=i) for i, m in enumerate(sorted(MAVLINK)))
    write("mavlink_decoder", "every_message.bin", b"\x00" + every)
    write("mavlink_decoder", "every_message_bytewise.bin", b"\x40" + every)
    whole = b"".join(mavlink_frame(m, mavlink_sample(m), seq=i, truncate=False) for i, m in enumerate(sorted(MAVLINK)))
    write("mavlink_decoder", "untruncated.bin", b"\x06" + whole)
    zeros = b"".join(mavlink_frame(m, bytes(struct.calcsize(MAVLINK[m][1]))) for m in sorted(MAVLINK))
    write("mavlink_decoder", "zero_payloads.bin", b"\x03" + zeros)
    hb = mavlink_frame(0, struct.pack("<IBBBBB", 19, 12, 3, 0x81, 4, 3), seq=7)
    bad = bytearray(mavlink_frame(30, mavlink_sample(30), seq=8))
    bad[14] ^= 0x40
    unknown = mavlink_frame(2, bytes(range(1, 13)), crc_extra=137)
    signed = mavlink_frame(0, struct.pack("<IBBBBB", 19, 12, 3, 0x81, 4, 3), seq=9, incompat=1)
    odd = mavlink_frame(0, struct.pack("<IBBBBB", 19, 12, 3, 0x81, 4, 3), seq=10, incompat=2)
    mixed = (b"hello\xfd\x00\xfd\xfe\x09" + hb + bytes(bad) + hb + unknown + hb + signed + hb + odd + hb +
             hb[:11])
    write("mavlink_decoder", "garbage_and_errors.bin", b"\x04" + mixed)
    write("mavlink_decoder", "start_inside_bad_frame.bin", b"\x01" + bytes(bad[:12]) + hb + bytes(bad))


if __name__ == "__main__":
    frame_seeds()
    mqtt_seeds()
    ardupilot_seeds()
    scenario_seeds()
    mavlink_seeds()
