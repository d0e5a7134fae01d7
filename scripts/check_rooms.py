#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The rooms' one-way dependencies (docs/architecture.md, "Rooms and dependencies").

Every production file belongs to one room by its folder; a room's public headers are
`tether/<room>/...`. A file may include the headers of its own room and of the rooms its
room depends on, nothing else: an include that points up (the loop including an adapter,
a backend including another backend, the runtime including the CLI) is listed and the check
exits 1. Run by CTest; `scripts/check_rooms.py ROOT`.
"""
import os
import re
import sys

# room -> the rooms it may include (besides itself); closed under "depends on"
BELOW = {
    "firmware_shim": [],
    "physics": [],
    "hal": ["firmware_shim"],
    "scenario": ["physics", "hal"],
    "recording": ["scenario"],
    "loop": ["recording", "feedback"],
    "feedback": ["scenario"],
    "identify": ["loop"],
    "report": ["recording"],
    "process": ["loop"],
    "serial": ["process"],
    "mqtt": ["process"],
    "mavlink": ["scenario"],
    "ardupilot": ["process", "mavlink"],
    "ardupilot_standin": ["ardupilot"],
    "mcu": ["process"],
    "endpoints": ["serial", "mqtt", "ardupilot", "mcu"],
    "live": ["loop"],
    "campaign": ["process"],
    "cli": ["endpoints", "live", "campaign", "report", "identify"],
}

# folder (relative to the root) -> room; the longest matching prefix wins
FOLDERS = {
    "firmware_shim": "firmware_shim",
    "hal": "hal",
    "runtime/physics": "physics",
    "runtime/scenario": "scenario",
    "runtime/recording": "recording",
    "runtime/loop": "loop",
    "runtime/feedback": "feedback",
    "runtime/identify": "identify",
    "runtime/report": "report",
    "adapters/process": "process",
    "adapters/serial": "serial",
    "adapters/mqtt": "mqtt",
    "adapters/mqtt/vehicle": "mqtt",
    "adapters/mavlink": "mavlink",
    "adapters/ardupilot": "ardupilot",
    "adapters/ardupilot/standin": "ardupilot_standin",
    "adapters/mcu": "mcu",
    "adapters/endpoints": "endpoints",
    "adapters/live": "live",
    "adapters/campaign": "campaign",
    "adapters/cli": "cli",
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"tether/([a-z_]+)/')


def allowed(room):
    out, todo = set(), [room]
    while todo:
        r = todo.pop()
        if r in out:
            continue
        out.add(r)
        todo.extend(BELOW[r])
    return out


def room_of(path):
    best = None
    for folder, room in FOLDERS.items():
        if path == folder or path.startswith(folder + "/"):
            if best is None or len(folder) > len(best[0]):
                best = (folder, room)
    return best[1] if best else None


def main(root):
    problems = []
    checked = 0
    for top in ("firmware_shim", "hal", "runtime", "adapters"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if not name.endswith((".c", ".h", ".cpp", ".hpp")):
                    continue
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root)
                room = room_of(rel)
                if room is None:
                    problems.append(f"{rel}: in no room (add its folder to scripts/check_rooms.py)")
                    continue
                ok = allowed(room)
                checked += 1
                with open(full, encoding="utf-8", errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if m and m.group(1) not in ok:
                            problems.append(f"{rel}:{n}: room {room} includes tether/{m.group(1)}/ "
                                            f"(it may include: {', '.join(sorted(ok))})")
    if problems:
        print("includes against the rooms' one-way dependencies:")
        print("\n".join(problems))
        return 1
    print(f"ok: {checked} files, every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")))
