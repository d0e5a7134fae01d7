#!/usr/bin/env bash
# What the build costs, unit by unit, from Ninja's own log (docs/performance.md, "Compile
# cost"): the costliest units, the total compiler time (the sum of every unit's seconds, what
# one core would spend), the links, and the units over 30 s.
#
#   scripts/compile_cost.sh [--build-dir DIR] [--top N]
#       reports on DIR's last build (default build/asan): each output's latest entry; a unit
#       that ccache served counts what the cache took, so this is a report, not a figure
#   scripts/compile_cost.sh --cold [--build-dir DIR] [--type TYPE] [--top N] [TARGET...]
#       configures DIR from nothing (it is deleted first; default build/cost) with
#       CMAKE_BUILD_TYPE TYPE (default Release at -O2, what scripts/demo.sh builds), the compiler
#       cache off, builds TARGET (default: tether fw_depth_heading_hold, the demo's) on every core,
#       then reports: the figure
#
# Exit 0 with the report; 2 for a bad option; the build's own status if it fails.
set -euo pipefail
cd "$(dirname "$0")/.."

dir="" type=Release top=10 cold=0
targets=()
while (($#)); do
  case "$1" in
    --cold) cold=1 ;;
    --build-dir) dir=${2:?--build-dir needs a folder}; shift ;;
    --type) type=${2:?--type needs a CMake build type}; shift ;;
    --top)
      top=${2:-}
      [[ $top =~ ^[1-9][0-9]{0,3}$ ]] || { echo "compile_cost.sh: --top needs a count 1..9999, got '$top'" >&2; exit 2; }
      shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) echo "compile_cost.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) targets+=("$1") ;;
  esac
  shift
done
if ((cold)); then
  dir=${dir:-build/cost}
  ((${#targets[@]})) || targets=(tether fw_depth_heading_hold)
  rm -rf "$dir"
  flags=()  # Release as scripts/demo.sh builds it: -O2, no debug info
  [[ $type != Release ]] || flags=(-DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG")
  CCACHE_DISABLE=1 cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$type" "${flags[@]}" -DTETHER_BUILD_TESTS=OFF >/dev/null
  start=$(date +%s)
  CCACHE_DISABLE=1 cmake --build "$dir" --target "${targets[@]}" -j "$(nproc)"
  echo "built ${targets[*]} ($type, no compiler cache) in $(($(date +%s) - start)) s wall on $(nproc) cores"
else
  dir=${dir:-build/asan}
  ((${#targets[@]} == 0)) || { echo "compile_cost.sh: targets go with --cold" >&2; exit 2; }
fi
log="$dir/.ninja_log"
[[ -f $log ]] || { echo "compile_cost.sh: no $log (build there first, or use --cold)" >&2; exit 2; }

python3 - "$log" "$top" "$cold" <<'EOF'
import sys
log, top, cold = sys.argv[1], int(sys.argv[2]), sys.argv[3] == '1'
if not cold:
    print(f"compile cost of {log}'s last build of each output (a unit the compiler cache served "
          "counts what the cache took; scripts/compile_cost.sh --cold for the figure):")
latest = {}
with open(log) as f:
    for line in f:
        if line.startswith('#'):
            continue
        parts = line.rstrip('\n').split('\t')
        if len(parts) < 4:
            continue
        try:
            start, end = int(parts[0]), int(parts[1])
        except ValueError:
            continue
        latest[parts[3]] = (end - start) / 1000.0
# only what the build graph has now (the log keeps outputs of files since moved or deleted)
import os, subprocess
graph = subprocess.run(['ninja', '-C', os.path.dirname(log) or '.', '-t', 'targets', 'all'],
                       capture_output=True, text=True)
if graph.returncode == 0:
    outputs = {line.rsplit(':', 1)[0] for line in graph.stdout.splitlines() if ':' in line}
    latest = {o: s for o, s in latest.items() if o in outputs}
units = sorted(((s, o) for o, s in latest.items() if o.endswith('.o')), reverse=True)
links = [(s, o) for o, s in latest.items() if not o.endswith('.o')]
total = sum(s for s, _ in units)
print(f"{len(units)} units, {total:.0f} s of compiler time in all; {len(links)} other steps "
      f"(links, archives, generated files) {sum(s for s, _ in links):.0f} s")
print(f"the {min(top, len(units))} costliest units:")
for s, o in units[:top]:
    name = o.split('.dir/', 1)[-1] if '.dir/' in o else o
    print(f"  {s:7.1f} s  {name[:-2] if name.endswith('.o') else name}")
over = [o for s, o in units if s > 30]
print(f"units over 30 s: {len(over)}")
EOF
