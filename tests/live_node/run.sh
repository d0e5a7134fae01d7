#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Drives a live Tether session from Node: client.mjs with the reference
# foxglove.websocket.v1 client (@foxglove/ws-protocol), dashboard.mjs with headless
# Chromium over the DevTools protocol (the built-in page at GET /), report_page.mjs with
# the same Chromium on HTML files (session reports, bench pages).
#   tests/live_node/run.sh client.mjs ws://127.0.0.1:PORT
#   tests/live_node/run.sh dashboard.mjs http://127.0.0.1:PORT/
#   tests/live_node/run.sh report_page.mjs [--screenshots DIR] [--min-plots N] FILE.html...
# Installs the npm packages of the committed lockfile once (npm ci) into
# ${TETHER_BINARY_DIR:-<repo>/build}/node_live (never into the source tree). Exit codes:
# those of the script (0 every check held, 1 a check failed, 2 usage, 3 no connection or
# no Chromium),
# and 3 when node/npm are missing or the install failed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
prefix="${TETHER_BINARY_DIR:-$here/../../build}/node_live"

if [ "$#" -lt 2 ] || [ ! -f "$here/${1:-}" ]; then
  echo "usage: $0 client.mjs|dashboard.mjs URL, or $0 report_page.mjs [options] FILE.html..." >&2
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
if [ ! -d "$prefix/node_modules/@foxglove/ws-protocol" ] || ! cmp -s "$here/package-lock.json" "$prefix/package-lock.json"; then
  cp "$here/package.json" "$here/package-lock.json" "$prefix/"
  if ! (cd "$prefix" && npm ci --no-audit --no-fund --loglevel=error >"$prefix/npm-install.log" 2>&1); then
    echo "run.sh: npm ci failed, see $prefix/npm-install.log" >&2
    tail -n 20 "$prefix/npm-install.log" >&2 || true
    exit 3
  fi
fi
# the script resolves its imports from the folder it sits in
# (and the modules it imports from beside it)
for f in "$here"/*.mjs; do
  cp "$f" "$prefix/$(basename "$f").$$"
  mv -f "$prefix/$(basename "$f").$$" "$prefix/$(basename "$f")"
done
flock -u 9

exec node "$prefix/$script" "$@"
