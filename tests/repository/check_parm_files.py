#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The ArduPilot parameter files in config/ardupilot/ as ArduPilot's loader reads them
# (AP_Param::load_defaults_file, parse_param_line): a comment is a line whose first
# character is '#'; every other non-empty line is NAME VALUE, NAME up to 16 characters of
# A-Z, 0-9 and '_', VALUE a number; no line over 97 characters (AP_Param reads 98 at a time).
# Also that each file names the parameters Tether's world depends on.
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
needed = {"bluerov2.parm": {"BARO_SPEC_GRAV", "SYSID_MYGCS", "FRAME_CONFIG"},
          "skid_rover.parm": {"SERVO1_FUNCTION", "SERVO3_FUNCTION", "SYSID_MYGCS"}}
line_re = re.compile(r"^[A-Z][A-Z0-9_]{0,15}\s+-?[0-9]+(\.[0-9]+)?$")
bad = []
for name, names in needed.items():
    path = root / "config" / "ardupilot" / name
    if not path.is_file():
        bad.append(f"{path}: missing")
        continue
    seen = set()
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if len(line) > 97:
            bad.append(f"{path}:{n}: {len(line)} characters (AP_Param reads at most 98 a line)")
        if not line.strip() or line.startswith("#"):
            continue
        if not line_re.match(line.strip()):
            bad.append(f"{path}:{n}: not NAME VALUE: {line!r}")
        else:
            seen.add(line.split()[0])
    for missing in sorted(names - seen):
        bad.append(f"{path}: does not set {missing}")
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
