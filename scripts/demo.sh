#!/usr/bin/env bash
# The main job: install what is missing, build, run the default scenario, say where its
# results went. Usage: scripts/demo.sh [extra `tether run` options]
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTETHER_BUILD_TESTS=OFF >/dev/null
cmake --build build --target tether -j "$(nproc)"

out="runs/default-$(date +%Y%m%d-%H%M%S)"
echo "demo: running config/scenarios/default.yaml"
./build/tether run config/scenarios/default.yaml --out "$out" "$@"
echo "demo: session folder: $out (summary: $out/summary.json)"
