#!/bin/sh
# bench/run_all.sh --before: every benchmark of two builds in turn (before, after, after,
# before), a table row per build and round; a --before without benchmarks is refused with
# exit 2 before anything runs. The campaign benchmark of this build stands in for both
# builds (--quick). Arguments: the source tree, the build tree.
set -eu
src="$1"
build="$2"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
RUN_ALL_NO_BUILD=1 bash "$src/bench/run_all.sh" --quick --only campaign --build "$build" --before "$build" \
  --out "$d/out" >"$d/log.txt" 2>&1 || { cat "$d/log.txt"; exit 1; }
for turn in before1 after1 after2 before2; do
  if ! grep -q "^| campaign | $turn | campaign throughput, parallel efficiency at -j all CPUs | [0-9.]* " "$d/out/table.md"; then
    echo "no $turn row in table.md:"; cat "$d/out/table.md"; exit 1
  fi
  test -s "$d/out/$turn-campaign.txt"
done
grep -q "^before:  " "$d/out/machine.txt" || { echo "machine.txt does not name the before build"; exit 1; }
if RUN_ALL_NO_BUILD=1 bash "$src/bench/run_all.sh" --quick --only campaign --build "$build" --before "$d/none" \
  --out "$d/none_out" >"$d/log2.txt" 2>&1; then
  echo "a --before without benchmarks was accepted"; exit 1
else
  rc=$?
  test "$rc" = 2 || { echo "exit $rc, not 2"; cat "$d/log2.txt"; exit 1; }
fi
grep -q "has no bench/ folder" "$d/log2.txt"
test ! -e "$d/none_out"
