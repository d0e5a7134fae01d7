#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Cross-checks Tether's MAVLink 2 codec against node-mavlink, an independent implementation
# (docs/mavlink.md): cross.mjs reads the frames Tether wrote, writes frames of its own.
#   tests/mavlink_node/run.sh cross.mjs OURS.bin OURS.json OUT_DIR
# Installs the npm packages of package-lock.json once into ${TETHER_BINARY_DIR:-<repo>/build}/node_mavlink
# (never into the source tree). Exit codes: 0 every check held, 1 a check failed, 2 usage,
# 3 node/npm missing or the install failed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
prefix="${TETHER_BINARY_DIR:-$here/../../build}/node_mavlink"

if [ "$#" -lt 1 ] || [ ! -f "$here/${1:-}" ]; then
  echo "usage: $0 cross.mjs OURS.bin OURS.json OUT_DIR" >&2
  exit 2
fi
script="$1"
shift
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "run.sh: node and npm are needed" >&2
  exit 3
fi

mkdir -p "$prefix"
# tests may run in parallel (ctest -j): one npm install at a time
exec 9>"$prefix/.install.lock"
flock 9
# the committed lockfile pins every package, indirect ones included (npm ci installs exactly it)
if [ ! -d "$prefix/node_modules/node-mavlink" ] || ! cmp -s "$here/package.json" "$prefix/package.json" ||
  ! cmp -s "$here/package-lock.json" "$prefix/package-lock.json"; then
  cp "$here/package.json" "$here/package-lock.json" "$prefix/"
  if ! npm ci --prefix "$prefix" --no-audit --no-fund --loglevel=error >"$prefix/npm-install.log" 2>&1; then
    echo "run.sh: npm ci failed, see $prefix/npm-install.log" >&2
    tail -n 20 "$prefix/npm-install.log" >&2 || true
    exit 3
  fi
fi
# the script resolves its imports from the folder it sits in
cp "$here/$script" "$prefix/$script.$$"
mv -f "$prefix/$script.$$" "$prefix/$script"
flock -u 9

exec node "$prefix/$script" "$@"
