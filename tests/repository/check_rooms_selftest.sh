#!/bin/sh
# The rooms check (scripts/check_rooms.py) catches what it is for, each in a made-up tree: the
# loop including an adapter, one endpoint backend including another, a file in no room; and
# passes a tree whose includes point down.
set -eu
check="$1/scripts/check_rooms.py"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
mkdir -p "$d/runtime/loop/src" "$d/adapters/serial/src" "$d/adapters/mqtt/src"
printf '#include "tether/serial/serial_endpoint.hpp"\n' > "$d/runtime/loop/src/up.cpp"
if python3 "$check" "$d"; then echo "the loop including an adapter passed"; exit 1; fi
printf '#include "tether/loop/session.hpp"\n' > "$d/runtime/loop/src/up.cpp"
printf '#include "tether/mqtt/mqtt_socket.hpp"\n' > "$d/adapters/serial/src/side.cpp"
if python3 "$check" "$d"; then echo "a backend including another passed"; exit 1; fi
printf '#include "tether/process/child_process.hpp"\n#include "tether/loop/endpoint.hpp"\n' > "$d/adapters/serial/src/side.cpp"
mkdir -p "$d/adapters/newroom/src"
printf 'int x;\n' > "$d/adapters/newroom/src/a.cpp"
if python3 "$check" "$d"; then echo "a file in no room passed"; exit 1; fi
rm -r "$d/adapters/newroom"
python3 "$check" "$d"
