#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A scriptable stand-in for firmware in the loop, for the serial endpoint's fault tests.

It speaks the Tether wire protocol (tests/firmware_shim/tether_wire.py, an implementation
independent of the C shim) on the line named by TETHER_PORT: HELLO (repeated until
answered), opens every device of the table, READY, then answers each SENSORS(k) with
ACTUATE(k) commanding every actuator it opened with the value (k % 1000) / 1000. Options
make it misbehave at a chosen step:

  --silent-at N     stop answering from step N on (stays alive, keeps reading)
  --exit-at N       exit with --status (default 1) when SENSORS(N) arrives
  --garbage-at N    before ACTUATE(N): noise, a frame with a bad CRC, a runt
  --stale-at N      before ACTUATE(N): an ACTUATE for step N-1 (stale) and, after it,
                    a second ACTUATE(N) (duplicate)
  --drop-at N       ignore the first SENSORS(N) (the runtime must send it again)
  --error-at N      answer SENSORS(N) with ERROR(FIRMWARE)
  --log-every N     a LOG line every N steps
  --late-log-at N   0.5 s after ACTUATE(N): a LOG line "late log after step N" (it
                    arrives between steps, while no gather waits for it)
  --flood-at N      before ACTUATE(N): --flood-count LOG lines (default 4000) at level
                    --flood-level (0 info, 1 warning, 2 error), "flood I"
  --log-before-ready TEXT  a LOG line at level --flood-level before READY (the handshake)
  --close-at N      when SENSORS(N) arrives: close the line and sleep (alive, but the pty
                    has hung up) until terminated
  --log-readings    a LOG line each step with the first float of every sensor reading,
                    "slot:value" ("-" for NO_DATA), so tests can check what SENSORS carried
  --ahead-ms X      answer ahead: X ms after ACTUATE(k) (0: in the same write), unless
                    SENSORS(k+1) has come by then, an ACTUATE(k+1) commanding -0.5 (a reply
                    computed from old readings), then the genuine ACTUATE(k+1) when
                    SENSORS(k+1) comes
  --version V       speak protocol version V in HELLO
  --hello-repeats N send N extra HELLOs right away (as an emulator's buffer would)
"""
import argparse
import os
import select
import struct
import sys
import termios
import time
import tty

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "firmware_shim"))
import tether_wire as w  # noqa: E402


def parse_devices(p):
    count = struct.unpack("<H", p[:2])[0]
    out, i = [], 2
    for _ in range(count):
        index, kind, direction, size, n = struct.unpack("<HBBHB", p[i:i + 7])
        out.append((index, kind, direction, size, p[i + 7:i + 7 + n].decode("ascii")))
        i += 7 + n
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", default="fake_fw")
    ap.add_argument("--version", type=int, default=w.VERSION)
    ap.add_argument("--silent-at", type=int, default=-1)
    ap.add_argument("--exit-at", type=int, default=-1)
    ap.add_argument("--status", type=int, default=1)
    ap.add_argument("--garbage-at", type=int, default=-1)
    ap.add_argument("--stale-at", type=int, default=-1)
    ap.add_argument("--drop-at", type=int, default=-1)
    ap.add_argument("--error-at", type=int, default=-1)
    ap.add_argument("--log-every", type=int, default=0)
    ap.add_argument("--late-log-at", type=int, default=-1)
    ap.add_argument("--log-readings", action="store_true")
    ap.add_argument("--hello-repeats", type=int, default=0)
    ap.add_argument("--flood-at", type=int, default=-1)
    ap.add_argument("--flood-count", type=int, default=4000)
    ap.add_argument("--flood-level", type=int, default=0)
    ap.add_argument("--log-before-ready", default=None)
    ap.add_argument("--close-at", type=int, default=-1)
    ap.add_argument("--reply-delay-ms", type=float, default=0.0)  # sleep before each ACTUATE
    ap.add_argument("--ahead-ms", type=float, default=-1.0)
    args = ap.parse_args()

    fd = os.open(os.environ["TETHER_PORT"], os.O_RDWR | os.O_NOCTTY)
    tty.setraw(fd)
    dec = w.Decoder()

    def send(mtype, step, payload, version=w.VERSION):
        data = w.frame(mtype, step, payload, version)
        while data:
            data = data[os.write(fd, data):]

    def hello():
        os.write(fd, b"\x00")
        send(w.HELLO, 0, w.hello(args.name, 0xC0FFEE, 1024, args.version), args.version)

    pending = []

    def recv(timeout):
        while not pending:
            r, _, _ = select.select([fd], [], [], timeout)
            if not r:
                return None
            try:
                data = os.read(fd, 4096)
            except OSError:
                sys.exit(0)
            if not data:
                sys.exit(0)
            pending.extend(dec.feed(data))
        return pending.pop(0)

    hello()
    for _ in range(args.hello_repeats):
        hello()
    table = None
    while table is None:
        f = recv(0.1)
        if f is None:
            hello()
            continue
        if f[1] == w.ERROR:
            code, value = struct.unpack("<BH", f[3][:3])
            sys.stderr.write("fake firmware: runtime sent ERROR %d (value %d): %s\n"
                             % (code, value, f[3][3:].decode("ascii", "replace")))
            sys.exit(4)
        if f[1] == w.DEVICES:
            table = parse_devices(f[3])
    slots = [(d[0], d[2], d[3]) for d in table]  # index, direction, size; slot = position
    if args.log_before_ready is not None:
        send(w.LOG, 0, w.log(args.flood_level, args.log_before_ready))
    send(w.READY, 0, w.ready([d[0] for d in table]))
    actuators = [(s, size) for s, (_, direction, size) in enumerate(slots) if direction == w.ACTUATOR]
    sys.stdout.write("fake firmware %s: %d devices, %d actuators\n" % (args.name, len(slots), len(actuators)))
    sys.stdout.flush()

    answered = None
    dropped = False
    while True:
        f = recv(1.0)
        if f is None:
            if answered is None:
                send(w.READY, 0, w.ready([d[0] for d in table]))
            continue
        _, mtype, step, payload = f
        if mtype == w.STOP:
            sys.stdout.write("fake firmware: STOP after step %d\n" % step)
            return 0
        if mtype == w.ERROR:
            return 5
        if mtype != w.SENSORS:
            continue
        if step == args.close_at:
            sys.stderr.write("fake firmware: closing the line at step %d, staying alive\n" % step)
            sys.stderr.flush()
            os.close(fd)
            while True:
                time.sleep(60)
        if step == args.exit_at:
            sys.stderr.write("fake firmware: exiting at step %d as told\n" % step)
            sys.stderr.flush()
            os._exit(args.status)
        if args.silent_at >= 0 and step >= args.silent_at:
            continue
        if step == args.drop_at and not dropped:
            dropped = True
            continue
        if step == args.error_at:
            send(w.ERROR, step, w.error(w.ERROR_FIRMWARE, 7, "fake firmware gives up"))
            return 6  # the session is over for both sides
        value = (step % 1000) / 1000.0
        commands = [(s, w.f32(*([value] * (size // 4)))) for s, size in actuators]
        if step == args.garbage_at:
            os.write(fd, b"\x13\x37garbage\xff\xfe\x00")           # noise, then a delimiter
            bad = bytearray(w.frame(w.ACTUATE, step, w.actuate(commands)))
            bad[3] ^= 0x01                                             # bad CRC
            os.write(fd, bytes(bad))
            os.write(fd, b"\x02\x01\x00")                              # a runt
        if step == args.stale_at:
            send(w.ACTUATE, step - 1, w.actuate(commands))
        if args.log_readings:
            sizes = {s: size for s, (_, direction, size) in enumerate(slots) if direction == w.SENSOR}
            items = w.parse_items(payload[8:], sizes, True)
            text = " ".join("%d:%s" % (s, "-" if d is None else "%.4f" % struct.unpack("<f", d[:4])[0])
                            for s, d in items)
            send(w.LOG, step, w.log(0, text))
        if step == args.flood_at and answered != step:  # not again for a re-sent SENSORS
            for i in range(args.flood_count):
                send(w.LOG, step, w.log(args.flood_level, "flood %d" % i))
        if args.log_every and step % args.log_every == 0:
            send(w.LOG, step, w.log(0, "step %d" % step))
        if args.reply_delay_ms > 0:
            time.sleep(args.reply_delay_ms / 1000.0)
        if args.ahead_ms >= 0 and answered != step:
            early = w.frame(w.ACTUATE, step + 1, w.actuate([(s, w.f32(*([-0.5] * (size // 4)))) for s, size in actuators]))
            reply = w.frame(w.ACTUATE, step, w.actuate(commands))
            if args.ahead_ms == 0:
                reply += early
                early = None
            while reply:
                reply = reply[os.write(fd, reply):]
            if early is not None:
                time.sleep(args.ahead_ms / 1000.0)
                if not pending and not select.select([fd], [], [], 0)[0]:  # SENSORS(k+1) not here yet
                    while early:
                        early = early[os.write(fd, early):]
        else:
            send(w.ACTUATE, step, w.actuate(commands))
        if step == args.stale_at:
            send(w.ACTUATE, step, w.actuate(commands))
        if step == args.late_log_at and answered != step:
            time.sleep(0.5)
            send(w.LOG, step, w.log(0, "late log after step %d" % step))
        answered = step


if __name__ == "__main__":
    sys.exit(main())
