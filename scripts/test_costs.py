#!/usr/bin/env python3
"""Writes tests/test_costs.txt from a CTest log: the slowest tests and their seconds.

CTest starts the tests with the largest COST first, so the long ones overlap the many short
ones instead of finishing alone at the end. Its own cost file (Testing/Temporary/
CTestCostData.txt) cuts test names at the first space, and every name here has spaces, so
the suite sets COST from this table instead (tests/test_costs.cmake).

  python3 scripts/test_costs.py build/asan/Testing/Temporary/LastTest.log [COUNT]
  python3 scripts/test_costs.py ctest-output.txt [COUNT]     (what `ctest` printed, the same)
"""
import re
import sys
from pathlib import Path


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    log = Path(sys.argv[1]).read_text(errors="replace")
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    times = {}
    name = None
    for line in log.splitlines():
        # ctest's own output ("12/640 Test #403: NAME .....   Passed   30.79 sec") works too
        m = re.match(r"^\s*\d+/\d+ Test +#\d+: (.*?) \.+\s*(?:\*+)?\w+\s+([0-9.]+) sec", line)
        if m:
            times[m.group(1)] = float(m.group(2))
            continue
        m = re.match(r"^\d+/\d+ Test: (.*)$", line)
        if m:
            name = m.group(1)
            continue
        m = re.match(r"^Test time = +([0-9.]+) sec", line)
        if m and name:
            times[name] = float(m.group(1))
            name = None
    if not times:
        print("no test times in " + sys.argv[1], file=sys.stderr)
        return 1
    rows = sorted(times.items(), key=lambda kv: -kv[1])[:count]
    out = Path(__file__).resolve().parent.parent / "tests" / "test_costs.txt"
    with out.open("w") as f:
        f.write("# seconds<TAB>test: the suite's slowest tests under scripts/test.sh (dev machine, 2 cores, ctest -j 3),\n")
        f.write("# written by scripts/test_costs.py; CTest starts the costliest first (tests/test_costs.cmake)\n")
        for n, t in rows:
            f.write("%.1f\t%s\n" % (t, n))
    print("%d tests, %.0f s of %.0f s in all, written to %s" % (len(rows), sum(t for _, t in rows),
                                                             sum(times.values()), out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
