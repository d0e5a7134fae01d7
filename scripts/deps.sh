#!/usr/bin/env bash
# Installs the Debian packages a Tether command needs, only those missing (idempotent,
# quick when everything is there), and says what it installs while apt works in view.
# Run as root on Debian bookworm.
#   scripts/deps.sh demo   the main job: build the runtime and the host firmware, run it
#   scripts/deps.sh tank   the demo's tank trial: the same and the mosquitto broker
#   scripts/deps.sh test   the whole test suite (the default): also the ARM and AVR
#                          toolchains and emulators, clang, Node, Chromium, GNU parallel,
#                          Slurm and munge
set -euo pipefail

what=${1:-test}

build=(
  build-essential cmake ninja-build ccache pkg-config python3
  libboost-dev libboost-system-dev libserialport-dev
  libpaho-mqttpp-dev libpaho-mqtt-dev libssl-dev
  libeigen3-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev
  libspdlog-dev libfmt-dev libzstd-dev
  libceres-dev  # tether identify fits a vehicle's model with Ceres Solver (docs/feedback.md)
  libsimavr-dev  # the mcu endpoint's emulated AVR (docs/mcu.md)
  libjs-dygraphs  # the report's zoom and hover, inlined into each report (docs/recording.md)
)
case "$what" in
  demo) packages=("${build[@]}") ;;
  tank) packages=("${build[@]}" mosquitto) ;;
  test)
    packages=(
      "${build[@]}" git doctest-dev
      mosquitto socat nodejs npm clang
      lld  # links the sanitizer build (docs/testing.md, "Fixed-address executables")
      parallel  # a campaign's shards through GNU parallel (docs/campaigns.md)
      slurmctld slurmd slurm-client munge  # a campaign on a one-host Slurm cluster (docs/campaigns.md)
      chromium  # the live dashboard in headless Chromium (docs/live.md)
      qemu-system-arm gcc-arm-none-eabi libnewlib-arm-none-eabi
      simavr gcc-avr avr-libc
      arduino-core-avr arduino-mk arduino  # Arduino sketches under the mcu endpoint (docs/mcu.md)
      libbullet-dev  # bench/collisions compares against Bullet
      dpkg-dev  # dpkg-shlibdeps: the .deb's dependencies (docs/install.md)
    )
    ;;
  *)
    echo "usage: scripts/deps.sh [demo|tank|test]" >&2
    exit 2
    ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# node and npm may come from elsewhere on a developer machine; accept them if on PATH
if command -v node >/dev/null && command -v npm >/dev/null; then
  filtered=()
  for p in "${missing[@]}"; do [[ "$p" == nodejs || "$p" == npm ]] || filtered+=("$p"); done
  missing=("${filtered[@]}")
fi

if ((${#missing[@]} == 0)); then
  echo "deps ($what): all ${#packages[@]} packages present"
  exit 0
fi
echo "deps ($what): ${#missing[@]} of ${#packages[@]} packages missing: ${missing[*]}"
if [[ $(id -u) -ne 0 ]]; then
  echo "deps ($what): installing them needs root (sudo scripts/deps.sh $what)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
echo "deps ($what): apt-get update"
apt-get update
echo "deps ($what): apt-get install (this can take minutes: the test set pulls toolchains and Chromium)"
# one line per package as apt fetches, unpacks and sets it up (no progress bar in logs)
apt-get install -y --no-install-recommends -o Dpkg::Use-Pty=0 "${missing[@]}"
echo "deps ($what): installed ${missing[*]}"
