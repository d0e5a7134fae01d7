#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Validates MCAP files with the reference TypeScript readers (@mcap/core).
#   tests/mcap_validate/run.sh [--truncated] [--expect-messages=N] FILE...
# Installs the npm packages of package-lock.json once into ${TETHER_BINARY_DIR:-<repo>/build}/node_mcap
# (never into the source tree). Exit codes: 0 all files valid, 1 a file failed,
# 2 usage, 3 node/npm missing or the install failed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
prefix="${TETHER_BINARY_DIR:-$here/../../build}/node_mcap"

if [ "$#" -eq 0 ]; then
  echo "usage: $0 [--truncated] [--expect-messages=N] [--foxglove] FILE..." >&2
  exit 2
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "run.sh: node and npm are needed" >&2
  exit 3
fi

mkdir -p "$prefix"
# tests may run in parallel (ctest -j): one npm install at a time
exec 9>"$prefix/.install.lock"
flock 9
# the committed lockfile pins every package, indirect ones included (npm ci installs exactly it)
if [ ! -d "$prefix/node_modules/@mcap/core" ] || ! cmp -s "$here/package.json" "$prefix/package.json" ||
  ! cmp -s "$here/package-lock.json" "$prefix/package-lock.json"; then
  cp "$here/package.json" "$here/package-lock.json" "$prefix/"
  if ! npm ci --prefix "$prefix" --no-audit --no-fund --loglevel=error >"$prefix/npm-install.log" 2>&1; then
    echo "run.sh: npm ci failed, see $prefix/npm-install.log" >&2
    tail -n 20 "$prefix/npm-install.log" >&2 || true
    exit 3
  fi
fi
# the script resolves its imports from the folder it sits in
cp "$here/validate.mjs" "$prefix/validate.mjs.$$"
mv -f "$prefix/validate.mjs.$$" "$prefix/validate.mjs"
flock -u 9

exec node "$prefix/validate.mjs" "$@"
