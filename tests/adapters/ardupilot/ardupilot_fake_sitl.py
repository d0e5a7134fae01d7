#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# A tiny ArduPilot-like program for the `launch:` tests of the ardupilot_json endpoint:
# sends 16-channel servo packets to 127.0.0.1:PORT, one per reply (re-sends the same frame
# after 0.5 s of silence), for FRAMES frames, then exits 0. --fail prints a line and exits 3
# before sending anything.
import socket
import struct
import sys


def main():
    args = sys.argv[1:]
    if "--fail" in args:
        print("fake sitl: no such frame 'bluerov9'", flush=True)
        sys.exit(3)
    port = int(args[0])
    frames = int(args[1]) if len(args) > 1 else 1000000
    print(f"fake sitl: physics at 127.0.0.1:{port}", flush=True)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(0.5)
    count = 0
    while count < frames:
        pwm = [1500] * 16
        packet = struct.pack("<HHI16H", 18458, 400, count, *pwm)
        sock.sendto(packet, ("127.0.0.1", port))
        try:
            data = sock.recv(2048)
        except socket.timeout:
            continue
        if b"timestamp" in data:
            count += 1
    print(f"fake sitl: {count} frames", flush=True)


main()
