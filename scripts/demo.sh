#!/usr/bin/env bash
# The main job: install what is missing, build the runtime and the host firmware, run the
# default scenario (the host-built depth_heading_hold firmware on a pseudo-terminal, in
# lock-step with the AUV), say where its results went.
# Usage: scripts/demo.sh [extra `tether run` options, e.g. --rtf 0 --steps 3000]
#        scripts/demo.sh tank [extra `tether run` options]: an identification trial with a local
#        mosquitto on a free loopback port and the stand-in vehicle (docs/mqtt.md)
set -euo pipefail
cd "$(dirname "$0")/.."

# only what the demo needs: no ARM/AVR toolchains, no clang, no Chromium
./scripts/deps.sh "$([[ "${1:-}" == tank ]] && echo tank || echo demo)"
# ccache: paths relative to the checkout, so a fresh clone elsewhere (CI) reuses the cache
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
# optimised without debug info: RelWithDebInfo's -O2 without its -g (docs/performance.md,
# "Compile cost"); Release's own -O3 makes GCC 12 warn falsely in libstdc++ and Eigen.
# scripts/compile_cost.sh --cold builds the same way
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" -DTETHER_BUILD_TESTS=OFF >/dev/null
export TETHER_BUILD_DIR="$PWD/build"  # where the scenarios find firmware and tether-vehicle

where() {
  echo "demo: session folder: $1"
  echo "demo:   recording $1/recording.mcap (tether replay $1/recording.mcap --verify)"
  echo "demo:   report    $1/report.html"
  echo "demo:   summary   $1/summary.json"
  echo "demo:   log       $1/tether.log"
}

if [[ "${1:-}" == tank ]]; then
  shift
  cmake --build build --target tether tether-vehicle -j "$(nproc)"
  dir=$(mktemp -d /tmp/tether-demo-mosquitto-XXXXXX)
  chmod 755 "$dir"  # mosquitto drops to its own user
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  # set_tcp_nodelay: the broker's sockets need it as much as the clients' (docs/mqtt.md)
  printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\nset_tcp_nodelay true\nlog_dest stderr\n' \
    "$port" >"$dir/mosquitto.conf"
  /usr/sbin/mosquitto -c "$dir/mosquitto.conf" 2>"$dir/mosquitto.log" &
  broker_pid=$!
  trap 'kill "$broker_pid" 2>/dev/null; wait "$broker_pid" 2>/dev/null; rm -rf "$dir"' EXIT
  for _ in $(seq 100); do  # until it listens (at most ~5 s)
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.05
  done
  export TETHER_MQTT_BROKER="tcp://127.0.0.1:$port"
  out="runs/tank-$(date +%Y%m%d-%H%M%S)"
  # the identification trial: the controller flies speed steps, depth changes and turns; the
  # summary shows each estimate with its sigma and whether the trial identified it, and
  # tether-vehicle's hidden truth is in the session's tether.log (docs/feedback.md)
  echo "demo: mosquitto on $TETHER_MQTT_BROKER; running config/scenarios/tank_identify.yaml (60 s)"
  ./build/tether run config/scenarios/tank_identify.yaml --out "$out" "$@"
  grep -h "hidden truth" "$out/tether.log" | sed 's/^.*tether-vehicle: /demo: tether-vehicle'"'"'s /' || true
  # the offline fit of the same recording: the first three quarters fitted, the last quarter
  # predicted open loop against the scenario's own model (docs/feedback.md, "The offline fit")
  echo "demo: fitting the trial's recording offline: tether identify $out --holdout 0.25 -o $out/fit.yaml"
  ./build/tether identify "$out" --holdout 0.25 --position-stddev 0.002 --velocity-stddev 0.005 --orientation-stddev 0.002 \
    -o "$out/fit.yaml"
  where "$out"
  echo "demo:   fit       $out/fit.yaml (tether run config/scenarios/tank_identify.yaml --set-file $out/fit.yaml)"
  exit 0
fi

# the runtime, and the firmware the default scenario launches (build/firmware/host/)
cmake --build build --target tether fw_depth_heading_hold -j "$(nproc)"
out="runs/default-$(date +%Y%m%d-%H%M%S)"
echo "demo: running config/scenarios/default.yaml (firmware build/firmware/host/depth_heading_hold on a pty)"
./build/tether run config/scenarios/default.yaml --out "$out" "$@"
where "$out"
echo "demo: the same control law in-process: config/scenarios/in_process_depth_hold.yaml;"
echo "demo: the Cortex-M3 build under QEMU: scripts/build_firmware.sh cortex_m3, then config/scenarios/qemu_depth_hold.yaml"
echo "      (the ARM compiler and QEMU come with ./scripts/deps.sh test);"
echo "demo: a tank trial over MQTT with a stand-in vehicle: scripts/demo.sh tank"
