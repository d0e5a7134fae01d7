#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A stand-in for the Tether runtime's serial endpoint, to prove that built
firmware really runs: it starts the firmware (host build on a pseudo-terminal
pair, Cortex-M3 build under qemu-system-arm, AVR build under the simavr
bridge), answers HELLO with a device table, steps a small plant model in lock
step (SENSORS(k) -> ACTUATE(k)), sends STOP, and checks the plant ended where
the firmware was meant to drive it. Plain python3: os, termios, select.

  fake_runtime.py --host build/firmware/host/depth_heading_hold
  fake_runtime.py --qemu build/firmware/cortex_m3/wall_follow.elf --steps 3000
  fake_runtime.py --simavr build/firmware/avr/simavr_bridge build/firmware/avr/depth_heading_hold.elf
  fake_runtime.py --host ... --refuse-version      # answer HELLO with a version-mismatch ERROR

Exit status 0 when the session ran and the plant check passed.
"""
import argparse
import math
import os
import re
import select
import signal
import statistics
import subprocess
import sys
import termios
import time
import tty

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tether_wire as w  # noqa: E402

# the device table of the AUV both examples expect (index, kind, name)
TABLE = [
    (0, "depth", "auv.hull.depth"),
    (1, "compass", "auv.hull.compass"),
    (2, "range", "auv.hull.psd_front"),
    (3, "range", "auv.hull.psd_right"),
    (4, "range", "auv.hull.psd_left"),
    (10, "thruster", "auv.hull.thruster_left"),
    (11, "thruster", "auv.hull.thruster_right"),
    (12, "thruster", "auv.hull.thruster_vfront"),
    (13, "thruster", "auv.hull.thruster_vrear"),
    (20, "gps", "auv.mast.gps"),
]
BY_INDEX = {i: (kind, name) for i, kind, name in TABLE}


class Line:
    """A raw byte line to the firmware with a frame decoder."""

    def __init__(self, fd):
        self.fd = fd
        self.decoder = w.Decoder()
        self.pending = []
        self.logs = []

    def send(self, mtype, step, payload, version=w.VERSION):
        data = w.frame(mtype, step, payload, version)
        view = memoryview(data)
        while view:
            n = os.write(self.fd, view)
            view = view[n:]

    def recv(self, timeout_s):
        """Next frame (version, type, step, payload); LOG frames are printed."""
        deadline = time.monotonic() + timeout_s
        while True:
            while self.pending:
                frame = self.pending.pop(0)
                if frame[1] == w.LOG:
                    level, text = frame[3][0], frame[3][1:].decode("utf-8", "replace")
                    self.logs.append(text)
                    print("  firmware LOG[%d] step %d: %s" % (level, frame[2], text))
                    continue
                return frame
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                return None
            try:
                data = os.read(self.fd, 4096)
            except OSError:
                return None
            if not data:
                return None
            self.pending.extend(self.decoder.feed(data))


# ---- plants ------------------------------------------------------------------

def wrap(a):
    return (a + math.pi) % (2 * math.pi) - math.pi


class DepthPlant:
    """Heave and yaw of a neutrally buoyant AUV, first-order drag."""
    name = "depth"
    steps = 2000  # 40 s at 20 ms

    def __init__(self):
        self.depth, self.w = 0.0, 0.0
        self.heading, self.r = 0.0, 0.0
        self.cmd = {}

    def reading(self, kind, name, step):
        if name == "auv.hull.depth":
            return w.f32(self.depth, 101325.0 + 9810.0 * self.depth)
        if name == "auv.hull.compass":
            if step % 10 == 5:
                return None  # a dropout now and then: the firmware must cope
            return w.f32(self.heading % (2 * math.pi))
        return None

    def advance(self, dt):
        c = self.cmd
        vertical = c.get("auv.hull.thruster_vfront", 0.0) + c.get("auv.hull.thruster_vrear", 0.0)
        yaw = c.get("auv.hull.thruster_left", 0.0) - c.get("auv.hull.thruster_right", 0.0)
        self.w += (0.8 * vertical - 0.6 * self.w) * dt
        self.depth = max(0.0, self.depth + self.w * dt)
        self.r += (0.9 * yaw - 1.0 * self.r) * dt
        self.heading += self.r * dt

    def verdict(self):
        ok = abs(self.depth - 2.0) < 0.15 and abs(wrap(self.heading - math.pi / 2)) < 0.1
        return ok, "depth %.3f m (target 2.0), heading %.3f rad (target 1.571)" % (
            self.depth, self.heading % (2 * math.pi))


class WallPlant:
    """A vehicle in a 12 m x 40 m tank; PSDs are ray casts to the walls (4 m range)."""
    name = "wall"
    steps = 8000  # 160 s: along the east wall, round the corner, along the north wall
    WIDTH, LENGTH, RANGE = 12.0, 40.0, 4.0

    def __init__(self):
        self.x, self.y, self.heading = 9.0, 3.0, 0.0  # 3 m from the east wall, heading north
        self.v, self.r = 0.0, 0.0
        self.cmd = {}
        self.min_wall = 1e9
        self.right_log = []

    def ray(self, bearing):
        dx, dy = math.sin(self.heading + bearing), math.cos(self.heading + bearing)
        best = math.inf
        for t in ((self.WIDTH - self.x) / dx if dx > 1e-9 else math.inf,
                  -self.x / dx if dx < -1e-9 else math.inf,
                  (self.LENGTH - self.y) / dy if dy > 1e-9 else math.inf,
                  -self.y / dy if dy < -1e-9 else math.inf):
            best = min(best, t)
        return best

    def psd(self, bearing):
        d = self.ray(bearing)
        hit = d <= self.RANGE
        return w.f32(min(d, self.RANGE)) + bytes([1 if hit else 0])

    def reading(self, kind, name, step):
        bearings = {"auv.hull.psd_front": 0.0, "auv.hull.psd_right": math.pi / 2,
                    "auv.hull.psd_left": -math.pi / 2}
        if name in bearings:
            return self.psd(bearings[name])
        return None

    def advance(self, dt):
        left = self.cmd.get("auv.hull.thruster_left", 0.0)
        right = self.cmd.get("auv.hull.thruster_right", 0.0)
        self.v += (1.2 * (left + right) / 2 - 1.5 * self.v) * dt
        self.r += (2.0 * (left - right) - 3.0 * self.r) * dt
        self.heading += self.r * dt
        self.x += self.v * math.sin(self.heading) * dt
        self.y += self.v * math.cos(self.heading) * dt
        self.min_wall = min(self.min_wall, self.x, self.WIDTH - self.x, self.y, self.LENGTH - self.y)
        self.right_log.append(self.ray(math.pi / 2))

    def verdict(self):
        tail = self.right_log[len(self.right_log) // 2:]
        near = sum(1 for d in tail if abs(d - 1.0) < 0.5) / max(1, len(tail))
        ok = self.min_wall > 0.2 and near > 0.6
        return ok, ("closest approach to a wall %.2f m; right distance within 0.5 m of 1.0 m "
                    "for %.0f %% of the second half" % (self.min_wall, 100 * near))


PLANTS = {"depth_heading_hold": DepthPlant, "wall_follow": WallPlant}


# ---- starting the firmware ------------------------------------------------------

def open_raw(path):
    fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
    tty.setraw(fd)
    return fd


def wait_for_pty(proc, pattern, timeout_s):
    """Reads the child's output until `pattern` names a pty."""
    deadline = time.monotonic() + timeout_s
    text = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.1)
        if ready:
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                break
            text += chunk
            m = re.search(pattern, text.decode("utf-8", "replace"))
            if m:
                return m.group(1), text
        if proc.poll() is not None:
            break
    raise RuntimeError("no pty announced; output was:\n" + text.decode("utf-8", "replace"))


def start(args):
    """Returns (process, fd of the runtime's end of the line, description)."""
    if args.host:
        master, slave = os.openpty()
        tty.setraw(slave)  # before the child runs: no echo of early bytes
        env = dict(os.environ, TETHER_PORT=os.ttyname(slave))
        proc = subprocess.Popen([args.host], env=env, stderr=subprocess.PIPE)
        # keep our slave fd open: with no slave open at all, reading the master
        # fails (EIO) in the moment before the child has opened its end
        args.keep_open = slave
        return proc, master, "host build on %s" % env["TETHER_PORT"]
    if args.qemu:
        cmd = ["qemu-system-arm", "-M", "lm3s6965evb", "-nographic", "-monitor", "none",
               "-serial", "pty", "-serial", "file:%s" % args.diag_file, "-kernel", args.qemu]
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
        path, _ = wait_for_pty(proc, r"char device redirected to (/dev/pts/\d+)", 10)
        return proc, open_raw(path), "qemu lm3s6965evb, UART0 on %s" % path
    if args.simavr:
        bridge, elf = args.simavr
        proc = subprocess.Popen([bridge, elf], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
        path, _ = wait_for_pty(proc, r"tether-bridge: uart0 on (/dev/pts/\d+)", 10)
        return proc, open_raw(path), "simavr atmega328p, USART0 on %s" % path
    raise SystemExit("say --host, --qemu or --simavr")


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(3)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ---- the session --------------------------------------------------------------------

def session(args, line):
    hello = line.recv(args.timeout)
    if hello is None or hello[1] != w.HELLO:
        raise RuntimeError("no HELLO from the firmware")
    info = w.parse_hello(hello[3])
    print("HELLO: firmware %r build 0x%08x, protocol %d, receives up to %d bytes"
          % (info["name"], info["build_id"], info["version"], info["max_payload"]))
    if args.refuse_version:
        line.send(w.ERROR, 0, w.error(w.ERROR_VERSION_MISMATCH, 2, "runtime speaks protocol version 2"),
                  version=2)
        print("sent ERROR(version mismatch) as a version-2 runtime")
        return None, info
    line.send(w.DEVICES, 0, w.devices(TABLE))
    # skip duplicate HELLOs re-sent while the table was on its way
    frame = line.recv(args.timeout)
    while frame is not None and frame[1] == w.HELLO:
        frame = line.recv(args.timeout)
    if frame is None or frame[1] != w.READY:
        raise RuntimeError("no READY after DEVICES: %r" % (frame,))
    opened = w.parse_ready(frame[3])
    slots = [(slot, BY_INDEX[i][0], BY_INDEX[i][1]) for slot, i in enumerate(opened)]
    print("READY: " + ", ".join("%d=%s" % (s, n) for s, _, n in slots))
    plant_cls = PLANTS.get(args.plant or info["name"])
    if plant_cls is None:
        raise RuntimeError("no plant for firmware %r (use --plant)" % info["name"])
    plant = plant_cls()
    if args.steps is None:
        args.steps = plant.steps
    actuator_sizes = {s: w.KINDS[k][1] for s, k, _ in slots if w.KINDS[k][0] >= 64}

    dt = args.dt
    stale = 0
    rtts = []
    t0 = time.monotonic()
    for step in range(1, args.steps + 1):
        readings = []
        for slot, kind, name in slots:
            if w.KINDS[kind][0] < 64:
                readings.append((slot, plant.reading(kind, name, step)))
        sent = time.perf_counter()
        line.send(w.SENSORS, step, w.sensors(int(step * dt * 1e6), readings))
        while True:
            frame = line.recv(args.timeout)
            if frame is None:
                raise RuntimeError("no ACTUATE for step %d" % step)
            if frame[1] == w.ACTUATE and frame[2] == step:
                break
            stale += 1  # another step or type: counted and ignored
        rtts.append(time.perf_counter() - sent)
        for slot, data in w.parse_items(frame[3], actuator_sizes, False):
            plant.cmd[slots[slot][2]] = w.struct.unpack("<f", data)[0]
        plant.advance(dt)
    wall = time.monotonic() - t0
    line.send(w.STOP, args.steps, b"")
    rtts.sort()
    print("%d steps in %.2f s: %.0f round trips/s, round trip p50 %.0f us, p99 %.0f us, stale %d"
          % (args.steps, wall, args.steps / wall, 1e6 * statistics.median(rtts),
             1e6 * rtts[int(0.99 * (len(rtts) - 1))], stale))
    print("firmware decoder on our side: %s" % line.decoder.counts)
    return plant.verdict(), info


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", help="host-built firmware executable")
    ap.add_argument("--qemu", help="Cortex-M3 ELF for qemu-system-arm -M lm3s6965evb")
    ap.add_argument("--simavr", nargs=2, metavar=("BRIDGE", "ELF"), help="simavr bridge and AVR ELF")
    ap.add_argument("--steps", type=int, help="default: what the plant needs to show convergence")
    ap.add_argument("--dt", type=float, default=0.02, help="simulated seconds per step")
    ap.add_argument("--plant", choices=sorted(PLANTS), help="default: by firmware name")
    ap.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for any one frame")
    ap.add_argument("--refuse-version", action="store_true")
    ap.add_argument("--diag-file", default="/dev/null", help="QEMU: where UART1 (diagnostics) goes")
    args = ap.parse_args()

    proc, fd, what = start(args)
    print("firmware: " + what)
    line = Line(fd)
    ok = False
    try:
        verdict, info = session(args, line)
        if args.refuse_version:
            if args.host:
                code = proc.wait(10)
                err = proc.stderr.read().decode("utf-8", "replace").strip()
                print("firmware exit status %d, stderr: %s" % (code, err))
                ok = code != 0 and "version mismatch" in err
            elif args.qemu and args.diag_file != "/dev/null":
                # the shim reports on UART1, which QEMU writes to the diag file
                time.sleep(1.0)
                with open(args.diag_file, "rb") as f:
                    diag = f.read().decode("utf-8", "replace").strip()
                print("firmware diagnostics (UART1): %s" % diag)
                ok = "version mismatch" in diag
            else:
                ok = True
        else:
            good, text = verdict
            print("plant: " + text)
            ok = good
            if args.host:
                code = proc.wait(10)
                print("firmware exit status %d after STOP" % code)
                ok = ok and code == 0
            elif args.simavr:
                # main() returns after STOP; simavr reports the AVR done and the bridge exits
                code = proc.wait(10)
                out = proc.stdout.read().decode("utf-8", "replace").strip()
                print("bridge exit status %d: %s" % (code, out.splitlines()[-1] if out else ""))
                ok = ok and code == 0
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print("FAILED: %s" % e)
        ok = False
    finally:
        stop(proc)
        os.close(fd)
        if getattr(args, "keep_open", None) is not None:
            os.close(args.keep_open)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
