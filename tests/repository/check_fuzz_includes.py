#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# tests/fuzz/build_libfuzzer.sh compiles the fuzz targets outside CMake, with its own -I
# list: the include folder of every runtime room up to the loop must be on it (a room added
# to runtime/ and left out here broke the clang build while the suite's g++ build of the
# same targets passed). identify and report sit above the loop (scripts/check_rooms.py) and
# no fuzz target reaches them. Checks the list and the header-dependency list beside it.
import pathlib
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
script = (root / "tests" / "fuzz" / "build_libfuzzer.sh").read_text()
missing = []
above_the_loop = {"identify", "report"}
for inc in sorted((root / "runtime").glob("*/include")):
    if inc.parent.name in above_the_loop:
        continue
    rel = inc.relative_to(root).as_posix()
    if "-I" + rel not in script:
        missing.append(f"-I{rel} is not in tests/fuzz/build_libfuzzer.sh's inc list")
    if script.count(rel) < 2:
        missing.append(f"{rel} is not in tests/fuzz/build_libfuzzer.sh's headers list")
for m in missing:
    print(m)
sys.exit(1 if missing else 0)
