#!/usr/bin/env bash
# The main job: install what is missing, build the runtime and the host firmware, run the
# default scenario (the host-built depth_heading_hold firmware on a pseudo-terminal, in
# lock-step with the AUV), say where its results went.
# Usage: scripts/demo.sh [extra `tether run` options, e.g. --rtf 0 --steps 3000]
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTETHER_BUILD_TESTS=OFF >/dev/null
# the runtime, and the firmware the default scenario launches (build/firmware/host/)
cmake --build build --target tether fw_depth_heading_hold -j "$(nproc)"

out="runs/default-$(date +%Y%m%d-%H%M%S)"
echo "demo: running config/scenarios/default.yaml (firmware build/firmware/host/depth_heading_hold on a pty)"
# the scenario finds the firmware in ${TETHER_BUILD_DIR:-../../build}, i.e. ./build
TETHER_BUILD_DIR="$PWD/build" ./build/tether run config/scenarios/default.yaml --out "$out" "$@"
echo "demo: session folder: $out"
echo "demo:   recording $out/recording.mcap (tether replay $out/recording.mcap --verify)"
echo "demo:   report    $out/report.html"
echo "demo:   summary   $out/summary.json"
echo "demo: the same control law in-process: config/scenarios/in_process_depth_hold.yaml;"
echo "demo: the Cortex-M3 build under QEMU: scripts/build_firmware.sh cortex_m3, then config/scenarios/qemu_depth_hold.yaml"
