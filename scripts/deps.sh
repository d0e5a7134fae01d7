#!/usr/bin/env bash
# Installs the Debian packages Tether needs, only those missing (idempotent, quick when
# everything is there). Run as root on Debian bookworm.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libboost-dev libboost-system-dev libserialport-dev
  libpaho-mqttpp-dev libpaho-mqtt-dev libssl-dev
  libeigen3-dev doctest-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev
  libspdlog-dev libfmt-dev libzstd-dev
  mosquitto socat python3 nodejs npm clang
  parallel  # tests: a campaign's shards through GNU parallel (docs/campaigns.md)
  chromium  # tests: the live dashboard in headless Chromium (docs/live.md)
  qemu-system-arm gcc-arm-none-eabi libnewlib-arm-none-eabi
  simavr libsimavr-dev gcc-avr avr-libc
  libbullet-dev
)

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

if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then
    echo "deps: these packages are missing and installing them needs root: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "deps: all packages present"
fi
