#!/usr/bin/env bash
# Every benchmark with the same settings, one after the other, then one table of their
# headline figures (the `figure | what | value | goal` lines they print) with the machine's
# description. Full outputs go to the results folder. Figures are ratios against a baseline
# measured in the same run wherever one exists (docs/performance.md, "Method").
#
# Usage: bench/run_all.sh [--quick] [--build DIR] [--before DIR] [--out DIR] [--only NAME[,NAME...]]
#   --build DIR  a Release build with the benchmarks (default build/rel; configured and
#                built there when missing)
#   --before DIR another Release build (an earlier commit's, same flags; never built here):
#                every benchmark runs from both builds in turn, before then after, then
#                after then before, and the table has a row per build and round: a before
#                and after in one sitting
#   --out DIR    where the outputs and table.md go (default bench/results/<date>-<host>)
#   --quick      short runs (checks the script and the benchmarks, figures mean little)
#   --only       a comma-separated subset: vehicle_step world_step collisions collisions_10k joints
#                loop_overhead record_replay soak serial_lockstep mqtt_lockstep mqtt_rigs ardupilot_lockstep campaign
# Environment: RUN_ALL_NO_BUILD=1 neither configures nor builds (a build copied to another
#   machine with the libraries it loads has the programs but no CMake: docs/performance.md)
set -euo pipefail
cd "$(dirname "$0")/.."

build=build/rel
before=""
out=""
quick=0
only=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) quick=1 ;;
    --build) build="$2"; shift ;;
    --out) out="$2"; shift ;;
    --only) only="$2"; shift ;;
    --before) before="$2"; shift ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_all: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [[ -n "$before" && ! -d "$before/bench" ]]; then
  echo "run_all: --before $before has no bench/ folder (a Release build with -DTETHER_BUILD_BENCH=ON)" >&2
  exit 2
fi
out="${out:-bench/results/$(date +%Y%m%d-%H%M%S)-$(hostname -s)}"

# the lock-step and recording figures first, the long physics scenes last
all=(vehicle_step loop_overhead record_replay soak mqtt_lockstep mqtt_rigs ardupilot_lockstep serial_lockstep campaign joints world_step collisions collisions_10k)
selected=()
for b in "${all[@]}"; do
  if [[ -z "$only" || ",$only," == *",$b,"* ]]; then selected+=("$b"); fi
done
if [[ ${#selected[@]} -eq 0 ]]; then
  echo "run_all: --only $only names none of: ${all[*]}" >&2
  exit 2
fi

# a Release build of the benchmarks and what they drive (the host firmware, tether-vehicle)
if [[ -z "${RUN_ALL_NO_BUILD:-}" && ! -f "$build/CMakeCache.txt" ]]; then
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTETHER_BUILD_TESTS=OFF -DTETHER_BUILD_BENCH=ON
fi
if [[ -z "${RUN_ALL_NO_BUILD:-}" ]]; then
  targets=()
  for b in "${selected[@]}"; do targets+=("bench_${b%_10k}"); done
  cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" fw_depth_heading_hold tether tether-vehicle
fi

mkdir -p "$out"
{
  # physical cores: distinct (package, core) pairs; fewer than CPUs where two threads share a core
  cores=$(for c in /sys/devices/system/cpu/cpu[0-9]*/topology; do echo "$(cat "$c/physical_package_id") $(cat "$c/core_id")"; done 2>/dev/null | sort -u | wc -l)
  echo "machine: $(nproc) CPUs on ${cores} physical cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(free -g | awk '/Mem:/{print $2}') GiB"
  echo "system:  $(uname -sr); $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "commit:  $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with local changes)')"
  echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
} | tee "$out/machine.txt"

# collisions: N = 100 and 1,000 for 10 s of world time (the scene grows crowded over seconds);
# N = 10,000 for 1 s (Bullet alone takes minutes a simulated second there)
args_for() {
  case "$1" in
    collisions) if ((quick)); then echo "1000 0.5"; else echo "1000 10"; fi ;;
    collisions_10k) if ((quick)); then echo "100 0.2"; else echo "10000 1"; fi ;;
    serial_lockstep) if ((quick)); then echo "--quick"; else echo "--duration 60"; fi ;;
    *) if ((quick)); then echo "--quick"; fi ;;
  esac
}

# the benchmarks find their scenarios and firmware through the build they belong to
build_abs=$(cd "$build" && pwd)
before_abs=""
if [[ -n "$before" ]]; then
  before_abs=$(cd "$before" && pwd)
  echo "before:  $before_abs ($(git -C "$before_abs" rev-parse --short HEAD 2>/dev/null || echo 'commit unknown'))" |
    tee -a "$out/machine.txt"
fi

status=0
# run_one NAME BUILD OUTPUT: one benchmark of one build, its output kept
run_one() {
  local b="$1" dir="$2" file="$3" rc=0 only_n="" start
  start=$(date +%s)
  if [[ ! -x "$dir/bench/${b%_10k}" ]]; then
    echo "figure | (not in $dir) | - | -" >"$file"
    echo "   not in $dir"
    return
  fi
  if [[ "$b" == collisions_10k ]] && ((!quick)); then only_n=10000; fi
  # shellcheck disable=SC2046
  env ${only_n:+ONLY=$only_n} TETHER_BUILD_DIR="$dir" "$dir/bench/${b%_10k}" $(args_for "$b") >"$file" 2>&1 || rc=$?
  if ((rc != 0)); then
    echo "run_all: $b failed (exit $rc); its output is in $file" >&2
    status=1
  fi
  echo "   $(($(date +%s) - start)) s, $(grep -c '^figure |' "$file" || true) figures"
}

runs=()  # "NAME LABEL FILE" of every run, in the table's order
for b in "${selected[@]}"; do
  echo "== $b $(args_for "$b")"
  if [[ -z "$before_abs" ]]; then
    run_one "$b" "$build_abs" "$out/$b.txt"
    runs+=("$b - $out/$b.txt")
    continue
  fi
  for turn in before1 after1 after2 before2; do
    dir=$build_abs
    [[ "$turn" == before* ]] && dir=$before_abs
    echo "   $turn"
    run_one "$b" "$dir" "$out/$turn-$b.txt"
    runs+=("$b $turn $out/$turn-$b.txt")
  done
done

{
  echo
  if [[ -z "$before_abs" ]]; then
    echo "| benchmark | figure | value | goal |"
    echo "| --- | --- | --- | --- |"
  else
    echo "| benchmark | build, round | figure | value | goal |"
    echo "| --- | --- | --- | --- | --- |"
  fi
  for r in "${runs[@]}"; do
    read -r b label file <<<"$r"
    if [[ "$label" == - ]]; then prefix="| $b |"; else prefix="| $b | $label |"; fi
    grep '^figure |' "$file" | sed "s#^figure |#$prefix#; s/\$/ |/" || true
  done
  echo
  echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out/table.md"
echo "run_all: outputs in $out (table.md, machine.txt, one .txt per benchmark)"
exit "$status"
