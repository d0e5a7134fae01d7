#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The runtime's rooms depend one way (runtime/CMakeLists.txt, docs/architecture.md "Rooms and
# dependencies"): a room includes the public headers of the rooms below it only. Run by
# CTest; exits 1 and lists the lines that include a room above. The private headers in a
# room's src/ go by bare name, so every cross-room include names its room.
set -eu
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
status=0
# forbid ROOM FOLDER PATTERN: in FOLDER, no include of tether/<room>/ matching PATTERN
forbid() {
  found=$(grep -rnE "#include \"tether/($2)/" "$1" || true)
  if [ -n "$found" ]; then
    echo "$1 includes a room it must not (allowed: what is below it):"
    echo "$found"
    status=1
  fi
}
forbid runtime/physics 'scenario|recording|feedback|loop|identify|report|hal|adapters|live|campaign'
forbid runtime/scenario 'recording|feedback|loop|identify|report|adapters|live|campaign'
forbid runtime/recording 'feedback|loop|identify|report|adapters|live|campaign'
forbid runtime/feedback 'recording|loop|identify|report|adapters|live|campaign'
forbid runtime/loop 'identify|report|adapters|live|campaign'
forbid runtime/identify 'report|adapters|live|campaign'
forbid runtime/report 'feedback|loop|identify|adapters|live|campaign'
forbid hal 'scenario|recording|feedback|loop|identify|report|adapters|live|campaign'
[ $status -eq 0 ] && echo "check_rooms: every runtime room includes only the rooms below it"
exit $status
