#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds every example in examples/firmware/ against the C99 shim for the host,
# for Cortex-M3 (LM3S6965, runs under qemu-system-arm) and for AVR (ATmega328P,
# runs under simavr through firmware_shim/ports/avr/simavr_bridge.c), all with
# -Wall -Wextra -Werror -Wconversion.
#
#   scripts/build_firmware.sh                 build all targets whose compiler is installed
#   scripts/build_firmware.sh host cortex_m3  build only these
#   scripts/build_firmware.sh --run           build, then run each build against the fake
#                                             runtime (tests/firmware_shim/fake_runtime.py)
#
# Output: build/firmware/host/<name>, build/firmware/cortex_m3/<name>.elf,
#         build/firmware/avr/<name>.elf and build/firmware/avr/simavr_bridge
# (TETHER_FIRMWARE_OUT overrides build/firmware).
set -euo pipefail
cd "$(dirname "$0")/.."

out=${TETHER_FIRMWARE_OUT:-build/firmware}
shim=firmware_shim
warn=(-Wall -Wextra -Werror -Wconversion)
run=0
targets=()
for arg in "$@"; do
  case "$arg" in
    --run) run=1 ;;
    host | cortex_m3 | avr) targets+=("$arg") ;;
    -h | --help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "build_firmware.sh: unknown argument '$arg' (host, cortex_m3, avr, --run)" >&2; exit 2 ;;
  esac
done
explicit=${#targets[@]}
[ "$explicit" -gt 0 ] || targets=(host cortex_m3 avr)

examples=(examples/firmware/*.c)
shim_sources=("$shim"/src/*.c)

have() { command -v "$1" >/dev/null 2>&1; }

# a target whose compiler is missing is skipped, unless it was asked for by name
# (the message names what installs it: scripts/deps.sh test, or the Debian packages)
need() {
  if have "$1"; then return 0; fi
  local packages
  case "$2" in
    cortex_m3) packages="gcc-arm-none-eabi libnewlib-arm-none-eabi (and qemu-system-arm to run it)" ;;
    avr) packages="gcc-avr avr-libc (and simavr to run it)" ;;
    *) packages="build-essential" ;;
  esac
  if [ "$explicit" -gt 0 ]; then
    echo "build_firmware.sh: $1 not found; install it with ./scripts/deps.sh test (as root)" >&2
    echo "  (or the Debian packages $packages)" >&2
    exit 1
  fi
  echo "skip $2: $1 not installed (./scripts/deps.sh test installs it: $packages)"
  return 1
}

build_host() {
  need gcc host || return 0
  mkdir -p "$out/host"
  for src in "${examples[@]}"; do
    name=$(basename "$src" .c)
    gcc -std=c99 -O2 -g "${warn[@]}" -I"$shim/include" "$src" "${shim_sources[@]}" \
      "$shim/ports/posix/port_posix.c" -o "$out/host/$name"
    echo "built $out/host/$name"
  done
}

build_cortex_m3() {
  need arm-none-eabi-gcc cortex_m3 || return 0
  mkdir -p "$out/cortex_m3"
  for src in "${examples[@]}"; do
    name=$(basename "$src" .c)
    # newlib's libc only for memcpy/memset the compiler may emit; libgcc for soft float
    arm-none-eabi-gcc -std=c99 -mcpu=cortex-m3 -mthumb -ffreestanding -nostdlib -Os -g \
      -ffunction-sections -fdata-sections "${warn[@]}" -I"$shim/include" \
      -T "$shim/ports/cortex_m3/lm3s6965.ld" -Wl,--gc-sections \
      "$src" "${shim_sources[@]}" "$shim/ports/cortex_m3/startup.c" "$shim/ports/cortex_m3/port_cortex_m3.c" \
      -lc -lgcc -o "$out/cortex_m3/$name.elf"
    echo "built $out/cortex_m3/$name.elf ($(arm-none-eabi-size "$out/cortex_m3/$name.elf" | awk 'NR==2 {print $1 " B flash, " $2+$3 " B RAM"}'))"
  done
}

build_avr() {
  need avr-gcc avr || return 0
  mkdir -p "$out/avr"
  # 2 KiB of RAM: small buffers, no diagnostic texts (string literals live in RAM)
  local config=(-DTETHER_RX_PAYLOAD_MAX=320u -DTETHER_TX_PAYLOAD_MAX=64u -DTETHER_MAX_OPEN=8u
    -DTETHER_COMMAND_BYTES=32u -DTETHER_READ_CHUNK=16u -DTETHER_DIAG=0)
  for src in "${examples[@]}"; do
    name=$(basename "$src" .c)
    avr-gcc -std=c99 -mmcu=atmega328p -DF_CPU=16000000UL -Os -g -ffunction-sections -fdata-sections \
      -Wl,--gc-sections "${warn[@]}" "${config[@]}" -I"$shim/include" \
      "$src" "${shim_sources[@]}" "$shim/ports/avr/port_avr.c" -o "$out/avr/$name.elf"
    echo "built $out/avr/$name.elf ($(avr-size "$out/avr/$name.elf" | awk 'NR==2 {print $1+$2 " B flash, " $2+$3 " B RAM"}'))"
  done
  if [ -f /usr/include/simavr/sim_avr.h ]; then
    # pkg-config simavr is broken on Debian bookworm: name the paths
    gcc -O2 -g -Wall -Wextra -I/usr/include/simavr -I/usr/include/simavr/parts \
      "$shim/ports/avr/simavr_bridge.c" -lsimavrparts -lsimavr -lpthread -lutil -o "$out/avr/simavr_bridge"
    echo "built $out/avr/simavr_bridge"
  else
    echo "skip simavr_bridge: libsimavr-dev not installed"
  fi
}

for t in "${targets[@]}"; do "build_$t"; done

[ "$run" -eq 1 ] || exit 0

# ---- run every build against the fake runtime ----------------------------------------
harness=tests/firmware_shim/fake_runtime.py
failed=0
check() {
  echo "== $*"
  if ! python3 "$harness" "$@"; then failed=$((failed + 1)); fi
}
for t in "${targets[@]}"; do
  for src in "${examples[@]}"; do
    name=$(basename "$src" .c)
    case "$t" in
      host) [ -x "$out/host/$name" ] && check --host "$out/host/$name" ;;
      cortex_m3) [ -f "$out/cortex_m3/$name.elf" ] && have qemu-system-arm && check --qemu "$out/cortex_m3/$name.elf" ;;
      avr) [ -x "$out/avr/simavr_bridge" ] && check --simavr "$out/avr/simavr_bridge" "$out/avr/$name.elf" --timeout 10 ;;
    esac
  done
done
# a runtime that speaks another protocol version is refused loudly
if [ -x "$out/host/depth_heading_hold" ]; then
  check --host "$out/host/depth_heading_hold" --refuse-version
fi
if [ -f "$out/cortex_m3/depth_heading_hold.elf" ] && have qemu-system-arm; then
  check --qemu "$out/cortex_m3/depth_heading_hold.elf" --refuse-version --diag-file "$out/cortex_m3/diag.txt"
fi
echo "$failed run(s) failed"
[ "$failed" -eq 0 ]
