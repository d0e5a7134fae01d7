#!/bin/sh
# scripts/build_firmware.sh asked for a target whose compiler is not installed names what
# installs it (scripts/deps.sh test and the Debian packages), and exits 1; on a PATH
# without the ARM and AVR compilers.
set -eu
root=$1
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
for tool in bash dirname basename mkdir; do ln -s "$(command -v $tool)" "$bin/$tool"; done
for target in cortex_m3 avr; do
  if out=$(PATH="$bin" bash "$root/scripts/build_firmware.sh" "$target" 2>&1); then
    echo "FAIL: $target built without its compiler: $out"; exit 1
  fi
  echo "$out" | grep -q "install it with ./scripts/deps.sh test (as root)" || { echo "FAIL: $target: $out"; exit 1; }
  echo "$out" | grep -q "gcc-" || { echo "FAIL: $target names no package: $out"; exit 1; }
  echo "ok $target: $out"
done
