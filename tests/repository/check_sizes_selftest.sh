#!/bin/sh
# The size check (scripts/check_sizes.py) catches what it is for: a function of 133 lines,
# then a file of 1,001 lines, each in a made-up tree; and passes a tree within the limits.
set -eu
check="$1/scripts/check_sizes.py"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
mkdir -p "$d/runtime"
{ echo 'int f(int x) {'; i=0; while [ $i -lt 130 ]; do echo '  x += 1;'; i=$((i + 1)); done; echo '  return x;'; echo '}'; } > "$d/runtime/long.cpp"
if python3 "$check" "$d"; then echo "a 133-line function passed"; exit 1; fi
{ i=0; while [ $i -lt 1001 ]; do echo "int a$i;"; i=$((i + 1)); done; } > "$d/runtime/long.cpp"
if python3 "$check" "$d"; then echo "a 1,001-line file passed"; exit 1; fi
{ echo 'int f(int x) {'; echo '  return x;'; echo '}'; } > "$d/runtime/long.cpp"
python3 "$check" "$d"
